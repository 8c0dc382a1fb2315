package api

import (
	"net"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

func (e *hvEnv) feedback(body string) resp {
	return e.do(req{path: "/v1/detection/feedback", ctype: "application/json", body: body})
}

func TestFeedbackIsTakenOncePerAssessmentAndDeduplicatesExactRetries(t *testing.T) {
	e := mustNewHVEnv(t)
	aid := e.assessed(t, humanSignals())
	body := `{"secret":"` + e.secret + `","assessment_id":"` + aid + `","label":"abuse","reason_codes":["spam","fake-account"]}`
	first := e.feedback(body)
	if first.status != 200 || first.json(t)["assessment_known"] != true {
		t.Fatalf("first report: %d %s", first.status, first.body)
	}
	e.advance(4 * time.Minute)
	retry := e.feedback(body)
	if retry.status != 200 || string(retry.body) != string(first.body) || retry.header["X-Service-Deduplicated"] != "true" {
		t.Fatalf("an exact retry within 5 minutes must get the same answer: %s vs %s (%v)", retry.body, first.body, retry.header)
	}
	if r := e.feedback(`{"secret":"` + e.secret + `","assessment_id":"` + aid + `","label":"legitimate"}`); r.status != 409 || r.json(t)["error"] != "conflict" {
		t.Fatalf("another label for a labelled assessment: %d %s, want 409 conflict", r.status, r.body)
	}
	e.advance(2 * time.Minute)
	if later := e.feedback(body); later.status != 409 {
		t.Fatalf("a repeat after the window: %d %s, want 409 (feedback is taken once per assessment)", later.status, later.body)
	}
	// Raft holds only the bounded tally, counted once; no record per call.
	if n := len(e.store.Catalog().Feedback); n != 0 {
		t.Fatalf("%d feedback records in the catalog, want none", n)
	}
	if tl := e.store.Catalog().TallyOf("site-1"); tl.Abuse != 1 {
		t.Fatalf("tally %+v, want one abuse", tl)
	}
}

func TestFeedbackValidation(t *testing.T) {
	e := mustNewHVEnv(t)
	aid := "0d6f5c1e-8a9b-4c3d-9e2f-112233445566"
	tests := []struct {
		name   string
		body   string
		status int
		code   string
	}{
		{"an unknown label", `{"secret":"` + e.secret + `","assessment_id":"` + aid + `","label":"bad"}`, 400, "invalid-field"},
		{"an unknown reason code", `{"secret":"` + e.secret + `","assessment_id":"` + aid + `","label":"abuse","reason_codes":["because"]}`, 400, "invalid-field"},
		{"a repeated reason code", `{"secret":"` + e.secret + `","assessment_id":"` + aid + `","label":"abuse","reason_codes":["spam","spam"]}`, 400, "invalid-field"},
		{"an assessment id that is not a UUID", `{"secret":"` + e.secret + `","assessment_id":"x","label":"abuse"}`, 400, "invalid-field"},
		{"no secret", `{"assessment_id":"` + aid + `","label":"abuse"}`, 401, "unauthorized"},
		{"a sandbox secret", `{"secret":"` + e.sbxSec + `","assessment_id":"` + aid + `","label":"abuse"}`, 401, "unauthorized"},
		{"an expired or unknown assessment is refused", `{"secret":"` + e.secret + `","assessment_id":"` + aid + `","label":"legitimate"}`, 404, "unknown-assessment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.feedback(tc.body)
			if r.status != tc.status || (tc.code != "" && r.json(t)["error"] != tc.code) {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	// Another site's assessment cannot be labelled.
	other := e.assessed(t, humanSignals())
	r := e.do(req{path: "/v1/detection/feedback", ctype: "application/json", headers: map[string]string{"Authorization": "Bearer sk_other"},
		body: `{"assessment_id":"` + other + `","label":"abuse"}`})
	if r.status != 404 || r.json(t)["error"] != "unknown-assessment" {
		t.Fatalf("another site's assessment: %d %s", r.status, r.body)
	}
}

func TestMobileFeedbackChecksAppIdentity(t *testing.T) {
	e := mustNewHVEnv(t)
	aid := e.assessed(t, humanSignals()) // an assessment of the app's workspace
	post := func(bearer, platform, appID string) resp {
		h := map[string]string{}
		if bearer != "" {
			h["Authorization"] = "Bearer " + bearer
		}
		return e.do(req{path: "/v1/mobile/detection/feedback", ctype: "application/json", headers: h,
			body: `{"platform":"` + platform + `","app_id":"` + appID + `","assessment_id":"` + aid + `","label":"false_negative"}`})
	}
	tests := []struct {
		name         string
		bearer, plat string
		app          string
		status       int
		code         string
	}{
		{"the registered identity is accepted", e.appSec, "android", "com.example.app", 200, ""},
		{"another platform is invalid-app-identity", e.appSec, "ios", "com.example.app", 403, "invalid-app-identity"},
		{"another app id is invalid-app-identity", e.appSec, "android", "com.example.other", 403, "invalid-app-identity"},
		{"no mobile secret is unauthorized", "", "android", "com.example.app", 401, "unauthorized"},
		{"a site secret is not a mobile secret", e.secret, "android", "com.example.app", 401, "unauthorized"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := post(tc.bearer, tc.plat, tc.app)
			if r.status != tc.status || (tc.code != "" && r.json(t)["error"] != tc.code) {
				t.Fatalf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	if tl := e.store.Catalog().TallyOf("app-1"); tl == nil || tl.FalseNegatives != 1 {
		t.Fatalf("app tally %+v", tl)
	}
}

func TestFalsePositivesLowerDifficultyAndRaiseSimilarScores(t *testing.T) {
	e := mustNewHVEnv(t)
	hidden := humanSignals()
	hidden["visible"] = false
	var ids []string
	for i := 0; i < 5; i++ {
		ids = append(ids, e.assessed(t, hidden))
	}
	scoreOfHidden := func() float64 {
		m := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", e.tokenFor("login", hidden)))
		return m["score"].(float64)
	}
	difficultyFrom := func(ip net.IP) int {
		r := e.do(req{path: "/v1/challenge", ctype: "application/json", body: `{"sitekey":"site_pub"}`,
			headers: map[string]string{"Origin": e.origin}, ip: ip})
		return int(r.json(t)["pow"].(map[string]any)["difficulty"].(float64))
	}
	if s := scoreOfHidden(); s != 0.8 {
		t.Fatalf("a hidden-page visit scores %v before feedback, want 0.8", s)
	}
	zero := 0
	e.patchSite(catalog.SitePatch{ChallengeDifficulty: &zero})
	before := difficultyFrom(net.IPv4(192, 0, 2, 10))
	for _, id := range ids {
		if r := e.feedback(`{"secret":"` + e.secret + `","assessment_id":"` + id + `","label":"false_positive","reason_codes":["customer-complaint"]}`); r.status != 200 {
			t.Fatalf("feedback: %d %s", r.status, r.body)
		}
	}
	after := difficultyFrom(net.IPv4(192, 0, 2, 11))
	if before != 8 || after != 7 {
		t.Fatalf("difficulty %d → %d after 5 false positives, want 8 → 7", before, after)
	}
	one := 1
	e.patchSite(catalog.SitePatch{ChallengeDifficulty: &one})
	if s := scoreOfHidden(); s != 0.85 {
		t.Fatalf("a hidden-page visit scores %v after 5 false positives on hidden-page, want 0.85", s)
	}
	webdriver := humanSignals()
	webdriver["webdriver"] = true
	m := checkResult(t, e.verify("/v1/siteverify", "secret", e.secret, "response", e.tokenFor("login", webdriver)))
	if m["score"].(float64) != 0.3 {
		t.Fatalf("dissimilar signals are not relieved: score %v, want 0.3", m["score"])
	}
}
