// Package docs holds trustd's user guide: the Markdown pages of this
// folder, which every node also serves at GET /v1/docs/{page} (linked from
// GET /v1/). It only embeds and looks up pages; it never renders them.
package docs

import (
	"embed"
	"strings"
)

//go:embed *.md
var pages embed.FS

// Index is the guide's first page.
const Index = "README.md"

// Page returns the Markdown of one page by its file name ("concepts.md").
func Page(name string) ([]byte, bool) {
	if !strings.HasSuffix(name, ".md") || strings.ContainsAny(name, "/\\") {
		return nil, false
	}
	b, err := pages.ReadFile(name)
	return b, err == nil
}
