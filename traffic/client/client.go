// Package client is a reference Go client of the rate-limit check that
// sends each check straight to the node owning its bucket (client-side
// routing, traffic/api/ring.go), so the cluster never forwards it. It
// learns a request's partition from the node's answer, never computes it
// (the bucket key is an HMAC under a workspace secret the client must not
// hold), and it never refuses or decides anything itself: any node decides
// any check, routing only saves the forwarded hop.
//
// How it routes, and why:
//
//   - A request is remembered by a key of its own (Key: the action, the
//     method and the scope values, hashed with hash/maphash under a seed
//     drawn per Client, so the cache holds no identifier in the clear).
//     Those values and the workspace's policies decide which policies match
//     and their bucket keys, so the partition an answer hints
//     (X-Trustd-Partition) holds for the key until an operator changes the
//     policies or the scope key; every routed answer hints again and
//     overwrites the entry, so a stale one lasts one check.
//   - The cache is bounded (Config.CacheSize entries in 64 shards, each a
//     map behind its own mutex); a full shard drops an arbitrary entry
//     (Go's map order is random), which keeps hot keys with high
//     probability at no bookkeeping cost per hit. A dropped key costs one
//     forwarded check.
//   - The ring (GET /v1/rate-limit/ring) maps a partition to its owner. It
//     is fetched once, then again whenever an answer's X-Trustd-Ring-Epoch
//     differs from the held ring's (in the background: that answer is
//     already right, the node that took the check forwarded it).
//   - A node that cannot be reached, or answers 503 or 421, makes the
//     client fetch the ring (at most once per RefreshEvery across
//     callers) and retry once through another node. A retried check whose
//     first attempt was in fact decided counts twice: errs towards
//     refusing, never admits beyond a policy's capacity.
//   - A check of a request the client has not seen yet, or whose owner is
//     not known, goes to the nodes in turn.
package client

import (
	"errors"
	"fmt"
	"hash/maphash"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"
)

// The paths and headers of the cluster's routing contract
// (traffic/api/ring.go); the client does not import the server.
const (
	checkPath       = "/v1/rate-limit/check"
	ringPath        = "/v1/rate-limit/ring"
	routingHeader   = "X-Trustd-Routing"
	partitionHeader = "X-Trustd-Partition"
	epochHeader     = "X-Trustd-Ring-Epoch"
)

// ErrConfig is returned by New for a configuration it cannot use.
var ErrConfig = errors.New("client: bad configuration")

// Config is what a Client needs.
type Config struct {
	// Nodes are API bases of some of the cluster's nodes
	// ("http://10.0.0.1:8080"); the ring names the others.
	Nodes []string
	// Secret is the site's secret, sent as Authorization: Bearer.
	Secret string
	// Timeout bounds each request's write and read (default 2 s).
	Timeout time.Duration
	// MaxConnsPerNode caps the connections to one node (default 64).
	MaxConnsPerNode int
	// CacheSize is how many requests' partitions are remembered (default
	// 65536).
	CacheSize int
	// RefreshEvery is the least time between two ring fetches forced by
	// failures (default 100 ms), so a dead node does not make every caller
	// fetch the ring.
	RefreshEvery time.Duration
	// NoRouting sends every check to the nodes in turn without asking for
	// hints (the client then behaves as a plain client).
	NoRouting bool
}

// Request is one rate-limit check (POST /v1/rate-limit/check); empty
// members are not sent.
type Request struct {
	Action    string `json:"action"`
	Method    string `json:"method,omitempty"`
	SubjectID string `json:"subject_id,omitempty"`
	DeviceID  string `json:"device_id,omitempty"`
	Route     string `json:"route,omitempty"`
	ScopeKey  string `json:"scope_key,omitempty"`
	Cost      int64  `json:"cost,omitzero"`
}

// Decision is the part of the check's answer a caller acts on.
type Decision struct {
	Allowed      bool     `json:"allowed"`
	Decision     string   `json:"decision"`
	RetryAfterMs int64    `json:"retry_after_ms"`
	Remaining    *int64   `json:"remaining"`
	ReasonCodes  []string `json:"reason_codes"`
}

// StatusError is an answer other than 200: Code is the spec's error code.
type StatusError struct {
	Status int
	Code   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("client: rate-limit check answered %d %s", e.Status, e.Code)
}

