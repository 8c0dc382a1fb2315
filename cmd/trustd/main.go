// Command trustd runs one node of the trustd Trust and Verification service.
//
//	go run ./cmd/trustd --dev
//
// starts a single node with embedded storage in ./data and prints a ready
// dev workspace. Every flag can also be set as TRUSTD_<FLAG> (dashes become
// underscores), e.g. TRUSTD_HTTP_ADDR=0.0.0.0:8080.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trustd/trustd/node"
)

// usageHead starts --help: what the command does, the ports a node takes
// and where the flags' environment variables come from.
const usageHead = `usage: trustd [flags]

Runs one node of trustd. "trustd --dev" starts a single node with embedded
storage in ./data and prints a dev workspace. A node listens on five ports:
the API (--http-addr, 127.0.0.1:8080), ops: metrics, health, pprof
(--ops-addr, 127.0.0.1:9090), gossip (--gossip-addr, 127.0.0.1:7946, TCP and
UDP), peer forwarding (--peer-addr, 127.0.0.1:8090) and Raft (--raft-addr,
127.0.0.1:8300); a second node on the same machine needs five other ports.
Every flag is also an environment variable TRUSTD_<FLAG>
(--http-addr: TRUSTD_HTTP_ADDR). Secrets come from the environment only:
TRUSTD_ADMIN_TOKEN, TRUSTD_CLUSTER_KEY, TRUSTD_FACE_ENGINE_SECRET.

flags:
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "trustd:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("trustd", flag.ContinueOnError)
	var cfg node.Config
	var logFormat, logLevel string
	fs.StringVar(&cfg.DataDir, "data-dir", "data", "directory for the Raft log, snapshots and secrets")
	fs.StringVar(&cfg.HTTPAddr, "http-addr", "127.0.0.1:8080", "API listen address")
	fs.StringVar(&cfg.OpsAddr, "ops-addr", "127.0.0.1:9090", "metrics, health and pprof listen address (empty: off)")
	fs.StringVar(&cfg.NodeID, "node-id", "", "stable node id (default: the one --tls-cert names, else generated once and kept in the data dir); a node's certificate must name it")
	fs.StringVar(&cfg.RaftAddr, "raft-addr", "127.0.0.1:8300", "Raft listen address")
	fs.StringVar(&cfg.BaseURL, "base-url", "", "public base URL announced to clients (default: http://<http-addr>)")
	fs.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.BoolVar(&cfg.Dev, "dev", false, "seed a dev workspace on first start and serve the demo page")
	fs.StringVar(&cfg.ConsoleSiteID, "console-site", os.Getenv("TRUSTD_CONSOLE_SITE"), "site id whose widget protects the console login when not --dev (its hostnames must include the console's host; unset: console login closed in production)")
	fs.IntVar(&cfg.IngressIPRate, "ingress-ip-rate", 100000, "requests per second one client IP may send this node (0: off)")
	fs.IntVar(&cfg.IngressCredRate, "ingress-credential-rate", 50000, "default requests per second per credential (0: off; workspaces may override)")
	fs.IntVar(&cfg.MaxBodyBytes, "max-body-bytes", 1<<20, "request body size limit")
	fs.IntVar(&cfg.MaxConns, "max-conns", 0, "API connections served at once; beyond it new ones get 503 and are closed (0: 3/4 of the file-descriptor limit)")
	fs.IntVar(&cfg.MaxConnsPerIP, "max-conns-per-ip", 0, "API connections from one client address (0: half of --max-conns; raise it behind a load balancer)")
	fs.DurationVar(&cfg.IdleTimeout, "idle-timeout", 60*time.Second, "close API keep-alive connections idle this long")
	fs.IntVar(&cfg.MaxKeysPerTable, "max-keys-per-table", 0, "keys each actor table of each shard may hold (markers, buckets, …); past it new keys fail closed with 503 (0: 1048576)")
	fs.IntVar(&cfg.Shards, "shards", 0, "shard actors on this node (default 8)")
	fs.DurationVar(&cfg.AskTimeout, "ask-timeout", 500*time.Millisecond, "bound on every ask of per-key state, local or forwarded; past it operations take their degraded behaviour")
	var join string
	fs.StringVar(&join, "join", "", "gossip addresses of existing members, host:port[,host:port]; empty: found a new cluster (or rejoin the remembered one)")
	fs.StringVar(&cfg.ClusterName, "cluster-name", "trustd", "cluster name; nodes of differently named clusters never merge")
	fs.StringVar(&cfg.GossipAddr, "gossip-addr", "127.0.0.1:7946", "memberlist bind address (TCP and UDP)")
	fs.StringVar(&cfg.AdvertiseGossip, "advertise-gossip-addr", "", "gossip address other nodes dial (default: --gossip-addr)")
	fs.StringVar(&cfg.PeerAddr, "peer-addr", "127.0.0.1:8090", "cluster-internal forwarding listen address")
	fs.StringVar(&cfg.AdvertisePeer, "advertise-peer-addr", "", "forwarding address other nodes dial (default: --peer-addr)")
	fs.StringVar(&cfg.AdvertiseRaft, "advertise-raft-addr", "", "Raft address other nodes dial (default: --raft-addr)")
	fs.StringVar(&cfg.AdvertiseHTTP, "advertise-http-addr", "", "API address shown to operators (default: --http-addr)")
	fs.StringVar(&cfg.TLSFiles.CA, "tls-ca", "", "cluster CA certificate (PEM) for mutual TLS between nodes (trustctl tls ca create; unset on a node alone: it makes its own in <data-dir>/local-credentials)")
	fs.StringVar(&cfg.TLSFiles.Cert, "tls-cert", "", "this node's certificate (PEM), issued by the cluster CA for this node's id (trustctl tls cert create --node <id>)")
	fs.StringVar(&cfg.TLSFiles.Key, "tls-key", "", "this node's private key (PEM)")
	fs.BoolVar(&cfg.Webhooks.AllowPrivate, "webhooks-allow-private-targets", false, "let webhook endpoints be private, loopback, link-local or reserved addresses (SSRF guard off; only for receivers on your own network)")
	fs.StringVar(&cfg.PasswordsDir, "passwords-dir", "", "breached-password corpus files from trustctl passwords import (default: <data-dir>/passwords; without them the embedded default list answers)")
	fs.StringVar(&cfg.Face.URL, "face-engine-url", "", "face engine sidecar (identity/face/sidecar) to use, http://127.0.0.1:PORT; its shared secret comes from TRUSTD_FACE_ENGINE_SECRET or --face-engine-secret-file (empty: facial checks fail closed)")
	var faceSecretFile string
	fs.StringVar(&faceSecretFile, "face-engine-secret-file", "", "file holding the face engine's shared secret (default: TRUSTD_FACE_ENGINE_SECRET)")
	fs.StringVar(&cfg.FaceSidecarDir, "face-engine-sidecar", "", "identity/face/sidecar folder (installed with its setup.sh): the node starts the face engine itself with a generated secret and restarts it if it dies (instead of --face-engine-url)")
	fs.Float64Var(&cfg.Face.MatchThreshold, "face-match-threshold", 0, "cosine similarity at which two faces match (0: the built-in default; UNCALIBRATED, see identity/face/DESIGN.md)")
	fs.DurationVar(&cfg.Face.Timeout, "face-engine-timeout", 15*time.Second, "bound on one face analysis, queueing in the sidecar included")
	fs.DurationVar(&cfg.ReapAfter, "reap-after", 10*time.Minute, "how long a failed node stays a Raft member before the leader removes it")
	if err := applyEnv(fs); err != nil {
		return err
	}
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
	}
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			fs.SetOutput(os.Stdout) // asked for: the usage is the answer, on stdout
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil // --help: the usage is printed, and asking for it is no failure
		}
		return err
	}
	cfg.AdminToken = os.Getenv("TRUSTD_ADMIN_TOKEN")
	// OpenTelemetry traces: on only when the standard OTEL_* variables ask
	// for them (docs/observability.md).
	cfg.Tracing.Getenv = os.Getenv
	// The cluster key is a secret: environment only, never a flag that
	// shows in the process list.
	cfg.ClusterKey = os.Getenv("TRUSTD_CLUSTER_KEY")
	// The face engine's secret likewise: environment or a file.
	cfg.Face.Secret = os.Getenv("TRUSTD_FACE_ENGINE_SECRET")
	if faceSecretFile != "" {
		b, err := os.ReadFile(faceSecretFile)
		if err != nil {
			return fmt.Errorf("--face-engine-secret-file: %w", err)
		}
		cfg.Face.Secret = strings.TrimSpace(string(b))
	}
	for _, a := range strings.Split(join, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Join = append(cfg.Join, a)
		}
	}
	logger, err := newLogger(logFormat, logLevel)
	if err != nil {
		return err
	}
	cfg.Logger = logger

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	n, err := node.Start(startCtx, cfg)
	cancel()
	if err != nil {
		return err
	}
	if d := n.Dev(); d != nil {
		printDev(d, cfg.DataDir)
	}
	select {
	case <-ctx.Done():
		// SIGTERM or SIGINT: leave the cluster gracefully (drain, hand
		// off, leave gossip and Raft), then stop.
		leaveCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		if err := n.Leave(leaveCtx); err != nil {
			logger.Warn("graceful leave incomplete", "err", err)
		}
		cancel()
	case err := <-n.Done():
		if errors.Is(err, node.ErrLeft) {
			logger.Info("left the cluster")
		} else {
			logger.Error("listener stopped", "err", err)
		}
	}
	logger.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return n.Close(shutCtx)
}

// applyEnv sets every flag that has a TRUSTD_<NAME> variable.
func applyEnv(fs *flag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := "TRUSTD_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(name); ok && err == nil {
			if e := f.Value.Set(v); e != nil {
				err = fmt.Errorf("%s: %w", name, e)
			}
		}
	})
	return err
}

func newLogger(format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

func printDev(d *node.DevCredentials, dataDir string) {
	root := strings.TrimSuffix(d.APIBase, "/v1")
	fmt.Printf(`
trustd is running in dev mode. Your dev workspace (also in %s/dev-credentials.json):

  api_base          %s
  admin_token       %s   (admin API and console; trustctl reads it from %s/admin-token)
  workspace_id      %s   (the <id> of trustctl --workspace)
  site_key          %s   (the widget's data-sitekey)
  secret            %s   (the site's secret: $SECRET of /siteverify and the rate-limit check)
  sandbox_site_key  %s
  sandbox_secret    %s   (sandbox: POST /v1/sandbox/issue, then /v1/sandbox/siteverify)
  credential        %s   (a server credential, Authorization: Bearer, scopes site.verify, identity.document.verify, identity.verify)
  mobile_platform   %s
  mobile_app_id     %s
  mobile_secret     %s

Try:  curl -s %s/ | head
      open %s/demo      (tick the widget; the page shows the token, $TOKEN, and verifies it)
      open %s/console/   (the workspace console; log in with the admin_token)

`, dataDir, d.APIBase, d.AdminToken, dataDir, d.WorkspaceID, d.SiteKey, d.Secret, d.SandboxSiteKey, d.SandboxSecret,
		d.Credential, d.MobilePlatform, d.MobileAppID, d.MobileSecret, d.APIBase, d.APIBase, root)
}
