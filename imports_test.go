package lancer_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// layers orders lancer's packages: a package may import lancer packages of
// its own layer or a lower one, never a higher one. Packages are matched by
// the longest prefix of their path below the module.
var layers = map[string]int{
	"":                     0, // the root package: error categories only
	"internal/pb":          0,
	"internal/rowjson":     0,
	"internal/arrowutil":   0,
	"internal/lanceref":    0,
	"internal/jsonvalue":   0,
	"internal/baseline":    0,
	"internal/versitygw":   0, // starts a local S3 server for tests; knows no lancer package
	"internal/azurite":     0, // starts a local Azure blob service for tests; knows no lancer package
	"internal/tailbuf":     0, // keeps the end of a child process's output
	"vector":               0,
	"blob":                 1,
	"internal/sample":      1,
	"format":               2,
	"internal/fixturetest": 2,
	"dataset/manifest":     3,
	// edits fixture manifests with dataset/manifest
	"internal/fixturetest/manifestedit": 3,
	"dataset":                           3,
	"branch":                            4,
	"server":                            5,
	"internal/demo":                     5, // builds the demo table with dataset and branch
	"bench":                             6,
	"cmd":                               6,
	"interop":                           6,
	"internal/importer":                 6,
}

// isolated packages may import no lancer package but the root (and, for
// generated code, nothing at all): vector search knows no files.
var isolated = map[string]bool{"vector": true, "internal/pb": true, "internal/rowjson": true, "internal/arrowutil": true, "internal/lanceref": true, "internal/jsonvalue": true, "internal/baseline": true, "internal/tailbuf": true}

const module = "github.com/lancerdb/lancer"

func layerOf(t *testing.T, pkg string) (string, int) {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	best, found := "", false
	for prefix := range layers {
		match := rel == prefix || (prefix != "" && strings.HasPrefix(rel, prefix+"/"))
		if match && (!found || len(prefix) > len(best)) {
			best, found = prefix, true
		}
	}
	if !found {
		t.Fatalf("package %s is in no layer: add it to layers in imports_test.go", pkg)
	}
	return best, layers[best]
}

// TestImportGraph keeps imports pointing one way:
// blob ← format ← dataset ← branch ← server ← cmd.
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		from, fromLayer := layerOf(t, p.ImportPath)
		for _, imp := range p.Imports {
			if imp != module && !strings.HasPrefix(imp, module+"/") {
				continue
			}
			to, toLayer := layerOf(t, imp)
			if isolated[from] && imp != module && to != from {
				t.Errorf("%s imports %s: %s may import only the root package", p.ImportPath, imp, from)
			}
			if toLayer > fromLayer {
				t.Errorf("%s (layer %q) imports %s (layer %q): imports must point down the stack", p.ImportPath, from, imp, to)
			}
		}
	}
	if n < 5 {
		t.Fatalf("go list saw only %d packages", n)
	}
}

// TestTableProtobufsStayInManifest: the lance.table protobufs are a codec
// detail of dataset/manifest; every other package (tests included) works on
// its typed model. internal/pb, which generates and tests them, is exempt.
func TestTableProtobufsStayInManifest(t *testing.T) {
	const tablepb = module + "/internal/pb/tablepb"
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		if p.ImportPath == module+"/dataset/manifest" || p.ImportPath == module+"/internal/pb" || strings.HasPrefix(p.ImportPath, module+"/internal/pb/") {
			continue
		}
		imports := [][]string{p.Imports, p.TestImports, p.XTestImports}
		if p.ImportPath == module+"/format" {
			// TODO(issue 16): format's tests still decode fixture manifests
			// with the protobufs; they move with format's split.
			imports = imports[:1]
		}
		for _, imps := range imports {
			for _, imp := range imps {
				if imp == tablepb {
					t.Errorf("%s imports %s: only dataset/manifest may", p.ImportPath, tablepb)
				}
			}
		}
	}
}
