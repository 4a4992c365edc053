package branch_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/checktest"
)

// kv builds rows {id, val} for the given ids, val "v<id>" unless vals
// says otherwise.
func kv(ids []int64, vals map[int64]string) array.RecordReader {
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "val", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		v, ok := vals[id]
		if !ok {
			v = fmt.Sprintf("v%d", id)
		}
		b.Field(1).(*array.StringBuilder).Append(v)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return r
}

func span(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// model is the expected content of a line: id → val.
type model map[int64]string

func (m model) clone() model { return maps.Clone(m) }

// contents reads a state as a model; it fails on duplicate ids.
func contents(t *testing.T, root blob.Store, ref branch.Ref) model {
	t.Helper()
	ds, err := branch.Open(context.Background(), root, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ds.Scan(&dataset.ScanOptions{Columns: []string{"id", "val"}})
	if err != nil {
		t.Fatal(err)
	}
	out := model{}
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(0).(*array.Int64)
		vals := rec.Column(1).(*array.String)
		for i := range int(rec.NumRows()) {
			if _, dup := out[ids.Value(i)]; dup {
				t.Fatalf("%s: id %d twice", ref, ids.Value(i))
			}
			v := vals.Value(i)
			if vals.IsNull(i) {
				v = "<null>"
			}
			out[ids.Value(i)] = v
		}
	}
	return out
}

func sameModel(t *testing.T, what string, got, want model) {
	t.Helper()
	if maps.Equal(got, want) {
		return
	}
	var diffs []string
	for id, v := range want {
		if g, ok := got[id]; !ok {
			diffs = append(diffs, fmt.Sprintf("missing %d", id))
		} else if g != v {
			diffs = append(diffs, fmt.Sprintf("%d: %q, want %q", id, g, v))
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			diffs = append(diffs, fmt.Sprintf("extra %d", id))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 10 {
		diffs = diffs[:10]
	}
	t.Fatalf("%s: %d rows, want %d: %v", what, len(got), len(want), diffs)
}

// line is a test helper writing to one line of a dataset.
type line struct {
	t    *testing.T
	root blob.Store
	ref  branch.Ref
	m    model
}

func (l *line) open() *dataset.Dataset {
	l.t.Helper()
	ds, err := branch.Open(context.Background(), l.root, branch.Ref{Branch: l.ref.Branch}, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	return ds
}

func (l *line) add(ids ...int64) {
	l.t.Helper()
	r := kv(ids, nil)
	defer r.Release()
	if _, err := l.open().Append(context.Background(), r, nil); err != nil {
		l.t.Fatal(err)
	}
	for _, id := range ids {
		l.m[id] = fmt.Sprintf("v%d", id)
	}
}

func (l *line) del(pred string, ids ...int64) {
	l.t.Helper()
	if _, err := l.open().Delete(context.Background(), pred, nil); err != nil {
		l.t.Fatal(err)
	}
	for _, id := range ids {
		delete(l.m, id)
	}
}

func (l *line) set(id int64, val string) {
	l.t.Helper()
	if _, _, err := l.open().Update(context.Background(), map[string]string{"val": "'" + val + "'"}, fmt.Sprintf("id = %d", id), nil); err != nil {
		l.t.Fatal(err)
	}
	l.m[id] = val
}

func newFamily(t *testing.T, stable bool, ids []int64) (blob.Store, *line) {
	t.Helper()
	root, err := blob.NewLocalStore(filepath.Join(t.TempDir(), "t.lance"))
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanRootWhenDone(t, root)
	r := kv(ids, nil)
	defer r.Release()
	if _, err := dataset.Write(context.Background(), root, r, &dataset.WriteOptions{EnableStableRowIDs: stable, MaxRowsPerFile: 40}); err != nil {
		t.Fatal(err)
	}
	m := model{}
	for _, id := range ids {
		m[id] = fmt.Sprintf("v%d", id)
	}
	return root, &line{t: t, root: root, m: m}
}

func (l *line) branch(name string) *line {
	l.t.Helper()
	if _, err := branch.CreateBranch(context.Background(), l.root, name, l.ref, nil); err != nil {
		l.t.Fatal(err)
	}
	return &line{t: l.t, root: l.root, ref: branch.Ref{Branch: name}, m: l.m.clone()}
}

func merge(t *testing.T, root blob.Store, src, into string, strategy dataset.MergeStrategy) *branch.MergeResult {
	t.Helper()
	res, err := branch.Merge(context.Background(), root, branch.Ref{Branch: src}, &branch.MergeOptions{Into: into, Strategy: strategy})
	if err != nil {
		t.Fatalf("merge %s into %s: %v", src, into, err)
	}
	return res
}

func TestMergeFastForwardAndThreeWay(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			root, main := newFamily(t, stable, span(0, 100))
			exp := main.branch("exp")
			exp.add(span(100, 110)...)
			exp.del("id < 5", span(0, 5)...)
			exp.set(50, "changed on exp")

			res := merge(t, root, "exp", "", "")
			if !res.FastForward || res.UpToDate {
				t.Fatalf("not a fast-forward: %+v", res)
			}
			main.m = exp.m.clone()
			sameModel(t, "main after fast-forward", contents(t, root, branch.Ref{}), main.m)

			// Both lines move on: a three-way merge.
			main.add(span(200, 210)...)
			main.del("id >= 10 AND id < 15", span(10, 15)...)
			exp.add(span(300, 305)...)
			exp.del("id >= 20 AND id < 25", span(20, 25)...)
			exp.set(30, "exp 30")
			main.set(31, "main 31")
			res = merge(t, root, "exp", "", "")
			if res.FastForward || res.UpToDate || res.Base.Branch != "exp" {
				t.Fatalf("three-way merge: %+v", res)
			}
			want := main.m.clone()
			for _, id := range span(300, 305) {
				want[id] = fmt.Sprintf("v%d", id)
			}
			for _, id := range span(20, 25) {
				delete(want, id)
			}
			if stable {
				want[30] = "exp 30"
			} else {
				// Without stable row ids an update is a delete and an
				// insert: both land.
				want[30] = "exp 30"
			}
			sameModel(t, "main after three-way merge", contents(t, root, branch.Ref{}), want)
			main.m = want

			// Nothing new on exp: up to date.
			if res := merge(t, root, "exp", "", ""); !res.UpToDate {
				t.Fatalf("second merge: %+v", res)
			}
			// Merge main back into exp.
			res = merge(t, root, "", "exp", "")
			sameModel(t, "exp after merging main", contents(t, root, branch.Ref{Branch: "exp"}), main.m)
		})
	}
}

func TestMergeConflicts(t *testing.T) {
	root, main := newFamily(t, true, span(0, 50))
	exp := main.branch("exp")
	exp.set(40, "exp")
	main.set(40, "main")
	exp.set(41, "exp")
	main.del("id = 41", 41)
	exp.del("id = 42", 42)
	main.set(42, "main")
	exp.add(60)

	_, err := branch.Merge(context.Background(), root, branch.Ref{Branch: "exp"}, nil)
	var mc *dataset.MergeConflictError
	if !errors.As(err, &mc) || !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("conflicting merge: %v", err)
	}
	got := map[uint64]string{}
	for _, c := range mc.Report.Conflicts {
		got[c.RowID] = c.Kind + fmt.Sprint(c.Columns)
	}
	want := map[uint64]string{
		40: dataset.ConflictBothUpdated + "[val]",
		41: dataset.ConflictUpdatedDeleted + "[]",
		42: dataset.ConflictDeletedUpdated + "[]",
	}
	if !maps.Equal(got, want) {
		t.Fatalf("conflicts %v, want %v", got, want)
	}
	sameModel(t, "main after a failed merge", contents(t, root, branch.Ref{}), main.m)

	dry, err := branch.Merge(context.Background(), root, branch.Ref{Branch: "exp"}, &branch.MergeOptions{Strategy: dataset.MergeOurs, DryRun: true})
	if err != nil || dry.Version != dry.Target.Version || dry.Report.RowsAdded != 1 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	sameModel(t, "main after a dry run", contents(t, root, branch.Ref{}), main.m)

	// ours: main's versions win.
	ours := main.m.clone()
	ours[60] = "v60"
	res := merge(t, root, "exp", "", dataset.MergeOurs)
	if len(res.Report.Conflicts) != 3 {
		t.Fatalf("ours: %+v", res.Report)
	}
	sameModel(t, "ours", contents(t, root, branch.Ref{}), ours)

	// theirs, on a fresh pair of lines.
	root2, main2 := newFamily(t, true, span(0, 50))
	exp2 := main2.branch("exp")
	exp2.set(40, "exp")
	main2.set(40, "main")
	exp2.set(41, "exp")
	main2.del("id = 41", 41)
	exp2.del("id = 42", 42)
	main2.set(42, "main")
	theirs := main2.m.clone()
	theirs[40], theirs[41] = "exp", "exp"
	delete(theirs, 42)
	merge(t, root2, "exp", "", dataset.MergeTheirs)
	sameModel(t, "theirs", contents(t, root2, branch.Ref{}), theirs)
}

