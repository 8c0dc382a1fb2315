package clustertest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Failed logins of one subject sent through three different nodes are
// counted by the one owner of the subject's activity, so they add up: ten
// failures spread over the nodes reach the ten-failure threshold, which no
// node alone saw. Trusted devices, kept in Raft, hold on every node.
func TestAccountFailedLoginsAddUpAndTrustedDevicesHoldAcrossThreeNodes(t *testing.T) {
	c := Start(t, 3)
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces", `{"name":"acct"}`), &ws); err != nil {
		t.Fatal(err)
	}
	var cred struct {
		Credential string `json:"credential"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces/"+ws.WorkspaceID+"/credentials",
		`{"name":"srv","scopes":["site.verify"]}`), &cred); err != nil {
		t.Fatal(err)
	}
	type assessment struct {
		Classification string   `json:"classification"`
		Reasons        []string `json:"reasons"`
	}
	assess := func(i int, subject, outcome string) (assessment, error) {
		st, b, err := c.DoAs(i, "POST", "/v1/account/assess", cred.Credential,
			[]byte(fmt.Sprintf(`{"subject_id":%q,"device_id":"dev-%d","event_type":"login","outcome":%q}`, subject, i, outcome)))
		if err != nil || st != 200 {
			return assessment{}, fmt.Errorf("assess through node-%d: %d %s %v", i, st, b, err)
		}
		var a assessment
		return a, json.Unmarshal(b, &a)
	}
	for _, i := range c.Live() {
		Eventually(t, 10*time.Second, func() error {
			_, err := assess(i, "warm-up", "attempted")
			return err
		})
	}
	var a assessment
	for k := 0; k < 10; k++ {
		var err error
		if a, err = assess(k%3, "alice", "failed"); err != nil {
			t.Fatal(err)
		}
		switch {
		case k == 2 && !slices.Contains(a.Reasons, "subject_failed_logins"):
			t.Fatalf("the third failure, one through each node: %+v", a)
		case k < 9 && slices.Contains(a.Reasons, "subject_failed_logins_high"):
			t.Fatalf("failure %d already counts ten: %+v", k+1, a)
		}
	}
	if !slices.Contains(a.Reasons, "subject_failed_logins_high") {
		t.Fatalf("ten failures through three nodes: %+v", a)
	}
	// The device of each node saw only its own share.
	if slices.Contains(a.Reasons, "device_failed_logins") {
		t.Fatalf("a device counted another device's failures: %+v", a)
	}
	for _, i := range c.Live() {
		if a, err := assess(i, "bob", "attempted"); err != nil || slices.Contains(a.Reasons, "subject_failed_logins") {
			t.Fatalf("bob through node-%d: %+v %v", i, a, err)
		}
	}

	// A device trusted through one node is trusted in assessments through
	// every node (the trust is a Raft record), and a revoke likewise.
	trust := func(i int, action string) {
		t.Helper()
		body := fmt.Sprintf(`{"action":%q,"subject_id":"carol","device_id":"dev-2","label":"phone"}`, action)
		Eventually(t, 10*time.Second, func() error {
			if st, b, err := c.DoAs(i, "POST", "/v1/account/trusted-device", cred.Credential, []byte(body)); err != nil || st != 200 {
				return fmt.Errorf("%s through node-%d: %d %s %v", action, i, st, b, err)
			}
			return nil
		})
	}
	trusted := func(i int, want bool) {
		t.Helper()
		Eventually(t, 10*time.Second, func() error {
			st, b, err := c.DoAs(i, "POST", "/v1/account/assess", cred.Credential,
				[]byte(`{"subject_id":"carol","device_id":"dev-2","event_type":"login","outcome":"attempted"}`))
			var a struct {
				TrustedDevice bool `json:"trusted_device"`
			}
			if err != nil || st != 200 || json.Unmarshal(b, &a) != nil || a.TrustedDevice != want {
				return fmt.Errorf("through node-%d: %d %s %v, want trusted_device %v", i, st, b, err, want)
			}
			return nil
		})
	}
	trust(1, "trust")
	for _, i := range c.Live() {
		trusted(i, true)
	}
	trust(2, "revoke")
	for _, i := range c.Live() {
		trusted(i, false)
	}
}
