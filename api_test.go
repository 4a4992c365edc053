package lancer_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// apiExceptions are the exported declarations allowed, for now, to name an
// internal type, by "file: name" as internalInAPI reports them (file
// relative to the module root). Each needs a TODO saying who removes it.
var apiExceptions = map[string]string{}

// TestNoInternalTypeInAPI enforces the rule that internal packages
// (generated protobufs above all) are a detail of the package that uses
// them: no exported declaration of a non-internal, non-main package may
// name a type of a package whose import path contains /internal/, in a
// func's or method's parameters or results, an exported type's definition
// (its exported fields and methods), or an exported var's or const's
// explicit type.
func TestNoInternalTypeInAPI(t *testing.T) {
	files := 0
	seen := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" ||
				name == "node_modules" || name == "vendor" || name == "internal") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		files++
		for _, v := range internalInAPI(fset, f) {
			key := filepath.ToSlash(v.Pos.Filename) + ": " + v.Decl
			if _, ok := apiExceptions[key]; ok {
				seen[key] = true
				continue
			}
			t.Errorf("%s: exported %s names %s, a type of an internal package: keep it out of the API", v.Pos, v.Decl, v.Type)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("looked at %d non-test .go files: the walk missed the module", files)
	}
	for key := range apiExceptions {
		if !seen[key] {
			t.Errorf("apiExceptions lists %q, which no longer names an internal type: remove it", key)
		}
	}
}

// TestInternalInAPIFindsEveryForm checks the checker itself on the forms an
// internal type can take in an API, and on those that are no API.
func TestInternalInAPIFindsEveryForm(t *testing.T) {
	const src = `package p

import (
	"github.com/x/m/internal/pb"
	xpb "github.com/x/m/internal/other/pb2"
	"github.com/x/m/public"
)

func F(a int, b *pb.Msg) {} // line 9

func G() (public.T, []map[string]xpb.M) { return nil, nil } // line 11

type T struct {
	A     int
	B     *pb.Msg // line 15
	c     pb.Msg
	pb.Embedded // line 17
	D     struct {
		e pb.Msg
		E func(pb.Msg) // line 20
	}
}

func (T) M(x chan pb.Msg) {} // line 24

func (*T) N() pb.Msg { return pb.Msg{} } // line 26

func (t T[K]) O() (k K) { return } // fine: K is a type parameter

type u struct{ A pb.Msg }

func (u) P(pb.Msg) {} // fine: an unexported type's method

func q(pb.Msg) {} // fine: unexported

type I interface {
	Do(pb.Msg) // line 37
	do(pb.Msg)
	xpb.Iface // line 39
}

type Alias = pb.Msg // line 42

type Fn func() error

var V pb.Msg // line 46

var v, W = pb.Msg{}, 1 // fine: no explicit type

const C xpb.Kind = 1 // line 50

type Gen[X pb.Constraint] struct{} // line 52

func init() { var _ pb.Msg }

func H[X pb.Constraint]() {} // line 56
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range internalInAPI(fset, f) {
		got = append(got, strconv.Itoa(v.Pos.Line)+":"+v.Decl)
	}
	want := "9:F 11:G 15:T.B 17:T.Embedded 20:T.D 24:T.M 26:T.N 37:I.Do 39:I 42:Alias 46:V 50:C 52:Gen 56:H"
	if strings.Join(got, " ") != want {
		t.Errorf("found\n %s\nwant\n %s", strings.Join(got, " "), want)
	}
	// A dot import of an internal package hides which names are its own,
	// so the import itself is reported.
	f, err = parser.ParseFile(fset, "q.go", "package q\n\nimport . \"m/internal/pb\"\n\nvar X Msg\n", parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	if vs := internalInAPI(fset, f); len(vs) != 1 || vs[0].Pos.Line != 3 {
		t.Errorf("dot import: found %v, want line 3", vs)
	}
}

// apiViolation is an exported declaration naming an internal type.
type apiViolation struct {
	Pos  token.Position
	Decl string // "F", "T.Field", "T.Method", "V"
	Type string // the internal type, as written ("filepb.Field")
}

// internalInAPI returns the exported declarations of f that name a type of
// an imported package whose path contains /internal/. Names are resolved
// syntactically: an import's name is its alias or the last element of its
// path (as this module names its packages).
func internalInAPI(fset *token.FileSet, f *ast.File) []apiViolation {
	internal := map[string]bool{} // the names f refers to internal packages by
	var out []apiViolation
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(p, "/internal/") && !strings.HasPrefix(p, "internal/") {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch name {
		case "_":
		case ".":
			out = append(out, apiViolation{fset.Position(imp.Pos()), "import", p})
		default:
			internal[name] = true
		}
	}
	if len(internal) == 0 {
		return out
	}
	report := func(decl string, at ast.Expr) {
		for _, sel := range internalRefs(at, internal) {
			out = append(out, apiViolation{fset.Position(sel.Pos()), decl, sel.X.(*ast.Ident).Name + "." + sel.Sel.Name})
		}
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			name := d.Name.Name
			if d.Recv != nil {
				recv := receiverName(d.Recv.List[0].Type)
				if !ast.IsExported(recv) {
					continue
				}
				name = recv + "." + name
			}
			report(name, d.Type)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if s.TypeParams != nil {
						report(s.Name.Name, &ast.FuncType{Params: s.TypeParams})
					}
					switch tt := s.Type.(type) {
					case *ast.StructType:
						for _, fld := range tt.Fields.List {
							if n := exportedFieldName(fld); n != "" {
								report(s.Name.Name+"."+n, fld.Type)
							}
						}
					case *ast.InterfaceType:
						for _, m := range tt.Methods.List {
							switch {
							case len(m.Names) == 0:
								report(s.Name.Name, m.Type)
							case m.Names[0].IsExported():
								report(s.Name.Name+"."+m.Names[0].Name, m.Type)
							}
						}
					default:
						report(s.Name.Name, s.Type)
					}
				case *ast.ValueSpec:
					if s.Type != nil && slices.ContainsFunc(s.Names, (*ast.Ident).IsExported) {
						report(s.Names[0].Name, s.Type)
					}
				}
			}
		}
	}
	return out
}

// exportedFieldName is the name of a struct field if it is exported (the
// type's name for an embedded field), else "".
func exportedFieldName(fld *ast.Field) string {
	if len(fld.Names) == 0 {
		if n := receiverName(fld.Type); ast.IsExported(n) {
			return n
		}
		return ""
	}
	for _, n := range fld.Names {
		if n.IsExported() {
			return n.Name
		}
	}
	return ""
}

// receiverName is the name of the type a receiver or embedded field names:
// T, *T, T[K], pkg.T.
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.SelectorExpr:
			return x.Sel.Name
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// internalRefs returns the references pkg.Name in e to a package named in
// internal, skipping what a user of e cannot see: unexported fields of
// anonymous structs and unexported methods of interfaces.
func internalRefs(e ast.Node, internal map[string]bool) []*ast.SelectorExpr {
	var out []*ast.SelectorExpr
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && internal[id.Name] {
				out = append(out, x)
			}
			return false
		case *ast.StructType:
			for _, fld := range x.Fields.List {
				if exportedFieldName(fld) != "" {
					out = append(out, internalRefs(fld.Type, internal)...)
				}
			}
			return false
		case *ast.InterfaceType:
			for _, m := range x.Methods.List {
				if len(m.Names) == 0 || m.Names[0].IsExported() {
					out = append(out, internalRefs(m.Type, internal)...)
				}
			}
			return false
		}
		return true
	})
	return out
}
