package verify

import (
	"time"

	"github.com/trustd/trustd/platform/errcode"
)

// Cloudflare's published Turnstile test secrets, honoured by a Dev module
// and at the sandbox endpoints (never by a production node at
// /siteverify), so CI setups built on them work unchanged against trustd.
// The secrets answer without touching any state: 1x… always passes, 2x…
// always fails, 3x… reports a spent token. The matching test site keys
// are the widget's business (api.js hands out the documented dummy token
// for them without calling the service).

// testHostname is the hostname a test secret's answer reports.
const testHostname = "example.com"

// testSecretCode reports the documented outcome of a test secret: the
// error code ("" for success) and whether secret is one at all.
func testSecretCode(secret []byte) (code string, ok bool) {
	switch string(secret) {
	case "1x0000000000000000000000000000000AA":
		return "", true
	case "2x0000000000000000000000000000000AA":
		return errcode.CodeInvalidResponse, true
	case "3x0000000000000000000000000000000AA":
		return errcode.CodeTimeoutOrDuplicate, true
	}
	return "", false
}

// IsTestSecret reports whether secret is a test secret this module
// answers at an endpoint of the sandbox (sandbox) or production kind.
func (m *Module) IsTestSecret(secret []byte, sandbox bool) bool {
	if !m.cfg.Dev && !sandbox {
		return false
	}
	_, ok := testSecretCode(secret)
	return ok
}

// TestSecretResult is the native answer to a test secret (IsTestSecret);
// action is the request's expected action, echoed.
func (m *Module) TestSecretResult(secret []byte, action string) *SiteverifyResult {
	code, _ := testSecretCode(secret)
	res := &SiteverifyResult{Success: code == "", ErrorCodes: []string{}}
	ts := m.now().UTC().Format(time.DateTime)
	host, typ := testHostname, "checkbox"
	res.ChallengeTS, res.Hostname, res.ChallengeType, res.Action = &ts, &host, &typ, &action
	if code != "" {
		res.ErrorCodes = []string{code}
	} else {
		res.Score = 0.9
	}
	return res
}

// TestSecretTurnstile is the same answer in the Turnstile dialect.
func (m *Module) TestSecretTurnstile(secret []byte, action string) *TurnstileResult {
	code, _ := testSecretCode(secret)
	res := &TurnstileResult{Success: code == "", ErrorCodes: []string{}}
	if code != "" {
		res.ErrorCodes = []string{code}
	} else {
		res.ChallengeTS = m.now().UTC().Format(time.RFC3339)
		res.Hostname = testHostname
		res.Action = action
	}
	return res
}
