package faults

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/trustd/trustd/verify/pow"
)

// Workload sizes: several subjects per constraint and policy so that
// every node owns some of the keys (a fault on any node hits an owner).
const (
	leaseCapacity = 5
	rateCapacity  = 100
	leaseSubjects = 6
	closedBuckets = 6
	openBuckets   = 3
	tokensPerRun  = 40
	origin        = "http://localhost:3000"
)

// tenant is what the clients use, created once per cluster.
type tenant struct {
	ws, siteKey, secret string
}

func apiURL(nd *node, path string) string { return "http://" + nd.api + path }

// create posts an admin create through the nodes in turn until one
// answers 201, within the deadline.
func create(nodes []*node, path, body string, out any, deadline time.Time) error {
	k := 0
	return waitUntil(deadline, func() error {
		nd := nodes[k%len(nodes)]
		k++
		st, b, err := call("POST", apiURL(nd, path), adminToken, []byte(body), "application/json", 3*time.Second)
		if err != nil || st != 201 {
			return fmt.Errorf("POST %s through %s: %d %s %v", path, nd.id, st, b, err)
		}
		return json.Unmarshal(b, out)
	})
}

// setupTenant creates the workspace, site, concurrency constraint and the
// two rate-limit policies, and waits until every node has them.
func setupTenant(c *procs) (tenant, error) {
	var tn tenant
	deadline := time.Now().Add(30 * time.Second)
	var ws struct {
		ID string `json:"workspace_id"`
	}
	if err := create(c.nodes, "/admin/v1/workspaces", `{"name":"faults"}`, &ws, deadline); err != nil {
		return tn, err
	}
	tn.ws = ws.ID
	base := "/admin/v1/workspaces/" + ws.ID
	var site struct {
		SiteKey string `json:"site_key"`
		Secret  string `json:"secret"`
	}
	if err := create(c.nodes, base+"/sites", `{"name":"faults","hostnames":["localhost"],"challenge_difficulty":1}`, &site, deadline); err != nil {
		return tn, err
	}
	tn.siteKey, tn.secret = site.SiteKey, site.Secret
	var con struct {
		ID string `json:"constraint_id"`
	}
	if err := create(c.nodes, base+"/concurrency-constraints", fmt.Sprintf(
		`{"name":"faults","scope":"subject","action_pattern":"lease.*","capacity":%d,"max_ttl_ms":3600000,"default_ttl_ms":600000}`, leaseCapacity), &con, deadline); err != nil {
		return tn, err
	}
	paths := []string{base + "/concurrency-constraints/" + con.ID}
	for _, degraded := range []string{"fail_closed", "fail_open"} {
		var pol struct {
			ID string `json:"policy_id"`
		}
		action := "rl." + strings.TrimPrefix(degraded, "fail_")
		body := fmt.Sprintf(`{"name":"%s","target":{"type":"workspace"},"action_pattern":"%s","scope":"subject",
			"bucket":{"capacity":%d,"refill_amount":1,"refill_interval_seconds":31536000},"mode":"enforce","degraded_behaviour":"%s"}`,
			degraded, action, rateCapacity, degraded)
		if err := create(c.nodes, base+"/rate-limit-policies", body, &pol, deadline); err != nil {
			return tn, err
		}
		paths = append(paths, base+"/rate-limit-policies/"+pol.ID)
	}
	for _, nd := range c.nodes {
		for _, p := range paths {
			if err := waitUntil(deadline, func() error {
				st, b, err := call("GET", apiURL(nd, p), adminToken, nil, "", 2*time.Second)
				if st != 200 {
					return fmt.Errorf("%s has no %s yet: %d %s %v", nd.id, p, st, b, err)
				}
				return nil
			}); err != nil {
				return tn, err
			}
		}
	}
	return tn, nil
}

