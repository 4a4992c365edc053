package interop_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// lineageRequest is a lance-ops.mjs request of the lineage tests.
type lineageRequest struct {
	URI                     string            `json:"uri"`
	Op                      string            `json:"op"`
	Version                 uint64            `json:"version,omitempty"`
	Rows                    []map[string]any  `json:"rows,omitempty"`
	Filter                  string            `json:"filter,omitempty"`
	ValuesSQL               map[string]string `json:"valuesSql,omitempty"`
	On                      []string          `json:"on,omitempty"`
	WhenMatchedUpdateAll    bool              `json:"whenMatchedUpdateAll,omitempty"`
	WhenNotMatchedInsertAll bool              `json:"whenNotMatchedInsertAll,omitempty"`
	Select                  []string          `json:"select,omitempty"`
	StorageOptions          map[string]string `json:"storageOptions,omitempty"`
}

type lineageReply struct {
	Version uint64 `json:"version"`
	Rows    []struct {
		ID      int64  `json:"id"`
		Val     string `json:"val"`
		Created uint64 `json:"_row_created_at_version"`
		Updated uint64 `json:"_row_last_updated_at_version"`
		RowID   uint64 `json:"_rowid"`
	} `json:"rows"`
	Error string `json:"error"`
}

// rowLineage is a row's value, stable row id and lineage.
type rowLineage struct {
	val              string
	rowID            uint64
	created, updated uint64
}

func lineageOps(t *testing.T, node, ref string, reqs ...lineageRequest) []lineageReply {
	t.Helper()
	replies, err := lancereftest.Ask[lineageRequest, lineageReply](script(node, ref), "lance-ops.mjs", reqs)
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

// lanceLineage reads id, val, _rowid and the lineage columns of every
// version in versions with real Lance.
func lanceLineage(t *testing.T, node, ref, uri string, versions []uint64) map[uint64]map[int64]rowLineage {
	t.Helper()
	var reqs []lineageRequest
	for _, v := range versions {
		reqs = append(reqs, lineageRequest{URI: uri, Op: "query", Version: v,
			Select: []string{"id", "val", dataset.RowCreatedAtVersionColumn, dataset.RowLastUpdatedAtVersionColumn}})
	}
	out := map[uint64]map[int64]rowLineage{}
	for i, r := range lineageOps(t, node, ref, reqs...) {
		rows := map[int64]rowLineage{}
		for _, row := range r.Rows {
			rows[row.ID] = rowLineage{row.Val, row.RowID, row.Created, row.Updated}
		}
		out[versions[i]] = rows
	}
	return out
}

// lancerLineage reads the same with lancer.
func lancerLineage(t *testing.T, uri string, versions []uint64) map[uint64]map[int64]rowLineage {
	t.Helper()
	ctx := context.Background()
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]map[int64]rowLineage{}
	for _, v := range versions {
		d, err := dataset.Open(ctx, store, &dataset.OpenOptions{Version: v})
		if err != nil {
			t.Fatal(err)
		}
		s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id", "val", dataset.RowCreatedAtVersionColumn, dataset.RowLastUpdatedAtVersionColumn}, WithRowID: true})
		if err != nil {
			t.Fatal(err)
		}
		rows := map[int64]rowLineage{}
		for rec, err := range s.Batches(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			col := func(name string) int { return rec.Schema().FieldIndices(name)[0] }
			ids := rec.Column(col("id")).(*array.Int64)
			vals := rec.Column(col("val")).(*array.String)
			created := rec.Column(col(dataset.RowCreatedAtVersionColumn)).(*array.Uint64)
			updated := rec.Column(col(dataset.RowLastUpdatedAtVersionColumn)).(*array.Uint64)
			rowIDs := rec.Column(col(dataset.RowIDColumn)).(*array.Uint64)
			for i := range int(rec.NumRows()) {
				rows[ids.Value(i)] = rowLineage{vals.Value(i), rowIDs.Value(i), created.Value(i), updated.Value(i)}
			}
		}
		out[v] = rows
	}
	return out
}

