package actors

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// The generated codecs (wire_gen.go, protowire) against the reference
// codecs (wire_gen_ref_test.go: the same mappings through proto.Marshal and
// proto.Unmarshal, which is what crossed the wire before): for every op
// kind, both sides (inputs and result), the same bytes decode to the same
// op or fail alike, and the same op encodes to the same bytes or fails
// alike.

func wireKinds() []string {
	kinds := make([]string, 0, len(wireOps))
	for k := range wireOps {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	return kinds
}

// outcome runs f and describes how it ended: an error, a panic, or ok.
func outcome(f func() error) (s string) {
	defer func() {
		if p := recover(); p != nil {
			s = fmt.Sprint("panic: ", p)
		}
	}()
	if err := f(); err != nil {
		return "error"
	}
	return "ok"
}

// checkDecode decodes data as kind's inputs (or result) with both codecs.
func checkDecode(t *testing.T, kind string, result bool, data []byte) {
	t.Helper()
	ref := wireRefs[kind]
	got, want := wireOps[kind](), wireOps[kind]()
	var g, w string
	if result {
		g = outcome(func() error { return got.UnmarshalResult(data) })
		w = outcome(func() error { return ref.unmarshalResult(want, data) })
	} else {
		g = outcome(func() error { return got.UnmarshalOp(data) })
		w = outcome(func() error { return ref.unmarshalOp(want, data) })
	}
	if g != w {
		t.Fatalf("%s (result %v) %x: protowire decode %s, proto decode %s", kind, result, data, g, w)
	}
	if g != "ok" {
		return
	}
	if !sameValue(reflect.ValueOf(got), reflect.ValueOf(want)) {
		t.Fatalf("%s (result %v) %x: protowire decodes %+v, proto %+v", kind, result, data, got, want)
	}
	checkEncode(t, kind, got)
}

// checkEncode encodes op's inputs and result with both codecs.
func checkEncode(t *testing.T, kind string, op WireOp) {
	t.Helper()
	ref := wireRefs[kind]
	for _, side := range []struct {
		name      string
		gen, want func([]byte) ([]byte, error)
	}{
		{"inputs", op.AppendOp, func(b []byte) ([]byte, error) { return ref.appendOp(op, b) }},
		{"result", op.AppendResult, func(b []byte) ([]byte, error) { return ref.appendResult(op, b) }},
	} {
		prefix := []byte{0xde, 0xad}
		var gb, wb []byte
		g := outcome(func() (err error) { gb, err = side.gen(slices.Clip(prefix)); return err })
		w := outcome(func() (err error) { wb, err = side.want(slices.Clip(prefix)); return err })
		if g != w {
			t.Fatalf("%s %s of %+v: protowire encode %s, proto encode %s", kind, side.name, op, g, w)
		}
		if g == "ok" && !bytes.Equal(gb, wb) {
			t.Fatalf("%s %s of %+v:\n protowire %x\n proto     %x", kind, side.name, op, gb, wb)
		}
		if g == "error" && !bytes.HasPrefix(gb, prefix) {
			t.Fatalf("%s %s: a failed encode lost what b held: %x", kind, side.name, gb)
		}
	}
}

// sameValue is reflect.DeepEqual with floats compared by their bits (a NaN
// decoded alike is the same value), unexported fields included.
func sameValue(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() || a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(a.Float()) == math.Float64bits(b.Float())
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameValue(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := range a.NumField() {
			if !sameValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.Array:
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Slice:
		if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return a.Uint() == b.Uint()
	case reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		// An op decoded from the wire holds none of these: both nil.
		return a.IsNil() && b.IsNil()
	}
	panic("sameValue: " + a.Kind().String())
}

// randWire is a random protobuf-ish message: mostly fields of low numbers
// with the wire types ops use (so known fields are hit, nested messages
// included), plus unknown numbers, wrong wire types, groups, invalid UTF-8,
// overlong varints, reserved and out-of-range numbers, and sometimes a cut
// or a flipped byte.
func randWire(r *rand.Rand, depth int) []byte {
	var b []byte
	for range r.IntN(9) {
		num := protowire.Number(1 + r.IntN(16))
		switch r.IntN(20) {
		case 0:
			num = protowire.Number(1 + r.IntN(int(protowire.MaxValidNumber)))
		case 1:
			num = protowire.FirstReservedNumber + protowire.Number(r.IntN(1000))
		}
		switch r.IntN(12) {
		case 0, 1, 2, 3:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			switch r.IntN(4) {
			case 0:
				b = protowire.AppendVarint(b, r.Uint64())
			case 1:
				b = protowire.AppendVarint(b, uint64(r.IntN(3)))
			case 2: // overlong but valid: 0 in 10 bytes, or a non-minimal 1
				b = append(b, 0x81, 0x80, 0x80, 0x00)
			default:
				b = protowire.AppendVarint(b, uint64(-int64(r.IntN(1000))))
			}
		case 4:
			b = protowire.AppendTag(b, num, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, []uint64{r.Uint64(), math.Float64bits(math.NaN()), 1 << 63, 0}[r.IntN(4)])
		case 5:
			b = protowire.AppendTag(b, num, protowire.Fixed32Type)
			b = protowire.AppendFixed32(b, r.Uint32())
		case 6, 7, 8, 9:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			switch r.IntN(5) {
			case 0:
				b = protowire.AppendBytes(b, []byte("k/é/"+fmt.Sprint(r.IntN(100))))
			case 1:
				b = protowire.AppendBytes(b, []byte{0xff, 'a', 0xc0})
			case 2:
				fp := make([]byte, 32*r.IntN(2)+r.IntN(3))
				for i := range fp {
					fp[i] = byte(r.Uint32())
				}
				b = protowire.AppendBytes(b, fp)
			default:
				if depth < 3 {
					b = protowire.AppendBytes(b, randWire(r, depth+1))
				} else {
					b = protowire.AppendBytes(b, nil)
				}
			}
		case 10:
			b = protowire.AppendTag(b, num, protowire.StartGroupType)
			if depth < 3 {
				b = append(b, randWire(r, depth+1)...)
			}
			if r.IntN(8) > 0 {
				b = protowire.AppendTag(b, num, protowire.EndGroupType)
			}
		default:
			switch r.IntN(5) {
			case 4: // a field number beyond the largest valid one
				b = protowire.AppendVarint(b, uint64(protowire.MaxValidNumber+1+protowire.Number(r.IntN(1<<20)))<<3)
				b = append(b, 0x01)
			case 0:
				b = protowire.AppendTag(b, num, protowire.EndGroupType)
			case 1:
				b = append(b, byte(num<<3)|6) // wire type 6 does not exist
			case 2:
				b = append(b, 0x00) // field number 0
			default:
				b = protowire.AppendTag(b, num, protowire.Fixed64Type)
				b = append(b, 1, 2, 3) // truncated
			}
		}
	}
	switch r.IntN(12) {
	case 0:
		if len(b) > 0 {
			b = b[:r.IntN(len(b))]
		}
	case 1:
		if len(b) > 0 {
			b[r.IntN(len(b))] ^= byte(1 << r.IntN(8))
		}
	}
	return b
}

// randFill sets every exported field of v (recursively) to a random value,
// zero often, with invalid UTF-8, NaN and -0 among the possibilities.
func randFill(r *rand.Rand, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString([]string{"", "k", "rl/ws/p/é", "\xff\xfe", "a\x00b"}[r.IntN(5)])
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x := []int64{0, 1, -1, int64(r.Uint64()), math.MinInt64, int64(r.IntN(1000))}[r.IntN(6)]
		if !v.OverflowInt(x) {
			v.SetInt(x)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x := []uint64{0, 1, r.Uint64(), uint64(r.IntN(300))}[r.IntN(4)]
		if !v.OverflowUint(x) {
			v.SetUint(x)
		}
	case reflect.Float32, reflect.Float64:
		v.SetFloat([]float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), r.Float64(), -r.Float64() * 1e9}[r.IntN(6)])
	case reflect.Array:
		for i := range v.Len() {
			if r.IntN(3) == 0 {
				randFill(r, v.Index(i), depth+1)
			}
		}
	case reflect.Pointer:
		if depth < 3 && v.Type().Elem().Kind() == reflect.Struct && r.IntN(2) == 0 {
			v.Set(reflect.New(v.Type().Elem()))
			randFill(r, v.Elem(), depth+1)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				randFill(r, v.Field(i), depth+1)
			}
		}
	}
}

