// The dev node's helpers for the tests of this package that span trust,
// journeys and traffic (mobile_answers_node_test.go); each area's own
// tests live in its api package.
package crossarea_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/risk/trust"
	"github.com/trustd/trustd/token"
)

type trustEnv struct {
	*testNode
	dev *node.DevCredentials
}

func startTrustNode(t *testing.T) *trustEnv {
	t.Helper()
	tn := mustStartNode(t, func(c *node.Config) { c.Dev = true })
	dev := tn.n.Dev()
	if dev == nil {
		t.Fatal("no dev credentials")
	}
	return &trustEnv{testNode: tn, dev: dev}
}

// proof mints a step-up proof as an issuer (identity, journeys) would:
// with the cluster's live key, for the dev workspace.
func (e *trustEnv) proof(in trust.ProofInput) string {
	e.t.Helper()
	return mintProof(e.t, e.n.Store().Catalog(), e.dev.WorkspaceID, in)
}

func mintProof(t *testing.T, cat *catalog.Catalog, workspace string, in trust.ProofInput) string {
	t.Helper()
	sk := cat.SigningKey(catalog.KeyLive)
	ws := cat.Workspaces[workspace]
	if sk == nil || ws == nil {
		t.Fatal("no live key or workspace")
	}
	return trust.IssueProof(token.NewKey(sk.ID, sk.Secret), ws, in, time.Now())
}

func (e *trustEnv) post(path string, body map[string]any) response {
	e.t.Helper()
	if _, ok := body["secret"]; !ok {
		body["secret"] = e.dev.Secret
	}
	return e.do("POST", "/v1"+path, "", body)
}

type decisionAnswer struct {
	Success             bool   `json:"success"`
	DecisionID          string `json:"decision_id"`
	Decision            string `json:"decision"`
	Method              string `json:"method"`
	RequestedAssurance  string `json:"requested_assurance"`
	EnrollmentAvailable bool   `json:"enrollment_available"`
	Requirements        struct {
		Identity bool `json:"identity"`
		Liveness bool `json:"liveness"`
	} `json:"requirements"`
	Risk struct {
		Outcome      string  `json:"outcome"`
		Score        float64 `json:"score"`
		Level        string  `json:"level"`
		EngineStatus string  `json:"engine_status"`
		MatchedRules []struct {
			PolicyName string `json:"policy_name"`
			ReasonCode string `json:"reason_code"`
		} `json:"matched_rules"`
	} `json:"risk"`
	Receipt        string `json:"receipt"`
	AssuranceLevel string `json:"assurance_level"`
}

type svAnswer struct {
	Success bool `json:"success"`
	Trust   *struct {
		Method         string `json:"method"`
		AssuranceLevel string `json:"assurance_level"`
		OperationBound bool   `json:"operation_bound"`
	} `json:"trust"`
	ErrorCodes   []string `json:"error-codes"`
	AssessmentID string   `json:"assessment_id"`
}

func receiptHeader(t *testing.T, receipt string) map[string]any {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Split(receipt, ".")[0])
	if err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// fakePresence passes when every frame is "face:<x>", tracking face x.
type fakePresence struct{}

func (fakePresence) Issue(now time.Time) liveness.Challenge {
	return liveness.Challenge{Nonce: "n" + now.Format("150405.000000000"), Actions: []liveness.Action{liveness.TurnLeft, liveness.Blink},
		IssuedAt: now, Deadline: now.Add(time.Minute)}
}
func (fakePresence) Check(_ context.Context, c liveness.Challenge, frames []liveness.Frame, _ time.Time) (liveness.Result, error) {
	for _, f := range frames {
		if !bytes.HasPrefix(f.Image, []byte("face:")) {
			return liveness.Result{Frames: len(frames), Reasons: []string{"no_face_tracked"}}, nil
		}
	}
	return liveness.Result{Passed: true, Frames: len(frames), Observed: c.Actions, Reference: []float32{float32(frames[0].Image[5])}}, nil
}

// The journey node's helpers, for the same tests.
type journeyEnv struct {
	*testNode
	dev    *node.DevCredentials
	origin string
}

func startJourneyNode(t *testing.T) *journeyEnv {
	t.Helper()
	tn := mustStartNode(t, func(c *node.Config) { c.Dev = true })
	e := &journeyEnv{testNode: tn, dev: tn.n.Dev()}
	// WebAuthn refuses an IP address as relying party id: the person's
	// page runs at localhost (a dev site hostname) on the node's port.
	e.origin = strings.Replace(tn.n.APIURL(), "127.0.0.1", "localhost", 1)
	tn.n.Journeys().WithPasskeys(e.origin)
	r := e.do("PUT", "/admin/v1/workspaces/"+e.dev.WorkspaceID+"/journeys/pay", e.dev.AdminToken, map[string]any{
		"name": "Payment", "method": "device_authorization", "requested_assurance": "standard",
		"consent":      map[string]any{"required": true, "version": "c1"},
		"requirements": map[string]any{"identity": true, "liveness": false, "authorization": true, "operation_binding": true}})
	if r.status != 200 {
		t.Fatalf("define: %d %s", r.status, r.body)
	}
	return e
}

func (e *journeyEnv) post(path string, body map[string]any) response {
	e.t.Helper()
	if _, ok := body["secret"]; !ok {
		body["secret"] = e.dev.Secret
	}
	return e.do("POST", "/v1"+path, "", body)
}

type startAnswer struct {
	SessionToken  string `json:"session_token"`
	Endpoint      string `json:"endpoint"`
	ExpiresIn     int    `json:"expires_in"`
	Method        string `json:"method"`
	PolicyVersion int    `json:"policy_version"`
}

// completePasskey runs the person's page over HTTP with a software
// authenticator: begin, then registration and/or assertion.

func capabilityOf(t *testing.T, endpoint string) string {
	t.Helper()
	i := strings.Index(endpoint, "#")
	if i < 0 {
		t.Fatalf("endpoint without capability: %s", endpoint)
	}
	return endpoint[i+1:]
}

type attemptAnswer struct {
	Success  bool     `json:"success"`
	Response string   `json:"response"`
	Status   string   `json:"status"`
	Reasons  []string `json:"reasons"`
}
