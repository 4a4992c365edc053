package interop_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// graphRequest asks lance-ops.mjs for a branch operation.
type graphRequest struct {
	URI       string            `json:"uri"`
	Op        string            `json:"op"`
	Name      string            `json:"name,omitempty"`
	FromRef   string            `json:"fromRef,omitempty"`
	Branch    string            `json:"branch,omitempty"`
	Rows      []map[string]any  `json:"rows,omitempty"`
	Filter    string            `json:"filter,omitempty"`
	ValuesSQL map[string]string `json:"valuesSql,omitempty"`
}

type graphReply struct {
	Version uint64 `json:"version"`
	Count   uint64 `json:"count"`
	Error   string `json:"error"`
}

func graphOps(t *testing.T, node, ref string, reqs ...graphRequest) []graphReply {
	t.Helper()
	replies, err := lancereftest.Ask[graphRequest, graphReply](script(node, ref), "lance-ops.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replies {
		if r.Error != "" {
			t.Fatalf("real Lance refused %s on %s: %s", reqs[i].Op, reqs[i].URI, r.Error)
		}
	}
	return replies
}

func idVal(ids []int64, val string) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "val", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s%d", val, id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return r
}

func ids(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// branchRows reads a branch with real Lance and with lancer and requires the
// same rows.
func branchAgree(t *testing.T, node, ref, uri string, root blob.Store, name string) {
	t.Helper()
	checktest.CleanURI(t, context.Background(), uri)
	r := lanceRows(t, node, ref, []request{{URI: uri, Branch: name, WithRowID: true}})[0]
	if r.Error != "" {
		t.Fatalf("real Lance cannot read branch %s: %s", name, r.Error)
	}
	ds, err := branch.Open(context.Background(), root, branch.Ref{Branch: name}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := scanRowsWithID(t, ds)
	fixturetest.CompareRows(t, fmt.Sprintf("branch %s (real Lance vs lancer)", name), got, r.Rows, fixturetest.CompareOptions{})
}

func scanRowsWithID(t *testing.T, ds *dataset.Dataset) [][]byte {
	t.Helper()
	s, err := ds.Scan(&dataset.ScanOptions{WithRowID: true})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fixturetest.EncodeRows(t, rec)...)
	}
	return out
}

// branchedIDs writes ids 0..49 (val "v<id>", 20 rows a fragment) to a new
// dataset named name and branches exp from it; it returns the dataset's
// location, root, main and exp.
func branchedIDs(t *testing.T, name string, stable bool) (string, blob.Store, *dataset.Dataset, *dataset.Dataset) {
	t.Helper()
	ctx := context.Background()
	uri := filepath.Join(t.TempDir(), name)
	root, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	r := idVal(ids(0, 50), "v")
	main, err := dataset.Write(ctx, root, r, &dataset.WriteOptions{EnableStableRowIDs: stable, MaxRowsPerFile: 20})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	exp, err := branch.CreateBranch(ctx, root, "exp", branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return uri, root, main, exp
}

// TestLanceReadsLancerMerges: lancer branches, writes on both lines and
// merges (three-way, then fast-forward back); real Lance reads every
// version of main and the branch with the rows lancer computed. Then Lance
// writes on its own branch and lancer merges it.
func TestLanceReadsLancerMerges(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			uri, root, main, exp := branchedIDs(t, "m.lance", stable)
			r := idVal(ids(100, 110), "e")
			var err error
			if exp, err = exp.Append(ctx, r, nil); err != nil {
				t.Fatal(err)
			}
			r.Release()
			if exp, err = exp.Delete(ctx, "id < 3", nil); err != nil {
				t.Fatal(err)
			}
			if _, _, err = exp.Update(ctx, map[string]string{"val": "'exp'"}, "id = 30", nil); err != nil {
				t.Fatal(err)
			}
			r = idVal(ids(200, 205), "m")
			if main, err = main.Append(ctx, r, nil); err != nil {
				t.Fatal(err)
			}
			r.Release()
			if _, err = main.Delete(ctx, "id = 40", nil); err != nil {
				t.Fatal(err)
			}
			res, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, nil)
			if err != nil || res.FastForward {
				t.Fatalf("merge: %+v %v", res, err)
			}
			agree(t, node, ref, uri)
			if res, err = branch.Merge(ctx, root, branch.Ref{}, &branch.MergeOptions{Into: "exp"}); err != nil || !res.FastForward {
				t.Fatalf("merge back: %+v %v", res, err)
			}
			branchAgree(t, node, ref, uri, root, "exp")

			// Lance branches and writes; lancer merges Lance's branch.
			rows := []map[string]any{{"id": 300, "val": "lance"}, {"id": 301, "val": "lance"}}
			graphOps(t, node, ref,
				graphRequest{URI: uri, Op: "createBranch", Name: "lb", FromRef: "main"},
				graphRequest{URI: uri, Op: "branchAppend", Branch: "lb", Rows: rows},
				graphRequest{URI: uri, Op: "branchDelete", Branch: "lb", Filter: "id = 10"},
			)
			// main appends too: Lance's branch allocates stable row ids
			// from where main was, so the merge renumbers the branch's new
			// rows in main.
			if main, err = openDir(ctx, uri, nil); err != nil {
				t.Fatal(err)
			}
			r = idVal([]int64{400}, "main")
			_, err = main.Append(ctx, r, nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "lb"}, nil); err != nil {
				t.Fatalf("merge of Lance's branch: %v", err)
			}
			agree(t, node, ref, uri)
			// Lance updates a row its branch added, and lancer merges the
			// branch again: main's renumbered copy is that row.
			graphOps(t, node, ref, graphRequest{URI: uri, Op: "branchUpdate", Branch: "lb", Filter: "id = 300", ValuesSQL: map[string]string{"val": "'lance2'"}})
			if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "lb"}, nil); err != nil {
				t.Fatalf("second merge of Lance's branch: %v", err)
			}
			agree(t, node, ref, uri)
			d, err := openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			for pred, want := range map[string]uint64{"id = 10": 0, "id >= 300": 3, "id = 300": 1, "val = 'lance2'": 1, "id >= 100 AND id < 110": 10, "val = 'exp'": 1, "id = 40": 0} {
				if n, err := d.Count(ctx, pred); err != nil || n != want {
					t.Errorf("main after the merges: %s: %d rows, want %d (%v)", pred, n, want, err)
				}
			}
		})
	}
}

