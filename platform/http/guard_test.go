package http

import (
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestOneAddressGetsAtMostItsShareOfConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &steadyListener{Listener: ln, log: slog.New(slog.DiscardHandler), retries: new(atomic.Uint64), perIP: 2, conns: map[netip.Addr]int{}}
	defer l.Close()
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
	// The third is closed by the listener: its client reads EOF.
	_ = clients[2].SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := clients[2].Read(make([]byte, 1)); err == nil || errors.Is(err, syscall.ETIMEDOUT) {
		t.Fatalf("the third connection of one address was kept: %v", err)
	}
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