func TestMergeAddedColumns(t *testing.T) {
	root, main := newFamily(t, true, span(0, 30))
	exp := main.branch("exp")
	ds := exp.open()
	if _, err := ds.AddColumns(context.Background(), []dataset.NewColumn{{Name: "twice", Expr: "id * 2"}}, nil); err != nil {
		t.Fatal(err)
	}
	main.add(span(30, 35)...)
	res := merge(t, root, "exp", "", "")
	if !slices.Equal(res.Report.ColumnsAdded, []string{"twice"}) {
		t.Fatalf("report %+v", res.Report)
	}
	sameModel(t, "main", contents(t, root, branch.Ref{}), main.m)
	d, err := branch.Open(context.Background(), root, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := d.Count(context.Background(), "twice = id * 2")
	if err != nil || n != 30 {
		t.Fatalf("rows with the new column: %d %v", n, err)
	}
	if n, err := d.Count(context.Background(), "twice IS NULL"); err != nil || n != 5 {
		t.Fatalf("main's new rows without it: %d %v", n, err)
	}
}

// TestMergeColumnAddedOnBothSides: both lines add a column of the same
// name (lancer gives each the same next field id), with other values. The
// merge must not silently keep one side's values: it fails naming the
// cause, and main is left as it was.
func TestMergeColumnAddedOnBothSides(t *testing.T) {
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			root, main := newFamily(t, stable, span(0, 30))
			exp := main.branch("exp")
			if _, err := exp.open().AddColumns(ctx, []dataset.NewColumn{{Name: "b", Expr: "id * 3"}}, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := main.open().AddColumns(ctx, []dataset.NewColumn{{Name: "b", Expr: "id * 2"}}, nil); err != nil {
				t.Fatal(err)
			}
			before, err := branch.Open(ctx, root, branch.Ref{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, nil)
			if err == nil || !strings.Contains(err.Error(), "two data files") {
				t.Fatalf("merge of a column both sides added: %v, want a refusal naming the cause", err)
			}
			after, err := branch.Open(ctx, root, branch.Ref{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if after.Version() != before.Version() {
				t.Errorf("main moved from version %d to %d", before.Version(), after.Version())
			}
			if n, err := after.Count(ctx, "b = id * 2"); err != nil || n != 30 {
				t.Errorf("main's own column after the refused merge: %d rows %v, want 30", n, err)
			}
		})
	}
}

func TestMergeErrors(t *testing.T) {
	root, _ := newFamily(t, false, span(0, 5))
	if _, err := branch.Merge(context.Background(), root, branch.Ref{}, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Fatalf("main into main: %v", err)
	}
	if _, err := branch.Merge(context.Background(), root, branch.Ref{Branch: "nosuch"}, nil); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("missing branch: %v", err)
	}
}

// Merges into one target from several goroutines: each lands (a loser
// merges again against the new target) and the target ends with every
// branch's rows.
func TestConcurrentMerges(t *testing.T) {
	root, main := newFamily(t, true, span(0, 20))
	want := main.m.clone()
	const n = 4
	for i := range n {
		b := main.branch(fmt.Sprintf("b%d", i))
		b.add(int64(100 + i))
		b.del(fmt.Sprintf("id = %d", i), int64(i))
		want[int64(100+i)] = fmt.Sprintf("v%d", 100+i)
		delete(want, int64(i))
	}
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := branch.Merge(context.Background(), root, branch.Ref{Branch: fmt.Sprintf("b%d", i)}, &branch.MergeOptions{CommitOptions: dataset.CommitOptions{Retries: 20}})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	sameModel(t, "main after concurrent merges", contents(t, root, branch.Ref{}), want)
}

func TestCherryPick(t *testing.T) {
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			root, main := newFamily(t, stable, span(0, 20))
			exp := main.branch("exp")
			exp.add(100)
			exp.del("id = 3", 3) // the commit picked
			exp.add(101)
			main.add(200)
			d, err := branch.Open(ctx, root, branch.Ref{Branch: "exp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			pick := branch.Ref{Branch: "exp", Version: d.Version() - 1}
			res, err := branch.CherryPick(ctx, root, pick, nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Report.RowsDeleted != 1 || res.Report.RowsAdded != 0 {
				t.Fatalf("cherry-pick report %+v", res.Report)
			}
			want := main.m.clone()
			delete(want, 3)
			sameModel(t, "main after cherry-pick", contents(t, root, branch.Ref{}), want)
			// The pick is no merge: merging exp later brings 100 and 101.
			merge(t, root, "exp", "", "")
			want[100], want[101] = "v100", "v101"
			sameModel(t, "main after merging exp", contents(t, root, branch.Ref{}), want)
			if _, err := branch.CherryPick(ctx, root, branch.Ref{Branch: "exp", Version: 1}, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Fatalf("cherry-pick of the clone: %v", err)
			}
		})
	}
}

// A merge-insert rewrites rows and inserts others in one Update, so without
// stable row ids or a key nothing says which new row is the updated one:
// changed on the other side too, the merge stops and says to name a key,
// whatever the strategy. With the key the merge is exact.
func TestMergeUnmatchedRowsNeedAKey(t *testing.T) {
	ctx := context.Background()
	root, main := newFamily(t, false, span(0, 20))
	exp := main.branch("exp")
	exp.set(5, "exp")
	src := kv([]int64{5, 500}, map[int64]string{5: "main"})
	if _, _, err := main.open().MergeInsert(ctx, src, &dataset.MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true}); err != nil {
		t.Fatal(err)
	}
	src.Release()
	for _, s := range []dataset.MergeStrategy{dataset.MergeFail, dataset.MergeTheirs} {
		_, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, &branch.MergeOptions{Strategy: s})
		var mc *dataset.MergeConflictError
		if !errors.As(err, &mc) || !errors.Is(err, lancer.ErrConflict) || !strings.Contains(err.Error(), "name the key columns") ||
			len(mc.Report.Conflicts) != 1 || mc.Report.Conflicts[0].Kind != dataset.ConflictUnmatched || mc.Report.Conflicts[0].RowID != 5 {
			t.Fatalf("strategy %s: %v", s, err)
		}
	}
	_, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, &branch.MergeOptions{On: []string{"id"}})
	var mc *dataset.MergeConflictError
	if !errors.As(err, &mc) || len(mc.Report.Conflicts) != 1 || mc.Report.Conflicts[0].Key != "id=5" || mc.Report.Conflicts[0].Kind != dataset.ConflictBothUpdated ||
		!slices.Equal(mc.Report.Conflicts[0].Columns, []string{"val"}) {
		t.Fatalf("merge on id: %v %+v", err, mc)
	}
	merge := func(o *branch.MergeOptions) {
		t.Helper()
		if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, o); err != nil {
			t.Fatal(err)
		}
	}
	merge(&branch.MergeOptions{On: []string{"id"}, Strategy: dataset.MergeTheirs})
	want := main.m.clone()
	want[5], want[500] = "exp", "v500"
	sameModel(t, "main after the merge on id", contents(t, root, branch.Ref{}), want)
}

