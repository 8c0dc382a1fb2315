package api_test

import (
	"testing"

	"github.com/trustd/trustd/risk/api/trusttest"
)

// TestTrustDecisionsRestOnAccountDefence: what Account Defence observed of
// a subject (failed logins, a fraudulent label) raises the Trust API's own
// score for that subject; another subject is untouched.
func TestTrustDecisionsRestOnAccountDefence(t *testing.T) {
	an := mustStartAccountNode(t)
	decide := func(subject string) float64 {
		t.Helper()
		r := an.Do("POST", "/v1/trust/decision", "", map[string]any{"secret": an.secret, "action": "payment.create",
			"subject_id": subject})
		if r.Status != 200 {
			t.Fatalf("decision: %d %s", r.Status, r.Body)
		}
		var d trusttest.DecisionAnswer
		r.Decode(t, &d)
		return d.Risk.Score
	}
	calm := decide("carol")
	for range 3 {
		an.mustAssess(t, "mallory", "", "login", "failed")
	}
	failed := decide("mallory")
	if failed <= calm {
		t.Fatalf("three failed logins seen by Account Defence did not raise the trust score: %v vs %v", failed, calm)
	}
	a := an.mustAssess(t, "eve", "", "login", "succeeded")
	if r, _ := an.feedback(t, an.cred, map[string]any{"assessment_id": a.AssessmentID, "label": "fraudulent",
		"reason_code": "account_takeover"}); r.Status != 200 {
		t.Fatalf("feedback: %d %s", r.Status, r.Body)
	}
	if labelled := decide("eve"); labelled < calm+0.4 {
		t.Fatalf("a subject labelled fraudulent in Account Defence scores %v (calm %v)", labelled, calm)
	}
	if again := decide("carol"); again != calm {
		t.Fatalf("another subject's score moved: %v vs %v", again, calm)
	}
}
