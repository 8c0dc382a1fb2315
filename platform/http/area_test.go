package http

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestTheTransportImportsNoAreaWithItsOwnAdapter keeps the second house
// step: an area whose adapter left platform/http/ (risk/api, identity/api,
// journeys/api, verify/api, traffic/api, agents/api, platform/events/api, console/branding/api,
// console, platform/catalog/api, node/ops, node/about and the guide it
// serves, docs/) is handed in by node/ through Config.Areas, so neither the
// transport nor its own tests import the area or its modules, and a change
// to the area never recompiles this package.
func TestTheTransportImportsNoAreaWithItsOwnAdapter(t *testing.T) {
	moved := []string{"risk", "identity", "journeys", "traffic", "verify", "agents", "events", "branding", "console", "platform/catalog/api", "node", "docs"}
	allowed := map[string][]string{}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, area := range moved {
				if p := "github.com/trustd/trustd/" + area; (path == p || strings.HasPrefix(path, p+"/")) && !slices.Contains(allowed[f], path) {
					t.Errorf("%s imports %s: the area's adapter is handed in by node/ (Config.Areas)", f, path)
				}
			}
		}
	}
}
