package node

import (
	"context"
	"github.com/trustd/trustd/platform/cluster/mtls"
	nethttp "net/http"
	"net/http/httptest"
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

func TestPprofAnswersLoopbackOrTheAdminTokenOnly(t *testing.T) {
	n := mustStart(t, Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0", FastRaft: true})
	h := n.opsPrivate(func(w nethttp.ResponseWriter, _ *nethttp.Request) { w.WriteHeader(200) })
	tests := []struct {
		name, remote, auth string
		want               int
	}{
		{"a loopback caller is served", "127.0.0.1:5555", "", 200},
		{"a remote caller without a token is refused", "10.1.2.3:5555", "", 401},
		{"a remote caller with a wrong token is refused", "10.1.2.3:5555", "Bearer adm_wrong", 401},
		{"a remote caller with the admin token is served", "10.1.2.3:5555", "Bearer " + n.AdminToken(), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/debug/pprof/", nil)
			r.RemoteAddr = tt.remote
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d", w.Code, tt.want)
			}
		})
	}
}