// TestLanceReadsMergedUpdates: rows updated on both lines, by lancer and by
// real Lance (whose Update transactions the merge reads to match an updated
// row with its copy), merge as one row each, with and without stable row
// ids: a conflict first, then resolved by a strategy, and real Lance reads
// the merged versions with the rows lancer computed.
func TestLanceReadsMergedUpdates(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			uri, root, main, exp := branchedIDs(t, "u.lance", stable)
			var err error
			update := func(d *dataset.Dataset, val, pred string) *dataset.Dataset {
				t.Helper()
				out, _, err := d.Update(ctx, map[string]string{"val": "'" + val + "'"}, pred, nil)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			exp = update(exp, "exp", "id = 30 OR id = 10")
			main = update(main, "main", "id = 30 OR id = 20")
			// Updated alike on both sides: merged cell by cell, into a
			// fragment the merge writes.
			exp = update(exp, "same", "id = 7")
			main = update(main, "same", "id = 7")
			if main, err = main.Delete(ctx, "id = 40", nil); err != nil {
				t.Fatal(err)
			}
			conflictOn := func(src string, wantKind string) {
				t.Helper()
				_, err := branch.Merge(ctx, root, branch.Ref{Branch: src}, nil)
				var mc *dataset.MergeConflictError
				if !errors.As(err, &mc) || len(mc.Report.Conflicts) != 1 || mc.Report.Conflicts[0].Kind != wantKind {
					t.Fatalf("merge %s: %v", src, err)
				}
			}
			conflictOn("exp", dataset.ConflictBothUpdated)
			if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "exp"}, &branch.MergeOptions{Strategy: dataset.MergeTheirs}); err != nil {
				t.Fatal(err)
			}
			agree(t, node, ref, uri)
			want := map[string]uint64{"": 49, "id = 30": 1, "val = 'exp'": 2, "val = 'main'": 1, "id = 40": 0, "id = 7 AND val = 'same'": 1}
			counts := func(what string) {
				t.Helper()
				d, err := openDir(ctx, uri, nil)
				if err != nil {
					t.Fatal(err)
				}
				for pred, n := range want {
					if got, err := d.Count(ctx, pred); err != nil || got != n {
						t.Errorf("main after %s: %q: %d rows, want %d (%v)", what, pred, got, n, err)
					}
				}
			}
			counts("merging exp")

			// Real Lance updates rows of several fragments on its branch,
			// each to a value of its own, and lancer one of them on main: a
			// copy matched with the wrong row would show as a lost or wrong
			// value.
			graphOps(t, node, ref,
				graphRequest{URI: uri, Op: "createBranch", Name: "lb", FromRef: "main"},
				graphRequest{URI: uri, Op: "branchUpdate", Branch: "lb", Filter: "id IN (1, 2, 3, 25, 45)", ValuesSQL: map[string]string{"val": "concat('lance', CAST(id AS VARCHAR))"}},
			)
			d, err := openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			update(d, "main25", "id = 25")
			conflictOn("lb", dataset.ConflictBothUpdated)
			if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "lb"}, &branch.MergeOptions{Strategy: dataset.MergeOurs}); err != nil {
				t.Fatal(err)
			}
			agree(t, node, ref, uri)
			want["val LIKE 'lance%'"], want["id = 25 AND val = 'main25'"] = 4, 1
			for _, id := range []int{1, 2, 3, 45} {
				want[fmt.Sprintf("id = %d AND val = 'lance%d'", id, id)] = 1
			}
			counts("merging Lance's branch")
		})
	}
}

