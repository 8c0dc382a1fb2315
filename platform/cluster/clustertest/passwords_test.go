package clustertest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPasswordRangesAnswerOnEveryNode: a site and credential written
// through one node authorise both range operations on all three, each
// answered from that node's own corpus (here the embedded default).
func TestPasswordRangesAnswerOnEveryNode(t *testing.T) {
	c := Start(t, 3)
	c.WaitLeader()
	var ws struct {
		ID string `json:"workspace_id"`
	}
	_ = json.Unmarshal(c.MustCreate(1, "/admin/v1/workspaces", `{"name":"pw"}`), &ws)
	var site struct {
		Key string `json:"site_key"`
	}
	_ = json.Unmarshal(c.MustCreate(1, "/admin/v1/workspaces/"+ws.ID+"/sites", `{"name":"shop","hostnames":["shop.example"]}`), &site)
	var cred struct {
		Token string `json:"credential"`
	}
	_ = json.Unmarshal(c.MustCreate(1, "/admin/v1/workspaces/"+ws.ID+"/credentials", `{"name":"sv","scopes":["site.verify"]}`), &cred)
	if site.Key == "" || cred.Token == "" {
		t.Fatal("setup answers lacked the site key or credential")
	}
	const suffix = "1E4C9B93F3F0682250B6CF8331B7EE68FD8" // SHA-1("password") after 5BAA6
	for i := 0; i < 3; i++ {
		Eventually(t, 10*time.Second, func() error {
			st, body, err := c.DoAs(i, "POST", "/v1/account/password/range", cred.Token, []byte(`{"prefix":"5BAA6"}`))
			if err != nil || st != 200 || !strings.Contains(string(body), `"suffix":"`+suffix+`"`) || !strings.Contains(string(body), `"count_semantics":"rank"`) {
				return fmt.Errorf("node-%d POST: %d %.200s %v", i, st, body, err)
			}
			st, body, err = c.Do(i, "GET", "/v1/passwords/"+site.Key+"/range/5BAA6", nil)
			if err != nil || st != 200 || !strings.Contains(string(body), suffix+":") {
				return fmt.Errorf("node-%d GET: %d %.200s %v", i, st, body, err)
			}
			return nil
		})
		if st, _, _ := c.Do(i, "GET", "/v1/passwords/unknown-key/range/5BAA6", nil); st != 404 {
			t.Fatalf("node-%d: unknown site key answered %d", i, st)
		}
	}
}
