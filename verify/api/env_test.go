package api

import (
	"context"
	"encoding/base64"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/verify"
	"github.com/trustd/trustd/verify/pow"
)

// memStore is a Store without Raft: commands are encoded and decoded as
// the log would, then applied in order. Handler tests and benchmarks use
// it so they need no disk and no leader election.
type memStore struct {
	mu  sync.Mutex
	cat atomic.Pointer[catalog.Catalog]
}

func (m *memStore) Catalog() *catalog.Catalog { return m.cat.Load() }
func (m *memStore) Ready() bool               { return true }
func (m *memStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	body, err := catalog.Encode(cmd)
	if err != nil {
		return nil, err
	}
	dec, err := catalog.Decode(cmd.Kind(), body)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur := m.cat.Load()
	tx := catalog.Begin(cur)
	v, err := dec.Apply(tx)
	if err != nil {
		return nil, err
	}
	m.cat.Store(tx.Commit(cur.Index + 1))
	return v, nil
}

// hvEnv is a server with the verify areas over a memStore and real shard
// actors, with a clock the test moves.
type hvEnv struct {
	t       testing.TB
	s       *kernel.Server
	serve   fasthttp.RequestHandler
	hv      *verify.Module
	areas   []kernel.Area
	store   *memStore
	sys     *actors.System
	now     atomic.Int64 // Unix ns
	site    *catalog.Site
	secret  string
	sbx     *catalog.Site
	sbxSec  string
	app     *catalog.MobileApp
	appSec  string
	origin  string
	ip      net.IP
	liveKey *token.Key
}

const testHost = "shop.example.com"

func mustNewHVEnv(t testing.TB) *hvEnv {
	t.Helper()
	e := &hvEnv{t: t, store: &memStore{}, origin: "https://" + testHost, ip: net.IPv4(203, 0, 113, 7)}
	e.store.cat.Store(catalog.Empty())
	e.now.Store(time.Date(2026, 8, 8, 12, 0, 0, 0, time.UTC).UnixNano())
	e.sys = actors.NewSystem(actors.Config{Shards: 4, SweepEvery: time.Hour}, func() int64 { return e.now.Load() })
	t.Cleanup(e.sys.Stop)
	router := cluster.SingleNode("n1", e.sys, time.Second)
	clock := func() time.Time { return time.Unix(0, e.now.Load()) }
	e.hv = verify.New(router, e.store, clock, verify.Config{})
	e.areas = Areas(Deps{Verify: e.hv})
	e.s = kernel.New(kernel.Config{BaseURL: "http://127.0.0.1:1", Clock: clock, Areas: e.areas}, e.store, router, nil, nil)
	e.serve = e.s.Handler()
	e.secret, e.sbxSec, e.appSec = kernel.NewSecret("sk_live_"), kernel.NewSecret("sk_sandbox_"), kernel.NewSecret("ms_")
	created := time.Unix(0, e.now.Load()).UTC()
	cmds := []catalog.Command{
		&catalog.AddSigningKey{Key: catalog.SigningKey{ID: "live1", Purpose: catalog.KeyLive, Secret: []byte("live-secret-live-secret-live-sec"), CreatedAt: created}},
		&catalog.AddSigningKey{Key: catalog.SigningKey{ID: "sbx1", Purpose: catalog.KeySandbox, Secret: []byte("sandbox-secret-sandbox-secret-sa"), CreatedAt: created}},
		&catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: "ws1", Name: "test", Settings: catalog.DefaultSettings(), ScopeKey: []byte("scope-key")}},
		&catalog.CreateSite{Site: catalog.Site{ID: "site-1", WorkspaceID: "ws1", SiteKey: "site_pub", SecretHash: catalog.HashSecret(e.secret),
			Hostnames: []string{testHost}, Environment: catalog.EnvProduction, ChallengeMode: catalog.ModeCheckbox,
			ScoreThreshold: 0.5, TokenTTLSeconds: 300, ChallengeDifficulty: 1}},
		&catalog.CreateSite{Site: catalog.Site{ID: "site-2", WorkspaceID: "ws1", SiteKey: "site_other", SecretHash: catalog.HashSecret("sk_other"),
			Hostnames: []string{"other.example.org"}, Environment: catalog.EnvProduction, ChallengeMode: catalog.ModeCheckbox,
			ScoreThreshold: 0.5, TokenTTLSeconds: 300, ChallengeDifficulty: 1}},
		&catalog.CreateSite{Site: catalog.Site{ID: "site-sbx", WorkspaceID: "ws1", SiteKey: "site_sandbox_pub", SecretHash: catalog.HashSecret(e.sbxSec),
			Environment: catalog.EnvSandbox, ChallengeMode: catalog.ModeCheckbox, ScoreThreshold: 0.5, TokenTTLSeconds: 300}},
		&catalog.CreateMobileApp{App: catalog.MobileApp{ID: "app-1", WorkspaceID: "ws1", Platform: "android", AppID: "com.example.app",
			SecretHash: catalog.HashSecret(e.appSec)}},
	}
	for _, cmd := range cmds {
		if _, err := e.store.Apply(context.Background(), cmd); err != nil {
			t.Fatal(err)
		}
	}
	e.refresh()
	e.liveKey = e.hv.Signer(e.store.Catalog(), catalog.KeyLive)
	return e
}