// Keys that are not unique are an error naming the key and a value.
func TestMergeKeyNotUnique(t *testing.T) {
	ctx := context.Background()
	root, main := newFamily(t, false, span(0, 10))
	exp := main.branch("exp")
	exp.set(1, "x")
	main.set(2, "y")
	exp.set(3, "x")
	_, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, &branch.MergeOptions{On: []string{"val"}})
	if !errors.Is(err, lancer.ErrConflict) || !strings.Contains(err.Error(), "the key (val) is not unique") || !strings.Contains(err.Error(), "val=x") {
		t.Fatalf("merge on a non-unique key: %v", err)
	}
	if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, &branch.MergeOptions{On: []string{"nope"}}); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("merge on a missing column: %v", err)
	}
}

// TestMergeConflictsByKey names each kind of conflict a merge by key
// reports, with and without stable row ids: a key inserted on both sides
// with different values (the same values are one row), a row updated on
// both sides, and a row updated on one side and deleted on the other, in
// both directions. Theirs then resolves them into one row per key.
func TestMergeConflictsByKey(t *testing.T) {
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			root, main := newFamily(t, stable, span(0, 50))
			exp := main.branch("exp")
			insert := func(l *line, vals map[int64]string) {
				t.Helper()
				r := kv(slices.Sorted(maps.Keys(vals)), vals)
				defer r.Release()
				if _, err := l.open().Append(ctx, r, nil); err != nil {
					t.Fatal(err)
				}
				maps.Copy(l.m, vals)
			}
			exp.set(40, "exp")
			main.set(40, "main")
			exp.set(41, "exp")
			main.del("id = 41", 41)
			exp.del("id = 42", 42)
			main.set(42, "main")
			insert(exp, map[int64]string{60: "exp", 61: "same"})
			insert(main, map[int64]string{60: "main", 61: "same"})

			opts := &branch.MergeOptions{On: []string{"id"}}
			_, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, opts)
			var mc *dataset.MergeConflictError
			if !errors.As(err, &mc) || !errors.Is(err, lancer.ErrConflict) {
				t.Fatalf("conflicting merge: %v", err)
			}
			got := map[string]string{}
			for _, c := range mc.Report.Conflicts {
				got[c.Key] = c.Kind + fmt.Sprint(c.Columns)
			}
			want := map[string]string{
				"id=40": dataset.ConflictBothUpdated + "[val]",
				"id=41": dataset.ConflictUpdatedDeleted + "[]",
				"id=42": dataset.ConflictDeletedUpdated + "[]",
				"id=60": dataset.ConflictBothInserted + "[]",
			}
			if !maps.Equal(got, want) {
				t.Fatalf("conflicts %v, want %v", got, want)
			}
			sameModel(t, "main after the refused merge", contents(t, root, branch.Ref{}), main.m)

			opts.Strategy = dataset.MergeTheirs
			if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, opts); err != nil {
				t.Fatal(err)
			}
			theirs := main.m.clone()
			theirs[40], theirs[41], theirs[60] = "exp", "exp", "exp"
			delete(theirs, 42)
			sameModel(t, "main after theirs", contents(t, root, branch.Ref{}), theirs)
		})
	}
}

