package http

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"
)

// Transport guards: what keeps a node up when clients misbehave or the
// process runs out of file descriptors. They know nothing of any product.

var errAmbiguousFraming = errors.New("both Content-Length and Transfer-Encoding")

// steadyListener keeps accepting through errors that pass: running out of
// file descriptors (EMFILE, ENFILE), a connection aborted before accept,
// memory pressure. fasthttp stops serving on any accept error that is not
// a timeout, and trustd would exit; here the listener backs off (5 ms
// doubling to 1 s) and retries until the listener is closed.
//
// It also bounds the connections served at once (total) and those of one
// client address (perIP; 0: no bound). A connection over either bound is
// answered 503 with Retry-After and closed at once, so one address cannot
// take every descriptor and a client told "busy" knows when to come back.
// (fasthttp's own MaxConnsPerIP races with its shutdown under the race
// detector, and its Concurrency refusal carries no Retry-After: both are
// here instead; fasthttp's Concurrency stays above total as a backstop.)
type steadyListener struct {
	net.Listener
	log     *slog.Logger
	retries *atomic.Uint64
	total   int
	perIP   int
	mu      sync.Mutex
	open    int
	conns   map[netip.Addr]int
}

func (l *steadyListener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			if c = l.admit(c); c == nil {
				continue
			}
			return c, nil
		}
		if !retryableAccept(err) {
			return c, err
		}
		l.retries.Add(1)
		if delay == 0 {
			delay = 5 * time.Millisecond
			l.log.Warn("accept failed; backing off and retrying", "err", err)
		} else if delay *= 2; delay > time.Second {
			delay = time.Second
		}
		time.Sleep(delay)
	}
}

// admit counts c against the bounds, or refuses it and returns nil when
// it is over one.
func (l *steadyListener) admit(c net.Conn) net.Conn {
	if l.perIP <= 0 && l.total <= 0 {
		return c
	}
	var ip netip.Addr
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		ip = ap.Addr().Unmap()
	}
	l.mu.Lock()
	if (l.total > 0 && l.open >= l.total) || (l.perIP > 0 && ip.IsValid() && l.conns[ip] >= l.perIP) {
		l.mu.Unlock()
		refuseBusy(c)
		return nil
	}
	l.open++
	if ip.IsValid() {
		l.conns[ip]++
	}
	l.mu.Unlock()
	return &countedConn{Conn: c, release: func() {
		l.mu.Lock()
		l.open--
		if ip.IsValid() {
			if l.conns[ip]--; l.conns[ip] <= 0 {
				delete(l.conns, ip)
			}
		}
		l.mu.Unlock()
	}}
}

// busyAnswer is the whole answer to a connection over a bound: the
// ApiError of any 503 (no request was read, so it has no request id),
// with the Retry-After every 503 carries.
var busyAnswer = func() []byte {
	body, err := json.Marshal(&APIError{Error: ErrUnavailable.Code,
		Message: "the node is serving as many connections as it allows (in all, or from this address); retry after Retry-After"})
	if err != nil {
		panic(err) // a fixed value: cannot fail
	}
	return fmt.Appendf(nil, "HTTP/1.1 %d Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: %d\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		ErrUnavailable.Status, DefaultRetryAfter, len(body), body)
}()

// refuseBusy answers c busyAnswer and closes it. The write goes into a
// fresh socket's empty send buffer; the deadline only guards the accept
// loop against a kernel that will not take it.
func refuseBusy(c net.Conn) {
	_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	_, _ = c.Write(busyAnswer)
	c.Close()
}

// countedConn gives its slot back once, on the first Close.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

func retryableAccept(err error) bool {
	if errors.Is(err, net.ErrClosed) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// ambiguousFraming reports a request that carries both Content-Length and
// Transfer-Encoding (RFC 9112 section 6.3: a server ought to treat it as an
// error and close the connection). A proxy in front may frame it the other
// way round, so answering it would open the door to request smuggling.
// fasthttp reports a chunked body as ContentLength -1, so the raw headers
// are only scanned for such requests, never on the hot path.
func ambiguousFraming(h *fasthttp.RequestHeader) bool {
	if h.ContentLength() != -1 {
		return false
	}
	for raw := h.RawHeaders(); len(raw) > 0; {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		name, _, ok := bytes.Cut(line, []byte{':'})
		if ok && bytes.EqualFold(bytes.TrimSpace(name), []byte("Content-Length")) {
			return true
		}
	}
	return false
}
