package api_test

import (
	"bytes"
	"encoding/base64"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/verify/pow"
)

// plainClient keeps no idle connections, so the node shuts down at once.
var plainClient = &nethttp.Client{Transport: &nethttp.Transport{DisableKeepAlives: true}}

func call(t *testing.T, method, u string, headers map[string]string, body string, out any) int {
	t.Helper()
	req, err := nethttp.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := plainClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out, json.RejectUnknownMembers(false)); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, u, err, b)
		}
	}
	return resp.StatusCode
}

// TestHumanVerificationThroughANode runs the widget protocol and the
// backend exchange over real HTTP against a real node, including 200
// parallel exchanges of one token.
func TestHumanVerificationThroughANode(t *testing.T) {
	n := nodetest.Start(t).N
	api := n.APIURL()
	admin := map[string]string{"Authorization": "Bearer " + n.AdminToken(), "Content-Type": "application/json"}
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if st := call(t, "POST", api+"/admin/v1/workspaces", admin, `{"name":"hv"}`, &ws); st != 201 {
		t.Fatalf("create workspace: %d", st)
	}
	var site struct {
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	if st := call(t, "POST", api+"/admin/v1/workspaces/"+ws.WorkspaceID+"/sites", admin,
		`{"name":"shop","hostnames":["localhost"],"challenge_difficulty":1}`, &site); st != 201 {
		t.Fatalf("create site: %d", st)
	}
	widget := map[string]string{"Origin": "http://localhost:3000", "Content-Type": "application/json"}
	var ch struct {
		Challenge string `json:"challenge"`
		Pow       struct {
			Salt       string `json:"salt"`
			Iterations int    `json:"iterations"`
			Difficulty int    `json:"difficulty"`
		} `json:"pow"`
	}
	if st := call(t, "POST", api+"/v1/challenge", widget, `{"sitekey":"`+site.SiteKey+`","action":"login"}`, &ch); st != 200 {
		t.Fatalf("challenge: %d", st)
	}
	salt, _ := base64.RawURLEncoding.DecodeString(ch.Pow.Salt)
	nonce, ok := pow.Solve(salt, ch.Pow.Iterations, ch.Pow.Difficulty, 1<<20)
	if !ok {
		t.Fatal("no solution")
	}
	var rd struct {
		Token string `json:"token"`
	}
	body, _ := json.Marshal(map[string]any{"challenge": ch.Challenge, "nonce": nonce,
		"signals": map[string]any{"interaction": true, "visible": true, "elapsed_ms": 1800, "pointer_moves": 12}})
	if st := call(t, "POST", api+"/v1/challenge/redeem", widget, string(body), &rd); st != 200 || rd.Token == "" {
		t.Fatalf("redeem: %d", st)
	}

	form := url.Values{"secret": {site.Secret}, "response": {rd.Token}, "action": {"login"}, "remoteip": {"127.0.0.1"}}.Encode()
	var wg sync.WaitGroup
	var mu sync.Mutex
	successes, duplicates := 0, 0
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := plainClient.Post(api+"/v1/siteverify", "application/x-www-form-urlencoded", bytes.NewReader([]byte(form)))
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var m struct {
				Success    bool     `json:"success"`
				ErrorCodes []string `json:"error-codes"`
			}
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || json.Unmarshal(b, &m, json.RejectUnknownMembers(false)) != nil {
				t.Errorf("siteverify: %d %s", resp.StatusCode, b)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if m.Success {
				successes++
			} else if len(m.ErrorCodes) == 1 && m.ErrorCodes[0] == "timeout-or-duplicate" {
				duplicates++
			}
		}()
	}
	wg.Wait()
	if successes != 1 || duplicates != 199 {
		t.Fatalf("%d successes and %d duplicates of 200 parallel verifications, want 1 and 199", successes, duplicates)
	}

	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	call(t, "GET", api+"/v1/openapi.json", nil, "", &doc)
	for _, p := range []string{"/v1/challenge", "/v1/challenge/redeem", "/v1/challenge/puzzle/{puzzle}", "/v1/siteverify",
		"/v1/turnstile/v0/siteverify", "/v1/recaptcha/api/siteverify", "/v1/sandbox/scenarios", "/v1/sandbox/issue",
		"/v1/sandbox/siteverify", "/v1/edge/preclearance/issue", "/v1/edge/decision", "/v1/detection/feedback",
		"/v1/mobile/detection/feedback"} {
		if doc.Paths[p] == nil {
			t.Errorf("the contract does not describe %s", p)
		}
	}
}
