package dataset

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// overlayValues is the content of an overlay file of the idRows schema:
// the value columns, by field name, of the covered offsets in rank order
// (nil = NULL). Values of "id" are int64, of "s" strings.
type overlayValues map[string][]any

// writeOverlayFile writes an overlay data file as the spec lays it out
// (docs/spec/data-overlays.md): one value column per field, no key
// column, the values in rank order. It returns the DataFile to record.
func writeOverlayFile(t *testing.T, store blob.Store, d *Dataset, mem memory.Allocator, v format.Version, names []string, vals overlayValues) manifest.DataFile {
	t.Helper()
	ctx := context.Background()
	sch, err := d.manifest.Schema.Project(names)
	if err != nil {
		t.Fatal(err)
	}
	var arrs []arrow.Array
	var fields []arrow.Field
	for _, name := range names {
		var a arrow.Array
		switch name {
		case "id":
			b := array.NewInt64Builder(mem)
			for _, x := range vals[name] {
				if x == nil {
					b.AppendNull()
				} else {
					b.Append(int64(x.(int)))
				}
			}
			a = b.NewArray()
			b.Release()
		case "s":
			b := array.NewStringBuilder(mem)
			for _, x := range vals[name] {
				if x == nil {
					b.AppendNull()
				} else {
					b.Append(x.(string))
				}
			}
			a = b.NewArray()
			b.Release()
		default:
			t.Fatalf("no column %q", name)
		}
		arrs = append(arrs, a)
		fields = append(fields, sch.Field(name).ArrowField())
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(arrs[0].Len()))
	releaseArrays(arrs)
	defer rec.Release()
	w, err := format.NewWriter(ctx, store, dataDir+"overlay-"+newDataFileName(), sch, &format.WriterOptions{Version: v, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, rec); err != nil {
		w.Abort(ctx)
		t.Fatal(err)
	}
	wf, err := w.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return dataFileOf(wf)
}

// overlaySpec is one overlay of a test: its fields and values, which
// offsets it covers (one bitmap shared, or one per field), and its
// committed version (0: the manifest's).
type overlaySpec struct {
	frag    int // index into the fragments
	fields  []string
	vals    overlayValues
	shared  []uint32
	sparse  [][]uint32
	version uint64
}

// addOverlays writes the overlays' files and records them in the latest
// manifest with flag 64, in order.
func addOverlays(t *testing.T, store blob.Store, mem memory.Allocator, v format.Version, specs []overlaySpec) {
	t.Helper()
	d := openStore(t, store, 0, mem)
	var ovs []manifest.Overlay
	var frags []int
	for _, sp := range specs {
		file := writeOverlayFile(t, store, d, mem, v, sp.fields, sp.vals)
		version := sp.version
		if version == 0 {
			version = d.Version()
		}
		var o manifest.Overlay
		var err error
		if sp.sparse != nil {
			bms := make([]*roaring.Bitmap, len(sp.sparse))
			for i, offs := range sp.sparse {
				bms[i] = roaring.BitmapOf(offs...)
			}
			o, err = manifest.NewSparseOverlay(file, bms, version)
		} else {
			o, err = manifest.NewDenseOverlay(file, roaring.BitmapOf(sp.shared...), version)
		}
		if err != nil {
			t.Fatal(err)
		}
		ovs = append(ovs, o)
		frags = append(frags, sp.frag)
	}
	editLatest(t, store, func(m *manifest.Manifest) {
		for i, o := range ovs {
			f := m.Fragments[frags[i]]
			f.Overlays = append(f.Overlays, o)
		}
		m.ReaderFeatureFlags |= manifest.FlagDataOverlays
		m.WriterFeatureFlags |= manifest.FlagDataOverlays
	})
}

// columnStrings returns column name of rows as JSON texts.
func columnStrings(rows []row, name string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = string(r.cols[name])
	}
	return out
}

// baseS is the base value of column s for id i in idRows, as JSON.
func baseS(i int) string {
	if i%7 == 3 {
		return "null"
	}
	return fmt.Sprintf("%q", fmt.Sprintf("s%d", i))
}

