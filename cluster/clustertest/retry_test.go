package clustertest

import (
	"fmt"
	"sync"
	"testing"
	"time"
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
