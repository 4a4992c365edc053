package dataset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// lineage is one row's created-at and last-updated-at versions.
type lineage struct{ created, updated uint64 }

// scanLineage scans id and the lineage columns (filtered by predicate)
// and returns them by id, checking the columns' schema.
func scanLineage(t *testing.T, d *Dataset, predicate string, columns ...string) map[int64]lineage {
	t.Helper()
	if columns == nil {
		columns = []string{"id", RowCreatedAtVersionColumn, RowLastUpdatedAtVersionColumn}
	}
	s, err := d.Scan(&ScanOptions{Columns: columns, Filter: predicate, BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]lineage{}
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		sch := rec.Schema()
		col := func(name string) int {
			idx := sch.FieldIndices(name)
			if len(idx) != 1 {
				t.Fatalf("scan of %v: no column %q in %v", columns, name, sch)
			}
			if f := sch.Field(idx[0]); name != "id" && (f.Type.ID() != arrow.UINT64 || !f.Nullable) {
				t.Fatalf("column %s is %v, want nullable uint64 as in Lance", name, f)
			}
			return idx[0]
		}
		ids := rec.Column(col("id")).(*array.Int64)
		created := rec.Column(col(RowCreatedAtVersionColumn)).(*array.Uint64)
		updated := rec.Column(col(RowLastUpdatedAtVersionColumn)).(*array.Uint64)
		for i := range int(rec.NumRows()) {
			out[ids.Value(i)] = lineage{created.Value(i), updated.Value(i)}
		}
	}
	return out
}

// TestLineageColumns commits seeded random appends, updates,
// merge-inserts, deletes and compactions on a dataset with stable row ids
// and checks after each that _row_created_at_version and
// _row_last_updated_at_version hold what a model says Lance's rules give:
// new rows are created and last updated by the version that wrote them; an
// update or an upsert's update keeps the created version and sets the last
// updated one; a delete changes nothing else; a compaction keeps both. The
// columns are read in scans (with and without other columns, in Lance's
// order after _rowid), in filters, and in takes.
func TestLineageColumns(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runLineageModel(t, seed) })
	}
}

