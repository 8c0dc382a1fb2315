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
	Key   string
	Count int64
	Blob  []byte
}
type Out struct {
	Yes bool
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
	} {
		if !strings.Contains(src, want) {
			t.Errorf("generated source lacks %q:\n%s", want, src)
		}
	}
	if strings.Contains(src, "local") {
		t.Error("an untagged field travels")
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
	} {
		if _, err := generate(t, ops); err == nil {
			t.Errorf("%s: generated without complaint", name)
		}
	}
}
