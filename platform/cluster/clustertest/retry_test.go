package clustertest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/cluster"
)

// TestSiteverifyRetriesAcrossAKillGetTheFirstOutcome redeems tokens while
// a node dies under them: each token has two callers (two backends, two
// idempotency keys) that start together, some through the node that dies,
// and each retries a 503 or a cut-off request with its own key through
// the next node until it gets an answer. Whatever the kill interrupted
// (the owner's half, the replica's, an answer on its way back), every
// token ends with exactly one success: never two (a double spend), never
// none (a token lost to retries); the winner's retry keeps getting the
// same assessment and a third caller a duplicate, on every survivor.
func TestSiteverifyRetriesAcrossAKillGetTheFirstOutcome(t *testing.T) {
	c := Start(t, 3)
	s := setupSite(t, c)
	const tokens, victim = 24, 2
	toks := make([]string, tokens)
	for i := range toks {
		toks[i] = c.mint(t, i%2, s)
	}
	apis := []string{c.Nodes[0].APIURL(), c.Nodes[1].APIURL(), c.Nodes[2].APIURL()}
	type answer struct {
		v      Verdict
		failed int
		err    error
	}
	answers := make([][2]answer, tokens)
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range toks {
		for caller := 0; caller < 2; caller++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				// Rotated so that some first attempts go through the victim.
				via := append(append([]string(nil), apis[(i+caller)%3:]...), apis[:(i+caller)%3]...)
				v, failed, err := SiteverifyRetried(via, s.secret, toks[i], fmt.Sprintf("caller-%d-%d", i, caller), deadline)
				answers[i][caller] = answer{v, failed, err}
			}()
		}
	}
	close(start)
	time.Sleep(15 * time.Millisecond) // some redemptions are in flight
	c.Kill(victim)
	wg.Wait()
	failed := 0
	winners := make([]int, tokens)
	for i, a := range answers {
		successes := 0
		for caller, ans := range a {
			failed += ans.failed
			switch {
			case ans.err != nil:
				t.Fatalf("token %d caller %d: %v", i, caller, ans.err)
			case ans.v.Success:
				successes++
				winners[i] = caller
			case !ans.v.Duplicate():
				t.Fatalf("token %d caller %d: %+v", i, caller, ans.v)
			}
		}
		if successes != 1 {
			t.Fatalf("token %d: %d successes of two callers, want exactly 1 (%+v)", i, successes, a)
		}
	}
	t.Logf("%d tokens, two callers each: every token one success; %d attempts failed (503 or cut off) and were retried", tokens, failed)
	c.WaitRing(2)
	for i := range toks {
		win := answers[i][winners[i]].v
		for _, n := range []int{0, 1} {
			via := []string{c.Nodes[n].APIURL()}
			v, _, err := SiteverifyRetried(via, s.secret, toks[i], fmt.Sprintf("caller-%d-%d", i, winners[i]), time.Now().Add(10*time.Second))
			if err != nil || !v.Success || v.AssessmentID != win.AssessmentID {
				t.Fatalf("token %d: the winner's retry through node-%d: %+v %v, want assessment %s", i, n, v, err, win.AssessmentID)
			}
			if v, _, err := SiteverifyRetried(via, s.secret, toks[i], "a-third-caller", time.Now().Add(10*time.Second)); err != nil || !v.Duplicate() {
				t.Fatalf("token %d: a third caller through node-%d: %+v %v", i, n, v, err)
			}
		}
	}
}

// replayKey is the key siteverify stores a redemption under for an
// idempotency key sent without action and remoteip (verify.replayKey).
func replayKey(idem, siteID string) string {
	h := sha256.New()
	for _, part := range []string{siteID, "", ""} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	return idem + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

// TestSiteverifyRetriesMeetTheUseAFaultLeftOnOneNode plants, on a real
// cluster, the records faults leave behind, then lets the callers retry
// over HTTP. Caller A's first use reached the token's replica only (its
// answer was lost and the owner reverted its half); caller B's attempt
// ran late on the owner alone (its ask had timed out, B saw a 503). A's
// retry must get A's first outcome, B's a duplicate, and so on every
// survivor once the owner is killed. Before the redemption protocol knew
// tentative records the owner refused A on B's unconfirmed half: both
// callers ended with timeout-or-duplicate, a valid token lost.
func TestSiteverifyRetriesMeetTheUseAFaultLeftOnOneNode(t *testing.T) {
	c := Start(t, 3)
	s := setupSite(t, c)
	tok := c.mint(t, 0, s)
	key, err := TokenMarkerKey(tok)
	if err != nil {
		t.Fatal(err)
	}
	owner, replica := c.Owner(0, key), c.Replica(0, key)
	exp := time.Now().Add(10 * time.Minute).UnixNano()
	plant := func(node int, idem, ref string) {
		t.Helper()
		op := &actors.Redeem{ID: key, Expires: exp, Key: replayKey(idem, s.id), Outcome: actors.Outcome{Ref: ref, At: time.Now().UnixNano()}}
		if err := c.Nodes[node].Router().AskLocal(cluster.Partition(key), op); err != nil || !op.First {
			t.Fatalf("plant %s on node-%d: first=%v %v", idem, node, op.First, err)
		}
	}
	const assessment = "6f0c3c1e-2b7d-4c55-9a43-0d7e4c1f2a90"
	plant(replica, "caller-a", assessment)
	plant(owner, "caller-b", "b-never-answered")
	within := func() time.Time { return time.Now().Add(10 * time.Second) }
	check := func(via []string, when string) {
		t.Helper()
		if v, _, err := SiteverifyRetried(via, s.secret, tok, "caller-a", within()); err != nil || !v.Success || v.AssessmentID != assessment {
			t.Fatalf("%s: caller A's retry: %+v %v, want its first outcome", when, v, err)
		}
		if v, _, err := SiteverifyRetried(via, s.secret, tok, "caller-b", within()); err != nil || !v.Duplicate() {
			t.Fatalf("%s: caller B's retry: %+v %v, want a duplicate", when, v, err)
		}
	}
	for i := range c.Nodes {
		check([]string{c.Nodes[i].APIURL()}, fmt.Sprintf("through node-%d", i))
	}
	c.Kill(owner)
	c.WaitRing(2)
	for _, i := range c.Live() {
		check([]string{c.Nodes[i].APIURL()}, fmt.Sprintf("after the owner died, through node-%d", i))
	}
}