// Rows that reached two lines through merges of a branch since discarded
// are in neither line's merge base (the discard took the branch's history
// with it): a row one line then updated once came out of a merge without
// stable row ids or a key twice, the updated copy beside the other line's.
// Now such a row is one row on both lines: changed on one, it is a
// conflict (the base cannot say which side changed it), resolved into one
// row; unchanged on both, it merges as it is.
func TestMergeAfterDiscardedBranch(t *testing.T) {
	ctx := context.Background()
	root, main := newFamily(t, false, span(0, 20))
	b := main.branch("b")
	c := main.branch("c")
	b.add(100, 101, 102)
	for _, into := range []string{"", "c"} {
		if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, &branch.MergeOptions{Into: into}); err != nil {
			t.Fatal(err)
		}
	}
	maps.Copy(main.m, b.m)
	maps.Copy(c.m, b.m)
	if _, err := branch.DeleteBranch(ctx, root, "b", nil); err != nil {
		t.Fatal(err)
	}
	main.set(100, "main")
	c.set(101, "c")
	_, err := branch.Merge(ctx, root, branch.Ref{}, &branch.MergeOptions{Into: "c"})
	var mc *dataset.MergeConflictError
	if !errors.As(err, &mc) || len(mc.Report.Conflicts) != 2 {
		t.Fatalf("merge main into c: %v %+v", err, mc)
	}
	for _, cf := range mc.Report.Conflicts {
		if cf.Kind != dataset.ConflictBothInserted {
			t.Errorf("conflict %+v: want %q", cf, dataset.ConflictBothInserted)
		}
	}
	sameModel(t, "c after the refused merge", contents(t, root, branch.Ref{Branch: "c"}), c.m)
	if _, err := branch.Merge(ctx, root, branch.Ref{}, &branch.MergeOptions{Into: "c", Strategy: dataset.MergeTheirs}); err != nil {
		t.Fatal(err)
	}
	want := c.m.clone()
	want[100], want[101] = "main", "v101"
	sameModel(t, "c after theirs", contents(t, root, branch.Ref{Branch: "c"}), want)
}

