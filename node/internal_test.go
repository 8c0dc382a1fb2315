package node

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster"
	"github.com/trustd/trustd/platform/cluster/mtls"
	"github.com/trustd/trustd/platform/proto/clusterpb"
	"github.com/trustd/trustd/platform/proto/raftpb"
)

// forgedKey is a Raft batch that adds a signing key of an attacker's
// choosing: applied, it would let them mint tokens siteverify accepts.
func forgedKey(t *testing.T, id string) []byte {
	t.Helper()
	body, err := catalog.Encode(&catalog.AddSigningKey{Key: catalog.SigningKey{ID: id, Purpose: "token", Secret: []byte("attacker-chosen-secret-0123456789"), CreatedAt: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := gproto.Marshal(&raftpb.Batch{Commands: []*raftpb.Command{{Kind: "signing_key.add", Body: body}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hasSigningKey(n *Node, id string) bool {
	for _, k := range n.Store().Catalog().Keys {
		if k.ID == id {
			return true
		}
	}
	return false
}

// post sends one peer request over conn, with the token of the node's own
// (generated) cluster key: only the connection stands in the way.
func post(conn net.Conn, path, token string, body []byte) (int, error) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: peer\r\nX-Trustd-Peer: %s\r\nContent-Length: %d\r\n\r\n", path, token, len(body))
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, err
	}
	if _, err := conn.Write(body); err != nil {
		return 0, err
	}
	resp, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// raftDialer lets raft's own client encode a real AppendEntries and send
// it through a chosen connection.
type raftDialer struct {
	ln   net.Listener
	dial func(string) (net.Conn, error)
}

func (s *raftDialer) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *raftDialer) Close() error              { return s.ln.Close() }
func (s *raftDialer) Addr() net.Addr            { return s.ln.Addr() }
func (s *raftDialer) Dial(a raft.ServerAddress, _ time.Duration) (net.Conn, error) {
	return s.dial(string(a))
}

func appendEntries(t *testing.T, n *Node, dial func(string) (net.Conn, error), batch []byte) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	trans := raft.NewNetworkTransport(&raftDialer{ln: ln, dial: dial}, 1, 3*time.Second, io.Discard)
	defer trans.Close()
	st := n.Store().Raft().Stats()
	last, _ := strconv.ParseUint(st["last_log_index"], 10, 64)
	term, _ := strconv.ParseUint(st["term"], 10, 64)
	req := &raft.AppendEntriesRequest{
		RPCHeader:    raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("attacker"), Addr: []byte(ln.Addr().String())},
		Term:         term + 1,
		PrevLogEntry: last, PrevLogTerm: term,
		Entries:           []*raft.Log{{Index: last + 1, Term: term + 1, Type: raft.LogCommand, Data: batch}},
		LeaderCommitIndex: last + 1,
	}
	var resp raft.AppendEntriesResponse
	return trans.AppendEntries("victim", raft.ServerAddress(n.Store().RaftAddr()), req, &resp)
}

// The quick start's node (no certificate, no cluster key, everything on
// loopback) used to serve its peer port to any local process and speak
// plain Raft: a forged signing key through /peer/v1/apply answered 200.
// Now its internal listeners are mutual TLS with credentials it made for
// itself, which nobody else holds.
func TestADevNodesInternalListenersRefuseEveryoneElse(t *testing.T) {
	dir := t.TempDir()
	n := mustStart(t, Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, Dev: true})
	key, err := os.ReadFile(filepath.Join(dir, LocalCredentialsDir, "cluster-key"))
	if err != nil {
		t.Fatalf("the generated cluster key: %v", err)
	}
	token := peerToken(strings.TrimSpace(string(key)))
	peer, id := n.Cluster().PeerAddr(), n.Cluster().NodeID()
	otherCA, _ := mtls.CreateCA("other", time.Hour, time.Now())
	impostor, _ := mtls.CreateNodeCert(otherCA, mtls.NodeRequest{NodeID: id}, time.Now())
	impostorCert, _ := tls.X509KeyPair(impostor.Cert, impostor.Key)
	tlsDial := func(cfg *tls.Config) func(string) (net.Conn, error) {
		return func(addr string) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
		}
	}
	strangers := []struct {
		name string
		dial func(string) (net.Conn, error)
	}{
		{"plain TCP", func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 2*time.Second) }},
		{"TLS without a client certificate", tlsDial(&tls.Config{InsecureSkipVerify: true})},
		{"TLS with a certificate of another CA naming this node", tlsDial(&tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{impostorCert}})},
	}
	handoff, _ := gproto.Marshal(&clusterpb.Handoff{Epoch: 1 << 40, From: "attacker"})
	epoch := n.Router().Ring().Epoch
	for _, s := range strangers {
		t.Run(s.name, func(t *testing.T) {
			keyID := "forged-" + strings.ReplaceAll(s.name, " ", "-")
			for _, r := range []struct {
				path string
				body []byte
			}{{"/peer/v1/apply", forgedKey(t, keyID)}, {"/peer/v1/handoff", handoff}, {"/peer/v1/leave", nil}} {
				conn, err := s.dial(peer)
				if err != nil {
					continue // refused at the handshake
				}
				if status, err := post(conn, r.path, token, r.body); err == nil {
					t.Errorf("POST %s answered a stranger with HTTP %d", r.path, status)
				}
			}
			if err := appendEntries(t, n, s.dial, forgedKey(t, keyID+"-raft")); err == nil {
				t.Error("the raft port took an AppendEntries from a stranger")
			}
		})
	}
	// Nothing changed: no forged key, the node is still a ready member of
	// its own cluster, its ring untouched by the hand-off's epoch.
	time.Sleep(200 * time.Millisecond) // a leave would have started by now
	for _, s := range strangers {
		id := "forged-" + strings.ReplaceAll(s.name, " ", "-")
		if hasSigningKey(n, id) || hasSigningKey(n, id+"-raft") {
			t.Fatalf("a forged signing key from %s was applied", s.name)
		}
	}
	if st := n.Cluster().State(); st != cluster.Ready {
		t.Fatalf("node state %v after the attempts, want ready", st)
	}
	if n.Router().Seen() >= 1<<40 || n.Router().Ring().Epoch != epoch {
		t.Fatal("the forged hand-off reached the router")
	}
	if !n.Store().Ready() {
		t.Fatal("the node is not ready after the attempts")
	}
	// What refused them is the TLS: the node's own certificate gets in.
	self, err := mtls.LoadOrCreateLocal(filepath.Join(dir, LocalCredentialsDir), id, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", peer, self.Client())
	if err != nil {
		t.Fatalf("the node's own certificate was refused: %v", err)
	}
	if status, err := post(conn, "/peer/v1/status", token, nil); err != nil || status != 200 {
		t.Fatalf("status with the node's own certificate: %d %v", status, err)
	}
}

