package dataset

import (
	"github.com/RoaringBitmap/roaring/v2"

	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
)

// idRows returns a reader of n rows {id: start.., s: "s<id>"}.
func idRows(t *testing.T, mem memory.Allocator, start, n int) array.RecordReader {
	t.Helper()
	ib := array.NewInt64Builder(mem)
	sb := array.NewStringBuilder(mem)
	for i := start; i < start+n; i++ {
		ib.Append(int64(i))
		if i%7 == 3 {
			sb.AppendNull()
		} else {
			sb.Append(fmt.Sprintf("s%d", i))
		}
	}
	r := recordReader(t, []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "s", Type: arrow.BinaryTypes.String, Nullable: true}},
		ib.NewArray(), sb.NewArray())
	ib.Release()
	sb.Release()
	return r
}

// smallFragments writes frags appends of rows rows each (one fragment
// each) and returns the latest version.
func smallFragments(t *testing.T, store blob.Store, mem memory.Allocator, v format.Version, stable bool, frags, rows int) *Dataset {
	t.Helper()
	ctx := context.Background()
	d, err := Write(ctx, store, idRows(t, mem, 0, rows), &WriteOptions{FileVersion: v, EnableStableRowIDs: stable, CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	checkWhenDone(t, store)
	for i := 1; i < frags; i++ {
		if d, err = d.Append(ctx, idRows(t, mem, i*rows, rows), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// contents returns the rows' columns in scan order, without row ids.
func contents(rows []row) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprint(string(r.cols["id"]), "/", string(r.cols["s"]))
	}
	return out
}

// byID returns the rows' contents by _rowid.
func byID(rows []row) map[uint64]string {
	out := map[uint64]string{}
	for _, r := range rows {
		out[r.id] = fmt.Sprint(string(r.cols["id"]), "/", string(r.cols["s"]))
	}
	return out
}

func TestCompact(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		v      format.Version
		stable bool
	}{{format.Version2_0, false}, {format.Version2_1, false}, {format.Version2_2, false}, {format.Version2_2, true}} {
		t.Run(fmt.Sprintf("%s/stable=%t", tc.v, tc.stable), func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore(t.Name())
			d := smallFragments(t, store, mem, tc.v, tc.stable, 10, 10)
			var err error
			// Deletions: fragment 2 loses most rows, fragment 5 one row.
			if d, err = d.Delete(ctx, "id >= 21 and id < 29 or id = 55", nil); err != nil {
				t.Fatal(err)
			}
			before := scanAll(t, d)
			d1, stats, err := d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 25, CommitOptions: CommitOptions{Allocator: mem}})
			if err != nil {
				t.Fatal(err)
			}
			if d1.Version() != d.Version()+1 {
				t.Fatalf("compaction committed version %d after %d", d1.Version(), d.Version())
			}
			// 10 fragments of 10 rows (91 live) in bins of >= 25 live rows:
			// 32, 29 and 30 rows, each written as files of at most 25
			// rows, as Lance does (max_rows_per_file = target).
			want := CompactStats{FragmentsRemoved: 10, FilesRemoved: 12}
			for _, f := range d1.Manifest().Fragments {
				want.FragmentsAdded++
				want.FilesAdded += len(f.Files)
				if f.DeletionFile != nil {
					t.Errorf("fragment %d has a deletion file after compaction", f.ID)
				}
			}
			if stats != want {
				t.Errorf("stats %+v, want %+v", stats, want)
			}
			if len(d1.Manifest().Fragments) != 6 {
				t.Errorf("%d fragments after compaction, want 6", len(d1.Manifest().Fragments))
			}
			after := scanAll(t, d1)
			if !slices.Equal(contents(after), contents(before)) {
				t.Errorf("rows changed:\n got %v\nwant %v", contents(after), contents(before))
			}
			if tc.stable {
				// Rows keep their ids, and ids still find them.
				if !equalMaps(byID(after), byID(before)) {
					t.Errorf("stable row ids changed")
				}
				rec, err := d1.TakeRowIDs(ctx, []uint64{0, 55 - 1, 99}, &TakeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if rec.NumRows() != 3 {
					t.Errorf("take by row id: %d rows", rec.NumRows())
				}
				rec.Release()
				checkVersionSequences(t, d1)
			}
			txn := rawTransaction(t, store, d1.Version())
			rw := opAs[*manifest.Rewrite](txn)
			if rw == nil || len(rw.Groups) == 0 || len(rw.OldFragments) != 0 {
				t.Fatalf("transaction %v is not a Rewrite with groups", txn)
			}
			if txn.ReadVersion != d.Version() {
				t.Errorf("read version %d, want %d", txn.ReadVersion, d.Version())
			}
			checkRewriteIDs(t, store, d1)
			// Older versions still read as before.
			old := openStore(t, store, d.Version(), mem)
			if !slices.Equal(contents(scanAll(t, old)), contents(before)) {
				t.Errorf("version %d changed", d.Version())
			}
			// Nothing left to do: no new version.
			d2, stats, err := d1.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 25, CommitOptions: CommitOptions{Allocator: mem}})
			if err != nil || d2 != d1 || stats != (CompactStats{}) {
				t.Errorf("second compaction: %v, %+v, same dataset %t", err, stats, d2 == d1)
			}
			// The compacted version takes appends and deletes.
			d3, err := d1.Append(ctx, idRows(t, mem, 1000, 5), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}})
			if err != nil {
				t.Fatal(err)
			}
			if d3, err = d3.Delete(ctx, "id = 0 or id = 1002", nil); err != nil {
				t.Fatal(err)
			}
			if n, _ := d3.CountRows(ctx); n != uint64(len(before)+5-2) {
				t.Errorf("%d rows after append and delete, want %d", n, len(before)+3)
			}
		})
	}
}