// mergeBroughtBack builds issue 19's seed 73 (no stable row ids, no key):
// main, b forked from main and c forked from b; main updates row 1, c
// deletes it, b updates it, and b is merged into c with strategy theirs,
// which brings b's updated copy of row 1 back into c. Relative to main's
// state both lines started from, row 1 is now updated on main and on c.
func mergeBroughtBack(t *testing.T) (blob.Store, *line, *line, *line) {
	t.Helper()
	root, main := newFamily(t, false, span(0, 20))
	b := main.branch("b")
	c := b.branch("c")
	main.set(1, "main")
	c.del("id = 1", 1)
	b.set(1, "b")
	b.set(7, "b7") // an update of b that reaches c with no conflict
	res := merge(t, root, "b", "c", dataset.MergeTheirs)
	if len(res.Report.Conflicts) != 1 || res.Report.Conflicts[0].Kind != dataset.ConflictUpdatedDeleted {
		t.Fatalf("merge b into c: conflicts %+v, want row 1 %q", res.Report.Conflicts, dataset.ConflictUpdatedDeleted)
	}
	c.m[1], c.m[7] = "b", "b7"
	sameModel(t, "c after merging b", contents(t, root, branch.Ref{Branch: "c"}), c.m)
	return root, main, b, c
}

// TestMergeTracesRowsBroughtBackByAMerge is seed 73 of the identity model
// (step 15) made small: c's copy of row 1 came from b through a merge,
// after c had deleted row 1, and the merge of c into main took it for a
// new row, so strategy ours kept main's row 1 and inserted c's: id 1
// twice. The merge now follows rows an earlier merge brought over to their
// origin on the source's line (b's update of row 1), so row 1 is one row
// updated on both sides: a conflict, which a strategy resolves to one row.
func TestMergeTracesRowsBroughtBackByAMerge(t *testing.T) {
	ctx := context.Background()
	for _, strategy := range []dataset.MergeStrategy{dataset.MergeOurs, dataset.MergeTheirs} {
		t.Run(string(strategy), func(t *testing.T) {
			root, main, _, _ := mergeBroughtBack(t)
			_, err := branch.Merge(ctx, root, branch.Ref{Branch: "c"}, nil)
			var mc *dataset.MergeConflictError
			if !errors.As(err, &mc) || len(mc.Report.Conflicts) != 1 || mc.Report.Conflicts[0].Kind != dataset.ConflictBothUpdated {
				t.Fatalf("merge c into main: %v, want one conflict %q (report %+v)", err, dataset.ConflictBothUpdated, mc)
			}
			if got := mc.Report.Conflicts[0].RowID; got != 1 {
				t.Errorf("conflict on row %d, want base row 1 (fragment 0, offset 1)", got)
			}
			sameModel(t, "main after the refused merge", contents(t, root, branch.Ref{}), main.m)
			res := merge(t, root, "c", "", strategy)
			want := main.m.clone()
			want[7] = "b7"
			if strategy == dataset.MergeTheirs {
				want[1] = "b"
			}
			sameModel(t, "main after "+string(strategy), contents(t, root, branch.Ref{}), want)
			if res.Report.RowsAdded != 0 {
				t.Errorf("report %+v: rows added, want none", res.Report)
			}
		})
	}
}