func runLineageModel(t *testing.T, seed uint64) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 19))
	store, err := blob.NewLocalStore(filepath.Join(t.TempDir(), "l.lance"))
	if err != nil {
		t.Fatal(err)
	}
	checkWhenDone(t, store)
	mem := checkedAlloc(t)
	vals := map[int64]string{}
	for id := range int64(12) {
		vals[id] = fmt.Sprint("v", id)
	}
	r := feedIDVal(t, vals)
	d, err := Write(ctx, store, r, &WriteOptions{EnableStableRowIDs: true, MaxRowsPerFile: 5, CommitOptions: CommitOptions{Allocator: mem}})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	model := map[int64]lineage{}
	for id := range vals {
		model[id] = lineage{1, 1}
	}
	next := int64(100)
	pick := func(n int) []int64 {
		ids := slices.Sorted(maps.Keys(model))
		rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		return ids[:min(n, len(ids))]
	}
	inList := func(ids []int64) string {
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprint(id))
		}
		return "id IN (" + strings.Join(parts, ", ") + ")"
	}
	kinds := map[string]int{}
	for step := range 24 {
		v := d.Version() + 1
		var kind string
		switch op := rng.IntN(10); {
		case op < 2:
			kind = "append"
			add := map[int64]string{}
			for range 1 + rng.IntN(4) {
				add[next] = "a"
				model[next] = lineage{v, v}
				next++
			}
			r := feedIDVal(t, add)
			d, err = d.Append(ctx, r, nil)
			r.Release()
		case op < 4:
			kind = "update"
			ids := pick(1 + rng.IntN(4))
			d, _, err = d.Update(ctx, map[string]string{"val": fmt.Sprintf("'u%d'", step)}, inList(ids), nil)
			for _, id := range ids {
				model[id] = lineage{model[id].created, v}
			}
		case op < 6:
			kind = "merge-insert"
			src := map[int64]string{}
			for _, id := range pick(1 + rng.IntN(3)) {
				src[id] = "m"
				model[id] = lineage{model[id].created, v}
			}
			for range rng.IntN(3) {
				src[next] = "m"
				model[next] = lineage{v, v}
				next++
			}
			r := feedIDVal(t, src)
			d, _, err = d.MergeInsert(ctx, r, &MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true})
			r.Release()
		case op < 8:
			kind = "delete"
			ids := pick(1 + rng.IntN(2))
			if len(ids) == 0 {
				continue
			}
			d, err = d.Delete(ctx, inList(ids), nil)
			for _, id := range ids {
				delete(model, id)
			}
		default:
			kind = "compact"
			var st CompactStats
			d, st, err = d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 40, MaterializeDeletionsThreshold: 0.01})
			if err == nil && st.FragmentsRemoved == 0 {
				kind = "compact (nothing)"
			}
		}
		if err != nil {
			t.Fatalf("step %d %s: %v", step, kind, err)
		}
		kinds[kind]++
		if got := scanLineage(t, d, ""); !maps.Equal(got, model) {
			t.Fatalf("step %d, after %s (version %d):\n got %v\nwant %v", step, kind, d.Version(), got, model)
		}
	}
	for _, k := range []string{"append", "update", "merge-insert", "delete", "compact"} {
		if kinds[k] == 0 {
			t.Errorf("seed %d: no %s step", seed, k)
		}
	}
	// Filters on the lineage columns, with the columns projected or not.
	v := d.Version()
	for _, pred := range []string{
		fmt.Sprintf("_row_last_updated_at_version > %d", v/2),
		fmt.Sprintf("_row_created_at_version <= %d AND _row_last_updated_at_version > %d", v/2, v/2),
		"_row_created_at_version = 1",
	} {
		want := map[int64]lineage{}
		for id, l := range model {
			half := v / 2
			switch {
			case strings.HasPrefix(pred, "_row_last") && l.updated > half,
				strings.Contains(pred, "AND") && l.created <= half && l.updated > half,
				strings.HasSuffix(pred, "= 1") && l.created == 1:
				want[id] = l
			}
		}
		if got := scanLineage(t, d, pred); !maps.Equal(got, want) {
			t.Errorf("filter %q:\n got %v\nwant %v", pred, got, want)
		}
		// The filter alone names the columns (every data column read).
		s, err := d.Scan(&ScanOptions{Filter: pred})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rec, err := range s.Batches(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			if rec.NumCols() != 2 {
				t.Fatalf("filter %q: scan of every column gives %v", pred, rec.Schema())
			}
			n += int(rec.NumRows())
		}
		if n != len(want) {
			t.Errorf("filter %q without the columns projected: %d rows, want %d", pred, n, len(want))
		}
		if c, err := d.Count(ctx, pred); err != nil || c != uint64(len(want)) {
			t.Errorf("Count(%q) = %d, %v; want %d", pred, c, err, len(want))
		}
	}
	// Lance's column order: _rowid, _rowaddr, last updated, created.
	s, err := d.Scan(&ScanOptions{Columns: []string{RowCreatedAtVersionColumn, "id", RowLastUpdatedAtVersionColumn}, WithRowID: true, WithRowAddress: true})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range s.Schema().Fields() {
		names = append(names, f.Name)
	}
	if want := []string{"id", RowIDColumn, RowAddressColumn, RowLastUpdatedAtVersionColumn, RowCreatedAtVersionColumn}; !slices.Equal(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	// Takes by row id.
	idsOf := scanRowIDs(t, d)
	var take []uint64
	for id := range model {
		take = append(take, idsOf[id])
	}
	rec, err := d.TakeRowIDs(ctx, take, &TakeOptions{Columns: []string{"id", RowLastUpdatedAtVersionColumn, RowCreatedAtVersionColumn}})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	for i := range int(rec.NumRows()) {
		id := rec.Column(0).(*array.Int64).Value(i)
		got := lineage{rec.Column(2).(*array.Uint64).Value(i), rec.Column(1).(*array.Uint64).Value(i)}
		if got != model[id] {
			t.Errorf("take of id %d: %v, want %v", id, got, model[id])
		}
	}
	// Deleting by lineage.
	d, err = d.Delete(ctx, fmt.Sprintf("_row_last_updated_at_version >= %d", v), nil)
	if err != nil {
		t.Fatal(err)
	}
	for id, l := range model {
		if l.updated >= v {
			delete(model, id)
		}
	}
	if got := scanLineage(t, d, ""); !maps.Equal(got, model) {
		t.Fatalf("after deleting by lineage:\n got %v\nwant %v", got, model)
	}
}

