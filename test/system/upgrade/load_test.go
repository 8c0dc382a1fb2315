package upgrade

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trustd/trustd/platform/cluster/clustertest"
	"github.com/trustd/trustd/verify/pow"
)

// rotation is the load balancer's set of nodes.
type rotation struct {
	mu    sync.Mutex
	nodes []*node
}

func (r *rotation) add(n *node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes = append(r.nodes, n)
}

func (r *rotation) remove(n *node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nodes = slices.DeleteFunc(r.nodes, func(o *node) bool { return o == n })
}

func (r *rotation) pick(rng *rand.Rand) *node {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nodes[rng.IntN(len(r.nodes))]
}

const (
	kindCheck = iota
	kindVerify
	kindWrite
	kinds
)

var kindNames = [kinds]string{"rate-limit checks", "siteverify of fresh tokens", "admin writes"}

// load is the steady traffic of the upgrade: bounded in time by the
// test (finish), each loop pacing itself.
type load struct {
	t               *testing.T
	c               *procCluster
	secret, siteKey string
	rotation        rotation

	sent    [kinds]atomic.Int64
	retried atomic.Int64 // requests answered after a retried 503 service-unavailable
	degr    atomic.Int64 // checks answered by the policy's degraded behaviour
	// restarted counts mints that started over with a new challenge: a
	// redeem answered 503 had used the challenge after all (mint).
	restarted atomic.Int64
	failed    atomic.Int64

	mu       sync.Mutex
	failures []string
	ids      []string // workspaces written during the upgrade

	stop chan struct{}
	wg   sync.WaitGroup
}

func newLoad(t *testing.T, c *procCluster, secret, siteKey string) *load {
	return &load{t: t, c: c, secret: secret, siteKey: siteKey, stop: make(chan struct{})}
}

func (l *load) fail(format string, args ...any) {
	l.failed.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.failures) < 10 {
		l.failures = append(l.failures, fmt.Sprintf(format, args...))
	}
}

func (l *load) firstFailures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.failures)
}

func (l *load) written() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

func (l *load) summary() string {
	var parts []string
	for k := range kinds {
		parts = append(parts, fmt.Sprintf("%d %s", l.sent[k].Load(), kindNames[k]))
	}
	return fmt.Sprintf("%s; %d failed, %d answered after a retried 503 service-unavailable, %d mints started over after a 503'd redeem had used the challenge, %d degraded checks",
		strings.Join(parts, ", "), l.failed.Load(), l.retried.Load(), l.restarted.Load(), l.degr.Load())
}

// call sends one request through a node in rotation. A 503 whose code
// is service-unavailable ("back off and retry", the contract says; it
// used nothing: a write is retried with its Idempotency-Key, a
// siteverify with its idempotency_key) is retried through the next node
// in rotation after its Retry-After, or a backoff of 50 ms doubling to
// 500 ms when it has none, for up to 10 s; any other answer is returned.
func (l *load) call(rng *rand.Rand, method, path, bearer string, hdr map[string]string, body []byte) (*node, int, []byte, error) {
	n, st, b, _, err := l.callRetried(rng, method, path, bearer, hdr, body)
	return n, st, b, err
}

// callRetried is call that also says whether a 503 was retried.
func (l *load) callRetried(rng *rand.Rand, method, path, bearer string, hdr map[string]string, body []byte) (*node, int, []byte, bool, error) {
	deadline := time.Now().Add(10 * time.Second)
	backoff := 50 * time.Millisecond
	retried := false
	for {
		n := l.rotation.pick(rng)
		st, h, b, err := do(method, n.url()+path, bearer, hdr, body)
		if err == nil && st == 503 && unavailable(b) && time.Now().Before(deadline) {
			wait := backoff
			if secs, e := strconv.Atoi(h.Get("Retry-After")); e == nil {
				wait = min(time.Duration(max(secs, 0))*time.Second, time.Second)
			}
			backoff = min(2*backoff, 500*time.Millisecond)
			retried = true
			time.Sleep(wait)
			continue
		}
		if retried && err == nil && st != 503 {
			l.retried.Add(1)
		}
		return n, st, b, retried, err
	}
}

// unavailable reports the service-unavailable code in either error shape
// (siteverify's {"success":false,"error":...} and ApiError's).
func unavailable(body []byte) bool {
	var e struct {
		Error string `json:"error"`
	}
	return json.Unmarshal(body, &e) == nil && e.Error == "service-unavailable"
}

func (l *load) run() {
	loop := func(every time.Duration, seed uint64, f func(rng *rand.Rand, k int)) {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			tick := time.NewTicker(every)
			defer tick.Stop()
			for k := 0; ; k++ {
				select {
				case <-l.stop:
					return
				case <-tick.C:
				}
				f(rng, k)
			}
		}()
	}
	for g := range 3 {
		loop(10*time.Millisecond, uint64(g), l.check)
	}
	loop(50*time.Millisecond, 10, l.verify)
	loop(100*time.Millisecond, 20, l.write)
}

