package node

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	nethttp "net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	brandingapi "github.com/trustd/trustd/console/branding/api"
	"github.com/trustd/trustd/identity/face"
	"github.com/trustd/trustd/identity/liveness"
	"github.com/trustd/trustd/identity/session"
	"github.com/trustd/trustd/journeys"
	"github.com/trustd/trustd/node/about"
	"github.com/trustd/trustd/node/ops"
	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/cluster/mtls"
	"github.com/trustd/trustd/platform/events"
	eventsapi "github.com/trustd/trustd/platform/events/api"
	api "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/persistence"
	"github.com/trustd/trustd/platform/telemetry"
	"github.com/trustd/trustd/platform/token"
	"github.com/trustd/trustd/risk/passwords"
)

// Config is everything a node is started with; cmd/trustd fills it from
// flags and the environment.
type Config struct {
	DataDir  string
	HTTPAddr string
	OpsAddr  string
	NodeID   string
	RaftAddr string
	// BaseURL overrides the public address announced in headers and the
	// contract (default: http://<HTTPAddr>).
	BaseURL string
	// AdminToken, when set (TRUSTD_ADMIN_TOKEN), is accepted as well as the
	// generated one.
	AdminToken string
	Dev        bool
	// ConsoleSiteID names the site whose widget protects the console's
	// login form when Dev is off (--console-site, TRUSTD_CONSOLE_SITE).
	ConsoleSiteID string
	Shards        int
	// Ingress limits per client IP and per credential (requests/second).
	IngressIPRate, IngressCredRate int
	MaxBodyBytes                   int
	// MaxConns and MaxConnsPerIP bound the API's connections (0: derived
	// from the file-descriptor limit); IdleTimeout closes idle keep-alive
	// connections (0: 60s).
	MaxConns, MaxConnsPerIP int
	// MaxKeysPerTable caps each actor table of each shard (0: the actors
	// package default); past it new keys fail closed (503).
	MaxKeysPerTable int
	IdleTimeout     time.Duration
	// FastRaft shortens Raft timeouts (tests on loopback).
	FastRaft bool
	// AskTimeout bounds every ask of per-key state, local or forwarded
	// (default 500ms); past it an operation takes its degraded behaviour.
	AskTimeout time.Duration
	Logger     *slog.Logger

	// Cluster settings. A node started without Join founds a cluster (it
	// bootstraps Raft when its data dir is new); with Join it joins the
	// members listed there. Empty addresses bind 127.0.0.1 on a free port.
	Join                    []string
	ClusterName, ClusterKey string
	GossipAddr, PeerAddr    string
	// Advertise* are the addresses other nodes dial, when they differ from
	// the bound ones (containers, NAT).
	AdvertiseGossip, AdvertisePeer, AdvertiseRaft, AdvertiseHTTP string
	// ReapAfter is how long a failed node stays a Raft member.
	ReapAfter time.Duration
	// TLSFiles are the cluster CA certificate and this node's certificate
	// and key (trustctl tls …; the certificate names the node id); TLS,
	// when set, is used instead (tests). Raft and peer forwarding always
	// run over mutual TLS: a node given neither makes local credentials
	// that trust it alone (credentials.go). A node refuses to start with
	// an internal listener on a non-loopback address unless it was given
	// both mutual TLS and a cluster key, and refuses to join a cluster
	// without them.
	TLSFiles mtls.Files
	TLS      *mtls.Config
	// Webhooks tunes webhook delivery (events.Config); the node sets its
	// SealKey from ClusterKey, and --dev allows loopback targets.
	Webhooks events.Config
	// PasswordsDir holds the breached-password corpus files written by
	// trustctl passwords import (default <DataDir>/passwords); a mode
	// without a file is answered from the embedded default corpus.
	PasswordsDir string
	// Face is the face engine sidecar to use (identity/face: loopback URL,
	// shared secret, uncalibrated match threshold); FaceSidecarDir, when
	// set instead, is a identity/face/sidecar folder the node starts and supervises
	// itself with a generated secret. Neither: facial checks fail closed.
	Face           face.Config
	FaceSidecarDir string
	// Liveness tunes the presence check (uncalibrated defaults when zero;
	// the node sets its Engine). Tests driving the fake camera lower the
	// thresholds, see identity/face/DESIGN.md.
	Liveness liveness.Config
	// Identity tunes identity verification sessions; FaceEngine, Presence
	// and FaceMatch are the facial checks (nil: standard and high sessions
	// fail closed with face-engine-unavailable).
	Identity   session.Config
	FaceEngine face.Engine
	Presence   session.Presence
	FaceMatch  session.Matcher
	// Tracing turns on OpenTelemetry traces over OTLP/HTTP when its
	// environment asks for them (telemetry.Enabled: an OTEL_EXPORTER_OTLP_
	// endpoint is set); zero: off. cmd/trustd passes os.Getenv.
	Tracing telemetry.Config
}

