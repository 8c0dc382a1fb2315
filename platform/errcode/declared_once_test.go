package errcode

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEveryCodeIsDeclaredOnce keeps one wording per error code: across the
// non-test files of the module, each code string is declared once, by a
// New call (errcode.New) or by a literal of the transport's ErrorCode or
// of Code. A module that needs its own words for a shared code uses
// Detail or With on the one declaration. The error-codes of the
// siteverify family (a const Code… = "…") are another namespace, each
// declared once too.
func TestEveryCodeIsDeclaredOnce(t *testing.T) {
	first := map[string]string{}  // ApiError codes
	family := map[string]string{} // the siteverify family's error-codes
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
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
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		for _, decl := range declaredCodes(f) {
			once(t, first, fset, decl)
		}
		for _, decl := range familyCodes(f) {
			once(t, family, fset, decl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The scan must see the codes it guards, or it guards nothing.
	for _, code := range []string{ErrInvalidField.Code, ErrUnavailable.Code, ErrNotFound.Code, ErrInternal.Code, "malformed-json", "unknown-assessment"} {
		if first[code] == "" {
			t.Errorf("code %q was not found by the scan", code)
		}
	}
	for _, code := range []string{CodeTimeoutOrDuplicate, "journey-escalated", "stale-authentication"} {
		if family[code] == "" {
			t.Errorf("error-code %q was not found by the scan", code)
		}
	}
}

func once(t *testing.T, first map[string]string, fset *token.FileSet, decl *ast.BasicLit) {
	t.Helper()
	at := fset.Position(decl.Pos()).String()
	code, _ := stringLit(decl)
	if prev, ok := first[code]; ok {
		t.Errorf("%s: code %q declared again (first at %s): use the one declaration, with Detail or With for this module's words", at, code, prev)
		return
	}
	first[code] = at
}

// TestTheScanFindsEachFormOfDeclaration: a declaration the scan misses is a
// duplicate the test above lets through.
func TestTheScanFindsEachFormOfDeclaration(t *testing.T) {
	src := `package p
var (
	a = errcode.New("a-code", errcode.Invalid, "A.")
	b = New("b-code", Invalid, "B.")
	c = ErrorCode{"c-code", 400, "C."}
	d = kernel.ErrorCode{Code: "d-code", Status: 400}
	e = &errcode.Code{Code: "e-code"}
	f = strings.New("not-a-code")
	g = ErrorCode{Status: 400}
)
const (
	CodeH = "h-code"
	Other = "not-a-code"
)`
	f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, lit := range append(declaredCodes(f), familyCodes(f)...) {
		v, _ := stringLit(lit)
		got = append(got, v)
	}
	if want := "a-code b-code c-code d-code e-code h-code"; strings.Join(got, " ") != want {
		t.Fatalf("found %q, want %q", got, want)
	}
}

// declaredCodes are the string literals that declare a code in f.
func declaredCodes(f *ast.File) []*ast.BasicLit {
	var out []*ast.BasicLit
	add := func(e ast.Expr) {
		if lit, ok := e.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			out = append(out, lit)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if isNew(n.Fun) && len(n.Args) > 0 {
				add(n.Args[0])
			}
		case *ast.CompositeLit:
			if !isCodeType(n.Type) || len(n.Elts) == 0 {
				return true
			}
			for i, e := range n.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Code" {
						add(kv.Value)
					}
				} else if i == 0 {
					add(e)
				}
			}
		}
		return true
	})
	return out
}

// familyCodes are the string literals of f's const Code… declarations:
// the error-codes of the siteverify family's {success, error-codes}
// answers, a namespace apart from the ApiError codes.
func familyCodes(f *ast.File) []*ast.BasicLit {
	var out []*ast.BasicLit
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if lit, ok := valueAt(vs, i).(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(name.Name, "Code") {
					out = append(out, lit)
				}
			}
		}
	}
	return out
}

func valueAt(vs *ast.ValueSpec, i int) ast.Expr {
	if i < len(vs.Values) {
		return vs.Values[i]
	}
	return nil
}

// isNew is errcode.New, or New inside this package.
func isNew(fun ast.Expr) bool {
	switch f := fun.(type) {
	case *ast.SelectorExpr:
		x, ok := f.X.(*ast.Ident)
		return ok && x.Name == "errcode" && f.Sel.Name == "New"
	case *ast.Ident:
		return f.Name == "New"
	}
	return false
}

// isCodeType is ErrorCode or Code, qualified or not.
func isCodeType(typ ast.Expr) bool {
	name := ""
	switch t := typ.(type) {
	case *ast.Ident:
		name = t.Name
	case *ast.SelectorExpr:
		name = t.Sel.Name
	}
	return name == "ErrorCode" || name == "Code"
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}