func sameLineage(t *testing.T, what string, lance, lancer map[uint64]map[int64]rowLineage) {
	t.Helper()
	for v, want := range lance {
		got := lancer[v]
		if !maps.Equal(got, want) {
			for id, w := range want {
				if g, ok := got[id]; !ok || g != w {
					t.Errorf("%s, version %d, id %d: lancer %+v (present %v), Lance %+v", what, v, id, g, ok, w)
				}
			}
			for id, g := range got {
				if _, ok := want[id]; !ok {
					t.Errorf("%s, version %d: lancer has id %d (%+v), Lance does not", what, v, id, g)
				}
			}
		}
	}
}

func lineageRows(ids []int64, val string) []map[string]any {
	var out []map[string]any
	for _, id := range ids {
		out = append(out, map[string]any{"id": id, "val": fmt.Sprint(val, id)})
	}
	return out
}

// TestRowLineageLanceWritesLancerReads: real Lance creates a dataset with
// stable row ids and appends, updates, upserts (update and insert),
// deletes and compacts it; lancer reads, at every version, the
// _row_created_at_version and _row_last_updated_at_version (and _rowid)
// Lance reports for each row.
func TestRowLineageLanceWritesLancerReads(t *testing.T) {
	node, ref := lanceRef(t)
	uri := filepath.Join(t.TempDir(), "l.lance")
	rs := lineageOps(t, node, ref,
		lineageRequest{URI: uri, Op: "create", Rows: lineageRows(ids(0, 20), "v"), StorageOptions: map[string]string{"new_table_enable_stable_row_ids": "true"}},
		lineageRequest{URI: uri, Op: "append", Rows: lineageRows(ids(20, 30), "v")},
		lineageRequest{URI: uri, Op: "update", Filter: "id IN (2, 12, 25)", ValuesSQL: map[string]string{"val": "'u'"}},
		lineageRequest{URI: uri, Op: "mergeInsert", On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true,
			Rows: lineageRows([]int64{3, 12, 40}, "m")},
		lineageRequest{URI: uri, Op: "delete", Filter: "id = 4 OR id = 25"},
		lineageRequest{URI: uri, Op: "update", Filter: "id = 3", ValuesSQL: map[string]string{"val": "'w'"}},
		lineageRequest{URI: uri, Op: "optimize"},
	)
	var versions []uint64
	for v := uint64(1); v <= rs[len(rs)-1].Version; v++ {
		versions = append(versions, v)
	}
	lance := lanceLineage(t, node, ref, uri, versions)
	sameLineage(t, "Lance's history", lance, lancerLineage(t, uri, versions))
	// What Lance 12 records, spelled out (so that a change of Lance's rules
	// shows here first): id 12 was created at 1, updated at 3 and upserted
	// at 4; id 40 was inserted by the upsert; id 3 was last updated at 6.
	last := lance[rs[len(rs)-1].Version]
	t.Logf("Lance's lineage at the end: id 12 %+v, id 40 %+v, id 3 %+v, id 0 %+v", last[12], last[40], last[3], last[0])
	for id, want := range map[int64][2]uint64{0: {1, 1}, 20: {rs[1].Version, rs[1].Version}, 40: {rs[3].Version, rs[3].Version}} {
		if got := last[id]; got.created != want[0] || got.updated != want[1] {
			t.Errorf("Lance's lineage of id %d: created %d, last updated %d; want %v", id, got.created, got.updated, want)
		}
	}
	if got := last[12]; got.updated != rs[3].Version {
		t.Errorf("Lance's lineage of id 12 (updated, then upserted at %d): %+v", rs[3].Version, got)
	}
}

