package interop_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// TestReleasesLegacyDictionaryColumns: tables with an Arrow dictionary
// column (dictionary<int32, utf8>, as users got them by handing LanceDB an
// Arrow table with one) written by every release of the matrix that takes
// Arrow tables. In the legacy format such a column is keys in each data
// file and its values in the manifest file, which Lance decodes every
// file's keys with. lancer reads every version as Lance 12 and the release
// do; it appends (a dictionary array whose values come in another order,
// so its keys must be mapped onto the dataset's), deletes, updates and
// compacts on it; Lance 12 and the release read the result as lancer does,
// and the release appends to it and reads its rows back.
func TestReleasesLegacyDictionaryColumns(t *testing.T) {
	node, ref := lanceRef(t)
	releases, list := installedReleases(t)
	ctx := context.Background()
	tmp := t.TempDir()
	var legacy []string
	for _, r := range list {
		t.Run(r.Name, func(t *testing.T) {
			dir := filepath.Join(tmp, r.Name)
			var h releaseHistory
			runHistoryScript(t, node, releases, r, "write a dictionary table", &h, dir, "dict")
			if len(h.Steps) == 0 {
				// Noted, not hidden: the oldest releases take rows as
				// plain objects only, so they never wrote such a column.
				t.Logf("%s cannot write an Arrow dictionary column: %v", h.Release, h.Skipped)
				return
			}
			if len(h.Skipped) > 0 {
				t.Errorf("%s skipped %v", h.Release, h.Skipped)
			}
			root, err := openDirAt(ctx, h.URI, branch.Ref{}, nil)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			isLegacy := root.Manifest().DataFormat.IsLegacy()
			if isLegacy {
				legacy = append(legacy, r.Name)
				if len(root.Manifest().Dictionaries()) != 1 {
					t.Fatalf("a legacy table with one dictionary column: the manifest holds %d dictionaries", len(root.Manifest().Dictionaries()))
				}
			}
			versions, err := root.Versions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var reqs []request
			for _, v := range versions {
				reqs = append(reqs, request{URI: h.URI, Version: v.Version})
			}
			replies := lanceRows(t, node, ref, reqs)
			// lance12 holds the versions Lance 12 read as lancer did.
			lance12 := map[uint64]bool{}
			for i, req := range reqs {
				name := fmt.Sprintf("%s d@%d", r.Name, req.Version)
				got := lancerReadsCats(t, ctx, h.URI, req.Version)
				if replies[i].Error != "" {
					t.Errorf("%s: Lance 12 cannot read it: %s", name, replies[i].Error)
					continue
				}
				if fixturetest.CompareRows(t, name+" (lancer vs Lance 12)", got.rows, replies[i].Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}}) {
					lance12[req.Version] = true
				}
			}
			// As in TestReleasesWriteLancerReads: where the release reads
			// otherwise than lancer and Lance 12 agree, the release is
			// wrong (early 2.0 releases miscount their own deletions).
			releaseDiffers := func(version uint64, format string, args ...any) {
				t.Helper()
				if lance12[version] {
					t.Logf("%s (a bug of %s: Lance 12 reads it as lancer does)", fmt.Sprintf(format, args...), r.Package)
					return
				}
				t.Errorf(format, args...)
			}
			for _, rd := range h.Reads {
				v := rd.Version
				if v == 0 {
					v = versions[len(versions)-1].Version
				}
				got := lancerReadsCats(t, ctx, h.URI, v)
				if ids := sortedIDs(got.ids); !slices.Equal(ids, rd.IDs) {
					releaseDiffers(v, "%s d@%d: lancer reads %d rows, the release %d", r.Name, v, len(ids), rd.Count)
				} else if msg := textsDiffer(got.texts, rd.Texts); msg != "" {
					releaseDiffers(v, "%s d@%d: %s", r.Name, v, msg)
				}
			}

			// lancer writes on it.
			before := root.Manifest().Dictionaries()
			d := root
			rec := catRows(t, d.Schema().Arrow(), 1000, []string{"yellow", "red", "yellow", "blue", "green", "red"})
			rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
			rec.Release()
			if err != nil {
				t.Fatal(err)
			}
			d, err = d.Append(ctx, rr, nil)
			rr.Release()
			if err != nil {
				t.Fatalf("lancer append: %v", err)
			}
			if d, err = d.Delete(ctx, "id = 20", nil); err != nil {
				t.Fatalf("lancer delete: %v", err)
			}
			if d, _, err = d.Update(ctx, map[string]string{"id": "3030"}, "id = 30", nil); err != nil {
				t.Fatalf("lancer update: %v", err)
			}
			if d, _, err = d.Compact(ctx, nil); err != nil {
				t.Fatalf("lancer compact: %v", err)
			}
			if isLegacy {
				after := d.Manifest().Dictionaries()
				for id, b := range before {
					if a := after[id]; a == nil || !slices.EqualFunc(a.Values, b.Values, func(x, y []byte) bool { return string(x) == string(y) }) {
						t.Errorf("field %d: lancer's writes changed the dictionary %q to %v", id, b.Values, a)
					}
				}
				if !d.Manifest().DataFormat.IsLegacy() {
					t.Errorf("lancer's writes made a legacy table %s", d.Manifest().DataFormat)
				}
			}
			latest := d.Version()
			want := lancerReadsCats(t, ctx, h.URI, latest)
			// Row 30 was blue (the fourth value of four, cycling from red).
			if want.texts["1003"] != "blue" || want.texts["1000"] != "yellow" || want.texts["3030"] != "blue" || want.texts["20"] != "" {
				t.Errorf("lancer reads its own writes wrong: row 1003 %q (want blue), 1000 %q (want yellow), 3030 %q (want blue), 20 %q (want deleted)",
					want.texts["1003"], want.texts["1000"], want.texts["3030"], want.texts["20"])
			}
			reply := lanceRows(t, node, ref, []request{{URI: h.URI, Version: latest}})[0]
			if reply.Error != "" {
				t.Fatalf("%s d@%d (lancer's writes): Lance 12 cannot read it: %s", r.Name, latest, reply.Error)
			}
			if fixturetest.CompareRows(t, fmt.Sprintf("%s d@%d lancer's writes (lancer vs Lance 12)", r.Name, latest), want.rows, reply.Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}}) {
				lance12[latest] = true
			}

			var rr2 struct{ Before, After releaseRead }
			runHistoryScript(t, node, releases, r, "read and append to lancer's writes", &rr2, dir, "dictreread")
			if ids := sortedIDs(want.ids); !slices.Equal(ids, rr2.Before.IDs) {
				releaseDiffers(latest, "%s d@%d: lancer reads %d rows, the release %d", r.Name, latest, len(ids), rr2.Before.Count)
			} else if msg := textsDiffer(want.texts, rr2.Before.Texts); msg != "" {
				releaseDiffers(latest, "%s d@%d lancer's writes (lancer vs %s): %s", r.Name, latest, r.Package, msg)
			}
			final := lancerReadsCats(t, ctx, h.URI, 0)
			for id, cat := range map[string]string{"5000": "red", "5001": "green", "5002": "blue", "5003": "yellow"} {
				if final.texts[id] != cat || rr2.After.Texts[id] != cat {
					t.Errorf("%s: row %s the release appended: lancer reads %q, the release %q, want %q", r.Name, id, final.texts[id], rr2.After.Texts[id], cat)
				}
			}
			if reply := lanceRows(t, node, ref, []request{{URI: h.URI}})[0]; reply.Error != "" {
				t.Errorf("%s: after the release's append Lance 12 cannot read it: %s", r.Name, reply.Error)
			} else {
				fixturetest.CompareRows(t, r.Name+" d after the release's append (lancer vs Lance 12)", final.rows, reply.Rows, fixturetest.CompareOptions{IgnoreKeys: []string{"_rowid"}})
			}
		})
	}
	// The releases whose default is the legacy format must all have been
	// tried: that is where the dictionary lives in the manifest.
	for _, want := range []string{"vectordb-0.4.20", "lancedb-0.4.20", "lancedb-0.10.0"} {
		if !slices.Contains(legacy, want) {
			t.Errorf("%s wrote no legacy dictionary table (legacy ones: %v)", want, legacy)
		}
	}
}

