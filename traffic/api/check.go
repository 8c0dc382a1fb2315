package api

import (
	"sync"
	"unsafe"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	kernel "github.com/trustd/trustd/platform/http"
	"github.com/trustd/trustd/platform/lib/jsonstrict"
	"github.com/trustd/trustd/traffic/ratecheck"
)

// POST /v1/rate-limit/check and /v1/mobile/rate-limit/check: transport of
// the hottest operation of the product. The body is read by the kernel's
// flat scanner (no reflection), the caller authenticated from the catalog
// snapshot, and the decision is traffic/ratecheck's; its answer is
// appended into a pooled buffer. Errors keep the spec's
// {success:false,error} shape (section 7.3). Nothing here allocates per
// request: the scratch is pooled, the outcomes and error answers are
// built once.

// rlUnavailable is the transport's own refusal: no configuration yet.
var rlUnavailable = kernel.ErrorCode{Code: "rate-limiting-unavailable", Status: 503,
	Meaning: "Service not ready (this node has not loaded its configuration yet); follow the configured failure strategy."}

var rateLimitCheckErrors = kernel.WithModuleCodes([]kernel.ErrorCode{kernel.ErrMissingSecret, kernel.ErrInvalidSecret,
	kernel.ErrRateLimited, rlUnavailable, kernel.ErrMalformedJSON, kernel.ErrUnknownField}, ratecheck.Errors)

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
var rlFieldErrors = [numRLFields]kernel.ErrorCode{
	rlFieldSecret: kernel.ErrInvalidSecret, rlFieldAction: kernel.ModuleCode(ratecheck.ErrInvalidAction),
	rlFieldMethod: kernel.ModuleCode(ratecheck.ErrInvalidMethod), rlFieldSubject: kernel.ModuleCode(ratecheck.ErrInvalidSubject),
	rlFieldDevice: kernel.ModuleCode(ratecheck.ErrInvalidDevice), rlFieldRoute: kernel.ModuleCode(ratecheck.ErrMissingRoute),
	rlFieldScopeKey: kernel.ModuleCode(ratecheck.ErrInvalidScopeKey), rlFieldCost: kernel.ModuleCode(ratecheck.ErrInvalidCost),
	rlFieldAssessment: kernel.ModuleCode(ratecheck.ErrInvalidAssessment), rlFieldPlatform: kernel.ErrInvalidAppIdentity,
	rlFieldAppID: kernel.ErrInvalidAppIdentity,
}

// rlOutcomes are the check's decisions (allow, throttle, reject) for the
// cluster-wide summary, resolved once so the hot path needs no map lookup.
var rlOutcomes = [3]kernel.Outcome{kernel.OutcomeOf("allow"), kernel.OutcomeOf("throttle"), kernel.OutcomeOf("reject")}

// rlInput is a parsed check body. Values are views of the request body
// (or of the scanner's scratch), valid while the handler runs.
type rlInput struct {
	has    uint32
	vals   [numRLFields][]byte
	kinds  [numRLFields]jsonstrict.Kind
	mobile bool
}

func (in *rlInput) present(f int) bool {
	return in.has&(1<<f) != 0 && in.kinds[f] != jsonstrict.KindNull
}

// rlScratch is the pooled per-request state of the transport.
type rlScratch struct {
	obj jsonstrict.Flat
	in  rlInput
	req ratecheck.Request
}

// checkAPI is the check's transport over the module node/ built.
type checkAPI struct {
	m       *ratecheck.Module
	ring    RingSource // nil: no partition hints
	scratch sync.Pool  // *rlScratch
}

func newCheckAPI(m *ratecheck.Module, ring RingSource) *checkAPI {
	a := &checkAPI{m: m, ring: ring}
	a.scratch.New = func() any { return new(rlScratch) }
	return a
}

func (a *checkAPI) rateLimitCheck(c *kernel.Call)       { a.checkRateLimit(c, false) }
func (a *checkAPI) mobileRateLimitCheck(c *kernel.Call) { a.checkRateLimit(c, true) }

