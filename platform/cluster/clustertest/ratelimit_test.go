package clustertest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// setupRateLimit creates, through node 0, a workspace with a site and one
// enforce policy of capacity c per subject, and waits until every node has
// it. It returns the site secret.
func setupRateLimit(t *testing.T, c *Cluster, capacity int) string {
	t.Helper()
	post := func(path, body string, out any) {
		t.Helper()
		b := c.MustCreate(0, path, body)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	post("/admin/v1/workspaces", `{"name":"rl"}`, &ws)
	base := "/admin/v1/workspaces/" + ws.WorkspaceID
	var site struct {
		Secret string `json:"secret"`
	}
	post(base+"/sites", `{"name":"shop","hostnames":["shop.example"]}`, &site)
	var pol struct {
		PolicyID string `json:"policy_id"`
	}
	post(base+"/rate-limit-policies", fmt.Sprintf(`{"name":"login","target":{"type":"workspace"},"action_pattern":"*",
		"scope":"subject","bucket":{"capacity":%d,"refill_amount":1,"refill_interval_seconds":31536000},"mode":"enforce"}`, capacity), &pol)
	for _, i := range c.Live() {
		Eventually(t, 5*time.Second, func() error {
			if st, b, _ := c.Do(i, "GET", base+"/rate-limit-policies/"+pol.PolicyID, nil); st != 200 {
				return fmt.Errorf("node-%d has no policy yet: %d %s", i, st, b)
			}
			return nil
		})
	}
	return site.Secret
}

func TestRateLimitCheckSpreadAcrossThreeNodesAdmitsExactlyCapacity(t *testing.T) {
	c := Start(t, 3)
	const capacity = 100
	secret := setupRateLimit(t, c, capacity)
	var mu sync.Mutex
	allowed, refused := 0, 0
	var wg sync.WaitGroup
	for g := 0; g < 60; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				st, b, err := c.DoAs(g%3, "POST", "/v1/rate-limit/check", secret, []byte(`{"action":"login","subject_id":"alice"}`))
				if err != nil || st != 200 {
					t.Errorf("check through node-%d: %d %s %v", g%3, st, b, err)
					return
				}
				var d struct {
					Allowed  bool `json:"allowed"`
					Degraded bool `json:"degraded"`
				}
				if err := json.Unmarshal(b, &d); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if d.Allowed {
					allowed++
				} else {
					refused++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != capacity || refused != 300-capacity {
		t.Fatalf("allowed %d, refused %d; want exactly %d of 300", allowed, refused, capacity)
	}
}
