package http

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/trustd/trustd/actors"
	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/ident"
	"github.com/trustd/trustd/ratelimit"
)

// POST /v1/rate-limit/check and /v1/mobile/rate-limit/check: the hottest
// operation of the product. The body is read by flatObject and the answer
// is appended by hand; per-request scratch lives in a pooled rlCheck.
// Errors keep the spec's {success:false,error} shape (section 7.3).

// Error codes of the rate-limit check: the spec's (7.3) and, after them,
// the documented additions for input the spec does not name.
var (
	rlInvalidAction   = ErrorCode{"invalid-action", 400, "action missing or malformed."}
	rlMissingRoute    = ErrorCode{"missing-route", 400, "A route-scoped policy matched and no valid route (URL path only, no query string) was sent."}
	rlInvalidSubject  = ErrorCode{"invalid-subject_id", 400, "A subject-scoped policy matched and subject_id is missing or invalid."}
	rlInvalidDevice   = ErrorCode{"invalid-device_id", 400, "A device-scoped policy matched and device_id is missing or invalid."}
	rlInvalidScopeKey = ErrorCode{"invalid-scope_key", 400, "A custom-scoped policy matched and scope_key is missing or invalid."}
	rlDisabled        = ErrorCode{"rate-limiting-disabled", 403, "The workspace disabled Rate Limiting."}
	rlUnavailable     = ErrorCode{"rate-limiting-unavailable", 503, "Service not ready (no configuration leader yet); follow the configured failure strategy."}
	rlInvalidMethod   = ErrorCode{"invalid-method", 400, "trustd: method is not an HTTP method token."}
	rlInvalidCost     = ErrorCode{"invalid-cost", 400, "trustd: cost is not an integer from 1 to 1000000000."}
	rlInvalidAssess   = ErrorCode{"invalid-api_protection_assessment_id", 400, "trustd: api_protection_assessment_id is not a UUID."}
)

var rateLimitCheckErrors = []ErrorCode{ErrMissingSecret, ErrInvalidSecret, rlInvalidAction, rlMissingRoute, rlInvalidSubject,
	rlInvalidDevice, rlInvalidScopeKey, rlDisabled, ErrRateLimited, rlUnavailable, ErrMalformedJSON, ErrUnknownField,
	rlInvalidMethod, rlInvalidCost, rlInvalidAssess}

// Limits of caller-supplied identifiers.
const (
	maxRouteLen  = 2048
	maxCheckCost = 1_000_000_000
)

// The members of a check body; the bit of each is its index.
const (
	rlFieldSecret = iota
	rlFieldAction
	rlFieldMethod
	rlFieldSubject
	rlFieldDevice
	rlFieldRoute
	rlFieldScopeKey
	rlFieldCost
	rlFieldAssessment
	rlFieldPlatform
	rlFieldAppID
	numRLFields
)

var rlFieldNames = [numRLFields]string{"secret", "action", "method", "subject_id", "device_id", "route", "scope_key",
	"cost", "api_protection_assessment_id", "platform", "app_id"}

// rlInput is a parsed check body. Strings are views of the request body
// (or of the scanner's scratch), valid while the handler runs.
type rlInput struct {
	has    uint32
	vals   [numRLFields][]byte
	kinds  [numRLFields]flatKind
	mobile bool
}

func (in *rlInput) present(f int) bool { return in.has&(1<<f) != 0 && in.kinds[f] != flatNull }

// policyOutcome is one matched policy's part of a check.
type policyOutcome struct {
	p           *compiledPolicy
	enforced    bool
	mult        int64
	op          actors.Reserve
	err         error
	recommended ratelimit.Decision
	decision    ratelimit.Decision
	refunded    bool
	reasons     [3]string
	nreasons    int
}

func (o *policyOutcome) reason(r string) {
	if o.nreasons < len(o.reasons) {
		o.reasons[o.nreasons] = r
		o.nreasons++
	}
}

// rlCheck is the pooled scratch of one check.
type rlCheck struct {
	obj      flatObject
	in       rlInput
	out      []policyOutcome
	hashes   [numScopes][32]byte
	hashed   [numScopes]bool
	keyBuf   []byte
	body     []byte
	wg       sync.WaitGroup
	abandon  bool // an op timed out and may still run: never reuse
	topCodes [8]string
	ntop     int
}

func (k *rlCheck) reset() {
	k.out = k.out[:0]
	k.hashed = [numScopes]bool{}
	k.in = rlInput{}
	k.abandon = false
	k.ntop = 0
}

