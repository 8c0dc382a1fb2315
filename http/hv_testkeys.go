package http

import (
	"time"
)

// Cloudflare's published Turnstile test keys, honoured in --dev and at the
// sandbox endpoints (never by a production node at /siteverify), so CI
// setups built on them work unchanged against trustd. The secrets answer
// without touching any state: 1x… always passes, 2x… always fails, 3x…
// reports a spent token. The test site keys make the challenge endpoint
// hand out the documented dummy token (1x… pass, 2x… refuse).
const (
	testTokenDummy = "XXXX.DUMMY.TOKEN.XXXX"
	testHostname   = "example.com"
)

// turnstileTestSecret reports the documented outcome of a test secret: the
// error codes ("" for success) and whether secret is one at all.
func turnstileTestSecret(secret []byte) (code string, ok bool) {
	switch string(secret) {
	case "1x0000000000000000000000000000000AA":
		return "", true
	case "2x0000000000000000000000000000000AA":
		return "invalid-input-response", true
	case "3x0000000000000000000000000000000AA":
		return "timeout-or-duplicate", true
	}
	return "", false
}

// turnstileTestSitekey reports whether sitekey is a test site key and
// whether it always passes.
func turnstileTestSitekey(sitekey string) (pass, ok bool) {
	switch sitekey {
	case "1x00000000000000000000AA", "1x00000000000000000000BB", "3x00000000000000000000FF":
		return true, true
	case "2x00000000000000000000AB", "2x00000000000000000000BB":
		return false, true
	}
	return false, false
}

// testKeysHonoured reports whether this request may use the test keys:
// a --dev node, or a sandbox endpoint.
func (s *Server) testKeysHonoured(sandbox bool) bool { return s.cfg.Dev || sandbox }

// answerTestSecret answers a siteverify made with a test secret in the
// native (spec) shape; false means secret is not a test secret.
func (s *Server) answerTestSecret(c *Call, q *svRequest, sandbox bool) bool {
	if !s.testKeysHonoured(sandbox) {
		return false
	}
	code, ok := turnstileTestSecret(q.secret)
	if !ok {
		return false
	}
	if len(q.response) == 0 {
		c.specError(svMissingResponse.Status, svMissingResponse.Code)
		return true
	}
	res := &SiteverifyResult{Success: code == "", ErrorCodes: []string{}}
	ts := c.Now().UTC().Format(time.DateTime)
	host, typ, action := testHostname, "checkbox", string(q.action)
	res.ChallengeTS, res.Hostname, res.ChallengeType, res.Action = &ts, &host, &typ, &action
	if code != "" {
		res.ErrorCodes = []string{code}
	} else {
		res.Score = 0.9
	}
	c.ok(res)
	return true
}

// answerTestSecretTurnstile is the same in the Turnstile dialect's shape.
func (s *Server) answerTestSecretTurnstile(c *Call, q *svRequest) bool {
	if !s.testKeysHonoured(false) {
		return false
	}
	code, ok := turnstileTestSecret(q.secret)
	if !ok {
		return false
	}
	res := &TurnstileResult{Success: code == "", ErrorCodes: []string{}}
	if code != "" {
		res.ErrorCodes = []string{code}
	} else {
		res.ChallengeTS = c.Now().UTC().Format(time.RFC3339)
		res.Hostname = testHostname
		res.Action = string(q.action)
	}
	c.ok(res)
	return true
}