// TestWireCodecsMatchProto: random, hostile and table bytes decode alike
// under both codecs for every kind and side; random and table ops encode
// alike.
func TestWireCodecsMatchProto(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 3))
	for _, kind := range wireKinds() {
		for _, result := range []bool{false, true} {
			for range 600 {
				checkDecode(t, kind, result, randWire(r, 0))
			}
		}
		for range 300 {
			op := wireOps[kind]()
			randFill(r, reflect.ValueOf(op).Elem(), 0)
			checkEncode(t, kind, op)
		}
	}
	for _, tc := range wireSamples {
		checkEncode(t, tc.op.OpKind(), tc.op)
		in, _ := tc.op.AppendOp(nil)
		res, _ := tc.op.AppendResult(nil)
		checkDecode(t, tc.op.OpKind(), false, in)
		checkDecode(t, tc.op.OpKind(), true, res)
		// the same fields, a second time: the last one wins; an unknown
		// field of every wire type in between is skipped
		mixed := slices.Concat(in, []byte{0xf8, 0x07, 0x01, 0xf9, 0x07, 1, 2, 3, 4, 5, 6, 7, 8, 0xfd, 0x07, 1, 2, 3, 4, 0xfa, 0x07, 0x00, 0xfb, 0x07, 0xfc, 0x07}, in)
		checkDecode(t, tc.op.OpKind(), false, mixed)
		checkDecode(t, tc.op.OpKind(), true, slices.Concat(res, res))
		for i := range len(in) {
			checkDecode(t, tc.op.OpKind(), false, in[:i])
		}
	}
}

