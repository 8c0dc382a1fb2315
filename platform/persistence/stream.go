package persistence

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// tlsStream is a raft.StreamLayer over mutual TLS: the listener accepts
// only clients with a certificate of the cluster CA and Dial presents this
// node's. Every node runs Raft this way, loopback included (a node given
// no certificate makes its own, see node/credentials.go). Handshakes
// happen on the connection's first read or write, in Raft's
// per-connection goroutine, so a slow or hostile client never holds up
// Accept, and within handshakeTimeout, so a client that connects and
// never completes one does not keep a goroutine and a descriptor for
// good; a client without a valid certificate fails its handshake before
// a single Raft message is decoded.
type tlsStream struct {
	ln        net.Listener
	advertise net.Addr
	client    *tls.Config
}

func newTLSStream(bind string, advertise net.Addr, server, client *tls.Config) (*tlsStream, error) {
	if server == nil || client == nil {
		return nil, errors.New("persistence: raft TLS needs both a server and a client configuration")
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	if a, ok := advertise.(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, errors.New("persistence: raft binds every interface; set an address other nodes can dial (--advertise-raft-addr)")
	}
	return &tlsStream{ln: tls.NewListener(ln, server), advertise: advertise, client: client}, nil
}

func (s *tlsStream) Accept() (net.Conn, error) {
	c, err := s.ln.Accept()
	if err != nil {
		return nil, err
	}
	return &boundedHandshake{Conn: c.(*tls.Conn)}, nil
}

func (s *tlsStream) Close() error   { return s.ln.Close() }
func (s *tlsStream) Addr() net.Addr { return s.advertise }

// Dial connects to another node's Raft listener and completes the
// handshake within timeout.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	return tls.DialWithDialer(d, "tcp", string(address), s.client)
}

// handshakeTimeout bounds an incoming Raft connection's TLS handshake.
const handshakeTimeout = 10 * time.Second

// boundedHandshake runs the server handshake on the first read or write,
// within handshakeTimeout.
type boundedHandshake struct {
	*tls.Conn
	once sync.Once
	err  error
}

func (c *boundedHandshake) handshake() error {
	c.once.Do(func() {
		_ = c.Conn.SetDeadline(time.Now().Add(handshakeTimeout))
		if c.err = c.Conn.Handshake(); c.err == nil {
			c.err = c.Conn.SetDeadline(time.Time{})
		}
	})
	return c.err
}

func (c *boundedHandshake) Read(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *boundedHandshake) Write(b []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}
