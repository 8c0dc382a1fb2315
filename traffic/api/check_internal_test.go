package api

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/lib/jsonstrict"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

func TestCheckBeforeTheCatalogIsLoadedIsUnavailable(t *testing.T) {
	f := mustNewFixture(t)
	var ctx fasthttp.RequestCtx
	f.store.setReady(false) // a leader election: the loaded catalog still answers
	f.call(&ctx, "/v1/rate-limit/check", f.secret, `{"action":"a"}`)
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("a node without a known leader but with its catalog refused a check: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	f.store.setCatalog(catalog.Empty()) // never loaded
	f.call(&ctx, "/v1/rate-limit/check", f.secret, `{"action":"a"}`)
	if ctx.Response.StatusCode() != 503 || string(ctx.Response.Body()) != `{"success":false,"error":"rate-limiting-unavailable"}` {
		t.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

// The check's refusals keep the spec's {success:false,error} shape and
// still carry the request id the transport gives every answer.
func TestCheckRefusalsKeepTheSpecShapeAndTheRequestID(t *testing.T) {
	f := mustNewFixture(t)
	var ctx fasthttp.RequestCtx
	for _, tc := range []struct {
		name, bearer, body, want string
		status                   int
	}{
		{"no secret", "", `{"action":"a"}`, "missing-input-secret", 400},
		{"an unknown secret", "sk_live_nope", `{"action":"a"}`, "invalid-input-secret", 400},
		{"a member the check does not define", f.secret, `{"action":"a","platform":"android"}`, "unknown-field", 400},
		{"a body that is not JSON", f.secret, `{"action":`, "malformed-json", 400},
		{"a cost of the wrong type", f.secret, `{"action":"a","cost":"3"}`, "invalid-cost", 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx.Request.Header.Set("X-Request-Id", "corr-"+tc.want)
			f.call(&ctx, "/v1/rate-limit/check", tc.bearer, tc.body)
			if got := string(ctx.Response.Body()); ctx.Response.StatusCode() != tc.status || got != `{"success":false,"error":"`+tc.want+`"}` {
				t.Fatalf("%d %s", ctx.Response.StatusCode(), got)
			}
		})
	}
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI("/v1/rate-limit/check")
	ctx.Request.Header.Set("X-Request-Id", "corr-7")
	ctx.Request.SetBodyString(`{"action":"a"}`)
	f.s.Handler()(&ctx)
	if ctx.Response.StatusCode() != 400 || string(ctx.Response.Header.Peek("X-Request-Id")) != "corr-7" {
		t.Fatalf("%d %q", ctx.Response.StatusCode(), ctx.Response.Header.Peek("X-Request-Id"))
	}
}

// The outcomes the check counts are its decisions, in the order of
// ratelimit.Decision.
func TestCheckOutcomesAreItsDecisions(t *testing.T) {
	for _, d := range []ratelimit.Decision{ratelimit.Allow, ratelimit.Throttle, ratelimit.Reject} {
		if rlOutcomes[d] != kernel.OutcomeOf(d.String()) || rlOutcomes[d] == kernel.OutcomeOf("other") {
			t.Errorf("decision %s counts as outcome %d", d, rlOutcomes[d])
		}
	}
}

// The rate-limit check authenticates through the catalog's cache of
// matched secrets: a rotation, a revocation and a deletion take effect
// at the next request exactly as without it.
func TestCheckSecretRotationAndDeletionTakeEffectAtOnce(t *testing.T) {
	f := mustNewFixture(t)
	var ctx fasthttp.RequestCtx
	check := func(secret string) string {
		f.call(&ctx, "/v1/rate-limit/check", secret, `{"action":"a"}`)
		if ctx.Response.StatusCode() == 200 {
			return "ok"
		}
		return string(ctx.Response.Body())
	}
	apply := func(cmd catalog.Command) { t.Helper(); f.apply(t, cmd) }
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
	var o jsonstrict.Flat
	b.ReportAllocs()
	for b.Loop() {
		if err := o.Scan(body); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < o.Len(); i++ {
			if name, _, _ := o.Member(i); rlFieldIndex(name, false) < 0 {
				b.Fatal(string(name))
			}
		}
	}
}

// benchCheck measures one full check (routing, auth, ingress, policy
// match, actor round trips, answer) through the handler in memory.
func benchCheck(b *testing.B, policies int) {
	benchCheckWith(b, policies, kernel.Config{BaseURL: "http://test"})
}

// benchCheckWith is benchCheck over a transport built with cfg.
func benchCheckWith(b *testing.B, policies int, cfg kernel.Config) {
	benchCheckAs(b, policies, cfg, false)
}

// benchCheckAs is benchCheckWith, the checks asking for the routing hint
// when routing is set.
func benchCheckAs(b *testing.B, policies int, cfg kernel.Config, routing bool) {
	benchCheckRun(b, policies, cfg, routing, false)
}

// benchCheckRun is benchCheckAs; with written, each answer is also
// serialised as the server writes it (status line, headers, body), so
// the figure includes what the headers cost on the way out, as the bare
// server's BenchmarkHandlerWritten (test/bench/baseline/server) does.
func benchCheckRun(b *testing.B, policies int, cfg kernel.Config, routing, written bool) {
	var ps []catalog.RateLimitPolicy
	for i := 0; i < policies; i++ {
		p := testPolicy("bbbbbbbb-0000-4000-8000-00000000000"+string(rune('1'+i)), []string{"payment.*", "*", "payment.card"}[i], []string{"subject", "workspace", "device"}[i], 1<<40)
		p.Bucket.RefillAmount = 1 << 40
		p.Bucket.RefillIntervalSeconds = 1
		ps = append(ps, p)
	}
	f := mustNewFixtureWith(b, cfg, ps...)
	body := `{"action":"payment.card","subject_id":"user-42","device_id":"dev-7","route":"/pay"}`
	var ctx fasthttp.RequestCtx
	f.call(&ctx, "/v1/rate-limit/check", f.secret, body)
	if ctx.Response.StatusCode() != 200 || !strings.Contains(string(ctx.Response.Body()), `"decision":"allow"`) {
		b.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	call := f.call
	if routing {
		call = f.callRouted
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		call(&ctx, "/v1/rate-limit/check", f.secret, body)
		if written {
			if _, err := ctx.Response.WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	if ctx.Response.StatusCode() != 200 {
		b.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

func BenchmarkRateLimitCheckOnePolicy(b *testing.B)     { benchCheck(b, 1) }
func BenchmarkRateLimitCheckThreePolicies(b *testing.B) { benchCheck(b, 3) }

// BenchmarkRateLimitCheckWritten* are the checks with their answers
// serialised as on the wire (the server's write path without the
// syscall): compare with the bare server's BenchmarkHandlerWritten.
func BenchmarkRateLimitCheckWrittenOnePolicy(b *testing.B) {
	benchCheckRun(b, 1, kernel.Config{BaseURL: "http://test"}, false, true)
}
func BenchmarkRateLimitCheckWrittenThreePolicies(b *testing.B) {
	benchCheckRun(b, 3, kernel.Config{BaseURL: "http://test"}, false, true)
}

// BenchmarkRateLimitCheckRoutingHint is the check asked for its partition
// hint (X-Trustd-Routing: 1, ring.go).
func BenchmarkRateLimitCheckRoutingHint(b *testing.B) {
	benchCheckAs(b, 1, kernel.Config{BaseURL: "http://test"}, true)
}