// A forwarded reserve decodes with one allocation (its key) and encodes
// with none: the nested bucket lives on the stack.
func TestWireReserveAllocations(t *testing.T) {
	op := &Reserve{Key: "rl/ws/p/k", Bucket: sampleBucket, QuotaLimit: 50, Cost: 3, OK: true, Remaining: 7}
	buf := make([]byte, 0, 256)
	in, _ := op.AppendOp(buf[:0])
	in = slices.Clone(in)
	var recv Reserve
	if n := testing.AllocsPerRun(100, func() {
		if err := recv.UnmarshalOp(in); err != nil {
			t.Fatal(err)
		}
	}); n > 1 {
		t.Errorf("UnmarshalOp: %v allocations, want 1 (the key)", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := op.AppendOp(buf[:0]); err != nil {
			t.Fatal(err)
		}
		if _, err := op.AppendResult(buf[:0]); err != nil {
			t.Fatal(err)
		}
	}); n > 0 {
		t.Errorf("AppendOp and AppendResult: %v allocations, want 0", n)
	}
}

// FuzzWireDecode holds the protowire decoders of every kind to proto's on
// fuzzed bytes (and the encoders, on what decoded).
func FuzzWireDecode(f *testing.F) {
	kinds := wireKinds()
	for _, tc := range wireSamples {
		k := byte(slices.Index(kinds, tc.op.OpKind()))
		in, _ := tc.op.AppendOp(nil)
		res, _ := tc.op.AppendResult(nil)
		f.Add(k, false, in)
		f.Add(k, true, res)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		f.Add(byte(r.IntN(len(kinds))), r.IntN(2) == 0, randWire(r, 0))
	}
	f.Fuzz(func(t *testing.T, k byte, result bool, data []byte) {
		checkDecode(t, kinds[int(k)%len(kinds)], result, data)
	})
}
