package http

import "github.com/trustd/trustd/platform/catalog"

// The target of a policy, shared by the areas whose policies apply to a
// workspace, one of its sites or one of its mobile apps (rate-limit and
// API Protection policies).

// PolicyTargetBody names what a policy covers.
type PolicyTargetBody struct {
	Type string `json:"type" required:"true" enum:"workspace|site|mobile_app"`
	ID   string `json:"id,omitempty" doc:"site_id or mobile_app_id of this workspace; absent for workspace."`
}

// validTarget checks a target against the workspace's sites and apps.
func validTarget(cat *catalog.Catalog, workspaceID string, t *PolicyTargetBody) error {
	switch t.Type {
	case catalog.TargetWorkspace:
		if t.ID != "" {
			return invalid("target.id", "must be absent for a workspace target")
		}
	case catalog.TargetSite:
		if s := cat.Sites[t.ID]; s == nil || s.WorkspaceID != workspaceID {
			return invalid("target.id", "no site "+t.ID+" in this workspace")
		}
	case catalog.TargetMobileApp:
		if a := cat.MobileApps[t.ID]; a == nil || a.WorkspaceID != workspaceID {
			return invalid("target.id", "no mobile app "+t.ID+" in this workspace")
		}
	default:
		return invalid("target.type", "must be workspace, site or mobile_app")
	}
	return nil
}
