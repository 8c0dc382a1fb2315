package verify

import (
	"slices"
	"testing"

	"github.com/trustd/trustd/platform/token"
)

// A token exchanged for a journey is consumed as /siteverify consumes it:
// one marker for both paths, the site and workspace bound, the cdata
// echoed, the address checked strictly when given.
func TestExchangeTokenIsSiteverifyWithTheSameSingleUseMarker(t *testing.T) {
	e := mustNewEnv(t)
	withCData := func(r *token.Response) { r.CData = "journey:abc" }
	xchg := func(ws, site, tok, ip string) Exchanged {
		t.Helper()
		out, err := e.m.ExchangeToken(e.cat, ws, site, tok, ip)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := func(got Exchanged, success bool, cdata string, codes ...string) {
		t.Helper()
		if codes == nil {
			codes = []string{}
		}
		if got.Success != success || got.CData != cdata || !slices.Equal(got.Codes, codes) {
			t.Fatalf("got %+v, want success %v cdata %q codes %v", got, success, cdata, codes)
		}
	}

	tok := e.mint(withCData)
	want(xchg("ws1", "site-1", tok, testAddr), true, "journey:abc")
	want(xchg("ws1", "site-1", tok, testAddr), false, "journey:abc", "timeout-or-duplicate")
	if v, _ := e.siteverify(Request{Response: []byte(tok)}); v.Success() || v.CodeNames(nil)[0] != "timeout-or-duplicate" {
		t.Fatalf("/siteverify after an exchange: %v", v.CodeNames(nil))
	}

	// Spent at /siteverify first: a duplicate here.
	tok = e.mint(withCData)
	if v, _ := e.siteverify(Request{Response: []byte(tok)}); !v.Success() {
		t.Fatalf("/siteverify: %v", v.CodeNames(nil))
	}
	want(xchg("ws1", "site-1", tok, ""), false, "journey:abc", "timeout-or-duplicate")

	// Another workspace, an unknown site, the sandbox site or no token:
	// nothing is recognised and nothing is consumed.
	tok = e.mint(withCData)
	want(xchg("ws2", "site-1", tok, ""), false, "", "invalid-input-response")
	want(xchg("ws1", "site-9", tok, ""), false, "", "invalid-input-response")
	want(xchg("ws1", "site-sbx", tok, ""), false, "", "invalid-input-response")
	want(xchg("ws1", "site-1", "", ""), false, "", "invalid-input-response")
	want(xchg("ws1", "site-1", "tok_garbage", ""), false, "", "invalid-input-response")

	// The owner is down: an error, and the token is untouched.
	down := New(downAsker{}, nil, e.m.now, Config{})
	if _, err := down.ExchangeToken(e.cat, "ws1", "site-1", tok, ""); err == nil {
		t.Fatal("an unreachable owner answered a verdict")
	}
	// Another address fails strictly (and spends the token, as /siteverify does).
	want(xchg("ws1", "site-1", tok, "198.51.100.9"), false, "journey:abc", "remoteip-mismatch")
	want(xchg("ws1", "site-1", tok, testAddr), false, "journey:abc", "timeout-or-duplicate")

	// A token of another site of the workspace is not this site's.
	other := e.mint(func(r *token.Response) { r.SiteID = "site-sbx"; r.CData = "journey:abc" })
	want(xchg("ws1", "site-1", other, ""), false, "", "invalid-input-response")
}

// Exchange tells its consumers what the token carried, copied out of the
// scratch buffer: the bound action, the issue time, the verification kept
// on success, and whether a failure was the token being spent.
func TestExchangeReportsTheTokensContent(t *testing.T) {
	e := mustNewEnv(t)
	tok := e.mint(func(r *token.Response) { r.Action = "transfer" })
	first, err := e.m.Exchange(e.cat, e.cat.Sites["site-1"], &Request{Response: []byte(tok), Action: []byte("transfer")})
	if err != nil {
		t.Fatal(err)
	}
	if !first.Known || !first.Success || first.Spent || first.Action != "transfer" || first.Issued.IsZero() || first.AssessmentID == "" {
		t.Fatalf("first exchange: %+v", first)
	}
	again, err := e.m.Exchange(e.cat, e.cat.Sites["site-1"], &Request{Response: []byte(tok), Action: []byte("transfer")})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Known || again.Success || !again.Spent || again.AssessmentID != "" || !slices.Equal(again.Codes, []string{"timeout-or-duplicate"}) {
		t.Fatalf("second exchange: %+v", again)
	}
	forged, err := e.m.Exchange(e.cat, e.cat.Sites["site-1"], &Request{Response: []byte("tok_garbage")})
	if err != nil || forged.Known || forged.Success || forged.Spent || forged.Action != "" {
		t.Fatalf("a forged token: %+v %v", forged, err)
	}
}
