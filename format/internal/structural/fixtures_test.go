package structural

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// structuralDataFiles returns every 2.1+ data file under the fixtures
// matching the glob patterns (relative to the fixtures root).
func structuralDataFiles(t testing.TB, patterns ...string) []string {
	t.Helper()
	root := fixturetest.Dir(t)
	var files []string
	for _, p := range patterns {
		m, err := filepath.Glob(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no data files match %v", patterns)
	}
	return files
}

// fixtureFile is a fixture data file opened the way format.Open opens it,
// without format's root: the container parsed, and a Reader for 2.1+ files.
type fixtureFile struct {
	f  *fileio.File
	st *Reader
}

// openFixtureFile opens a data file of the fixtures with allocator mem.
func openFixtureFile(t testing.TB, path string, mem memory.Allocator) *fixtureFile {
	t.Helper()
	store, err := blob.NewLocalStore(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f, tail, err := fileio.Open(ctx, store, filepath.Base(path), 0, mem)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	if f.Version.IsLegacy() {
		return &fixtureFile{f: f}
	}
	if err := f.OpenV2(ctx, tail); err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	return &fixtureFile{f: f, st: &Reader{File: f}}
}

// leafField is a leaf of a file schema with the names from the top-level
// field down to it, and whether a list or map lies above it.
type leafField struct {
	*schema.Field
	path      []string
	underList bool
}

// defaultColumns numbers the leaves of a 2.1+ file schema the way Lance's
// writer assigned them physical columns (format.Reader does the same).
func defaultColumns(s *schema.Schema) map[int32]int {
	cols := map[int32]int{}
	next := 0
	var visit func(f *schema.Field)
	visit = func(f *schema.Field) {
		if f.StoredAsLeaf() {
			cols[f.ID] = next
			next++
		}
		if f.StoredWhole() {
			return
		}
		for _, c := range f.Children {
			visit(c)
		}
	}
	for _, f := range s.Fields {
		visit(f)
	}
	return cols
}

// leafColumns maps each physical column of a 2.1+ file to its leaf.
func leafColumns(r *fixtureFile) map[int]leafField {
	cols := defaultColumns(r.f.Schema)
	out := map[int]leafField{}
	var visit func(f *schema.Field, path []string, underList bool)
	visit = func(f *schema.Field, path []string, underList bool) {
		path = append(slices.Clone(path), f.Name)
		if c, ok := cols[f.ID]; ok {
			out[c] = leafField{Field: f, path: path, underList: underList}
			return
		}
		list := f.Type.ID() == arrow.LIST || f.Type.ID() == arrow.LARGE_LIST || f.Type.ID() == arrow.MAP
		for _, c := range f.Children {
			visit(c, path, underList || list)
		}
	}
	for _, f := range r.f.Schema.Fields {
		visit(f, nil, false)
	}
	return out
}
