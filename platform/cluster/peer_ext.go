package cluster

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Extension operations of the peer channel. A layer above the cluster
// (the API server: its metrics summary for the console's cluster-wide
// charts) registers a handler under a name and calls it on a member over
// the same channel as asks: the peer listener, the cluster-key token, TLS
// when configured. Nothing of it is public.

// pathExt prefixes the extension operations' paths.
const pathExt = "/peer/v1/ext/"

// PeerHandler answers an extension operation: the request body in, the
// answer body out; an error answers 500 with its text.
type PeerHandler func(body []byte) ([]byte, error)

// peerExt holds the registered extension handlers by path.
type peerExt struct{ m sync.Map }

// HandlePeer registers h as the extension operation name (a-z 0-9 -).
func (c *Cluster) HandlePeer(name string, h PeerHandler) {
	c.ext.m.Store(pathExt+name, h)
}

// serveExt answers an extension operation; false when path is none.
func (c *Cluster) serveExt(ctx *fasthttp.RequestCtx, path string) bool {
	if !strings.HasPrefix(path, pathExt) {
		return false
	}
	v, ok := c.ext.m.Load(path)
	if !ok {
		return false
	}
	out, err := v.(PeerHandler)(ctx.PostBody())
	if err != nil {
		ctx.Error(err.Error(), fasthttp.StatusInternalServerError)
		return true
	}
	ctx.SetBody(out)
	return true
}

// CallPeer runs the extension operation name on the live member nodeID.
func (c *Cluster) CallPeer(nodeID, name string, body []byte, timeout time.Duration) ([]byte, error) {
	for _, m := range c.Members() {
		if m.ID == nodeID {
			if m.PeerAddr == "" {
				break
			}
			return c.trans.call(m.PeerAddr, pathExt+name, body, nil, timeout)
		}
	}
	return nil, fmt.Errorf("cluster: %s is not a live member", nodeID)
}
