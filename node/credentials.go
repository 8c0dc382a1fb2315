package node

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/cluster/mtls"
)

// LocalCredentialsDir is where, inside the data dir, a node that was given
// no certificate or no cluster key keeps those it made for itself
// (mtls.LoadOrCreateLocal; the key in the file cluster-key).
const LocalCredentialsDir = "local-credentials"

// internalCredentials settles what the node's internal listeners (Raft,
// peer forwarding, gossip) authenticate with, and binds the node id to the
// certificate. They are always authenticated, loopback included: any
// local process, or a server-side request forgery in any application on
// the host, reaches a loopback port.
//
//   - An operator's certificate (--tls-*) and key (TRUSTD_CLUSTER_KEY) are
//     used as given. The certificate must name this node's id (`trustctl
//     tls cert create --node <id>`); without --node-id the id is taken
//     from it.
//   - A node given neither (the quick start, a single production node)
//     makes its own at first start: a CA that vouches for this node alone
//     and a key for gossip and the peer token. Nobody else can become a
//     member of such a node's cluster, so a node that joins one (--join,
//     or a data dir that remembers peers) must be given both.
//
// It returns the key the cluster layer uses for gossip and peer tokens.
// cfg.ClusterKey itself is left as the operator gave it: it also derives
// the keys that seal secrets in the catalog, which a generated key must
// not change.
func (cfg *Config) internalCredentials(now time.Time) (string, error) {
	if cfg.TLS == nil && cfg.TLSFiles.Set() {
		c, err := mtls.Load(cfg.TLSFiles)
		if err != nil {
			return "", fmt.Errorf("node: cluster TLS: %w", err)
		}
		cfg.TLS = c
	}
	idFile := filepath.Join(cfg.DataDir, "node-id")
	if cfg.TLS != nil {
		certID := cfg.TLS.NodeID()
		if cfg.NodeID == "" {
			if b, err := os.ReadFile(idFile); err == nil && strings.TrimSpace(string(b)) != certID {
				return "", fmt.Errorf("node: the certificate names node %q but this data dir belongs to node %q: issue one with `trustctl tls cert create --node %s` or start with --node-id",
					certID, strings.TrimSpace(string(b)), strings.TrimSpace(string(b)))
			}
			cfg.NodeID = certID
		}
		if certID != cfg.NodeID {
			return "", fmt.Errorf("node: the certificate names node %q, not this node (%q): a node presents a certificate issued for its own id (`trustctl tls cert create --node %s`)",
				certID, cfg.NodeID, cfg.NodeID)
		}
	}
	if cfg.NodeID == "" {
		id, err := loadOrCreate(idFile, func() string { return "node-" + uuid.NewString()[:8] })
		if err != nil {
			return "", err
		}
		cfg.NodeID = id
	}
	if err := mtls.CheckExposure(map[string]string{"raft": cfg.RaftAddr, "peer": cfg.PeerAddr, "gossip": cfg.GossipAddr},
		cfg.TLS != nil, cfg.ClusterKey != ""); err != nil {
		return "", fmt.Errorf("node: %w", err)
	}
	if cfg.TLS == nil || cfg.ClusterKey == "" {
		joining := len(cfg.Join) > 0
		if b, err := os.ReadFile(filepath.Join(cfg.DataDir, "cluster-peers")); err == nil && strings.TrimSpace(string(b)) != "" {
			joining = true
		}
		if joining {
			var missing []string
			if cfg.TLS == nil {
				missing = append(missing, fmt.Sprintf("a certificate of the cluster's CA naming this node (--tls-ca, --tls-cert, --tls-key; `trustctl tls cert create --node %s`)", cfg.NodeID))
			}
			if cfg.ClusterKey == "" {
				missing = append(missing, "the cluster key (TRUSTD_CLUSTER_KEY)")
			}
			return "", fmt.Errorf("node: a node that joins a cluster needs %s", strings.Join(missing, " and "))
		}
	}
	dir := filepath.Join(cfg.DataDir, LocalCredentialsDir)
	if cfg.TLS == nil {
		c, err := mtls.LoadOrCreateLocal(dir, cfg.NodeID, now)
		if err != nil {
			return "", fmt.Errorf("node: local credentials: %w", err)
		}
		cfg.TLS = c
		cfg.Logger.Info("raft and peer listeners use mutual TLS with this node's own CA: no other node can join it; give every node of a cluster --tls-* and TRUSTD_CLUSTER_KEY",
			"dir", dir)
	}
	if cfg.ClusterKey != "" {
		return cfg.ClusterKey, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("node: local credentials: %w", err)
	}
	return loadOrCreate(filepath.Join(dir, "cluster-key"), func() string {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		return base64.RawStdEncoding.EncodeToString(b)
	})
}