func (k *rlCheck) topReason(r string) {
	for _, have := range k.topCodes[:k.ntop] {
		if have == r {
			return
		}
	}
	if k.ntop < len(k.topCodes) {
		k.topCodes[k.ntop] = r
		k.ntop++
	}
}

// adaptiveMultiplier reads the assessment a check names and returns the
// cost multiplier its risk earns (spec 4.10 rule 6): only an assessment
// this service made and kept, of the same workspace and application, and
// younger than the workspace's adaptive-cost window counts. Anything else
// is ignored with a reason code; the caller never supplies a risk.
func (m *rateLimitModule) adaptiveMultiplier(c *Call, k *rlCheck, cl caller, id string) int64 {
	op := &actors.GetAssessment{ID: id}
	if err := m.ask.Ask(assessmentKey(id), op); err != nil {
		k.topReason("adaptive-assessment-unavailable")
		return 1
	}
	a := &op.Assessment
	window := int64(cl.ws.Settings.AdaptiveCostWindowSeconds) * int64(time.Second)
	now := c.Now().UnixNano()
	if !op.Found || a.WorkspaceID != cl.ws.ID || a.AppID != cl.appID || now-a.CreatedNs > window || now < a.CreatedNs {
		k.topReason("adaptive-assessment-unusable")
		return 1
	}
	return riskMultiplier(a.Risk)
}

func (s *Server) rateLimitCheck(c *Call)       { s.mods.rl.check(c, false) }
func (s *Server) mobileRateLimitCheck(c *Call) { s.mods.rl.check(c, true) }

func (c *Call) specFail(e ErrorCode) { c.specError(e.Status, e.Code) }

// parse reads and checks the body's members; false means the error was
// answered.
func (k *rlCheck) parse(c *Call, mobile bool) bool {
	if err := k.obj.scan(c.Ctx.Request.Body()); err != nil {
		c.specFail(ErrMalformedJSON)
		return false
	}
	in := &k.in
	in.mobile = mobile
	for i := 0; i < k.obj.n; i++ {
		m := &k.obj.members[i]
		f := rlFieldIndex(m.name, mobile)
		if f < 0 || in.has&(1<<f) != 0 {
			c.specFail(ErrUnknownField)
			return false
		}
		in.has |= 1 << f
		in.vals[f], in.kinds[f] = m.val, m.kind
	}
	// Type errors take the code of the field they are in.
	for f := 0; f < numRLFields; f++ {
		if !in.present(f) {
			continue
		}
		want := flatString
		if f == rlFieldCost {
			want = flatNumber
		}
		if in.kinds[f] != want {
			c.specFail(rlFieldError(f))
			return false
		}
	}
	return true
}

func rlFieldIndex(name []byte, mobile bool) int {
	for i, n := range rlFieldNames {
		if string(name) == n {
			if (i == rlFieldPlatform || i == rlFieldAppID) && !mobile {
				return -1
			}
			return i
		}
	}
	return -1
}

func rlFieldError(f int) ErrorCode {
	switch f {
	case rlFieldSecret:
		return ErrInvalidSecret
	case rlFieldAction:
		return rlInvalidAction
	case rlFieldMethod:
		return rlInvalidMethod
	case rlFieldSubject:
		return rlInvalidSubject
	case rlFieldDevice:
		return rlInvalidDevice
	case rlFieldRoute:
		return rlMissingRoute
	case rlFieldScopeKey:
		return rlInvalidScopeKey
	case rlFieldCost:
		return rlInvalidCost
	case rlFieldAssessment:
		return rlInvalidAssess
	}
	return ErrInvalidAppIdentity
}

// caller is who a check authenticated as.
type caller struct {
	ws    *catalog.Workspace
	appID string // site or mobile app id
}

