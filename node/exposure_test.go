package node

import (
	"context"
	"github.com/trustd/trustd/cluster/mtls"
	"strings"
	"testing"
	"time"
)

func TestANodeRefusesToExposeInternalListenersWithoutTLSAndKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := Start(ctx, Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "0.0.0.0:0",
		GossipAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", FastRaft: true})
	if err == nil || !strings.Contains(err.Error(), "raft on 0.0.0.0:0") || !strings.Contains(err.Error(), "TRUSTD_CLUSTER_KEY") {
		t.Fatalf("Start = %v, want a refusal naming the raft listener, TLS and the cluster key", err)
	}
	_, err = Start(ctx, Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		GossipAddr: "127.0.0.1:0", PeerAddr: "127.0.0.1:0", FastRaft: true,
		TLSFiles: tlsFiles("/nonexistent/ca.pem", "", "")})
	if err == nil || !strings.Contains(err.Error(), "--tls-cert") {
		t.Fatalf("Start with only a CA = %v, want a message naming the missing files", err)
	}
}

func tlsFiles(ca, cert, key string) (f mtls.Files) {
	f.CA, f.Cert, f.Key = ca, cert, key
	return f
}
