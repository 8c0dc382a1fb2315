// Package trusttest starts a --dev node for the Trust API's node tests
// (risk/api) and the tests that span it and other areas (node/crossarea):
// step-up proofs minted with the cluster's live key, the decision and
// siteverify answers, a receipt's JOSE header. It is imported by tests
// only.
package trusttest

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/trust"
)

// Env is a started --dev node and its dev workspace's credentials.
type Env struct{ *nodetest.DevNode }

// Start starts a --dev node; it stops when the test ends.
func Start(t testing.TB) *Env {
	t.Helper()
	return &Env{nodetest.StartDev(t)}
}

// Proof mints a step-up proof as an issuer (identity, journeys) would:
// with the cluster's live key, for the dev workspace.
func (e *Env) Proof(in trust.ProofInput) string {
	e.T.Helper()
	return MintProof(e.T, e.N.Store().Catalog(), e.Dev.WorkspaceID, in)
}

// MintProof mints a step-up proof for workspace with cat's live key.
func MintProof(t testing.TB, cat *catalog.Catalog, workspace string, in trust.ProofInput) string {
	t.Helper()
	sk := cat.SigningKey(catalog.KeyLive)
	ws := cat.Workspaces[workspace]
	if sk == nil || ws == nil {
		t.Fatal("no live key or workspace")
	}
	return trust.IssueProof(token.NewKey(sk.ID, sk.Secret), ws, in, time.Now())
}

// DecisionAnswer is a trust decision's answer (also an orchestration's).
type DecisionAnswer struct {
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

// Matched reports a matched rule with reason.
func (d DecisionAnswer) Matched(reason string) bool {
	for _, m := range d.Risk.MatchedRules {
		if m.ReasonCode == reason {
			return true
		}
	}
	return false
}

// Decide posts a trust decision and decodes its 200 answer.
func (e *Env) Decide(body map[string]any) DecisionAnswer {
	e.T.Helper()
	return nodetest.OK[DecisionAnswer](e.T, "decision", e.Post("/trust/decision", body))
}

// SiteverifyAnswer is /trust/siteverify's answer.
type SiteverifyAnswer struct {
	Success bool `json:"success"`
	Trust   *struct {
		Method         string `json:"method"`
		AssuranceLevel string `json:"assurance_level"`
		OperationBound bool   `json:"operation_bound"`
	} `json:"trust"`
	ErrorCodes   []string `json:"error-codes"`
	AssessmentID string   `json:"assessment_id"`
}

// Siteverify posts /trust/siteverify and decodes its 200 answer.
func (e *Env) Siteverify(body map[string]any) SiteverifyAnswer {
	e.T.Helper()
	return nodetest.OK[SiteverifyAnswer](e.T, "trust siteverify", e.Post("/trust/siteverify", body))
}

// ReceiptHeader is the JOSE header of a decision receipt.
func ReceiptHeader(t testing.TB, receipt string) map[string]any {
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
