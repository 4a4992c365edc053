package dataset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// copyToMem copies the files under dir into a new MemStore, under prefix.
func copyToMem(t *testing.T, dir, prefix string, s *blob.MemStore) *blob.MemStore {
	t.Helper()
	if s == nil {
		s = blob.NewMemStore(t.Name() + "/" + prefix)
	}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return s.Write(context.Background(), blob.Join(prefix, filepath.ToSlash(rel)), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// editLatest rewrites the latest manifest of the dataset in s.
func editLatest(t *testing.T, s blob.Store, edit func(m *manifest.Manifest)) {
	t.Helper()
	e, err := latestManifest(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	c, err := manifest.ReadFile(context.Background(), s, e.key, e.size, true)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest.Clone()
	edit(m)
	if err := s.Write(context.Background(), e.key, encodeManifestFile(t, m, c.Transaction)); err != nil {
		t.Fatal(err)
	}
}

// openMem opens the dataset in s with a checked allocator.
func openMem(t *testing.T, s blob.Store, opts *OpenOptions) *Dataset {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	t.Cleanup(func() { mem.AssertSize(t, 0) })
	if opts == nil {
		opts = &OpenOptions{}
	}
	opts.Allocator = mem
	d, err := Open(context.Background(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// editRows rewrites JSON rows: each is decoded, edited and encoded again.
func editRows(t *testing.T, rows []json.RawMessage, edit func(r map[string]any)) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(rows))
	for i, row := range rows {
		dec := json.NewDecoder(bytes.NewReader(row))
		dec.UseNumber()
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		edit(r)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestEditedManifests reads history_v2_2 through manifests edited into
// shapes real Lance also produces (or used to), or that are malformed.
func TestEditedManifests(t *testing.T) {
	const name = "history_v2_2"
	exp := fixturetest.LoadExpected(t, name)
	dir := fixturetest.DatasetPath(t, name)
	ctx := context.Background()

	for _, tc := range []struct {
		name    string
		edit    func(m *manifest.Manifest)
		want    []json.RawMessage // rows of a full scan with _rowid
		wantErr error
	}{
		{
			name: "deletion counts unknown",
			edit: func(m *manifest.Manifest) {
				for _, f := range m.Fragments {
					if f.DeletionFile != nil {
						f.DeletionFile.NumDeletedRows = 0
					}
				}
			},
			want: exp.Rows,
		},
		{
			name: "physical rows unknown",
			edit: func(m *manifest.Manifest) {
				for _, f := range m.Fragments {
					f.PhysicalRows = 0
				}
			},
			want: exp.Rows,
		},
		{
			name: "column added later reads as nulls",
			edit: func(m *manifest.Manifest) {
				m.SetFields(append(cloneFields(m),
					&schema.Field{Name: "added", ID: 50, ParentID: -1, LogicalType: "struct", Nullable: true},
					&schema.Field{Name: "x", ID: 51, ParentID: 50, LogicalType: "int32", Nullable: true}))
			},
			want: editRows(t, exp.Rows, func(r map[string]any) { r["added"] = nil }),
		},
		{
			name: "tombstoned field reads as nulls",
			edit: func(m *manifest.Manifest) {
				for _, f := range m.Fragments {
					for _, df := range f.Files {
						for i, id := range df.Fields {
							if id == 7 { // "extra", added by add_columns
								df.Fields[i] = manifest.Tombstone
							}
						}
					}
				}
			},
			want: editRows(t, exp.Rows, func(r map[string]any) { r["extra"] = nil }),
		},
		{
			name: "struct spread over two files",
			edit: func(m *manifest.Manifest) {
				m.SetFields(append(cloneFields(m),
					&schema.Field{Name: "s", ID: 60, ParentID: -1, LogicalType: "struct", Nullable: true},
					&schema.Field{Name: "a", ID: 61, ParentID: 60, LogicalType: "int64"},
					&schema.Field{Name: "b", ID: 62, ParentID: 60, LogicalType: "int64"}))
				f := m.Fragments[0]
				f.Files[0].Fields = append(f.Files[0].Fields, 61)
				f.Files[0].ColumnIndices = append(f.Files[0].ColumnIndices, 0)
				f.Files[1].Fields = append(f.Files[1].Fields, 62)
				f.Files[1].ColumnIndices = append(f.Files[1].ColumnIndices, 0)
			},
			wantErr: lancer.ErrUnsupported,
		},
		{
			// Read from the first file listing it, as Lance reads the
			// duplicate ids Lance 0.10 wrote (planFragment).
			name: "field in two files",
			edit: func(m *manifest.Manifest) {
				f := m.Fragments[0]
				f.Files[1].Fields = append(f.Files[1].Fields, 0)
				f.Files[1].ColumnIndices = append(f.Files[1].ColumnIndices, 0)
			},
			want: exp.Rows,
		},
		{
			name: "data file shorter than the fragment",
			edit: func(m *manifest.Manifest) {
				m.Fragments[0].PhysicalRows++
			},
			wantErr: lancer.ErrCorrupt,
		},
		{
			name: "deletion count disagrees with the file",
			edit: func(m *manifest.Manifest) {
				m.Fragments[0].DeletionFile.NumDeletedRows++
			},
			wantErr: lancer.ErrCorrupt,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := copyToMem(t, dir, "", nil)
			editLatest(t, s, tc.edit)
			d := openMem(t, s, nil)
			rows, _, err := scanRows(t, d, &ScanOptions{WithRowID: true, BatchSize: 6})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("scan: %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				if _, err := d.Take(ctx, []uint64{0}, nil); !errors.Is(err, tc.wantErr) {
					t.Errorf("take: %v, want %v", err, tc.wantErr)
				}
				return
			}
			fixturetest.CompareRows(t, tc.name, rows, tc.want, fixturetest.CompareOptions{})
			if n, err := d.CountRows(ctx); err != nil || int64(n) != exp.NumRows {
				t.Errorf("CountRows = %d, %v; want %d", n, err, exp.NumRows)
			}
			rec, err := d.Take(ctx, []uint64{uint64(len(tc.want) - 1), 0}, &TakeOptions{WithRowID: true})
			got := takeRows(t, rec, err)
			fixturetest.CompareRows(t, tc.name+" take", got, []json.RawMessage{tc.want[len(tc.want)-1], tc.want[0]}, fixturetest.CompareOptions{})
		})
	}
}

// TestBasePaths reads a dataset whose files all live under another root,
// named by a base path: a dataset root (data/ and _deletions/ below it) or a
// plain directory of data files.
func TestBasePaths(t *testing.T) {
	const name = "history_v2_2"
	exp := fixturetest.LoadExpected(t, name)
	dir := fixturetest.DatasetPath(t, name)
	for _, tc := range []struct {
		name     string
		root     bool
		resolver bool // false: the default resolver opens the recorded path
	}{
		{"dataset root via resolver", true, true},
		{"dataset root via local path", true, false},
		{"plain data directory", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := copyToMem(t, filepath.Join(dir, "_versions"), "_versions", nil)
			copyToMem(t, filepath.Join(dir, "_deletions"), "_deletions", s)
			elsewhere := blob.NewMemStore(t.Name() + "/elsewhere")
			recorded := "mem://recorded/place"
			switch {
			case !tc.resolver:
				recorded = dir
			case tc.root:
				copyToMem(t, dir, "", elsewhere)
			default:
				copyToMem(t, filepath.Join(dir, "data"), "", elsewhere)
			}
			editLatest(t, s, func(m *manifest.Manifest) {
				m.BasePaths = []manifest.BasePath{{ID: 3, IsDatasetRoot: tc.root, Path: recorded}}
				m.ReaderFeatureFlags |= manifest.FlagBasePaths
				base := uint32(3)
				for _, f := range m.Fragments {
					for i := range f.Files {
						f.Files[i].BaseID = &base
					}
					if f.DeletionFile != nil && tc.root && !tc.resolver {
						f.DeletionFile.BaseID = &base
					}
				}
			})
			opts := &OpenOptions{}
			if tc.resolver {
				opts.ResolveBase = func(ctx context.Context, bp manifest.BasePath) (blob.Store, error) {
					if bp.Path != recorded || bp.ID != 3 || bp.IsDatasetRoot != tc.root {
						t.Errorf("resolving %+v", bp)
					}
					return elsewhere, nil
				}
			}
			d := openMem(t, s, opts)
			rows, _, err := scanRows(t, d, &ScanOptions{WithRowID: true})
			if err != nil {
				t.Fatal(err)
			}
			fixturetest.CompareRows(t, tc.name, rows, exp.Rows, fixturetest.CompareOptions{})
		})
	}
}

func TestTakeRowIDsMisses(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"history_v2_2", "history_v2_2_stable_rowids"} {
		t.Run(name, func(t *testing.T) {
			exp := fixturetest.LoadExpected(t, name)
			d, _ := openFixture(t, fixturetest.DatasetPath(t, name), 0)
			live := map[uint64]bool{}
			for _, r := range exp.Rows {
				live[rowID(t, r)] = true
			}
			// id 0 and address 0 (row id 0) were deleted by "id % 5 = 0";
			// the others name no row at all.
			for _, id := range []uint64{0, 5, 1<<32 | 100, 9 << 32, 1 << 40} {
				if live[id] {
					t.Fatalf("id %d is live; pick another", id)
				}
				if _, err := d.TakeRowIDs(ctx, []uint64{id}, nil); !errors.Is(err, lancer.ErrNotFound) {
					t.Errorf("TakeRowIDs(%d): %v, want ErrNotFound", id, err)
				}
			}
			if _, err := d.Take(ctx, []uint64{uint64(exp.NumRows)}, nil); !errors.Is(err, lancer.ErrNotFound) {
				t.Errorf("Take(%d): %v, want ErrNotFound", exp.NumRows, err)
			}
		})
	}
}

// TestStableRowIDsAfterUpdate takes the rows an update moved: with stable
// row ids they keep their ids, which then appear in two fragments, live in
// the new one only.
func TestStableRowIDsAfterUpdate(t *testing.T) {
	const name = "history_v2_2_stable_rowids"
	exp := fixturetest.LoadExpected(t, name)
	d, _ := openFixture(t, fixturetest.DatasetPath(t, name), 0)
	byID := map[uint64]json.RawMessage{}
	for _, r := range exp.Rows {
		byID[rowID(t, r)] = r
	}
	ids := []uint64{13, 11, 12}
	var want []json.RawMessage
	for _, id := range ids {
		if !strings.Contains(string(byID[id]), "updated") {
			t.Fatalf("row %d is not an updated row: %s", id, byID[id])
		}
		want = append(want, byID[id])
	}
	rec, err := d.TakeRowIDs(context.Background(), ids, &TakeOptions{WithRowID: true, WithRowAddress: true})
	got := takeRows(t, rec, err)
	fixturetest.CompareRows(t, "moved rows", got, want, fixturetest.CompareOptions{IgnoreKeys: []string{RowAddressColumn}})
	for i, g := range got {
		// The update wrote the rows into fragment 3.
		if addr := rowAddr(t, g); addr>>32 != 3 {
			t.Errorf("row id %d read from address %d (fragment %d), want fragment 3", ids[i], addr, addr>>32)
		}
	}
}

func rowAddr(t *testing.T, row []byte) uint64 {
	t.Helper()
	var r struct {
		Addr uint64 `json:"_rowaddr"`
	}
	if err := json.Unmarshal(row, &r); err != nil {
		t.Fatal(err)
	}
	return r.Addr
}

func TestScanProjections(t *testing.T) {
	ctx := context.Background()
	t.Run("row ids only", func(t *testing.T) {
		exp := fixturetest.LoadExpected(t, "history_v2_2")
		d, _ := openFixture(t, fixturetest.DatasetPath(t, "history_v2_2"), 0)
		rows, schema, err := scanRows(t, d, &ScanOptions{Columns: []string{}, WithRowID: true, WithRowAddress: true, BatchSize: 4})
		if err != nil {
			t.Fatal(err)
		}
		if schema.NumFields() != 2 {
			t.Fatalf("schema %s, want _rowid and _rowaddr", schema)
		}
		want := editRows(t, exp.Rows, func(r map[string]any) {
			for k := range r {
				if k != RowIDColumn {
					delete(r, k)
				}
			}
			r[RowAddressColumn] = r[RowIDColumn] // no stable row ids: the same
		})
		fixturetest.CompareRows(t, "row ids only", rows, want, fixturetest.CompareOptions{})
	})
	t.Run("nested member", func(t *testing.T) {
		exp := fixturetest.LoadExpected(t, "types_v2_2")
		d, _ := openFixture(t, fixturetest.DatasetPath(t, "types_v2_2"), 0)
		rows, schema, err := scanRows(t, d, &ScanOptions{Columns: []string{"nested.inner.x", "id"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := schema.String(); !strings.Contains(got, "nested: type=struct<inner: struct<x: float64") {
			t.Errorf("schema %s", got)
		}
		want := editRows(t, exp.Rows, func(r map[string]any) {
			nested, _ := r["nested"].(map[string]any)
			var pruned any
			if nested != nil {
				inner, _ := nested["inner"].(map[string]any)
				var x any
				if inner != nil {
					x = map[string]any{"x": inner["x"]}
				}
				pruned = map[string]any{"inner": x}
			}
			for k := range r {
				if k != "id" {
					delete(r, k)
				}
			}
			r["nested"] = pruned
		})
		fixturetest.CompareRows(t, "nested member", rows, want, fixturetest.CompareOptions{})
	})
	t.Run("bad options", func(t *testing.T) {
		d, _ := openFixture(t, fixturetest.DatasetPath(t, "history_v2_2"), 0)
		for _, tc := range []struct {
			opts ScanOptions
			want error
		}{
			{ScanOptions{Limit: -1}, lancer.ErrInvalidArgument},
			{ScanOptions{Offset: -1}, lancer.ErrInvalidArgument},
			{ScanOptions{BatchSize: -1}, lancer.ErrInvalidArgument},
			{ScanOptions{Columns: []string{"nope"}}, lancer.ErrNotFound},
			{ScanOptions{Columns: []string{"id.x"}}, lancer.ErrNotFound},
		} {
			if _, err := d.Scan(&tc.opts); !errors.Is(err, tc.want) {
				t.Errorf("Scan(%+v): %v, want %v", tc.opts, err, tc.want)
			}
		}
		if _, err := d.Take(ctx, nil, &TakeOptions{Columns: []string{"nope"}}); !errors.Is(err, lancer.ErrNotFound) {
			t.Errorf("Take with unknown column: %v", err)
		}
	})
	t.Run("empty take", func(t *testing.T) {
		d, _ := openFixture(t, fixturetest.DatasetPath(t, "history_v2_2"), 0)
		rec, err := d.Take(ctx, nil, &TakeOptions{WithRowID: true})
		if err != nil {
			t.Fatal(err)
		}
		defer rec.Release()
		if rec.NumRows() != 0 || rec.NumCols() != int64(len(d.Schema().Fields)+1) {
			t.Errorf("empty take: %d rows, %d columns", rec.NumRows(), rec.NumCols())
		}
	})
}

// TestScanLifecycle checks cancellation, early exit, reruns and retained
// batches: the checked allocator proves every batch and page was released.
func TestScanLifecycle(t *testing.T) {
	d, _ := openFixture(t, fixturetest.DatasetPath(t, "history_v2_2"), 0)
	t.Run("break and rerun", func(t *testing.T) {
		s, err := d.Scan(&ScanOptions{BatchSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		var first int64
		for rec, err := range s.Batches(context.Background()) {
			if err != nil || rec.NumRows() == 0 {
				t.Fatalf("batch %v, %v", rec, err)
			}
			first = rec.NumRows()
			break
		}
		// Each range is a scan of its own, from the first row.
		n := 0
		for rec, err := range s.Batches(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 && rec.NumRows() != first {
				t.Errorf("rerun's first batch has %d rows, the first run's %d", rec.NumRows(), first)
			}
			n++
		}
		if n < 2 {
			t.Errorf("rerun read %d batches", n)
		}
	})
	t.Run("retained batch outlives the scan", func(t *testing.T) {
		s, err := d.Scan(nil)
		if err != nil {
			t.Fatal(err)
		}
		var rec arrow.RecordBatch
		for r, err := range s.Batches(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			rec = r
			rec.Retain()
			break
		}
		if rec == nil {
			t.Fatal("no batch")
		}
		defer rec.Release()
		if rec.NumRows() == 0 {
			t.Error("empty batch")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, err := d.Scan(&ScanOptions{BatchSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		var last error
		n := 0
		for _, err := range s.Batches(ctx) {
			if err != nil {
				last = err
				break
			}
			n++
			cancel()
		}
		if n != 1 || !errors.Is(last, context.Canceled) {
			t.Errorf("after cancel: %d batches, error %v, want 1 and context.Canceled", n, last)
		}
	})
	t.Run("reader", func(t *testing.T) {
		s, err := d.Scan(&ScanOptions{BatchSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		for rec, err := range s.Batches(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			want += int(rec.NumRows())
		}
		r := s.Reader(context.Background())
		defer r.Release()
		if !r.Schema().Equal(s.Schema()) {
			t.Errorf("reader schema %s, scanner's %s", r.Schema(), s.Schema())
		}
		got := 0
		for r.Next() {
			got += int(r.RecordBatch().NumRows())
		}
		if r.Err() != nil || got != want {
			t.Errorf("reader read %d rows (err %v), the scan %d", got, r.Err(), want)
		}
		// A reader released before its end stops its scan.
		r2 := s.Reader(context.Background())
		if !r2.Next() {
			t.Fatal(r2.Err())
		}
		r2.Release()
	})
}

// TestExternalRowIDs moves each fragment's row id sequence out of the
// manifest into a file, as Lance does for large sequences.
func TestExternalRowIDs(t *testing.T) {
	const name = "history_v2_2_stable_rowids"
	exp := fixturetest.LoadExpected(t, name)
	s := copyToMem(t, fixturetest.DatasetPath(t, name), "", nil)
	var blobFile []byte
	editLatest(t, s, func(m *manifest.Manifest) {
		for _, f := range m.Fragments {
			ids := f.RowIDs.Inline
			blobFile = append(blobFile, "pad"...)
			f.RowIDs = &manifest.Sequence{External: &manifest.ExternalFile{
				Path: "_rowids/all.bin", Offset: uint64(len(blobFile)), Size: uint64(len(ids)),
			}}
			blobFile = append(blobFile, ids...)
		}
	})
	if err := s.Write(context.Background(), "_rowids/all.bin", blobFile); err != nil {
		t.Fatal(err)
	}
	d := openMem(t, s, nil)
	rows, _, err := scanRows(t, d, &ScanOptions{WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	fixturetest.CompareRows(t, "external row ids", rows, exp.Rows, fixturetest.CompareOptions{})
	rec, err := d.TakeRowIDs(context.Background(), []uint64{12, 1}, &TakeOptions{Columns: []string{"id"}})
	got := takeRows(t, rec, err)
	if len(got) != 2 || string(got[0]) != `{"id":12}` || string(got[1]) != `{"id":1}` {
		t.Errorf("take by row id: %s", got)
	}
}