// authenticate resolves the secret (bearer first, else body) to a site or
// a mobile app; false means the error was answered.
func (k *rlCheck) authenticate(c *Call, cat *catalog.Catalog) (caller, bool) {
	in := &k.in
	secret := c.bearer()
	if secret == "" && in.present(rlFieldSecret) {
		secret = string(in.vals[rlFieldSecret])
	} else if secret != "" && in.present(rlFieldSecret) && string(in.vals[rlFieldSecret]) != secret {
		c.specFail(ErrInvalidSecret) // two different secrets: refuse rather than guess
		return caller{}, false
	}
	if secret == "" {
		c.specFail(ErrMissingSecret)
		return caller{}, false
	}
	var cl caller
	if in.mobile {
		app := cat.AppBySecret(secret)
		if app == nil {
			c.specFail(ErrInvalidSecret)
			return caller{}, false
		}
		if string(in.vals[rlFieldPlatform]) != app.Platform || string(in.vals[rlFieldAppID]) != app.AppID ||
			!in.present(rlFieldPlatform) || !in.present(rlFieldAppID) {
			c.specFail(ErrInvalidAppIdentity)
			return caller{}, false
		}
		cl.appID, cl.ws = app.ID, cat.Workspaces[app.WorkspaceID]
	} else {
		site := cat.SiteBySecret(secret, c.Now())
		if site == nil || site.Sandbox() {
			c.specFail(ErrInvalidSecret)
			return caller{}, false
		}
		cl.appID, cl.ws = site.ID, cat.Workspaces[site.WorkspaceID]
	}
	if cl.ws == nil {
		c.specFail(ErrInvalidSecret)
		return caller{}, false
	}
	return cl, true
}

func (m *rateLimitModule) check(c *Call, mobile bool) {
	if !m.s.store.Ready() {
		c.specFail(rlUnavailable)
		return
	}
	k := m.checks.Get().(*rlCheck)
	k.reset()
	defer func() {
		if !k.abandon {
			m.checks.Put(k)
		}
	}()
	if !k.parse(c, mobile) {
		return
	}
	cat := c.Catalog()
	cl, ok := k.authenticate(c, cat)
	if !ok {
		return
	}
	if !c.admitCredential(cl.appID, cl.ws.ID) {
		return
	}
	if !cl.ws.Settings.RateLimitingEnabled {
		c.specFail(rlDisabled)
		return
	}
	in := &k.in
	action := string(in.vals[rlFieldAction])
	if !in.present(rlFieldAction) || !ratelimit.ValidAction(action) {
		c.specFail(rlInvalidAction)
		return
	}
	method := "POST"
	if in.present(rlFieldMethod) {
		method = string(in.vals[rlFieldMethod])
		if !ratelimit.ValidMethod(method) {
			c.specFail(rlInvalidMethod)
			return
		}
	}
	cost := int64(0)
	if in.present(rlFieldCost) {
		n, ok := flatUint(in.vals[rlFieldCost])
		if !ok || n < 1 || n > maxCheckCost {
			c.specFail(rlInvalidCost)
			return
		}
		cost = n
	}
	assessmentID := ""
	if in.present(rlFieldAssessment) {
		assessmentID = string(in.vals[rlFieldAssessment])
		if !isUUID(assessmentID) {
			c.specFail(rlInvalidAssess)
			return
		}
	}

	wm := m.matchers(cat).byWS[cl.ws.ID]
	adaptiveWanted := false
	if wm != nil {
		for _, p := range wm.policies {
			if !p.matches(cl.appID, action, method) {
				continue
			}
			if !k.scopeHash(c, cl, p.scope) {
				return
			}
			k.out = append(k.out, policyOutcome{p: p, mult: 1})
			adaptiveWanted = adaptiveWanted || p.adaptive
		}
	}
	if len(k.out) == 0 {
		k.topReason("no-matching-policy")
		m.answer(c, k, 1)
		return
	}

	mult := int64(1)
	if assessmentID != "" && adaptiveWanted && cl.ws.Settings.AdaptiveCostEnabled {
		mult = m.adaptiveMultiplier(c, k, cl, assessmentID)
	}
	for i := range k.out {
		o := &k.out[i]
		p := o.p
		h := &k.hashes[p.scope]
		o.enforced = p.enforcedFor(h)
		base := max(cost, p.defaultCost)
		if p.adaptive && mult > 1 && cl.ws.Settings.AdaptiveCostEnabled {
			o.mult = mult
			o.reason("adaptive-cost-applied")
		}
		o.op = actors.Reserve{Key: p.bucketKey(k.keyBuf, !o.enforced, h), Bucket: p.cfg,
			QuotaLimit: p.quotaLimit, QuotaWindow: p.window, Cost: base * o.mult}
	}
	m.reserve(k)
	m.decide(k)
	m.answer(c, k, mult)
}