// TestMergeUntraceableMergeStops is the same history with the merge's
// source gone: b is discarded after c merged it, so nothing says which
// base row c's copy of row 1 is, and the merge of c into main must stop
// with ConflictUnmatched (naming a key resolves it), not insert it beside
// main's row 1.
func TestMergeUntraceableMergeStops(t *testing.T) {
	ctx := context.Background()
	root, main, _, c := mergeBroughtBack(t)
	if _, err := branch.DeleteBranch(ctx, root, "b", nil); err != nil {
		t.Fatal(err)
	}
	sameModel(t, "c after discarding b", contents(t, root, branch.Ref{Branch: "c"}), c.m)
	for _, strategy := range []dataset.MergeStrategy{dataset.MergeFail, dataset.MergeOurs, dataset.MergeTheirs} {
		_, err := branch.Merge(ctx, root, branch.Ref{Branch: "c"}, &branch.MergeOptions{Strategy: strategy})
		var mc *dataset.MergeConflictError
		if !errors.As(err, &mc) || !strings.Contains(mc.Reason, "cannot be matched") {
			t.Fatalf("merge c into main, strategy %s: %v, want rows that cannot be matched", strategy, err)
		}
		if u := mc.Report.Unresolved(); len(u) != 1 || u[0].Kind != dataset.ConflictUnmatched || u[0].RowID != 1 {
			t.Errorf("strategy %s: unresolved %+v, want row 1 %q", strategy, u, dataset.ConflictUnmatched)
		}
		sameModel(t, "main after the refused merge", contents(t, root, branch.Ref{}), main.m)
	}
	// A key makes the merge exact.
	if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "c"}, &branch.MergeOptions{Strategy: dataset.MergeTheirs, On: []string{"id"}}); err != nil {
		t.Fatal(err)
	}
	want := main.m.clone()
	want[1], want[7] = "b", "b7"
	sameModel(t, "main after merging by key", contents(t, root, branch.Ref{}), want)
}