// TestOverlayScan: scans see each cell's newest overlay value, in the
// cases of the spec's resolution rules (docs/spec/data-overlays.md): a
// dense overlay, newest committed_version winning, position breaking a
// tie, a covered NULL overriding to NULL, a sparse overlay covering
// different offsets per field, and fields an overlay does not cover
// falling through to the base. Without the overlay read (e.g. ignoring
// DataFragment.overlays) every case but "none" fails.
func TestOverlayScan(t *testing.T) {
	type cell struct {
		row int
		col string
		val string // JSON
	}
	cases := []struct {
		name  string
		specs []overlaySpec
		want  []cell // cells that differ from the base
	}{
		{name: "none"},
		{
			name:  "dense",
			specs: []overlaySpec{{fields: []string{"s"}, vals: overlayValues{"s": {"X1", "X4"}}, shared: []uint32{1, 4}}},
			want:  []cell{{1, "s", `"X1"`}, {4, "s", `"X4"`}},
		},
		{
			name: "dense two fields",
			specs: []overlaySpec{{fields: []string{"id", "s"}, vals: overlayValues{"id": {100, 109}, "s": {"a", nil}},
				shared: []uint32{0, 9}}},
			want: []cell{{0, "id", "100"}, {0, "s", `"a"`}, {9, "id", "109"}, {9, "s", "null"}},
		},
		{
			name: "newer version wins over a later entry",
			specs: []overlaySpec{
				{fields: []string{"s"}, vals: overlayValues{"s": {"new2", "new5"}}, shared: []uint32{2, 5}, version: 2},
				{fields: []string{"s"}, vals: overlayValues{"s": {"old2", "old3"}}, shared: []uint32{2, 3}, version: 1},
			},
			want: []cell{{2, "s", `"new2"`}, {3, "s", `"old3"`}, {5, "s", `"new5"`}},
		},
		{
			name: "later entry wins a tie",
			specs: []overlaySpec{
				{fields: []string{"s"}, vals: overlayValues{"s": {"first"}}, shared: []uint32{6}, version: 2},
				{fields: []string{"s"}, vals: overlayValues{"s": {"second"}}, shared: []uint32{6}, version: 2},
			},
			want: []cell{{6, "s", `"second"`}},
		},
		{
			name:  "covered null overrides",
			specs: []overlaySpec{{fields: []string{"s"}, vals: overlayValues{"s": {nil}}, shared: []uint32{8}}},
			want:  []cell{{8, "s", "null"}},
		},
		{
			name: "sparse",
			specs: []overlaySpec{{fields: []string{"id", "s"}, vals: overlayValues{"id": {-1, -7}, "s": {"z2", "z3"}},
				sparse: [][]uint32{{1, 7}, {2, 3}}}},
			want: []cell{{1, "id", "-1"}, {7, "id", "-7"}, {2, "s", `"z2"`}, {3, "s", `"z3"`}},
		},
		{
			name:  "second fragment",
			specs: []overlaySpec{{frag: 1, fields: []string{"s"}, vals: overlayValues{"s": {"f1"}}, shared: []uint32{0}}},
			want:  []cell{{10, "s", `"f1"`}},
		},
	}
	for _, v := range []format.Version{format.Version2_0, format.Version2_1} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%s/%s", v, tc.name), func(t *testing.T) {
				mem := checkedAlloc(t)
				store := blob.NewMemStore("overlay")
				smallFragments(t, store, mem, v, false, 2, 10)
				if len(tc.specs) > 0 {
					addOverlays(t, store, mem, v, tc.specs)
				}
				d := openStore(t, store, 0, mem)
				var wantID, wantS []string
				for i := range 20 {
					wantID = append(wantID, fmt.Sprint(i))
					wantS = append(wantS, baseS(i))
				}
				for _, c := range tc.want {
					map[string][]string{"id": wantID, "s": wantS}[c.col][c.row] = c.val
				}
				rows := scanAll(t, d)
				if got := columnStrings(rows, "id"); !slices.Equal(got, wantID) {
					t.Errorf("scan id = %v, want %v", got, wantID)
				}
				if got := columnStrings(rows, "s"); !slices.Equal(got, wantS) {
					t.Errorf("scan s = %v, want %v", got, wantS)
				}
				// Take sees the same cells, in any order.
				positions := []uint64{19, 0, 6, 2, 10, 3, 1, 9, 7, 8, 5, 4}
				rec, err := d.Take(context.Background(), positions, nil)
				if err != nil {
					t.Fatal(err)
				}
				for i, b := range fixturetest.EncodeRows(t, rec) {
					p := positions[i]
					want := fmt.Sprintf(`{"id":%s,"s":%s}`, wantID[p], wantS[p])
					if string(b) != want {
						t.Errorf("take position %d = %s, want %s", p, b, want)
					}
				}
				rec.Release()
				// Filters and counts evaluate the overlaid values.
				for _, c := range tc.want {
					pred := fmt.Sprintf("%s = %s", c.col, strings.ReplaceAll(c.val, `"`, `'`))
					if c.val == "null" {
						pred = c.col + " IS NULL"
					}
					n, err := d.Count(context.Background(), pred)
					if err != nil {
						t.Fatal(err)
					}
					want := 0
					for i := range 20 {
						col := map[string][]string{"id": wantID, "s": wantS}[c.col]
						if col[i] == c.val {
							want++
						}
					}
					if int(n) != want {
						t.Errorf("count %q = %d, want %d", pred, n, want)
					}
				}
				if n, err := d.CountRows(context.Background()); err != nil || n != 20 {
					t.Errorf("count rows %d (%v), want 20", n, err)
				}
			})
		}
	}
}