// Key is a request's identity in the partition cache.
type Key uint64

// Stats counts what the client did since New.
type Stats struct {
	Checks uint64 // checks sent (a retry counted once)
	Routed uint64 // checks whose first attempt went to the owner the ring names
	// Retried checks: the first node was unreachable or answered 503/421.
	Retried     uint64
	RingFetches uint64 // rings fetched and installed
}

// Client sends checks; it is safe for concurrent use. Close it to wait for
// a ring fetch running in the background.
type Client struct {
	cfg    Config
	seed   maphash.Seed
	seeds  []*nodeConn
	ring   atomic.Pointer[ringView]
	cache  [cacheShards]cacheShard
	next   atomic.Uint64 // turn of the nodes for unrouted checks
	auth   string
	reqs   sync.Pool // *fasthttp.Request
	fetch  sync.Mutex
	last   time.Time // last ring fetch, under fetch
	bgBusy atomic.Bool
	bg     sync.WaitGroup

	mu    sync.Mutex // guards conns
	conns map[string]*nodeConn

	checks, routed, retried, fetches atomic.Uint64
}

// nodeConn is one node's address and connection pool.
type nodeConn struct {
	base string // API base, no trailing slash
	hc   *fasthttp.HostClient
}

// ringView is a fetched ring: owners index nodes; a nil node has no
// usable address.
type ringView struct {
	epoch  uint64
	owners []int16
	nodes  []*nodeConn
}

// New returns a client of the nodes in cfg. It does not contact them: the
// first check does.
func New(cfg Config) (*Client, error) {
	if len(cfg.Nodes) == 0 {
		return nil, fmt.Errorf("%w: no node", ErrConfig)
	}
	if cfg.Secret == "" {
		return nil, fmt.Errorf("%w: no secret", ErrConfig)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.MaxConnsPerNode <= 0 {
		cfg.MaxConnsPerNode = 64
	}
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = 1 << 16
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = 100 * time.Millisecond
	}
	c := &Client{cfg: cfg, seed: maphash.MakeSeed(), auth: "Bearer " + cfg.Secret, conns: map[string]*nodeConn{}}
	c.reqs.New = func() any { return new(fasthttp.Request) }
	per := max(1, cfg.CacheSize/cacheShards)
	for i := range c.cache {
		c.cache[i] = cacheShard{m: make(map[Key]int16), max: per}
	}
	for _, b := range cfg.Nodes {
		n, err := c.conn(b)
		if err != nil {
			return nil, err
		}
		c.seeds = append(c.seeds, n)
	}
	return c, nil
}

// Close waits for a background ring fetch and closes idle connections.
func (c *Client) Close() {
	c.bg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.conns {
		n.hc.CloseIdleConnections()
	}
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{Checks: c.checks.Load(), Routed: c.routed.Load(), Retried: c.retried.Load(), RingFetches: c.fetches.Load()}
}

// Epoch is the epoch of the ring the client holds, 0 before the first.
func (c *Client) Epoch() uint64 {
	if v := c.ring.Load(); v != nil {
		return v.epoch
	}
	return 0
}

// Key is r's identity for the partition cache: what decides which
// policies match and their bucket keys (the cost does not).
func (c *Client) Key(r *Request) Key {
	var h maphash.Hash
	h.SetSeed(c.seed)
	for _, s := range [...]string{r.Action, r.Method, r.SubjectID, r.DeviceID, r.Route, r.ScopeKey} {
		_, _ = h.WriteString(strconv.Itoa(len(s))) // length-prefixed: no two requests hash the same input
		_ = h.WriteByte(':')
		_, _ = h.WriteString(s)
	}
	return Key(h.Sum64())
}

// KeyOf is the identity of a pre-built check body: the same bytes are the
// same request (a body that differs only in cost gets an entry of its own,
// which is harmless).
func (c *Client) KeyOf(body []byte) Key { return Key(maphash.Bytes(c.seed, body)) }