func (a *checkAPI) checkRateLimit(c *kernel.Call, mobile bool) {
	// The check needs the catalog, not a Raft leader: it reads the local
	// snapshot and the actors, so a leader election (which a starved CPU
	// can cause) must not stop it. Only a node that never loaded a catalog
	// is unavailable.
	cat := c.Catalog()
	if cat == nil || cat.Index == 0 {
		c.SpecFail(rlUnavailable)
		return
	}
	k := a.scratch.Get().(*rlScratch)
	defer a.scratch.Put(k)
	if !k.parse(c, mobile) {
		return
	}
	cl, ok := k.authenticate(c, cat)
	if !ok || !c.AdmitCredential(cl.AppID, cl.Workspace.ID) {
		return
	}
	k.request()
	res, err := a.m.Check(c.Context(), cat, cl, &k.req)
	if err != nil {
		code, _, _ := errcode.From(err)
		c.SpecFail(kernel.ModuleCode(code))
		return
	}
	defer a.m.Release(res)
	if retry := res.RetryAfterMs(); retry > 0 {
		c.SetRetryAfter((retry + 999) / 1000)
	}
	c.SetOutcome(rlOutcomes[res.Decision()])
	// Client-side routing (ring.go): the only cost to a check that does
	// not ask for it is this lookup.
	if a.ring != nil {
		if wantsRoutingHint(&c.Ctx.Request.Header) {
			a.hint(c, res)
		}
	}
	b := res.AppendJSON(res.Scratch())
	res.Keep(b)
	c.Ctx.SetStatusCode(200)
	c.Ctx.SetContentType("application/json")
	c.Ctx.SetBody(b)
}

// parse reads and type-checks the body's members; false means the error
// was answered.
func (k *rlScratch) parse(c *kernel.Call, mobile bool) bool {
	if err := k.obj.Scan(c.Ctx.Request.Body()); err != nil {
		c.SpecFail(kernel.ErrMalformedJSON)
		return false
	}
	in := &k.in
	*in = rlInput{mobile: mobile}
	for i := 0; i < k.obj.Len(); i++ {
		name, kind, val := k.obj.Member(i)
		f := rlFieldIndex(name, mobile)
		if f < 0 || in.has&(1<<f) != 0 {
			c.SpecFail(kernel.ErrUnknownField)
			return false
		}
		in.has |= 1 << f
		in.vals[f], in.kinds[f] = val, kind
	}
	// Type errors take the code of the field they are in.
	for f := 0; f < numRLFields; f++ {
		if !in.present(f) {
			continue
		}
		want := jsonstrict.KindString
		if f == rlFieldCost {
			want = jsonstrict.KindNumber
		}
		if in.kinds[f] != want {
			c.SpecFail(rlFieldErrors[f])
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
		if r.Cost, ok = jsonstrict.Uint(in.vals[rlFieldCost]); !ok {
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
func (k *rlScratch) authenticate(c *kernel.Call, cat *catalog.Catalog) (ratecheck.Caller, bool) {
	in := &k.in
	// Views of the request: the secret is only looked up and compared.
	secret := c.BearerView()
	if secret == "" && in.present(rlFieldSecret) {
		secret = bstr(in.vals[rlFieldSecret])
	} else if secret != "" && in.present(rlFieldSecret) && string(in.vals[rlFieldSecret]) != secret {
		c.SpecFail(kernel.ErrInvalidSecret) // two different secrets: refuse rather than guess
		return ratecheck.Caller{}, false
	}
	if secret == "" {
		c.SpecFail(kernel.ErrMissingSecret)
		return ratecheck.Caller{}, false
	}
	var cl ratecheck.Caller
	if in.mobile {
		app := cat.AppBySecret(secret)
		if app == nil {
			c.SpecFail(kernel.ErrInvalidSecret)
			return ratecheck.Caller{}, false
		}
		if string(in.vals[rlFieldPlatform]) != app.Platform || string(in.vals[rlFieldAppID]) != app.AppID ||
			!in.present(rlFieldPlatform) || !in.present(rlFieldAppID) {
			c.SpecFail(kernel.ErrInvalidAppIdentity)
			return ratecheck.Caller{}, false
		}
		cl.AppID, cl.Workspace = app.ID, cat.Workspaces[app.WorkspaceID]
	} else {
		site := cat.SiteBySecretAt(secret, c.Now)
		if site == nil || site.Sandbox() {
			c.SpecFail(kernel.ErrInvalidSecret)
			return ratecheck.Caller{}, false
		}
		cl.AppID, cl.Workspace = site.ID, cat.Workspaces[site.WorkspaceID]
	}
	if cl.Workspace == nil {
		c.SpecFail(kernel.ErrInvalidSecret)
		return ratecheck.Caller{}, false
	}
	return cl, true
}

// bstr views b as a string without copying; the caller keeps it no longer
// than the request.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