// TestOverlayRefusals: overlays lancer cannot read exactly are refused
// with lancer.ErrUnsupported naming the flag, and malformed ones with
// lancer.ErrCorrupt, never read as the base values.
func TestOverlayRefusals(t *testing.T) {
	cases := []struct {
		name string
		spec overlaySpec
		want error
	}{
		// A sparse overlay whose value columns have different lengths:
		// lancer's file reader holds one row count per file.
		{"sparse columns of different lengths", overlaySpec{fields: []string{"id", "s"}, vals: overlayValues{"id": {1, 2}, "s": {"a", "b"}},
			sparse: [][]uint32{{1, 2}, {3}}}, lancer.ErrUnsupported},
		// A dense overlay covering more offsets than its file has values.
		{"dense coverage beyond the values", overlaySpec{fields: []string{"s"}, vals: overlayValues{"s": {"a"}},
			shared: []uint32{1, 2}}, lancer.ErrCorrupt},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore("overlay")
			// Not smallFragments: its check at the end would report the
			// malformed overlay (TestOverlayCheck).
			if _, err := Write(context.Background(), store, idRows(t, mem, 0, 10), &WriteOptions{FileVersion: format.Version2_1, CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
				t.Fatal(err)
			}
			addOverlays(t, store, mem, format.Version2_1, []overlaySpec{tc.spec})
			d := openStore(t, store, 0, mem)
			s, err := d.Scan(nil)
			if err != nil {
				t.Fatal(err)
			}
			var got error
			for rec, err := range s.Batches(context.Background()) {
				if err != nil {
					got = err
					break
				}
				_ = rec
			}
			if !errors.Is(got, tc.want) {
				t.Fatalf("scan: %v, want %v", got, tc.want)
			}
			if tc.want == lancer.ErrUnsupported && !strings.Contains(got.Error(), "data_overlays") {
				t.Errorf("error %q does not name the flag", got)
			}
		})
	}
}

