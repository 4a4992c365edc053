package lancer_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers orders lancer's packages: a package may import lancer packages of
// its own layer or a lower one, never a higher one. Packages are matched by
// the longest prefix of their path below the module.
var layers = map[string]int{
	"":                      0, // the root package: error categories only
	"internal/pb":           0,
	"internal/rowjson":      0,
	"internal/arrowutil":    0,
	"internal/lancereftest": 0, // runs the interop scripts with the pinned real Lance
	"internal/jsonvalue":    0,
	"internal/baselinetest": 0, // draws the real-Lance baseline's workload
	"internal/s3test":       0, // starts a local S3 server for tests; knows no lancer package
	"internal/azuretest":    0, // starts a local Azure blob service for tests; knows no lancer package
	"internal/tailbuf":      0, // keeps the end of a child process's output
	"internal/ipcwalk":      0, // bounds-checked Arrow IPC framing and flatbuffers
	"internal/codec":        0, // byte codecs of Lance pages and Arrow IPC buffers
	"vector":                0,
	"blob":                  1,
	"format":                2,
	"internal/fixturetest":  2,
	"internal/formattest":   2, // data for format's writer tests, format's own and interop's
	"dataset/manifest":      3, // the table model and its codecs, under dataset
	"internal/manifesttest": 3, // edits fixture manifests with dataset/manifest
	"dataset":               3,
	"branch":                4,
	"internal/checktest":    4, // runs dataset.Check and branch.Check on what tests wrote
	"internal/managedtest":  4, // lays out a managed-blob dataset (flag 1<<14) for dataset and CLI tests
	"server":                6,
	"bench":                 7,
	"cmd":                   7, // cmd/lancer/internal: what only the CLI uses (demo, importer, sample)
	"interop":               7,
	"cache":                 0, // the byte-bounded cache callers hand to dataset and server
	"table":                 5, // the Go SDK's handle over dataset and branch
	"internal/schemaproto":  2, // schema ↔ lance.file.Field, for format and dataset

	// format's own packages, ordered among themselves by formatLayers.
	"format/internal/fileio":     2, // the open file, page sink and seams every generation shares
	"format/internal/arrays":     2, // Arrow arrays from decoded buffers, for every generation
	"format/internal/legacy":     2, // v1 data files
	"format/internal/v20":        2, // 2.0 data files
	"format/internal/structural": 2, // 2.1+ data files
}

// isolated packages may import no lancer package but the root (and, for
// generated code, nothing at all): vector search knows no files.
var isolated = map[string]bool{"vector": true, "internal/pb": true, "internal/rowjson": true, "internal/arrowutil": true, "internal/lancereftest": true, "internal/jsonvalue": true, "internal/baselinetest": true, "internal/tailbuf": true, "internal/codec": true, "cache": true, "internal/ipcwalk": true}

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
// blob ← format ← dataset ← branch ← table ← server ← cmd.
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

// formatLayers orders format's own packages: the shared ones (0) import no
// generation, a generation (1) imports only shared ones, and format's root
// (2) dispatches on the file version to all of them.
var formatLayers = map[string]int{
	"format/internal/arrays":     0,
	"format/internal/fileio":     0,
	"format/internal/legacy":     1,
	"format/internal/v20":        1,
	"format/internal/structural": 1,
	"format":                     2,
}

// TestImportGraphFormatGenerations keeps format's file generations apart:
// none imports another, and what they share lives below them all.
func TestImportGraphFormatGenerations(t *testing.T) {
	for _, p := range listPackages(t) {
		from, ok := formatLayers[rel(p.ImportPath)]
		if !ok {
			if under(rel(p.ImportPath), "format/internal") {
				t.Errorf("%s is not in formatLayers: add it to imports_test.go", p.ImportPath)
			}
			continue
		}
		for _, imp := range p.Imports {
			to, ok := formatLayers[rel(imp)]
			if !ok {
				continue
			}
			if to > from || (to == from && to == 1) {
				t.Errorf("%s (format layer %d) imports %s (format layer %d): generations import only what they share", p.ImportPath, from, imp, to)
			}
		}
	}
}

