package clustertest

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	gproto "google.golang.org/protobuf/proto"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/cluster/mtls"
	"github.com/trustd/trustd/platform/proto/raftpb"
)

// attacker is a way to open a connection to an internal listener.
type attacker struct {
	name string
	dial func(addr string) (net.Conn, error)
}

// attackers returns the three strangers of the hardening issue: no TLS at
// all, TLS without a client certificate, and TLS with a certificate from
// another cluster's CA. Each knows the cluster key, so only mutual TLS
// stands in their way.
func attackers(t *testing.T) []attacker {
	t.Helper()
	otherCA, err := mtls.CreateCA("other", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := mtls.CreateNodeCert(otherCA, mtls.NodeRequest{NodeID: "node-0"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	foreignCert, err := tls.X509KeyPair(foreign.Cert, foreign.Key)
	if err != nil {
		t.Fatal(err)
	}
	tlsDial := func(cfg *tls.Config) func(string) (net.Conn, error) {
		return func(addr string) (net.Conn, error) {
			return tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", addr, cfg)
		}
	}
	return []attacker{
		{"plain TCP", func(addr string) (net.Conn, error) { return net.DialTimeout("tcp", addr, 2*time.Second) }},
		{"TLS without a client certificate", tlsDial(&tls.Config{InsecureSkipVerify: true})},
		{"TLS with a certificate of another CA", tlsDial(&tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{foreignCert}})},
	}
}

// forgedKeyBatch is the Raft batch of the attack: a signing key of the
// attacker's choosing, which would let them mint tokens siteverify accepts.
func forgedKeyBatch(t *testing.T, id string) []byte {
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

func peerToken(key string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("trustd peer transport v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// postApply sends the forged batch to /peer/v1/apply over conn and
// returns the HTTP status, or an error when the connection failed.
func postApply(conn net.Conn, batch []byte) (int, error) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := fmt.Sprintf("POST /peer/v1/apply HTTP/1.1\r\nHost: peer\r\nX-Trustd-Peer: %s\r\nContent-Length: %d\r\n\r\n", peerToken("clustertest-key"), len(batch))
	if _, err := io.WriteString(conn, req); err != nil {
		return 0, err
	}
	if _, err := conn.Write(batch); err != nil {
		return 0, err
	}
	resp, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func hasKey(c *catalog.Catalog, id string) bool {
	for _, k := range c.Keys {
		if k.ID == id {
			return true
		}
	}
	return false
}

func TestPeerPortRefusesAForgedSigningKeyFromStrangers(t *testing.T) {
	c := Start(t, 1)
	n := c.Nodes[0]
	addr := n.Cluster().PeerAddr()
	for _, a := range attackers(t) {
		t.Run(a.name, func(t *testing.T) {
			id := "forged-" + strings.ReplaceAll(a.name, " ", "-")
			conn, err := a.dial(addr)
			if err == nil {
				var status int
				status, err = postApply(conn, forgedKeyBatch(t, id))
				if err == nil {
					t.Fatalf("the peer port answered a stranger with HTTP %d", status)
				}
			}
			if hasKey(n.Store().Catalog(), id) {
				t.Fatal("the forged signing key was applied")
			}
		})
	}
	// The same request from a member (a certificate of the cluster CA)
	// is applied: what refused the strangers is the TLS, not the request.
	member, err := NodeTLS(c.CA, "node-9")
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", addr, member.Client())
	if err != nil {
		t.Fatalf("a member could not connect: %v", err)
	}
	if status, err := postApply(conn, forgedKeyBatch(t, "member-key")); err != nil || status != 200 {
		t.Fatalf("a member's apply: status %d, %v", status, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !hasKey(n.Store().Catalog(), "member-key") {
		if time.Now().After(deadline) {
			t.Fatal("a member's apply was not applied")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dialerStream lets raft's own client encode a real AppendEntries and
// send it through an attacker's connection.
type dialerStream struct {
	ln   net.Listener
	dial func(string) (net.Conn, error)
}

func (s *dialerStream) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *dialerStream) Close() error              { return s.ln.Close() }
func (s *dialerStream) Addr() net.Addr            { return s.ln.Addr() }
func (s *dialerStream) Dial(a raft.ServerAddress, _ time.Duration) (net.Conn, error) {
	return s.dial(string(a))
}

func TestRaftPortRefusesAForgedAppendEntriesFromStrangers(t *testing.T) {
	c := Start(t, 2)
	n := c.Nodes[1-c.WaitLeader()]
	target := raft.ServerAddress(n.Store().RaftAddr())
	appendEntries := func(t *testing.T, dial func(string) (net.Conn, error), term uint64, batch []byte) (*raft.AppendEntriesResponse, error) {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		trans := raft.NewNetworkTransport(&dialerStream{ln: ln, dial: dial}, 1, 3*time.Second, io.Discard)
		defer trans.Close()
		st := n.Store().Raft().Stats()
		lastIndex, _ := strconv.ParseUint(st["last_log_index"], 10, 64)
		lastTerm, _ := strconv.ParseUint(st["last_log_term"], 10, 64)
		req := &raft.AppendEntriesRequest{
			RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("attacker"), Addr: []byte(ln.Addr().String())},
			Term:              term,
			PrevLogEntry:      lastIndex,
			PrevLogTerm:       lastTerm,
			Entries:           []*raft.Log{{Index: lastIndex + 1, Term: term, Type: raft.LogCommand, Data: batch}},
			LeaderCommitIndex: lastIndex + 1,
		}
		var resp raft.AppendEntriesResponse
		err = trans.AppendEntries("victim", target, req, &resp)
		return &resp, err
	}
	currentTerm := func() uint64 {
		v, _ := strconv.ParseUint(n.Store().Raft().Stats()["term"], 10, 64)
		return v
	}
	for _, a := range attackers(t) {
		t.Run(a.name, func(t *testing.T) {
			id := "forged-" + strings.ReplaceAll(a.name, " ", "-")
			if _, err := appendEntries(t, a.dial, currentTerm(), forgedKeyBatch(t, id)); err == nil {
				t.Fatal("the raft port accepted an AppendEntries from a stranger")
			}
			if hasKey(n.Store().Catalog(), id) {
				t.Fatal("the forged signing key reached the follower's catalog")
			}
		})
	}
	// A member's connection carries Raft messages: a stale term is
	// answered (and refused by Raft itself), so the refusals above were
	// the TLS's doing.
	member, err := NodeTLS(c.CA, "node-9")
	if err != nil {
		t.Fatal(err)
	}
	memberDial := func(addr string) (net.Conn, error) { return tls.Dial("tcp", addr, member.Client()) }
	resp, err := appendEntries(t, memberDial, 0, forgedKeyBatch(t, "stale-term"))
	if err != nil {
		t.Fatalf("a member could not speak Raft: %v", err)
	}
	if resp.Success || hasKey(n.Store().Catalog(), "stale-term") {
		t.Fatal("a stale-term AppendEntries was accepted")
	}
}
