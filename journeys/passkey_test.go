package journeys

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"testing"

	"github.com/trustd/trustd/journeys/journeystest"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/risk/trust"
)

const pageOrigin = "https://verify.shop.example"

func mustPasskeyFixture(t *testing.T) *fixture {
	t.Helper()
	f := mustFixture(t)
	f.store.cat.Sites = map[string]*catalog.Site{"site1": {ID: "site1", WorkspaceID: "ws1", Name: "Shop", Hostnames: []string{"example", "shop.example"}}}
	f.m.WithPasskeys(pageOrigin)
	f.define(t, Spec{Key: "device", Name: "Device", Method: MethodDevice, RequestedAssurance: "standard",
		Requirements: catalog.JourneyRequirements{Identity: true, Authorization: true, OperationBinding: true}})
	return f
}

// passkeyProof runs the page's side of a device_authorization attempt.
func passkeyProof(t *testing.T, f *fixture, st StartResult, a *journeystest.Authenticator) PasskeyResult {
	t.Helper()
	ctx := context.Background()
	c, err := f.m.BeginPasskey(ctx, st.PersonToken)
	if err != nil {
		t.Fatal(err)
	}
	s := f.store.Catalog().JourneySession("ws1", f.sessionID(t, st))
	handle, _ := base64.RawURLEncoding.DecodeString(s.SubjectHash)
	for range 2 {
		var cred map[string]any
		if c.Registration {
			cred, err = a.Create(c.Options)
		} else {
			cred, err = a.Get(c.Options, handle)
		}
		if err != nil {
			t.Fatal(err)
		}
		raw := mustJSON(t, cred)
		r, err := f.m.FinishPasskey(ctx, st.PersonToken, raw)
		if err != nil {
			t.Fatal(err)
		}
		if r.Next == nil {
			return r
		}
		c = *r.Next
	}
	t.Fatal("more than a registration and an assertion")
	return PasskeyResult{}
}

func TestPasskeyRegistersThenAssertsAndTheProofVerifies(t *testing.T) {
	f := mustPasskeyFixture(t)
	a := journeystest.New(pageOrigin)
	st := f.start(t, StartRequest{JourneyKey: "device", SubjectID: "user-1", Action: "pay", OperationReference: "op-1"})
	c, err := f.m.BeginPasskey(context.Background(), st.PersonToken)
	if err != nil || !c.Registration {
		t.Fatalf("a subject without passkeys registers first: %+v %v", c, err)
	}
	rp, _ := c.Options["rp"].(map[string]any)
	if rp["id"] != "shop.example" {
		t.Fatalf("rp id %v, want the longest site hostname covering the page host", rp["id"])
	}
	r := passkeyProof(t, f, st, a)
	if !r.Passed || r.Proof.Response == "" {
		t.Fatalf("passkey attempt %+v", r)
	}
	keys := f.store.Catalog().PasskeysOf("ws1", subjectHash(f.ws, "user-1"))
	if len(keys) != 1 || len(keys[0].PublicKey) == 0 || keys[0].SignCount != 1 {
		t.Fatalf("stored passkeys %+v", keys)
	}
	v, _ := f.m.Siteverify(context.Background(), f.who, SiteverifyRequest{SessionToken: st.SessionToken, Response: r.Proof.Response,
		SubjectID: "user-1", Action: "pay", OperationReference: "op-1"})
	if !v.Success || v.Achieved.Assurance != trust.LevelStandard || !v.Achieved.DeviceBound || !v.Achieved.Identity || !v.OperationBound {
		t.Fatalf("siteverify %+v", v)
	}

	// The next journey of the subject asserts directly.
	st2 := f.start(t, StartRequest{JourneyKey: "device", SubjectID: "user-1", Action: "pay", OperationReference: "op-2"})
	c2, err := f.m.BeginPasskey(context.Background(), st2.PersonToken)
	if err != nil || c2.Registration || c2.Options["userVerification"] != "required" {
		t.Fatalf("second journey ceremony %+v %v", c2, err)
	}
	// A cloned authenticator replaying a counter is refused.
	a.Counter = 0
	r = passkeyProof(t, f, st2, a)
	if r.Passed || r.Reasons[0] != "passkey-counter-replayed" {
		t.Fatalf("replayed counter %+v", r)
	}
	a.Counter = 5
	if r = passkeyProof(t, f, st2, a); !r.Passed {
		t.Fatalf("a fresh attempt with a counting authenticator %+v", r)
	}
}

func TestPasskeyWithoutUserVerificationFails(t *testing.T) {
	f := mustPasskeyFixture(t)
	a := journeystest.New(pageOrigin)
	a.UV = false
	st := f.start(t, StartRequest{JourneyKey: "device", SubjectID: "user-1", Action: "pay", OperationReference: "op-1"})
	r := passkeyProof(t, f, st, a)
	if r.Passed || r.Status != StatusFailed {
		t.Fatalf("no user verification %+v", r)
	}
	if len(f.store.Catalog().PasskeysOf("ws1", subjectHash(f.ws, "user-1"))) != 0 {
		t.Fatal("a passkey registered without user verification")
	}
}

func TestPasskeyFromAnotherOriginFails(t *testing.T) {
	f := mustPasskeyFixture(t)
	a := journeystest.New("https://evil.example.net")
	st := f.start(t, StartRequest{JourneyKey: "device", SubjectID: "user-1", Action: "pay", OperationReference: "op-1"})
	if r := passkeyProof(t, f, st, a); r.Passed {
		t.Fatalf("another origin %+v", r)
	}
}

func TestPasskeyNeedsASiteHostnameCoveringThePage(t *testing.T) {
	f := mustPasskeyFixture(t)
	f.m.WithPasskeys("https://trustd.other.net")
	st := f.start(t, StartRequest{JourneyKey: "device", SubjectID: "user-1", Action: "pay", OperationReference: "op-1"})
	if _, err := f.m.BeginPasskey(context.Background(), st.PersonToken); !errors.Is(err, ErrMethodUnavailable) {
		t.Fatalf("err %v", err)
	}
}

// The page hands the proof only to the starting site's origins, never "*".
func TestPersonViewNamesTheSitesOriginsOnly(t *testing.T) {
	f := mustPasskeyFixture(t)
	st := f.start(t, StartRequest{JourneyKey: "device", SubjectID: "user-1", Action: "pay", OperationReference: "order-1"})
	v, err := f.m.Person(context.Background(), st.PersonToken)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://example", "https://shop.example"}; !slices.Equal(v.ReturnOrigins, want) {
		t.Fatalf("return origins %v, want %v", v.ReturnOrigins, want)
	}
}
