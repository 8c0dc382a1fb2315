package mtls

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestCheckExposure(t *testing.T) {
	loop := map[string]string{"raft": "127.0.0.1:8300", "peer": "[::1]:8090", "gossip": "localhost:7946"}
	open := map[string]string{"raft": "0.0.0.0:8300", "peer": "127.0.0.1:8090", "gossip": "10.0.0.5:7946"}
	tests := []struct {
		name             string
		listeners        map[string]string
		haveTLS, haveKey bool
		wantErr          []string
	}{
		{"loopback listeners need nothing", loop, false, false, nil},
		{"exposed listeners without TLS or key are refused, naming both", open, false, false, []string{"raft on 0.0.0.0:8300", "gossip on 10.0.0.5:7946", "--tls-ca", "TRUSTD_CLUSTER_KEY"}},
		{"exposed listeners with TLS but no key are refused, naming the key", open, true, false, []string{"TRUSTD_CLUSTER_KEY"}},
		{"exposed listeners with a key but no TLS are refused, naming TLS", open, false, true, []string{"--tls-cert"}},
		{"exposed listeners with TLS and key are allowed", open, true, true, nil},
		{"an empty host binds every interface", map[string]string{"peer": ":8090"}, false, false, []string{"peer on :8090"}},
		{"a host name other than localhost is not loopback", map[string]string{"peer": "node1.internal:8090"}, false, true, []string{"peer"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckExposure(tt.listeners, tt.haveTLS, tt.haveKey)
			if (err != nil) != (tt.wantErr != nil) {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr != nil)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func mustNode(t *testing.T, ca PEM, id string) *Config {
	t.Helper()
	p, err := CreateNodeCert(ca, NodeRequest{NodeID: id}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(ca.Cert, p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestOnlyMembersOfTheCAConnect(t *testing.T) {
	ca, err := CreateCA("test", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	other, err := CreateCA("other", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	server := mustNode(t, ca, "server")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", server.Server())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	echo := func(cfg *tls.Config) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", ln.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("x")); err != nil {
			return err
		}
		_, err = c.Read(make([]byte, 1))
		return err
	}
	if err := echo(mustNode(t, ca, "member").Client()); err != nil {
		t.Fatalf("a member could not talk: %v", err)
	}
	if err := echo(mustNode(t, other, "stranger").Client()); err == nil {
		t.Fatal("a node of another CA talked to the server")
	}
	if err := echo(&tls.Config{InsecureSkipVerify: true}); err == nil {
		t.Fatal("a client without a certificate talked to the server")
	}
	// A member refuses a server of another CA, too.
	impostor, err := tls.Listen("tcp", "127.0.0.1:0", mustNode(t, other, "impostor").Server())
	if err != nil {
		t.Fatal(err)
	}
	defer impostor.Close()
	go func() {
		if c, err := impostor.Accept(); err == nil {
			_, _ = c.Read(make([]byte, 1))
			c.Close()
		}
	}()
	if c, err := tls.Dial("tcp", impostor.Addr().String(), mustNode(t, ca, "member").Client()); err == nil {
		c.Close()
		t.Fatal("a member accepted a server of another CA")
	}
}

func TestNewRefusesACertificateOfAnotherCA(t *testing.T) {
	ca, _ := CreateCA("a", time.Hour, time.Now())
	other, _ := CreateCA("b", time.Hour, time.Now())
	p, err := CreateNodeCert(other, NodeRequest{NodeID: "n"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(ca.Cert, p); err == nil {
		t.Fatal("a node certificate of another CA was loaded")
	}
	if _, err := CreateNodeCert(PEM{Cert: []byte("junk"), Key: []byte("junk")}, NodeRequest{NodeID: "n"}, time.Now()); err == nil {
		t.Fatal("junk was used as a CA")
	}
}

func TestLocalCredentialsTrustThisNodeAloneAndAreReused(t *testing.T) {
	dir := t.TempDir() + "/local"
	now := time.Now()
	first, err := LoadOrCreateLocal(dir, "n1", now)
	if err != nil {
		t.Fatal(err)
	}
	if first.NodeID() != "n1" {
		t.Fatalf("local certificate names %q", first.NodeID())
	}
	for _, f := range []string{dir, dir + "/" + LocalCAFile, dir + "/" + LocalCertFile, dir + "/" + LocalKeyFile} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v: others can read it", f, st.Mode().Perm())
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Fatalf("%d files in %s, want the CA certificate, the node certificate and its key (never the CA key)", len(entries), dir)
	}
	again, err := LoadOrCreateLocal(dir, "n1", now)
	if err != nil {
		t.Fatal(err)
	}
	if !again.cert.Leaf.Equal(first.cert.Leaf) {
		t.Fatal("a restart made new local credentials instead of reusing them")
	}
	renamed, err := LoadOrCreateLocal(dir, "n2", now)
	if err != nil || renamed.NodeID() != "n2" {
		t.Fatalf("credentials for another node id: %v, %v", renamed, err)
	}
	// Credentials that expire within LocalRenewBefore are made anew.
	shortCA, _ := CreateCA("short", 24*time.Hour, now)
	short, _ := CreateNodeCert(shortCA, NodeRequest{NodeID: "n2"}, now)
	for f, b := range map[string][]byte{LocalCAFile: shortCA.Cert, LocalCertFile: short.Cert, LocalKeyFile: short.Key} {
		if err := os.WriteFile(dir+"/"+f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	renewed, err := LoadOrCreateLocal(dir, "n2", now)
	if err != nil || time.Until(renewed.cert.Leaf.NotAfter) < LocalRenewBefore {
		t.Fatalf("credentials close to expiry were not made anew: %v", err)
	}
	// Nothing else chains to a local CA: a certificate of any other CA,
	// even one naming this node, is refused.
	ca, _ := CreateCA("other", time.Hour, now)
	if err := verifyChain([]*x509.Certificate{mustNode(t, ca, "n2").cert.Leaf}, renewed.pool, x509.ExtKeyUsageClientAuth); err == nil {
		t.Fatal("a certificate of another CA chains to the local CA")
	}
	if err := verifyChain([]*x509.Certificate{renewed.cert.Leaf}, renewed.pool, x509.ExtKeyUsageClientAuth); err != nil {
		t.Fatalf("the node's own certificate does not chain to its local CA: %v", err)
	}
}

func TestPeerNodeIDIsTheCertificatesCommonName(t *testing.T) {
	ca, _ := CreateCA("a", time.Hour, time.Now())
	c := mustNode(t, ca, "node-7")
	if got := PeerNodeID(&tls.ConnectionState{PeerCertificates: []*x509.Certificate{c.cert.Leaf}}); got != "node-7" {
		t.Fatalf("PeerNodeID = %q", got)
	}
	if got := PeerNodeID(&tls.ConnectionState{}); got != "" {
		t.Fatalf("PeerNodeID without a certificate = %q", got)
	}
	if got := PeerNodeID(nil); got != "" {
		t.Fatalf("PeerNodeID of no TLS = %q", got)
	}
}
