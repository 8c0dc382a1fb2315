package api

import (
	"context"
	"strconv"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/events"
	kernel "github.com/trustd/trustd/platform/http"
)

// Signed webhooks (spec 6): the admin API of a workspace's endpoints,
// outbox and delivery log. The module is platform/events/; this file decodes,
// authenticates (admin token), calls it and encodes. See platform/events/DESIGN.md.
// The contract bodies' names and documentation are the contract's
// schemas.

// WebhookEndpointInput creates or patches an endpoint.
type WebhookEndpointInput struct {
	URL         *string   `json:"url,omitempty" required:"true" doc:"https URL (http only to a loopback host on a --dev node); never a private, link-local or reserved address unless the operator started trustd with --webhooks-allow-private-targets. At most 2048 bytes, no user info or fragment."`
	Description *string   `json:"description,omitempty" doc:"At most 256 bytes."`
	EventTypes  *[]string `json:"event_types,omitempty" doc:"Event types to receive (identity.verification.verified|rejected|review_required|review_resolved|recapture_required|cancelled|redacted, webhook.test); empty or absent: every type."`
	Enabled     *bool     `json:"enabled,omitempty" doc:"false disables the endpoint (its pending deliveries fail); true re-enables it and clears its failure streak."`
}

// WebhookEndpointView is an endpoint; Secret only in the create and
// rotate-secret answers.
type WebhookEndpointView struct {
	EndpointID          string     `json:"endpoint_id" required:"true" format:"uuid"`
	WorkspaceID         string     `json:"workspace_id" required:"true"`
	URL                 string     `json:"url" required:"true"`
	Description         string     `json:"description" required:"true"`
	EventTypes          []string   `json:"event_types" required:"true"`
	Status              string     `json:"status" required:"true" enum:"enabled|disabled"`
	SecretsValid        int        `json:"secrets_valid" required:"true" doc:"Secrets that currently sign (two during a rotation's overlap: one v1 each)."`
	Secret              string     `json:"secret,omitempty" doc:"The signing secret (whsec_ + base64 of 32 bytes), shown once. Stripe libraries verify X-Service-Webhook-Signature with it as is; Standard Webhooks libraries verify the webhook-* headers with it as is."`
	ConsecutiveFailures int        `json:"consecutive_failures" required:"true"`
	FailingSince        *time.Time `json:"failing_since,omitempty"`
	LastSuccessAt       *time.Time `json:"last_success_at,omitempty"`
	DisabledReason      string     `json:"disabled_reason,omitempty"`
	DisabledAt          *time.Time `json:"disabled_at,omitempty"`
	CreatedAt           time.Time  `json:"created_at" required:"true"`
	UpdatedAt           time.Time  `json:"updated_at" required:"true"`
}

// WebhookEndpointList lists a workspace's endpoints.
type WebhookEndpointList struct {
	Endpoints []WebhookEndpointView `json:"endpoints" required:"true"`
}

// WebhookRotateInput rotates an endpoint's secret.
type WebhookRotateInput struct {
	OverlapSeconds *int `json:"overlap_seconds,omitempty" doc:"How long the previous secret keeps signing beside the new one, 0 to 604800; default 86400."`
}

// WebhookTestResult names the test event queued for delivery.
type WebhookTestResult struct {
	EventID string `json:"event_id" required:"true"`
}

// WebhookAttemptList is an endpoint's delivery log, newest first.
type WebhookAttemptList struct {
	Attempts []catalog.WebhookAttempt `json:"attempts" required:"true"`
}

// WebhookEventView is an event of the outbox with its deliveries.
type WebhookEventView struct {
	EventID    string                    `json:"event_id" required:"true"`
	Type       string                    `json:"type" required:"true"`
	Subject    string                    `json:"subject" required:"true"`
	Sequence   uint64                    `json:"sequence" required:"true"`
	CreatedAt  time.Time                 `json:"created_at" required:"true"`
	Payload    map[string]any            `json:"payload" required:"true" doc:"The exact JSON body every attempt sends."`
	Deliveries []catalog.WebhookDelivery `json:"deliveries" required:"true"`
}