// TestOverlayFlagRequired: a manifest whose fragments carry overlays
// without flag 64, or an overlay whose coverage reaches past the
// fragment, is corrupt; Open says so.
func TestOverlayFlagRequired(t *testing.T) {
	cases := []struct {
		name string
		edit func(m *manifest.Manifest)
	}{
		{"no flag", func(m *manifest.Manifest) {
			m.ReaderFeatureFlags &^= manifest.FlagDataOverlays
			m.WriterFeatureFlags &^= manifest.FlagDataOverlays
		}},
		{"offset past the fragment", func(m *manifest.Manifest) {
			o := &m.Fragments[0].Overlays[0]
			o.SharedOffsetBitmap, _ = roaring.BitmapOf(10).ToBytes()
		}},
		{"committed after the version", func(m *manifest.Manifest) { m.Fragments[0].Overlays[0].CommittedVersion = m.Version + 1 }},
		{"bitmap count", func(m *manifest.Manifest) {
			o := &m.Fragments[0].Overlays[0]
			o.FieldOffsetBitmaps = [][]byte{o.SharedOffsetBitmap, o.SharedOffsetBitmap}
			o.SharedOffsetBitmap = nil
		}},
		{"bad bitmap bytes", func(m *manifest.Manifest) { m.Fragments[0].Overlays[0].SharedOffsetBitmap = []byte{1, 2, 3} }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore("overlay")
			// Not smallFragments: its check at the end would find the
			// corruption this test makes.
			if _, err := Write(context.Background(), store, idRows(t, mem, 0, 10), &WriteOptions{FileVersion: format.Version2_1, CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
				t.Fatal(err)
			}
			addOverlays(t, store, mem, format.Version2_1, []overlaySpec{{fields: []string{"s"}, vals: overlayValues{"s": {"a"}}, shared: []uint32{1}}})
			editLatest(t, store, tc.edit)
			_, err := Open(context.Background(), store, &OpenOptions{Allocator: mem})
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("open: %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestOverlayWrites: lancer's writes on a dataset with overlays keep them
// consistent: append and delete carry them (and flag 64), an update reads
// the overlaid values it rewrites, cleanup keeps the overlay files, and
// compaction folds the overlays into its new fragments (values kept, flag
// cleared once none is left). The checker (D4, D10, D12) passes after each
// step.
func TestOverlayWrites(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%t", stable), func(t *testing.T) { testOverlayWrites(t, stable) })
	}
}

func testOverlayWrites(t *testing.T, stable bool) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("overlay")
	smallFragments(t, store, mem, format.Version2_1, stable, 2, 10)
	addOverlays(t, store, mem, format.Version2_1, []overlaySpec{{fields: []string{"s"}, vals: overlayValues{"s": {"X1", "X4"}}, shared: []uint32{1, 4}}})
	d := openStore(t, store, 0, mem)
	wantS := func(d *Dataset) map[string]string {
		out := map[string]string{}
		for _, r := range scanAll(t, d) {
			out[string(r.cols["id"])] = string(r.cols["s"])
		}
		return out
	}
	steps := []struct {
		name     string
		do       func(d *Dataset) (*Dataset, error)
		overlays bool
		rows     uint64
		want     map[string]string // s by id, for the ids named
	}{
		{"append", func(d *Dataset) (*Dataset, error) {
			r := idRows(t, mem, 20, 5)
			defer r.Release()
			return d.Append(ctx, r, nil)
		}, true, 25, map[string]string{"1": `"X1"`, "4": `"X4"`, "22": `"s22"`}},
		{"delete an overlaid row", func(d *Dataset) (*Dataset, error) { return d.Delete(ctx, "id = 4", nil) }, true, 24, map[string]string{"1": `"X1"`}},
		{"delete by an overlaid value", func(d *Dataset) (*Dataset, error) { return d.Delete(ctx, "s = 's1'", nil) }, true, 24, map[string]string{"1": `"X1"`}},
		{"update reads overlaid values", func(d *Dataset) (*Dataset, error) {
			d, _, err := d.Update(ctx, map[string]string{"s": "s || '!'"}, "s = 'X1' OR id = 2", nil)
			return d, err
		}, true, 24, map[string]string{"1": `"X1!"`, "2": `"s2!"`}},
		{"cleanup", func(d *Dataset) (*Dataset, error) {
			if _, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: -1, DeleteUnverified: true}); err != nil {
				return nil, err
			}
			return openStore(t, store, 0, mem), nil
		}, true, 24, map[string]string{"1": `"X1!"`, "5": `"s5"`}},
		{"add a column computed from an overlaid one", func(d *Dataset) (*Dataset, error) {
			return d.AddColumns(ctx, []NewColumn{{Name: "t", Expr: "s || '?'"}}, nil)
		}, true, 24, map[string]string{"1": `"X1!"`}},
		{"compact folds", func(d *Dataset) (*Dataset, error) {
			d, _, err := d.Compact(ctx, nil)
			return d, err
		}, false, 24, map[string]string{"1": `"X1!"`, "2": `"s2!"`, "5": `"s5"`, "22": `"s22"`}},
	}
	for _, s := range steps {
		var err error
		if d, err = s.do(d); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		has := d.manifest.HasOverlays()
		flagged := d.manifest.ReaderFeatureFlags&manifest.FlagDataOverlays != 0 && d.manifest.WriterFeatureFlags&manifest.FlagDataOverlays != 0
		if has != s.overlays || flagged != s.overlays {
			t.Fatalf("after %s: overlays %t, flags %s / %s; want overlays and flag %t", s.name, has, d.manifest.ReaderFeatureFlags, d.manifest.WriterFeatureFlags, s.overlays)
		}
		if n, err := d.CountRows(ctx); err != nil || n != s.rows {
			t.Fatalf("after %s: %d rows (%v), want %d", s.name, n, err, s.rows)
		}
		got := wantS(d)
		for id, v := range s.want {
			if got[id] != v {
				t.Errorf("after %s: s of id %s = %s, want %s", s.name, id, got[id], v)
			}
		}
		if d.manifest.Schema.Field("t") != nil {
			for _, r := range scanAll(t, d) {
				if id := string(r.cols["id"]); id == "1" && string(r.cols["t"]) != `"X1!?"` {
					t.Errorf("after %s: t of id 1 = %s, want the overlaid s with '?'", s.name, r.cols["t"])
				}
			}
		}
		if _, ok := got["4"]; ok && s.rows < 25 {
			t.Errorf("after %s: deleted row 4 is back", s.name)
		}
		rep, err := Check(ctx, store, &CheckOptions{Deep: true})
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("after %s: check: %+v", s.name, rep.Violations)
		}
	}
}

