package clustertest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	nethttp "net/http"
	"testing"
	"time"
)

// A peer request names the node that sends it; the peer listener refuses
// one whose claim is not the id its client certificate names (a node
// started with another node's certificate, or a certificate holder
// speaking for another member). A request without a claim (a node of the
// previous version) is authenticated by its certificate alone.
func TestAPeerRequestClaimingAnotherIDThanItsCertificateIsRefused(t *testing.T) {
	c := Start(t, 1)
	addr := c.Nodes[0].Cluster().PeerAddr()
	member, err := NodeTLS(c.CA, "node-9")
	if err != nil {
		t.Fatal(err)
	}
	status := func(claim string) int {
		t.Helper()
		conn, err := tls.Dial("tcp", addr, member.Client())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		req := fmt.Sprintf("POST /peer/v1/status HTTP/1.1\r\nHost: peer\r\nX-Trustd-Peer: %s\r\n", peerToken("clustertest-key"))
		if claim != "" {
			req += "X-Trustd-Node: " + claim + "\r\n"
		}
		if _, err := io.WriteString(conn, req+"Content-Length: 0\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := nethttp.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	tests := []struct {
		name, claim string
		want        int
	}{
		{"a claim of the certificate's own id is served", "node-9", 200},
		{"a claim of another member's id is refused", "node-0", 403},
		{"a claim of an unknown id is refused", "ghost", 403},
		{"no claim (a node of the previous version) is served on its certificate", "", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := status(tt.claim); got != tt.want {
				t.Fatalf("status %d, want %d", got, tt.want)
			}
		})
	}
}
