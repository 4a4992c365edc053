package interop_test

// 2.0 data files read by format against what real Lance returned for each
// version of the fixtures; the manifests are read with dataset/manifest.

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// The 2.0 fixtures: datasets written by Lance 12 with storage version 2.0.
var v20Fixtures = []string{"types_v2_0", "history_v2_0", "overwrite_v2_0", "blob_legacy_v2_0", "deletions_v2_0"}

// v20OpenPath opens a 2.0 data file on disk.
func v20OpenPath(t testing.TB, path string, mem memory.Allocator) *format.Reader {
	t.Helper()
	store, key := fixturetest.LocalFile(t, path)
	r := fwOpen(t, store, key, mem)
	if r.Version() != format.Version2_0 {
		t.Fatalf("%s: version %s, want 2.0", path, r.Version())
	}
	return r
}

// TestFormatV20FixturesMatchLance reads every data file of the 2.0 fixtures in full and
// checks them against what Lance returned: for every version whose rows the
// fixture records, each row's address (fragment << 32 | offset) names the
// row of its fragment's data files that must hold it. Every data file of
// types_v2_0 and blob_legacy_v2_0 must be checked this way, and at least one
// of each other fixture.
func TestFormatV20FixturesMatchLance(t *testing.T) {
	for _, name := range v20Fixtures {
		t.Run(name, func(t *testing.T) {
			exp := fixturetest.LoadExpected(t, name)
			manifests := v20Manifests(t, name)
			views := []struct {
				version uint64
				rows    []json.RawMessage
			}{{exp.CurrentVersion, exp.Rows}}
			for _, tt := range exp.TimeTravel {
				views = append(views, struct {
					version uint64
					rows    []json.RawMessage
				}{tt.Version, tt.Rows})
			}
			files := fixturetest.DataFiles(t, name)
			checked := map[string]bool{}
			for _, path := range files {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				r := v20OpenPath(t, path, mem)
				rec := fwReadAll(t, r)
				for _, view := range views {
					m, ok := manifests[view.version]
					if !ok || len(view.rows) == 0 {
						continue
					}
					frag, ok := m.files[filepath.Base(path)]
					if !ok {
						continue
					}
					renamed := v20Renamed(rec, r.Schema(), m.names)
					all := fixturetest.EncodeRows(t, renamed)
					var cols []string
					for _, f := range renamed.Schema().Fields() {
						cols = append(cols, f.Name)
					}
					renamed.Release()
					var got, want [][]byte
					for _, row := range view.rows {
						id := v20RowID(t, row)
						if id>>32 != frag {
							continue
						}
						if off := id & (1<<32 - 1); off < uint64(len(all)) {
							got = append(got, all[off])
						} else {
							got = append(got, []byte(fmt.Sprintf(`{"_offset_past_the_file":%d}`, off)))
						}
						want = append(want, row)
					}
					if len(want) == 0 {
						continue
					}
					fixturetest.CompareRows(t, fmt.Sprintf("%s version %d %s", name, view.version, filepath.Base(path)), got, want,
						fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}, Columns: cols})
					checked[path] = true
				}
				rec.Release()
				mem.AssertSize(t, 0)
			}
			t.Logf("%s: %d of %d data files checked against Lance's rows", name, len(checked), len(files))
			if name == "types_v2_0" || name == "blob_legacy_v2_0" {
				if len(checked) != len(files) {
					t.Fatalf("checked %d of %d files", len(checked), len(files))
				}
			} else if len(checked) == 0 {
				t.Fatalf("no data file of %s checked against Lance's rows", name)
			}
		})
	}
}

// v20Manifest is what one manifest says about the data files.
type v20Manifest struct {
	files map[string]uint64 // data file -> fragment id
	names map[int32]string  // top-level field id -> column name
}

// v20Manifests reads every manifest of a fixture dataset, by version.
func v20Manifests(t testing.TB, name string) map[uint64]v20Manifest {
	t.Helper()
	dir := fixturetest.DatasetPath(t, name)
	paths, err := filepath.Glob(filepath.Join(dir, "_versions", "*.manifest"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: no manifests", name)
	}
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]v20Manifest{}
	for _, path := range paths {
		mf, err := manifest.ReadFile(context.Background(), store, "_versions/"+filepath.Base(path), 0, false)
		if err != nil {
			t.Fatalf("%s: manifest: %v", path, err)
		}
		m := mf.Manifest
		v := v20Manifest{files: map[string]uint64{}, names: map[int32]string{}}
		for _, f := range m.Schema.Fields {
			v.names[f.ID] = f.Name
		}
		for _, frag := range m.Fragments {
			for _, df := range frag.Files {
				v.files[df.Path] = frag.ID
			}
		}
		out[m.Version] = v
	}
	return out
}

// v20Renamed relabels rec's columns with the dataset's names for their
// field ids (a rename changes the manifest, not the data files).
func v20Renamed(rec arrow.RecordBatch, s *schema.Schema, names map[int32]string) arrow.RecordBatch {
	fields := slices.Clone(rec.Schema().Fields())
	for i, f := range s.Fields {
		if n, ok := names[f.ID]; ok {
			fields[i].Name = n
		}
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), rec.Columns(), rec.NumRows())
}

// v20RowID returns the _rowid of a fixture row.
func v20RowID(t testing.TB, row []byte) uint64 {
	t.Helper()
	i := strings.LastIndex(string(row), `"_rowid":`)
	if i < 0 {
		t.Fatalf("row without _rowid: %s", row)
	}
	var id uint64
	if _, err := fmt.Sscan(strings.TrimRight(string(row[i+len(`"_rowid":`):]), "} "), &id); err != nil {
		t.Fatalf("row id in %s: %v", row, err)
	}
	return id
}