// ErrLeft is reported on Done after the node left the cluster at an
// operator's request; the process should then exit.
var ErrLeft = errors.New("node: left the cluster")

// Node is a running trustd node.
type Node struct {
	cfg      Config
	log      *slog.Logger
	store    *persistence.Store
	actors   *actors.System
	router   *cluster.Router
	trans    *cluster.Transport
	cluster  *cluster.Cluster
	api      *api.Server
	journeys *journeys.Module
	apiLn    net.Listener
	ops      *nethttp.Server
	opsLn    net.Listener
	adminTok string
	// dev is set once the dev workspace is seeded, while the API already
	// serves (the seeding goes through it).
	dev    atomic.Pointer[DevCredentials]
	served chan error
	// webhooks delivers while this node leads Raft; stopWebhooks ends its
	// loop and webhooksDone closes when it has returned.
	webhooks     *events.Outbox
	stopWebhooks context.CancelFunc
	webhooksDone chan struct{}
	// identityDone closes when the identity-event sweep has returned (it
	// stops with the webhooks loop).
	identityDone chan struct{}
	// passwords answers breached-password ranges from this node's corpus.
	passwords *passwords.Module
	// faceEng and liveness are the face engine and presence checker
	// (node/face.go); stopFace ends the sidecar supervisor.
	faceEng  *faceEngine
	liveness *liveness.Checker
	stopFace context.CancelFunc
	faceDone chan struct{}
	// tracing is the node's tracer provider; nil: tracing off.
	tracing *telemetry.Tracing
}

