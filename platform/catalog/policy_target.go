package catalog

import "github.com/trustd/trustd/platform/errcode"

// The target of a policy as the admin API reads and shows it, shared by
// the areas whose policies apply to a workspace, one of its sites or one
// of its mobile apps (rate-limit policies in traffic/api, API Protection
// policies in risk/api): one type, so the contract has one schema.

// PolicyTargetBody names what a policy covers: PolicyTarget in the
// contract's words.
type PolicyTargetBody struct {
	Type string `json:"type" required:"true" enum:"workspace|site|mobile_app"`
	ID   string `json:"id,omitempty" doc:"site_id or mobile_app_id of this workspace; absent for workspace."`
}

// ValidPolicyTarget checks a target against the workspace's sites and
// apps, answering errcode.ErrInvalidField with the field it names.
// Unlike the check Apply makes (checkPolicyTarget), it says which part
// of the request is wrong.
func (c *Catalog) ValidPolicyTarget(workspaceID string, t *PolicyTargetBody) error {
	switch t.Type {
	case TargetWorkspace:
		if t.ID != "" {
			return errcode.Field("target.id", "must be absent for a workspace target")
		}
	case TargetSite:
		if s := c.Sites[t.ID]; s == nil || s.WorkspaceID != workspaceID {
			return errcode.Field("target.id", "no site "+t.ID+" in this workspace")
		}
	case TargetMobileApp:
		if a := c.MobileApps[t.ID]; a == nil || a.WorkspaceID != workspaceID {
			return errcode.Field("target.id", "no mobile app "+t.ID+" in this workspace")
		}
	default:
		return errcode.Field("target.type", "must be workspace, site or mobile_app")
	}
	return nil
}