// scopeHash computes, once per check and scope kind, the keyed hash of the
// scope value, answering a missing or invalid identifier itself.
func (k *rlCheck) scopeHash(c *Call, cl caller, sc scopeKind) bool {
	if k.hashed[sc] {
		return true
	}
	in := &k.in
	var value []byte
	var field int
	switch sc {
	case scopeWorkspace:
		value = nil
	case scopeApplication:
		value = []byte(cl.appID)
	case scopeSubject:
		field = rlFieldSubject
	case scopeDevice:
		field = rlFieldDevice
	case scopeRoute:
		field = rlFieldRoute
	case scopeCustom:
		field = rlFieldScopeKey
	}
	if sc >= scopeSubject {
		value = in.vals[field]
		valid := in.present(field) && ident.Valid(value)
		if sc == scopeRoute {
			valid = in.present(field) && validRoute(value)
		}
		if !valid {
			c.specFail(rlFieldError(field))
			return false
		}
	}
	k.hashes[sc] = ratelimit.HashScope(cl.ws.ScopeKey, scopeNames[sc]+"\x00"+string(value))
	k.hashed[sc] = true
	return true
}

// validRoute accepts a URL path only: it starts with '/', has no query or
// fragment and no spaces or control characters (spec 8).
func validRoute(v []byte) bool {
	if len(v) == 0 || len(v) > maxRouteLen || v[0] != '/' {
		return false
	}
	for _, c := range v {
		if c <= 0x20 || c == 0x7f || c == '?' || c == '#' {
			return false
		}
	}
	return true
}

// reserve runs every policy's Reserve. Asks to other nodes go out in
// parallel (a forwarded ask waits on the network); asks this node owns run
// one after another, because a local ask is a few microseconds of shard
// work and a goroutine per ask costs more than it overlaps.
func (m *rateLimitModule) reserve(k *rlCheck) {
	run := func(o *policyOutcome) {
		o.err = m.ask.Ask(o.op.Key, &o.op)
	}
	for i := range k.out {
		o := &k.out[i]
		if m.local == nil || m.local(o.op.Key) {
			continue
		}
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			run(o)
		}()
	}
	for i := range k.out {
		if o := &k.out[i]; m.local == nil || m.local(o.op.Key) {
			run(o)
		}
	}
	k.wg.Wait()
	for i := range k.out {
		if k.out[i].err != nil {
			k.abandon = true
		}
	}
}