// TestMergeTracesRowsMergedCellByCell: without stable row ids or a key, a
// row a merge wrote cell by cell on c (b changed one column, c another)
// is a copy of the base row, recorded on the merge's commit
// (dataset.PropCellOrigins). A later merge of c into main, which changed
// the row too, matches it: a conflict on the one column both changed,
// which the column rules resolve, where it once stopped as rows that
// cannot be matched.
func TestMergeTracesRowsMergedCellByCell(t *testing.T) {
	ctx := context.Background()
	root, err := blob.NewLocalStore(filepath.Join(t.TempDir(), "t.lance"))
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanRootWhenDone(t, root)
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "val", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "n", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	main := &idLine{t: t, root: root, schema: sch, m: model{}}
	init := map[int64]string{}
	for id := range int64(20) {
		init[id] = fmt.Sprintf("v%d|n%d", id, id)
	}
	r := main.rows(init)
	if _, err := dataset.Write(ctx, root, r, &dataset.WriteOptions{MaxRowsPerFile: 12}); err != nil {
		t.Fatal(err)
	}
	r.Release()
	main.m = model(init).clone()
	fork := func(name string) *idLine {
		if _, err := branch.CreateBranch(ctx, root, name, branch.Ref{}, nil); err != nil {
			t.Fatal(err)
		}
		return &idLine{t: t, root: root, branch: name, schema: sch, m: main.m.clone()}
	}
	b, c := fork("b"), fork("c")
	b.set([]int64{1}, "n", "b")
	c.set([]int64{1}, "val", "c")
	res, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, &branch.MergeOptions{Into: "c"})
	if err != nil || res.Report.CellsMerged != 1 {
		t.Fatalf("merge b into c: %v %+v, want one row merged cell by cell", err, res)
	}
	c.m[1] = "c|b"
	sameModel(t, "c", idContents(t, root, branch.Ref{Branch: "c"}), c.m)
	main.set([]int64{1}, "val", "main")
	_, err = branch.Merge(ctx, root, branch.Ref{Branch: "c"}, nil)
	var mc *dataset.MergeConflictError
	if !errors.As(err, &mc) || len(mc.Report.Conflicts) != 1 || mc.Report.Conflicts[0].Kind != dataset.ConflictBothUpdated ||
		!slices.Equal(mc.Report.Conflicts[0].Columns, []string{"val"}) {
		t.Fatalf("merge c into main: %v, want row 1 %q on val (report %+v)", err, dataset.ConflictBothUpdated, mc)
	}
	if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "c"}, &branch.MergeOptions{Ours: []string{"val"}}); err != nil {
		t.Fatal(err)
	}
	main.m[1] = "main|b"
	sameModel(t, "main", idContents(t, root, branch.Ref{}), main.m)
}