// scanRowIDs maps id to _rowid.
func scanRowIDs(t *testing.T, d *Dataset) map[int64]uint64 {
	t.Helper()
	s, err := d.Scan(&ScanOptions{Columns: []string{"id"}, WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]uint64{}
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			out[rec.Column(0).(*array.Int64).Value(i)] = rec.Column(1).(*array.Uint64).Value(i)
		}
	}
	return out
}

// TestLineageColumnsDefaults: without stable row ids Lance records no
// lineage, and the columns read as version 1 (Lance's default for a
// fragment without version metadata); an external sequence (Lance writes
// large ones to a file) is read from its file.
func TestLineageColumnsDefaults(t *testing.T) {
	ctx := context.Background()
	store := blob.NewMemStore(t.Name())
	vals := map[int64]string{0: "a", 1: "b", 2: "c"}
	r := feedIDVal(t, vals)
	d, err := Write(ctx, store, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	r = feedIDVal(t, map[int64]string{3: "d"})
	if d, err = d.Append(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if d, _, err = d.Update(ctx, map[string]string{"val": "'x'"}, "id = 1", nil); err != nil {
		t.Fatal(err)
	}
	want := map[int64]lineage{0: {1, 1}, 1: {1, 1}, 2: {1, 1}, 3: {1, 1}}
	if got := scanLineage(t, d, ""); !maps.Equal(got, want) {
		t.Fatalf("without stable row ids: got %v, want %v", got, want)
	}

	// An external created-at sequence: rows 0..2 of the first fragment
	// created at versions 4, 4, 7, stored at offset 3 of a file.
	seq, err := manifest.EncodeVersions(manifest.VersionRun{Start: 0, End: 2, Version: 4}, manifest.VersionRun{Start: 2, End: 3, Version: 7})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Write(ctx, "_lineage/v.bin", append([]byte{9, 9, 9}, seq...)); err != nil {
		t.Fatal(err)
	}
	m := *d.manifest
	m.Fragments = slices.Clone(m.Fragments)
	f := m.Fragments[0].Clone()
	f.CreatedAtVersions = &manifest.Sequence{External: &manifest.ExternalFile{Path: "_lineage/v.bin", Offset: 3, Size: uint64(len(seq))}}
	m.Fragments[0] = f
	dx := &Dataset{store: d.store, opts: d.opts, manifest: &m, manifestKey: d.manifestKey, bases: d.bases}
	got := scanLineage(t, dx, "")
	if got[0].created != 4 || got[2].created != 7 || got[3].created != 1 {
		t.Fatalf("external created-at sequence: got %v", got)
	}
	// A sequence shorter than the fragment is corrupt.
	f.CreatedAtVersions.External.Size = 2
	s, err := dx.Scan(&ScanOptions{Columns: []string{RowCreatedAtVersionColumn}})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range s.Batches(ctx) {
		if err != nil {
			if !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("a truncated external sequence: %v, want ErrCorrupt", err)
			}
			return
		}
	}
	t.Fatal("a truncated external sequence reads without error")
}
