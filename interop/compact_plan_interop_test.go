package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// idBatches returns n rows of one int64 column "id", from first on, in
// batches of 64Ki rows.
func idBatches(t *testing.T, mem memory.Allocator, first int64, n int) array.RecordReader {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	var recs []arrow.RecordBatch
	for at := 0; at < n; at += 1 << 16 {
		b := array.NewInt64Builder(mem)
		for i := at; i < min(n, at+1<<16); i++ {
			b.Append(first + int64(i))
		}
		col := b.NewArray()
		b.Release()
		recs = append(recs, array.NewRecordBatch(schema, []arrow.Array{col}, int64(col.Len())))
		col.Release()
	}
	r, err := array.NewRecordReader(schema, recs)
	for _, rec := range recs {
		rec.Release()
	}
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rewriteGroups returns the old fragment ids of each group of the Rewrite
// transaction committed after version since (Lance's optimize may commit a
// ReserveFragments before it and an index update after it).
func rewriteGroups(t *testing.T, dir string, since uint64) [][]uint64 {
	t.Helper()
	ctx := context.Background()
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := dataset.ListVersions(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]uint64
	found := false
	for _, v := range versions {
		if v <= since {
			continue
		}
		d, err := dataset.Open(ctx, store, &dataset.OpenOptions{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		body, err := store.ReadAll(ctx, "_transactions/"+d.Manifest().TransactionFile)
		if err != nil {
			t.Fatal(err)
		}
		txn, err := manifest.DecodeTransaction(body)
		if err != nil {
			t.Fatal(err)
		}
		rw, ok := txn.Operation.(*manifest.Rewrite)
		if !ok {
			continue
		}
		if found {
			t.Fatalf("%s: two Rewrite transactions after version %d", dir, since)
		}
		found = true
		for _, g := range rw.Groups {
			var ids []uint64
			for _, f := range g.OldFragments {
				ids = append(ids, f.ID)
			}
			slices.Sort(ids)
			out = append(out, ids)
		}
	}
	if !found {
		t.Fatalf("%s: no Rewrite transaction after version %d", dir, since)
	}
	slices.SortFunc(out, func(a, b []uint64) int { return int(a[0]) - int(b[0]) })
	return out
}

// TestCompactPlanMatchesLance: on one table, Lance's compaction (its
// optimize, with Lance's default CompactionOptions) and lancer's (Compact
// with the defaults) rewrite the same fragments in the same groups, and
// Lance reads lancer's result. The table exercises every rule of Lance's
// plan_compaction (see dataset.planRuns): fragments at or above the 1Mi-row
// target left alone, unless more than 10% of their rows are deleted; runs of
// small fragments merged; a lone small fragment left alone unless more than
// 10% of it is deleted; runs split where the index coverage changes.
func TestCompactPlanMatchesLance(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	co := dataset.CommitOptions{Allocator: mem}
	const big, small = 1_100_000, 10 // big > Lance's 1Mi target
	// Fragment k holds ids from k×10⁷.
	sizes := []int{big, small, small, small, big, small, big, big, small}
	lanceDir := filepath.Join(t.TempDir(), "lance.lance")
	store, err := blob.NewLocalStore(lanceDir)
	if err != nil {
		t.Fatal(err)
	}
	var d *dataset.Dataset
	for k, n := range sizes {
		r := idBatches(t, mem, int64(k)*10_000_000, n)
		if k == 0 {
			d, err = dataset.Write(ctx, store, r, &dataset.WriteOptions{MaxRowsPerFile: 2 * big, CommitOptions: co})
		} else {
			d, err = d.Append(ctx, r, &dataset.AppendOptions{MaxRowsPerFile: 2 * big, CommitOptions: co})
		}
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Fragment 4: 5% deleted (under the threshold, and big: left alone);
	// 5: 20% (a lone small fragment, between big ones, rewritten for its
	// deletions); 7: 15% (big, rewritten for its deletions, with its small
	// neighbour 8).
	if d, err = d.Delete(ctx, "(id >= 40000000 and id < 40055000) or (id >= 50000000 and id < 50000002) or (id >= 70000000 and id < 70165000)", &co); err != nil {
		t.Fatal(err)
	}
	// An index over fragments 0-8; 9 and 10, appended after, are not in
	// it, so 8 and 9 are in different runs.
	if d, err = d.CreateIndex(ctx, "id", &dataset.CreateIndexOptions{Type: dataset.IndexBTree, CommitOptions: co}); err != nil {
		t.Fatal(err)
	}
	for k := 9; k < 11; k++ {
		r := idBatches(t, mem, int64(k)*10_000_000, small)
		d, err = d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: co})
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(d.Manifest().Fragments); n != 11 {
		t.Fatalf("%d fragments, want 11", n)
	}
	start := d.Version()
	lancerDir := filepath.Join(t.TempDir(), "lancer.lance")
	if err := os.CopyFS(lancerDir, os.DirFS(lanceDir)); err != nil {
		t.Fatal(err)
	}

	opt := lanceOptimize(t, node, ref, lanceDir)
	lanceGroups := rewriteGroups(t, lanceDir, start)

	lstore, err := blob.NewLocalStore(lancerDir)
	if err != nil {
		t.Fatal(err)
	}
	ld, err := dataset.Open(ctx, lstore, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	ld, stats, err := ld.Compact(ctx, &dataset.CompactOptions{CommitOptions: co})
	if err != nil {
		t.Fatal(err)
	}
	lancerGroups := rewriteGroups(t, lancerDir, start)

	const want = "[[1 2 3] [5] [7 8] [9 10]]"
	if fmt.Sprint(lanceGroups) != want {
		t.Errorf("Lance's compaction rewrote %v, want %s (optimize: %+v)", lanceGroups, want, opt.Optimize.Compaction)
	}
	if fmt.Sprint(lancerGroups) != fmt.Sprint(lanceGroups) {
		t.Errorf("lancer's compaction rewrote %v, Lance's %v", lancerGroups, lanceGroups)
	}
	if stats.FragmentsRemoved != opt.Optimize.Compaction.FragmentsRemoved || stats.FragmentsAdded != opt.Optimize.Compaction.FragmentsAdded {
		t.Errorf("lancer's compaction: %+v; Lance's: %+v", stats, opt.Optimize.Compaction)
	}

	// Lance reads lancer's result: the same row count, and the rows of a
	// filter across rewritten and kept fragments.
	live, err := ld.CountRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := uint64(4*big + 7*small - 55_000 - 2 - 165_000); live != want {
		t.Errorf("lancer counts %d rows after compacting, want %d", live, want)
	}
	const filter = "id % 10000000 < 3 or id % 100003 = 0"
	sc, err := ld.Scan(&dataset.ScanOptions{Columns: []string{"id"}, Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	var ours []int64
	for b, err := range sc.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		ours = append(ours, b.Column(0).(*array.Int64).Int64Values()...)
	}
	if count := lanceOps(t, node, ref, opRequest{URI: lancerDir, Op: "countRows"})[0].Count; count != live {
		t.Errorf("Lance counts %d rows in lancer's compacted table, lancer %d", count, live)
	}
	replies, err := lancereftest.Ask[opRequest, reply](script(node, ref), "lance-ops.mjs", []opRequest{{URI: lancerDir, Op: "query", Filter: filter}})
	if err != nil {
		t.Fatal(err)
	}
	if replies[0].Error != "" {
		t.Fatalf("Lance's query: %s", replies[0].Error)
	}
	var theirs []int64
	for _, r := range replies[0].Rows {
		var row struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(r, &row); err != nil {
			t.Fatal(err)
		}
		theirs = append(theirs, row.ID)
	}
	slices.Sort(ours)
	slices.Sort(theirs)
	if len(ours) < 30 || !slices.Equal(ours, theirs) {
		t.Errorf("filter %q: lancer reads %d rows, Lance %d (or too few to tell)", filter, len(ours), len(theirs))
	}
	t.Logf("both rewrote %v; %d rows, %d matched the filter", lanceGroups, live, len(ours))
}
