package table_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/cache"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/table"
)

// rows returns rows {id, val, vec} for the ids: val is "v<id>", vec is
// (id, 1).
func rows(ids ...int64) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "val", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "vec", Type: arrow.FixedSizeListOf(2, arrow.PrimitiveTypes.Float32)},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	vb := b.Field(2).(*array.FixedSizeListBuilder)
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("v%d", id))
		vb.Append(true)
		vb.ValueBuilder().(*array.Float32Builder).AppendValues([]float32{float32(id), 1}, nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err)
	}
	return r
}

func span(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// create writes ids as a new local table and returns its URI and a handle.
func create(t *testing.T, ids ...int64) (string, *table.Table) {
	t.Helper()
	uri := filepath.Join(t.TempDir(), "t.lance")
	r := rows(ids...)
	defer r.Release()
	tb, err := table.Create(context.Background(), uri, r, nil, &dataset.WriteOptions{EnableStableRowIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tb.Close() })
	root, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanRootWhenDone(t, root) // before Close: cleanups run last first
	return uri, tb
}

// ids returns the sorted ids the handle's version holds.
func ids(t *testing.T, tb *table.Table) []int64 {
	t.Helper()
	sc, err := tb.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rec, err := range sc.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

// vals returns id → val of the handle's version.
func vals(t *testing.T, tb *table.Table) map[int64]string {
	t.Helper()
	sc, err := tb.Scan(&dataset.ScanOptions{Columns: []string{"id", "val"}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for rec, err := range sc.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			out[rec.Column(0).(*array.Int64).Value(i)] = rec.Column(1).(*array.String).Value(i)
		}
	}
	return out
}

// TestWrites runs every write of the handle and checks what it did and
// that the handle advanced to the version it committed (invariant 1).
func TestWrites(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		write func(tb *table.Table) error
		check func(t *testing.T, tb *table.Table)
	}{
		{"Append", func(tb *table.Table) error {
			r := rows(10, 11)
			defer r.Release()
			return tb.Append(ctx, r, nil)
		}, func(t *testing.T, tb *table.Table) {
			if got := ids(t, tb); !slices.Equal(got, span(0, 12)) {
				t.Errorf("ids %v", got)
			}
		}},
		{"Write append", func(tb *table.Table) error {
			r := rows(10)
			defer r.Release()
			return tb.Write(ctx, r, &dataset.WriteOptions{Mode: dataset.WriteAppend})
		}, func(t *testing.T, tb *table.Table) {
			if got := ids(t, tb); !slices.Equal(got, span(0, 11)) {
				t.Errorf("ids %v", got)
			}
		}},
		{"Overwrite", func(tb *table.Table) error {
			r := rows(100, 101)
			defer r.Release()
			return tb.Overwrite(ctx, r, nil)
		}, func(t *testing.T, tb *table.Table) {
			if got := ids(t, tb); !slices.Equal(got, []int64{100, 101}) {
				t.Errorf("ids %v", got)
			}
		}},
		{"Delete", func(tb *table.Table) error { return tb.Delete(ctx, "id < 3", nil) }, func(t *testing.T, tb *table.Table) {
			if got := ids(t, tb); !slices.Equal(got, span(3, 10)) {
				t.Errorf("ids %v", got)
			}
		}},
		{"DeleteRowIDs", func(tb *table.Table) error {
			hits, err := tb.SearchRowIDs(ctx, "vec", []float32{9, 1}, &dataset.SearchOptions{K: 1})
			if err != nil {
				return err
			}
			return tb.DeleteRowIDs(ctx, []uint64{hits[0].ID}, nil)
		}, func(t *testing.T, tb *table.Table) {
			if got := ids(t, tb); !slices.Equal(got, span(0, 9)) {
				t.Errorf("ids %v", got)
			}
		}},
		{"Update", func(tb *table.Table) error {
			stats, err := tb.Update(ctx, map[string]string{"val": "'new'"}, "id = 4", nil)
			if err == nil && stats.RowsUpdated != 1 {
				err = fmt.Errorf("stats %+v", stats)
			}
			return err
		}, func(t *testing.T, tb *table.Table) {
			if got := vals(t, tb)[4]; got != "new" {
				t.Errorf("val of 4 = %q", got)
			}
		}},
		{"MergeInsert", func(tb *table.Table) error {
			r := rows(9, 10)
			defer r.Release()
			stats, err := tb.MergeInsert(ctx, r, &dataset.MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true})
			if err == nil && (stats.RowsInserted != 1 || stats.RowsUpdated != 1) {
				err = fmt.Errorf("stats %+v", stats)
			}
			return err
		}, func(t *testing.T, tb *table.Table) {
			if got := ids(t, tb); !slices.Equal(got, span(0, 11)) {
				t.Errorf("ids %v", got)
			}
		}},
		{"AddColumns", func(tb *table.Table) error {
			return tb.AddColumns(ctx, []dataset.NewColumn{{Name: "twice", Expr: "id * 2"}}, nil)
		}, func(t *testing.T, tb *table.Table) {
			if tb.Schema().Field("twice") == nil {
				t.Error("no column twice")
			}
		}},
		{"AddColumnsFromData", func(tb *table.Table) error {
			r := rows(span(0, 10)...)
			defer r.Release()
			data, err := renamed(r, "id", "val2", "vec2")
			if err != nil {
				return err
			}
			defer data.Release()
			return tb.AddColumnsFromData(ctx, data, "id", nil)
		}, func(t *testing.T, tb *table.Table) {
			if tb.Schema().Field("val2") == nil {
				t.Error("no column val2")
			}
		}},
		{"DropColumns", func(tb *table.Table) error { return tb.DropColumns(ctx, []string{"val"}, nil) }, func(t *testing.T, tb *table.Table) {
			if tb.Schema().Field("val") != nil {
				t.Error("val is still there")
			}
		}},
		{"RenameColumn", func(tb *table.Table) error { return tb.RenameColumn(ctx, "val", "label", nil) }, func(t *testing.T, tb *table.Table) {
			if tb.Schema().Field("val") != nil || tb.Schema().Field("label") == nil {
				t.Error("val not renamed")
			}
		}},
		{"Compact", func(tb *table.Table) error {
			r := rows(10)
			defer r.Release()
			if err := tb.Append(ctx, r, nil); err != nil {
				return err
			}
			stats, err := tb.Compact(ctx, nil)
			if err == nil && stats.FragmentsRemoved != 2 {
				err = fmt.Errorf("stats %+v", stats)
			}
			return err
		}, func(t *testing.T, tb *table.Table) {
			if n := len(tb.Dataset().Manifest().Fragments); n != 1 {
				t.Errorf("%d fragments", n)
			}
		}},
		{"CreateIndex", func(tb *table.Table) error {
			return tb.CreateIndex(ctx, "vec", &dataset.CreateIndexOptions{Type: dataset.IndexIVFFlat, Partitions: 2})
		}, func(t *testing.T, tb *table.Table) {
			if n := len(tb.Indices()); n != 1 {
				t.Errorf("%d indices", n)
			}
		}},
		{"OptimizeIndexes", func(tb *table.Table) error {
			if err := tb.CreateIndex(ctx, "vec", &dataset.CreateIndexOptions{Type: dataset.IndexIVFFlat, Partitions: 2}); err != nil {
				return err
			}
			r := rows(10)
			defer r.Release()
			if err := tb.Append(ctx, r, nil); err != nil {
				return err
			}
			return tb.OptimizeIndexes(ctx, nil)
		}, func(t *testing.T, tb *table.Table) {
			if n := len(tb.Indices()); n < 1 {
				t.Errorf("%d indices", n)
			}
		}},
		{"DropIndex", func(tb *table.Table) error {
			if err := tb.CreateIndex(ctx, "vec", &dataset.CreateIndexOptions{Type: dataset.IndexIVFFlat, Partitions: 2}); err != nil {
				return err
			}
			return tb.DropIndex(ctx, "vec_idx", nil)
		}, func(t *testing.T, tb *table.Table) {
			if n := len(tb.Indices()); n != 0 {
				t.Errorf("%d indices", n)
			}
		}},
		{"Restore", func(tb *table.Table) error {
			if err := tb.Delete(ctx, "id > 0", nil); err != nil {
				return err
			}
			v1, err := tb.Checkout(ctx, table.Ref{Version: 1})
			if err != nil {
				return err
			}
			if err := v1.Restore(ctx, nil); err != nil {
				return err
			}
			if v1.Version() != 3 {
				return fmt.Errorf("restored as version %d, want 3", v1.Version())
			}
			return nil
		}, func(t *testing.T, tb *table.Table) {
			latest, err := tb.Checkout(ctx, table.Ref{})
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(t, latest); !slices.Equal(got, span(0, 10)) {
				t.Errorf("ids %v", got)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, tb := create(t, span(0, 10)...)
			before := tb.Version()
			if err := c.write(tb); err != nil {
				t.Fatal(err)
			}
			latest, err := dataset.LatestVersion(ctx, tb.Dataset().Store())
			if err != nil {
				t.Fatal(err)
			}
			if c.name != "Restore" && (tb.Version() == before || tb.Version() != latest) {
				t.Errorf("handle at version %d (was %d), latest %d: a write advances the handle", tb.Version(), before, latest)
			}
			c.check(t, tb)
			checktest.Clean(t, ctx, tb.Dataset().Store())
		})
	}
}

// renamed returns r's batches with the columns renamed.
func renamed(r array.RecordReader, names ...string) (array.RecordReader, error) {
	var fields []arrow.Field
	for i, f := range r.Schema().Fields() {
		f.Name = names[i]
		fields = append(fields, f)
	}
	schema := arrow.NewSchema(fields, nil)
	var recs []arrow.RecordBatch
	for r.Next() {
		rec := r.RecordBatch()
		recs = append(recs, array.NewRecordBatch(schema, rec.Columns(), rec.NumRows()))
	}
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	return array.NewRecordReader(schema, recs)
}

// TestReads covers the reads of a version: scan, take, search, count,
// schema, versions.
func TestReads(t *testing.T) {
	ctx := context.Background()
	_, tb := create(t, span(0, 10)...)
	if got := ids(t, tb); !slices.Equal(got, span(0, 10)) {
		t.Errorf("scan: %v", got)
	}
	rec, err := tb.Take(ctx, []uint64{2, 5}, &dataset.TakeOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Column(0).(*array.Int64).Int64Values(); !slices.Equal(got, []int64{2, 5}) {
		t.Errorf("take: %v", got)
	}
	rec.Release()
	hits, err := tb.SearchRowIDs(ctx, "vec", []float32{7.2, 1}, &dataset.SearchOptions{K: 2})
	if err != nil || len(hits) != 2 {
		t.Fatalf("search row ids: %v, %v", hits, err)
	}
	rec, err = tb.TakeRowIDs(ctx, []uint64{hits[0].ID}, &dataset.TakeOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Column(0).(*array.Int64).Value(0); got != 7 {
		t.Errorf("take row id of the nearest: %d, want 7", got)
	}
	rec.Release()
	rec, err = tb.Search(ctx, "vec", []float32{7.2, 1}, &dataset.SearchOptions{K: 2, Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Column(0).(*array.Int64).Int64Values(); !slices.Equal(got, []int64{7, 8}) {
		t.Errorf("search: %v", got)
	}
	rec.Release()
	for pred, want := range map[string]uint64{"": 10, "id >= 8": 2} {
		if n, err := tb.Count(ctx, pred); err != nil || n != want {
			t.Errorf("Count(%q) = %d, %v; want %d", pred, n, err, want)
		}
	}
	if f := tb.Schema().Field("vec"); f == nil {
		t.Error("schema has no vec")
	}
	r := rows(10)
	defer r.Release()
	if err := tb.Append(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	vs, err := tb.Versions(ctx)
	if err != nil || len(vs) != 2 || vs[1].Version != 2 {
		t.Errorf("versions: %+v, %v", vs, err)
	}
	if got := tb.Ref(); got != (table.Ref{Version: 2}) {
		t.Errorf("Ref() = %+v", got)
	}
	// The change feed of the handle's line: the append's insertion (one
	// row, id 10), read by stable row id.
	feed, err := tb.ChangeFeed(ctx, &dataset.ChangeFeedOptions{Since: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rec, err := range feed.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		kinds := rec.Column(int(rec.NumCols()) - 3).(*array.String)
		for i := range kinds.Len() {
			if kinds.Value(i) != dataset.ChangeInsert {
				t.Errorf("change %d of version 2: %s", n+i, kinds.Value(i))
			}
		}
		n += int(rec.NumRows())
	}
	if n != 1 || !feed.FromLineage() {
		t.Errorf("change feed after version 1: %d rows (from lineage %v), want the one appended, by stable row id", n, feed.FromLineage())
	}
}

// TestOpenRefs opens by URI at every kind of ref, and Checkout of each.
func TestOpenRefs(t *testing.T) {
	ctx := context.Background()
	uri, tb := create(t, span(0, 5)...)
	exp, err := tb.CreateBranch(ctx, "exp", table.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rows(5, 6)
	defer r.Release()
	if err := exp.Append(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.CreateTag(ctx, "first", table.Ref{Version: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.CreateTag(ctx, "exp-head", table.Ref{Branch: "exp"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ref     table.Ref
		want    table.Ref
		wantIDs []int64
	}{
		{table.Ref{}, table.Ref{Version: 1}, span(0, 5)},
		{table.Ref{Branch: "main"}, table.Ref{Version: 1}, span(0, 5)},
		{table.Ref{Branch: "exp"}, table.Ref{Branch: "exp", Version: 2}, span(0, 7)},
		{table.Ref{Branch: "exp", Version: 1}, table.Ref{Branch: "exp", Version: 1}, span(0, 5)},
		{table.Ref{Tag: "first"}, table.Ref{Version: 1}, span(0, 5)},
		{table.Ref{Tag: "exp-head"}, table.Ref{Branch: "exp", Version: 2}, span(0, 7)},
	} {
		opened, err := table.Open(ctx, uri, &table.Options{Ref: c.ref})
		if err != nil {
			t.Fatalf("Open at %s: %v", c.ref, err)
		}
		checked, err := tb.Checkout(ctx, c.ref)
		if err != nil {
			t.Fatalf("Checkout %s: %v", c.ref, err)
		}
		for _, h := range []*table.Table{opened, checked} {
			if got := h.Ref(); got != c.want {
				t.Errorf("%s: at %+v, want %+v", c.ref, got, c.want)
			}
			if got := ids(t, h); !slices.Equal(got, c.wantIDs) {
				t.Errorf("%s: ids %v, want %v", c.ref, got, c.wantIDs)
			}
		}
		if err := opened.Close(); err != nil {
			t.Error(err)
		}
	}
	for _, c := range []struct {
		ref  table.Ref
		want error
	}{
		{table.Ref{Branch: "nope"}, branch.ErrNoSuchBranch},
		{table.Ref{Tag: "nope"}, branch.ErrNoSuchTag},
		{table.Ref{Version: 9}, dataset.ErrNoSuchVersion},
	} {
		if _, err := table.Open(ctx, uri, &table.Options{Ref: c.ref}); !errors.Is(err, c.want) {
			t.Errorf("Open at %s: %v, want %v", c.ref, err, c.want)
		}
		if _, err := tb.Checkout(ctx, c.ref); !errors.Is(err, c.want) {
			t.Errorf("Checkout %s: %v, want %v", c.ref, err, c.want)
		}
	}
	if _, err := table.Open(ctx, filepath.Join(t.TempDir(), "none"), nil); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("Open of no table: %v, want ErrNotFound", err)
	}
	r2 := rows(1)
	defer r2.Release()
	if _, err := table.Create(ctx, uri, r2, nil, nil); !errors.Is(err, lancer.ErrAlreadyExists) {
		t.Errorf("Create over a table: %v, want ErrAlreadyExists", err)
	}
	if _, err := table.Open(ctx, "s3://bkt/t", &table.Options{StorageOptions: map[string]string{"no_such_option": "x"}}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("Open with a bad storage option: %v, want ErrInvalidArgument", err)
	}
}

// TestRefs covers branches, tags, merge, cherry-pick, diff, log and
// cleanup on the handle.
func TestRefs(t *testing.T) {
	ctx := context.Background()
	_, tb := create(t, span(0, 5)...)
	exp, err := tb.CreateBranch(ctx, "exp", table.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := exp.Ref(); got != (table.Ref{Branch: "exp", Version: 1}) {
		t.Errorf("new branch at %+v", got)
	}
	if err := exp.Delete(ctx, "id = 0", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := exp.Update(ctx, map[string]string{"val": "'fixed'"}, "id = 1", nil); err != nil {
		t.Fatal(err)
	}
	if tb.Version() != 1 {
		t.Errorf("main's handle moved to %d by writes on the branch", tb.Version())
	}
	if bs, err := tb.ListBranches(ctx); err != nil || len(bs) != 1 || bs[0].Name != "exp" {
		t.Errorf("ListBranches: %+v, %v", bs, err)
	}

	// Tags.
	if _, err := tb.CreateTag(ctx, "t1", table.Ref{Branch: "exp", Version: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.UpdateTag(ctx, "t1", table.Ref{Branch: "exp"}); err != nil {
		t.Fatal(err)
	}
	if ts, err := tb.ListTags(ctx); err != nil || len(ts) != 1 || ts[0].Version != 3 || ts[0].Branch != "exp" {
		t.Errorf("ListTags: %+v, %v", ts, err)
	}
	if err := tb.DeleteTag(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := tb.DeleteTag(ctx, "t1"); !errors.Is(err, branch.ErrNoSuchTag) {
		t.Errorf("DeleteTag twice: %v", err)
	}

	// Diff and merge base.
	d, err := tb.Diff(ctx, table.Ref{}, table.Ref{Branch: "exp"}, &dataset.DiffOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var diffErr error
	for rec, err := range d.Batches(ctx) {
		if err != nil {
			diffErr = err
			break
		}
		n += int(rec.NumRows())
	}
	if diffErr != nil || n != 2 {
		t.Errorf("diff: %d rows, %v; want a delete and an update", n, diffErr)
	}
	if base, err := tb.MergeBase(ctx, table.Ref{}, table.Ref{Branch: "exp"}); err != nil || base != (table.Ref{Version: 1}) {
		t.Errorf("MergeBase = %+v, %v", base, err)
	}

	// A dry run moves nothing; a merge into main advances main's handle.
	res, err := tb.Merge(ctx, table.Ref{Branch: "exp"}, &branch.MergeOptions{DryRun: true})
	if err != nil || tb.Version() != 1 {
		t.Fatalf("dry run: %+v, %v; handle at %d", res, err, tb.Version())
	}
	res, err = tb.Merge(ctx, table.Ref{Branch: "exp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tb.Version() != res.Version || res.Version == 1 {
		t.Errorf("after the merge the handle is at %d, the merge committed %d", tb.Version(), res.Version)
	}
	if got := vals(t, tb); len(got) != 4 || got[1] != "fixed" {
		t.Errorf("merged main: %v", got)
	}

	// Cherry-pick a commit of main into exp from exp's handle: Into
	// defaults to the handle's line.
	r := rows(50)
	defer r.Release()
	if err := tb.Append(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	res, err = exp.CherryPick(ctx, tb.Ref(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if exp.Ref() != (table.Ref{Branch: "exp", Version: res.Version}) || !slices.Contains(ids(t, exp), 50) {
		t.Errorf("cherry-pick: exp at %+v, ids %v", exp.Ref(), ids(t, exp))
	}

	log, err := tb.Log(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{}
	for _, c := range log {
		lines[c.Line]++
	}
	if lines["main"] != 3 || lines["exp"] != 4 {
		t.Errorf("log: %v", lines)
	}

	// Cleanup is the branch-safe one (invariant 4): exp's first version,
	// whose files are main's version 1, survives.
	stats, err := tb.Cleanup(ctx, &dataset.CleanupOptions{OlderThan: -1})
	if err != nil {
		t.Fatal(err)
	}
	if first, err := tb.Checkout(ctx, table.Ref{Branch: "exp", Version: 1}); err != nil {
		t.Errorf("exp@1 after cleanup (%+v): %v", stats, err)
	} else if got := ids(t, first); !slices.Equal(got, span(0, 5)) {
		t.Errorf("exp@1 after cleanup: %v", got)
	}

	if _, err := tb.DeleteBranch(ctx, "exp", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.DeleteBranch(ctx, "exp", nil); !errors.Is(err, branch.ErrNoSuchBranch) {
		t.Errorf("DeleteBranch twice: %v", err)
	}
}

// TestConcurrentWrites checks invariant 2: concurrent writes through one
// handle all land, appends sharing commits, and the handle ends at the
// newest version.
func TestConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	uri, tb := create(t, 0)
	const writers, each = 8, 5
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				r := rows(int64(1 + i*each + j))
				err := tb.Append(ctx, r, nil)
				r.Release()
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	latest, err := table.Open(ctx, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer latest.Close()
	if tb.Version() != latest.Version() || tb.Version() > writers*each+1 {
		t.Errorf("handle at version %d, the latest is %d (%d appends)", tb.Version(), latest.Version(), writers*each)
	}
	if got := ids(t, tb); !slices.Equal(got, span(0, writers*each+1)) {
		t.Errorf("ids %v", got)
	}
	t.Logf("%d appends in %d versions", writers*each, tb.Version()-1)
}

// TestCleanupKeepsBranchFiles checks invariant 4: after main overwrote
// every row, Cleanup keeps main's old files, which a branch still reads.
func TestCleanupKeepsBranchFiles(t *testing.T) {
	ctx := context.Background()
	_, tb := create(t, span(0, 5)...)
	exp, err := tb.CreateBranch(ctx, "exp", table.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rows(100)
	defer r.Release()
	if err := tb.Overwrite(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	stats, err := tb.Cleanup(ctx, &dataset.CleanupOptions{OlderThan: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(t, exp); !slices.Equal(got, span(0, 5)) {
		t.Errorf("exp after main's cleanup (%+v): %v", stats, got)
	}
	if got := ids(t, tb); !slices.Equal(got, []int64{100}) {
		t.Errorf("main: %v", got)
	}
}

// TestCache checks that the caller's cache serves the handle and the
// handles derived from it: a scan of a checkout of the same version hits
// what the handle's scan loaded.
func TestCache(t *testing.T) {
	ctx := context.Background()
	uri, _ := create(t, span(0, 10)...)
	c, err := cache.New(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	opened, err := table.Open(ctx, uri, &table.Options{Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	defer opened.Close()
	ids(t, opened)
	loaded := c.Stats()
	if loaded.Misses == 0 || loaded.Entries == 0 {
		t.Fatalf("a scan loaded nothing into the caller's cache: %+v", loaded)
	}
	again, err := opened.Checkout(ctx, table.Ref{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	ids(t, again)
	if s := c.Stats(); s.Hits <= loaded.Hits || s.Misses != loaded.Misses {
		t.Errorf("a checkout's scan did not use the shared cache: before %+v, after %+v", loaded, s)
	}
}
