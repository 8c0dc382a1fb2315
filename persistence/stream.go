package persistence

import (
	"crypto/tls"
	"errors"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// tlsStream is a raft.StreamLayer over mutual TLS: the listener accepts
// only clients with a certificate of the cluster CA and Dial presents this
// node's. Handshakes happen on the connection's first read or write, in
// Raft's per-connection goroutine, so a slow or hostile client never
// holds up Accept; a client without a valid certificate fails its
// handshake before a single Raft message is decoded.
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

func (s *tlsStream) Accept() (net.Conn, error) { return s.ln.Accept() }
func (s *tlsStream) Close() error              { return s.ln.Close() }
func (s *tlsStream) Addr() net.Addr            { return s.advertise }

// Dial connects to another node's Raft listener and completes the
// handshake within timeout.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	return tls.DialWithDialer(d, "tcp", string(address), s.client)
}