// TestOverlayIndexExclusion: a scalar index built before an overlay does
// not answer for the overlaid fragment (the spec's exclusion set): the
// new value is found and the old one is not, and compaction leaves the
// fragment alone, naming the index, until the index is rebuilt.
func TestOverlayIndexExclusion(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%t", stable), func(t *testing.T) { testOverlayIndexExclusion(t, stable) })
	}
}

func testOverlayIndexExclusion(t *testing.T, stable bool) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("overlay")
	d := smallFragments(t, store, mem, format.Version2_1, stable, 2, 10)
	if _, err := d.CreateIndex(ctx, "s", &CreateIndexOptions{Type: IndexBTree, CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
		t.Fatal(err)
	}
	// Committed at the index's version + 1: an overlay the index has not
	// seen. Recording it in the latest manifest keeps committed_version
	// within the manifest's version.
	d = openStore(t, store, 0, mem)
	r := idRows(t, mem, 20, 1)
	if d, err := d.Append(ctx, r, nil); err != nil {
		t.Fatal(err)
	} else {
		_ = d
	}
	r.Release()
	ix := openStore(t, store, 0, mem).manifest.IndexSegments()[0]
	addOverlays(t, store, mem, format.Version2_1, []overlaySpec{{fields: []string{"s"}, vals: overlayValues{"s": {"X1"}}, shared: []uint32{1}, version: ix.DatasetVersion + 1}})
	d = openStore(t, store, 0, mem)
	if frags := d.Indices()[0].Fragments; slices.Contains(frags, 0) || !slices.Contains(frags, 1) {
		t.Errorf("index covers fragments %v: want 1 and not the overlaid 0", frags)
	}
	for pred, want := range map[string]uint64{"s = 'X1'": 1, "s = 's1'": 0, "s = 's12'": 1, "s >= 's'": 17} {
		if n, err := d.Count(ctx, pred); err != nil || n != want {
			t.Errorf("count %q = %d (%v), want %d", pred, n, err, want)
		}
	}
	_, stats, err := d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stats.IndexMessage, "s_idx") || !strings.Contains(stats.IndexMessage, "overlays") {
		t.Errorf("compaction message %q does not name the index the overlays are newer than", stats.IndexMessage)
	}
	d = openStore(t, store, 0, mem)
	if !d.manifest.HasOverlays() || d.manifest.Fragments[0].ID != 0 {
		t.Errorf("compaction rewrote the fragment whose overlay the index has not seen")
	}
	if n, err := d.Count(ctx, "s = 'X1'"); err != nil || n != 1 {
		t.Errorf("after compaction: count = %d (%v), want 1", n, err)
	}
}

