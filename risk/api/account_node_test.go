package api_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/google/uuid"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
	"github.com/trustd/trustd/risk/account"
	api "github.com/trustd/trustd/risk/api"
	"github.com/trustd/trustd/risk/apiprotection"
)

// accountNode is a real node with a workspace, a site and a site.verify
// credential; every answer is checked against the node's contract.
type accountNode struct {
	*nodetest.Node
	ws, secret, cred string
}

func mustStartAccountNode(t *testing.T, cfg ...node.Config) *accountNode {
	t.Helper()
	var tn *nodetest.Node
	if len(cfg) > 0 {
		tn = nodetest.StartConfig(t, cfg[0])
	} else {
		tn = nodetest.Start(t)
	}
	an := &accountNode{Node: tn}
	an.setup("acme")
	return an
}

func (an *accountNode) setup(name string) {
	an.T.Helper()
	var ws struct {
		WorkspaceID string `json:"workspace_id"`
	}
	an.MustCreate("/workspaces", map[string]any{"name": name}, &ws)
	var site struct {
		Secret string `json:"secret"`
	}
	an.MustCreate("/workspaces/"+ws.WorkspaceID+"/sites", map[string]any{"name": "shop", "hostnames": []string{"shop.example"}}, &site)
	var cred struct {
		Credential string `json:"credential"`
	}
	an.MustCreate("/workspaces/"+ws.WorkspaceID+"/credentials", map[string]any{"name": "srv", "scopes": []string{"site.verify"}}, &cred)
	an.ws, an.secret, an.cred = ws.WorkspaceID, site.Secret, cred.Credential
}

func (an *accountNode) assess(t *testing.T, bearer string, body map[string]any) (nodetest.Response, account.Assessment) {
	t.Helper()
	r := an.Do("POST", "/v1/account/assess", bearer, body)
	var a account.Assessment
	if r.Status == 200 {
		if err := json.Unmarshal(r.Body, &a, json.RejectUnknownMembers(true)); err != nil {
			t.Fatalf("the assessment does not match its type: %v: %s", err, r.Body)
		}
	}
	return r, a
}

func (an *accountNode) mustAssess(t *testing.T, subject, device, event, outcome string) account.Assessment {
	t.Helper()
	body := map[string]any{"subject_id": subject, "event_type": event, "outcome": outcome}
	if device != "" {
		body["device_id"] = device
	}
	r, a := an.assess(t, an.cred, body)
	if r.Status != 200 {
		t.Fatalf("assess: %d %s", r.Status, r.Body)
	}
	return a
}

func (an *accountNode) feedback(t *testing.T, bearer string, body map[string]any) (nodetest.Response, account.Feedback) {
	t.Helper()
	r := an.Do("POST", "/v1/account/feedback", bearer, body)
	var f account.Feedback
	if r.Status == 200 {
		r.Decode(t, &f)
	}
	return r, f
}

func (an *accountNode) trust(t *testing.T, action, subject, device string) nodetest.Response {
	t.Helper()
	return an.Do("POST", "/v1/account/trusted-device", an.cred, map[string]any{"action": action, "subject_id": subject,
		"device_id": device, "label": "work laptop"})
}