// Check sends r and returns its decision; an answer other than 200 is a
// *StatusError.
func (c *Client) Check(r Request) (Decision, error) {
	body, err := json.Marshal(&r)
	if err != nil {
		return Decision{}, err
	}
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseResponse(resp)
	if err := c.Do(c.Key(&r), body, resp); err != nil {
		return Decision{}, err
	}
	if resp.StatusCode() != 200 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(resp.Body(), &e, json.RejectUnknownMembers(false))
		return Decision{}, &StatusError{Status: resp.StatusCode(), Code: e.Error}
	}
	var d Decision
	if err := json.Unmarshal(resp.Body(), &d, json.RejectUnknownMembers(false)); err != nil {
		return Decision{}, fmt.Errorf("client: decoding the check's answer: %w", err)
	}
	return d, nil
}

// Do sends a pre-built check body under key k and leaves the answer,
// whatever its status, in resp. The error is a transport failure of the
// last attempt.
func (c *Client) Do(k Key, body []byte, resp *fasthttp.Response) error {
	c.checks.Add(1)
	v := c.ring.Load()
	target := c.owner(v, k)
	if target != nil {
		c.routed.Add(1)
	} else {
		target = c.any(v, nil)
	}
	err := c.send(target, body, resp)
	if retryable(err, resp) {
		c.retried.Add(1)
		v = c.refresh(v)
		err = c.send(c.any(v, target), body, resp)
	}
	if err == nil && resp.StatusCode() == 200 && !c.cfg.NoRouting {
		c.learn(v, k, resp)
	}
	return err
}

// retryable: the node did not decide the check (unreachable, not ready,
// or not the right node).
func retryable(err error, resp *fasthttp.Response) bool {
	if err != nil {
		return true
	}
	st := resp.StatusCode()
	return st == fasthttp.StatusServiceUnavailable || st == fasthttp.StatusMisdirectedRequest
}

// owner is the node owning k's partition under v, or nil when either is
// unknown.
func (c *Client) owner(v *ringView, k Key) *nodeConn {
	if v == nil || c.cfg.NoRouting {
		return nil
	}
	p, ok := c.cache[k%cacheShards].get(k)
	if !ok || int(p) >= len(v.owners) {
		return nil
	}
	return v.nodes[v.owners[p]]
}

// any is the next node in turn (the ring's, else the configured ones),
// other than avoid when there is another.
func (c *Client) any(v *ringView, avoid *nodeConn) *nodeConn {
	nodes := c.seeds
	if v != nil && len(v.nodes) > 0 {
		nodes = v.nodes
	}
	for range 2 * len(nodes) {
		n := nodes[c.next.Add(1)%uint64(len(nodes))]
		if n != nil && (n != avoid || len(nodes) == 1) {
			return n
		}
	}
	return c.seeds[c.next.Add(1)%uint64(len(c.seeds))]
}

func (c *Client) send(n *nodeConn, body []byte, resp *fasthttp.Response) error {
	req := c.reqs.Get().(*fasthttp.Request)
	defer c.reqs.Put(req)
	req.Reset()
	req.Header.SetMethod(fasthttp.MethodPost)
	req.SetRequestURI(n.base + checkPath)
	req.Header.SetContentType("application/json")
	req.Header.Set("Authorization", c.auth)
	if !c.cfg.NoRouting {
		req.Header.Set(routingHeader, "1")
	}
	req.SetBodyRaw(body)
	err := n.hc.Do(req, resp)
	req.SetBodyRaw(nil) // the caller's body is not the pool's
	return err
}

// learn keeps the answer's partition for k and, when the answer was
// routed under another ring than v, fetches the ring in the background.
func (c *Client) learn(v *ringView, k Key, resp *fasthttp.Response) {
	if b := resp.Header.Peek(partitionHeader); len(b) > 0 {
		if p, err := strconv.Atoi(string(b)); err == nil && p >= 0 && p < 1<<15 {
			c.cache[k%cacheShards].put(k, int16(p))
		}
	}
	e, err := strconv.ParseUint(string(resp.Header.Peek(epochHeader)), 10, 64)
	if err != nil || (v != nil && e == v.epoch) {
		return
	}
	if cur := c.ring.Load(); cur != nil && cur.epoch >= e {
		return // a newer ring is already in
	}
	if c.bgBusy.CompareAndSwap(false, true) {
		c.bg.Add(1)
		go func() {
			defer c.bg.Done()
			defer c.bgBusy.Store(false)
			c.fetch.Lock()
			defer c.fetch.Unlock()
			c.fetchRing(nil)
		}()
	}
}

