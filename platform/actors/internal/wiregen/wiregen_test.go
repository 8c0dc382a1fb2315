package wiregen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const pb = `package actorpb
type In struct {
	state int
	Key   string ` + "`protobuf:\"bytes,1,opt,name=key,proto3\"`" + `
	Count int64  ` + "`protobuf:\"varint,2,opt,name=count,proto3\"`" + `
	Blob  []byte ` + "`protobuf:\"bytes,3,opt,name=blob,proto3\"`" + `
}
type Out struct {
	Yes bool ` + "`protobuf:\"varint,1,opt,name=yes,proto3\"`" + `
}
type Wrap struct {
	In   *In    ` + "`protobuf:\"bytes,1,opt,name=in,proto3\"`" + `
	Rate float64 ` + "`protobuf:\"fixed64,2,opt,name=rate,proto3\"`" + `
}
type List struct {
	Keys []string ` + "`protobuf:\"bytes,1,rep,name=keys,proto3\"`" + `
}
type Odd struct {
	N int64 ` + "`protobuf:\"group,1,opt,name=n,proto3\"`" + `
}
`

func generate(t *testing.T, ops string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	must := func(name, src string) {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(filepath.Join(dir, "pb", "x.pb.go"), pb)
	must(filepath.Join(dir, "a", "ops.go"), "package actors\n\n"+ops)
	src, err := Generate(filepath.Join(dir, "a"), filepath.Join(dir, "pb"))
	return string(src), err
}

func TestGenerate(t *testing.T) {
	src, err := generate(t, "//actors:wire x.do In Out\ntype Do struct {\n\tKey string `wire:\"op\"`\n\tCount int `wire:\"op\"`\n\tDone bool `wire:\"result\" wirename:\"Yes\"`\n\tlocal int\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// Code generated", "DO NOT EDIT.",
		`"x.do": func() WireOp { return &Do{} }`,
		"&actorpb.In{Key: o.Key, Count: int64(o.Count)}",
		"o.Count = int(m.Count)",
		"&actorpb.Out{Yes: o.Done}",
		"o.Done = m.Yes",
		// hand-coded with protowire, no proto reflection
		"func pbAppendIn(b []byte, m *actorpb.In) ([]byte, error)",
		"b = append(b, 0x0a)", "b = protowire.AppendString(b, m.Key)",
		"b = append(b, 0x10)", "b = protowire.AppendVarint(b, uint64(m.Count))",
		"if len(m.Blob) > 0", "b = append(b, 0x1a)",
		"case num == 2 && typ == protowire.VarintType:", "m.Count = int64(u)",
		"if !utf8.Valid(s)", "m.Blob = append([]byte(nil), s...)",
		"n = protowire.ConsumeFieldValue(num, typ, data)",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated source lacks %q:\n%s", want, src)
		}
	}
	if strings.Contains(src, "gproto") || strings.Contains(src, "google.golang.org/protobuf/proto") {
		t.Error("the generated code still calls proto")
	}
	if strings.Contains(src, "local") {
		t.Error("an untagged field travels")
	}
}

// A nested message is encoded with its size first and decoded from a
// local of its own (so it can stay on the stack), through its wirevia
// mapping; a double keeps -0 and drops only +0, as proto does.
func TestGenerateNested(t *testing.T) {
	src, err := generate(t, "//actors:wire x.wrap Wrap\ntype Wrap struct {\n\tThing thing `wire:\"op\" wirename:\"In\" wirevia:\"thing\"`\n\tRate float64 `wire:\"op\"`\n}\n\n"+
		"type thing struct{ k string }\n\nfunc thingPB(t thing) *actorpb.In { return &actorpb.In{Key: t.k} }\n\nfunc thingOf(m *actorpb.In) thing { return thing{k: m.GetKey()} }\n")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"return pbAppendWrap(b, &actorpb.Wrap{In: thingPB(o.Thing), Rate: o.Rate})",
		"b = protowire.AppendVarint(b, uint64(pbSizeIn(m.In)))",
		"var mIn actorpb.In", "var pIn *actorpb.In", "pIn = &mIn", "pbUnmarshalIn(s, pIn)",
		"o.Thing = thingOf(pIn)",
		"func pbUnmarshalIn(data []byte, m *actorpb.In) error",
		"if m.Rate != 0 || math.Signbit(m.Rate)", "m.Rate = math.Float64frombits(u)",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated source lacks %q:\n%s", want, src)
		}
	}
}

func TestGenerateRefusesWhatItCannotMap(t *testing.T) {
	for name, ops := range map[string]string{
		"unknown field":       "//actors:wire x.do In\ntype Do struct {\n\tNope string `wire:\"op\"`\n}\n",
		"unknown message":     "//actors:wire x.do Nope\ntype Do struct {\n\tKey string `wire:\"op\"`\n}\n",
		"no conversion":       "//actors:wire x.do In\ntype Do struct {\n\tBlob [4]byte `wire:\"op\"`\n}\n",
		"result, no msg":      "//actors:wire x.do In\ntype Do struct {\n\tKey string `wire:\"op\"`\n\tYes bool `wire:\"result\"`\n}\n",
		"bad tag":             "//actors:wire x.do In\ntype Do struct {\n\tKey string `wire:\"in\"`\n}\n",
		"duplicate kind":      "//actors:wire x.do In\ntype Do struct{}\n\n//actors:wire x.do In\ntype Do2 struct{}\n",
		"missing decoder":     "//actors:wire x.do In\ntype Do struct {\n\tBlob [4]byte `wire:\"op\" wirevia:\"blob\"`\n}\n",
		"malformed directive": "//actors:wire x.do\ntype Do struct{}\n",
		"repeated field":      "//actors:wire x.do List\ntype Do struct{}\n",
		"unsupported kind":    "//actors:wire x.do Odd\ntype Do struct{}\n",
	} {
		if _, err := generate(t, ops); err == nil {
			t.Errorf("%s: generated without complaint", name)
		}
	}
}