// mint runs the widget protocol against nd: challenge, proof of work,
// redeem; it returns a response token /siteverify accepts once.
func mint(nd *node, siteKey string) (string, error) {
	hdr := map[string]string{"Origin": origin}
	post := func(path string, body any, out any) error {
		b, _ := json.Marshal(body)
		st, rb, err := callHeaders("POST", apiURL(nd, path), hdr, b, 5*time.Second)
		if err != nil || st != 200 {
			return fmt.Errorf("%s %s: %d %s %v", nd.id, path, st, rb, err)
		}
		return json.Unmarshal(rb, out)
	}
	var ch struct {
		Challenge string `json:"challenge"`
		Pow       struct {
			Salt       string `json:"salt"`
			Iterations int    `json:"iterations"`
			Difficulty int    `json:"difficulty"`
		} `json:"pow"`
	}
	if err := post("/v1/challenge", map[string]any{"sitekey": siteKey, "action": "login"}, &ch); err != nil {
		return "", err
	}
	salt, err := base64.RawURLEncoding.DecodeString(ch.Pow.Salt)
	if err != nil {
		return "", err
	}
	nonce, ok := pow.Solve(salt, ch.Pow.Iterations, ch.Pow.Difficulty, 1<<22)
	if !ok {
		return "", errors.New("no proof-of-work solution")
	}
	var rd struct {
		Success bool   `json:"success"`
		Token   string `json:"token"`
	}
	body := map[string]any{"challenge": ch.Challenge, "nonce": nonce,
		"signals": map[string]any{"interaction": true, "visible": true, "elapsed_ms": 1800, "pointer_moves": 12}}
	if err := post("/v1/challenge/redeem", body, &rd); err != nil {
		return "", err
	}
	if !rd.Success || rd.Token == "" {
		return "", fmt.Errorf("redeem through %s gave no token", nd.id)
	}
	return rd.Token, nil
}

func callHeaders(method, u string, hdr map[string]string, body []byte, timeout time.Duration) (int, []byte, error) {
	// call with extra headers: the widget protocol needs Origin.
	return callWith(method, u, "", body, "application/json", timeout, hdr)
}

// outcomeOf classifies an answer: no answer or a 5xx is unknown, 200 is
// ok, anything else a definite refusal.
func outcomeOf(st int, err error) Outcome {
	switch {
	case err != nil || st == 0 || st >= 500:
		return Unknown
	case st == 200 || st == 201:
		return OK
	}
	return Refused
}

func errText(st int, b []byte, err error) string {
	if err != nil {
		return err.Error()
	}
	if st == 200 || st == 201 {
		return ""
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 160 {
		s = s[:160]
	}
	return fmt.Sprintf("%d %s", st, s)
}

func tokenID(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:6])
}

// workload runs the four clients of one schedule against c, recording
// into h, until ctx ends; verifications of tokens go on until resolve
// (unknown outcomes are retried with the same idempotency key).
type workload struct {
	c       *procs
	tn      tenant
	h       *History
	prefix  string // per schedule: fresh subjects and write names
	rng     *rand.Rand
	rngMu   sync.Mutex
	writes  []string // acknowledged site ids
	writeMu sync.Mutex
}

const requestTimeout = 2 * time.Second

func (w *workload) intn(n int) int {
	w.rngMu.Lock()
	defer w.rngMu.Unlock()
	return w.rng.IntN(n)
}

func (w *workload) pick() *node { return w.c.nodes[w.intn(len(w.c.nodes))] }