// TestRowLineageLancerWritesLanceReads: lancer creates a dataset with
// stable row ids and appends, updates, upserts, deletes and compacts it;
// real Lance reads at every version the lineage lancer reads.
func TestRowLineageLancerWritesLanceReads(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	uri := filepath.Join(t.TempDir(), "l.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	r := idVal(ids(0, 20), "v")
	d, err := dataset.Write(ctx, store, r, &dataset.WriteOptions{EnableStableRowIDs: true, MaxRowsPerFile: 8})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	r = idVal(ids(20, 30), "v")
	d, err = d.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Update(ctx, map[string]string{"val": "'u'"}, "id IN (2, 12, 25)", nil); err != nil {
		t.Fatal(err)
	}
	r = idVal([]int64{3, 12, 40}, "m")
	d, _, err = d.MergeInsert(ctx, r, &dataset.MergeInsertOptions{On: []string{"id"}, WhenMatchedUpdateAll: true, WhenNotMatchedInsertAll: true})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id = 4 OR id = 25", nil); err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Update(ctx, map[string]string{"val": "'w'"}, "id = 3", nil); err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Compact(ctx, &dataset.CompactOptions{MaterializeDeletionsThreshold: 0.01}); err != nil {
		t.Fatal(err)
	}
	var versions []uint64
	for v := uint64(1); v <= d.Version(); v++ {
		versions = append(versions, v)
	}
	lancer := lancerLineage(t, uri, versions)
	sameLineage(t, "lancer's history", lanceLineage(t, node, ref, uri, versions), lancer)
	// lancer's lineage itself: id 12 created at 1, last updated by the
	// upsert (version 4); id 40 inserted at 4; id 3 last updated at 6.
	last := lancer[d.Version()]
	for id, want := range map[int64][2]uint64{0: {1, 1}, 12: {1, 4}, 40: {4, 4}, 3: {1, 6}, 20: {2, 2}} {
		if got := last[id]; got.created != want[0] || got.updated != want[1] {
			t.Errorf("lancer's lineage of id %d: %+v, want created %d, last updated %d", id, got, want[0], want[1])
		}
	}
}

// TestRowLineageOfMergesLanceReads: on a dataset with stable row ids lancer
// updates and appends rows on a branch and on main, merges the branch into
// main (rows updated on one side, on the other, and cell by cell on both),
// and real Lance reads, at every version of main, the lineage lancer reads.
func TestRowLineageOfMergesLanceReads(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	uri := filepath.Join(t.TempDir(), "lm.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	r := idVal(ids(0, 20), "v")
	_, err = dataset.Write(ctx, store, r, &dataset.WriteOptions{EnableStableRowIDs: true, MaxRowsPerFile: 8})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateBranch(ctx, store, "exp", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	open := func(b string) *dataset.Dataset {
		t.Helper()
		d, err := branch.Open(ctx, store, branch.Ref{Branch: b}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if _, _, err := open("exp").Update(ctx, map[string]string{"val": "'exp'"}, "id IN (5, 15)", nil); err != nil {
		t.Fatal(err)
	}
	r = idVal(ids(100, 104), "e")
	_, err = open("exp").Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := open("").Update(ctx, map[string]string{"val": "'main'"}, "id = 7", nil); err != nil {
		t.Fatal(err)
	}
	res, err := branch.Merge(ctx, store, branch.Ref{Branch: "exp"}, nil)
	if err != nil || res.FastForward {
		t.Fatalf("merge: %+v %v", res, err)
	}
	var versions []uint64
	for v := uint64(1); v <= res.Version; v++ {
		versions = append(versions, v)
	}
	lancer := lancerLineage(t, uri, versions)
	sameLineage(t, "lancer's merges", lanceLineage(t, node, ref, uri, versions), lancer)
	last := lancer[res.Version]
	for _, id := range []int64{5, 15, 7, 100} {
		if got := last[id]; got.updated <= 1 {
			t.Errorf("lineage of id %d after the merge: %+v, want it updated (or created) after version 1", id, got)
		}
	}
	if got := last[0]; got.created != 1 || got.updated != 1 {
		t.Errorf("lineage of id 0, changed nowhere: %+v", got)
	}
}
