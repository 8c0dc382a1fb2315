package actors

import (
	"encoding/hex"
	"flag"
	"os"
	"strings"
	"testing"
)

var updateWireGolden = flag.Bool("update-wire-golden", false, "rewrite testdata/wire_golden.txt from the current encodings")

// TestWireBytesDoNotChange pins the bytes every op puts on the wire: a
// forwarded ask between two builds of one release must decode alike, so a
// change of the mapping (generated or not) must not change them unless the
// changelog in platform/http/platform.go says so and this file is rewritten.
func TestWireBytesDoNotChange(t *testing.T) {
	var b strings.Builder
	for _, tc := range wireSamples {
		in, err := tc.op.AppendOp(nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := tc.op.AppendResult(nil)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(tc.op.OpKind() + " " + hex.EncodeToString(in) + " " + hex.EncodeToString(res) + "\n")
	}
	const path = "testdata/wire_golden.txt"
	if *updateWireGolden {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(b.String(), "\n")
	for i, w := range strings.Split(string(want), "\n") {
		if i >= len(got) || got[i] != w {
			t.Errorf("sample %d (%s): encodes as\n  %s\nwant\n  %s", i, wireSamples[min(i, len(wireSamples)-1)].name, got[min(i, len(got)-1)], w)
		}
	}
	if len(got) != len(strings.Split(string(want), "\n")) {
		t.Errorf("%d samples, golden file has %d", len(got), len(strings.Split(string(want), "\n")))
	}
}

// BenchmarkWireRoundTrip encodes and decodes one forwarded ask of the
// hottest kinds (rate-limit reserve, marker consume, lease reserve): the
// work the generated mapping does per forwarded op.
func BenchmarkWireRoundTrip(b *testing.B) {
	ops := []WireOp{
		&Reserve{Key: "rl/ws/p/k", Bucket: sampleBucket, QuotaLimit: 50, Cost: 3, OK: true, Remaining: 7},
		&Consume{ID: "tok", Expires: 42, First: true},
		&LeaseReserve{Key: "cc/w/c/h", LeaseID: "l1", Capacity: 3, Expires: 77, Granted: true, Fence: 9},
	}
	recv := []WireOp{&Reserve{}, &Consume{}, &LeaseReserve{}}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := i % len(ops)
		in, _ := ops[k].AppendOp(buf[:0])
		if err := recv[k].UnmarshalOp(in); err != nil {
			b.Fatal(err)
		}
		res, _ := recv[k].AppendResult(buf[:0])
		if err := ops[k].UnmarshalResult(res); err != nil {
			b.Fatal(err)
		}
	}
}
