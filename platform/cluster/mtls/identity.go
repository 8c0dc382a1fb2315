package mtls

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A node certificate names the node it was issued for: its subject's
// common name is the node id (CreateNodeCert, `trustctl tls cert create
// --node <id>`). The id is what binds a certificate to a place in the
// cluster: a node starts only with a certificate naming its own id, the
// peer listener refuses a request that claims another id than its
// client certificate names, and the Raft leader admits a gossip member
// as a voter only after the member's peer and Raft listeners presented a
// certificate naming the member's id.

// NodeID is the node id a node certificate names.
func NodeID(cert *x509.Certificate) string {
	if cert == nil {
		return ""
	}
	return cert.Subject.CommonName
}

// NodeID is the node id this node's own certificate names.
func (c *Config) NodeID() string { return NodeID(c.cert.Leaf) }

// PeerNodeID is the node id of the certificate the other side of a
// verified connection presented, or "" when it presented none.
func PeerNodeID(cs *tls.ConnectionState) string {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		return ""
	}
	return NodeID(cs.PeerCertificates[0])
}

// Local credentials: a node that was given no certificate (the quick
// start, a single production node) still runs its Raft and peer listeners
// on mutual TLS, with a CA of its own made at first start. The CA's key is
// dropped once the node certificate is signed, so that CA vouches for this
// one node and nothing else can ever be issued by it: no other process
// can present a certificate the node accepts. The files live in the data
// dir (the directory 0700, keys 0600) and are reused on restart; they are
// made anew when missing, unreadable, issued for another node id or
// within LocalRenewBefore of expiry (nobody else trusts them, so nothing
// else needs to change).

// Local credential file names inside their directory.
const (
	LocalCAFile   = "ca.pem"
	LocalCertFile = "node.pem"
	LocalKeyFile  = "node-key.pem"
)

// LocalRenewBefore is how long before expiry local credentials are made
// anew at start.
const LocalRenewBefore = 30 * 24 * time.Hour

// LoadOrCreateLocal returns this node's local credentials from dir,
// making them (or making them anew) as described above.
func LoadOrCreateLocal(dir, nodeID string, now time.Time) (*Config, error) {
	if nodeID == "" {
		return nil, errors.New("mtls: node id required")
	}
	files := Files{CA: filepath.Join(dir, LocalCAFile), Cert: filepath.Join(dir, LocalCertFile), Key: filepath.Join(dir, LocalKeyFile)}
	if c, err := Load(files); err == nil && c.NodeID() == nodeID && now.Add(LocalRenewBefore).Before(c.cert.Leaf.NotAfter) {
		return c, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mtls: local credentials: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("mtls: local credentials: %w", err)
	}
	ca, err := CreateCA(nodeID+" local", DefaultCAValidity, now)
	if err != nil {
		return nil, err
	}
	node, err := CreateNodeCert(ca, NodeRequest{NodeID: nodeID, Validity: DefaultCAValidity}, now)
	if err != nil {
		return nil, err
	}
	// ca.Key goes out of scope here: never written.
	for _, f := range []struct {
		path string
		b    []byte
	}{{files.CA, ca.Cert}, {files.Cert, node.Cert}, {files.Key, node.Key}} {
		if err := writeFile0600(f.path, f.b); err != nil {
			return nil, err
		}
	}
	return New(ca.Cert, node)
}

// writeFile0600 replaces path with b, readable by its owner only, without
// a moment where a reader sees a half-written file.
func writeFile0600(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("mtls: write %s: %w", tmp, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("mtls: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("mtls: write %s: %w", path, err)
	}
	return nil
}
