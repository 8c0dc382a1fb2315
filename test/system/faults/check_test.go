package faults

import (
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func verify(tok, idem, node string, from, to int, out Outcome, success, dup bool) Op {
	return Op{Kind: KindVerify, Token: tok, IdemKey: idem, Node: node, Invoke: at(from), Done: at(to), Outcome: out, Success: success, Duplicate: dup}
}

func grant(key, holder string, fence uint64, from, to, expires int) Op {
	return Op{Kind: KindLease, Key: key, Holder: holder, Fence: fence, Invoke: at(from), Done: at(to), Expires: at(expires),
		Outcome: OK, Acquired: true, Capacity: 2, Node: "n1"}
}

func rate(key string, allowed, open bool, out Outcome) Op {
	return Op{Kind: KindRate, Key: key, Allowed: allowed, FailOpen: open, Outcome: out, Capacity: 3, Invoke: at(0), Done: at(1)}
}

func TestCheckerFindsWhatEachHistoryBreaks(t *testing.T) {
	bounds := Bounds{RateExtraPerChange: 3, OwnershipChanges: 1, RingWhole: 5 * time.Second, Stop: 10 * time.Second}
	nodes := []string{"n1", "n2"}
	cases := []struct {
		name   string
		ops    []Op
		events []Event
		want   []string
	}{
		{"an empty history breaks nothing", nil, nil, nil},
		{"a token accepted once and refused as duplicate on the other node is fine", []Op{
			verify("t1", "a", "n1", 0, 10, OK, true, false),
			verify("t1", "b", "n2", 5, 20, OK, false, true),
		}, nil, nil},
		{"a token accepted under two idempotency keys is a double spend", []Op{
			verify("t1", "a", "n1", 0, 10, OK, true, false),
			verify("t1", "b", "n2", 5, 20, OK, true, false),
		}, nil, []string{"tokens-once"}},
		{"a retry with the same idempotency key repeating success is not a double spend", []Op{
			verify("t1", "a", "n1", 0, 10, Unknown, false, false),
			verify("t1", "a", "n2", 20, 30, OK, true, false),
			verify("t1", "a", "n2", 40, 50, OK, true, false),
			verify("t1", "b", "n3", 40, 50, OK, false, true),
		}, nil, nil},
		{"two successes without idempotency keys are a double spend", []Op{
			verify("t1", "", "n1", 0, 10, OK, true, false),
			verify("t1", "", "n2", 20, 30, OK, true, false),
		}, nil, []string{"tokens-once"}},
		{"a token whose first attempt was cut and whose retry was refused as duplicate is lost", []Op{
			verify("t1", "a", "n1", 0, 10, Unknown, false, false),
			verify("t1", "a", "n1", 20, 30, OK, false, true),
			verify("t1", "b", "n2", 20, 30, OK, false, true),
		}, nil, []string{"tokens-lost"}},
		{"a token with only unknown answers is unresolved, not lost", []Op{
			verify("t1", "a", "n1", 0, 10, Unknown, false, false),
		}, nil, nil},
		{"holders up to capacity with rising fences are fine", []Op{
			grant("k", "h1", 1, 0, 10, 1000), grant("k", "h2", 2, 20, 30, 1000),
		}, nil, nil},
		{"a third holder while two hold is over capacity", []Op{
			grant("k", "h1", 1, 0, 10, 1000), grant("k", "h2", 2, 20, 30, 1000), grant("k", "h3", 3, 40, 50, 1000),
		}, nil, []string{"lease-capacity"}},
		{"a third holder after one expired is within capacity", []Op{
			grant("k", "h1", 1, 0, 10, 35), grant("k", "h2", 2, 20, 30, 1000), grant("k", "h3", 3, 40, 50, 1000),
		}, nil, nil},
		{"an idempotent replay of a holder is not another holder", []Op{
			grant("k", "h1", 1, 0, 10, 1000), grant("k", "h2", 2, 20, 30, 1000), grant("k", "h2", 2, 40, 50, 1000),
		}, nil, nil},
		{"a fence lower than one granted before is backwards", []Op{
			grant("k", "h1", 5, 0, 10, 50), grant("k", "h2", 3, 60, 70, 1000),
		}, nil, []string{"lease-fence"}},
		{"concurrent grants may carry fences in any order", []Op{
			grant("k", "h1", 5, 0, 30, 1000), grant("k", "h2", 3, 10, 20, 1000),
		}, nil, nil},
		{"two holders with one fence repeat it", []Op{
			grant("k", "h1", 5, 0, 30, 1000), grant("k", "h2", 5, 10, 20, 1000),
		}, nil, []string{"lease-fence"}},
		{"fail_closed admits up to capacity plus the bound are fine", append(repeat(rate("b", true, false, OK), 6),
			rate("b", false, false, OK), rate("b", true, false, Unknown)), nil, nil},
		{"fail_closed admits beyond capacity plus the bound are over-admission", repeat(rate("b", true, false, OK), 7), nil, []string{"rate-admits"}},
		{"fail_open admits beyond the bound are measured, not a violation", repeat(rate("b", true, true, OK), 9), nil, nil},
		{"an acknowledged write read on every node is fine", []Op{
			{Kind: KindWrite, Object: "w1", Outcome: OK},
			{Kind: KindWrite, Object: "w2", Outcome: Unknown},
			{Kind: KindRead, Object: "w1", Node: "n1", Outcome: OK, Found: true},
			{Kind: KindRead, Object: "w1", Node: "n2", Outcome: OK, Found: true},
		}, nil, nil},
		{"an acknowledged write missing on one node is lost there", []Op{
			{Kind: KindWrite, Object: "w1", Outcome: OK},
			{Kind: KindRead, Object: "w1", Node: "n1", Outcome: OK, Found: true},
			{Kind: KindRead, Object: "w1", Node: "n2", Outcome: OK, Found: false},
		}, nil, []string{"writes"}},
		{"an acknowledged write never read on a node counts as missing", []Op{
			{Kind: KindWrite, Object: "w1", Outcome: OK},
			{Kind: KindRead, Object: "w1", Node: "n1", Outcome: OK, Found: true},
		}, nil, []string{"writes"}},
		{"the last read decides", []Op{
			{Kind: KindWrite, Object: "w1", Outcome: OK},
			{Kind: KindRead, Object: "w1", Node: "n1", Outcome: OK, Found: true},
			{Kind: KindRead, Object: "w1", Node: "n2", Outcome: OK, Found: false, Invoke: at(0)},
			{Kind: KindRead, Object: "w1", Node: "n2", Outcome: OK, Found: true, Invoke: at(10)},
		}, nil, nil},
		{"a ring whole within the bound is fine, a slow one and one never whole are not", nil, []Event{
			{What: "ring-whole", Dur: 2 * time.Second},
			{What: "ring-whole", Dur: 6 * time.Second},
			{What: "ring-not-whole", Dur: 30 * time.Second},
		}, []string{"ring"}},
		{"a stop past its bound is reported", nil, []Event{{What: "stop", Node: "n1", Dur: 11 * time.Second}}, []string{"stop"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Check(c.ops, c.events, nodes, bounds)
			if got := r.Failed(); !slices.Equal(got, c.want) {
				t.Fatalf("failed checks %v, want %v; violations %v", got, c.want, r.Violations)
			}
		})
	}
}

func repeat(op Op, n int) []Op {
	out := make([]Op, n)
	for i := range out {
		out[i] = op
	}
	return out
}

func TestCheckerCountsWhatItMeasures(t *testing.T) {
	ops := []Op{
		verify("t1", "a", "n1", 0, 10, OK, true, false), verify("t1", "b", "n2", 0, 10, OK, true, false),
		verify("t2", "a", "n1", 0, 10, Unknown, false, false), verify("t2", "a", "n1", 20, 30, OK, false, true),
		grant("k", "h1", 1, 0, 10, 1000), grant("k", "h2", 2, 0, 10, 1000), grant("k", "h3", 3, 0, 10, 1000),
	}
	r := Check(ops, nil, nil, Bounds{})
	s := r.Stats
	if s.Tokens != 2 || s.DoubleSpent != 1 || s.Lost != 1 || s.Unknown != 1 || s.LeaseMaxHolders != 3 || s.LeaseCapacity != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestGenerateIsSeededAndCoversEveryKind(t *testing.T) {
	a, b := Generate(7, 50, AllFaults, 3), Generate(7, 50, AllFaults, 3)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave different schedules")
	}
	if slices.Equal(a, Generate(8, 50, AllFaults, 3)) {
		t.Fatal("another seed gave the same schedules")
	}
	count := map[Fault]int{}
	for _, s := range a {
		count[s.Fault]++
		if s.Target < 0 || s.Target > 2 || s.For <= 0 {
			t.Fatalf("bad schedule %v", s)
		}
	}
	for _, f := range AllFaults {
		if count[f] < 5 {
			t.Fatalf("%s drawn %d times in 50, want ≥ 5", f, count[f])
		}
	}
}
