package http

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	nethttp "net/http"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// wantBusy reads c to its end: the listener's 503 with Retry-After, then
// the close.
func wantBusy(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("a refused connection was kept: read %q, %v", got, err)
	}
	resp, err := nethttp.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
	if err != nil {
		t.Fatalf("a refused connection read %q: %v", got, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || !bytes.Contains(body, []byte(`"error":"service-unavailable"`)) {
		t.Fatalf("refusal = %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
}

// listenGuarded is a steadyListener with the bounds total and perIP on a
// loopback port, accepting into the channel it returns until the test
// ends.
func listenGuarded(t *testing.T, total, perIP int) (net.Listener, chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &steadyListener{Listener: ln, log: slog.New(slog.DiscardHandler), retries: new(atomic.Uint64), total: total, perIP: perIP, conns: map[netip.Addr]int{}}
	t.Cleanup(func() { l.Close() })
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	return ln, accepted
}

func TestConnectionsPastTheNodesBoundAreToldToRetry(t *testing.T) {
	ln, accepted := listenGuarded(t, 2, 5)
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	first := <-accepted
	<-accepted
	wantBusy(t, dial())
	first.Close()
	dial()
	select {
	case got := <-accepted:
		got.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("a freed slot was not given to the next connection")
	}
}

func TestOneAddressGetsAtMostItsShareOfConnections(t *testing.T) {
	ln, accepted := listenGuarded(t, 0, 2)
	var clients []net.Conn
	for i := 0; i < 3; i++ {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	first, second := <-accepted, <-accepted
	// The third is refused by the listener: its client reads a 503 with
	// Retry-After, then EOF.
	wantBusy(t, clients[2])
	// Closing one gives its slot back.
	first.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case got := <-accepted:
		got.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("a freed slot was not given to the next connection")
	}
	second.Close()
}

func TestAcceptErrorsThatPassAreRetried(t *testing.T) {
	tests := []struct {
		err   error
		retry bool
	}{
		{&net.OpError{Op: "accept", Err: syscall.EMFILE}, true},
		{&net.OpError{Op: "accept", Err: syscall.ENFILE}, true},
		{&net.OpError{Op: "accept", Err: syscall.ECONNABORTED}, true},
		{net.ErrClosed, false},
		{errors.New("something else"), false},
	}
	for _, tt := range tests {
		if got := retryableAccept(tt.err); got != tt.retry {
			t.Errorf("retryableAccept(%v) = %v, want %v", tt.err, got, tt.retry)
		}
	}
}
