package api

import (
	"bytes"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	kernel "github.com/trustd/trustd/platform/http"
)

// trafficMemStore is a Store without Raft: commands apply in memory, in
// order, so handler benchmarks measure the handler and the actors only.
type trafficMemStore struct {
	mu  sync.Mutex
	cat atomic.Pointer[catalog.Catalog]
	idx uint64
}

func (m *trafficMemStore) Catalog() *catalog.Catalog { return m.cat.Load() }
func (m *trafficMemStore) Ready() bool               { return true }
func (m *trafficMemStore) Apply(_ context.Context, cmd catalog.Command) (any, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := catalog.Begin(m.cat.Load())
	v, err := cmd.Apply(tx)
	if err != nil {
		return nil, err
	}
	m.idx++
	m.cat.Store(tx.Commit(m.idx))
	return v, nil
}

// trafficBench is the traffic transport (newServer) over an in-memory
// store with one workspace and site, driven through its fasthttp handler
// without a network.
type trafficBench struct {
	s      *kernel.Server
	store  *trafficMemStore
	ws     string
	secret string
	ctx    fasthttp.RequestCtx
}

func newTrafficBench(tb testing.TB) *trafficBench {
	tb.Helper()
	st := &trafficMemStore{}
	st.cat.Store(catalog.Empty())
	sys := actors.NewSystem(actors.Config{Shards: 8}, nil)
	tb.Cleanup(sys.Stop)
	s := newServer(tb, st, sys)
	b := &trafficBench{s: s, store: st, ws: "ws-bench", secret: "sk_live_bench"}
	must := func(cmd catalog.Command) {
		if _, err := st.Apply(context.Background(), cmd); err != nil {
			tb.Fatal(err)
		}
	}
	now := time.Now().UTC()
	must(&catalog.AddSigningKey{Key: catalog.SigningKey{ID: "kbench", Purpose: catalog.KeyLive, Secret: bytes.Repeat([]byte{7}, 32), CreatedAt: now}})
	must(&catalog.CreateWorkspace{Workspace: catalog.Workspace{ID: b.ws, Name: "bench", Settings: catalog.DefaultSettings(), ScopeKey: bytes.Repeat([]byte{9}, 32)}})
	must(&catalog.CreateSite{Site: catalog.Site{ID: "site-bench", WorkspaceID: b.ws, Name: "bench", SiteKey: "site_bench",
		SecretHash: catalog.HashSecret(b.secret), Environment: catalog.EnvProduction, Hostnames: []string{"bench.example"}}})
	return b
}

// post runs one request through the handler and returns the status and body.
func (b *trafficBench) post(path string, body []byte) (int, []byte) {
	ctx := &b.ctx
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Request.Header.SetMethod("POST")
	ctx.Request.SetRequestURI(path)
	ctx.Request.Header.SetContentType("application/json")
	ctx.Request.Header.Set("Authorization", "Bearer "+b.secret)
	ctx.Request.SetBody(body)
	b.s.Handler()(ctx)
	return ctx.Response.StatusCode(), ctx.Response.Body()
}

// field extracts a string member from a flat JSON answer, as a client
// would, without the cost of decoding the whole answer.
func field(body []byte, name string) []byte {
	key := []byte(`"` + name + `":"`)
	i := bytes.Index(body, key)
	if i < 0 {
		return nil
	}
	rest := body[i+len(key):]
	return rest[:bytes.IndexByte(rest, '"')]
}

func BenchmarkLeaseAcquireRelease(b *testing.B) {
	tb := newTrafficBench(b)
	tb.ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	for _, k := range []catalog.ConcurrencyConstraint{
		{ID: "c1", Name: "workspace", Scope: catalog.ScopeWorkspace},
		{ID: "c2", Name: "per-subject", Scope: catalog.ScopeSubject},
	} {
		k.WorkspaceID, k.ActionPattern, k.Capacity, k.MinTTLMs, k.MaxTTLMs, k.DefaultTTLMs = tb.ws, "export.*", 1000, 100, 60_000, 30_000
		if _, err := tb.store.Apply(context.Background(), &catalog.PutConcurrencyConstraint{Constraint: k}); err != nil {
			b.Fatal(err)
		}
	}
	acquire := []byte(`{"action":"export.report","subject_id":"user-42"}`)
	release := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		st, body := tb.post("/v1/concurrency/acquire", acquire)
		tok := field(body, "lease_token")
		if st != 200 || tok == nil {
			b.Fatalf("acquire = %d %s", st, body)
		}
		release = append(release[:0], `{"action":"export.report","subject_id":"user-42","lease_token":"`...)
		release = append(release, tok...)
		release = append(release, `"}`...)
		if st, body := tb.post("/v1/concurrency/release", release); st != 200 || !bytes.Contains(body, []byte(`"released":true`)) {
			b.Fatalf("release = %d %s", st, body)
		}
	}
}

func BenchmarkAdmitFeedback(b *testing.B) {
	tb := newTrafficBench(b)
	tb.ctx.Init(&fasthttp.Request{}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, nil)
	d := catalog.Dependency{ID: "d1", WorkspaceID: tb.ws, Name: "payments", WindowSize: 100, MinimumCalls: 100,
		FailureRateThreshold: 0.5, OpenDurationMs: 60_000, HalfOpenProbes: 10, RetryRatio: 0.2, RetryMinPerSecond: 10,
		RetryTTLMs: 10_000, MaxConcurrent: 64, AdmissionTTLMs: 30_000}
	if _, err := tb.store.Apply(context.Background(), &catalog.PutDependency{Dependency: d}); err != nil {
		b.Fatal(err)
	}
	admit := []byte(`{"dependency":"payments"}`)
	fb := make([]byte, 0, 512)
	b.ReportAllocs()
	for b.Loop() {
		st, body := tb.post("/v1/dependency-resilience/admit", admit)
		tok := field(body, "admission_token")
		if st != 200 || tok == nil {
			b.Fatalf("admit = %d %s", st, body)
		}
		fb = append(fb[:0], `{"outcome":"success","latency_ms":12,"admission_token":"`...)
		fb = append(fb, tok...)
		fb = append(fb, `"}`...)
		if st, body := tb.post("/v1/dependency-resilience/feedback", fb); st != 200 {
			b.Fatalf("feedback = %d %s", st, body)
		}
	}
}
