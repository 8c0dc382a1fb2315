package clustertest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// hvSite is a workspace with one site whose allow-list holds localhost.
type hvSite struct {
	ws, siteKey, secret, id string
}

const widgetOrigin = "http://localhost:3000"

// setupSite creates, through node 0, a workspace and a site, and waits
// until every live node has them.
func setupSite(t *testing.T, c *Cluster) hvSite {
	t.Helper()
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces", `{"name":"hv"}`), &ws); err != nil {
		t.Fatal(err)
	}
	var site struct {
		SiteID  string `json:"site_id"`
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	body := c.MustCreate(0, "/admin/v1/workspaces/"+ws.WorkspaceID+"/sites", `{"name":"shop","hostnames":["localhost"],"challenge_difficulty":1}`)
	if err := json.Unmarshal(body, &site); err != nil {
		t.Fatal(err)
	}
	for _, i := range c.Live() {
		Eventually(t, 5*time.Second, func() error {
			if st, b, _ := c.Do(i, "GET", "/admin/v1/workspaces/"+ws.WorkspaceID+"/sites/"+site.SiteID, nil); st != 200 {
				return fmt.Errorf("node-%d has no site yet: %d %s", i, st, b)
			}
			return nil
		})
	}
	return hvSite{ws: ws.WorkspaceID, siteKey: site.SiteKey, secret: site.Secret, id: site.SiteID}
}

func (c *Cluster) mint(t *testing.T, via int, s hvSite) string {
	t.Helper()
	tok, err := MintToken(c.Nodes[via].APIURL(), s.siteKey, widgetOrigin, "login")
	if err != nil {
		t.Fatalf("mint through node-%d: %v", via, err)
	}
	return tok
}

// TestParallelSiteverifyOfOneTokenAcrossThreeNodesYieldsExactlyOneSuccess
// sends 200 parallel verifications of one token, each caller through its
// own node and with its own idempotency key, retrying "unavailable" as a
// backend would: exactly one caller ends with success, every other with
// timeout-or-duplicate. A 503 may happen under load (an ask past its
// bound fails closed); a retry with the same key then gets the first
// outcome back if its first attempt was the one that counted.
func TestParallelSiteverifyOfOneTokenAcrossThreeNodesYieldsExactlyOneSuccess(t *testing.T) {
	c := Start(t, 3)
	s := setupSite(t, c)
	apis := []string{c.Nodes[0].APIURL(), c.Nodes[1].APIURL(), c.Nodes[2].APIURL()}
	for round := 0; round < 2; round++ {
		tok := c.mint(t, round%3, s)
		var mu sync.Mutex
		successes, duplicates, unavailable := 0, 0, 0
		deadline := time.Now().Add(20 * time.Second)
		var wg sync.WaitGroup
		for g := 0; g < 200; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, u, err := SiteverifyAnswered(append(apis[g%3:], apis[:g%3]...), s.secret, tok, fmt.Sprintf("caller-%d", g), deadline)
				mu.Lock()
				defer mu.Unlock()
				unavailable += u
				switch {
				case err != nil:
					t.Errorf("caller %d: %v", g, err)
				case v.Success:
					successes++
				case v.Duplicate():
					duplicates++
				default:
					t.Errorf("caller %d: %+v", g, v)
				}
			}()
		}
		wg.Wait()
		t.Logf("round %d: %d successes, %d duplicates, %d answers unavailable (retried)", round, successes, duplicates, unavailable)
		if successes != 1 || duplicates != 199 {
			t.Fatalf("round %d: %d successes and %d duplicates of 200, want exactly 1 and 199", round, successes, duplicates)
		}
	}
}

func TestATokenIsRefusedThroughTheOthersAfterItsOwnerIsKilled(t *testing.T) {
	c := Start(t, 3)
	s := setupSite(t, c)
	// A token owned by node-1, consumed through node-0.
	var tok string
	for k := 0; ; k++ {
		if k == 50 {
			t.Fatal("no token owned by node-1 in 50 mints")
		}
		tok = c.mint(t, k%3, s)
		key, err := TokenMarkerKey(tok)
		if err != nil {
			t.Fatal(err)
		}
		if c.Owner(0, key) == 1 {
			break
		}
	}
	via := func(i int) []string { return []string{c.Nodes[i].APIURL()} }
	within := func() time.Time { return time.Now().Add(10 * time.Second) }
	if v, _, err := SiteverifyAnswered(via(0), s.secret, tok, "retry-key", within()); err != nil || !v.Success {
		t.Fatalf("first siteverify through node-0: %+v %v", v, err)
	}
	c.Kill(1)
	c.WaitRing(2)
	for _, i := range []int{0, 2} {
		for _, idem := range []string{"", "another-key"} {
			if v, _, err := SiteverifyAnswered(via(i), s.secret, tok, idem, within()); err != nil || !v.Duplicate() {
				t.Fatalf("replay through node-%d (idempotency key %q) after the owner died: %+v %v", i, idem, v, err)
			}
		}
		// The successor kept the first outcome: the caller's own retry
		// gets it back.
		if v, _, err := SiteverifyAnswered(via(i), s.secret, tok, "retry-key", within()); err != nil || !v.Success {
			t.Fatalf("idempotent retry through node-%d after the owner died: %+v %v", i, v, err)
		}
	}
}

func TestLeaseAcquiresSpreadAcrossThreeNodesGetExactlyCapacity(t *testing.T) {
	c := Start(t, 3)
	s := setupSite(t, c)
	const capacity, callers = 7, 60
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
	for round, scope := range []string{"tenant-a", "tenant-b", "tenant-c"} {
		var mu sync.Mutex
		acquired, refused := 0, 0
		var wg sync.WaitGroup
		for g := 0; g < callers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Each caller retries "unavailable" (an ask past its bound under
				// load; the grant may have happened) with its own idempotency
				// key, which returns the same lease rather than a second slot.
				body := []byte(fmt.Sprintf(`{"action":"export.report","subject_id":%q,"idempotency_key":"caller-%d-%d"}`, scope, round, g))
				var a struct {
					Acquired bool `json:"acquired"`
				}
				deadline := time.Now().Add(20 * time.Second)
				for attempt := 0; ; attempt++ {
					via := (g + attempt) % 3
					st, b, err := c.DoAs(via, "POST", "/v1/concurrency/acquire", s.secret, body)
					if err == nil && st == 503 && time.Now().Before(deadline) {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					if err != nil || st != 200 || json.Unmarshal(b, &a) != nil {
						t.Errorf("acquire through node-%d: %d %s %v", via, st, b, err)
						return
					}
					break
				}
				mu.Lock()
				defer mu.Unlock()
				if a.Acquired {
					acquired++
				} else {
					refused++
				}
			}()
		}
		wg.Wait()
		if acquired != capacity || refused != callers-capacity {
			t.Fatalf("round %d: %d acquired and %d refused of %d, want exactly %d", round, acquired, refused, callers, capacity)
		}
	}
}