// WebhookEventList lists the outbox, newest first.
type WebhookEventList struct {
	Events []WebhookEventView `json:"events" required:"true"`
}

// WebhookRedeliverInput chooses what to redeliver.
type WebhookRedeliverInput struct {
	EndpointID string `json:"endpoint_id,omitempty" format:"uuid" doc:"One endpoint; absent: every enabled endpoint the event was for."`
}

// WebhookAlertList lists a workspace's webhook alerts, newest first.
type WebhookAlertList struct {
	Alerts []catalog.WebhookAlert `json:"alerts" required:"true"`
}

func (x eventsAPI) routes() []kernel.Route {
	ws := "/workspaces/{workspace_id}"
	ep := ws + "/webhooks/{endpoint_id}"
	a := []kernel.Auth{kernel.AuthAdmin}
	errs := kernel.WithModuleCodes(append(kernel.AdminErrors(), kernel.ErrConflict), events.Codes())
	tag := "Webhooks"
	admin := kernel.AdminOnly
	return []kernel.Route{
		{Method: "POST", Path: ws + "/webhooks", Admin: true, ID: "createWebhookEndpoint", Tag: tag, Auth: a, Summary: "Add a webhook endpoint; the answer holds its signing secret, once.",
			Body: &WebhookEndpointInput{}, Status: 201, Result: &WebhookEndpointView{}, Errors: errs, Handle: admin(x.createWebhook)},
		{Method: "GET", Path: ws + "/webhooks", Admin: true, ID: "listWebhookEndpoints", Tag: tag, Auth: a, Summary: "List a workspace's webhook endpoints.",
			Result: &WebhookEndpointList{}, Errors: errs, Handle: admin(x.listWebhooks)},
		{Method: "GET", Path: ep, Admin: true, ID: "getWebhookEndpoint", Tag: tag, Auth: a, Summary: "Read a webhook endpoint and its health.",
			Result: &WebhookEndpointView{}, Errors: errs, Handle: admin(func(c *kernel.Call) {
				if o, w := x.webhooks(c); o != nil {
					e, err := o.Endpoint(w.ID, c.Param("endpoint_id"))
					webhookAnswer(c, 200, e, "", err)
				}
			})},
		{Method: "PATCH", Path: ep, Admin: true, ID: "updateWebhookEndpoint", Tag: tag, Auth: a, Summary: "Change an endpoint's URL, description, event types or enabled state.",
			Body: &WebhookEndpointInput{}, Result: &WebhookEndpointView{}, Errors: errs, Handle: admin(x.updateWebhook)},
		{Method: "DELETE", Path: ep, Admin: true, ID: "deleteWebhookEndpoint", Tag: tag, Auth: a, Summary: "Delete an endpoint, its pending deliveries and its log.",
			Status: 204, Errors: errs, Handle: admin(func(c *kernel.Call) {
				if o, w := x.webhooks(c); o != nil {
					ctx, cancel := webhookCtx()
					defer cancel()
					if err := o.DeleteEndpoint(ctx, w.ID, c.Param("endpoint_id")); err != nil {
						c.FailErr(err)
						return
					}
					c.NoContent()
				}
			})},
		{Method: "POST", Path: ep + "/rotate-secret", Admin: true, ID: "rotateWebhookSecret", Tag: tag, Auth: a, Summary: "Issue a new signing secret (shown once); the previous one keeps signing beside it for the overlap.",
			Body: &WebhookRotateInput{}, Result: &WebhookEndpointView{}, Errors: errs, Handle: admin(x.rotateWebhook)},
		{Method: "POST", Path: ep + "/test", Admin: true, ID: "testWebhookEndpoint", Tag: tag, Auth: a, Summary: "Queue a webhook.test event for this endpoint only.",
			Status: 202, Result: &WebhookTestResult{}, Errors: errs, Handle: admin(func(c *kernel.Call) {
				if o, w := x.webhooks(c); o != nil {
					ctx, cancel := webhookCtx()
					defer cancel()
					id, err := o.SendTest(ctx, w.ID, c.Param("endpoint_id"))
					if err != nil {
						c.FailErr(err)
						return
					}
					c.JSON(202, WebhookTestResult{EventID: id})
				}
			})},
		{Method: "GET", Path: ep + "/deliveries", Admin: true, ID: "listWebhookDeliveries", Tag: tag, Auth: a, Summary: "The endpoint's delivery log, newest first (the last 100 attempts).",
			Result: &WebhookAttemptList{}, Errors: errs, Handle: admin(func(c *kernel.Call) {
				if o, w := x.webhooks(c); o != nil {
					l, err := o.Log(w.ID, c.Param("endpoint_id"))
					if err != nil {
						c.FailErr(err)
						return
					}
					if l == nil {
						l = []catalog.WebhookAttempt{}
					}
					c.OK(WebhookAttemptList{Attempts: l})
				}
			})},
		{Method: "GET", Path: ws + "/webhook-events", Admin: true, ID: "listWebhookEvents", Tag: tag, Auth: a, Summary: "The workspace's outbox, newest first (query limit, default 100, at most 1000).",
			Result: &WebhookEventList{}, Errors: errs, Handle: admin(x.listWebhookEvents)},
		{Method: "GET", Path: ws + "/webhook-events/{event_id}", Admin: true, ID: "getWebhookEvent", Tag: tag, Auth: a, Summary: "Read an event and its deliveries.",
			Result: &WebhookEventView{}, Errors: errs, Handle: admin(func(c *kernel.Call) {
				if o, w := x.webhooks(c); o != nil {
					ev, err := o.Event(w.ID, c.Param("event_id"))
					if err != nil {
						c.FailErr(err)
						return
					}
					c.OK(webhookEventView(ev))
				}
			})},
		{Method: "POST", Path: ws + "/webhook-events/{event_id}/redeliver", Admin: true, ID: "redeliverWebhookEvent", Tag: tag, Auth: a, Summary: "Send an event again now, with a new retry schedule; the attempt number goes on.",
			Body: &WebhookRedeliverInput{}, Status: 202, Result: &WebhookEventView{}, Errors: errs, Handle: admin(x.redeliverWebhook)},
		{Method: "GET", Path: ws + "/webhook-alerts", Admin: true, ID: "listWebhookAlerts", Tag: tag, Auth: a, Summary: "Alerts of the workspace's webhooks (endpoints disabled after sustained failure), newest first.",
			Result: &WebhookAlertList{}, Errors: errs, Handle: admin(func(c *kernel.Call) {
				if o, w := x.webhooks(c); o != nil {
					l := o.Alerts(w.ID)
					if l == nil {
						l = []catalog.WebhookAlert{}
					}
					c.OK(WebhookAlertList{Alerts: l})
				}
			})},
	}
}

