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
// step: an area whose adapter left http/ (risk/api, identity/api,
// journeys/api, console, catalog/api, node/ops) is handed in by node/ through Config.Areas, so neither the
// transport nor its own tests import the area or its modules, and a change
// to the area never recompiles this package. The exceptions: the
// rate-limit check's adaptive-cost test reads an API Protection
// assessment's type, and the mobile operations' answers test spans trust,
// journeys and the concurrency lease (with its helpers); both belong in a
// cross-area test package once the remaining areas have left http/.
func TestTheTransportImportsNoAreaWithItsOwnAdapter(t *testing.T) {
	moved := []string{"risk", "identity", "journeys", "console", "catalog/api", "node/ops"}
	allowed := map[string][]string{
		"ratelimit_adaptive_node_test.go": {"github.com/trustd/trustd/risk/apiprotection"},
		"mobile_answers_node_test.go":     {"github.com/trustd/trustd/risk/trust"},
		"trust_env_node_test.go":          {"github.com/trustd/trustd/risk/trust", "github.com/trustd/trustd/identity/liveness"},
	}
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
