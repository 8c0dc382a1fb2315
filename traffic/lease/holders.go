package lease

import (
	"sort"

	"github.com/trustd/trustd/platform/actors"
	"github.com/trustd/trustd/platform/catalog"
	"github.com/trustd/trustd/platform/lib/ratelimit"
)

// Holders is the live use of one concurrency constraint, read from the
// shards that own its slots (lease.usage, one ask per scope value).
//
// Only workspace- and application-scoped constraints can be read whole:
// their scope values are the workspace itself and its sites and mobile
// apps. Subject, device and custom scope values are kept only as keyed
// hashes inside the lease keys, so the values in use cannot be listed and
// Enumerable is false (no holder count is claimed for them).
type Holders struct {
	ConstraintID  string        `json:"constraint_id" required:"true"`
	Name          string        `json:"name" required:"true"`
	Scope         string        `json:"scope" required:"true" enum:"workspace|application|subject|device|custom"`
	ActionPattern string        `json:"action_pattern" required:"true"`
	Capacity      int           `json:"capacity" required:"true"`
	Enumerable    bool          `json:"enumerable" required:"true" doc:"true for workspace and application scopes (every scope value was read); false for subject, device and custom scopes, whose values are stored only as keyed hashes and cannot be listed: in_use is then 0 and values empty."`
	InUse         int           `json:"in_use" required:"true" doc:"Live leases over all values read."`
	Values        []HolderValue `json:"values" required:"true" doc:"Per scope value with at least one live lease."`
}

// HolderValue is the live use of one scope value.
type HolderValue struct {
	Value string `json:"value" required:"true" doc:"workspace, or the site or mobile app id of an application-scoped constraint."`
	InUse int    `json:"in_use" required:"true"`
	// Fence is the last fencing token issued for this value.
	Fence uint64 `json:"fence" required:"true"`
}

// Holders reads constraint k's live holders in workspace ws. An error
// means a slot's owner could not answer (nothing is guessed).
func (m *Module) Holders(cat *catalog.Catalog, ws *catalog.Workspace, k *catalog.ConcurrencyConstraint) (*Holders, error) {
	out := &Holders{ConstraintID: k.ID, Name: k.Name, Scope: k.Scope, ActionPattern: k.ActionPattern, Capacity: k.Capacity, Values: []HolderValue{}}
	var values []string
	switch k.Scope {
	case catalog.ScopeWorkspace:
		values = []string{""}
	case catalog.ScopeApplication:
		if k.ApplicationID != "" {
			values = []string{k.ApplicationID}
			break
		}
		for _, s := range cat.SitesOf(ws.ID) {
			values = append(values, s.ID)
		}
		for _, a := range cat.MobileApps {
			if a.WorkspaceID == ws.ID {
				values = append(values, a.ID)
			}
		}
		sort.Strings(values)
	default:
		return out, nil
	}
	out.Enumerable = true
	for _, v := range values {
		sum := ratelimit.HashScope(ws.ScopeKey, k.Scope+"\x00"+v)
		var h [16]byte
		copy(h[:], sum[:])
		op := &actors.LeaseUsage{Key: Key(ws.ID, k.ID, h)}
		if err := m.ask.Ask(op.Key, op); err != nil {
			return nil, err
		}
		if op.InUse == 0 {
			continue
		}
		label := v
		if label == "" {
			label = "workspace"
		}
		out.InUse += op.InUse
		out.Values = append(out.Values, HolderValue{Value: label, InUse: op.InUse, Fence: op.Fence})
	}
	return out, nil
}
