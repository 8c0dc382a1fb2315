package ratecheck

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// keyShards returns the shard (of mustNewModule's 4) of each policy's key
// for a check of req.
func keyShards(t testing.TB, m *Module, cat *catalog.Catalog, req Request) []int {
	t.Helper()
	r, err := m.Check(context.Background(), cat, caller(cat), &req)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release(r)
	var out []int
	for _, o := range r.out {
		out = append(out, cluster.Partition(o.op.Key)%4)
	}
	return out
}

// subjectFor finds a subject whose check's two keys fall on one shard
// (together) or on two (apart), probing with a throw-away module.
func subjectFor(t testing.TB, cat *catalog.Catalog, together bool) []byte {
	t.Helper()
	probe := mustNewModule(t)
	for i := range 200 {
		s := []byte(fmt.Sprint("user-", i))
		sh := keyShards(t, probe, cat, Request{Action: "pay", SubjectID: s})
		if (sh[0] == sh[1]) == together {
			return s
		}
	}
	t.Fatal("no subject found")
	return nil
}

// A refused check holds nothing, whether its keys share a shard (one
// all-or-none op) or not (reserve, then refund); 64 concurrent checks admit
// exactly the subject bucket's capacity and take exactly that much of the
// workspace bucket.
func TestRefusedChecksHoldNothingOnOneShardOrSeveral(t *testing.T) {
	for _, together := range []bool{true, false} {
		t.Run(fmt.Sprint("together=", together), func(t *testing.T) {
			small := testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "pay", "subject", 50)
			big := testPolicy("aaaaaaaa-0000-4000-8000-000000000002", "*", "workspace", 1000)
			cat := testCatalog(1, small, big)
			subject := subjectFor(t, cat, together)
			m := mustNewModule(t)
			req := Request{Action: "pay", SubjectID: subject}
			var allowed, undone atomic.Int64
			var wg sync.WaitGroup
			for range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 4 {
						req := req
						r, err := m.Check(context.Background(), cat, caller(cat), &req)
						if err != nil {
							t.Error(err)
							return
						}
						switch r.Decision() {
						case ratelimit.Allow:
							allowed.Add(1)
						default:
							if !r.out[1].refunded {
								t.Error("a refused check kept its workspace reservation")
							}
							if r.undone {
								undone.Add(1)
							}
						}
						m.Release(r)
					}
				}()
			}
			wg.Wait()
			if allowed.Load() != 50 {
				t.Fatalf("allowed %d checks, want exactly the subject capacity 50", allowed.Load())
			}
			want := int64(0)
			if together {
				want = 64*4 - 50
			}
			if undone.Load() != want {
				t.Fatalf("together=%v but %d refusals were undone inside the shard", together, undone.Load())
			}
			r, err := m.Check(context.Background(), cat, caller(cat), &Request{Action: "pay", SubjectID: []byte("someone-else")})
			if err != nil || r.Decision() != ratelimit.Allow {
				t.Fatalf("another subject: %v", err)
			}
			defer m.Release(r)
			if got := r.out[1].op.Remaining; got != 1000-50-1 {
				t.Fatalf("workspace bucket has %d left, want %d: refused checks leaked or minted tokens", got, 1000-50-1)
			}
		})
	}
}

// refundTimesOut runs reserves on a real node and times every refund out.
type refundTimesOut struct{ inner actors.Asker }

func (a refundTimesOut) Ask(key string, op actors.Op) error {
	if _, ok := op.(*actors.Refund); ok {
		return errors.Join(cluster.ErrUnavailable, actors.ErrTimeout)
	}
	return a.inner.Ask(key, op)
}

// A refund that timed out may still run later and reads its op from the
// Result: the Result must not go back to the pool.
func TestATimedOutRefundKeepsItsResultOutOfThePool(t *testing.T) {
	small := testPolicy("aaaaaaaa-0000-4000-8000-000000000001", "pay", "subject", 1)
	big := testPolicy("aaaaaaaa-0000-4000-8000-000000000002", "*", "workspace", 100)
	cat := testCatalog(1, small, big)
	sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
	t.Cleanup(sys.Stop)
	m := New(Config{Asker: refundTimesOut{cluster.SingleNode("n1", sys, time.Second)}})
	req := Request{Action: "pay", SubjectID: []byte("u")}
	r, err := m.Check(context.Background(), cat, caller(cat), &req)
	if err != nil || r.Decision() != ratelimit.Allow || r.abandon {
		t.Fatalf("first check: %v", err)
	}
	m.Release(r)
	if r, err = m.Check(context.Background(), cat, caller(cat), &req); err != nil || r.Decision() == ratelimit.Allow {
		t.Fatalf("second check should be refused: %v", err)
	}
	if !r.abandon {
		t.Fatal("a Result whose refund timed out would be reused while the refund may still run")
	}
}
