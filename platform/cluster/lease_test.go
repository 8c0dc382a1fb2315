package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
)

// BenchmarkLeaseGrantRelease grants and releases one lease in a two-node
// cluster (the other node is the key's replica): asked on the owner
// ("owner") and forwarded to it ("forwarded"), replica round trips
// included; allocations count both nodes.
func BenchmarkLeaseGrantRelease(b *testing.B) {
	for _, bc := range []struct{ name, owner string }{{"owner", "a"}, {"forwarded", "b"}} {
		b.Run(bc.name, func(b *testing.B) {
			p := mustNewPair(b)
			key := p.keyOwnedBy(bc.owner)
			exp := time.Now().Add(time.Hour).UnixNano()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprint("l", i)
				g := &actors.LeaseReserve{Key: key, LeaseID: id, Capacity: 5, Expires: exp}
				if err := p.a.Ask(key, g); err != nil || !g.Granted {
					b.Fatalf("grant %d: %+v %v", i, g, err)
				}
				r := &actors.LeaseRelease{Key: key, LeaseID: id, Fence: g.Fence}
				if err := p.a.Ask(key, r); err != nil || !r.Released {
					b.Fatalf("release %d: %+v %v", i, r, err)
				}
			}
		})
	}
}

// A lease granted through the router is held by the owner and by the
// replica, under the fence the caller got; forwarded from the non-owner
// the same holds.
func TestALeaseGrantIsHeldByTheOwnerAndTheReplica(t *testing.T) {
	p := mustNewPair(t)
	for _, owner := range []string{"a", "b"} {
		key := p.keyOwnedBy(owner)
		exp := time.Now().Add(time.Minute).UnixNano()
		g := &actors.LeaseReserve{Key: key, LeaseID: "l1", Capacity: 1, Expires: exp}
		if err := p.a.Ask(key, g); err != nil || !g.Granted {
			t.Fatalf("grant on a key %s owns: %+v %v", owner, g, err)
		}
		for name, r := range map[string]*Router{"a": p.a, "b": p.b} {
			u := &actors.LeaseUsage{Key: key}
			if err := r.AskLocal(Partition(key), u); err != nil || u.InUse != 1 || u.Fence != g.Fence {
				t.Fatalf("key owned by %s: %s holds %+v %v, want 1 holder, fence %d", owner, name, u, err, g.Fence)
			}
		}
		full := &actors.LeaseReserve{Key: key, LeaseID: "l2", Capacity: 1, Expires: exp}
		if err := p.b.Ask(key, full); err != nil || full.Granted {
			t.Fatalf("grant above capacity: %+v %v", full, err)
		}
	}
}

// An unreachable replica fails the grant (unavailable) and the owner
// keeps no holder: no grant only one node remembers.
func TestAnUnreachableReplicaFailsTheGrantAndLeavesNoHolder(t *testing.T) {
	p := mustNewPair(t)
	key := p.keyOwnedBy("a")
	dead := p.a.Ring().Members
	dead[1].PeerAddr = "127.0.0.1:1"
	p.a.SetRing(NewRing(9, dead, "a"))
	g := &actors.LeaseReserve{Key: key, LeaseID: "l1", Capacity: 1, Expires: time.Now().Add(time.Minute).UnixNano()}
	if err := p.a.Ask(key, g); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	u := &actors.LeaseUsage{Key: key}
	if err := p.a.AskLocal(Partition(key), u); err != nil || u.InUse != 0 {
		t.Fatalf("owner kept an unconfirmed grant: %+v %v", u, err)
	}
}
