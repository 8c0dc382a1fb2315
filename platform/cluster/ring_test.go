package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
)

func members(n int) []Member {
	out := make([]Member, n)
	for i := range out {
		out[i] = Member{ID: fmt.Sprintf("node-%d", i)}
	}
	return out
}

func TestRingSpreadsPartitionsEvenly(t *testing.T) {
	r := NewRing(1, members(3), "node-0")
	for id, n := range r.Share() {
		if n < 250 || n > 430 {
			t.Errorf("%s owns %d of %d partitions, want about a third", id, n, Partitions)
		}
	}
}

func TestReplicaIsTheOwnerAfterTheOwnerLeaves(t *testing.T) {
	three := NewRing(1, members(3), "node-0")
	for p := 0; p < Partitions; p++ {
		owner := three.Members[three.Owner(p)].ID
		replica := three.Members[three.Replica(p)].ID
		if owner == replica {
			t.Fatalf("partition %d: replica equals owner", p)
		}
		var rest []Member
		for _, m := range three.Members {
			if m.ID != owner {
				rest = append(rest, m)
			}
		}
		two := NewRing(2, rest, "node-0")
		if got := two.Members[two.Owner(p)].ID; got != replica {
			t.Fatalf("partition %d: after %s leaves owner is %s, want replica %s", p, owner, got, replica)
		}
	}
}

func TestJoinMovesOnlyPartitionsToTheNewMember(t *testing.T) {
	before := NewRing(1, members(3), "node-0")
	after := NewRing(2, members(4), "node-0")
	moved := 0
	for p := 0; p < Partitions; p++ {
		a, b := before.Members[before.Owner(p)].ID, after.Members[after.Owner(p)].ID
		if a != b {
			moved++
			if b != "node-3" {
				t.Fatalf("partition %d moved from %s to %s, not to the new member", p, a, b)
			}
		}
	}
	if moved < 150 || moved > 370 {
		t.Errorf("%d partitions moved, want about a quarter", moved)
	}
}

func TestPartitionIsStable(t *testing.T) {
	// The value is part of the wire contract between nodes: it must never change.
	if got := Partition("rl/ws/policy/abc"); got != Partition("rl/ws/policy/abc") || got < 0 || got >= Partitions {
		t.Fatalf("Partition = %d", got)
	}
}

func TestSingleNodeRouterRunsLocally(t *testing.T) {
	sys := actors.NewSystem(actors.Config{Shards: 2}, nil)
	defer sys.Stop()
	r := SingleNode("n1", sys, time.Second)
	op := &actors.Consume{ID: "t", Expires: time.Now().Add(time.Minute).UnixNano()}
	if err := r.Ask("t", op); err != nil || !op.First {
		t.Fatalf("Ask = %v, First = %v", err, op.First)
	}
	r.SetRing(NewRing(0, members(2), "n1")) // older epoch: ignored
	if r.Ring().Epoch != 1 {
		t.Fatal("an older ring replaced a newer one")
	}
}

func BenchmarkRingOwner(b *testing.B) {
	r := NewRing(1, members(5), "node-0")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = r.Owner(Partition("rl/ws/policy/abcdef"))
	}
}

func BenchmarkRouterLocalAsk(b *testing.B) {
	sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
	defer sys.Stop()
	r := SingleNode("n1", sys, time.Second)
	benchLocalAsk(b, r)
}

// BenchmarkRouterLocalAskLive is the local ask of a cluster member: the
// liveness gate (a monotonic clock read) and the held bit on every owner
// decision (issue 23).
func BenchmarkRouterLocalAskLive(b *testing.B) {
	sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
	defer sys.Stop()
	r := SingleNode("n1", sys, time.Second)
	r.renew(time.Now().Add(time.Hour))
	benchLocalAsk(b, r)
}

func benchLocalAsk(b *testing.B, r *Router) {
	op := &actors.Seen{ID: "k"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := r.Ask("k", op); err != nil {
			b.Fatal(err)
		}
	}
}
