package actors

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// spaceLike is what a key space's prefix looks like when it is spelled
// as a literal and concatenated: two to four lowercase letters and a
// slash.
var spaceLike = regexp.MustCompile(`^[a-z]{2,4}/$`)

// notKeys are concatenations that look like a key space and are not one,
// by file.
var notKeys = map[string]string{
	"../../journeys/session.go|risk/":      "a case label (risk/<level>)",
	"../../journeys/api/journeys.go|page/": "an embedded file's path",
}

// TestKeySpacesAreBuiltOnlyFromTheRegistry keeps keys.go the one list of
// the cluster's key spaces: outside it, no non-test file spells a
// registered prefix as a literal, and no file concatenates a literal that
// looks like a new one ("xyz/" + id).
func TestKeySpacesAreBuiltOnlyFromTheRegistry(t *testing.T) {
	var long []string
	for _, s := range Spaces {
		if len(s) >= 3 {
			long = append(long, s)
		}
	}
	root := "../.."
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.ToSlash(path) == "../../platform/actors/keys.go" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		seen := map[token.Pos]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op != token.ADD {
					return true
				}
				l := leftmost(n)
				if seen[l.Pos()] {
					return true
				}
				seen[l.Pos()] = true
				if v, ok := stringLit(l); ok && spaceLike.MatchString(v) && notKeys[filepath.ToSlash(path)+"|"+v] == "" {
					t.Errorf("%s: key prefix %q built outside platform/actors/keys.go: add it to the registry and use its name", path, v)
				}
			case *ast.BasicLit:
				if v, ok := stringLit(n); ok {
					for _, s := range long {
						if strings.HasPrefix(v, s) && v != s[:len(s)-1] {
							t.Errorf("%s: literal %q spells the key space %q: use its name from platform/actors/keys.go", path, v, s)
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func leftmost(e ast.Expr) ast.Expr {
	for {
		b, ok := e.(*ast.BinaryExpr)
		if !ok || b.Op != token.ADD {
			return e
		}
		e = b.X
	}
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// TestSpacesAreDistinct: no space is a prefix of another, so a key names
// its space unambiguously.
func TestSpacesAreDistinct(t *testing.T) {
	for i, a := range Spaces {
		for j, b := range Spaces {
			if i != j && strings.HasPrefix(b, a) && len(a) > 1 {
				t.Errorf("space %q is a prefix of %q", a, b)
			}
		}
	}
}
