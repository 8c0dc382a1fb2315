package ratecheck

import (
	"context"
	"testing"
)

// BenchmarkAnswerJSON is the answer alone: one check's result (three
// matched policies) written again and again into its scratch.
func BenchmarkAnswerJSON(b *testing.B) {
	cat := testCatalog(1, testPolicy("bbbbbbbb-0000-4000-8000-000000000001", "payment.*", "subject", 1<<40),
		testPolicy("bbbbbbbb-0000-4000-8000-000000000002", "*", "workspace", 1<<40),
		testPolicy("bbbbbbbb-0000-4000-8000-000000000003", "payment.card", "device", 1<<40))
	m := mustNewModule(b)
	r, err := m.Check(context.Background(), cat, caller(cat), &Request{Action: "payment.card", SubjectID: []byte("u"), DeviceID: []byte("d")})
	if err != nil || len(r.out) != 3 {
		b.Fatalf("%v, %d policies", err, len(r.out))
	}
	defer m.Release(r)
	b.ReportAllocs()
	for b.Loop() {
		r.Keep(r.AppendJSON(r.Scratch()))
	}
}
