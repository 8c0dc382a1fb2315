package http

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/cluster"
)

// Version and contract revision of the API this server speaks.
const (
	ServiceName     = "trustd"
	APIVersion      = "v1"
	ContractVersion = "2026-08-08.3+trustd.1"
	PublicBase      = "/v1"
	AdminBase       = "/admin/v1"
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
	// DemoSite returns the dev site's key and secret for the demo page
	// (--dev); empty strings until the dev workspace is seeded.
	DemoSite func() (siteKey, secret string)
	// NodeID names this node in logs and headers.
	NodeID string
	// Cluster serves the cluster admin operations; nil answers them as
	// unavailable.
	Cluster ClusterControl
	// SealKey derives the key that seals agents' HMAC secrets in the
	// catalog (the cluster key); AgentTolerance bounds signed requests'
	// timestamps both ways (0: 300 s).
	SealKey        string
	AgentTolerance time.Duration
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
	reqPfx  string
	// fixedHeaders are the common headers with constant values, pre-built.
	fixedHeaders [][2][]byte
	calls        sync.Pool
	mods         modules
	reg          prometheus.Registerer
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
	}
	s.calls.New = func() any { return &Call{s: s} }
	s.ingress = newIngress(s.clock)
	s.mods = newModules(s)
	s.table = buildTable(s.routes())
	s.metrics = newMetrics(reg, s.table.routes)
	s.fast = &fasthttp.Server{
		Handler:               s.serve,
		Name:                  ServiceName,
		MaxRequestBodySize:    cfg.MaxBodyBytes,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           120 * time.Second,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
		CloseOnShutdown:       true,
		ErrorHandler:          s.transportError,
		Logger:                fasthttpLogger{log},
	}
	return s
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error { return s.fast.Serve(ln) }

// Shutdown stops accepting, waits for in-flight requests, then returns.
func (s *Server) Shutdown(ctx context.Context) error { return s.fast.ShutdownWithContext(ctx) }

// Handler returns the request handler, for in-memory tests and benchmarks.
func (s *Server) Handler() fasthttp.RequestHandler { return s.serve }

// Metrics exposes the per-operation metrics to the ops listener.
func (s *Server) nextRequestID() string {
	return s.reqPfx + "-" + strconv.FormatUint(s.reqSeq.Add(1), 36)
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
	if err == fasthttp.ErrBodyTooLarge {
		c.fail(ErrBodyTooLarge, "request body exceeds "+strconv.Itoa(s.cfg.MaxBodyBytes)+" bytes")
		return
	}
	c.fail(ErrBadRequest, "malformed HTTP request")
}
