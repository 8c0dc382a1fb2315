package http

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/cluster"
)

// rlMemStore is an in-memory catalog for handler tests and benchmarks: the
// same commands as Raft applies, without the log.
type rlMemStore struct {
	mu    sync.Mutex
	cat   *catalog.Catalog
	ready bool
}

func (m *rlMemStore) Catalog() *catalog.Catalog {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cat
}
func (m *rlMemStore) Ready() bool { return m.ready }
func (m *rlMemStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := catalog.Begin(m.cat)
	v, err := cmd.Apply(tx)
	if err != nil {
		return nil, err
	}
	m.cat = tx.Commit(m.cat.Index + 1)
	return v, nil
}

type fixture struct {
	s      *Server
	store  *rlMemStore
	ws     *catalog.Workspace
	secret string
}

func mustNewFixture(t testing.TB, policies ...catalog.RateLimitPolicy) *fixture {
	t.Helper()
	return mustNewFixtureWith(t, Config{BaseURL: "http://test"}, policies...)
}

// mustNewFixtureWith is mustNewFixture over a server built with cfg.
func mustNewFixtureWith(t testing.TB, cfg Config, policies ...catalog.RateLimitPolicy) *fixture {
	t.Helper()
	sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
	t.Cleanup(sys.Stop)
	st := &rlMemStore{cat: catalog.Empty(), ready: true}
	ws := catalog.Workspace{ID: "11111111-1111-4111-8111-111111111111", Name: "w", Settings: catalog.DefaultSettings(), ScopeKey: []byte("k")}
	secret := "sk_live_test"
	site := catalog.Site{ID: "22222222-2222-4222-8222-222222222222", WorkspaceID: ws.ID, SiteKey: "site_x",
		SecretHash: catalog.HashSecret(secret), Environment: catalog.EnvProduction}
	must := func(_ any, err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.Apply(context.Background(), &catalog.CreateWorkspace{Workspace: ws}))
	must(st.Apply(context.Background(), &catalog.CreateSite{Site: site}))
	for _, p := range policies {
		p.WorkspaceID = ws.ID
		must(st.Apply(context.Background(), &catalog.CreateRateLimitPolicy{Policy: p}))
	}
	s := New(cfg, st, cluster.SingleNode("n1", sys, time.Second), nil, nil)
	return &fixture{s: s, store: st, ws: st.Catalog().Workspaces[ws.ID], secret: secret}
}

func testPolicy(id, pattern, scope string, capacity int64) catalog.RateLimitPolicy {
	return catalog.RateLimitPolicy{ID: id, Name: "p " + id[:4], Target: catalog.PolicyTarget{Type: catalog.TargetWorkspace},
		ActionPattern: pattern, Method: "*", Scope: scope,
		Bucket:      catalog.PolicyBucket{Capacity: capacity, RefillAmount: 1, RefillIntervalSeconds: 3600},
		DefaultCost: 1, Mode: "enforce", DegradedBehaviour: "fail_open", EnforcePercentage: 100}
}

// call runs one request through the server's handler in memory.
func (f *fixture) call(ctx *fasthttp.RequestCtx, path, body string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetContentType("application/json")
	ctx.Request.Header.Set("Authorization", "Bearer "+f.secret)
	ctx.Request.SetBodyString(body)
	f.s.serve(ctx)
}

func TestCheckBeforeTheCatalogIsLoadedIsUnavailable(t *testing.T) {
	f := mustNewFixture(t)
	var ctx fasthttp.RequestCtx
	f.store.ready = false // a leader election: the loaded catalog still answers
	f.call(&ctx, "/v1/rate-limit/check", `{"action":"a"}`)
	if ctx.Response.StatusCode() != 200 {
		t.Fatalf("a node without a known leader but with its catalog refused a check: %d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	f.store.cat = catalog.Empty() // never loaded
	f.call(&ctx, "/v1/rate-limit/check", `{"action":"a"}`)
	if ctx.Response.StatusCode() != 503 || string(ctx.Response.Body()) != `{"success":false,"error":"rate-limiting-unavailable"}` {
		t.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

func TestFlatObjectAcceptsWhatStrictJSONAccepts(t *testing.T) {
	tests := []struct {
		name string
		body string
		ok   bool
	}{
		{"an empty object", `{}`, true},
		{"whitespace around everything", " \t\n{ \"a\" : \"b\" , \"n\" : -1.5e+3 }\r\n", true},
		{"escapes in strings", `{"a":"\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"}`, true},
		{"booleans and null", `{"a":true,"b":false,"c":null}`, true},
		{"a leading zero", `{"a":01}`, false},
		{"a bare minus", `{"a":-}`, false},
		{"a dangling fraction", `{"a":1.}`, false},
		{"NaN", `{"a":NaN}`, false},
		{"single quotes", `{'a':1}`, false},
		{"a trailing comma", `{"a":1,}`, false},
		{"a raw control character in a string", "{\"a\":\"x\ty\"}", false},
		{"an unknown escape", `{"a":"\x"}`, false},
		{"a truncated literal", `{"a":tru}`, false},
		{"an array", `[]`, false},
		{"two objects", `{}{}`, false},
		{"nothing", ``, false},
	}
	var o flatObject
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := o.scan([]byte(tc.body))
			if (err == nil) != tc.ok {
				t.Fatalf("scan(%q) = %v, want ok=%v", tc.body, err, tc.ok)
			}
			if tc.ok {
				var v map[string]any
				if err := json.Unmarshal([]byte(tc.body), &v); err != nil {
					t.Fatalf("the reference decoder refuses what the scanner accepted: %v", err)
				}
			}
		})
	}
	if err := o.scan([]byte(`{"a":"\u00e9\ud83d\ude00"}`)); err != nil || string(o.members[0].val) != "é😀" {
		t.Fatalf("unescape: %v %q", err, o.members[0].val)
	}
}

func FuzzFlatObject(f *testing.F) {
	for _, s := range []string{`{"action":"a","cost":3}`, `{"a":"\u00e9"}`, `{"a":[1]}`, "{\"a\":\"\xff\"}", `{"a":1e5}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var o flatObject
		if o.scan(body) != nil {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(body, &v, json.RejectUnknownMembers(false)); err != nil {
			// The scanner may accept duplicate names (the handler refuses
			// them); anything else it accepts must be valid JSON.
			if !strings.Contains(err.Error(), "duplicate") {
				t.Fatalf("scanner accepted %q, reference refuses: %v", body, err)
			}
		}
	})
}

// benchCheck measures one full check (routing, auth, ingress, policy
// match, actor round trips, answer) through the handler in memory.
func benchCheck(b *testing.B, policies int) {
	benchCheckWith(b, policies, Config{BaseURL: "http://test"})
}

// benchCheckWith is benchCheck over a server built with cfg.
func benchCheckWith(b *testing.B, policies int, cfg Config) {
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
	f.call(&ctx, "/v1/rate-limit/check", body)
	if ctx.Response.StatusCode() != 200 || !strings.Contains(string(ctx.Response.Body()), `"decision":"allow"`) {
		b.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.call(&ctx, "/v1/rate-limit/check", body)
	}
	b.StopTimer()
	if ctx.Response.StatusCode() != 200 {
		b.Fatalf("%d %s", ctx.Response.StatusCode(), ctx.Response.Body())
	}
}

func BenchmarkRateLimitCheckOnePolicy(b *testing.B)     { benchCheck(b, 1) }
func BenchmarkRateLimitCheckThreePolicies(b *testing.B) { benchCheck(b, 3) }
