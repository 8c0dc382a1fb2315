package summary

import (
	"reflect"
	"testing"
	"time"
)

func TestSumAddsUpTheMembersThatAnswered(t *testing.T) {
	at := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	nodes := []NodeMetrics{
		{NodeID: "n3", Modules: []ModuleCounts{{Module: "Rate limiting", Requests: 5, Throttled: 1, Decisions: map[string]uint64{"allow": 3, "throttle": 2}}}},
		{NodeID: "n1", Modules: []ModuleCounts{
			{Module: "Admin", Requests: 2, ClientErrors: 2},
			{Module: "Rate limiting", Requests: 7, ServerErrors: 1, Decisions: map[string]uint64{"allow": 6}},
		}},
		{NodeID: "n2", Error: "timeout", Modules: []ModuleCounts{{Module: "Admin", Requests: 100}}},
	}
	got := Sum(at, nodes)
	if got.Members != 3 || got.Answered != 2 || !got.At.Equal(at) {
		t.Fatalf("members %d answered %d at %v, want 3, 2, %v", got.Members, got.Answered, got.At, at)
	}
	if ids := []string{got.Nodes[0].NodeID, got.Nodes[1].NodeID, got.Nodes[2].NodeID}; !reflect.DeepEqual(ids, []string{"n1", "n2", "n3"}) {
		t.Fatalf("nodes in order %v", ids)
	}
	want := []ModuleCounts{
		{Module: "Admin", Requests: 2, ClientErrors: 2},
		{Module: "Rate limiting", Requests: 12, Throttled: 1, ServerErrors: 1, Decisions: map[string]uint64{"allow": 9, "throttle": 2}},
	}
	if !reflect.DeepEqual(got.Total, want) {
		t.Fatalf("total %+v, want %+v (the member that did not answer left out)", got.Total, want)
	}
}

func TestByModuleMergesAndDropsZeroDecisions(t *testing.T) {
	var m ModuleCounts
	m.AddDecision("allow", 0)
	if m.Decisions != nil {
		t.Fatal("a zero count made a decisions map")
	}
	got := ByModule([]ModuleCounts{{Module: "B", Requests: 1}, {Module: "A", Requests: 2}, {Module: "B", Requests: 3}})
	want := []ModuleCounts{{Module: "A", Requests: 2}, {Module: "B", Requests: 4}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%+v, want %+v", got, want)
	}
	if got := ByModule(nil); got == nil || len(got) != 0 {
		t.Fatalf("no counts: %#v, want an empty list (the contract's total is required)", got)
	}
}