// TestOverlayCheck: the checker reports an overlay file that is missing
// (D4) or holds fewer values than it covers (D12), and an overlay the
// flags do not announce (D10) is refused at open (D1).
func TestOverlayCheck(t *testing.T) {
	cases := []struct {
		name string
		spec overlaySpec
		edit func(t *testing.T, store blob.Store, m *manifest.Manifest)
		want string
	}{
		{"missing file", overlaySpec{fields: []string{"s"}, vals: overlayValues{"s": {"a"}}, shared: []uint32{1}},
			func(t *testing.T, store blob.Store, m *manifest.Manifest) {
				if err := store.Delete(context.Background(), dataDir+m.Fragments[0].Overlays[0].File.Path); err != nil {
					t.Fatal(err)
				}
			}, "D4"},
		{"too few values", overlaySpec{fields: []string{"s"}, vals: overlayValues{"s": {"a"}}, shared: []uint32{1, 2}}, nil, "D12"},
		{"sparse too few values", overlaySpec{fields: []string{"id", "s"}, vals: overlayValues{"id": {1}, "s": {"a"}}, sparse: [][]uint32{{1}, {2, 3}}}, nil, "D12"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			mem := checkedAlloc(t)
			store := blob.NewMemStore("overlay")
			if _, err := Write(ctx, store, idRows(t, mem, 0, 10), &WriteOptions{FileVersion: format.Version2_1, CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
				t.Fatal(err)
			}
			addOverlays(t, store, mem, format.Version2_1, []overlaySpec{tc.spec})
			if tc.edit != nil {
				editLatest(t, store, func(m *manifest.Manifest) { tc.edit(t, store, m) })
			}
			rep, err := Check(ctx, store, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(rep.Violations, func(v Violation) bool { return v.Invariant == tc.want }) {
				t.Fatalf("violations %+v, want %s", rep.Violations, tc.want)
			}
		})
	}
}

// TestOverlayCloneAndMerge: a shallow clone reads its source's overlays
// through the base path (the overlay files stay in the source), and a
// diff, which tells changed cells by changed data files, refuses versions
// with overlays rather than miss their changes.
func TestOverlayCloneAndMerge(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	dir := t.TempDir()
	src, err := blob.NewLocalStore(dir + "/src.lance")
	if err != nil {
		t.Fatal(err)
	}
	smallFragments(t, src, mem, format.Version2_1, false, 1, 10)
	addOverlays(t, src, mem, format.Version2_1, []overlaySpec{{fields: []string{"s"}, vals: overlayValues{"s": {"X1"}}, shared: []uint32{1}}})
	d := openStore(t, src, 0, mem)
	dst, err := blob.NewLocalStore(dir + "/dst.lance")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Clone(ctx, d, dst, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := c.manifest.Fragments[0].Overlays; len(o) != 1 || o[0].File.BaseID == nil {
		t.Fatalf("clone's overlays %+v do not point at the source", o)
	}
	for _, ds := range []*Dataset{c, openStore(t, dst, 0, mem)} {
		if n, err := ds.Count(ctx, "s = 'X1'"); err != nil || n != 1 {
			t.Errorf("clone: count = %d (%v), want 1", n, err)
		}
	}
	rep, err := Check(ctx, dst, nil)
	if err != nil || !rep.OK() {
		t.Errorf("check of the clone: %+v %v", rep, err)
	}
	base := openStore(t, src, 1, mem)
	if _, err := Diff(ctx, base, d, nil); !errors.Is(err, lancer.ErrUnsupported) || !strings.Contains(err.Error(), "data_overlays") {
		t.Errorf("diff over overlays: %v, want ErrUnsupported naming data_overlays", err)
	}
}

// writeOverlayArrays writes an overlay data file of the named fields
// holding arrs (one per field, in rank order) and returns its DataFile.
func writeOverlayArrays(t *testing.T, store blob.Store, d *Dataset, mem memory.Allocator, names []string, arrs []arrow.Array) manifest.DataFile {
	t.Helper()
	ctx := context.Background()
	sch, err := d.manifest.Schema.Project(names)
	if err != nil {
		t.Fatal(err)
	}
	var fields []arrow.Field
	for _, name := range names {
		fields = append(fields, sch.Field(name).ArrowField())
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(arrs[0].Len()))
	defer rec.Release()
	w, err := format.NewWriter(ctx, store, dataDir+"overlay-"+newDataFileName(), sch, &format.WriterOptions{Version: d.manifest.DataFormat, Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, rec); err != nil {
		w.Abort(ctx)
		t.Fatal(err)
	}
	wf, err := w.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return dataFileOf(wf)
}

// TestOverlayVectorSearch: a vector overlaid after the index was built is
// searched on its new value, with and without the index: the row is found
// at distance 0 from its new vector, and not at distance 0 from its old one.
func TestOverlayVectorSearch(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 400
	rng := rand.New(rand.NewPCG(7, 7))
	vecs := clustered(rng, n, dim)
	for _, indexed := range []bool{false, true} {
		t.Run(fmt.Sprintf("indexed=%t", indexed), func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore("overlay")
			d := newVecDataset(t, store, vecs, dim, n, 200, false)
			if indexed {
				var err error
				if d, err = d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: IndexIVFFlat, Partitions: 4}); err != nil {
					t.Fatal(err)
				}
				r := vecReader(mem, vecs, dim, 0, 1)
				d, err = d.Append(ctx, r, nil) // a version after the index's
				r.Release()
				if err != nil {
					t.Fatal(err)
				}
			}
			d = openStore(t, store, 0, mem)
			q := make([]float32, dim)
			for i := range q {
				q[i] = 100 + float32(i)
			}
			vb := array.NewFixedSizeListBuilder(mem, dim, arrow.PrimitiveTypes.Float32)
			vb.Append(true)
			vb.ValueBuilder().(*array.Float32Builder).AppendValues(q, nil)
			arr := vb.NewArray()
			vb.Release()
			file := writeOverlayArrays(t, store, d, mem, []string{"vec"}, []arrow.Array{arr})
			arr.Release()
			o, err := manifest.NewDenseOverlay(file, roaring.BitmapOf(5), d.Version())
			if err != nil {
				t.Fatal(err)
			}
			editLatest(t, store, func(m *manifest.Manifest) {
				m.Fragments[0].Overlays = append(m.Fragments[0].Overlays, o)
				m.ReaderFeatureFlags |= manifest.FlagDataOverlays
				m.WriterFeatureFlags |= manifest.FlagDataOverlays
			})
			d = openStore(t, store, 0, mem)
			ids, dists := searchIDs(t, d, q, &SearchOptions{K: 1})
			if !slices.Equal(ids, []uint64{5}) || dists[0] != 0 {
				t.Errorf("search for the new vector: ids %v distances %v, want row 5 at 0", ids, dists)
			}
			ids, dists = searchIDs(t, d, vecs[5*dim:6*dim], &SearchOptions{K: 3})
			for i, id := range ids {
				if id == 5 {
					t.Errorf("search for the old vector finds row 5 at %v", dists[i])
				}
			}
		})
	}
}