func (e *hvEnv) refresh() {
	cat := e.store.Catalog()
	e.site, e.sbx, e.app = cat.Sites["site-1"], cat.Sites["site-sbx"], cat.MobileApps["app-1"]
}

// patchSite changes the production site.
func (e *hvEnv) patchSite(p catalog.SitePatch) {
	e.t.Helper()
	if _, err := e.store.Apply(context.Background(), &catalog.UpdateSite{WorkspaceID: "ws1", ID: "site-1", Patch: p}); err != nil {
		e.t.Fatal(err)
	}
	e.refresh()
}

func (e *hvEnv) advance(d time.Duration) { e.now.Add(int64(d)) }

// resp is one in-memory answer.
type resp struct {
	status int
	header map[string]string
	body   []byte
}

func (r resp) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, r.body)
	}
	return m
}

// req describes one in-memory request.
type req struct {
	method, path, ctype string
	body                string
	headers             map[string]string
	ip                  net.IP
}

func (e *hvEnv) do(r req) resp {
	var fr fasthttp.Request
	if r.method == "" {
		r.method = "POST"
	}
	fr.Header.SetMethod(r.method)
	fr.SetRequestURI(r.path)
	fr.Header.SetHost("api.trustd.test")
	if r.ctype != "" {
		fr.Header.SetContentType(r.ctype)
	}
	for k, v := range r.headers {
		fr.Header.Set(k, v)
	}
	fr.SetBodyString(r.body)
	ip := r.ip
	if ip == nil {
		ip = e.ip
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&fr, &net.TCPAddr{IP: ip, Port: 40000}, nil)
	e.serve(&ctx)
	out := resp{status: ctx.Response.StatusCode(), header: map[string]string{}, body: append([]byte(nil), ctx.Response.Body()...)}
	for k, v := range ctx.Response.Header.All() {
		out.header[string(k)] = string(v)
	}
	return out
}

// postJSON posts v as JSON with the widget's Origin.
func (e *hvEnv) widget(path string, v any) resp {
	b, _ := json.Marshal(v)
	return e.do(req{path: path, ctype: "application/json", body: string(b), headers: browserFetch(e.origin)})
}

// browserFetch are the headers a browser's fetch() from the widget sends.
func browserFetch(origin string) map[string]string {
	return map[string]string{"Origin": origin, "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty", "Sec-Fetch-Site": "cross-site",
		"Accept-Language": "en-GB,en;q=0.9", "User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"}
}

// challenge asks for a challenge for action and returns the parsed answer.
func (e *hvEnv) challenge(action string) verify.ChallengeView {
	e.t.Helper()
	r := e.widget("/v1/challenge", map[string]any{"sitekey": "site_pub", "action": action, "cdata": "sess-1"})
	if r.status != 200 {
		e.t.Fatalf("challenge: %d %s", r.status, r.body)
	}
	var cv verify.ChallengeView
	if err := json.Unmarshal(r.body, &cv); err != nil {
		e.t.Fatal(err)
	}
	return cv
}

func solve(t testing.TB, cv verify.ChallengeView) string {
	t.Helper()
	salt, err := base64.RawURLEncoding.DecodeString(cv.Pow.Salt)
	if err != nil {
		t.Fatal(err)
	}
	n, ok := pow.Solve(salt, cv.Pow.Iterations, cv.Pow.Difficulty, 1<<22)
	if !ok {
		t.Fatal("no proof-of-work solution")
	}
	return n
}

// humanSignals look like a person.
func humanSignals() map[string]any {
	return map[string]any{"webdriver": false, "headless": false, "interaction": true, "elapsed_ms": 2500,
		"pointer_moves": 40, "keypresses": 3, "visible": true}
}

// tokenFor runs the whole widget flow and returns a response token.
func (e *hvEnv) tokenFor(action string, signals map[string]any) string {
	e.t.Helper()
	cv := e.challenge(action)
	e.advance(3 * time.Second)
	r := e.widget("/v1/challenge/redeem", map[string]any{"challenge": cv.Challenge, "nonce": solve(e.t, cv), "signals": signals})
	if r.status != 200 {
		e.t.Fatalf("redeem: %d %s", r.status, r.body)
	}
	var rv verify.RedeemView
	if err := json.Unmarshal(r.body, &rv); err != nil || !rv.Success || !strings.HasPrefix(rv.Token, token.LivePrefix) {
		e.t.Fatalf("redeem answer %s (%v)", r.body, err)
	}
	return rv.Token
}

// mint signs a live token directly, as a redeem would.
func (e *hvEnv) mint(mod func(*token.Response)) string {
	now := time.Unix(0, e.now.Load()).Unix()
	t := token.Response{ID: verify.RandomID(), SiteID: "site-1", Hostname: testHost, Action: "login", HasIP: true,
		IPHash: verify.IPHash(e.liveKey, e.ip.String()), Mode: token.ModeCheckbox, Score: 900, Issued: now, Expires: now + 300}
	if mod != nil {
		mod(&t)
	}
	return t.Sign(e.liveKey, token.LivePrefix)
}

// verify posts a form-encoded siteverify.
func (e *hvEnv) verify(path string, fields ...string) resp {
	var b strings.Builder
	for i := 0; i+1 < len(fields); i += 2 {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(fields[i] + "=" + urlEscape(fields[i+1]))
	}
	return e.do(req{path: path, ctype: "application/x-www-form-urlencoded", body: b.String()})
}

func urlEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&0xf]))
		}
	}
	return b.String()
}
