package http

import (
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/cespare/xxhash/v2"
)

// ingress bounds how fast one client IP or one credential may call this
// node. It protects the node itself, like the limiter of a load balancer,
// so it is node-local by design: it never crosses the network, and a
// cluster of N nodes admits up to N times the per-node rate. The
// customer-facing rate limits are the rate-limit module's, owned by actors.
//
// Each key holds a GCRA "theoretical arrival time"; striped locks keep
// contention off the hot path.
type ingress struct {
	clock   func() time.Time
	stripes [64]ingressStripe
}

type ingressStripe struct {
	mu sync.Mutex
	// tat holds each key's theoretical arrival time behind a pointer, so
	// the hot path updates it in place after a lookup by a []byte key,
	// which does not allocate; only a new key's string is allocated.
	tat map[string]*int64
	// swept is when stale entries were last dropped from this stripe.
	swept int64
}

func newIngress(clock func() time.Time) *ingress {
	in := &ingress{clock: clock}
	for i := range in.stripes {
		in.stripes[i].tat = map[string]*int64{}
	}
	return in
}

// ingressResult is the outcome of one admission.
type ingressResult struct {
	ok         bool
	limit      int
	remaining  int
	resetSecs  int64
	retryAfter int64
}

// take admits one request for key at rate per second with burst.
func (in *ingress) take(key string, rate, burst int) ingressResult {
	return in.takeBytes(unsafeBytes(key), rate, burst)
}

// takeBytes is take for a key the caller built in a scratch buffer.
func (in *ingress) takeBytes(key []byte, rate, burst int) ingressResult {
	if burst < 1 {
		burst = rate
	}
	now := in.clock().UnixNano()
	interval := int64(time.Second) / int64(rate)
	tolerance := interval * int64(burst)
	st := &in.stripes[xxhash.Sum64(key)%uint64(len(in.stripes))]
	st.mu.Lock()
	if now-st.swept > int64(10*time.Second) {
		for k, t := range st.tat {
			if *t < now {
				delete(st.tat, k)
			}
		}
		st.swept = now
	}
	slot := st.tat[string(key)]
	tat := now
	if slot != nil && *slot > now {
		tat = *slot
	}
	next := tat + interval
	res := ingressResult{limit: burst}
	if next-now > tolerance {
		st.mu.Unlock()
		wait := next - now - tolerance
		res.retryAfter = (wait + int64(time.Second) - 1) / int64(time.Second)
		res.resetSecs = (tat - now + int64(time.Second) - 1) / int64(time.Second)
		return res
	}
	if slot == nil {
		slot = new(int64)
		st.tat[string(key)] = slot
	}
	*slot = next
	st.mu.Unlock()
	res.ok = true
	res.remaining = int((tolerance - (next - now)) / interval)
	res.resetSecs = (next - now + int64(time.Second) - 1) / int64(time.Second)
	return res
}

// deny answers 429 with the rate-limit headers of spec 2.1; spec-shaped
// operations keep their own error body.
func (c *Call) deny(r ingressResult) {
	h := &c.Ctx.Response.Header
	setRetryAfter(h, r.retryAfter)
	h.Set("X-RateLimit-Limit", strconv.Itoa(r.limit))
	h.Set("X-RateLimit-Remaining", "0")
	h.Set("X-RateLimit-Reset", strconv.FormatInt(r.resetSecs, 10))
	if c.route != nil && c.route.SpecErrors {
		c.specError(429, "rate-limit-exceeded")
		return
	}
	c.fail(ErrRateLimited, "too many requests; retry after "+strconv.FormatInt(r.retryAfter, 10)+"s")
}

// allowIP applies the per-client-IP limit; false means 429 was written.
func (in *ingress) allowIP(c *Call) bool {
	rate := c.s.cfg.IngressIPRate
	if rate <= 0 {
		return true
	}
	var buf [24]byte
	key := append(append(buf[:0], "ip/"...), c.Ctx.RemoteIP().To16()...)
	r := in.takeBytes(key, rate, c.s.cfg.IngressIPBurst)
	if !r.ok {
		c.deny(r)
	}
	return r.ok
}

// AdmitCredential applies the per-credential limit, after a handler has
// authenticated the caller. credID is the credential's catalog id (a site,
// mobile app or scoped credential UUID), the same key in every module, so
// one credential has one budget across all operations. The workspace's settings override the node's
// defaults. False means 429 was written.
func (c *Call) AdmitCredential(credID, workspaceID string) bool {
	c.wsID = workspaceID // the request's span names it (trace.go)
	rate, burst := c.s.cfg.IngressCredRate, c.s.cfg.IngressCredBurst
	if w := c.cat.Workspaces[workspaceID]; w != nil && w.Settings.IngressPerSecond > 0 {
		rate, burst = w.Settings.IngressPerSecond, w.Settings.IngressBurst
	}
	if rate <= 0 {
		return true
	}
	r := c.s.ingress.take(credID, rate, burst)
	if !r.ok {
		c.deny(r)
	}
	return r.ok
}

// specError writes the spec's fixed error shape {success:false,error}.
func (c *Call) specError(status int, code string) {
	retryLater(&c.Ctx.Response.Header, status)
	c.Ctx.SetStatusCode(status)
	c.Ctx.SetContentType("application/json")
	c.Ctx.SetBodyString(`{"success":false,"error":"` + code + `"}`)
}

// unsafeBytes views s as bytes without copying; the bytes are only read.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
