package ratecheck

import (
	"context"
	"sync"
	"time"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/lib/ident"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Limits of caller-supplied values.
const (
	MaxCost = 1_000_000_000
)

// Caller is who a check authenticated as.
type Caller struct {
	Workspace *catalog.Workspace
	AppID     string // site or mobile app id
}

// Request is a decoded check (spec 4.10). Byte slices, Action and Method
// may be views of the request body: Check does not keep them (AssessmentID
// travels in an actor op and must be a string of its own). A nil slice is
// an absent member.
type Request struct {
	Action        string
	Method        string // the HTTP method; POST when !HasMethod
	HasMethod     bool
	Cost          int64 // the policies' default_cost when !HasCost
	HasCost       bool
	AssessmentID  string
	HasAssessment bool
	SubjectID     []byte
	DeviceID      []byte
	Route         []byte
	ScopeKey      []byte
}

// outcome is one matched policy's part of a check.
type outcome struct {
	p           *policy
	enforced    bool
	mult        int64
	op          actors.Reserve
	refund      actors.Refund
	err         error
	recommended ratelimit.Decision
	decision    ratelimit.Decision
	refunded    bool
	refundErr   error // a refund not known to have run: it may still run
	reasons     [3]string
	nreasons    int
}

func (o *outcome) reason(r string) {
	if o.nreasons < len(o.reasons) {
		o.reasons[o.nreasons] = r
		o.nreasons++
	}
}

// Result is a decided check. It is pooled: hand it back with Release once
// its JSON is written.
type Result struct {
	out      []outcome
	hashes   [numScopes][32]byte
	hashed   [numScopes]bool
	keyBuf   []byte
	body     []byte
	wg       sync.WaitGroup
	abandon  bool // an op timed out and may still run: never reuse
	topCodes [8]string
	ntop     int
	mult     int64
	// The local asks of one check, handed to an allAsker together.
	keys   []string
	ops    []actors.Op
	errs   []error
	idx    []int
	parts  []int
	all    actors.ReserveAll
	undone bool // r.all took every reservation back inside the shard
	scopes scopeHasher
	// ctx is the check's request context, for its forwarded asks (their
	// trace); dropped on Release.
	ctx context.Context
}

func (r *Result) reset() {
	r.out = r.out[:0]
	r.hashed = [numScopes]bool{}
	r.abandon = false
	r.ntop = 0
	r.mult = 1
	r.undone = false
}

// allAsker is an Asker that can run several local asks at once
// (*cluster.Router): AskAll queues them on their shards together and waits
// once; AskTogether runs one op on the shard that holds every key, when
// one does.
type allAsker interface {
	AskAll(keys []string, ops []actors.Op, errs []error)
	AskTogether(keys []string, parts []int, op actors.Op) (ok bool, err error)
}

// gather resets r's local-ask lists.
func (r *Result) gather() {
	clear(r.ops)
	r.keys, r.ops, r.errs, r.idx = r.keys[:0], r.ops[:0], r.errs[:0], r.idx[:0]
}

func (r *Result) add(i int, key string, op actors.Op) {
	r.keys, r.ops, r.errs, r.idx = append(r.keys, key), append(r.ops, op), append(r.errs, nil), append(r.idx, i)
}

func (r *Result) topReason(code string) {
	for _, have := range r.topCodes[:r.ntop] {
		if have == code {
			return
		}
	}
	if r.ntop < len(r.topCodes) {
		r.topCodes[r.ntop] = code
		r.ntop++
	}
}

// Release returns r to the module's pool. r must not be used afterwards.
func (m *Module) Release(r *Result) {
	if r != nil && !r.abandon {
		r.ctx = nil
		m.checks.Put(r)
	}
}

// Check decides req for caller: validates it, reserves on the bucket of
// every matching policy (in parallel where owners are remote), refunds
// every reservation when the applied decision is not allow, and counts.
// Errors are this package's codes. ctx is the request's: it carries the
// request's span to the asks forwarded to other nodes (tracing); it does
// not bound the check (the router's ask timeout does).
func (m *Module) Check(ctx context.Context, cat *catalog.Catalog, caller Caller, req *Request) (*Result, error) {
	ws := caller.Workspace
	if !ws.Settings.RateLimitingEnabled {
		return nil, ErrDisabled
	}
	if !ratelimit.ValidAction(req.Action) {
		return nil, ErrInvalidAction
	}
	method := "POST"
	if req.HasMethod {
		method = req.Method
		if !ratelimit.ValidMethod(method) {
			return nil, ErrInvalidMethod
		}
	}
	cost := int64(0)
	if req.HasCost {
		if req.Cost < 1 || req.Cost > MaxCost {
			return nil, ErrInvalidCost
		}
		cost = req.Cost
	}
	if req.HasAssessment && !ident.UUID(req.AssessmentID) {
		return nil, ErrInvalidAssessment
	}

	r := m.checks.Get().(*Result)
	r.reset()
	r.ctx = ctx
	wm := m.matchers(cat).byWS[ws.ID]
	adaptiveWanted := false
	if wm != nil {
		for _, p := range wm.policies {
			if !p.matches(caller.AppID, req.Action, method) {
				continue
			}
			if err := r.scopeHash(caller, req, p.scope, wm.mac); err != nil {
				m.Release(r)
				return nil, err
			}
			r.out = append(r.out, outcome{p: p, mult: 1})
			adaptiveWanted = adaptiveWanted || p.adaptive
		}
	}
	if len(r.out) == 0 {
		r.topReason("no-matching-policy")
		return r, nil
	}

	if req.HasAssessment && adaptiveWanted && ws.Settings.AdaptiveCostEnabled {
		r.mult = m.adaptiveMultiplier(r, caller, req.AssessmentID)
	}
	for i := range r.out {
		o := &r.out[i]
		p := o.p
		h := &r.hashes[p.scope]
		o.enforced = p.enforcedFor(h)
		base := max(cost, p.defaultCost)
		if p.adaptive && r.mult > 1 {
			o.mult = r.mult
			o.reason("adaptive-cost-applied")
		}
		r.keyBuf = p.bucketKey(r.keyBuf, !o.enforced, h)
		o.op = actors.Reserve{Key: string(r.keyBuf), Bucket: p.cfg,
			QuotaLimit: p.quotaLimit, QuotaWindow: p.window, Cost: base * o.mult}
	}
	m.reserve(r)
	m.decide(r)
	return r, nil
}

// adaptiveMultiplier reads the assessment a check names and returns the
// cost multiplier its risk earns (spec 4.10 rule 6): only an assessment
// this service made and kept, of the same workspace and application, and
// younger than the workspace's adaptive-cost window counts. Anything else
// is ignored with a reason code; the caller never supplies a risk.
func (m *Module) adaptiveMultiplier(r *Result, caller Caller, id string) int64 {
	op := &actors.GetAssessment{ID: id}
	if err := m.ask.Ask(actors.AssessmentKey(id), op); err != nil {
		r.topReason("adaptive-assessment-unavailable")
		return 1
	}
	a := &op.Assessment
	ws := caller.Workspace
	window := int64(ws.Settings.AdaptiveCostWindowSeconds) * int64(time.Second)
	now := m.now().UnixNano()
	if !op.Found || a.WorkspaceID != ws.ID || a.AppID != caller.AppID || now-a.CreatedNs > window || now < a.CreatedNs {
		r.topReason("adaptive-assessment-unusable")
		return 1
	}
	return RiskMultiplier(a.Risk)
}

// RiskMultiplier is the adaptive-cost multiplier an assessment's risk
// earns: medium risk (≥ 0.3, API Protection's band) costs double, high
// risk (≥ 0.7) four times.
func RiskMultiplier(risk float64) int64 {
	switch {
	case risk >= 0.7:
		return 4
	case risk >= 0.3:
		return 2
	}
	return 1
}

// scopeHash computes, once per check and scope kind, the keyed hash of the
// scope value, refusing a missing or invalid identifier.
func (r *Result) scopeHash(caller Caller, req *Request, sc Scope, mac *scopeMAC) error {
	if r.hashed[sc] {
		return nil
	}
	var value []byte
	switch sc {
	case ScopeApplication:
		value = []byte(caller.AppID)
	case ScopeSubject:
		if value = req.SubjectID; value == nil || !ident.Valid(value) {
			return ErrInvalidSubject
		}
	case ScopeDevice:
		if value = req.DeviceID; value == nil || !ident.Valid(value) {
			return ErrInvalidDevice
		}
	case ScopeRoute:
		if value = req.Route; !ident.Route(value) {
			return ErrMissingRoute
		}
	case ScopeCustom:
		if value = req.ScopeKey; value == nil || !ident.Valid(value) {
			return ErrInvalidScopeKey
		}
	}
	r.hashes[sc] = r.scopes.hash(mac, caller.Workspace.ScopeKey, scopeNames[sc], value)
	r.hashed[sc] = true
	return nil
}

// reserve runs every policy's Reserve. Asks to other nodes go out in
// parallel (a forwarded ask waits on the network; the peer transport
// carries concurrent asks to one node in one frame); the last of them runs
// on this goroutine, after the local ones, so a check with one remote
// policy starts no goroutine. Asks this node owns are queued on their
// shards together and waited for once (allAsker.AskAll); when every key of
// the check is on one local shard they run as one all-or-none op
// (actors.ReserveAll): a refused check then takes nothing back later,
// because it never held anything another check could see.
func (m *Module) reserve(r *Result) {
	last := -1
	for i := range r.out {
		if o := &r.out[i]; m.local != nil && !m.local(o.op.Key) {
			if last >= 0 {
				r.wg.Add(1)
				go m.reserveRemote(r, &r.out[last])
			}
			last = i
		}
	}
	aa, _ := m.ask.(allAsker)
	if aa == nil {
		for i := range r.out {
			if o := &r.out[i]; m.local == nil || m.local(o.op.Key) {
				o.err = m.inCtx.Ask(r.ctx, o.op.Key, &o.op)
			}
		}
	} else {
		r.gather()
		for i := range r.out {
			if o := &r.out[i]; m.local == nil || m.local(o.op.Key) {
				r.add(i, o.op.Key, &o.op)
			}
		}
		switch {
		case len(r.ops) == 1:
			r.out[r.idx[0]].err = m.ask.Ask(r.keys[0], r.ops[0])
		case len(r.ops) == len(r.out) && m.reserveTogether(aa, r):
		case len(r.ops) > 1:
			aa.AskAll(r.keys, r.ops, r.errs)
			for j, i := range r.idx {
				r.out[i].err = r.errs[j]
			}
		}
	}
	if last >= 0 {
		o := &r.out[last]
		o.err = m.inCtx.Ask(r.ctx, o.op.Key, &o.op)
	}
	r.wg.Wait()
	for i := range r.out {
		if r.out[i].err != nil {
			r.abandon = true
		}
	}
}

// reserveTogether runs every reservation of a check whose keys are all on
// one local shard as one all-or-none op (actors.ReserveAll), and reports
// whether it could.
func (m *Module) reserveTogether(aa allAsker, r *Result) bool {
	a := &r.all
	a.Ops, a.Binding = a.Ops[:0], a.Binding[:0]
	for i := range r.out {
		a.Ops = append(a.Ops, &r.out[i].op)
		a.Binding = append(a.Binding, r.out[i].enforced)
	}
	r.parts = append(r.parts[:0], make([]int, len(r.keys))...)
	a.Parts = r.parts
	ok, err := aa.AskTogether(r.keys, r.parts, a)
	if !ok {
		return false
	}
	for i := range r.out {
		r.out[i].err = err
	}
	r.undone = err == nil && a.Undone
	clear(a.Ops)
	return true
}

// refund gives back every reservation that took, for a check whose
// applied decision is not allow: remote refunds in parallel (the last on
// this goroutine), local ones together, as reserve does. After a
// ReserveAll that undid itself only the reported figures change.
func (m *Module) refund(r *Result) {
	last := -1
	aa, _ := m.ask.(allAsker)
	if aa != nil {
		r.gather()
	}
	for i := range r.out {
		o := &r.out[i]
		if o.err != nil || !o.op.OK {
			continue
		}
		o.refunded = true
		o.refund = actors.Refund{Key: o.op.Key, Bucket: o.op.Bucket, Cost: o.op.Cost,
			QuotaStart: o.op.QuotaStart, QuotaLimit: o.op.QuotaLimit}
		o.op.Remaining = min(o.op.Remaining+o.op.Cost, o.op.Bucket.Capacity)
		if o.op.QuotaLimit > 0 {
			o.op.QuotaRemaining = min(o.op.QuotaRemaining+o.op.Cost, o.op.QuotaLimit)
		}
		if r.undone {
			continue // the shard gave it back already (ReserveAll)
		}
		if m.local != nil && !m.local(o.op.Key) {
			if last >= 0 {
				r.wg.Add(1)
				go m.refundRemote(r, &r.out[last])
			}
			last = i
			continue
		}
		if aa != nil {
			r.add(i, o.refund.Key, &o.refund)
			continue
		}
		o.refundErr = m.inCtx.Ask(r.ctx, o.refund.Key, &o.refund)
	}
	switch {
	case len(r.ops) == 1:
		r.out[r.idx[0]].refundErr = m.ask.Ask(r.keys[0], r.ops[0])
	case len(r.ops) > 1:
		aa.AskAll(r.keys, r.ops, r.errs)
		for j, i := range r.idx {
			r.out[i].refundErr = r.errs[j]
		}
	}
	if last >= 0 {
		o := &r.out[last]
		o.refundErr = m.inCtx.Ask(r.ctx, o.refund.Key, &o.refund)
	}
	r.wg.Wait()
	// A refund that timed out may still run on its shard and reads its
	// op from this Result: never hand it to another check.
	for i := range r.out {
		if r.out[i].refundErr != nil {
			r.abandon = true
		}
	}
}

func (m *Module) refundRemote(r *Result, o *outcome) {
	defer r.wg.Done()
	o.refundErr = m.inCtx.Ask(r.ctx, o.refund.Key, &o.refund)
}

func (m *Module) reserveRemote(r *Result, o *outcome) {
	defer r.wg.Done()
	o.err = m.inCtx.Ask(r.ctx, o.op.Key, &o.op)
}

// refusal is what a refusing policy asks for in its mode.
func refusal(p *policy, op *actors.Reserve) ratelimit.Decision {
	switch p.mode {
	case modeThrottle:
		return ratelimit.Throttle
	case modeEnforce:
		return ratelimit.Reject
	}
	// An observe-mode policy has no mode of its own to recommend: a wait
	// would help an exhausted bucket, a spent quota or impossible cost not.
	if op.Refused == actors.RefusedBucket && op.RetryAfterNs != ratelimit.Never {
		return ratelimit.Throttle
	}
	return ratelimit.Reject
}

// decide folds the outcomes (strictest wins), refunds every reservation
// when the applied decision is not allow, and counts.
func (m *Module) decide(r *Result) {
	applied := ratelimit.Allow
	for i := range r.out {
		o := &r.out[i]
		p := o.p
		switch {
		case o.err != nil && p.failClosed:
			o.recommended = refusal(p, &o.op)
			o.reason("degraded-fail-closed")
			p.stats.failClosed.Add(1)
		case o.err != nil:
			o.recommended = ratelimit.Allow
			o.reason("degraded-fail-open")
			p.stats.failOpen.Add(1)
		case !o.op.OK:
			o.recommended = refusal(p, &o.op)
			if o.op.Refused == actors.RefusedQuota {
				o.reason("fixed-window-quota-exceeded")
			} else {
				o.reason("token-bucket-exhausted")
				if o.op.QuotaLimit > 0 && o.op.QuotaRemaining < o.op.Cost {
					o.reason("fixed-window-quota-exceeded")
				}
			}
		}
		if o.enforced {
			o.decision = o.recommended
		} else if o.recommended != ratelimit.Allow {
			o.reason("observe-only")
		}
		applied = ratelimit.Stricter(applied, o.decision)
	}
	if applied != ratelimit.Allow {
		m.refund(r)
	}
	for i := range r.out {
		o := &r.out[i]
		st := o.p.stats
		st.matched.Add(1)
		switch {
		case o.enforced && o.decision == ratelimit.Allow:
			st.allowed.Add(1)
		case o.enforced && o.decision == ratelimit.Throttle:
			st.throttled.Add(1)
		case o.enforced:
			st.rejected.Add(1)
		case o.recommended == ratelimit.Throttle:
			st.wouldThrot.Add(1)
		case o.recommended == ratelimit.Reject:
			st.wouldReject.Add(1)
		}
	}
}
