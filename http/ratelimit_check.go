package http

import (
	"time"

	"github.com/trustd/trustd/catalog"
	"github.com/trustd/trustd/cluster"
	"github.com/trustd/trustd/errcode"
	"github.com/trustd/trustd/traffic/ratecheck"
)

// POST /v1/rate-limit/check and /v1/mobile/rate-limit/check: transport of
// the hottest operation of the product. The body is read by flatObject
// (no reflection), the caller authenticated from the catalog snapshot, and
// the decision is traffic/ratecheck's; its answer is appended into a
// pooled buffer. Errors keep the spec's {success:false,error} shape
// (section 7.3).

// rlUnavailable is the transport's own refusal: no configuration yet.
var rlUnavailable = ErrorCode{"rate-limiting-unavailable", 503, "Service not ready (this node has not loaded its configuration yet); follow the configured failure strategy."}

var rateLimitCheckErrors = withModuleCodes([]ErrorCode{ErrMissingSecret, ErrInvalidSecret, ErrRateLimited, rlUnavailable,
	ErrMalformedJSON, ErrUnknownField}, ratecheck.Errors)

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

// rlFieldErrors is the code of a member of the wrong JSON type.
var rlFieldErrors = [numRLFields]ErrorCode{
	rlFieldSecret: ErrInvalidSecret, rlFieldAction: moduleCode(ratecheck.ErrInvalidAction),
	rlFieldMethod: moduleCode(ratecheck.ErrInvalidMethod), rlFieldSubject: moduleCode(ratecheck.ErrInvalidSubject),
	rlFieldDevice: moduleCode(ratecheck.ErrInvalidDevice), rlFieldRoute: moduleCode(ratecheck.ErrMissingRoute),
	rlFieldScopeKey: moduleCode(ratecheck.ErrInvalidScopeKey), rlFieldCost: moduleCode(ratecheck.ErrInvalidCost),
	rlFieldAssessment: moduleCode(ratecheck.ErrInvalidAssessment), rlFieldPlatform: ErrInvalidAppIdentity,
	rlFieldAppID: ErrInvalidAppIdentity,
}

// rlInput is a parsed check body. Values are views of the request body
// (or of the scanner's scratch), valid while the handler runs.
type rlInput struct {
	has    uint32
	vals   [numRLFields][]byte
	kinds  [numRLFields]flatKind
	mobile bool
}

func (in *rlInput) present(f int) bool { return in.has&(1<<f) != 0 && in.kinds[f] != flatNull }

// rlScratch is the pooled per-request state of the transport.
type rlScratch struct {
	obj flatObject
	in  rlInput
	req ratecheck.Request
}

func (s *Server) rateLimitCheck(c *Call)       { s.checkRateLimit(c, false) }
func (s *Server) mobileRateLimitCheck(c *Call) { s.checkRateLimit(c, true) }

func (c *Call) specFail(e ErrorCode) { c.specError(e.Status, e.Code) }

func (s *Server) checkRateLimit(c *Call, mobile bool) {
	// The check needs the catalog, not a Raft leader: it reads the local
	// snapshot and the actors, so a leader election (which a starved CPU
	// can cause) must not stop it. Only a node that never loaded a catalog
	// is unavailable.
	if c.cat == nil || c.cat.Index == 0 {
		c.specFail(rlUnavailable)
		return
	}
	k := s.rlScratch.Get().(*rlScratch)
	defer s.rlScratch.Put(k)
	if !k.parse(c, mobile) {
		return
	}
	cat := c.Catalog()
	cl, ok := k.authenticate(c, cat)
	if !ok || !c.admitCredential(cl.AppID, cl.Workspace.ID) {
		return
	}
	k.request()
	res, err := s.mods.rl.Check(c.Context(), cat, cl, &k.req)
	if err != nil {
		code, _, _ := errcode.From(err)
		c.specFail(moduleCode(code))
		return
	}
	defer s.mods.rl.Release(res)
	if retry := res.RetryAfterMs(); retry > 0 {
		setRetryAfter(&c.Ctx.Response.Header, (retry+999)/1000)
	}
	c.outcome = rlOutcomes[res.Decision()]
	b := res.AppendJSON(res.Scratch())
	res.Keep(b)
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("application/json")
	c.Ctx.SetBody(b)
}

// parse reads and type-checks the body's members; false means the error
// was answered.
func (k *rlScratch) parse(c *Call, mobile bool) bool {
	if err := k.obj.scan(c.Ctx.Request.Body()); err != nil {
		c.specFail(ErrMalformedJSON)
		return false
	}
	in := &k.in
	*in = rlInput{mobile: mobile}
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
			c.specFail(rlFieldErrors[f])
			return false
		}
	}
	return true
}

