package clustertest

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAdminCreatesRetriedAcrossALeaderKillCreateOnce sends site creates
// through the two followers while the Raft leader is killed under them;
// every create that fails (503, a cut connection) is retried with its own
// Idempotency-Key through the survivors until it is answered. A create
// that committed while its client saw a failure is answered by its retry
// with the same site: every name exists exactly once, with the id its
// caller was answered. (In-process the kill seldom lands between a
// commit and its answer: in the runs so far the failed attempts had not
// committed, and the same test without keys made no duplicate either.
// That window is proven on one node by
// TestAnAdminCreateCutOffAfterItWasSentIsCreatedOnceByItsRetry in
// platform/http/; this test holds the cluster path to it under a leader kill.)
func TestAdminCreatesRetriedAcrossALeaderKillCreateOnce(t *testing.T) {
	c := Start(t, 3)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces", `{"name":"idem"}`), &ws); err != nil {
		t.Fatal(err)
	}
	leader := c.WaitLeader()
	var followers []int
	for _, i := range c.Live() {
		if i != leader {
			followers = append(followers, i)
		}
	}
	path := "/admin/v1/workspaces/" + ws.WorkspaceID + "/sites"
	// Every follower has the workspace before the creates start.
	for _, i := range followers {
		Eventually(t, 5*time.Second, func() error {
			if st, b, _ := c.Do(i, "GET", "/admin/v1/workspaces/"+ws.WorkspaceID, nil); st != 200 {
				return fmt.Errorf("node-%d: %d %s", i, st, b)
			}
			return nil
		})
	}
	// Eight callers create three sites each, one after another, so creates
	// are in flight when the leader dies (it is killed once eight are
	// answered).
	const callers, each = 8, 3
	const creates = callers * each
	ids := make([]string, creates)
	failures := make([]int, creates)
	errs := make([]error, creates)
	var answered atomic.Int32
	var wg sync.WaitGroup
	create := func(k int) {
		body := []byte(fmt.Sprintf(`{"name":"site-%d","hostnames":["s%d.example"]}`, k, k))
		hdr := map[string]string{"Idempotency-Key": fmt.Sprintf("create-site-%d", k)}
		deadline := time.Now().Add(30 * time.Second)
		for attempt := 0; ; attempt++ {
			st, b, err := c.DoWith(followers[(k+attempt)%2], "POST", path, AdminToken, body, hdr)
			if err == nil && st == 201 {
				var s struct {
					SiteID string `json:"site_id"`
				}
				errs[k] = json.Unmarshal(b, &s)
				ids[k] = s.SiteID
				answered.Add(1)
				return
			}
			if (err != nil || st == 503) && time.Now().Before(deadline) {
				failures[k]++
				time.Sleep(100 * time.Millisecond)
				continue
			}
			errs[k] = fmt.Errorf("create %d: %d %s %v", k, st, b, err)
			return
		}
	}
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < each; j++ {
				create(g*each + j)
			}
		}()
	}
	for until := time.Now().Add(30 * time.Second); answered.Load() < callers; time.Sleep(time.Millisecond) {
		if time.Now().After(until) {
			t.Fatalf("only %d creates answered in 30 s", answered.Load())
		}
	}
	c.Kill(leader)
	wg.Wait()
	failed := 0
	for k, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		failed += failures[k]
	}
	c.WaitLeader()
	var list struct {
		Sites []struct {
			SiteID string `json:"site_id"`
			Name   string `json:"name"`
		} `json:"sites"`
	}
	Eventually(t, 10*time.Second, func() error {
		st, b, err := c.Do(followers[0], "GET", path, nil)
		if err != nil || st != 200 {
			return fmt.Errorf("list: %d %s %v", st, b, err)
		}
		return json.Unmarshal(b, &list)
	})
	byName := map[string][]string{}
	for _, s := range list.Sites {
		byName[s.Name] = append(byName[s.Name], s.SiteID)
	}
	for k := 0; k < creates; k++ {
		got := byName[fmt.Sprintf("site-%d", k)]
		if len(got) != 1 || got[0] != ids[k] {
			t.Fatalf("site-%d: ids %v, want exactly the answered %s", k, got, ids[k])
		}
	}
	if len(list.Sites) != creates {
		t.Fatalf("%d sites, want %d", len(list.Sites), creates)
	}
	t.Logf("%d creates across a leader kill: %d attempts failed and were retried, no duplicate", creates, failed)
}