// goPackage is what the checks below need of `go list`.
type goPackage struct {
	ImportPath, Name                   string
	Imports, TestImports, XTestImports []string
}

// listPackages lists the module's packages.
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Name,Imports,TestImports,XTestImports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []goPackage
	for dec := json.NewDecoder(strings.NewReader(string(out))); dec.More(); {
		var p goPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list saw only %d packages", len(pkgs))
	}
	return pkgs
}

// rel is pkg's path below the module ("" for the root, "-" outside it).
func rel(pkg string) string {
	if pkg == module {
		return ""
	}
	if r, ok := strings.CutPrefix(pkg, module+"/"); ok {
		return r
	}
	return "-"
}

// isTestSupport reports whether pkg is test infrastructure: by convention
// (net/http/httptest, testing/fstest) its name ends in "test".
func isTestSupport(pkg string) bool {
	return strings.HasSuffix(pkg[strings.LastIndex(pkg, "/")+1:], "test")
}

// harnesses are the trees that run lancer against its references rather
// than ship it: their non-test code (the benchmark programs) may use test
// infrastructure such as the local S3 server and the Lance reference.
var harnesses = []string{"bench", "interop"}

func under(r, dir string) bool { return r == dir || strings.HasPrefix(r, dir+"/") }

// TestTestSupportStaysInTests: code that ships (every package's non-test
// files outside the harnesses) never imports a *test package, so test
// infrastructure (fixture harness, local S3 and Azure servers, the Lance
// reference) cannot leak into lancer or its CLI.
func TestTestSupportStaysInTests(t *testing.T) {
	for _, p := range listPackages(t) {
		from := rel(p.ImportPath)
		if isTestSupport(p.ImportPath) || slices.ContainsFunc(harnesses, func(h string) bool { return under(from, h) }) {
			continue
		}
		for _, imp := range p.Imports {
			if rel(imp) != "-" && isTestSupport(imp) {
				t.Errorf("%s imports %s outside its tests: test infrastructure belongs in _test.go files", p.ImportPath, imp)
			}
		}
	}
}

// TestInternalPackagesLiveWithTheirUsers: an internal/ package serves more
// than one part of the tree; one that only the CLI (or only the
// benchmarks) uses lives under cmd/ (bench/), and one nothing imports is
// dead. Imports by a package's own tests do not count.
func TestInternalPackagesLiveWithTheirUsers(t *testing.T) {
	pkgs := listPackages(t)
	importers := map[string][]string{}
	for _, p := range pkgs {
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if imp != p.ImportPath && !slices.Contains(importers[imp], p.ImportPath) {
				importers[imp] = append(importers[imp], p.ImportPath)
			}
		}
	}
	for _, p := range pkgs {
		r := rel(p.ImportPath)
		if !strings.HasPrefix(r, "internal/") || p.Name == "main" {
			continue // commands (go generate's protogen) are run, not imported
		}
		users := importers[p.ImportPath]
		if len(users) == 0 {
			if r != "internal/pb" { // the .proto files and go:generate; its subpackages are the imports
				t.Errorf("%s is imported by nothing: delete it", p.ImportPath)
			}
			continue
		}
		for _, home := range []string{"cmd", "bench"} {
			if !slices.ContainsFunc(users, func(u string) bool { return !under(rel(u), home) }) {
				t.Errorf("%s is used only under %s/ (by %v): move it to %s/.../internal", p.ImportPath, home, users, home)
			}
		}
	}
}

// TestTableProtobufsStayInManifest: the lance.table protobufs are a codec
// detail of dataset/manifest; every other package (tests included) works on
// its typed model. internal/pb, which generates and tests them, is exempt.
func TestTableProtobufsStayInManifest(t *testing.T) {
	const tablepb = module + "/internal/pb/tablepb"
	for _, p := range listPackages(t) {
		r := rel(p.ImportPath)
		if r == "dataset/manifest" || under(r, "internal/pb") {
			continue
		}
		if slices.Contains(slices.Concat(p.Imports, p.TestImports, p.XTestImports), tablepb) {
			t.Errorf("%s imports %s: only dataset/manifest may", p.ImportPath, tablepb)
		}
	}
}