// webhookCtx bounds a module call that replicates a change.
func webhookCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// webhookChange decodes the body into In, when the caller may manage the
// workspace's webhooks, and runs change under a context that bounds the
// replicated change (webhookCtx). When it does not run change, the call
// is answered already.
func webhookChange[In any](x eventsAPI, c *kernel.Call, change func(ctx context.Context, o *events.Outbox, ws string, in In)) {
	o, w := x.webhooks(c)
	var in In
	if o == nil || !c.Decode(&in) {
		return
	}
	ctx, cancel := webhookCtx()
	defer cancel()
	change(ctx, o, w.ID, in)
}

// webhooks resolves the module and the workspace, answering failures itself.
func (x eventsAPI) webhooks(c *kernel.Call) (*events.Outbox, *catalog.Workspace) {
	w := c.Workspace()
	if w == nil {
		return nil, nil
	}
	if x.o == nil {
		c.Fail(kernel.ErrUnavailable, "webhooks are not configured on this node")
		return nil, nil
	}
	return x.o, w
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func webhookView(e *catalog.WebhookEndpoint, secret string, now time.Time) WebhookEndpointView {
	types := e.EventTypes
	if types == nil {
		types = []string{}
	}
	return WebhookEndpointView{EndpointID: e.ID, WorkspaceID: e.WorkspaceID, URL: e.URL, Description: e.Description, EventTypes: types,
		Status: e.Status, SecretsValid: events.ValidSecrets(e, now), Secret: secret, ConsecutiveFailures: e.ConsecutiveFailures,
		FailingSince: optTime(e.FailingSince), LastSuccessAt: optTime(e.LastSuccessAt), DisabledReason: e.DisabledReason,
		DisabledAt: optTime(e.DisabledAt), CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

func webhookEventView(e *catalog.WebhookEvent) WebhookEventView {
	v := WebhookEventView{EventID: e.ID, Type: e.Type, Subject: e.Subject, Sequence: e.Sequence, CreatedAt: e.CreatedAt,
		Payload: map[string]any{}, Deliveries: e.Deliveries}
	_ = json.Unmarshal(e.Body, &v.Payload)
	if v.Deliveries == nil {
		v.Deliveries = []catalog.WebhookDelivery{}
	}
	return v
}

func webhookAnswer(c *kernel.Call, status int, e *catalog.WebhookEndpoint, secret string, err error) {
	if err != nil {
		c.FailErr(err)
		return
	}
	c.JSON(status, webhookView(e, secret, c.Now()))
}

func (in WebhookEndpointInput) spec() events.EndpointSpec {
	return events.EndpointSpec{URL: in.URL, Description: in.Description, EventTypes: in.EventTypes, Enabled: in.Enabled}
}

func (x eventsAPI) createWebhook(c *kernel.Call) {
	webhookChange(x, c, func(ctx context.Context, o *events.Outbox, ws string, in WebhookEndpointInput) {
		e, secret, err := o.CreateEndpoint(ctx, ws, in.spec())
		webhookAnswer(c, 201, e, secret, err)
	})
}

func (x eventsAPI) listWebhooks(c *kernel.Call) {
	o, w := x.webhooks(c)
	if o == nil {
		return
	}
	out := WebhookEndpointList{Endpoints: []WebhookEndpointView{}}
	for _, e := range o.Endpoints(w.ID) {
		out.Endpoints = append(out.Endpoints, webhookView(e, "", c.Now()))
	}
	c.OK(out)
}

func (x eventsAPI) updateWebhook(c *kernel.Call) {
	webhookChange(x, c, func(ctx context.Context, o *events.Outbox, ws string, in WebhookEndpointInput) {
		e, err := o.UpdateEndpoint(ctx, ws, c.Param("endpoint_id"), in.spec())
		webhookAnswer(c, 200, e, "", err)
	})
}

func (x eventsAPI) rotateWebhook(c *kernel.Call) {
	webhookChange(x, c, func(ctx context.Context, o *events.Outbox, ws string, in WebhookRotateInput) {
		overlap := events.DefaultOverlap
		if in.OverlapSeconds != nil {
			overlap = time.Duration(*in.OverlapSeconds) * time.Second
		}
		e, secret, err := o.RotateSecret(ctx, ws, c.Param("endpoint_id"), overlap)
		webhookAnswer(c, 200, e, secret, err)
	})
}

func (x eventsAPI) listWebhookEvents(c *kernel.Call) {
	o, w := x.webhooks(c)
	if o == nil {
		return
	}
	limit := 100
	if q := c.Ctx.QueryArgs().Peek("limit"); len(q) > 0 {
		n, err := strconv.Atoi(string(q))
		if err != nil || n < 1 || n > catalog.MaxWebhookEventsPerWorkspace {
			c.Fail(kernel.ErrInvalidField, "limit: 1 to "+strconv.Itoa(catalog.MaxWebhookEventsPerWorkspace))
			return
		}
		limit = n
	}
	out := WebhookEventList{Events: []WebhookEventView{}}
	for _, e := range o.Events(w.ID, limit) {
		out.Events = append(out.Events, webhookEventView(e))
	}
	c.OK(out)
}

func (x eventsAPI) redeliverWebhook(c *kernel.Call) {
	webhookChange(x, c, func(ctx context.Context, o *events.Outbox, ws string, in WebhookRedeliverInput) {
		ev, err := o.Redeliver(ctx, ws, c.Param("event_id"), in.EndpointID)
		if err != nil {
			c.FailErr(err)
			return
		}
		c.JSON(202, webhookEventView(ev))
	})
}