// refresh fetches the ring after a failed attempt under seen, unless
// another caller fetched it a moment ago; it returns the ring to use.
func (c *Client) refresh(seen *ringView) *ringView {
	c.fetch.Lock()
	defer c.fetch.Unlock()
	if cur := c.ring.Load(); cur != seen || time.Since(c.last) < c.cfg.RefreshEvery {
		return cur // someone else fetched since this caller looked
	}
	c.fetchRing(seen)
	return c.ring.Load()
}

// fetchRing asks the nodes in turn for the ring and installs the first
// answer not older than the ring held. Called with c.fetch held.
func (c *Client) fetchRing(seen *ringView) {
	c.last = time.Now()
	var nodes []*nodeConn
	if seen != nil {
		nodes = append(nodes, seen.nodes...)
	}
	nodes = append(nodes, c.seeds...)
	start := int(c.next.Add(1))
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for i := range nodes {
		n := nodes[(start+i)%len(nodes)]
		if n == nil {
			continue
		}
		req.Reset()
		req.Header.SetMethod(fasthttp.MethodGet)
		req.SetRequestURI(n.base + ringPath)
		req.Header.Set("Authorization", c.auth)
		if n.hc.Do(req, resp) != nil || resp.StatusCode() != 200 {
			continue
		}
		v, err := c.decodeRing(resp.Body())
		if err != nil {
			continue
		}
		for {
			cur := c.ring.Load()
			if cur != nil && cur.epoch > v.epoch {
				return // a node behind the others answered: keep the newer ring
			}
			if c.ring.CompareAndSwap(cur, v) {
				c.fetches.Add(1)
				return
			}
		}
	}
}

// ring is the answer of GET /v1/rate-limit/ring.
type ring struct {
	Epoch      uint64 `json:"epoch"`
	Partitions int    `json:"partitions"`
	Nodes      []struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	} `json:"nodes"`
	Owners []int `json:"owners"`
}

func (c *Client) decodeRing(b []byte) (*ringView, error) {
	var r ring
	if err := json.Unmarshal(b, &r, json.RejectUnknownMembers(false)); err != nil {
		return nil, err
	}
	if len(r.Nodes) == 0 || len(r.Owners) != r.Partitions || len(r.Nodes) > 1<<15 {
		return nil, errors.New("client: ring without nodes or owners")
	}
	v := &ringView{epoch: r.Epoch, owners: make([]int16, len(r.Owners)), nodes: make([]*nodeConn, len(r.Nodes))}
	for i, n := range r.Nodes {
		if nc, err := c.conn(n.URL); err == nil {
			v.nodes[i] = nc
		}
	}
	for p, o := range r.Owners {
		if o < 0 || o >= len(v.nodes) {
			return nil, fmt.Errorf("client: partition %d owned by node %d of %d", p, o, len(v.nodes))
		}
		v.owners[p] = int16(o)
	}
	return v, nil
}

// ParseBase reads an http(s) base URL ("http://127.0.0.1:8080") and
// returns it with the host:port to dial, the scheme's default port when it
// names none; false when base is not such a URL.
func ParseBase(base string) (u *url.URL, addr string, ok bool) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, "", false
	}
	addr = u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(u.Hostname(), port)
	}
	return u, addr, true
}

// conn returns the connection pool of the node at base, made once per
// address and kept across rings.
func (c *Client) conn(base string) (*nodeConn, error) {
	base = strings.TrimRight(base, "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.conns[base]; n != nil {
		return n, nil
	}
	u, host, ok := ParseBase(base)
	if !ok {
		return nil, fmt.Errorf("%w: node %q is not an http(s) base URL", ErrConfig, base)
	}
	n := &nodeConn{base: base, hc: &fasthttp.HostClient{Addr: host, IsTLS: u.Scheme == "https",
		MaxConns: c.cfg.MaxConnsPerNode, ReadTimeout: c.cfg.Timeout, WriteTimeout: c.cfg.Timeout,
		MaxConnWaitTimeout: c.cfg.Timeout, MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true}}
	c.conns[base] = n
	return n, nil
}