// checkRewriteIDs checks that the Rewrite transaction of d's version
// records the ids its new fragments have in the manifest, as Lance's does.
func checkRewriteIDs(t *testing.T, store blob.Store, d *Dataset) {
	t.Helper()
	inManifest := map[uint64]bool{}
	for _, f := range d.Manifest().Fragments {
		inManifest[f.ID] = true
	}
	n := 0
	for _, g := range opAs[*manifest.Rewrite](rawTransaction(t, store, d.Version())).Groups {
		for _, f := range g.NewFragments {
			n++
			if !inManifest[f.ID] {
				t.Errorf("the transaction records new fragment %d, which version %d lacks", f.ID, d.Version())
			}
		}
	}
	if n == 0 {
		t.Errorf("version %d: no new fragments recorded", d.Version())
	}
}

func equalMaps(a, b map[uint64]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// checkVersionSequences checks that every fragment's created and updated
// version sequences cover its rows, and that rows created at version 1
// still say so.
func checkVersionSequences(t *testing.T, d *Dataset) {
	t.Helper()
	for i, f := range d.Manifest().Fragments {
		raw := d.manifest.Fragments[i]
		cv, err := d.versionSequence(context.Background(), f.ID, raw.CreatedAtVersions, f.PhysicalRows, nil)
		if err != nil {
			t.Fatalf("fragment %d: %v", f.ID, err)
		}
		if _, err := d.versionSequence(context.Background(), f.ID, raw.LastUpdatedAtVersions, f.PhysicalRows, cv); err != nil {
			t.Fatalf("fragment %d: %v", f.ID, err)
		}
		if raw.CreatedAtVersions == nil {
			t.Errorf("fragment %d has no created-at versions", f.ID)
		}
	}
}

func TestCompactPlan(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore(t.Name())
	// Fragments of 30, 5, 5, 30 rows with target 20: the two small ones
	// in the middle are merged; the big ones stay.
	d, err := Write(ctx, store, idRows(t, mem, 0, 30), &WriteOptions{CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{5, 5, 30} {
		if d, err = d.Append(ctx, idRows(t, mem, 100*(i+1), n), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
			t.Fatal(err)
		}
	}
	tasks, err := d.planCompaction(ctx, (&CompactOptions{TargetRowsPerFragment: 20}).withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if got := taskIDs(tasks); fmt.Sprint(got) != "[[1 2]]" {
		t.Errorf("plan %v, want [[1 2]]", got)
	}
	// A lone small fragment is left alone; a big one with more than 10%
	// deleted is rewritten on its own, unless the threshold is 1.
	if d, err = d.Delete(ctx, "id < 4 or id = 101", nil); err != nil {
		t.Fatal(err)
	}
	tasks, err = d.planCompaction(ctx, (&CompactOptions{TargetRowsPerFragment: 20}).withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if got := taskIDs(tasks); fmt.Sprint(got) != "[[0 1 2]]" {
		t.Errorf("plan %v, want [[0 1 2]]", got)
	}
	tasks, err = d.planCompaction(ctx, (&CompactOptions{TargetRowsPerFragment: 20, MaterializeDeletionsThreshold: 1}).withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if got := taskIDs(tasks); fmt.Sprint(got) != "[[1 2]]" {
		t.Errorf("plan without materializing deletions %v, want [[1 2]]", got)
	}
	// Split for size: eight fragments of 10 rows, target 25 -> bins of
	// 30, 30 and the remaining 20 joined to the last.
	store2 := blob.NewMemStore(t.Name() + "2")
	d2 := smallFragments(t, store2, mem, format.Version2_2, false, 8, 10)
	tasks, err = d2.planCompaction(ctx, (&CompactOptions{TargetRowsPerFragment: 25}).withDefaults())
	if err != nil {
		t.Fatal(err)
	}
	if got := taskIDs(tasks); fmt.Sprint(got) != "[[0 1 2] [3 4 5 6 7]]" {
		t.Errorf("plan %v, want [[0 1 2] [3 4 5 6 7]]", got)
	}
	// SizeRatio through Compact: a 500-row fragment and five of 10 rows,
	// all below the target; Lance's plan rewrites all six, SizeRatio 1
	// only the five.
	store3 := blob.NewMemStore(t.Name() + "3")
	d3, err := Write(ctx, store3, idRows(t, mem, 0, 500), &WriteOptions{CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if d3, err = d3.Append(ctx, idRows(t, mem, 1000+10*i, 10), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
			t.Fatal(err)
		}
	}
	_, lance, err := d3.Compact(ctx, &CompactOptions{DryRun: true, CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil || lance.FragmentsRemoved != 6 {
		t.Errorf("Lance's plan: %+v, %v; want 6 fragments rewritten", lance, err)
	}
	out, st, err := d3.Compact(ctx, &CompactOptions{SizeRatio: 1, CommitOptions: CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	if fs := out.Manifest().Fragments; st.FragmentsRemoved != 5 || len(fs) != 2 || fs[0].ID != 0 || fs[1].PhysicalRows != 50 {
		t.Errorf("SizeRatio 1: %+v, %d fragments", st, len(fs))
	}
}

func taskIDs(tasks []compactTask) [][]uint64 {
	var out [][]uint64
	for _, t := range tasks {
		var ids []uint64
		for _, f := range t.frags {
			ids = append(ids, f.ID)
		}
		out = append(out, ids)
	}
	return out
}

func TestCompactConflicts(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	opts := &CompactOptions{TargetRowsPerFragment: 100, CommitOptions: CommitOptions{Allocator: mem}}

	t.Run("append", func(t *testing.T) {
		store := blob.NewMemStore(t.Name())
		d := smallFragments(t, store, mem, format.Version2_2, true, 4, 10)
		if _, err := d.Append(ctx, idRows(t, mem, 500, 3), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
			t.Fatal(err)
		}
		out, _, err := d.Compact(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := out.CountRows(ctx); n != 43 {
			t.Errorf("%d rows, want 43", n)
		}
		if ids := sortedIDs(rowIDs(scanAll(t, out))); len(slices.Compact(ids)) != 43 {
			t.Errorf("row ids not unique after compaction over an append")
		}
		// The append took the ids the compaction would have used.
		checkRewriteIDs(t, store, out)
	})
	t.Run("delete", func(t *testing.T) {
		store := blob.NewMemStore(t.Name())
		d := smallFragments(t, store, mem, format.Version2_2, false, 4, 10)
		if _, err := d.Delete(ctx, "id = 15", nil); err != nil {
			t.Fatal(err)
		}
		_, _, err := d.Compact(ctx, opts)
		var ce *ConflictError
		if !errors.As(err, &ce) || !ce.Retryable || !errors.Is(err, lancer.ErrConflict) {
			t.Fatalf("compaction over a delete of a rewritten fragment: %v", err)
		}
		// No file of the failed compaction is left.
		for info := range store.List(ctx, dataDir) {
			if !referencedFiles(t, store)[info.Key] {
				t.Errorf("%s left behind", info.Key)
			}
		}
		// Recomputed from the latest version it succeeds.
		latest := openStore(t, store, 0, mem)
		if _, _, err := latest.Compact(ctx, opts); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("overwrite", func(t *testing.T) {
		store := blob.NewMemStore(t.Name())
		d := smallFragments(t, store, mem, format.Version2_2, false, 4, 10)
		if _, err := Write(ctx, store, idRows(t, mem, 0, 3), &WriteOptions{Mode: WriteOverwrite, CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
			t.Fatal(err)
		}
		_, _, err := d.Compact(ctx, opts)
		var ce *ConflictError
		if !errors.As(err, &ce) || ce.Retryable {
			t.Fatalf("compaction over an overwrite: %v", err)
		}
	})
	t.Run("delete after compaction", func(t *testing.T) {
		// A delete read before the compaction is re-executed on the
		// compacted version.
		store := blob.NewMemStore(t.Name())
		d := smallFragments(t, store, mem, format.Version2_2, false, 4, 10)
		if _, _, err := d.Compact(ctx, opts); err != nil {
			t.Fatal(err)
		}
		out, err := d.Delete(ctx, "id < 5", nil)
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := out.CountRows(ctx); n != 35 {
			t.Errorf("%d rows, want 35", n)
		}
	})
}

// TestCompactIndexCoverage checks what happens to the fragment bitmap of an
// index over rewritten fragments: with stable row ids it moves to the new
// fragments; without, it keeps the old ids only, so the new fragments are
// unindexed.
func TestCompactIndexCoverage(t *testing.T) {
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprint("stable=", stable), func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore(t.Name())
			d := smallFragments(t, store, mem, format.Version2_2, stable, 4, 10)
			d = withFakeIndex(t, store, d, []uint32{0, 1})
			out, _, err := d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 100, CommitOptions: CommitOptions{Allocator: mem}})
			if err != nil {
				t.Fatal(err)
			}
			// Fragments 0 and 1 (indexed) and 2 and 3 (not) are separate
			// groups: an index covers all or none of a group.
			groups := opAs[*manifest.Rewrite](rawTransaction(t, store, out.Version())).Groups
			if len(groups) != 2 {
				t.Fatalf("%d rewrite groups, want 2", len(groups))
			}
			ix := out.Indices()
			if len(ix) != 1 {
				t.Fatalf("%d indices after compaction", len(ix))
			}
			var want []uint32
			if stable {
				want = []uint32{uint32(out.Manifest().Fragments[0].ID)}
			}
			if fmt.Sprint(ix[0].Fragments) != fmt.Sprint(want) {
				t.Errorf("index covers %v, want %v", ix[0].Fragments, want)
			}
		})
	}
}

// withFakeIndex commits a version of d whose manifest records an index
// segment on "id" covering frags (an empty index file: only coverage
// matters).
func withFakeIndex(t *testing.T, store blob.Store, d *Dataset, frags []uint32) *Dataset {
	t.Helper()
	bm, err := roaring.BitmapOf(frags...).ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	m := d.manifest.Clone()
	m.Version++
	ix := []*manifest.IndexMetadata{{
		UUID:           make([]byte, 16),
		Fields:         []int32{0},
		Name:           "id_idx",
		DatasetVersion: d.Version(),
		FragmentBitmap: bm,
	}}
	txn, err := manifest.EncodeTransaction(&manifest.Transaction{ReadVersion: d.Version(), UUID: "fake-index",
		Operation: &manifest.CreateIndex{NewIndices: ix}})
	if err != nil {
		t.Fatal(err)
	}
	m.TransactionFile = ""
	m.SetIndexSegments(ix)
	file, err := manifest.EncodeFile(m, txn)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Write(context.Background(), indicesDir+manifest.FormatUUID(ix[0].UUID)+"/"+fakeIndexFile, nil); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateIfAbsent(context.Background(), manifest.Key(manifest.ManifestNamingV2, m.Version), file); err != nil {
		t.Fatal(err)
	}
	return openStore(t, store, 0, d.opts.Allocator)
}

// fakeIndexFile is the one (empty) file of withFakeIndex's segment, there
// because a segment's directory holds its files (D4).
const fakeIndexFile = "fake.idx"

// TestPlanRuns: which fragments the plan picks for given sizes, deletions
// and index coverage. The expectations are Lance's plan_compaction
// (rust/lance/src/dataset/optimize.rs in lancedb/lance at d2039d7; the
// lines are cited per case), then lancer's SizeRatio.
func TestPlanRuns(t *testing.T) {
	f := func(physical, deleted uint64) compactCandidate {
		return compactCandidate{physical: physical, deleted: deleted}
	}
	ix := func(c compactCandidate, key string) compactCandidate { c.indices = key; return c }
	blocked := func(c compactCandidate) compactCandidate { c.blocked = true; return c }
	smalls := func(n int, rows uint64) []compactCandidate {
		var out []compactCandidate
		for range n {
			out = append(out, f(rows, 0))
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		frags []compactCandidate
		opts  CompactOptions // TargetRowsPerFragment 100 unless set
		want  string
	}{
		// Lines 510-517: a fragment of target rows or more is no
		// candidate (physical_rows < target), one row fewer is.
		{"big enough left alone", []compactCandidate{f(100, 0), f(200, 0)}, CompactOptions{}, "[]"},
		{"below the target merged", []compactCandidate{f(99, 0), f(99, 0)}, CompactOptions{}, "[[0 1]]"},
		// Lines 398-408 (is_noop): one CompactWithNeighbors fragment
		// alone is not rewritten.
		{"lone small", []compactCandidate{f(200, 0), f(5, 0), f(200, 0)}, CompactOptions{}, "[]"},
		{"lone empty", []compactCandidate{f(0, 0)}, CompactOptions{}, "[]"},
		// Lines 506-509: deletion_percentage > threshold makes a
		// fragment CompactItself, rewritten even alone; exactly the
		// threshold does not.
		{"lone small with deletions", []compactCandidate{f(200, 0), f(10, 2), f(200, 0)}, CompactOptions{}, "[[1]]"},
		{"big at the threshold", []compactCandidate{f(200, 20)}, CompactOptions{}, "[]"},
		{"big above the threshold", []compactCandidate{f(200, 21)}, CompactOptions{}, "[[0]]"},
		{"big with deletions joins its small neighbours", []compactCandidate{f(200, 30), f(5, 0), f(5, 0), f(300, 0), f(5, 0)}, CompactOptions{}, "[[0 1 2]]"},
		// CompactionOptions::validate (lines 178-183): a threshold of 1
		// or more is materialize_deletions = false.
		{"threshold 1 is off", []compactCandidate{f(200, 100), f(10, 9)}, CompactOptions{MaterializeDeletionsThreshold: 1}, "[]"},
		// A threshold of 0 in Lance (negative here, 0 being the default)
		// materializes any deletion.
		{"negative threshold", []compactCandidate{f(200, 1), f(300, 0)}, CompactOptions{MaterializeDeletionsThreshold: -1}, "[[0]]"},
		// Lines 262-268 and 506-509: the fraction and the threshold are
		// f32: 100,000,001 of 1e9 rows is above 0.1 in float64 but equal
		// to it in float32, so Lance leaves the fragment alone.
		{"deletions compared in float32", []compactCandidate{f(1_000_000_000, 100_000_001)}, CompactOptions{}, "[]"},
		{"deletions clearly above in float32", []compactCandidate{f(1_000_000_000, 100_000_100)}, CompactOptions{}, "[[0]]"},
		// Lines 533-553 (bin.indices == indices, line 536): a bin holds fragments covered by the same
		// indices only; a different set ends it.
		{"index coverage splits", []compactCandidate{ix(f(5, 0), "0,"), ix(f(5, 0), "0,"), f(5, 0), f(5, 0), ix(f(5, 0), "1,")}, CompactOptions{}, "[[0 1] [2 3]]"},
		// Lancer's own: fragments under an index it cannot remap.
		{"blocked", []compactCandidate{f(5, 0), blocked(f(5, 0)), f(5, 0)}, CompactOptions{}, "[]"},
		// Lines 410-442 (split_for_size): cut at the target's live rows
		// when the rest could fill another bin, else keep the rest.
		{"split for size", smalls(8, 30), CompactOptions{}, "[[0 1 2 3] [4 5 6 7]]"},
		{"split for size, short rest joins", smalls(7, 30), CompactOptions{}, "[[0 1 2 3 4 5 6]]"},
		{"split counts live rows", []compactCandidate{f(90, 45), f(90, 45), f(90, 0), f(50, 0), f(60, 0)}, CompactOptions{}, "[[0 1 2] [3 4]]"},
		// Lance's rules rewrite a table below the target whole.
		{"Lance rewrites the base", append([]compactCandidate{f(500, 0)}, smalls(3, 10)...), CompactOptions{TargetRowsPerFragment: 1000}, "[[0 1 2 3]]"},
		// SizeRatio: a fragment heavier than ratio × the rows after it
		// is left alone, and the run split around it.
		{"ratio leaves the base", append([]compactCandidate{f(500, 0)}, smalls(3, 10)...), CompactOptions{TargetRowsPerFragment: 1000, SizeRatio: 1}, "[[1 2 3]]"},
		{"ratio merges comparable sizes", []compactCandidate{f(500, 0), f(300, 0), f(300, 0)}, CompactOptions{TargetRowsPerFragment: 1000, SizeRatio: 1}, "[[0 1 2]]"},
		{"ratio splits around a big middle", []compactCandidate{f(10, 0), f(10, 0), f(500, 0), f(10, 0), f(10, 0)}, CompactOptions{TargetRowsPerFragment: 1000, SizeRatio: 1}, "[[0 1] [3 4]]"},
		{"ratio weighs the whole tail", []compactCandidate{f(500, 0), f(24, 0), f(21, 0), f(10, 0), f(10, 0), f(10, 0)}, CompactOptions{TargetRowsPerFragment: 1000, SizeRatio: 1}, "[[1 2 3 4 5]]"},
		{"ratio leaves every step", []compactCandidate{f(500, 0), f(24, 0), f(21, 0), f(10, 0)}, CompactOptions{TargetRowsPerFragment: 1000, SizeRatio: 1}, "[]"},
		{"ratio keeps deletions to materialize", []compactCandidate{f(500, 100), f(10, 0), f(10, 0)}, CompactOptions{TargetRowsPerFragment: 1000, SizeRatio: 1}, "[[0 1 2]]"},
		{"larger ratio merges the base", append([]compactCandidate{f(500, 0)}, smalls(3, 10)...), CompactOptions{TargetRowsPerFragment: 1000, SizeRatio: 20}, "[[0 1 2 3]]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			if o.TargetRowsPerFragment == 0 {
				o.TargetRowsPerFragment = 100
			}
			got := planRuns(tc.frags, o.withDefaults())
			if s := fmt.Sprint(got); s != tc.want && !(tc.want == "[]" && len(got) == 0) {
				t.Errorf("plan %s, want %s", s, tc.want)
			}
		})
	}
}
