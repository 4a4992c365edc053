package lancer_test

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

// TestNoStructHoldsContext enforces the rule that a context.Context is
// passed to the call that does the I/O and never kept in a struct: no
// struct type (named or anonymous) of a non-test file of the module may
// have a field of type context.Context, however context is imported. A
// ctx a reader needs after its constructor returns lives in a closure of
// the function that took it (an iterator, an io.Reader made of a func).
func TestNoStructHoldsContext(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, pos := range contextFields(fset, f) {
			t.Errorf("%s: a struct field of type context.Context: pass ctx to the calls that need it instead", pos)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("looked at %d non-test .go files: the walk missed the module", files)
	}
}

// TestContextFieldsFindsEveryForm checks the checker itself on the forms
// a context field can take.
func TestContextFieldsFindsEveryForm(t *testing.T) {
	const src = `package p

import (
	"context"
	stdctx "context"
)

type named struct {
	a   int
	ctx context.Context // line 10
}

type aliased struct{ c stdctx.Context } // line 13

var anonymous = struct {
	x, y context.Context // line 16
}{}

type fine struct {
	run  func(ctx context.Context) error
	ctxs map[string]int
	Context int
}

func f() {
	type local struct{ p *context.Context } // line 26
	_ = local{}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pos := range contextFields(fset, f) {
		got = append(got, strconv.Itoa(pos.Line))
	}
	if want := "10 13 16 26"; strings.Join(got, " ") != want {
		t.Errorf("context fields found on lines %v, want %s", got, want)
	}
}

// contextFields returns the position of every struct field of f whose
// type is context.Context (or a pointer to it), under whatever name f
// imports package context.
func contextFields(fset *token.FileSet, f *ast.File) []token.Position {
	names := map[string]bool{} // the names f refers to package context by
	dot := false               // context imported with "."
	for _, imp := range f.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p != "context" {
			continue
		}
		switch {
		case imp.Name == nil:
			names["context"] = true
		case imp.Name.Name == ".":
			dot = true
		case imp.Name.Name != "_":
			names[imp.Name.Name] = true
		}
	}
	if len(names) == 0 && !dot {
		return nil
	}
	isContext := func(e ast.Expr) bool {
		if star, ok := e.(*ast.StarExpr); ok {
			e = star.X
		}
		switch e := e.(type) {
		case *ast.SelectorExpr:
			pkg, ok := e.X.(*ast.Ident)
			return ok && names[pkg.Name] && e.Sel.Name == "Context"
		case *ast.Ident:
			return dot && e.Name == "Context"
		}
		return false
	}
	var found []token.Position
	ast.Inspect(f, func(n ast.Node) bool {
		st, ok := n.(*ast.StructType)
		if !ok || st.Fields == nil {
			return true
		}
		for _, field := range st.Fields.List {
			if isContext(field.Type) {
				found = append(found, fset.Position(field.Pos()))
			}
		}
		return true
	})
	return found
}
