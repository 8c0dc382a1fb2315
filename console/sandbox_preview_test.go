package console

import (
	"strings"
	"testing"
)

// TestSandboxSitesOfferTheSandboxCallsNotAWidget: a sandbox site's key
// never renders the widget (its tokens come from POST /sandbox/issue), so
// the workspace page neither previews it nor offers its embed snippet,
// and shows the sandbox calls instead; a production site on the console's
// host keeps its live preview.
func TestSandboxSitesOfferTheSandboxCallsNotAWidget(t *testing.T) {
	d := workspaceData{ConsoleHost: "localhost", APIBase: "http://localhost:8080"}
	sandbox := siteView{SiteID: "s2", Name: "sandbox", SiteKey: "site_sandbox_k", Hostnames: []string{"localhost"}, Environment: "sandbox"}
	prod := siteView{SiteID: "s1", Name: "web", SiteKey: "site_k", Hostnames: []string{"localhost"}, Environment: "production"}
	if d.Previews(sandbox) || !d.Previews(prod) {
		t.Fatalf("previews: sandbox %v, production %v", d.Previews(sandbox), d.Previews(prod))
	}
	d.Sites = []siteView{prod, sandbox}
	var b strings.Builder
	if err := parsePages()["workspace"].ExecuteTemplate(&b, "content", pageData{Data: d, CSRF: "x"}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, `data-sitekey="site_sandbox_k"`) || !strings.Contains(page, "/v1/sandbox/issue") ||
		!strings.Contains(page, `id="preview-s1"`) {
		t.Fatalf("workspace page:\n%s", page)
	}
}