// Start opens the data dir and starts serving. It returns once the node is
// ready: Raft has a leader and the catalog is loaded.
func Start(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.DataDir == "" {
		cfg.DataDir = "data"
	}
	if err := checkFaceConfig(cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("node: data dir: %w", err)
	}
	// The data dir holds secrets (admin token, Raft snapshots with signing
	// keys): its owner only, even when an older version made it wider.
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("node: data dir: %w", err)
	}
	if cfg.RaftAddr == "" {
		cfg.RaftAddr = "127.0.0.1:8300"
	}
	if cfg.GossipAddr == "" {
		cfg.GossipAddr = "127.0.0.1:0"
	}
	if cfg.PeerAddr == "" {
		cfg.PeerAddr = "127.0.0.1:0"
	}
	internalKey, err := cfg.internalCredentials(time.Now())
	if err != nil {
		return nil, err
	}
	tracing, err := telemetry.New(ctx, cfg.Tracing, cfg.NodeID, api.ContractVersion+"+"+api.Build)
	if err != nil {
		return nil, fmt.Errorf("node: tracing: %w", err)
	}
	if tracing != nil {
		// Log lines written with a request's context name its trace.
		cfg.Logger = slog.New(telemetry.LogHandler(cfg.Logger.Handler()))
	}
	serverTLS, clientTLS := cfg.TLS.Server(), cfg.TLS.Client()
	founding := len(cfg.Join) == 0
	n := &Node{cfg: cfg, log: cfg.Logger, served: make(chan error, 3), tracing: tracing}
	n.store, err = persistence.Open(persistence.Config{DataDir: cfg.DataDir, NodeID: cfg.NodeID,
		BindAddr: cfg.RaftAddr, AdvertiseAddr: cfg.AdvertiseRaft, Bootstrap: founding, Fast: cfg.FastRaft, Logger: cfg.Logger,
		ServerTLS: serverTLS, ClientTLS: clientTLS})
	if err != nil {
		n.stopTracing()
		return nil, err
	}
	n.actors = actors.NewSystem(actors.Config{Shards: cfg.Shards, MaxKeysPerTable: cfg.MaxKeysPerTable, Logger: cfg.Logger}, nil)
	trans := cluster.NewTransport(internalKey, clientTLS)
	trans.SetNodeID(cfg.NodeID)
	n.trans = trans
	if cfg.AskTimeout <= 0 {
		cfg.AskTimeout = 500 * time.Millisecond
	}
	n.router = cluster.NewRouter(cluster.NewRing(0, nil, cfg.NodeID), n.actors, trans, cfg.AskTimeout)
	n.router.SetTracer(tracing.Tracer())
	n.apiLn, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		n.closeCore()
		return nil, fmt.Errorf("node: listen on %s: %w", cfg.HTTPAddr, err)
	}
	apiAddr := cfg.AdvertiseHTTP
	if apiAddr == "" {
		apiAddr = n.apiLn.Addr().String()
	}
	n.cluster, err = cluster.Start(cluster.Config{NodeID: cfg.NodeID, Name: cfg.ClusterName, Key: internalKey, ServerTLS: serverTLS,
		GossipAddr: cfg.GossipAddr, AdvertiseGossip: cfg.AdvertiseGossip, PeerAddr: cfg.PeerAddr, AdvertisePeer: cfg.AdvertisePeer,
		APIAddr: apiAddr, RaftAddr: n.store.RaftAddr(), Join: cfg.Join, PeersFile: filepath.Join(cfg.DataDir, "cluster-peers"),
		Version: api.ContractVersion + "+" + api.Build, ReapAfter: cfg.ReapAfter, Logger: cfg.Logger,
		Formats: cluster.Formats{Log: persistence.LogFormat, Snapshot: persistence.SnapshotFormat, Ask: cluster.AskFormat},
	}, n.router, trans, n.store)
	if err != nil {
		n.apiLn.Close()
		n.closeCore()
		return nil, err
	}
	n.store.SetForwarder(n.cluster)
	n.cluster.OnLeave(func() { n.served <- ErrLeft })
	fail := func(err error) (*Node, error) {
		n.apiLn.Close()
		n.closeCore()
		return nil, err
	}
	if err := n.store.WaitReady(ctx); err != nil {
		return fail(err)
	}
	if founding {
		err = n.bootstrapSecrets(ctx)
	} else {
		err = n.awaitCatalog(ctx)
	}
	if err != nil {
		return fail(err)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "admin-token")); err == nil {
		n.adminTok = strings.TrimSpace(string(b))
	}
	if err := n.cluster.SetReady(); err != nil {
		return fail(err)
	}

	pwDir := cfg.PasswordsDir
	if pwDir == "" {
		pwDir = filepath.Join(cfg.DataDir, "passwords")
	}
	if n.passwords, err = passwords.New(passwords.Config{Dir: pwDir, Log: cfg.Logger}); err != nil {
		return fail(fmt.Errorf("node: password corpus: %w", err))
	}

	base := n.publicBase()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(n.raftCollector(), n.opsCollector())
	whCfg := cfg.Webhooks
	whCfg.SealKey = cfg.ClusterKey
	whCfg.AllowLoopback = whCfg.AllowLoopback || cfg.Dev
	n.webhooks = events.New(whCfg, n.store, reg, cfg.Logger)
	whCtx, stopWebhooks := context.WithCancel(context.Background())
	n.stopWebhooks, n.webhooksDone = stopWebhooks, make(chan struct{})
	go func() {
		defer close(n.webhooksDone)
		n.webhooks.Run(whCtx)
	}()
	fe, presence, match := cfg.FaceEngine, cfg.Presence, cfg.FaceMatch
	if fe == nil && n.faceConfigured() {
		n.prepareFace()
		fe, presence, match = n.faceEng, n.liveness, n.faceMatch
	}
	hv, verifyAreas := n.newVerify()
	riskAreas, riskSignals, err := n.newRisk(hv)
	if err != nil {
		return fail(err)
	}
	sessions, identityAreas := n.newIdentity(strings.TrimRight(base, "/"), fe, presence, match)
	journeyAreas := n.newJourneys(strings.TrimRight(base, "/"), hv, riskSignals)
	trafficAreas := n.newTraffic(reg)
	agentAreas := n.newAgents()
	eventAreas := eventsapi.Areas(eventsapi.Deps{Outbox: n.webhooks})
	brandingAreas := brandingapi.Areas()
	ck := &kernelBridge{}
	consoleAreas := n.newConsole(strings.TrimRight(base, "/"), ck, hv)
	areas := slices.Concat(about.Areas(about.Deps{BaseURL: strings.TrimRight(base, "/"), NodeID: cfg.NodeID, Ready: n.store.Ready}),
		riskAreas, identityAreas, journeyAreas, trafficAreas, verifyAreas, agentAreas, eventAreas,
		brandingAreas, consoleAreas, n.newCatalogAdmin(), n.newOps(ck))
	ops.FitRestoreLimit(areas)
	n.api = api.New(api.Config{BaseURL: strings.TrimRight(base, "/"), AdminToken: cfg.AdminToken, Dev: cfg.Dev,
		NodeID: cfg.NodeID, MaxBodyBytes: cfg.MaxBodyBytes, DemoSite: n.demoSite,
		IngressIPRate: cfg.IngressIPRate, IngressIPBurst: cfg.IngressIPRate,
		IngressCredRate: cfg.IngressCredRate, IngressCredBurst: cfg.IngressCredRate,
		Cluster: n.cluster, MaxConns: cfg.MaxConns, MaxConnsPerIP: cfg.MaxConnsPerIP, IdleTimeout: cfg.IdleTimeout,
		Tracing: tracing,
		Areas:   areas,
	}, n.store, n.router, reg, cfg.Logger)
	ck.s.Store(n.api)
	// Journeys escalate into the identity review queue, exchange widget
	// tokens through the verify module, and run their facial methods on
	// the same presence check and matcher as identity sessions (the
	// node's face engine, or the configured ones).
	n.journeys.WithCases(sessions).
		WithHuman(journeyHuman{hv: hv, cat: n.store.Catalog})
	if presence != nil && match != nil {
		n.journeys.WithFace(presence, journeyMatchFunc(match), token.NewSealer(cfg.ClusterKey, "journey-face-template"))
	}
	n.identityDone = make(chan struct{})
	go func() {
		defer close(n.identityDone)
		n.sweepIdentity(whCtx, sessions, 30*time.Second, n.store.IsLeader)
	}()
	go func() { n.served <- n.api.Serve(n.apiLn) }()

	if cfg.OpsAddr != "" {
		if err := n.startOps(reg); err != nil {
			n.Close(context.Background())
			return nil, err
		}
	}
	if cfg.Dev && founding {
		dev, err := n.seedDev(ctx)
		if err != nil {
			n.Close(context.Background())
			return nil, fmt.Errorf("node: seed dev workspace: %w", err)
		}
		n.dev.Store(dev)
	} else if cfg.Dev {
		n.log.Info("--dev on a joining node: the dev workspace is the founding node's; not seeding another")
	}
	n.startFace()
	n.log.Info("node ready", "node_id", cfg.NodeID, "api", n.APIURL(), "ops", n.OpsAddr(), "data_dir", cfg.DataDir,
		"gossip", n.cluster.GossipAddr(), "peer", n.cluster.PeerAddr(), "raft", n.store.RaftAddr())
	return n, nil
}

