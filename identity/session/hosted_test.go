package session

import (
	"context"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/catalog"
)

// The hosted capability: refused unless it is this session's, opens the
// session operations until 15 minutes after the capture deadline and not
// after; the session capability keeps reading the result longer. The
// redirect and origin must be on one of the workspace's sites.
func TestHostedCapabilityScopeAndExpiry(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "verify")
	if _, err := e.st.Apply(ctx, &catalog.CreateSite{Site: catalog.Site{ID: "site1", WorkspaceID: "ws1", Hostnames: []string{"shop.example"}}}); err != nil {
		t.Fatal(err)
	}
	req := func(origin, ret string) HostedRequest {
		return HostedRequest{CreateRequest: CreateRequest{SubjectID: "user-1", Action: "open_account", Assurance: DocumentOnly,
			Country: "UTO", DocumentType: "passport", ConsentAccepted: true, ConsentReference: "c"}, ParentOrigin: origin, ReturnURL: ret}
	}
	for _, bad := range []HostedRequest{
		req("", ""),
		req("https://evil.example", ""),
		req("", "https://shop.example.evil.example/done"),
		req("http://shop.example", ""),
		req("https://shop.example/path", ""),
		req("", "https://user@shop.example/done"),
	} {
		if _, err := e.m.CreateHosted(ctx, e.who, bad); !is(err, ErrOrigin) {
			t.Fatalf("%+v: %v", bad, err)
		}
	}
	h, err := e.m.CreateHosted(ctx, e.who, req("https://shop.example", "https://shop.example/done"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Hosted(ctx, h.SessionID, h.HostedToken); err != nil {
		t.Fatal(err)
	}
	other, _ := e.m.CreateHosted(ctx, e.who, req("https://shop.example", ""))
	for name, tok := range map[string]string{"another session's": other.HostedToken, "the session capability": h.SessionToken,
		"altered": h.HostedToken + "x", "empty": ""} {
		if _, err := e.m.Hosted(ctx, h.SessionID, tok); !is(err, ErrCapability) {
			t.Fatalf("%s hosted token: %v", name, err)
		}
	}
	s := e.st.Catalog().IdentitySession("ws1", h.SessionID)
	e.now = s.ExpiresAt.Add(14 * time.Minute)
	if _, err := e.m.Hosted(ctx, h.SessionID, h.HostedToken); err != nil {
		t.Fatalf("14 minutes after the deadline: %v", err)
	}
	e.now = s.ExpiresAt.Add(15 * time.Minute)
	if _, err := e.m.Hosted(ctx, h.SessionID, h.HostedToken); !is(err, ErrCapability) {
		t.Fatalf("15 minutes after the deadline: %v", err)
	}
	if _, err := e.m.Result(ctx, e.who, h.SessionID, h.HostedToken); !is(err, ErrCapability) {
		t.Fatalf("expired hosted token on result: %v", err)
	}
	if r, err := e.m.Result(ctx, e.who, h.SessionID, h.SessionToken); err != nil || !r.Expired {
		t.Fatalf("the creator's capability after the hosted one ended: %+v %v", r, err)
	}
}