// TestMergeDropsCallersCellOrigins: a merge that wrote no row cell by cell
// records no dataset.PropCellOrigins, even when the caller's Properties
// hold one: a forged record would let a later merge's replay match rows
// to rows they are not copies of.
func TestMergeDropsCallersCellOrigins(t *testing.T) {
	ctx := context.Background()
	root, err := blob.NewLocalStore(filepath.Join(t.TempDir(), "t.lance"))
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanRootWhenDone(t, root)
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "val", Type: arrow.BinaryTypes.String, Nullable: true}, {Name: "n", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	main := &idLine{t: t, root: root, schema: sch, m: model{}}
	r := main.rows(map[int64]string{0: "a|a", 1: "b|b"})
	if _, err := dataset.Write(ctx, root, r, nil); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if _, err := branch.CreateBranch(ctx, root, "b", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	b := &idLine{t: t, root: root, branch: "b", schema: sch, m: model{0: "a|a", 1: "b|b"}}
	b.add(map[int64]string{2: "c|c"})
	forged := "1:0.0"
	if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "b"}, &branch.MergeOptions{
		CommitOptions: dataset.CommitOptions{Properties: map[string]string{dataset.PropCellOrigins: forged, "note": "kept"}}}); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(ctx, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	versions, err := d.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := versions[len(versions)-1]
	if got, ok := last.Properties[dataset.PropCellOrigins]; ok || last.Properties["note"] != "kept" {
		t.Fatalf("merge commit properties %v: cell origins %q (present %v), want none and the caller's note kept", last.Properties, got, ok)
	}
}