// awaitCatalog waits until a joining node has received the cluster's
// configuration through Raft: the admin token and signing keys the
// founding node created are the first entries of every cluster's log.
func (n *Node) awaitCatalog(ctx context.Context) error {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		c := n.store.Catalog()
		if c.HasAdminToken && c.SigningKey(catalog.KeyLive) != nil && c.SigningKey(catalog.KeySandbox) != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node: the cluster's configuration has not arrived through raft: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// APIURL is the base address of the API listener.
func (n *Node) APIURL() string { return "http://" + n.apiLn.Addr().String() }

// OpsAddr is the address of the ops listener, or "".
func (n *Node) OpsAddr() string {
	if n.opsLn == nil {
		return ""
	}
	return n.opsLn.Addr().String()
}

// AdminToken is the admin token generated on first start.
func (n *Node) AdminToken() string { return n.adminTok }

// Dev returns the --dev credentials, or nil.
func (n *Node) Dev() *DevCredentials { return n.dev.Load() }

// Cluster is the node's cluster membership.
func (n *Node) Cluster() *cluster.Cluster { return n.cluster }

// Router is the node's router.
func (n *Node) Router() *cluster.Router { return n.router }

// Leave takes the node out of the cluster gracefully (drain, hand off,
// leave gossip and Raft). Close it afterwards. A node alone skips it.
func (n *Node) Leave(ctx context.Context) error {
	if len(n.cluster.Members()) <= 1 {
		return nil
	}
	return n.cluster.Leave(ctx)
}

// Store exposes the Raft store (tests, cluster tooling).
func (n *Node) Store() *persistence.Store { return n.store }

// Webhooks is the signed-webhooks module: emitters (identity sessions)
// call its Emit.
func (n *Node) Webhooks() *events.Outbox { return n.webhooks }

// bootstrapSecrets makes sure the cluster has an admin token and signing
// keys. Both are created once, by the first node, through Raft.
func (n *Node) bootstrapSecrets(ctx context.Context) error {
	path := filepath.Join(n.cfg.DataDir, "admin-token")
	cat := n.store.Catalog()
	if !cat.HasAdminToken {
		tok := api.NewSecret("adm_")
		if err := writeSecretFile(path, tok+"\n"); err != nil {
			return err
		}
		if _, err := n.store.Apply(ctx, &catalog.SetAdminToken{Hash: catalog.HashSecret(tok)}); err != nil {
			return fmt.Errorf("node: install admin token: %w", err)
		}
	}
	// Receipt keys are Ed25519: the 32 random bytes are the key's seed.
	for _, purpose := range []string{catalog.KeyLive, catalog.KeySandbox, catalog.KeyReceipt} {
		if n.store.Catalog().SigningKey(purpose) != nil {
			continue
		}
		secret := make([]byte, 32)
		_, _ = rand.Read(secret)
		now := time.Now().UTC()
		// The first keys sign at once: no other node exists to lag behind.
		k := catalog.SigningKey{ID: purpose[:1] + uuid.NewString()[:7], Purpose: purpose, Secret: secret, CreatedAt: now, ActiveFrom: now}
		if _, err := n.store.Apply(ctx, &catalog.AddSigningKey{Key: k}); err != nil {
			return fmt.Errorf("node: create %s signing key: %w", purpose, err)
		}
	}
	return nil
}

func (n *Node) startOps(reg *prometheus.Registry) error {
	ln, err := net.Listen("tcp", n.cfg.OpsAddr)
	if err != nil {
		return fmt.Errorf("node: ops listen on %s: %w", n.cfg.OpsAddr, err)
	}
	n.opsLn = ln
	mux := nethttp.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("/readyz", func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !n.store.Ready() {
			w.WriteHeader(nethttp.StatusServiceUnavailable)
			if n.store.Halted() != nil {
				_, _ = w.Write([]byte(`{"status":"not-ready","reason":"raft log entry of a newer format refused; upgrade this node"}`))
				return
			}
			_, _ = w.Write([]byte(`{"status":"not-ready","reason":"no raft leader or catalog not loaded"}`))
			return
		}
		_, _ = w.Write([]byte(`{"status":"ready"}`))
	})
	// Metrics and probes stay open to scrapers and kubelets; pprof shows
	// the command line and memory, so it answers loopback callers only, or
	// a caller that presents the admin token.
	mux.Handle("/debug/pprof/", n.opsPrivate(pprof.Index))
	mux.Handle("/debug/pprof/cmdline", n.opsPrivate(pprof.Cmdline))
	mux.Handle("/debug/pprof/profile", n.opsPrivate(pprof.Profile))
	mux.Handle("/debug/pprof/symbol", n.opsPrivate(pprof.Symbol))
	mux.Handle("/debug/pprof/trace", n.opsPrivate(pprof.Trace))
	n.ops = &nethttp.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := n.ops.Serve(ln); err != nil && !errors.Is(err, nethttp.ErrServerClosed) {
			n.served <- err
		}
	}()
	return nil
}

