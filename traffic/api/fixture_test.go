package api

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/traffic/admission"
	"github.com/trustd/trustd/traffic/lease"
	"github.com/trustd/trustd/traffic/ratecheck"
)

// memStore is an in-memory catalog for handler tests and benchmarks: the
// same commands as Raft applies, without the log, so they measure the
// transport, the modules and the actors only.
type memStore struct {
	mu    sync.Mutex
	cat   *catalog.Catalog
	ready bool
}

func (m *memStore) Catalog() *catalog.Catalog {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cat
}
func (m *memStore) Ready() bool { return m.ready }
func (m *memStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
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

// setCatalog replaces the catalog (a node that never loaded one).
func (m *memStore) setCatalog(c *catalog.Catalog) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cat = c
}

// setReady sets what Ready answers (a leader election: false).
func (m *memStore) setReady(ready bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ready = ready
}

// fixture is the transport with only the traffic area, over an in-memory
// store and a single node's actors, driven through its fasthttp handler
// without a network; the modules are built as node/ builds them.
type fixture struct {
	s      *kernel.Server
	store  *memStore
	ws     *catalog.Workspace
	secret string
	router *cluster.Router
}

func mustNewFixture(t testing.TB, policies ...catalog.RateLimitPolicy) *fixture {
	t.Helper()
	return mustNewFixtureWith(t, kernel.Config{BaseURL: "http://test"}, policies...)
}

// mustNewFixtureWith is mustNewFixture over a transport built with cfg
// (its Areas are the traffic area's).
func mustNewFixtureWith(t testing.TB, cfg kernel.Config, policies ...catalog.RateLimitPolicy) *fixture {
	t.Helper()
	sys := actors.NewSystem(actors.Config{Shards: 4}, nil)
	t.Cleanup(sys.Stop)
	st := &memStore{cat: catalog.Empty(), ready: true}
	ws := catalog.Workspace{ID: "11111111-1111-4111-8111-111111111111", Name: "w", Settings: catalog.DefaultSettings(), ScopeKey: []byte("k")}
	secret := "sk_live_test"
	site := catalog.Site{ID: "22222222-2222-4222-8222-222222222222", WorkspaceID: ws.ID, SiteKey: "site_x",
		SecretHash: catalog.HashSecret(secret), Environment: catalog.EnvProduction, Hostnames: []string{"shop.example"}}
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
	s, r := newServerRouterWith(t, cfg, st, sys)
	return &fixture{s: s, store: st, ws: st.Catalog().Workspaces[ws.ID], secret: secret, router: r}
}

// apply runs cmd on the store.
func (f *fixture) apply(t testing.TB, cmd catalog.Command) {
	t.Helper()
	if _, err := f.store.Apply(context.Background(), cmd); err != nil {
		t.Fatal(err)
	}
}

// call runs one POST through the server's handler in memory, with bearer
// as Authorization: Bearer when it is not empty.
func (f *fixture) call(ctx *fasthttp.RequestCtx, path, bearer, body string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetContentType("application/json")
	if bearer != "" {
		ctx.Request.Header.Set("Authorization", "Bearer "+bearer)
	}
	ctx.Request.SetBodyString(body)
	f.s.Handler()(ctx)
}

// callRouted is call with the routing header (ring.go).
func (f *fixture) callRouted(ctx *fasthttp.RequestCtx, path, bearer, body string) {
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetContentType("application/json")
	ctx.Request.Header.Set(RoutingHeader, "1")
	if bearer != "" {
		ctx.Request.Header.Set("Authorization", "Bearer "+bearer)
	}
	ctx.Request.SetBodyString(body)
	f.s.Handler()(ctx)
}

// newServer is the transport with only the traffic area over st and the
// actors of a single node, its modules built as node/ builds them.
func newServer(t testing.TB, st kernel.Store, sys *actors.System) *kernel.Server {
	t.Helper()
	return newServerWith(t, kernel.Config{BaseURL: "http://test"}, st, sys)
}

// newServerWith is newServer with the transport configured by cfg.
func newServerWith(t testing.TB, cfg kernel.Config, st kernel.Store, sys *actors.System) *kernel.Server {
	t.Helper()
	s, _ := newServerRouterWith(t, cfg, st, sys)
	return s
}

// newServerRouterWith is newServerWith with the router it routes over.
func newServerRouterWith(t testing.TB, cfg kernel.Config, st kernel.Store, sys *actors.System) (*kernel.Server, *cluster.Router) {
	t.Helper()
	r := cluster.SingleNode("n1", sys, time.Second)
	rl := ratecheck.New(ratecheck.Config{Now: time.Now, Asker: r,
		Local: func(key string) bool { return r.Ring().OwnsLocally(cluster.Partition(key)) }})
	reg := prometheus.NewRegistry()
	reg.MustRegister(rl.Collector())
	areas := Areas(Deps{RateCheck: rl, Lease: lease.New(r, time.Now, nil), Admission: admission.New(r, time.Now), Router: r, NodeID: "n1", Ring: r})
	cfg.Areas = areas
	return kernel.New(cfg, st, r, reg, nil), r
}

func testPolicy(id, pattern, scope string, capacity int64) catalog.RateLimitPolicy {
	return catalog.RateLimitPolicy{ID: id, Name: "p " + id[:4], Target: catalog.PolicyTarget{Type: catalog.TargetWorkspace},
		ActionPattern: pattern, Method: "*", Scope: scope,
		Bucket:      catalog.PolicyBucket{Capacity: capacity, RefillAmount: 1, RefillIntervalSeconds: 3600},
		DefaultCost: 1, Mode: "enforce", DegradedBehaviour: "fail_open", EnforcePercentage: 100}
}