// structArray returns a struct{a int64, b utf8} array of the given values.
func structArray(t *testing.T, mem memory.Allocator, as []int64, bs []string) arrow.Array {
	t.Helper()
	st := arrow.StructOf(arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true})
	b := array.NewStructBuilder(mem, st)
	defer b.Release()
	for i := range as {
		b.Append(true)
		b.FieldBuilder(0).(*array.Int64Builder).Append(as[i])
		b.FieldBuilder(1).(*array.StringBuilder).Append(bs[i])
	}
	return b.NewArray()
}

// TestOverlayStruct: an overlay of a struct column that holds the whole
// struct replaces it; one that lists only some of its members is refused
// with lancer.ErrUnsupported naming the flag (lancer resolves top-level
// fields whole).
func TestOverlayStruct(t *testing.T) {
	for _, v := range []format.Version{format.Version2_0, format.Version2_1} {
		t.Run(v.String(), func(t *testing.T) {
			ctx := context.Background()
			mem := checkedAlloc(t)
			store := blob.NewMemStore("overlay")
			ib := array.NewInt64Builder(mem)
			var as []int64
			var bs []string
			for i := range 6 {
				ib.Append(int64(i))
				as = append(as, int64(10*i))
				bs = append(bs, fmt.Sprintf("b%d", i))
			}
			ids := ib.NewArray()
			ib.Release()
			meta := structArray(t, mem, as, bs)
			r := recordReader(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "meta", Type: meta.DataType(), Nullable: true}}, ids, meta)
			d, err := Write(ctx, store, r, &WriteOptions{FileVersion: v, CommitOptions: CommitOptions{Allocator: mem}})
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			d = openStore(t, store, 0, mem)
			val := structArray(t, mem, []int64{-1}, []string{"new"})
			file := writeOverlayArrays(t, store, d, mem, []string{"meta"}, []arrow.Array{val})
			val.Release()
			whole, err := manifest.NewDenseOverlay(file, roaring.BitmapOf(2), d.Version())
			if err != nil {
				t.Fatal(err)
			}
			editLatest(t, store, func(m *manifest.Manifest) {
				m.Fragments[0].Overlays = []manifest.Overlay{whole}
				m.ReaderFeatureFlags |= manifest.FlagDataOverlays
				m.WriterFeatureFlags |= manifest.FlagDataOverlays
			})
			d = openStore(t, store, 0, mem)
			rows := scanAll(t, d)
			if got := string(rows[2].cols["meta"]); got != `{"a":-1,"b":"new"}` {
				t.Errorf("overlaid struct = %s", got)
			}
			if got := string(rows[3].cols["meta"]); got != `{"a":30,"b":"b3"}` {
				t.Errorf("struct not covered = %s", got)
			}
			if n, err := d.Count(ctx, "meta.a = -1"); err != nil || n != 1 {
				t.Errorf("count meta.a = -1: %d (%v)", n, err)
			}
			// The same file listed as holding only member b.
			part := whole
			part.File = whole.File
			b := d.manifest.Schema.Field("meta").Children[1].ID
			k := slices.Index(whole.File.Fields, b)
			part.File.Fields, part.File.ColumnIndices = []int32{b}, []int32{whole.File.ColumnIndices[k]}
			editLatest(t, store, func(m *manifest.Manifest) { m.Fragments[0].Overlays = []manifest.Overlay{part} })
			d = openStore(t, store, 0, mem)
			s, err := d.Scan(nil)
			if err != nil {
				t.Fatal(err)
			}
			var got error
			for _, err := range s.Batches(ctx) {
				if err != nil {
					got = err
					break
				}
			}
			if !errors.Is(got, lancer.ErrUnsupported) || !strings.Contains(got.Error(), "data_overlays") {
				t.Fatalf("member-only overlay: %v, want ErrUnsupported naming data_overlays", got)
			}
		})
	}
}