// catRows builds rows of the dictionary table's schema: ids from first,
// cat the given values as a dictionary array whose values are in order of
// first appearance (not the dataset's order), a constant vector.
func catRows(t *testing.T, schema *arrow.Schema, first int, cats []string) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, f := range schema.Fields() {
		for k, cat := range cats {
			switch fb := b.Field(i).(type) {
			case *array.Float64Builder:
				fb.Append(float64(first + k))
			case *array.BinaryDictionaryBuilder:
				if err := fb.AppendString(cat); err != nil {
					t.Fatal(err)
				}
			case *array.FixedSizeListBuilder:
				fb.Append(true)
				vb := fb.ValueBuilder().(*array.Float32Builder)
				for j := range f.Type.(*arrow.FixedSizeListType).Len() {
					vb.Append(float32(j) / 10)
				}
			default:
				t.Fatalf("catRows: column %s of type %s", f.Name, f.Type)
			}
		}
	}
	return b.NewRecordBatch()
}

// lancerReadsCats reads the dictionary table at version (0 = latest): its
// rows, ids and cat by id.
func lancerReadsCats(t *testing.T, ctx context.Context, uri string, version uint64) lancedRead {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ds, err := openDirAt(ctx, uri, branch.Ref{Version: version}, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatalf("%s@%d: open: %v", uri, version, err)
	}
	sc, err := ds.Scan(nil)
	if err != nil {
		t.Fatalf("%s@%d: scan: %v", uri, version, err)
	}
	out := lancedRead{texts: map[string]string{}}
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			t.Fatalf("%s@%d: scan: %v", uri, version, err)
		}
		out.rows = append(out.rows, fixturetest.EncodeRows(t, rec)...)
		ids := columnFloat64s(t, rec, "id")
		idx := rec.Schema().FieldIndices("cat")
		if len(idx) != 1 {
			t.Fatalf("%s@%d: no column cat in %s", uri, version, rec.Schema())
		}
		cat, ok := rec.Column(idx[0]).(*array.Dictionary)
		if !ok {
			t.Fatalf("%s@%d: cat is %s, not a dictionary", uri, version, rec.Column(idx[0]).DataType())
		}
		values := cat.Dictionary().(*array.String)
		for i, id := range ids {
			out.ids = append(out.ids, id)
			if cat.IsValid(i) {
				out.texts[strings.TrimSuffix(fmt.Sprint(id), ".0")] = values.Value(cat.GetValueIndex(i))
			}
		}
	}
	return out
}