func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// verifyOnce redeems tok with idempotency key idem through nodes starting
// at first, retrying unknown answers on the next node until a definite
// answer or the resolve deadline.
func (w *workload) verifyOnce(tok, idem string, first int, resolve time.Time) {
	form := url.Values{"secret": {w.tn.secret}, "response": {tok}, "idempotency_key": {idem}}
	body := []byte(form.Encode())
	for attempt := 0; ; attempt++ {
		nd := w.c.nodes[(first+attempt)%len(w.c.nodes)]
		op := Op{Kind: KindVerify, Node: nd.id, Token: tokenID(tok), IdemKey: idem, Invoke: time.Now()}
		st, b, err := call("POST", apiURL(nd, "/v1/siteverify"), "", body, "application/x-www-form-urlencoded", requestTimeout)
		op.Done, op.Status, op.Outcome, op.Err = time.Now(), st, outcomeOf(st, err), errText(st, b, err)
		if op.Outcome == OK {
			var v struct {
				Success    bool     `json:"success"`
				ErrorCodes []string `json:"error-codes"`
			}
			if json.Unmarshal(b, &v) != nil {
				op.Outcome = Unknown
			}
			op.Success = v.Success
			op.Duplicate = !v.Success && len(v.ErrorCodes) == 1 && v.ErrorCodes[0] == "timeout-or-duplicate"
			if !v.Success {
				op.Err = strings.Join(v.ErrorCodes, ",")
			}
		}
		w.h.Add(op)
		if op.Outcome != Unknown || time.Now().After(resolve) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// runTokens redeems each token twice, with two idempotency keys through
// two different nodes at about the same time: the first half spread over
// span, the second half in burst, a window around the fault's injection
// (where an answer lost to a kill or a cut is likeliest).
func (w *workload) runTokens(tokens []string, span time.Duration, burstFrom, burst time.Duration, resolve time.Time, wg *sync.WaitGroup) {
	half := len(tokens) / 2
	for i, tok := range tokens {
		a := w.intn(len(w.c.nodes))
		b := (a + 1 + w.intn(len(w.c.nodes)-1)) % len(w.c.nodes)
		delay := span * time.Duration(i) / time.Duration(max(half, 1))
		if i >= half {
			delay = burstFrom + burst*time.Duration(i-half)/time.Duration(max(len(tokens)-half, 1))
		}
		for k, first := range []int{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(delay + time.Duration(k)*5*time.Millisecond)
				w.verifyOnce(tok, fmt.Sprintf("%s-%s-%d", w.prefix, tokenID(tok), k), first, resolve)
			}()
		}
	}
}

// runLeases acquires leases on random subjects through random nodes and
// never releases them; an unknown acquire is retried once with the same
// idempotency key.
func (w *workload) runLeases(ctx context.Context, id int) {
	for n := 0; sleepCtx(ctx, 40*time.Millisecond); n++ {
		subject := fmt.Sprintf("%s-s%d", w.prefix, w.intn(leaseSubjects))
		idem := fmt.Sprintf("%s-l%d-%d", w.prefix, id, n)
		body, _ := json.Marshal(map[string]any{"action": "lease.run", "subject_id": subject, "ttl_ms": 3_600_000, "idempotency_key": idem})
		for try := 0; try < 2; try++ {
			nd := w.pick()
			op := Op{Kind: KindLease, Node: nd.id, Key: "faults/" + subject, Capacity: leaseCapacity, IdemKey: idem, Invoke: time.Now()}
			st, b, err := call("POST", apiURL(nd, "/v1/concurrency/acquire"), w.tn.secret, body, "application/json", requestTimeout)
			op.Done, op.Status, op.Outcome, op.Err = time.Now(), st, outcomeOf(st, err), errText(st, b, err)
			if op.Outcome == OK {
				var r struct {
					Acquired      bool       `json:"acquired"`
					LeaseID       string     `json:"lease_id"`
					ExpiresAt     *time.Time `json:"expires_at"`
					FencingTokens []struct {
						FencingToken uint64 `json:"fencing_token"`
					} `json:"fencing_tokens"`
				}
				if json.Unmarshal(b, &r) != nil {
					op.Outcome = Unknown
				}
				op.Acquired, op.Holder = r.Acquired, r.LeaseID
				if r.ExpiresAt != nil {
					op.Expires = *r.ExpiresAt
				}
				if len(r.FencingTokens) > 0 {
					op.Fence = r.FencingTokens[0].FencingToken
				}
			}
			w.h.Add(op)
			if op.Outcome != Unknown {
				break
			}
		}
	}
}

// runRates sends rate-limit checks on random buckets through random
// nodes.
func (w *workload) runRates(ctx context.Context) {
	for sleepCtx(ctx, 8*time.Millisecond) {
		open := w.intn(closedBuckets+openBuckets) >= closedBuckets
		action, n := "rl.closed", closedBuckets
		if open {
			action, n = "rl.open", openBuckets
		}
		subject := fmt.Sprintf("%s-r%d", w.prefix, w.intn(n))
		body, _ := json.Marshal(map[string]any{"action": action, "subject_id": subject})
		nd := w.pick()
		op := Op{Kind: KindRate, Node: nd.id, Key: action + "/" + subject, Capacity: rateCapacity, FailOpen: open, Invoke: time.Now()}
		st, b, err := call("POST", apiURL(nd, "/v1/rate-limit/check"), w.tn.secret, body, "application/json", requestTimeout)
		op.Done, op.Status, op.Outcome, op.Err = time.Now(), st, outcomeOf(st, err), errText(st, b, err)
		if op.Outcome == OK {
			var d struct {
				Allowed     bool     `json:"allowed"`
				ReasonCodes []string `json:"reason_codes"`
			}
			if json.Unmarshal(b, &d) != nil {
				op.Outcome = Unknown
			}
			op.Allowed = d.Allowed
			for _, r := range d.ReasonCodes {
				op.Degraded = op.Degraded || strings.HasPrefix(r, "degraded-")
			}
		}
		w.h.Add(op)
	}
}

// runWrites creates sites through random nodes; a 201 is an
// acknowledged write whose site id must be on every node after heal.
func (w *workload) runWrites(ctx context.Context) {
	for n := 0; sleepCtx(ctx, 250*time.Millisecond); n++ {
		nd := w.pick()
		body := fmt.Sprintf(`{"name":"%s-w%d","hostnames":["localhost"]}`, w.prefix, n)
		op := Op{Kind: KindWrite, Node: nd.id, Invoke: time.Now()}
		st, b, err := call("POST", apiURL(nd, "/admin/v1/workspaces/"+w.tn.ws+"/sites"), adminToken, []byte(body), "application/json", requestTimeout)
		op.Done, op.Status, op.Outcome, op.Err = time.Now(), st, outcomeOf(st, err), errText(st, b, err)
		if op.Outcome == OK {
			var s struct {
				ID string `json:"site_id"`
			}
			if json.Unmarshal(b, &s) != nil || s.ID == "" {
				op.Outcome = Unknown
			}
			op.Object = s.ID
			w.writeMu.Lock()
			w.writes = append(w.writes, s.ID)
			w.writeMu.Unlock()
		}
		w.h.Add(op)
	}
}

// readBack reads every acknowledged write on every node, polling each
// until found or the deadline; the last read is what the checker judges.
func (w *workload) readBack(deadline time.Time) {
	w.writeMu.Lock()
	ids := append([]string(nil), w.writes...)
	w.writeMu.Unlock()
	for _, nd := range w.c.nodes {
		for _, id := range ids {
			_ = waitUntil(deadline, func() error {
				op := Op{Kind: KindRead, Node: nd.id, Object: id, Invoke: time.Now()}
				st, b, err := call("GET", apiURL(nd, "/admin/v1/workspaces/"+w.tn.ws+"/sites/"+id), adminToken, nil, "", requestTimeout)
				op.Done, op.Status, op.Err = time.Now(), st, errText(st, b, err)
				switch {
				case st == 200:
					op.Outcome, op.Found = OK, true
				case st == 404:
					op.Outcome = OK
				default:
					op.Outcome = outcomeOf(st, err)
				}
				w.h.Add(op)
				if !op.Found {
					return fmt.Errorf("not yet")
				}
				return nil
			})
		}
	}
	// The sites are deleted once judged, so a long run stays under the
	// workspace's cap of sites (catalog.MaxSitesPerWorkspace) and keeps
	// measuring acknowledged writes instead of refusals.
	for _, id := range ids {
		_, _, _ = call("DELETE", apiURL(w.pick(), "/admin/v1/workspaces/"+w.tn.ws+"/sites/"+id), adminToken, nil, "", requestTimeout)
	}
}