// refusal is what a refusing policy asks for in its mode.
func refusal(p *compiledPolicy, op *actors.Reserve) ratelimit.Decision {
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
func (m *rateLimitModule) decide(k *rlCheck) {
	applied := ratelimit.Allow
	for i := range k.out {
		o := &k.out[i]
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
	for i := range k.out {
		o := &k.out[i]
		if applied != ratelimit.Allow && o.err == nil && o.op.OK {
			o.refunded = true
			_ = m.ask.Ask(o.op.Key, &actors.Refund{Key: o.op.Key, Bucket: o.op.Bucket, Cost: o.op.Cost,
				QuotaStart: o.op.QuotaStart, QuotaLimit: o.op.QuotaLimit})
			o.op.Remaining = min(o.op.Remaining+o.op.Cost, o.op.Bucket.Capacity)
			if o.op.QuotaLimit > 0 {
				o.op.QuotaRemaining = min(o.op.QuotaRemaining+o.op.Cost, o.op.QuotaLimit)
			}
		}
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

// retryMs is the wait a refusing outcome asks for, or -1 for none.
func (o *policyOutcome) retryMs() int64 {
	if o.err != nil || o.op.OK || o.op.RetryAfterNs == ratelimit.Never {
		return -1
	}
	return (o.op.RetryAfterNs + int64(time.Millisecond) - 1) / int64(time.Millisecond)
}

// answer appends the decision (spec 2.10) by hand.
func (m *rateLimitModule) answer(c *Call, k *rlCheck, mult int64) {
	recommended, applied := ratelimit.Allow, ratelimit.Allow
	retry := int64(0)
	remaining := int64(-1)
	for i := range k.out {
		o := &k.out[i]
		recommended = ratelimit.Stricter(recommended, o.recommended)
		applied = ratelimit.Stricter(applied, o.decision)
		if o.decision != ratelimit.Allow {
			retry = max(retry, o.retryMs())
		}
		if o.err == nil && (remaining < 0 || o.op.Remaining < remaining) {
			remaining = o.op.Remaining
		}
	}
	for i := range k.out {
		o := &k.out[i]
		if o.recommended == ratelimit.Allow && o.nreasons == 0 {
			continue
		}
		for _, r := range o.reasons[:o.nreasons] {
			k.topReason(r)
		}
	}
	b := k.body[:0]
	b = append(b, `{"success":true,"decision_id":"`...)
	b = appendUUID(b)
	b = append(b, `","allowed":`...)
	b = strconv.AppendBool(b, applied == ratelimit.Allow)
	b = append(b, `,"recommended_decision":"`...)
	b = append(b, recommended.String()...)
	b = append(b, `","decision":"`...)
	b = append(b, applied.String()...)
	b = append(b, `","retry_after_ms":`...)
	b = strconv.AppendInt(b, retry, 10)
	b = append(b, `,"retry_after_seconds":`...)
	b = strconv.AppendInt(b, (retry+999)/1000, 10)
	b = append(b, `,"matched_policy_count":`...)
	b = strconv.AppendInt(b, int64(len(k.out)), 10)
	if remaining >= 0 {
		b = append(b, `,"remaining":`...)
		b = strconv.AppendInt(b, remaining, 10)
	}
	b = append(b, `,"adaptive_multiplier":`...)
	b = strconv.AppendInt(b, mult, 10)
	b = append(b, `,"reason_codes":`...)
	b = appendStrings(b, k.topCodes[:k.ntop])
	b = append(b, `,"policies":[`...)
	for i := range k.out {
		if i > 0 {
			b = append(b, ',')
		}
		b = k.out[i].appendJSON(b)
	}
	b = append(b, "]}"...)
	k.body = b
	if retry > 0 {
		setRetryAfter(&c.Ctx.Response.Header, (retry+999)/1000)
	}
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("application/json")
	c.Ctx.SetBody(b)
}

func (o *policyOutcome) appendJSON(b []byte) []byte {
	p := o.p
	b = append(b, p.jsonHead...)
	b = append(b, `,"enforced":`...)
	b = strconv.AppendBool(b, o.enforced)
	b = append(b, `,"recommended_decision":"`...)
	b = append(b, o.recommended.String()...)
	b = append(b, `","decision":"`...)
	b = append(b, o.decision.String()...)
	b = append(b, `","cost":`...)
	b = strconv.AppendInt(b, o.op.Cost, 10)
	b = append(b, `,"adaptive_multiplier":`...)
	b = strconv.AppendInt(b, o.mult, 10)
	b = append(b, `,"capacity":`...)
	b = strconv.AppendInt(b, p.cfg.Capacity, 10)
	if o.err == nil {
		b = append(b, `,"remaining":`...)
		b = strconv.AppendInt(b, o.op.Remaining, 10)
	}
	b = append(b, `,"retry_after_ms":`...)
	b = strconv.AppendInt(b, max(o.retryMs(), 0), 10)
	if p.quotaLimit > 0 {
		b = append(b, `,"quota":{"limit":`...)
		b = strconv.AppendInt(b, p.quotaLimit, 10)
		b = append(b, `,"window":"`...)
		b = append(b, p.window.String()...)
		b = append(b, '"')
		if o.err == nil && o.op.QuotaResetNs != ratelimit.Never {
			b = append(b, `,"remaining":`...)
			b = strconv.AppendInt(b, o.op.QuotaRemaining, 10)
			b = append(b, `,"resets_at":"`...)
			b = time.Unix(0, o.op.QuotaResetNs).UTC().AppendFormat(b, time.RFC3339)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, `,"refunded":`...)
	b = strconv.AppendBool(b, o.refunded)
	b = append(b, `,"reason_codes":`...)
	b = appendStrings(b, o.reasons[:o.nreasons])
	return append(b, '}')
}

// appendStrings appends a JSON array of strings that need no escaping
// (reason codes are constants of this file).
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, s...)
		b = append(b, '"')
	}
	return append(b, ']')
}

// appendUUID appends a random version-4 UUID. A decision id correlates
// logs and is not a secret, so the runtime's per-thread ChaCha8 generator
// is enough and saves a system call per check.
func appendUUID(b []byte) []byte {
	var u [16]byte
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := 0; i < 8; i++ {
		u[i], u[8+i] = byte(hi>>(56-8*i)), byte(lo>>(56-8*i))
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	const hexd = "0123456789abcdef"
	for i, x := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexd[x>>4], hexd[x&0xf])
	}
	return b
}

// isUUID accepts the canonical 8-4-4-4-12 hexadecimal form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
			continue
		}
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
