package ratecheck

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Policies live in the catalog; each catalog version is compiled once into
// per-workspace matchers, so a check never re-reads policy JSON or
// resolves modes.

// Scope is a policy's scope (spec 2.11).
type Scope uint8

// The scopes, in the order their values are hashed.
const (
	ScopeWorkspace Scope = iota
	ScopeApplication
	ScopeSubject
	ScopeDevice
	ScopeRoute
	ScopeCustom
	numScopes
)

var scopeNames = [numScopes]string{"workspace", "application", "subject", "device", "route", "custom"}

func (s Scope) String() string { return scopeNames[s] }

// ParseScope reads a policy's scope name.
func ParseScope(s string) (Scope, bool) {
	for i, n := range scopeNames {
		if n == s {
			return Scope(i), true
		}
	}
	return 0, false
}

// mode is a policy's mode once workspace_default is resolved.
type mode uint8

const (
	modeObserve mode = iota
	modeThrottle
	modeEnforce
)

var modeNames = [...]string{"observe", "throttle", "enforce"}

func resolveMode(policy, workspaceDefault string) mode {
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

// policy is a policy ready for the hot path.
type policy struct {
	id, name    string
	targetType  string
	targetID    string
	pattern     string
	method      string
	scope       Scope
	cfg         ratelimit.BucketConfig
	defaultCost int64
	quotaLimit  int64
	window      ratelimit.Window
	adaptive    bool
	mode        mode
	failClosed  bool
	enforcePct  uint64
	livePrefix  string // actors.SpaceBucket + tag: live state
	simPrefix   string // actors.SpaceSimulation + tag: observe-mode simulation state
	jsonHead    []byte // `{"policy_id":…,"name":…,"scope":…,"mode":…`
	jsonCap     []byte // `,"capacity":…`
	stats       *stats
}

// workspaceMatcher holds one workspace's compiled policies.
type workspaceMatcher struct {
	policies []*policy
	mac      *scopeMAC // the workspace's scope key, pads hashed
}

// matcherSet is the compiled form of one catalog version.
type matcherSet struct {
	index uint64
	byWS  map[string]*workspaceMatcher
}

// stats counts, on this node, what a policy did. Observe-mode counts are
// what operators read before enforcing a policy.
type stats struct {
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

// Stats is what one policy did on this node since Since.
type Stats struct {
	Since                                      time.Time
	Matched, Allowed, Throttled, Rejected      uint64
	ObservedWouldThrottle, ObservedWouldReject uint64
	DegradedFailOpen, DegradedFailClosed       uint64
}

// Config is what a Module needs.
type Config struct {
	Asker actors.Asker
	// Local reports whether this node owns key; nil treats every key as
	// local.
	Local func(key string) bool
	Now   func() time.Time
}

// Module decides rate-limit checks. It is safe for concurrent use.
type Module struct {
	ask   actors.Asker
	inCtx actors.InContext // m.ask within a check's request context
	local func(key string) bool
	now   func() time.Time

	cur atomic.Pointer[matcherSet]
	mu  sync.Mutex // serialises rebuilds and guards stats
	// stats outlive catalog versions: a PATCH must not reset the counts.
	stats map[string]*stats

	checks sync.Pool
}

// New returns a module.
func New(cfg Config) *Module {
	m := &Module{ask: cfg.Asker, inCtx: actors.NewInContext(cfg.Asker), local: cfg.Local, now: cfg.Now, stats: map[string]*stats{}}
	if m.now == nil {
		m.now = time.Now
	}
	m.checks.New = func() any { return new(Result) }
	return m
}

// matchers returns the compiled policies of cat, building them once per
// catalog version.
func (m *Module) matchers(cat *catalog.Catalog) *matcherSet {
	if cur := m.cur.Load(); cur != nil && cur.index == cat.ConfigIndex {
		return cur
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur := m.cur.Load(); cur != nil && cur.index == cat.ConfigIndex {
		return cur
	}
	set := &matcherSet{index: cat.ConfigIndex, byWS: map[string]*workspaceMatcher{}}
	for _, p := range cat.RateLimitPolicies {
		ws := cat.Workspaces[p.WorkspaceID]
		if ws == nil {
			continue
		}
		wm := set.byWS[ws.ID]
		if wm == nil {
			wm = &workspaceMatcher{mac: newScopeMAC(ws.ScopeKey)}
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
func sortPolicies(ps []*policy) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].id < ps[j-1].id; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

func (m *Module) compile(ws *catalog.Workspace, p *catalog.RateLimitPolicy) *policy {
	scope, _ := ParseScope(p.Scope)
	cp := &policy{
		id: p.ID, name: p.Name, targetType: p.Target.Type, targetID: p.Target.ID,
		pattern: p.ActionPattern, method: p.Method, scope: scope,
		cfg: ratelimit.BucketConfig{Capacity: p.Bucket.Capacity, RefillAmount: p.Bucket.RefillAmount,
			RefillInterval: p.Bucket.RefillIntervalSeconds * int64(time.Second)},
		defaultCost: p.DefaultCost, adaptive: p.AdaptiveCost,
		mode:       resolveMode(p.Mode, ws.Settings.DefaultMode),
		failClosed: p.DegradedBehaviour == "fail_closed",
		enforcePct: uint64(p.EnforcePercentage),
		livePrefix: actors.SpaceBucket + policyTag(ws.ID, p.ID),
		simPrefix:  actors.SpaceSimulation + policyTag(ws.ID, p.ID),
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
	cp.jsonCap = strconv.AppendInt([]byte(`,"capacity":`), cp.cfg.Capacity, 10)
	st := m.stats[p.ID]
	if st == nil {
		st = &stats{workspaceID: ws.ID, since: m.now().UTC()}
		m.stats[p.ID] = st
	}
	cp.stats = st
	return cp
}

// PolicyStats returns what the policy did on this node, compiling cat
// first so a policy that exists has counters. False: no such policy.
func (m *Module) PolicyStats(cat *catalog.Catalog, policyID string) (Stats, bool) {
	m.matchers(cat)
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.stats[policyID]
	if st == nil {
		return Stats{}, false
	}
	return Stats{Since: st.since,
		Matched: st.matched.Load(), Allowed: st.allowed.Load(), Throttled: st.throttled.Load(), Rejected: st.rejected.Load(),
		ObservedWouldThrottle: st.wouldThrot.Load(), ObservedWouldReject: st.wouldReject.Load(),
		DegradedFailOpen: st.failOpen.Load(), DegradedFailClosed: st.failClosed.Load()}, true
}

// matches reports whether p covers a request of app (site or mobile app
// id) for action and method. Action and method were validated already.
func (p *policy) matches(appID, action, method string) bool {
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
func (p *policy) enforcedFor(h *[32]byte) bool {
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

// bucketKey appends the key of the policy's bucket for scope hash h to
// buf[:0].
func (p *policy) bucketKey(buf []byte, sim bool, h *[32]byte) []byte {
	pfx := p.livePrefix
	if sim {
		pfx = p.simPrefix
	}
	buf = append(buf[:0], pfx...)
	return base64.RawURLEncoding.AppendEncode(buf, h[:16])
}

// Collector exports the per-policy counters of this node on each scrape.
func (m *Module) Collector() prometheus.Collector {
	return &collector{m: m,
		decisions: prometheus.NewDesc("trustd_ratelimit_policy_decisions_total",
			"Applied decisions of enforced rate-limit checks by policy (this node).", []string{"workspace_id", "policy_id", "decision"}, nil),
		observed: prometheus.NewDesc("trustd_ratelimit_policy_observed_restrictions_total",
			"Requests an observed policy (mode observe, or keys outside enforce_percentage) would have throttled or rejected (this node).",
			[]string{"workspace_id", "policy_id", "decision"}, nil),
		degraded: prometheus.NewDesc("trustd_ratelimit_policy_degraded_total",
			"Checks answered by the policy's degraded behaviour because the bucket owner was unavailable (this node).",
			[]string{"workspace_id", "policy_id", "behaviour"}, nil),
	}
}

type collector struct {
	m                             *Module
	decisions, observed, degraded *prometheus.Desc
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.decisions
	ch <- c.observed
	ch <- c.degraded
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
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