func TestAccountAssessAnswersEveryField(t *testing.T) {
	an := mustStartAccountNode(t)
	r, a := an.assess(t, an.cred, map[string]any{"subject_id": "alice@example.com", "device_id": "dev-1", "event_type": "login",
		"outcome": "attempted", "account_age_days": 400, "compromised_password": true})
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if _, err := uuid.Parse(a.AssessmentID); err != nil || !a.Success {
		t.Fatalf("%s", r.Body)
	}
	// compromised_password (0.4) + new_device (0.2).
	if a.RiskScore != 0.6 || a.Classification != "medium" || a.RecommendedDecision != "challenge" || a.Decision != "challenge" ||
		a.TrustedDevice || a.EnforcementMode != "enforce" || !slices.Equal(a.Reasons, []string{"new_device", "compromised_password"}) {
		t.Fatalf("%s", r.Body)
	}
	for _, f := range []string{"success", "assessment_id", "risk_score", "classification", "recommended_decision", "decision", "trusted_device", "reasons"} {
		if !strings.Contains(string(r.Body), `"`+f+`":`) {
			t.Fatalf("field %s of spec 2.3 missing: %s", f, r.Body)
		}
	}
	t.Run("the legacy site secret in the body works too", func(t *testing.T) {
		r, a := an.assess(t, "", map[string]any{"secret": an.secret, "subject_id": "bob", "event_type": "registration", "outcome": "succeeded", "device_id": "d"})
		if r.Status != 200 || a.Classification != "low" || len(a.Reasons) != 0 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("failed logins add up and a success after them is flagged", func(t *testing.T) {
		var a account.Assessment
		for i := 0; i < 3; i++ {
			a = an.mustAssess(t, "carol", "dev-c", "login", "failed")
		}
		if !slices.Contains(a.Reasons, "subject_failed_logins") {
			t.Fatalf("%+v", a)
		}
		if a = an.mustAssess(t, "carol", "dev-c", "login", "succeeded"); !slices.Contains(a.Reasons, "success_after_failures") {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("one device against many subjects is denied", func(t *testing.T) {
		var a account.Assessment
		for i := 0; i < 10; i++ {
			a = an.mustAssess(t, fmt.Sprint("victim-", i), "farm", "login", "failed")
		}
		if a.Classification != "high" || a.Decision != "deny" || !slices.Contains(a.Reasons, "many_subjects_per_device_high") {
			t.Fatalf("%+v", a)
		}
	})
}

func TestAccountErrorCodes(t *testing.T) {
	an := mustStartAccountNode(t)
	var weak struct {
		Credential string `json:"credential"`
	}
	an.MustCreate("/workspaces/"+an.ws+"/credentials", map[string]any{"name": "weak", "scopes": []string{"identity.verify"}}, &weak)
	var sandbox struct {
		Secret string `json:"secret"`
	}
	an.MustCreate("/workspaces/"+an.ws+"/sites", map[string]any{"name": "sb", "hostnames": []string{"sb.example"}, "environment": "sandbox"}, &sandbox)
	ok := func(extra map[string]any) map[string]any {
		b := map[string]any{"subject_id": "s", "device_id": "d", "event_type": "login", "outcome": "failed"}
		for k, v := range extra {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	tests := []struct {
		name   string
		path   string
		bearer string
		body   any
		status int
		code   string
	}{
		{"no credential", "/v1/account/assess", "", ok(nil), 401, "unauthorized"},
		{"an unknown bearer", "/v1/account/assess", "cred_nope", ok(nil), 401, "unauthorized"},
		{"a wrong body secret", "/v1/account/assess", "", ok(map[string]any{"secret": "sk_live_nope"}), 401, "unauthorized"},
		{"a sandbox site secret", "/v1/account/assess", "", ok(map[string]any{"secret": sandbox.Secret}), 401, "unauthorized"},
		{"a credential without site.verify", "/v1/account/assess", weak.Credential, ok(nil), 403, "forbidden"},
		{"a missing subject", "/v1/account/assess", an.cred, ok(map[string]any{"subject_id": nil}), 400, "invalid-subject-id"},
		{"a subject with a control character", "/v1/account/assess", an.cred, ok(map[string]any{"subject_id": "a\u0001b"}), 400, "invalid-subject-id"},
		{"a device too long", "/v1/account/assess", an.cred, ok(map[string]any{"device_id": strings.Repeat("d", 257)}), 400, "invalid-device-id"},
		{"an event type outside the vocabulary", "/v1/account/assess", an.cred, ok(map[string]any{"event_type": "logout"}), 400, "invalid-event"},
		{"an outcome outside the vocabulary", "/v1/account/assess", an.cred, ok(map[string]any{"outcome": "maybe"}), 400, "invalid-event"},
		{"a negative account age", "/v1/account/assess", an.cred, ok(map[string]any{"account_age_days": -1}), 400, "invalid-account-age"},
		{"an account age of the wrong type", "/v1/account/assess", an.cred, ok(map[string]any{"account_age_days": "old"}), 400, "invalid-field"},
		{"a caller risk score is no field of ours", "/v1/account/assess", an.cred, ok(map[string]any{"risk_score": 0}), 400, "unknown-field"},
		{"a body that is not JSON", "/v1/account/assess", an.cred, `{"subject_id":`, 400, "malformed-json"},
		{"a duplicate key", "/v1/account/assess", an.cred, `{"subject_id":"a","subject_id":"b","event_type":"login","outcome":"failed"}`, 400, "malformed-json"},
		{"a body over the limit", "/v1/account/assess", an.cred, `{"subject_id":"` + strings.Repeat("a", 2<<20) + `"}`, 413, "body-too-large"},
		{"feedback on an unknown assessment", "/v1/account/feedback", an.cred, map[string]any{"assessment_id": uuid.NewString(),
			"label": "fraudulent", "reason_code": "chargeback"}, 404, "account-assessment-not-found"},
		{"feedback with a malformed id", "/v1/account/feedback", an.cred, map[string]any{"assessment_id": "nope",
			"label": "fraudulent", "reason_code": "chargeback"}, 400, "invalid-feedback"},
		{"feedback whose reason belongs to the other label", "/v1/account/feedback", an.cred, map[string]any{"assessment_id": uuid.NewString(),
			"label": "legitimate", "reason_code": "chargeback"}, 400, "invalid-feedback"},
		{"feedback without credential", "/v1/account/feedback", "", map[string]any{"assessment_id": uuid.NewString(),
			"label": "legitimate", "reason_code": "other"}, 401, "unauthorized"},
		{"an unknown trusted-device action", "/v1/account/trusted-device", an.cred, map[string]any{"action": "forget", "subject_id": "s", "device_id": "d"}, 400, "invalid-trusted-device"},
		{"a trusted device without device_id", "/v1/account/trusted-device", an.cred, map[string]any{"action": "trust", "subject_id": "s"}, 400, "invalid-device-id"},
		{"a trusted device with a long label", "/v1/account/trusted-device", an.cred, map[string]any{"action": "trust", "subject_id": "s",
			"device_id": "d", "label": strings.Repeat("l", 65)}, 400, "invalid-trusted-device"},
		{"a trusted device through a weak credential", "/v1/account/trusted-device", weak.Credential, map[string]any{"action": "trust", "subject_id": "s", "device_id": "d"}, 403, "forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := an.Do("POST", tc.path, tc.bearer, tc.body)
			if r.Status != tc.status || r.ErrorCode(t) != tc.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	t.Run("a body that is not JSON by its media type", func(t *testing.T) {
		r := an.Do("POST", "/v1/account/assess", an.cred, "subject_id=s", "Content-Type", "text/plain")
		if r.Status != 415 || r.ErrorCode(t) != "unsupported-media-type" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("a subject's trusted devices are capped with a documented error", func(t *testing.T) {
		for i := 0; i < 20; i++ {
			if r := an.trust(t, "trust", "many", fmt.Sprint("dev-", i)); r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
		}
		r := an.trust(t, "trust", "many", "one-more")
		if r.Status != 409 || r.ErrorCode(t) != "trusted-devices-full" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if r := an.trust(t, "trust", "many", "dev-3"); r.Status != 200 {
			t.Fatalf("refreshing a trusted device at the cap: %d %s", r.Status, r.Body)
		}
	})
}

func TestAccountObserveModeAppliesAllow(t *testing.T) {
	an := mustStartAccountNode(t)
	if r := an.Admin("PATCH", "/workspaces/"+an.ws, map[string]any{"default_mode": "observe"}); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	r, a := an.assess(t, an.cred, map[string]any{"subject_id": "s", "device_id": "d", "event_type": "login", "outcome": "failed",
		"compromised_password": true})
	if r.Status != 200 || a.EnforcementMode != "observe" || a.RecommendedDecision != "challenge" || a.Decision != "allow" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}

func TestAccountFeedback(t *testing.T) {
	an := mustStartAccountNode(t)
	a := an.mustAssess(t, "dan", "dan-phone", "login", "succeeded")
	body := map[string]any{"assessment_id": a.AssessmentID, "label": "fraudulent", "reason_code": "account_takeover"}
	r, first := an.feedback(t, an.cred, body)
	if r.Status != 200 || !first.Success || !first.Accepted {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	t.Run("an exact retry answers the first feedback_id", func(t *testing.T) {
		body := map[string]any{"secret": an.secret, "assessment_id": a.AssessmentID, "label": "fraudulent", "reason_code": "account_takeover"}
		if _, again := an.feedback(t, "", body); again.FeedbackID != first.FeedbackID {
			t.Fatalf("%+v vs %+v", again, first)
		}
	})
	t.Run("feedback raises the risk of the subject's and the device's later assessments", func(t *testing.T) {
		if b := an.mustAssess(t, "dan", "other", "login", "attempted"); !slices.Contains(b.Reasons, "prior_fraud_subject") {
			t.Fatalf("%+v", b)
		}
		if b := an.mustAssess(t, "eve", "dan-phone", "login", "attempted"); !slices.Contains(b.Reasons, "prior_fraud_device") {
			t.Fatalf("%+v", b)
		}
	})
	t.Run("another workspace's credential cannot see or label the assessment", func(t *testing.T) {
		other := &accountNode{Node: an.Node}
		other.setup("other")
		r, _ := an.feedback(t, other.cred, body)
		if r.Status != 404 || r.ErrorCode(t) != "account-assessment-not-found" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("an API Protection assessment id is foreign here", func(t *testing.T) {
		if r := an.Admin("POST", "/workspaces/"+an.ws+"/api-protection-policies", map[string]any{"name": "all", "path_pattern": "*"}); r.Status != 201 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		r := an.Do("POST", "/v1/api-protection/assess", an.cred, map[string]any{"method": "GET", "path": "/x", "subject_id": "dan"})
		var ap apiprotection.APIAssessment
		r.Decode(t, &ap)
		r, _ = an.feedback(t, an.cred, map[string]any{"assessment_id": ap.AssessmentID, "label": "fraudulent", "reason_code": "chargeback"})
		if r.Status != 404 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("another label is new feedback", func(t *testing.T) {
		_, legit := an.feedback(t, an.cred, map[string]any{"assessment_id": a.AssessmentID, "label": "legitimate", "reason_code": "passed_two_factor"})
		if legit.FeedbackID == "" || legit.FeedbackID == first.FeedbackID {
			t.Fatalf("%+v", legit)
		}
		if b := an.mustAssess(t, "dan", "dan-phone", "login", "attempted"); slices.Contains(b.Reasons, "prior_fraud_subject") || !slices.Contains(b.Reasons, "prior_legitimate") {
			t.Fatalf("%+v", b)
		}
	})
}

func TestAccountTrustedDeviceSurvivesARestart(t *testing.T) {
	cfg := node.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true}
	an := mustStartAccountNode(t, cfg)
	if a := an.mustAssess(t, "fay", "fay-laptop", "login", "attempted"); a.TrustedDevice || !slices.Contains(a.Reasons, "new_device") {
		t.Fatalf("%+v", a)
	}
	r := an.trust(t, "trust", "fay", "fay-laptop")
	var tr account.TrustResult
	r.Decode(t, &tr)
	if r.Status != 200 || tr.Status != "trusted" || tr.ExpiresAt == nil {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	an.Stop()

	an2 := &accountNode{Node: nodetest.StartConfig(t, cfg), ws: an.ws, secret: an.secret, cred: an.cred}
	a := an2.mustAssess(t, "fay", "fay-laptop", "login", "attempted")
	if !a.TrustedDevice || slices.Contains(a.Reasons, "new_device") || !slices.Contains(a.Reasons, "trusted_device") {
		t.Fatalf("after the restart: %+v", a)
	}
	if a := an2.mustAssess(t, "gus", "fay-laptop", "login", "attempted"); a.TrustedDevice {
		t.Fatal("the device is trusted for another subject")
	}
	r = an2.trust(t, "revoke", "fay", "fay-laptop")
	r.Decode(t, &tr)
	if r.Status != 200 || tr.Status != "revoked" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if a := an2.mustAssess(t, "fay", "fay-laptop", "login", "attempted"); a.TrustedDevice || !slices.Contains(a.Reasons, "new_device") {
		t.Fatalf("after revoke: %+v", a)
	}
}

// TestAccountVocabularyIsTheContracts keeps the enums the contract
// documents equal to the module's closed vocabularies.
func TestAccountVocabularyIsTheContracts(t *testing.T) {
	enum := func(v any, field string) []string {
		f, ok := reflect.TypeOf(v).FieldByName(field)
		if !ok {
			t.Fatalf("no field %s", field)
		}
		return strings.Split(f.Tag.Get("enum"), "|")
	}
	same := func(name string, got, want []string) {
		g, w := slices.Clone(got), slices.Clone(want)
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			t.Errorf("%s: contract %v, module %v", name, got, want)
		}
	}
	same("event_type", enum(api.AccountAssessInput{}, "EventType"), account.EventTypes)
	same("outcome", enum(api.AccountAssessInput{}, "Outcome"), account.Outcomes)
	same("label", enum(api.AccountFeedbackInput{}, "Label"), account.Labels)
	same("reason_code", enum(api.AccountFeedbackInput{}, "ReasonCode"), account.AllFeedbackReasons())
	same("reasons", enum(account.Assessment{}, "Reasons"), account.Reasons)
	same("action", enum(api.AccountTrustedDeviceInput{}, "Action"), []string{account.ActionTrust, account.ActionRevoke})
}
