package http

import (
	"crypto/sha256"
	"encoding/base64"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/cluster"
	"github.com/trustd/trustd/ratelimit"
)

// The rate-limit module (spec 2.10, 2.11, 4.10, 7.3). Policies live in the
// catalog; each catalog version is compiled once into per-workspace
// matchers, so a check never re-reads policy JSON or resolves modes. The
// buckets live in shard actors and are reached only through the asker.

// asker is the one thing the module needs of the cluster: run an op on the
// owner of a key. *cluster.Router implements it; tests swap in a failing
// one to exercise degraded behaviour.
type asker interface {
	Ask(key string, op actors.Op) error
}

// scopeKind is a policy's scope (spec 2.11).
type scopeKind uint8

const (
	scopeWorkspace scopeKind = iota
	scopeApplication
	scopeSubject
	scopeDevice
	scopeRoute
	scopeCustom
	numScopes
)

var scopeNames = [numScopes]string{"workspace", "application", "subject", "device", "route", "custom"}

func parseScope(s string) (scopeKind, bool) {
	for i, n := range scopeNames {
		if n == s {
			return scopeKind(i), true
		}
	}
	return 0, false
}

// policyMode is a policy's mode once workspace_default is resolved.
type policyMode uint8

const (
	modeObserve policyMode = iota
	modeThrottle
	modeEnforce
)

var modeNames = [...]string{"observe", "throttle", "enforce"}

func resolveMode(policy, workspaceDefault string) policyMode {
	if policy == "workspace_default" {
		policy = workspaceDefault
	}
	switch policy {
	case "throttle":
		return modeThrottle
	case "enforce":
		return modeEnforce
	}
	return modeObserve
}

// compiledPolicy is a policy ready for the hot path.
type compiledPolicy struct {
	id, name      string
	targetType    string
	targetID      string
	pattern       string
	method        string
	scope         scopeKind
	cfg           ratelimit.BucketConfig
	defaultCost   int64
	quotaLimit    int64
	window        ratelimit.Window
	adaptive      bool
	mode          policyMode
	failClosed    bool
	enforcePct    uint64
	livePrefix    string // "l" + policyTag: live state
	simPrefix     string // "s" + policyTag: observe-mode simulation state
	jsonHead      []byte // `{"policy_id":…,"name":…,"scope":…,"mode":…`
	quotaWindowJS string
	stats         *policyStats
}

// workspaceMatcher holds one workspace's compiled policies.
type workspaceMatcher struct {
	ws       *catalog.Workspace
	policies []*compiledPolicy
}

// matcherSet is the compiled form of one catalog version.
type matcherSet struct {
	index uint64
	byWS  map[string]*workspaceMatcher
}

// policyStats counts, on this node, what a policy did. Observe-mode
// counts are what operators read before enforcing a policy.
type policyStats struct {
	workspaceID string
	matched     atomic.Uint64
	allowed     atomic.Uint64
	throttled   atomic.Uint64
	rejected    atomic.Uint64
	wouldThrot  atomic.Uint64
	wouldReject atomic.Uint64
	failOpen    atomic.Uint64
	failClosed  atomic.Uint64
	since       time.Time
}

type rateLimitModule struct {
	s   *Server
	ask asker
	// local reports whether this node owns key; nil means every key is
	// treated as local.
	local func(key string) bool

	cur atomic.Pointer[matcherSet]
	mu  sync.Mutex // serialises rebuilds and guards stats
	// stats outlive catalog versions: a PATCH must not reset the counts.
	stats map[string]*policyStats

	checks sync.Pool
}

func newRateLimitModule(s *Server) *rateLimitModule {
	m := &rateLimitModule{s: s, stats: map[string]*policyStats{}}
	if r := s.router; r != nil {
		m.ask = r
		m.local = func(key string) bool { return r.Ring().OwnsLocally(cluster.Partition(key)) }
	}
	m.checks.New = func() any { return new(rlCheck) }
	if s.reg != nil {
		s.reg.MustRegister(&policyCollector{m: m,
			decisions: prometheus.NewDesc("trustd_ratelimit_policy_decisions_total",
				"Applied decisions of enforced rate-limit checks by policy (this node).", []string{"workspace_id", "policy_id", "decision"}, nil),
			observed: prometheus.NewDesc("trustd_ratelimit_policy_observed_restrictions_total",
				"Requests an observed policy (mode observe, or keys outside enforce_percentage) would have throttled or rejected (this node).",
				[]string{"workspace_id", "policy_id", "decision"}, nil),
			degraded: prometheus.NewDesc("trustd_ratelimit_policy_degraded_total",
				"Checks answered by the policy's degraded behaviour because the bucket owner was unavailable (this node).",
				[]string{"workspace_id", "policy_id", "behaviour"}, nil),
		})
	}
	return m
}

// matchers returns the compiled policies of cat, building them once per
// catalog version.
func (m *rateLimitModule) matchers(cat *catalog.Catalog) *matcherSet {
	if cur := m.cur.Load(); cur != nil && cur.index == cat.Index {
		return cur
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.cur.Load(); cur != nil && cur.index == cat.Index {
		return cur
	}
	set := &matcherSet{index: cat.Index, byWS: map[string]*workspaceMatcher{}}
	for _, p := range cat.RateLimitPolicies {
		ws := cat.Workspaces[p.WorkspaceID]
		if ws == nil {
			continue
		}
		wm := set.byWS[ws.ID]
		if wm == nil {
			wm = &workspaceMatcher{ws: ws}
			set.byWS[ws.ID] = wm
		}
		wm.policies = append(wm.policies, m.compile(ws, p))
	}
	for _, wm := range set.byWS {
		sortPolicies(wm.policies)
	}
	// Only a newer catalog replaces the cached set, so two requests on
	// either side of an apply cannot flip it back and forth.
	if cur := m.cur.Load(); cur == nil || cur.index < set.index {
		m.cur.Store(set)
		for id := range m.stats {
			if _, ok := cat.RateLimitPolicies[id]; !ok {
				delete(m.stats, id) // deleted policies stop being exported
			}
		}
	}
	return set
}

// sortPolicies orders by id so answers list policies deterministically.
func sortPolicies(ps []*compiledPolicy) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].id < ps[j-1].id; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

