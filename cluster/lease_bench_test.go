package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/trustd/trustd/actors"
)

// BenchmarkLeaseGrantRelease grants and releases one lease on a key the
// asking node owns, in a two-node cluster (the other node is the key's
// replica): what one acquire-and-release costs the owner, replica round
// trips included.
func BenchmarkLeaseGrantRelease(b *testing.B) {
	p := mustNewPair(b)
	key := p.keyOwnedBy("a")
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
}