// opsPrivate admits a loopback caller, or one with the admin token.
func (n *Node) opsPrivate(h nethttp.HandlerFunc) nethttp.Handler {
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			h(w, r)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && n.store.Catalog().CheckAdminToken(tok) {
			h(w, r)
			return
		}
		if ok && n.cfg.AdminToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(n.cfg.AdminToken)) == 1 {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(nethttp.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"success":false,"error":"unauthorized","message":"pprof answers loopback callers or the admin token"}`))
	})
}

// Close shuts down gracefully: stop accepting, finish in-flight requests,
// snapshot the catalog, close the stores.
//
// Every step has a bound, so Close never waits for ever (issue 23): the
// listeners drain within ctx (drainBound when it has no deadline); the
// background loops (webhooks, identity
// sweeps, the face sidecar) get stepBound each; the core (cluster, shards,
// Raft) gets coreBound, inside which Raft has its own 10 s. A step that
// does not finish in its bound is logged, left behind, and Close returns
// ErrStopForced.
func (n *Node) Close(ctx context.Context) error {
	var errs []error
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, drainBound)
		defer cancel()
	}
	if n.api != nil {
		if err := n.api.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("api listener: %w", err))
		}
	}
	if n.ops != nil {
		if err := n.ops.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("ops listener: %w", err))
		}
	}
	if n.stopWebhooks != nil {
		// Attempts in flight are cancelled and not recorded: they stay due
		// for the next leader (at least once).
		n.stopWebhooks()
		errs = append(errs, n.stopStep("webhook delivery", stepBound, func() error { <-n.webhooksDone; return nil }))
		if n.identityDone != nil {
			errs = append(errs, n.stopStep("identity sweep", stepBound, func() error { <-n.identityDone; return nil }))
		}
	}
	errs = append(errs, n.stopStep("face sidecar", stepBound, func() error { n.closeFace(); return nil }))
	errs = append(errs, n.stopStep("cluster and raft", coreBound, n.closeCore))
	return errors.Join(errs...)
}

// Bounds of Close's steps: the listeners' drain when the caller's
// context has no deadline, then each step after it.
const (
	drainBound = 30 * time.Second
	stepBound  = 5 * time.Second
	coreBound  = 20 * time.Second
)

// ErrStopForced is returned by Close when a step of the stop did not
// finish within its bound and was left behind.
var ErrStopForced = errors.New("node: stop forced")

// stopStep runs one step of Close and waits up to bound for it.
func (n *Node) stopStep(name string, bound time.Duration, f func() error) error {
	done := make(chan error, 1)
	go func() { done <- f() }()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		n.log.Error("stop forced: a step did not finish within its bound and is left behind", "step", name, "bound", bound)
		return fmt.Errorf("%w: %s did not finish within %v", ErrStopForced, name, bound)
	}
}

func (n *Node) closeCore() error {
	if n.cluster != nil {
		n.cluster.Close()
	}
	if n.actors != nil {
		n.actors.Stop()
	}
	if n.passwords != nil {
		n.passwords.Close()
	}
	defer n.stopTracing()
	return n.store.Close()
}

// stopTracing exports the spans still buffered and stops the exporter,
// within telemetry.ShutdownTimeout; a failure is logged (the node's own
// work is done by then).
func (n *Node) stopTracing() {
	if n.tracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), telemetry.ShutdownTimeout)
	defer cancel()
	if err := n.tracing.Shutdown(ctx); err != nil {
		n.log.Warn("flushing traces at shutdown", "err", err)
	}
	n.tracing = nil
}

// Tracing is the node's tracer provider, nil when tracing is off (tests
// flush it).
func (n *Node) Tracing() *telemetry.Tracing { return n.tracing }

// Done reports a listener that stopped with an error.
func (n *Node) Done() <-chan error { return n.served }

func loadOrCreate(path string, mk func() string) (string, error) {
	if b, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	v := mk()
	if err := writeSecretFile(path, v+"\n"); err != nil {
		return "", err
	}
	return v, nil
}

func writeSecretFile(path, content string) error {
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("node: write %s: %w", path, err)
	}
	return nil
}
