package api

import (
	kernel "github.com/trustd/trustd/platform/http"
	"time"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/errcode"
	"github.com/trustd/trustd/risk/messaging"
)

// Messaging-provider preflight (spec 4.13): transport only. The decision,
// the counters and the signature check live in risk/messaging (see its
// DESIGN.md); this file reads the headers, finds the workspace's settings,
// and encodes.

// MessagingPolicyInput sets a workspace's messaging policy; 0 or an
// absent field means the default (shown in effective_policy).
type MessagingPolicyInput struct {
	Policy *catalog.MessagingPolicy `json:"policy" required:"true" doc:"Knobs of the preflight; 0 keeps a knob's default. Ranges: limits ≥ 1, windows 60 to 86400 s (conversion 600 to 86400), prefix_block_factor 2 to 100, conversion_min_sends ≥ 5, conversion_min_percent 1 to 100, block_seconds 300 to 172800; countries ISO 3166-1 alpha-2; channels sms, voice, whatsapp."`
}

// MessagingRotateInput rotates the messaging signing secret.
type MessagingRotateInput struct {
	OverlapSeconds *int `json:"overlap_seconds,omitempty" doc:"How long the previous secret stays valid, 0 to 604800; default 3600."`
}

// MessagingSettingsView is a workspace's messaging integration; Secret
// only in the rotate answer.
type MessagingSettingsView struct {
	WorkspaceID     string                  `json:"workspace_id" required:"true"`
	Policy          catalog.MessagingPolicy `json:"policy" required:"true" doc:"As set (0: default)."`
	EffectivePolicy catalog.MessagingPolicy `json:"effective_policy" required:"true" doc:"The values the preflight uses."`
	SecretsValid    int                     `json:"secrets_valid" required:"true" doc:"Signing secrets currently accepted (more than one during a rotation's overlap); 0: signed requests are refused with messaging-not-configured."`
	Secret          string                  `json:"secret,omitempty" doc:"The signing secret, shown once: its ASCII bytes are the HMAC-SHA-256 key."`
	CreatedAt       time.Time               `json:"created_at" required:"true"`
	UpdatedAt       time.Time               `json:"updated_at" required:"true"`
}

func messagingErrors() []kernel.ErrorCode {
	// The shared service-unavailable in the module's words, before the
	// module's list would add the code's general meaning.
	base := kernel.WithModuleErrors([]kernel.ErrorCode{kernel.ErrUnsupportedType, kernel.ErrBodyTooLarge}, messaging.ErrUnavailable)
	return kernel.WithModuleCodes(base, messaging.Errors)
}

type messagingAPI struct {
	m      *messaging.Module
	sealer *messaging.Sealer
}

// The settings stay off the generic admin path (kernel.Resource): they are
// one record per workspace at /workspaces/{workspace_id}/messaging, with
// no id, no list and no create (PUT /policy upserts), not a collection.
func (x messagingAPI) routes() []kernel.Route {
	m, admin := x.m, kernel.AdminOnly
	ws := "/workspaces/{workspace_id}/messaging"
	a := []kernel.Auth{kernel.AuthAdmin}
	aerr := kernel.WithModuleCodes(kernel.AdminErrors(), []*errcode.Code{messaging.ErrPolicyInvalid, messaging.ErrSettingsNotFound})
	sig := []kernel.Auth{kernel.AuthMessaging}
	return []kernel.Route{
		{Method: "GET", Path: ws, Admin: true, ID: "getMessagingSettings", Tag: "Messaging", Auth: a, Summary: "Read a workspace's messaging preflight settings (policy and how many signing secrets are valid).",
			Result: &MessagingSettingsView{}, Errors: aerr, Handle: admin(func(c *kernel.Call) { settings(c, nil, "") })},
		{Method: "PUT", Path: ws + "/policy", Admin: true, ID: "putMessagingPolicy", Tag: "Messaging", Auth: a, Summary: "Replace the messaging preflight policy (creates the settings when absent; signed requests need a secret from rotate-secret).",
			Body: &MessagingPolicyInput{}, Result: &MessagingSettingsView{}, Errors: aerr, Handle: admin(putPolicy)},
		{Method: "POST", Path: ws + "/rotate-secret", Admin: true, ID: "rotateMessagingSecret", Tag: "Messaging", Auth: a, Summary: "Issue a new messaging signing secret (shown once); the previous one stays valid for the overlap.",
			Body: &MessagingRotateInput{}, Result: &MessagingSettingsView{}, Errors: aerr, Handle: admin(x.rotateSecret)},
		{Method: "DELETE", Path: ws, Admin: true, ID: "deleteMessagingSettings", Tag: "Messaging", Auth: a, Summary: "Delete the messaging settings: signed requests are then refused.",
			Status: 204, Errors: aerr, Handle: admin(deleteSettings)},
		{Method: "POST", Path: "/integrations/messaging/preflight", ID: "messagingPreflight", Tag: "Messaging", Auth: sig,
			Summary: "Ask, before sending a one-time code, whether to send it: allow, delay (retry_after) or block, with reasons from observed behaviour (velocity per prefix, number, subject and country; prefix blocks; conversion). Never send the code or the message text.",
			Body:    &messaging.PreflightRequest{}, Result: &messaging.Decision{}, Errors: messagingErrors(), Handle: messagingSigned(m, m.Preflight)},
		{Method: "POST", Path: "/integrations/messaging/events", ID: "messagingEvent", Tag: "Messaging", Auth: sig,
			Summary: "Report what became of an allowed message: delivered, verified (the code was entered) or failed. A prefix whose codes are sent but not verified is blocked as SMS pumping. Each status counts once per message.",
			Body:    &messaging.EventRequest{}, Result: &messaging.EventResult{}, Errors: messagingErrors(), Handle: messagingSigned(m, m.Event)},
	}
}

