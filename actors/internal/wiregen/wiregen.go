// Package wiregen writes the wire side of the actors package's ops: the
// five WireOp methods of every op (OpKind, AppendOp, UnmarshalOp,
// AppendResult, UnmarshalResult) and the registry of kinds, from a
// directive on the op type and tags on its fields. It reads source only
// (go/ast), so it runs without building the package it writes into.
//
// An op that crosses nodes says so in its doc comment:
//
//	//actors:wire lease.reserve LeaseReserve LeaseReserveResult
//
// (kind, the actorpb message of its inputs, the actorpb message of its
// result, or no third word when it has no result), and tags each field
// that travels:
//
//	Key     string `wire:"op"`      // an input, actorpb field Key
//	LeaseID string `wire:"op"`      // matched case-insensitively: LeaseId
//	Held    bool   `wire:"result" wirename:"Yes"`
//	Bucket  ratelimit.BucketConfig `wire:"op" wirevia:"bucketConfig"`
//
// A field whose Go type differs from the actorpb field's is converted
// (int64(o.Capacity), int(m.Capacity)) when both are scalars. Anything
// else names its mapping: wirevia:"x" calls xPB(field) to encode and
// xOf(m.Field) to decode; wireenc/wiredec give either side as a function
// name or an expression in which $ stands for the value. A decoder given
// by name that returns (T, error) refuses the message on error. A field
// tagged `wire:"op,result"` travels both ways; one tagged `wire:"op,whole"`
// is the whole input message.
package wiregen

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Output is the name of the generated file in the actors package.
const Output = "wire_gen.go"

const directive = "//actors:wire "

type field struct {
	name, goType string
	pbName       string
	enc, dec     string // templates with $
	decErr       bool
}

type op struct {
	typ, kind     string
	opMsg, resMsg string
	whole         *field
	in, out       []field
	pos           token.Position
}

type pkgInfo struct {
	fset    *token.FileSet
	funcs   map[string]int // function name (or Type.method) -> number of results
	imports map[string]string
	ops     []*op
}

// Generate reads the actors package in actorsDir and the actorpb messages
// in pbDir, and returns the formatted source of Output.
func Generate(actorsDir, pbDir string) ([]byte, error) {
	msgs, err := readMessages(pbDir)
	if err != nil {
		return nil, err
	}
	p, err := readOps(actorsDir)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, o := range p.ops {
		if err := resolve(o, msgs, p, used); err != nil {
			return nil, err
		}
	}
	return render(p, used)
}

// readMessages returns, per actorpb message, its exported fields by lower-cased name.
func readMessages(dir string) (map[string]map[string][2]string, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.pb.go"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("wiregen: no .pb.go files in %s", dir)
	}
	msgs := map[string]map[string][2]string{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			fs := map[string][2]string{}
			for _, fl := range st.Fields.List {
				for _, id := range fl.Names {
					if id.IsExported() {
						fs[strings.ToLower(id.Name)] = [2]string{id.Name, types.ExprString(fl.Type)}
					}
				}
			}
			msgs[ts.Name.Name] = fs
			return false
		})
	}
	return msgs, nil
}

func readOps(dir string) (*pkgInfo, error) {
	p := &pkgInfo{fset: token.NewFileSet(), funcs: map[string]int{}, imports: map[string]string{}}
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	for _, name := range names {
		base := filepath.Base(name)
		if strings.HasSuffix(base, "_test.go") || base == Output {
			continue
		}
		f, err := parser.ParseFile(p.fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			n := path[strings.LastIndex(path, "/")+1:]
			if im.Name != nil {
				n = im.Name.Name
			}
			p.imports[n] = path
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				n := 0
				if d.Type.Results != nil {
					n = d.Type.Results.NumFields()
				}
				key := d.Name.Name
				if d.Recv != nil {
					key = "o." + key
				}
				p.funcs[key] = n
			case *ast.GenDecl:
				if d.Tok != token.TYPE {
					continue
				}
				for _, s := range d.Specs {
					ts := s.(*ast.TypeSpec)
					doc := ts.Doc
					if doc == nil && len(d.Specs) == 1 {
						doc = d.Doc
					}
					o, err := parseOp(p.fset, ts, doc)
					if err != nil {
						return nil, err
					}
					if o != nil {
						p.ops = append(p.ops, o)
					}
				}
			}
		}
	}
	sort.Slice(p.ops, func(i, j int) bool { return p.ops[i].kind < p.ops[j].kind })
	for i := 1; i < len(p.ops); i++ {
		if p.ops[i].kind == p.ops[i-1].kind {
			return nil, fmt.Errorf("wiregen: kind %q is declared by %s and %s", p.ops[i].kind, p.ops[i-1].typ, p.ops[i].typ)
		}
	}
	return p, nil
}

