package keys

import (
	"errors"
	"testing"
)

func mustNewChooser(t *testing.T, spec Spec, seed uint64) *Chooser {
	t.Helper()
	c, err := New(spec, seed)
	if err != nil {
		t.Fatalf("New(%+v): %v", spec, err)
	}
	return c
}

func TestSpecValidation(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		ok   bool
	}{
		{"one uniform key is valid", Spec{N: 1, Distribution: Uniform}, true},
		{"an empty distribution means uniform", Spec{N: 10}, true},
		{"zipf with the default exponent is valid", Spec{N: 10, Distribution: Zipf}, true},
		{"zero keys is rejected", Spec{N: 0}, false},
		{"a zipf exponent of one is rejected", Spec{N: 10, Distribution: Zipf, ZipfS: 1}, false},
		{"an unknown distribution is rejected", Spec{N: 10, Distribution: "normal"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.spec.Validate()
			if tt.ok && err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrBadSpec) {
				t.Fatalf("want ErrBadSpec, got %v", err)
			}
		})
	}
}

func histogram(c *Chooser, n, draws int) []int {
	h := make([]int, n)
	for range draws {
		h[c.Next()]++
	}
	return h
}

func TestUniformCoversEveryKeyEvenly(t *testing.T) {
	const n, draws = 100, 200000
	h := histogram(mustNewChooser(t, Spec{N: n, Distribution: Uniform}, 1), n, draws)
	want := draws / n
	for k, got := range h {
		if got < want*8/10 || got > want*12/10 {
			t.Fatalf("key %d drawn %d times, want about %d", k, got, want)
		}
	}
}

func TestZipfMakesLowKeysHot(t *testing.T) {
	const n, draws = 1000, 200000
	h := histogram(mustNewChooser(t, Spec{N: n, Distribution: Zipf}, 2), n, draws)
	if h[0] <= h[1] || h[1] <= h[10] || h[10] <= h[500] {
		t.Fatalf("expected decreasing popularity, got h[0]=%d h[1]=%d h[10]=%d h[500]=%d", h[0], h[1], h[10], h[500])
	}
	top := 0
	for k := range 10 {
		top += h[k]
	}
	if top < draws/4 {
		t.Fatalf("the ten hottest keys took %d of %d draws, want a clear skew", top, draws)
	}
}

func TestSingleKeyIsAlwaysZero(t *testing.T) {
	for _, d := range []Distribution{Uniform, Zipf} {
		c := mustNewChooser(t, Spec{N: 1, Distribution: d}, 3)
		for range 100 {
			if k := c.Next(); k != 0 {
				t.Fatalf("%s: got key %d with one key", d, k)
			}
		}
	}
}

func TestSameSeedSameSequence(t *testing.T) {
	a := mustNewChooser(t, Spec{N: 50, Distribution: Zipf}, 7)
	b := mustNewChooser(t, Spec{N: 50, Distribution: Zipf}, 7)
	for i := range 1000 {
		if x, y := a.Next(), b.Next(); x != y {
			t.Fatalf("draw %d differs: %d vs %d", i, x, y)
		}
	}
}

func TestNextAllocatesNothing(t *testing.T) {
	for _, d := range []Distribution{Uniform, Zipf} {
		c := mustNewChooser(t, Spec{N: 1000, Distribution: d}, 4)
		if allocs := testing.AllocsPerRun(1000, func() { c.Next() }); allocs != 0 {
			t.Fatalf("%s: Next allocates %.1f times", d, allocs)
		}
	}
}

func TestPayloadsSpliceTheKey(t *testing.T) {
	tests := []struct {
		name string
		n, k int
	}{
		{"a small key space is pre-built", 10, 7},
		{"a large key space is assembled per request", prebuiltLimit + 5, prebuiltLimit + 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPayloads(tt.n, Template(`{"s":"u-`, `","d":"d-`, `"}`))
			var buf []byte
			got := string(p.Get(&buf, tt.k))
			want := `{"s":"u-` + itoa(tt.k) + `","d":"d-` + itoa(tt.k) + `"}`
			if got != want {
				t.Fatalf("got %s want %s", got, want)
			}
			if allocs := testing.AllocsPerRun(100, func() { p.Get(&buf, tt.k) }); allocs != 0 {
				t.Fatalf("Get allocates %.1f times", allocs)
			}
		})
	}
}

func itoa(k int) string {
	if k == 0 {
		return "0"
	}
	var b []byte
	for ; k > 0; k /= 10 {
		b = append([]byte{byte('0' + k%10)}, b...)
	}
	return string(b)
}