// peerToken is the token peers derive from the cluster key.
func peerToken(key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("trustd peer transport v1"))
	return hex.EncodeToString(m.Sum(nil))
}

func TestLocalCredentialsAreMadeOnceAndReused(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true}
	n := mustStart(t, cfg)
	read := func() map[string]string {
		out := map[string]string{}
		for _, f := range []string{mtls.LocalCAFile, mtls.LocalCertFile, mtls.LocalKeyFile, "cluster-key"} {
			p := filepath.Join(dir, LocalCredentialsDir, f)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v, want 0600", f, st.Mode().Perm())
			}
			out[f] = string(b)
		}
		return out
	}
	first := read()
	if err := n.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustStart(t, cfg)
	if again := read(); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatal("a restart made new local credentials")
	}
}

func TestAJoiningNodeNeedsTheClustersCertificateAndKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Start(ctx, Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true,
		Join: []string{"127.0.0.1:1"}})
	if err == nil || !strings.Contains(err.Error(), "--tls-cert") || !strings.Contains(err.Error(), "TRUSTD_CLUSTER_KEY") {
		t.Fatalf("Start joining without certificate or key = %v, want a refusal naming both", err)
	}
	// A data dir that remembers peers is a member of a cluster too.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster-peers"), []byte("127.0.0.1:7946\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Start(ctx, Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, ClusterKey: "k"})
	if err == nil || !strings.Contains(err.Error(), "--tls-cert") || strings.Contains(err.Error(), "TRUSTD_CLUSTER_KEY") {
		t.Fatalf("Start of a remembered member without a certificate = %v, want a refusal naming the certificate only", err)
	}
}

func TestTheCertificateNamesTheNode(t *testing.T) {
	ca, _ := mtls.CreateCA("t", time.Hour, time.Now())
	p, _ := mtls.CreateNodeCert(ca, mtls.NodeRequest{NodeID: "n-cert"}, time.Now())
	tc, err := mtls.New(ca.Cert, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = Start(ctx, Config{DataDir: t.TempDir(), NodeID: "n-other", HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, TLS: tc})
	if err == nil || !strings.Contains(err.Error(), `names node "n-cert"`) {
		t.Fatalf("Start with another node's certificate = %v, want a refusal", err)
	}
	n := mustStart(t, Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true, TLS: tc, ClusterKey: "k"})
	if id := n.Cluster().NodeID(); id != "n-cert" {
		t.Fatalf("node id %q, want the certificate's", id)
	}
}
