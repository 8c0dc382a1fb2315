package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/cluster/summary"
	"github.com/trustd/trustd/platform/telemetry"
)

// Version and contract revision of the API this server speaks.
const (
	ServiceName     = "trustd"
	APIVersion      = "v1"
	ContractVersion = "2026-08-08.3"
	// Build names this implementation's revision of the contract's
	// additions; it travels in X-Service-Build, so that
	// X-Service-Contract-Version is exactly the spec's revision.
	Build      = "trustd.3"
	PublicBase = "/v1"
	AdminBase  = "/admin/v1"
)

// Store is the durable state the server needs: the catalog to read from,
// and a way to change it through Raft.
type Store interface {
	Catalog() *catalog.Catalog
	Apply(ctx context.Context, cmd catalog.Command) (any, error)
	Ready() bool
}

// Config configures a Server.
type Config struct {
	// BaseURL is the public address clients use, e.g. http://127.0.0.1:8080.
	BaseURL string
	// AdminToken, when set, is accepted in addition to the catalog's.
	AdminToken string
	// MaxBodyBytes bounds every request body.
	MaxBodyBytes int
	// Ingress limits per client IP and per credential (requests per second
	// and burst); zero disables that limit.
	IngressIPRate, IngressIPBurst     int
	IngressCredRate, IngressCredBurst int
	// Dev serves the demo page and other conveniences of --dev.
	Dev bool
	// Tracing, when not nil, gives every routed request a server span
	// (trace.go); nil: tracing is off and requests pay one nil check.
	Tracing *telemetry.Tracing
	// DemoSite returns the dev site's key and secret for the demo page
	// (--dev); empty strings until the dev workspace is seeded.
	DemoSite func() (siteKey, secret string)
	// NodeID names this node in logs and headers.
	NodeID string
	// Cluster is asked for the members' counters and serves this node's
	// to them; nil outside a cluster.
	Cluster summary.Peers
	// MaxConns bounds the connections served at once (beyond it a new
	// connection is answered 503 with Retry-After and closed, so its
	// descriptor is freed at once); MaxConnsPerIP bounds one client
	// address the same way. Zero derives them from
	// the process's file-descriptor limit (3/4 of it, and half of that per
	// address), leaving descriptors for Raft, peers and storage.
	MaxConns, MaxConnsPerIP int
	// IdleTimeout closes keep-alive connections idle this long (default
	// 60s); ReadTimeout bounds reading one request, headers and body,
	// including a new connection's first (default 30s).
	IdleTimeout, ReadTimeout time.Duration
	// Clock is the server's clock (nil: time.Now); tests move it.
	Clock func() time.Time
	// Areas are the product areas' operations, each built by node/ from
	// the area's own adapter (for example risk/api) over modules node/
	// constructed.
	Areas []Area
}

// Server is the public and admin API of one node.
type Server struct {
	cfg     Config
	store   Store
	router  *cluster.Router
	log     *slog.Logger
	clock   func() time.Time
	table   *table
	fast    *fasthttp.Server
	metrics *metrics
	ingress *ingress
	reqSeq  atomic.Uint64
	fresh   freshConns // accepted, no request yet: closed at shutdown
	reqPfx  string
	// fixedHeaders are the common headers with constant values, pre-built.
	fixedHeaders [][2][]byte
	calls        sync.Pool
	mods         modules
	pages        []*Pages // the areas' browser pages (Area.Pages)
	reg          prometheus.Registerer
	// panics counts handler panics; acceptRetries accept errors survived.
	panics, acceptRetries atomic.Uint64
	// tracer is cfg.Tracing's tracer, nil when tracing is off.
	tracer trace.Tracer
}

// New builds a server over store and router. Modules keep their own state
// in s.mods; their constructors run here.
func New(cfg Config, store Store, router *cluster.Router, reg prometheus.Registerer, log *slog.Logger) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var pfx [4]byte
	_, _ = rand.Read(pfx[:])
	s := &Server{
		cfg: cfg, store: store, router: router, log: log, clock: time.Now, reg: reg,
		reqPfx:       hex.EncodeToString(pfx[:]),
		fixedHeaders: buildFixedHeaders(cfg.BaseURL),
		tracer:       cfg.Tracing.Tracer(),
	}
	if cfg.Clock != nil {
		s.clock = cfg.Clock
	}
	s.calls.New = func() any { return &Call{s: s} }
	s.ingress = newIngress(s.clock)
	s.mods = newModules(s)
	for _, a := range cfg.Areas {
		if a.Pages != nil {
			s.pages = append(s.pages, a.Pages)
		}
	}
	s.table = buildTable(s.routes())
	s.metrics = newMetrics(reg, s.table.routes)
	s.registerMetricsPeer()
	conns, _ := connLimits(cfg.MaxConns, cfg.MaxConnsPerIP)
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 60 * time.Second
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if reg != nil {
		reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "trustd_http_handler_panics_total",
				Help: "Requests whose handler panicked; each was answered 500 and logged."}, func() float64 { return float64(s.panics.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "trustd_http_accept_retries_total",
				Help: "Accept errors (such as running out of file descriptors) the API listener backed off from and survived."}, func() float64 { return float64(s.acceptRetries.Load()) }),
		)
	}
	s.fast = &fasthttp.Server{
		Handler:               s.serve,
		Name:                  ServiceName,
		MaxRequestBodySize:    s.table.maxBody(cfg.MaxBodyBytes),
		Concurrency:           conns + conns/8 + 8, // a backstop: the listener refuses past conns first
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           cfg.IdleTimeout,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
		ConnState:             s.fresh.state,
		ErrorHandler:          s.transportError,
		Logger:                fasthttpLogger{log},
	}
	return s
}

