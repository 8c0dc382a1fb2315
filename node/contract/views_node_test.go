package contract_test

// The answers of the catalog's admin operations (platform/catalog/api) the tests
// here create their workspaces and sites with.

type wsView struct {
	WorkspaceID string `json:"workspace_id"`
	Name        string `json:"name"`
	Settings    struct {
		RateLimitingEnabled bool   `json:"rate_limiting_enabled"`
		DefaultMode         string `json:"default_mode"`
	} `json:"settings"`
}

type siteView struct {
	SiteID    string   `json:"site_id"`
	SiteKey   string   `json:"site_key"`
	Secret    string   `json:"secret"`
	Hostnames []string `json:"hostnames"`
}
