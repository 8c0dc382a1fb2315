package contract_test

import (
	"bufio"
	"io"
	"net"
	nethttp "net/http"
	"strings"
	"testing"
	"time"

	"github.com/trustd/trustd/node"
	"github.com/trustd/trustd/node/nodetest"
)

// TestANodeAtItsConnectionBoundAnswers503WithRetryAfter: through a real
// node with --max-conns 2, a third connection reads the ApiError of a 503
// with Retry-After (not a silent close), and a freed slot serves again.
func TestANodeAtItsConnectionBoundAnswers503WithRetryAfter(t *testing.T) {
	tn := nodetest.Start(t, func(c *node.Config) { c.MaxConns, c.MaxConnsPerIP = 2, 2 })
	addr := strings.TrimPrefix(tn.N.APIURL(), "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	first := dial()
	dial()
	time.Sleep(100 * time.Millisecond) // both accepted and counted
	third := dial()
	_ = third.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(third, "GET /v1/ HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := nethttp.ReadResponse(bufio.NewReader(third), nil)
	if err != nil {
		t.Fatalf("the connection over the bound read no answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), `"error":"service-unavailable"`) {
		t.Fatalf("over the bound: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	first.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := nethttp.Get(tn.N.APIURL() + "/v1/")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a freed slot does not serve: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