// messagingSigned verifies a signed messaging request, decodes its body
// strictly and runs op for the workspace that signed it.
func messagingSigned[In, Out any](m *messaging.Module, op func(messaging.Caller, In) (Out, error)) func(*kernel.Call) {
	return func(c *kernel.Call) {
		if !c.IsJSON() {
			c.Fail(kernel.ErrUnsupportedType, "Content-Type must be application/json")
			return
		}
		h := &c.Ctx.Request.Header
		wsID := string(h.Peek(messaging.HeaderWorkspace))
		set := c.Catalog().Messaging[wsID]
		w := c.Catalog().Workspaces[wsID]
		if w == nil {
			set = nil
		}
		err := m.Verify(set, messaging.Signed{Workspace: wsID, Timestamp: string(h.Peek(messaging.HeaderTimestamp)),
			Nonce: string(h.Peek(messaging.HeaderNonce)), Signature: string(h.Peek(messaging.HeaderSignature)), Body: c.Ctx.Request.Body()})
		if err != nil {
			c.FailErr(err)
			return
		}
		if !c.AdmitCredential("messaging/"+w.ID, w.ID) {
			return
		}
		var in In
		if err := messaging.DecodeBody(c.Ctx.Request.Body(), &in); err != nil {
			c.FailErr(err)
			return
		}
		out, err := op(messaging.Caller{WorkspaceID: w.ID, ScopeKey: w.ScopeKey, Policy: set.Policy}, in)
		if err != nil {
			c.FailErr(err)
			return
		}
		c.OK(out)
	}
}

func messagingView(set *catalog.MessagingSettings, secret string, now time.Time) *MessagingSettingsView {
	return &MessagingSettingsView{WorkspaceID: set.WorkspaceID, Policy: set.Policy, EffectivePolicy: messaging.Effective(set.Policy),
		SecretsValid: messaging.Valid(set, now), Secret: secret, CreatedAt: set.CreatedAt, UpdatedAt: set.UpdatedAt}
}

// settings answers the settings of {workspace_id} (or set when
// given), answering 404 itself.
func settings(c *kernel.Call, set *catalog.MessagingSettings, secret string) {
	if set == nil {
		w := c.Workspace()
		if w == nil {
			return
		}
		if set = c.Catalog().Messaging[w.ID]; set == nil {
			c.FailErr(messaging.ErrSettingsNotFound)
			return
		}
	}
	c.OK(messagingView(set, secret, c.Now()))
}

func putPolicy(c *kernel.Call) {
	w := c.Workspace()
	var in MessagingPolicyInput
	if w == nil || !c.Decode(&in) {
		return
	}
	if in.Policy == nil {
		// A replace names the whole policy; {} as policy keeps every default.
		c.Fail(kernel.ErrInvalidField, "policy: required (an object; {} keeps every default)")
		return
	}
	p, err := messaging.ValidatePolicy(*in.Policy)
	if err != nil {
		c.FailErr(err)
		return
	}
	now := c.Now().UTC()
	set := catalog.MessagingSettings{WorkspaceID: w.ID, CreatedAt: now}
	if cur := c.Catalog().Messaging[w.ID]; cur != nil {
		set = *cur
	}
	set.Policy, set.UpdatedAt = p, now
	if v, ok := c.Apply(&catalog.PutMessagingSettings{Settings: set}); ok {
		settings(c, v.(*catalog.MessagingSettings), "")
	}
}

func (x messagingAPI) rotateSecret(c *kernel.Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	var in MessagingRotateInput
	if len(c.Ctx.Request.Body()) > 0 && !c.Decode(&in) {
		return
	}
	overlap := messaging.DefaultOverlap
	if in.OverlapSeconds != nil {
		overlap = time.Duration(*in.OverlapSeconds) * time.Second
	}
	set, secret, err := x.sealer.Rotate(c.Catalog().Messaging[w.ID], w.ID, overlap, c.Now().UTC())
	if err != nil {
		c.FailErr(err)
		return
	}
	if v, ok := c.Apply(&catalog.PutMessagingSettings{Settings: set}); ok {
		settings(c, v.(*catalog.MessagingSettings), secret)
	}
}

func deleteSettings(c *kernel.Call) {
	w := c.Workspace()
	if w == nil {
		return
	}
	if c.Catalog().Messaging[w.ID] == nil {
		c.FailErr(messaging.ErrSettingsNotFound)
		return
	}
	if _, ok := c.Apply(&catalog.DeleteMessagingSettings{WorkspaceID: w.ID}); ok {
		c.NoContent()
	}
}
