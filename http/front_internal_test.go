package http

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/catalog"
)

// The rate-limit check authenticates through the catalog's cache of
// matched secrets: a rotation, a revocation and a deletion take effect
// at the next request exactly as without it.
func TestCheckSecretRotationAndDeletionTakeEffectAtOnce(t *testing.T) {
	f := mustNewFixture(t)
	var ctx fasthttp.RequestCtx
	check := func(secret string) string {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/rate-limit/check")
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.Header.Set("Authorization", "Bearer "+secret)
		ctx.Request.SetBodyString(`{"action":"a"}`)
		f.s.serve(&ctx)
		if ctx.Response.StatusCode() == 200 {
			return "ok"
		}
		return string(ctx.Response.Body())
	}
	apply := func(cmd catalog.Command) {
		t.Helper()
		if _, err := f.store.Apply(context.Background(), cmd); err != nil {
			t.Fatal(err)
		}
	}
	const bad = `{"success":false,"error":"invalid-input-secret"}`
	site := f.store.Catalog().SiteBySecret(f.secret, time.Now())
	for range 2 { // the second is answered from the cache
		if got := check(f.secret); got != "ok" {
			t.Fatalf("valid secret: %s", got)
		}
		if got := check(f.secret + "x"); got != bad {
			t.Fatalf("wrong secret: %s", got)
		}
	}
	apply(&catalog.RotateSiteSecret{WorkspaceID: site.WorkspaceID, ID: site.ID, NewHash: catalog.HashSecret("sk_live_new"), GraceUntil: time.Now().Add(time.Hour)})
	for range 2 {
		if check(f.secret) != "ok" || check("sk_live_new") != "ok" {
			t.Fatal("during the grace period both secrets work")
		}
	}
	apply(&catalog.RotateSiteSecret{WorkspaceID: site.WorkspaceID, ID: site.ID, NewHash: catalog.HashSecret("sk_live_newer")})
	if got := check(f.secret); got != bad {
		t.Fatalf("the first secret after a second rotation: %s", got)
	}
	if got := check("sk_live_new"); got != bad {
		t.Fatalf("a secret revoked by a rotation without grace: %s", got)
	}
	if check("sk_live_newer") != "ok" {
		t.Fatal("the new secret")
	}
	apply(&catalog.DeleteSite{WorkspaceID: site.WorkspaceID, ID: site.ID})
	if got := check("sk_live_newer"); got != bad {
		t.Fatalf("a deleted site's secret: %s", got)
	}
}

// The request id: a new one is the node's prefix and a base-36 sequence,
// the same in the header and in an error body; a caller's well-formed one
// is kept, a malformed one replaced.
func TestRequestIDHeaderAndBody(t *testing.T) {
	f := mustNewFixture(t)
	var ctx fasthttp.RequestCtx
	do := func(id string) (string, string) {
		ctx.Request.Reset()
		ctx.Response.Reset()
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/rate-limit/check")
		if id != "" {
			ctx.Request.Header.Set("X-Request-Id", id)
		}
		ctx.Request.SetBodyString(`{"action":"a"}`) // no secret: an error
		f.s.serve(&ctx)
		return string(ctx.Response.Header.Peek("X-Request-Id")), string(ctx.Response.Body())
	}
	gen := regexp.MustCompile(`^` + f.s.reqPfx + `-[0-9a-z]+$`)
	h1, _ := do("")
	h2, _ := do("")
	if !gen.MatchString(h1) || !gen.MatchString(h2) || h1 == h2 {
		t.Fatalf("generated ids %q %q", h1, h2)
	}
	if h, _ := do("caller-id-1"); h != "caller-id-1" {
		t.Fatalf("caller's id %q", h)
	}
	if h, _ := do("bad id"); !gen.MatchString(h) {
		t.Fatalf("a malformed id was kept: %q", h)
	}
	if h, _ := do(strings.Repeat("a", 129)); !gen.MatchString(h) {
		t.Fatalf("an overlong id was kept: %q", h)
	}
	// An error answered through the common error shape carries the id in
	// its body too.
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("GET")
	ctx.Request.SetRequestURI("/v1/no-such-operation")
	ctx.Request.Header.Set("X-Request-Id", "corr-7")
	f.s.serve(&ctx)
	var e struct {
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(ctx.Response.Body(), &e, json.RejectUnknownMembers(false)); err != nil || e.RequestID != "corr-7" ||
		string(ctx.Response.Header.Peek("X-Request-Id")) != "corr-7" {
		t.Fatalf("%d %s %v", ctx.Response.StatusCode(), ctx.Response.Body(), err)
	}
}

// rlFieldIndex knows every member by its name, and the mobile ones only
// on the mobile check.
func TestRLFieldIndexKnowsEveryName(t *testing.T) {
	for i, n := range rlFieldNames {
		mobileOnly := i == rlFieldPlatform || i == rlFieldAppID
		if got := rlFieldIndex([]byte(n), true); got != i {
			t.Errorf("%s (mobile) → %d, want %d", n, got, i)
		}
		if got := rlFieldIndex([]byte(n), false); (mobileOnly && got != -1) || (!mobileOnly && got != i) {
			t.Errorf("%s → %d", n, got)
		}
	}
	for _, n := range []string{"", "Secret", "secret ", "secre", "extra"} {
		if rlFieldIndex([]byte(n), true) != -1 {
			t.Errorf("%q is not a member", n)
		}
	}
}

// BenchmarkRLParseBody is the check transport's body reading alone: the
// scan and the member lookup of parse.
func BenchmarkRLParseBody(b *testing.B) {
	body := []byte(`{"action":"payment.card","subject_id":"user-42","device_id":"dev-7","route":"/pay","secret":"sk_live_0123456789abcdef0123456789abcdef"}`)
	var o flatObject
	b.ReportAllocs()
	for b.Loop() {
		if err := o.scan(body); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < o.n; i++ {
			if rlFieldIndex(o.members[i].name, false) < 0 {
				b.Fatal(string(o.members[i].name))
			}
		}
	}
}