// TestLanceReadsMergeAfterLanceCompaction: real Lance deletes rows on its
// branch and compacts it (its optimize, Lance's defaults: the three small
// fragments become one, deleted rows dropped), while lancer changes rows
// of those fragments on main. Without stable row ids the merge matches the
// rows through the compaction's Rewrite groups (which row went where is
// the order Lance wrote them in): it merges without a conflict. A row Lance
// then updates on the compacted branch that main updated too is one
// conflict on that row. Real Lance reads every merged version with the
// rows lancer computed.
func TestLanceReadsMergeAfterLanceCompaction(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			uri, root, _, _ := branchedIDs(t, "c.lance", stable)
			graphOps(t, node, ref,
				graphRequest{URI: uri, Op: "createBranch", Name: "lb", FromRef: "main"},
				graphRequest{URI: uri, Op: "branchDelete", Branch: "lb", Filter: "id IN (5, 33)"},
			)
			before, err := openDirAt(ctx, uri, branch.Ref{Branch: "lb"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			graphOps(t, node, ref, graphRequest{URI: uri, Op: "branchOptimize", Branch: "lb"})
			after, err := openDirAt(ctx, uri, branch.Ref{Branch: "lb"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(before.Manifest().Fragments) < 3 || len(after.Manifest().Fragments) != 1 {
				t.Fatalf("Lance's compaction left %d fragments of %d, want them rewritten into one", len(after.Manifest().Fragments), len(before.Manifest().Fragments))
			}
			main, err := openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			if main, _, err = main.Update(ctx, map[string]string{"val": "'main'"}, "id = 25 OR id = 41", nil); err != nil {
				t.Fatal(err)
			}
			if _, err = main.Delete(ctx, "id = 45", nil); err != nil {
				t.Fatal(err)
			}
			res, err := branch.Merge(ctx, root, branch.Ref{Branch: "lb"}, nil)
			if err != nil {
				t.Fatalf("merge of Lance's compacted branch: %v", err)
			}
			if res.Report.RowsAdded != 0 {
				t.Errorf("report %+v: rows added, want none (compacted rows are not new)", res.Report)
			}
			agree(t, node, ref, uri)
			want := map[string]uint64{"": 47, "id IN (5, 33, 45)": 0, "val = 'main'": 2, "id = 25 AND val = 'main'": 1, "id = 41 AND val = 'main'": 1}
			counts := func(what string) {
				t.Helper()
				d, err := openDir(ctx, uri, nil)
				if err != nil {
					t.Fatal(err)
				}
				for pred, n := range want {
					if got, err := d.Count(ctx, pred); err != nil || got != n {
						t.Errorf("main after %s: %q: %d rows, want %d (%v)", what, pred, got, n, err)
					}
				}
			}
			counts("merging Lance's compacted branch")

			// Lance updates, on the compacted branch, a row main updated
			// too and one main left alone: one conflict on that row, not
			// rows that cannot be matched (the merge's base is now the
			// branch's compacted version, whose rows main's line knows by
			// where they were before the compaction).
			graphOps(t, node, ref, graphRequest{URI: uri, Op: "branchUpdate", Branch: "lb", Filter: "id IN (25, 12)", ValuesSQL: map[string]string{"val": "'lance'"}})
			_, err = branch.Merge(ctx, root, branch.Ref{Branch: "lb"}, nil)
			var mc *dataset.MergeConflictError
			if !errors.As(err, &mc) || len(mc.Report.Conflicts) != 1 || mc.Report.Conflicts[0].Kind != dataset.ConflictBothUpdated {
				t.Fatalf("second merge of Lance's branch: %v, want one conflict %q", err, dataset.ConflictBothUpdated)
			}
			if _, err := branch.Merge(ctx, root, branch.Ref{Branch: "lb"}, &branch.MergeOptions{Strategy: dataset.MergeTheirs}); err != nil {
				t.Fatal(err)
			}
			agree(t, node, ref, uri)
			want["val = 'main'"], want["id = 25 AND val = 'main'"] = 1, 0
			want["val = 'lance'"], want["id = 25 AND val = 'lance'"], want["id = 12 AND val = 'lance'"] = 2, 1, 1
			counts("merging Lance's update of compacted rows")

		})
	}
}
