package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
)

// TestReplicatedAsksInBothDirectionsDoNotWaitOnEachOther sends
// replicated asks through a and through b at once, for keys either owns
// (the other is the replica). Serving a frame of such asks needs a
// replica ask back to the sender; were replica asks queued behind the
// sender's own frame in flight to the same peer, the two frames would
// wait on each other until the replica asks timed out (every use 503).
func TestReplicatedAsksInBothDirectionsDoNotWaitOnEachOther(t *testing.T) {
	p := mustNewPair(t)
	var unavailable atomic.Int32
	var wg sync.WaitGroup
	exp := time.Now().Add(time.Minute).UnixNano()
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from := p.a
			if g%2 == 1 {
				from = p.b
			}
			for i := 0; i < 40; i++ {
				key := fmt.Sprintf("use-%d-%d", g, i)
				op := &actors.Consume{ID: key, Expires: exp}
				if err := from.Ask(key, op); err != nil {
					unavailable.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := unavailable.Load(); n > 0 {
		t.Fatalf("%d of %d replicated asks unavailable between two healthy nodes", n, 32*40)
	}
}