func parseOp(fset *token.FileSet, ts *ast.TypeSpec, doc *ast.CommentGroup) (*op, error) {
	if doc == nil {
		return nil, nil
	}
	var words []string
	for _, c := range doc.List {
		if strings.HasPrefix(c.Text, directive) {
			words = strings.Fields(strings.TrimPrefix(c.Text, directive))
		}
	}
	if words == nil {
		return nil, nil
	}
	pos := fset.Position(ts.Pos())
	if len(words) < 2 || len(words) > 3 {
		return nil, fmt.Errorf("%s: want %skind OpMessage [ResultMessage]", pos, directive)
	}
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return nil, fmt.Errorf("%s: %s is not a struct", pos, ts.Name.Name)
	}
	o := &op{typ: ts.Name.Name, kind: words[0], opMsg: words[1], pos: pos}
	if len(words) == 3 {
		o.resMsg = words[2]
	}
	for _, fl := range st.Fields.List {
		if fl.Tag == nil {
			continue
		}
		tag, _ := strconv.Unquote(fl.Tag.Value)
		st := reflect.StructTag(tag)
		w, ok := st.Lookup("wire")
		if !ok {
			continue
		}
		names := fl.Names
		if len(names) == 0 { // embedded
			names = []*ast.Ident{ast.NewIdent(types.ExprString(fl.Type))}
		}
		for _, id := range names {
			f := field{name: id.Name, goType: types.ExprString(fl.Type), pbName: st.Get("wirename"), enc: st.Get("wireenc"), dec: st.Get("wiredec")}
			if via := st.Get("wirevia"); via != "" {
				f.enc, f.dec = or(f.enc, via+"PB"), or(f.dec, via+"Of")
			}
			switch w {
			case "op":
				o.in = append(o.in, f)
			case "result":
				o.out = append(o.out, f)
			case "op,result":
				o.in, o.out = append(o.in, f), append(o.out, f)
			case "op,whole":
				if o.whole != nil || len(names) != 1 {
					return nil, fmt.Errorf("%s: %s has more than one whole input", pos, o.typ)
				}
				o.whole = &f
			default:
				return nil, fmt.Errorf("%s: %s.%s: wire tag %q is not op, result, op,result or op,whole", pos, o.typ, id.Name, w)
			}
		}
	}
	if o.whole != nil && len(o.in) > 0 {
		return nil, fmt.Errorf("%s: %s has a whole input and input fields", pos, o.typ)
	}
	if o.resMsg == "" && len(o.out) > 0 {
		return nil, fmt.Errorf("%s: %s has result fields but no result message", pos, o.typ)
	}
	return o, nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var scalars = map[string]bool{"bool": true, "string": true, "int32": true, "int64": true, "uint32": true,
	"uint64": true, "float32": true, "float64": true}

func resolve(o *op, msgs map[string]map[string][2]string, p *pkgInfo, used map[string]bool) error {
	for _, side := range []struct {
		msg string
		fs  []field
	}{{o.opMsg, o.in}, {o.resMsg, o.out}} {
		if side.msg == "" {
			continue
		}
		m, ok := msgs[side.msg]
		if !ok {
			return fmt.Errorf("%s: %s: no actorpb message %s", o.pos, o.typ, side.msg)
		}
		for i := range side.fs {
			f := &side.fs[i]
			pf, ok := m[strings.ToLower(or(f.pbName, f.name))]
			if !ok {
				return fmt.Errorf("%s: %s.%s: actorpb.%s has no field %s (name it with wirename)", o.pos, o.typ, f.name, side.msg, or(f.pbName, f.name))
			}
			f.pbName = pf[0]
			if err := mapping(o, f, pf[1], p, used); err != nil {
				return err
			}
		}
	}
	if o.whole != nil {
		if o.whole.enc == "" || o.whole.dec == "" {
			return fmt.Errorf("%s: %s.%s: a whole input needs wirevia or wireenc and wiredec", o.pos, o.typ, o.whole.name)
		}
		o.whole.enc, o.whole.dec = template(o.whole.enc), template(o.whole.dec)
	}
	return nil
}

func mapping(o *op, f *field, pbType string, p *pkgInfo, used map[string]bool) error {
	if f.enc == "" {
		switch {
		case f.goType == pbType:
			f.enc = "$"
		case scalars[pbType] && !strings.ContainsAny(f.goType, "[]*"):
			f.enc = pbType + "($)"
		default:
			return fmt.Errorf("%s: %s.%s: %s does not convert to %s (give wirevia, or wireenc and wiredec)", o.pos, o.typ, f.name, f.goType, pbType)
		}
	}
	if f.dec == "" {
		if f.goType == pbType {
			f.dec = "$"
		} else {
			f.dec = f.goType + "($)"
			if i := strings.Index(f.goType, "."); i > 0 {
				used[f.goType[:i]] = true
			}
		}
	} else if !strings.Contains(f.dec, "$") {
		n, ok := p.funcs[f.dec]
		if !ok {
			return fmt.Errorf("%s: %s.%s: no function %s in package actors", o.pos, o.typ, f.name, f.dec)
		}
		f.decErr = n == 2
	}
	f.enc, f.dec = template(f.enc), template(f.dec)
	return nil
}