func (l *load) finish() {
	close(l.stop)
	l.wg.Wait()
}

func (l *load) check(rng *rand.Rand, k int) {
	l.sent[kindCheck].Add(1)
	body := fmt.Sprintf(`{"action":"read","subject_id":"user-%d"}`, rng.IntN(500))
	n, st, b, err := l.call(rng, "POST", "/v1/rate-limit/check", l.secret, nil, []byte(body))
	var d struct {
		Allowed  bool `json:"allowed"`
		Degraded bool `json:"degraded"`
	}
	switch {
	case err != nil || st != 200 || json.Unmarshal(b, &d) != nil || !d.Allowed:
		l.fail("check through %s: %d %s %v", n.id, st, b, err)
	case d.Degraded:
		l.degr.Add(1)
	}
}

// verify mints a token as the widget does (challenge, proof of work,
// redeem) through nodes in rotation, and siteverifies it through another,
// as the customer's backend does.
func (l *load) verify(rng *rand.Rand, k int) {
	l.sent[kindVerify].Add(1)
	tok, err := l.mint(rng)
	if err != nil {
		l.fail("%v", err)
		return
	}
	form := url.Values{"secret": {l.secret}, "response": {tok}, "idempotency_key": {fmt.Sprintf("upgrade-%d-%d", k, rng.Uint64())}}
	hdr := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	n, st, b, err := l.call(rng, "POST", "/v1/siteverify", "", hdr, []byte(form.Encode()))
	var v clustertest.Verdict
	if err != nil || st != 200 || json.Unmarshal(b, &v) != nil || !v.Success {
		l.fail("siteverify through %s: %d %s %v", n.id, st, b, err)
	}
}

// mint runs the widget's protocol. A redeem answered 503 may still have
// used the challenge (its owner ran the op after the forwarding node
// stopped waiting: platform/cluster/DESIGN.md, asks abandoned at their bound), so
// the retry is told challenge-used; the widget then starts over with a
// new challenge, and so does mint, once. challenge-used without a 503
// before it is a failure.
func (l *load) mint(rng *rand.Rand) (string, error) {
	hdr := map[string]string{"Origin": "http://localhost:3000"}
	for attempt := 0; ; attempt++ {
		body, _ := json.Marshal(map[string]any{"sitekey": l.siteKey, "action": "login"})
		n, st, b, err := l.call(rng, "POST", "/v1/challenge", "", hdr, body)
		var ch struct {
			Challenge string `json:"challenge"`
			Pow       struct {
				Salt       string `json:"salt"`
				Iterations int    `json:"iterations"`
				Difficulty int    `json:"difficulty"`
			} `json:"pow"`
		}
		if err != nil || st != 200 || json.Unmarshal(b, &ch) != nil {
			return "", fmt.Errorf("challenge through %s: %d %s %v", n.id, st, b, err)
		}
		salt, err := base64.RawURLEncoding.DecodeString(ch.Pow.Salt)
		if err != nil {
			return "", fmt.Errorf("challenge through %s: salt %q: %v", n.id, ch.Pow.Salt, err)
		}
		nonce, ok := pow.Solve(salt, ch.Pow.Iterations, ch.Pow.Difficulty, 1<<22)
		if !ok {
			return "", fmt.Errorf("challenge through %s: no proof-of-work solution", n.id)
		}
		body, _ = json.Marshal(map[string]any{"challenge": ch.Challenge, "nonce": nonce,
			"signals": map[string]any{"interaction": true, "visible": true, "elapsed_ms": 1800, "pointer_moves": 12}})
		n, st, b, retried, err := l.callRetried(rng, "POST", "/v1/challenge/redeem", "", hdr, body)
		var rd struct {
			Success bool   `json:"success"`
			Token   string `json:"token"`
			Error   string `json:"error"`
		}
		_ = json.Unmarshal(b, &rd)
		if err == nil && st == 409 && rd.Error == "challenge-used" && retried && attempt == 0 {
			l.restarted.Add(1)
			continue
		}
		if err != nil || st != 200 || !rd.Success || rd.Token == "" {
			return "", fmt.Errorf("redeem through %s: %d %s %v", n.id, st, b, err)
		}
		return rd.Token, nil
	}
}

func (l *load) write(rng *rand.Rand, k int) {
	l.sent[kindWrite].Add(1)
	hdr := map[string]string{"Idempotency-Key": fmt.Sprintf("upgrade-write-%d", k)}
	n, st, b, err := l.call(rng, "POST", "/admin/v1/workspaces", adminToken, hdr, []byte(fmt.Sprintf(`{"name":"during the upgrade %d"}`, k)))
	var w struct {
		WorkspaceID string `json:"workspace_id"`
	}
	if err != nil || st != 201 || json.Unmarshal(b, &w) != nil || w.WorkspaceID == "" {
		l.fail("admin write through %s: %d %s %v", n.id, st, b, err)
		return
	}
	l.mu.Lock()
	l.ids = append(l.ids, w.WorkspaceID)
	l.mu.Unlock()
}