// BenchmarkOverlayScan scans 100,000 rows (10 fragments) of idRows with
// no overlay, and with a dense overlay of column s covering 1% of each
// fragment's rows: the cost of resolving overlays in a scan.
func BenchmarkOverlayScan(b *testing.B) {
	t := &testing.T{}
	for _, covered := range []int{0, 100} {
		b.Run(fmt.Sprintf("covered=%d/fragment", covered), func(b *testing.B) {
			ctx := context.Background()
			mem := memory.NewGoAllocator()
			store := blob.NewMemStore("bench")
			d, err := Write(ctx, store, idRows(t, mem, 0, 10000), &WriteOptions{FileVersion: format.Version2_1})
			if err != nil {
				b.Fatal(err)
			}
			for i := 1; i < 10; i++ {
				if d, err = d.Append(ctx, idRows(t, mem, i*10000, 10000), nil); err != nil {
					b.Fatal(err)
				}
			}
			if covered > 0 {
				var ovs []manifest.Overlay
				for range 10 {
					sb := array.NewStringBuilder(mem)
					offs := make([]uint32, covered)
					for k := range offs {
						offs[k] = uint32(k * 10000 / covered)
						sb.Append(fmt.Sprintf("o%d", k))
					}
					arr := sb.NewArray()
					sb.Release()
					file := writeOverlayArrays(t, store, d, mem, []string{"s"}, []arrow.Array{arr})
					arr.Release()
					o, err := manifest.NewDenseOverlay(file, roaring.BitmapOf(offs...), d.Version())
					if err != nil {
						b.Fatal(err)
					}
					ovs = append(ovs, o)
				}
				editLatest(t, store, func(m *manifest.Manifest) {
					for i, f := range m.Fragments {
						f.Overlays = []manifest.Overlay{ovs[i]}
					}
					m.ReaderFeatureFlags |= manifest.FlagDataOverlays
					m.WriterFeatureFlags |= manifest.FlagDataOverlays
				})
			}
			if t.Failed() {
				b.Fatal("setup failed")
			}
			d, err = Open(ctx, store, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				s, err := d.Scan(nil)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rec, err := range s.Batches(ctx) {
					if err != nil {
						b.Fatal(err)
					}
					n += int(rec.NumRows())
				}
				if n != 100000 {
					b.Fatalf("%d rows", n)
				}
			}
		})
	}
}
