package scenario

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fastjson"

	"github.com/trustd/trustd/test/bench/load"
	"github.com/trustd/trustd/traffic/client"
)

// ErrBadTarget is returned for a target that is not an http(s) base URL.
var ErrBadTarget = errors.New("scenario: bad target URL")

// Targets is the set of nodes requests are spread over, with one HostClient
// (its own connection pool) per node.
type Targets struct {
	bases   []string
	clients []*fasthttp.HostClient
}

// NewTargets parses comma-free base URLs ("http://127.0.0.1:8080") and
// prepares a pool of up to maxConns connections to each; timeout bounds every
// read and write, so a stalled server cannot hang a worker forever.
func NewTargets(bases []string, maxConns int, timeout time.Duration) (*Targets, error) {
	if len(bases) == 0 {
		return nil, fmt.Errorf("%w: no target", ErrBadTarget)
	}
	t := &Targets{}
	for _, b := range bases {
		u, host, ok := client.ParseBase(strings.TrimRight(b, "/"))
		if !ok {
			return nil, fmt.Errorf("%w: %q", ErrBadTarget, b)
		}
		t.bases = append(t.bases, u.Scheme+"://"+u.Host+u.Path)
		t.clients = append(t.clients, &fasthttp.HostClient{
			Addr:                     host,
			IsTLS:                    u.Scheme == "https",
			MaxConns:                 maxConns,
			ReadTimeout:              timeout,
			WriteTimeout:             timeout,
			MaxConnWaitTimeout:       timeout,
			MaxIdleConnDuration:      time.Minute,
			NoDefaultUserAgentHeader: true,
			DisablePathNormalizing:   true,
		})
	}
	return t, nil
}

// Len is the number of nodes.
func (t *Targets) Len() int { return len(t.bases) }

// Base is node i's base URL.
func (t *Targets) Base(i int) string { return t.bases[i] }

// Only returns the single-node Targets of node i, sharing its pool (used to
// probe each node separately).
func (t *Targets) Only(i int) *Targets {
	return &Targets{bases: t.bases[i : i+1], clients: t.clients[i : i+1]}
}

// CloseIdle closes idle connections of every pool.
func (t *Targets) CloseIdle() {
	for _, c := range t.clients {
		c.CloseIdleConnections()
	}
}

// poster sends pre-built POSTs to the nodes in turn. One per Worker.
type poster struct {
	targets *Targets
	reqs    []*fasthttp.Request
	resp    *fasthttp.Response
	next    int
}

func newPoster(t *Targets, path, contentType string, headers map[string]string) *poster {
	p := &poster{targets: t, resp: &fasthttp.Response{}}
	for _, base := range t.bases {
		req := &fasthttp.Request{}
		req.Header.SetMethod(fasthttp.MethodPost)
		req.SetRequestURI(base + path)
		req.Header.SetContentType(contentType)
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		p.reqs = append(p.reqs, req)
	}
	return p
}

// post sends body to the next node and leaves the answer in p.resp.
func (p *poster) post(body []byte) error {
	i := p.next
	if p.next++; p.next == len(p.reqs) {
		p.next = 0
	}
	req := p.reqs[i]
	req.SetBodyRaw(body)
	return p.targets.clients[i].Do(req, p.resp)
}

// exchange posts body and parses a 200 answer with parser. When the post
// fails, the status is not 200 or the answer is not JSON, ok is false and
// fail is the outcome to report as operation op.
func (p *poster) exchange(op uint8, body []byte, parser *fastjson.Parser) (v *fastjson.Value, fail load.Outcome, ok bool) {
	if err := p.post(body); err != nil {
		return nil, load.Outcome{Op: op, Kind: load.Transport}, false
	}
	if code := p.resp.StatusCode(); code != 200 {
		return nil, load.Outcome{Op: op, Kind: load.Status, Status: uint16(code)}, false
	}
	v, err := parser.ParseBytes(p.resp.Body())
	if err != nil {
		return nil, load.Outcome{Op: op, Kind: load.Decode}, false
	}
	return v, load.Outcome{}, true
}