// template makes a function name into a call of it on $.
func template(s string) string {
	if strings.Contains(s, "$") {
		return s
	}
	return s + "($)"
}

func subst(tmpl, v string) string { return strings.ReplaceAll(tmpl, "$", v) }

func render(p *pkgInfo, used map[string]bool) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("// Code generated by actors/internal/wiregen from the //actors:wire directives and wire tags of the op types. DO NOT EDIT.\n\n")
	b.WriteString("package actors\n\nimport (\n\tgproto \"google.golang.org/protobuf/proto\"\n\n\t\"github.com/trustd/trustd/proto/actorpb\"\n")
	var pkgs []string
	for n := range used {
		path, ok := p.imports[n]
		if !ok {
			return nil, fmt.Errorf("wiregen: package %s is used by a conversion but imported by no file of actors", n)
		}
		pkgs = append(pkgs, path)
	}
	sort.Strings(pkgs)
	for _, path := range pkgs {
		fmt.Fprintf(&b, "\t%q\n", path)
	}
	b.WriteString(")\n\n// wireOps constructs a wire op by kind: every type whose doc comment\n// carries an //actors:wire directive.\nvar wireOps = map[string]func() WireOp{\n")
	for _, o := range p.ops {
		fmt.Fprintf(&b, "\t%q: func() WireOp { return &%s{} },\n", o.kind, o.typ)
	}
	b.WriteString("}\n")
	for _, o := range p.ops {
		fmt.Fprintf(&b, "\n// OpKind implements WireOp.\nfunc (*%s) OpKind() string { return %q }\n", o.typ, o.kind)
		// inputs
		fmt.Fprintf(&b, "\n// AppendOp implements WireOp.\nfunc (o *%s) AppendOp(b []byte) ([]byte, error) {\n", o.typ)
		if o.whole != nil {
			fmt.Fprintf(&b, "\treturn appendPB(b, %s)\n}\n", subst(o.whole.enc, "o."+o.whole.name))
		} else {
			fmt.Fprintf(&b, "\treturn appendPB(b, &actorpb.%s{%s})\n}\n", o.opMsg, literal(o.in))
		}
		fmt.Fprintf(&b, "\n// UnmarshalOp implements WireOp.\nfunc (o *%s) UnmarshalOp(data []byte) error {\n", o.typ)
		fmt.Fprintf(&b, "\tvar m actorpb.%s\n\tif err := gproto.Unmarshal(data, &m); err != nil {\n\t\treturn err\n\t}\n", o.opMsg)
		if o.whole != nil {
			fmt.Fprintf(&b, "\to.%s = %s\n\treturn nil\n}\n", o.whole.name, subst(o.whole.dec, "&m"))
		} else {
			assign(&b, o.in)
		}
		// result
		if o.resMsg == "" {
			fmt.Fprintf(&b, "\n// AppendResult implements WireOp: %s has no result.\nfunc (o *%s) AppendResult(b []byte) ([]byte, error) { return b, nil }\n", o.typ, o.typ)
			fmt.Fprintf(&b, "\n// UnmarshalResult implements WireOp.\nfunc (o *%s) UnmarshalResult([]byte) error { return nil }\n", o.typ)
			continue
		}
		fmt.Fprintf(&b, "\n// AppendResult implements WireOp.\nfunc (o *%s) AppendResult(b []byte) ([]byte, error) {\n", o.typ)
		fmt.Fprintf(&b, "\treturn appendPB(b, &actorpb.%s{%s})\n}\n", o.resMsg, literal(o.out))
		fmt.Fprintf(&b, "\n// UnmarshalResult implements WireOp.\nfunc (o *%s) UnmarshalResult(data []byte) error {\n", o.typ)
		fmt.Fprintf(&b, "\tvar m actorpb.%s\n\tif err := gproto.Unmarshal(data, &m); err != nil {\n\t\treturn err\n\t}\n", o.resMsg)
		assign(&b, o.out)
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("wiregen: generated source does not parse: %v\n%s", err, b.Bytes())
	}
	return src, nil
}

func literal(fs []field) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.pbName + ": " + subst(f.enc, "o."+f.name)
	}
	return strings.Join(parts, ", ")
}

func assign(b *bytes.Buffer, fs []field) {
	withErr := false
	for _, f := range fs {
		if f.decErr {
			withErr = true
		}
	}
	if withErr {
		b.WriteString("\tvar err error\n")
	}
	for _, f := range fs {
		v := subst(f.dec, "m."+f.pbName)
		if f.decErr {
			fmt.Fprintf(b, "\tif o.%s, err = %s; err != nil {\n\t\treturn err\n\t}\n", f.name, v)
		} else {
			fmt.Fprintf(b, "\to.%s = %s\n", f.name, v)
		}
	}
	b.WriteString("\treturn nil\n}\n")
}

// WriteFile regenerates Output in actorsDir.
func WriteFile(actorsDir, pbDir string) error {
	src, err := Generate(actorsDir, pbDir)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(actorsDir, Output), src, 0o644)
}
