package clustertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trustd/trustd/journeys/journeystest"
)

// personDo is the person's page calling node i with its capability.
func personDo(c *Cluster, i int, path, capability string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := nethttp.NewRequest("POST", c.Nodes[i].APIURL()+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-Service-Journey-Token", capability)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&nethttp.Client{Timeout: 15 * time.Second}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out, nil
}

// A journey's session token and proof are single use across the cluster:
// the person completes a passkey journey through node-0, and the same
// siteverify sent concurrently through all three nodes succeeds exactly
// once; the proof is also refused by /trust/siteverify everywhere. A
// failed attempt spends its proof on every node: a fresh one is required.
// A human_verification widget token completes its session once.
func TestJourneySessionAndProofAreSingleUseAcrossThreeNodes(t *testing.T) {
	c := Start(t, 3)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces", `{"name":"journeys"}`), &ws); err != nil {
		t.Fatal(err)
	}
	var site struct {
		ID      string `json:"site_id"`
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	if err := json.Unmarshal(c.MustCreate(0, "/admin/v1/workspaces/"+ws.ID+"/sites", `{"name":"shop","hostnames":["localhost"],"challenge_difficulty":1}`), &site); err != nil {
		t.Fatal(err)
	}
	def := `{"name":"Pay","method":"device_authorization","requested_assurance":"standard","requirements":{"identity":true,"liveness":false,"authorization":true,"operation_binding":true}}`
	Eventually(t, 10*time.Second, func() error {
		st, b, err := c.Do(0, "PUT", "/admin/v1/workspaces/"+ws.ID+"/journeys/pay", []byte(def))
		if err != nil || st != 200 {
			return fmt.Errorf("define: %d %s %v", st, b, err)
		}
		return nil
	})
	human := `{"name":"Sign in","method":"human_verification","requested_assurance":"none"}`
	Eventually(t, 10*time.Second, func() error {
		st, b, err := c.Do(0, "PUT", "/admin/v1/workspaces/"+ws.ID+"/journeys/login", []byte(human))
		if err != nil || st != 200 {
			return fmt.Errorf("define: %d %s %v", st, b, err)
		}
		return nil
	})
	Eventually(t, 10*time.Second, func() error {
		for i := range c.Nodes {
			if c.Nodes[i].Store().Catalog().Journey(ws.ID, "pay") == nil || c.Nodes[i].Store().Catalog().Journey(ws.ID, "login") == nil {
				return fmt.Errorf("journey not on node-%d yet", i)
			}
		}
		return nil
	})
	origin := strings.Replace(c.Nodes[0].APIURL(), "127.0.0.1", "localhost", 1)
	c.Nodes[0].Journeys().WithPasskeys(origin)
	key := journeystest.New(origin)

	post := func(i int, path string, body map[string]any) (int, map[string]any) {
		t.Helper()
		body["secret"] = site.Secret
		b, _ := json.Marshal(body)
		var st int
		var out map[string]any
		Eventually(t, 10*time.Second, func() error {
			s, raw, err := c.DoAs(i, "POST", path, site.Secret, b)
			if err != nil || s == 503 {
				return fmt.Errorf("%s through node-%d: %d %s %v", path, i, s, raw, err)
			}
			st, out = s, nil
			return json.Unmarshal(raw, &out)
		})
		return st, out
	}
	// run starts a journey through node-1 and completes it through node-0.
	run := func(op string) (session, proof string) {
		t.Helper()
		st, out := post(1, "/v1/journeys/start", map[string]any{"journey_key": "pay", "subject_id": "alice", "action": "pay", "operation_reference": op})
		if st != 200 {
			t.Fatalf("start: %d %v", st, out)
		}
		endpoint, _ := out["endpoint"].(string)
		capability := endpoint[strings.Index(endpoint, "#")+1:]
		var ceremony map[string]any
		Eventually(t, 10*time.Second, func() error {
			s, o, err := personDo(c, 0, "/v1/journeys/person/passkey/begin", capability, nil)
			if err != nil || s != 200 {
				return fmt.Errorf("begin through node-0: %d %v %v", s, o, err)
			}
			ceremony = o
			return nil
		})
		for range 2 {
			opts, _ := ceremony["options"].(map[string]any)
			var cred map[string]any
			var err error
			if ceremony["ceremony"] == "registration" {
				cred, err = key.Create(opts)
			} else {
				cred, err = key.Get(opts, nil)
			}
			if err != nil {
				t.Fatal(err)
			}
			s, o, err := personDo(c, 0, "/v1/journeys/person/passkey/finish", capability, map[string]any{"credential": cred})
			if err != nil || s != 200 {
				t.Fatalf("finish: %d %v %v", s, o, err)
			}
			if next, ok := o["next"].(map[string]any); ok {
				ceremony = next
				continue
			}
			if o["success"] != true {
				t.Fatalf("attempt failed: %v", o)
			}
			return out["session_token"].(string), o["response"].(string)
		}
		t.Fatal("no proof")
		return "", ""
	}

	session, proof := run("order-1")
	sv := func(i int) map[string]any {
		_, out := post(i, "/v1/journeys/siteverify", map[string]any{"session_token": session, "response": proof, "subject_id": "alice",
			"action": "pay", "operation_reference": "order-1"})
		return out
	}
	var mu sync.Mutex
	wins := 0
	var wg sync.WaitGroup
	for i := range 9 {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out := sv(i % 3)
			mu.Lock()
			defer mu.Unlock()
			if out["success"] == true {
				wins++
				return
			}
			codes := fmt.Sprint(out["error-codes"])
			if !strings.Contains(codes, "timeout-or-duplicate") && !strings.Contains(codes, "proof-session-mismatch") {
				t.Errorf("a losing siteverify answered %v", out)
			}
		}(i)
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d successful siteverify of one session across three nodes, want exactly 1", wins)
	}
	for i := range 3 {
		_, out := post(i, "/v1/trust/siteverify", map[string]any{"response": proof, "action": "pay"})
		if out["success"] == true {
			t.Fatalf("the journey proof was accepted again by /trust/siteverify through node-%d", i)
		}
		_, st := post(i, "/v1/journeys/status", map[string]any{"session_token": session})
		if st["status"] != "completed" || st["verified"] != true {
			Eventually(t, 5*time.Second, func() error {
				_, st = post(i, "/v1/journeys/status", map[string]any{"session_token": session})
				if st["status"] != "completed" || st["verified"] != true {
					return fmt.Errorf("status through node-%d: %v", i, st)
				}
				return nil
			})
		}
	}

	// A failed attempt through node-1 (another subject) spends the proof:
	// the right request through node-2 is refused.
	session, proof = run("order-2")
	_, out := post(1, "/v1/journeys/siteverify", map[string]any{"session_token": session, "response": proof, "subject_id": "mallory",
		"action": "pay", "operation_reference": "order-2"})
	if out["success"] == true || !strings.Contains(fmt.Sprint(out["error-codes"]), "subject-mismatch") {
		t.Fatalf("another subject: %v", out)
	}
	_, out = post(2, "/v1/journeys/siteverify", map[string]any{"session_token": session, "response": proof, "subject_id": "alice",
		"action": "pay", "operation_reference": "order-2"})
	if out["success"] == true {
		t.Fatalf("the spent proof succeeded through node-2: %v", out)
	}

	// human_verification: one widget token sent by the person's page
	// through all three nodes at once completes the session exactly once;
	// the other calls did not consume it and leave the session alone.
	st, out := post(1, "/v1/journeys/start", map[string]any{"journey_key": "login", "action": "login"})
	if st != 200 {
		t.Fatalf("start: %d %v", st, out)
	}
	session = out["session_token"].(string)
	endpoint, _ := out["endpoint"].(string)
	capability := endpoint[strings.Index(endpoint, "#")+1:]
	var view map[string]any
	Eventually(t, 10*time.Second, func() error {
		s, o, err := personDo(c, 2, "/v1/journeys/person/session", capability, nil)
		if err != nil || s != 200 {
			return fmt.Errorf("person view through node-2: %d %v %v", s, o, err)
		}
		view = o
		return nil
	})
	tok, err := MintTokenWithCData(c.Nodes[2].APIURL(), site.SiteKey, "http://localhost", "", view["reference"].(string))
	if err != nil {
		t.Fatal(err)
	}
	proofs := make(chan string, 3)
	for i := range 3 {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			s, o, err := personDo(c, i, "/v1/journeys/person/human", capability, map[string]any{"response": tok})
			if err != nil || s != 200 {
				t.Errorf("person/human through node-%d: %d %v %v", i, s, o, err)
				return
			}
			if o["success"] == true {
				proofs <- o["response"].(string)
				return
			}
			if fmt.Sprint(o["reasons"]) != "[timeout-or-duplicate]" || o["status"] == "failed" {
				t.Errorf("a losing call through node-%d answered %v", i, o)
			}
		}(i)
	}
	wg.Wait()
	close(proofs)
	if len(proofs) != 1 {
		t.Fatalf("%d completions of one widget token across three nodes, want exactly 1", len(proofs))
	}
	_, out = post(0, "/v1/journeys/siteverify", map[string]any{"session_token": session, "response": <-proofs, "action": "login"})
	if out["success"] != true {
		t.Fatalf("siteverify of the human_verification proof: %v", out)
	}
}
