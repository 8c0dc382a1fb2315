package clustertest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/lib/ratelimit"
	"github.com/trustd/trustd/traffic/lease"
)

type leaseAnswer struct {
	Acquired      bool     `json:"acquired"`
	Released      bool     `json:"released"`
	LeaseToken    string   `json:"lease_token"`
	ReasonCodes   []string `json:"reason_codes"`
	FencingTokens []struct {
		FencingToken uint64 `json:"fencing_token"`
	} `json:"fencing_tokens"`
}

// leaseCall posts body to path through the nodes of vias in turn,
// retrying "unavailable" (an ask past its bound, a dead owner not yet out
// of the ring) as a client would, until an answer or 20 s.
func leaseCall(t *testing.T, c *Cluster, vias []int, secret, path string, body []byte) leaseAnswer {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 0; ; attempt++ {
		via := vias[attempt%len(vias)]
		st, b, err := c.DoAs(via, "POST", path, secret, body)
		if (err != nil || st == 503) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var a leaseAnswer
		if err != nil || st != 200 || json.Unmarshal(b, &a) != nil {
			t.Fatalf("%s through node-%d: %d %s %v", path, via, st, b, err)
		}
		return a
	}
}

// The owner of a concurrency constraint's slots is killed with capacity
// leases held: its successor (the partition's replica) holds every one of
// them, refuses more, keeps renewing and releasing them, and issues
// fences above every fence the dead owner issued.
func TestLeasesSurviveTheirOwnersCrash(t *testing.T) {
	c := Start(t, 3)
	s := setupSite(t, c)
	const capacity = 5
	var con struct {
		ConstraintID string `json:"constraint_id"`
	}
	body := c.MustCreate(0, "/admin/v1/workspaces/"+s.ws+"/concurrency-constraints",
		fmt.Sprintf(`{"name":"exports","scope":"subject","action_pattern":"export.*","capacity":%d}`, capacity))
	if err := json.Unmarshal(body, &con); err != nil {
		t.Fatal(err)
	}
	for _, i := range c.Live() {
		Eventually(t, 5*time.Second, func() error {
			path := "/admin/v1/workspaces/" + s.ws + "/concurrency-constraints/" + con.ConstraintID
			if st, b, _ := c.Do(i, "GET", path, nil); st != 200 {
				return fmt.Errorf("node-%d has no constraint yet: %d %s", i, st, b)
			}
			return nil
		})
	}
	// A subject whose slots node-1 owns, with node-0 or node-2 as replica.
	ws := c.Nodes[0].Store().Catalog().Workspaces[s.ws]
	var subject, key string
	for k := 0; ; k++ {
		if k == 500 {
			t.Fatal("no subject owned by node-1 in 500 tries")
		}
		subject = fmt.Sprint("tenant-", k)
		sum := ratelimit.HashScope(ws.ScopeKey, "subject\x00"+subject)
		var h [16]byte
		copy(h[:], sum[:])
		key = lease.Key(s.ws, con.ConstraintID, h)
		if c.Owner(0, key) == 1 {
			break
		}
	}
	replica := c.Replica(0, key)
	survivors := []int{0, 2}
	acquire := func(vias []int, idem string) leaseAnswer {
		return leaseCall(t, c, vias, s.secret, "/v1/concurrency/acquire",
			[]byte(fmt.Sprintf(`{"action":"export.report","subject_id":%q,"ttl_ms":120000,"idempotency_key":%q}`, subject, idem)))
	}
	var tokens []string
	var highest uint64
	for i := range capacity {
		a := acquire(survivors[i%2:i%2+1], fmt.Sprint("before-", i))
		if !a.Acquired || len(a.FencingTokens) != 1 {
			t.Fatalf("acquire %d before the crash: %+v", i, a)
		}
		f := a.FencingTokens[0].FencingToken
		if f <= highest {
			t.Fatalf("acquire %d: fence %d after %d", i, f, highest)
		}
		highest = f
		tokens = append(tokens, a.LeaseToken)
	}
	if a := acquire(survivors, "before-full"); a.Acquired {
		t.Fatalf("acquire above capacity before the crash: %+v", a)
	}

	c.Kill(1)
	c.WaitRing(2)
	if o := c.Owner(0, key); o != replica {
		t.Fatalf("the slots' new owner is node-%d, want their replica node-%d", o, replica)
	}
	// (More than capacity only if a grant was reverted after its replica
	// had confirmed it too late: a slot held until it expires.)
	u := &actors.LeaseUsage{Key: key}
	if err := c.Nodes[replica].Router().Ask(key, u); err != nil || u.InUse < capacity || u.Fence < highest {
		t.Fatalf("usage on the new owner: %+v %v, want %d in use and last fence %d", u, err, capacity, highest)
	}
	for _, via := range survivors {
		if a := acquire([]int{via}, fmt.Sprint("after-full-", via)); a.Acquired || len(a.ReasonCodes) != 1 || a.ReasonCodes[0] != "capacity-exhausted" {
			t.Fatalf("acquire above capacity through node-%d after the owner's crash: %+v", via, a)
		}
	}
	// The successor renews and releases leases the dead owner granted.
	ctx := fmt.Sprintf(`"action":"export.report","subject_id":%q`, subject)
	if a := leaseCall(t, c, survivors, s.secret, "/v1/concurrency/renew",
		[]byte(fmt.Sprintf(`{"lease_token":%q,%s,"ttl_ms":120000}`, tokens[0], ctx))); !a.Acquired {
		t.Fatalf("renew after the owner's crash: %+v", a)
	}
	if a := leaseCall(t, c, survivors, s.secret, "/v1/concurrency/release",
		[]byte(fmt.Sprintf(`{"lease_token":%q,%s}`, tokens[1], ctx))); !a.Released {
		t.Fatalf("release after the owner's crash: %+v", a)
	}
	a := acquire(survivors, "after-release")
	if !a.Acquired || a.FencingTokens[0].FencingToken <= highest {
		t.Fatalf("acquire after a release: %+v, want a fence above %d", a, highest)
	}
	t.Logf("fences: last before the crash %d, first after %d", highest, a.FencingTokens[0].FencingToken)
	if b := acquire(survivors, "after-full-again"); b.Acquired {
		t.Fatalf("acquire above capacity after the release was refilled: %+v", b)
	}
}
