package events

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/trustd/trustd/platform/catalog"
)

// Limits of an endpoint's fields and of a rotation's overlap.
const (
	MaxDescriptionLen = 256
	MaxOverlap        = 7 * 24 * time.Hour
	DefaultOverlap    = 24 * time.Hour
)

// EndpointSpec is what an admin sets on an endpoint; nil fields are left
// as they are on update (and take defaults on create).
type EndpointSpec struct {
	URL         *string
	Description *string
	EventTypes  *[]string
	Enabled     *bool
}

func (o *Outbox) validate(sp EndpointSpec) error {
	if sp.URL != nil {
		if err := o.policy.checkURL(*sp.URL); err != nil {
			return ErrURLRefused.With("%v", err)
		}
	}
	if sp.Description != nil && len(*sp.Description) > MaxDescriptionLen {
		return ErrInvalidEndpoint.With("description is at most %d bytes", MaxDescriptionLen)
	}
	if sp.EventTypes != nil {
		seen := map[string]bool{}
		for _, t := range *sp.EventTypes {
			if !slices.Contains(Types, t) {
				return ErrInvalidEndpoint.With("unknown event type %q; known: %s", t, strings.Join(Types, ", "))
			}
			if seen[t] {
				return ErrInvalidEndpoint.With("event type %q is listed twice", t)
			}
			seen[t] = true
		}
	}
	return nil
}

// Endpoint returns an endpoint of the workspace.
func (o *Outbox) Endpoint(workspaceID, id string) (*catalog.WebhookEndpoint, error) {
	e := o.store.Catalog().WebhookEndpoints[id]
	if e == nil || e.WorkspaceID != workspaceID {
		return nil, ErrEndpointNotFound
	}
	return e, nil
}

// Endpoints lists the workspace's endpoints, oldest first.
func (o *Outbox) Endpoints(workspaceID string) []*catalog.WebhookEndpoint {
	var out []*catalog.WebhookEndpoint
	for _, e := range o.store.Catalog().WebhookEndpoints {
		if e.WorkspaceID == workspaceID {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *catalog.WebhookEndpoint) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return compareStrings(a.ID, b.ID)
	})
	return out
}

// CreateEndpoint adds an endpoint and returns it with its secret, which
// is shown this once.
func (o *Outbox) CreateEndpoint(ctx context.Context, workspaceID string, sp EndpointSpec) (*catalog.WebhookEndpoint, string, error) {
	if sp.URL == nil {
		return nil, "", ErrURLRefused.With("url is required")
	}
	if err := o.validate(sp); err != nil {
		return nil, "", err
	}
	cat := o.store.Catalog()
	if cat.Workspaces[workspaceID] == nil {
		return nil, "", catalog.ErrNotFound
	}
	if len(o.Endpoints(workspaceID)) >= catalog.MaxWebhookEndpointsPerWorkspace {
		return nil, "", ErrEndpointLimit.With("a workspace has at most %d webhook endpoints", catalog.MaxWebhookEndpointsPerWorkspace)
	}
	now := o.now()
	id := uuid.NewString()
	secret := NewSecret()
	e := catalog.WebhookEndpoint{ID: id, WorkspaceID: workspaceID, URL: *sp.URL, EventTypes: []string{}, Status: catalog.WebhookEnabled,
		Secrets: []catalog.WebhookSecret{{Sealed: o.sealer.seal(id, secret)}}, CreatedAt: now, UpdatedAt: now}
	if sp.Description != nil {
		e.Description = *sp.Description
	}
	if sp.EventTypes != nil {
		e.EventTypes = slices.Clone(*sp.EventTypes)
	}
	if sp.Enabled != nil && !*sp.Enabled {
		e.Status, e.DisabledReason, e.DisabledAt = catalog.WebhookDisabled, "created disabled", now
	}
	v, err := o.apply(ctx, &catalog.CreateWebhookEndpoint{Endpoint: e})
	if err != nil {
		return nil, "", err
	}
	return v.(*catalog.WebhookEndpoint), secret, nil
}

// UpdateEndpoint changes the fields sp sets.
func (o *Outbox) UpdateEndpoint(ctx context.Context, workspaceID, id string, sp EndpointSpec) (*catalog.WebhookEndpoint, error) {
	if _, err := o.Endpoint(workspaceID, id); err != nil {
		return nil, err
	}
	if err := o.validate(sp); err != nil {
		return nil, err
	}
	v, err := o.apply(ctx, &catalog.UpdateWebhookEndpoint{WorkspaceID: workspaceID, ID: id, URL: sp.URL, Description: sp.Description,
		EventTypes: sp.EventTypes, Enabled: sp.Enabled, At: o.now()})
	if err != nil {
		return nil, err
	}
	o.Wake()
	return v.(*catalog.WebhookEndpoint), nil
}

// RotateSecret gives the endpoint a new current secret, shown once; the
// previous one keeps signing (a second v1) for overlap (0 ends it now).
func (o *Outbox) RotateSecret(ctx context.Context, workspaceID, id string, overlap time.Duration) (*catalog.WebhookEndpoint, string, error) {
	if _, err := o.Endpoint(workspaceID, id); err != nil {
		return nil, "", err
	}
	if overlap < 0 || overlap > MaxOverlap {
		return nil, "", ErrInvalidEndpoint.With("overlap_seconds must be 0 to %d", int(MaxOverlap/time.Second))
	}
	now := o.now()
	secret := NewSecret()
	cmd := &catalog.RotateWebhookSecret{WorkspaceID: workspaceID, ID: id, Secret: catalog.WebhookSecret{Sealed: o.sealer.seal(id, secret)}, At: now}
	if overlap > 0 {
		cmd.PrevUntil = now.Add(overlap)
	}
	v, err := o.apply(ctx, cmd)
	if err != nil {
		return nil, "", err
	}
	return v.(*catalog.WebhookEndpoint), secret, nil
}

// DeleteEndpoint removes an endpoint, its pending deliveries and its log.
func (o *Outbox) DeleteEndpoint(ctx context.Context, workspaceID, id string) error {
	if _, err := o.Endpoint(workspaceID, id); err != nil {
		return err
	}
	_, err := o.apply(ctx, &catalog.DeleteWebhookEndpoint{WorkspaceID: workspaceID, ID: id})
	return err
}

// ValidSecrets counts the endpoint's secrets that sign at now.
func ValidSecrets(e *catalog.WebhookEndpoint, now time.Time) int {
	n := 0
	for _, k := range e.Secrets {
		if k.NotAfter.IsZero() || k.NotAfter.After(now) {
			n++
		}
	}
	return n
}
