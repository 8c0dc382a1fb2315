package cluster

import (
	"crypto/tls"

	"github.com/valyala/fasthttp"

	"github.com/trustd/trustd/platform/cluster/mtls"
)

// Peer-request authentication. A request on the peer listener is served
// only when it carries the token derived from the cluster key and, on a
// mutual-TLS listener (every node's: node.Start never runs without one),
// its connection presented a certificate of the cluster CA (checked in
// the handshake, before a byte of the request is read) and any node id it
// claims (X-Trustd-Node, sent by every node of this version) is the id
// that certificate names. A request without a claim (a node of the
// previous version, during a rolling upgrade) is authenticated by its
// certificate alone.

// peerNodeHeader carries the id of the node that sends a peer request.
const peerNodeHeader = "X-Trustd-Node"

// authenticPeer checks a peer request as above; on refusal it has written
// the answer (403).
func (c *Cluster) authenticPeer(ctx *fasthttp.RequestCtx) bool {
	if !validToken(c.token, ctx.Request.Header.Peek(peerTokenHeader)) {
		ctx.Error("peer token required", fasthttp.StatusForbidden)
		return false
	}
	if c.cfg.ServerTLS == nil {
		return true
	}
	// The connection's own state rather than ctx.TLSConnectionState, which
	// copies it to the heap on every request (every ask frame).
	var certID string
	if tc, ok := ctx.Conn().(*tls.Conn); ok {
		cs := tc.ConnectionState()
		certID = mtls.PeerNodeID(&cs)
	}
	if certID == "" {
		// Unreachable through a RequireAndVerifyClientCert listener; refuse
		// rather than trust a listener that was not set up so.
		ctx.Error("peer certificate required", fasthttp.StatusForbidden)
		return false
	}
	if claim := ctx.Request.Header.Peek(peerNodeHeader); len(claim) > 0 && string(claim) != certID {
		ctx.Error("the claimed node id is not the one the certificate names", fasthttp.StatusForbidden)
		return false
	}
	return true
}