// request fills the module's request from the parsed members.
func (k *rlScratch) request() {
	in := &k.in
	val := func(f int) []byte {
		if !in.present(f) {
			return nil
		}
		if in.vals[f] == nil {
			return []byte{} // present and empty: still present
		}
		return in.vals[f]
	}
	r := &k.req
	*r = ratecheck.Request{SubjectID: val(rlFieldSubject), DeviceID: val(rlFieldDevice), Route: val(rlFieldRoute),
		ScopeKey: val(rlFieldScopeKey)}
	// Action and method are views of the body: the module only validates
	// and matches them, and keeps neither past the check.
	r.Action = bstr(in.vals[rlFieldAction])
	if r.HasMethod = in.present(rlFieldMethod); r.HasMethod {
		r.Method = bstr(in.vals[rlFieldMethod])
	}
	if r.HasCost = in.present(rlFieldCost); r.HasCost {
		var ok bool
		if r.Cost, ok = flatUint(in.vals[rlFieldCost]); !ok {
			r.Cost = -1 // not an integer: the module refuses it in its order
		}
	}
	if r.HasAssessment = in.present(rlFieldAssessment); r.HasAssessment {
		r.AssessmentID = string(in.vals[rlFieldAssessment])
	}
}

func rlFieldIndex(name []byte, mobile bool) int {
	f := -1
	switch string(name) { // a switch on the name compiles to a search by length and bytes
	case "secret":
		f = rlFieldSecret
	case "action":
		f = rlFieldAction
	case "method":
		f = rlFieldMethod
	case "subject_id":
		f = rlFieldSubject
	case "device_id":
		f = rlFieldDevice
	case "route":
		f = rlFieldRoute
	case "scope_key":
		f = rlFieldScopeKey
	case "cost":
		f = rlFieldCost
	case "api_protection_assessment_id":
		f = rlFieldAssessment
	case "platform":
		f = rlFieldPlatform
	case "app_id":
		f = rlFieldAppID
	}
	if (f == rlFieldPlatform || f == rlFieldAppID) && !mobile {
		return -1
	}
	return f
}

// authenticate resolves the secret (bearer first, else body) to a site or
// a mobile app; false means the error was answered.
func (k *rlScratch) authenticate(c *Call, cat *catalog.Catalog) (ratecheck.Caller, bool) {
	in := &k.in
	// Views of the request: the secret is only looked up and compared.
	secret := c.bearerView()
	if secret == "" && in.present(rlFieldSecret) {
		secret = bstr(in.vals[rlFieldSecret])
	} else if secret != "" && in.present(rlFieldSecret) && string(in.vals[rlFieldSecret]) != secret {
		c.specFail(ErrInvalidSecret) // two different secrets: refuse rather than guess
		return ratecheck.Caller{}, false
	}
	if secret == "" {
		c.specFail(ErrMissingSecret)
		return ratecheck.Caller{}, false
	}
	var cl ratecheck.Caller
	if in.mobile {
		app := cat.AppBySecret(secret)
		if app == nil {
			c.specFail(ErrInvalidSecret)
			return ratecheck.Caller{}, false
		}
		if string(in.vals[rlFieldPlatform]) != app.Platform || string(in.vals[rlFieldAppID]) != app.AppID ||
			!in.present(rlFieldPlatform) || !in.present(rlFieldAppID) {
			c.specFail(ErrInvalidAppIdentity)
			return ratecheck.Caller{}, false
		}
		cl.AppID, cl.Workspace = app.ID, cat.Workspaces[app.WorkspaceID]
	} else {
		site := cat.SiteBySecretAt(secret, c.Now)
		if site == nil || site.Sandbox() {
			c.specFail(ErrInvalidSecret)
			return ratecheck.Caller{}, false
		}
		cl.AppID, cl.Workspace = site.ID, cat.Workspaces[site.WorkspaceID]
	}
	if cl.Workspace == nil {
		c.specFail(ErrInvalidSecret)
		return ratecheck.Caller{}, false
	}
	return cl, true
}

// newRateCheck builds the module over the server's router and clock and
// exports its per-policy counters.
func newRateCheck(s *Server) *ratecheck.Module {
	cfg := ratecheck.Config{Now: func() time.Time { return s.clock() }}
	if r := s.router; r != nil {
		cfg.Asker = r
		cfg.Local = func(key string) bool { return r.Ring().OwnsLocally(cluster.Partition(key)) }
	}
	m := ratecheck.New(cfg)
	if s.reg != nil {
		s.reg.MustRegister(m.Collector())
	}
	return m
}