func (m *rateLimitModule) compile(ws *catalog.Workspace, p *catalog.RateLimitPolicy) *compiledPolicy {
	scope, _ := parseScope(p.Scope)
	cp := &compiledPolicy{
		id: p.ID, name: p.Name, targetType: p.Target.Type, targetID: p.Target.ID,
		pattern: p.ActionPattern, method: p.Method, scope: scope,
		cfg: ratelimit.BucketConfig{Capacity: p.Bucket.Capacity, RefillAmount: p.Bucket.RefillAmount,
			RefillInterval: p.Bucket.RefillIntervalSeconds * int64(time.Second)},
		defaultCost: p.DefaultCost, adaptive: p.AdaptiveCost,
		mode:       resolveMode(p.Mode, ws.Settings.DefaultMode),
		failClosed: p.DegradedBehaviour == "fail_closed",
		enforcePct: uint64(p.EnforcePercentage),
		livePrefix: "l" + policyTag(ws.ID, p.ID),
		simPrefix:  "s" + policyTag(ws.ID, p.ID),
	}
	if p.Quota != nil {
		if w, err := ratelimit.ParseWindow(p.Quota.Window); err == nil {
			cp.quotaLimit, cp.window = p.Quota.Limit, w
		}
	}
	name, _ := json.Marshal(p.Name)
	head := append([]byte(`{"policy_id":"`), p.ID...)
	head = append(head, `","name":`...)
	head = append(head, name...)
	head = append(head, `,"scope":"`...)
	head = append(head, scopeNames[scope]...)
	head = append(head, `","mode":"`...)
	head = append(head, modeNames[cp.mode]...)
	cp.jsonHead = append(head, '"')
	st := m.stats[p.ID]
	if st == nil {
		st = &policyStats{workspaceID: ws.ID, since: m.s.clock().UTC()}
		m.stats[p.ID] = st
	}
	cp.stats = st
	return cp
}

// statsOf returns the counters of a policy, or nil before its first use.
func (m *rateLimitModule) statsOf(policyID string) *policyStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stats[policyID]
}

// matches reports whether p covers a request of app (site or mobile app
// id) for action and method. Action and method were validated already.
func (p *compiledPolicy) matches(appID, action, method string) bool {
	switch p.targetType {
	case catalog.TargetSite, catalog.TargetMobileApp:
		if p.targetID != appID {
			return false
		}
	}
	return ratelimit.MatchMethod(p.method, method) && ratelimit.MatchAction(p.pattern, action)
}

// enforcedFor reports whether the key whose scope hash is h is in the
// policy's enforced share. The share is a stable function of the hash, so
// a key stays enforced or observed for as long as the percentage stays.
func (p *compiledPolicy) enforcedFor(h *[32]byte) bool {
	if p.mode == modeObserve {
		return false
	}
	if p.enforcePct >= 100 {
		return true
	}
	v := uint64(h[24])<<56 | uint64(h[25])<<48 | uint64(h[26])<<40 | uint64(h[27])<<32 |
		uint64(h[28])<<24 | uint64(h[29])<<16 | uint64(h[30])<<8 | uint64(h[31])
	return v%100 < p.enforcePct
}

// policyTag names a workspace's policy inside bucket keys: 96 bits of a
// hash of both ids, base64url. Held keys are most of a bucket's memory
// (10 million of them must fit in 2 GiB), so a key is 39 bytes: one byte of
// space (live or simulation), the tag, and the first 128 bits of the
// scope value's keyed hash, all far beyond accidental collision.
func policyTag(workspaceID, policyID string) string {
	sum := sha256.Sum256([]byte(workspaceID + "/" + policyID))
	return base64.RawURLEncoding.EncodeToString(sum[:12])
}

// bucketKey is the key of the policy's bucket for scope hash h.
func (p *compiledPolicy) bucketKey(buf []byte, sim bool, h *[32]byte) string {
	pfx := p.livePrefix
	if sim {
		pfx = p.simPrefix
	}
	buf = append(buf[:0], pfx...)
	buf = base64.RawURLEncoding.AppendEncode(buf, h[:16])
	return string(buf)
}

// policyCollector exports the per-policy counters on each scrape.
type policyCollector struct {
	m                             *rateLimitModule
	decisions, observed, degraded *prometheus.Desc
}

func (c *policyCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.decisions
	ch <- c.observed
	ch <- c.degraded
}

func (c *policyCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for id, st := range c.m.stats {
		counter(c.decisions, st.allowed.Load(), st.workspaceID, id, "allow")
		counter(c.decisions, st.throttled.Load(), st.workspaceID, id, "throttle")
		counter(c.decisions, st.rejected.Load(), st.workspaceID, id, "reject")
		counter(c.observed, st.wouldThrot.Load(), st.workspaceID, id, "throttle")
		counter(c.observed, st.wouldReject.Load(), st.workspaceID, id, "reject")
		counter(c.degraded, st.failOpen.Load(), st.workspaceID, id, "fail_open")
		counter(c.degraded, st.failClosed.Load(), st.workspaceID, id, "fail_closed")
	}
}