// Serve accepts connections on ln until Shutdown. Accept errors that pass
// (out of file descriptors) are retried with backoff, never fatal.
func (s *Server) Serve(ln net.Listener) error {
	total, perIP := connLimits(s.cfg.MaxConns, s.cfg.MaxConnsPerIP)
	return s.fast.Serve(&steadyListener{Listener: ln, log: s.log, retries: &s.acceptRetries, total: total, perIP: perIP, conns: map[netip.Addr]int{}})
}

// connLimits fills in the connection limits from the descriptor limit.
func connLimits(conns, perIP int) (int, int) {
	if conns <= 0 {
		conns = 1 << 18
		var rl syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err == nil && rl.Cur > 0 && rl.Cur < 1<<20 {
			conns = max(int(rl.Cur)*3/4, 16)
		}
	}
	if perIP <= 0 {
		perIP = max(conns/2, 1)
	}
	return conns, perIP
}

// Shutdown stops accepting, waits for in-flight requests, then returns.
//
// fasthttp closes idle keep-alive connections at shutdown but waits for a
// connection that was accepted and never sent a byte (an HTTP client's
// spare dial, a port scan) until its read timeout; such connections carry
// no request, so Shutdown closes them while it waits.
func (s *Server) Shutdown(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.fast.ShutdownWithContext(ctx) }()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		s.fresh.closeAll()
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("%w (%d connections still open)", err, s.fast.GetOpenConnectionsCount())
			}
			return nil
		case <-tick.C:
		}
	}
}

// freshConns are the connections accepted that have not started a
// request yet.
type freshConns struct {
	n  atomic.Int32 // len(m), read without the lock on the request path
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

// state is the server's ConnState hook.
func (f *freshConns) state(c net.Conn, st fasthttp.ConnState) {
	switch st {
	case fasthttp.StateNew:
		f.mu.Lock()
		if f.m == nil {
			f.m = map[net.Conn]struct{}{}
		}
		f.m[c] = struct{}{}
		f.n.Store(int32(len(f.m)))
		f.mu.Unlock()
	case fasthttp.StateActive, fasthttp.StateClosed, fasthttp.StateHijacked:
		if f.n.Load() == 0 {
			return
		}
		f.mu.Lock()
		delete(f.m, c)
		f.n.Store(int32(len(f.m)))
		f.mu.Unlock()
	}
}

func (f *freshConns) closeAll() {
	if f.n.Load() == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.m {
		c.Close()
		delete(f.m, c)
	}
	f.n.Store(0)
}

// Handler returns the request handler, for in-memory tests and benchmarks.
func (s *Server) Handler() fasthttp.RequestHandler { return s.serve }

// appendRequestID appends a new request id to dst: the node's random
// prefix, "-", and a sequence number in base 36.
func (s *Server) appendRequestID(dst []byte) []byte {
	return strconv.AppendUint(append(append(dst, s.reqPfx...), '-'), s.reqSeq.Add(1), 36)
}

type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	f.l.Debug("fasthttp", "msg", format, "args", args)
}

// transportError answers failures fasthttp detects before a handler runs
// (body too large, unparsable request) with a JSON body.
func (s *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	c := s.acquire(ctx, nil)
	defer s.release(c)
	c.commonHeaders()
	if _, ok := err.(*fasthttp.ErrSmallBuffer); ok {
		c.fail(ErrHeadersTooLarge, "request headers too large")
		return
	}
	if err == errAmbiguousFraming {
		c.fail(ErrBadRequest, "a request may not carry both Content-Length and Transfer-Encoding")
		return
	}
	if err == fasthttp.ErrBodyTooLarge {
		c.fail(ErrBodyTooLarge, "request body exceeds "+strconv.Itoa(s.table.maxBody(s.cfg.MaxBodyBytes))+" bytes")
		return
	}
	c.fail(ErrBadRequest, "malformed HTTP request")
}
