package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// lancerScalarRequest is a request of lance-ops.mjs with the fields the
// scalar index tests use.
type lancerScalarRequest struct {
	URI     string `json:"uri"`
	Op      string `json:"op"`
	Filter  string `json:"filter,omitempty"`
	Explain bool   `json:"explain,omitempty"`
	Rows    []any  `json:"rows,omitempty"`
}

type lancerScalarReply struct {
	Rows    []json.RawMessage `json:"rows"`
	Plan    string            `json:"plan"`
	Error   string            `json:"error"`
	Indices []struct {
		Name      string   `json:"name"`
		IndexType string   `json:"indexType"`
		Columns   []string `json:"columns"`
		Stats     struct {
			Indexed   int    `json:"numIndexedRows"`
			Unindexed int    `json:"numUnindexedRows"`
			Type      string `json:"indexType"`
		} `json:"stats"`
		StatsError string `json:"statsError"`
	} `json:"indices"`
}

// lanceIDs returns the id column of a reply's rows, sorted.
func lanceIDs(t *testing.T, rows []json.RawMessage) []int64 {
	t.Helper()
	var ids []int64
	for _, raw := range rows {
		var row struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(raw, &row); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.ID)
	}
	slices.Sort(ids)
	return ids
}

// TestLanceUsesLancerScalarIndices: lancer builds BTREE (ints, floats,
// strings, dates, timestamps), BITMAP (strings, uint8) and LABEL_LIST
// (list<utf8>) indices on a table of two fragments, with and without
// stable row ids, then appends an unindexed fragment and deletes rows.
// Real Lance lists every index under its type with the rows it covers,
// plans its filtered queries through the scalar index, and returns for
// random predicates the rows lancer's scans without indices return. Then
// real Lance appends rows and optimizes (updating lancer's indices from
// their files), and lancer's index-served scans still equal its plain
// ones; lancer's OptimizeIndexes then covers every fragment, and Lance's
// answers still agree.
func TestLanceUsesLancerScalarIndices(t *testing.T) {
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable_row_ids=%v", stable), func(t *testing.T) { testLanceUsesLancerScalarIndices(t, stable) })
	}
}

func testLanceUsesLancerScalarIndices(t *testing.T, stable bool) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	uri := filepath.Join(t.TempDir(), "s.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	co := dataset.CommitOptions{Allocator: mem}
	r := scalarBatch(mem, 0, 12000)
	d, err := dataset.Write(ctx, store, r, &dataset.WriteOptions{MaxRowsPerFile: 6000, EnableStableRowIDs: stable, CommitOptions: co})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	indices := []struct{ col, typ, lance string }{
		{"id", dataset.IndexBTree, "BTree"}, {"i32", dataset.IndexBTree, "BTree"}, {"f64", dataset.IndexBTree, "BTree"},
		{"s", dataset.IndexBTree, "BTree"}, {"d", dataset.IndexBTree, "BTree"}, {"ts", dataset.IndexBTree, "BTree"},
		{"cat", dataset.IndexBitmap, "Bitmap"}, {"u8", dataset.IndexBitmap, "Bitmap"}, {"tags", dataset.IndexLabelList, "LabelList"},
	}
	for _, ix := range indices {
		if d, err = d.CreateIndex(ctx, ix.col, &dataset.CreateIndexOptions{Type: ix.typ, CommitOptions: co}); err != nil {
			t.Fatalf("%s on %s: %v", ix.typ, ix.col, err)
		}
	}
	r = scalarBatch(mem, 12000, 13500)
	d, err = d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: co})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id % 37 = 3 OR (id >= 100 AND id < 160)", &co); err != nil {
		t.Fatal(err)
	}
	ask := func(reqs ...lancerScalarRequest) []lancerScalarReply {
		t.Helper()
		replies, err := lancereftest.Ask[lancerScalarRequest, lancerScalarReply](script(node, ref), "lance-ops.mjs", reqs)
		if err != nil {
			t.Fatal(err)
		}
		return replies
	}
	live, _ := d.CountRows(ctx)
	appended, _ := d.Count(ctx, "id >= 12000")
	list := ask(lancerScalarRequest{URI: uri, Op: "listIndices"})[0]
	if list.Error != "" {
		t.Fatalf("real Lance lists the indices: %s", list.Error)
	}
	for _, want := range indices {
		found := false
		for _, ix := range list.Indices {
			if ix.Name != want.col+"_idx" {
				continue
			}
			found = true
			if ix.IndexType != want.lance || !slices.Equal(ix.Columns, []string{want.col}) || ix.StatsError != "" {
				t.Errorf("Lance lists %s as %s on %v (stats error %q), want %s on %s", ix.Name, ix.IndexType, ix.Columns, ix.StatsError, want.lance, want.col)
			}
			// The indexed fragments lost the deleted rows: Lance counts
			// the live ones.
			if ix.Stats.Indexed+ix.Stats.Unindexed != int(live) || ix.Stats.Unindexed != int(appended) {
				t.Errorf("Lance's stats of %s: %d indexed, %d unindexed; %d live rows, %d appended", ix.Name, ix.Stats.Indexed, ix.Stats.Unindexed, live, appended)
			}
		}
		if !found {
			t.Errorf("Lance does not list %s_idx: %+v", want.col, list.Indices)
		}
	}

	// Lance plans filters on each indexed column through its index.
	plans := []struct{ filter, index string }{
		{"id = 77", "id_idx"}, {"i32 < -20", "i32_idx"}, {"s = 's042'", "s_idx"}, {"d > DATE '2021-01-01'", "d_idx"},
		{"cat = 'c3'", "cat_idx"}, {"u8 = 50", "u8_idx"}, {"array_has_any(tags, ['t3'])", "tags_idx"},
		{"ts < TIMESTAMP '2020-09-20 00:00:00'", "ts_idx"}, {"f64 > 3.5", "f64_idx"},
	}
	var reqs []lancerScalarRequest
	for _, p := range plans {
		reqs = append(reqs, lancerScalarRequest{URI: uri, Op: "query", Filter: p.filter, Explain: true})
	}
	for i, rep := range ask(reqs...) {
		if rep.Error != "" {
			t.Errorf("%s: real Lance's plan: %s", plans[i].filter, rep.Error)
			continue
		}
		if !strings.Contains(rep.Plan, "ScalarIndexQuery") || !strings.Contains(rep.Plan, plans[i].index) {
			t.Errorf("%s: real Lance's plan does not use %s:\n%s", plans[i].filter, plans[i].index, rep.Plan)
		}
		if i == 0 {
			t.Logf("Lance's plan of %s:\n%s", plans[i].filter, rep.Plan)
		}
	}

	compare := func(stage string, n int, seed uint64) {
		t.Helper()
		rng := rand.New(rand.NewPCG(seed, 18))
		var preds []string
		var wants [][]int64
		for len(preds) < n {
			pred, safe := randomPredicate(rng)
			if !safe {
				continue
			}
			got, _ := scalarScan(t, d, pred, dataset.ScanOptions{})
			want, _ := scalarScan(t, d, pred, dataset.ScanOptions{NoScalarIndex: true})
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s: lancer with indices %d rows, without %d", stage, pred, len(got), len(want))
			}
			preds = append(preds, pred)
			wants = append(wants, slices.Sorted(slices.Values(want)))
		}
		reqs := make([]lancerScalarRequest, len(preds))
		for i, p := range preds {
			reqs[i] = lancerScalarRequest{URI: uri, Op: "query", Filter: p}
		}
		for i, rep := range ask(reqs...) {
			if rep.Error != "" {
				t.Errorf("%s: %s: real Lance: %s", stage, preds[i], rep.Error)
				continue
			}
			if got := lanceIDs(t, rep.Rows); !slices.Equal(got, wants[i]) {
				t.Errorf("%s: %s: real Lance %d rows, lancer %d\n Lance:  %v\n lancer: %v", stage, preds[i], len(got), len(wants[i]), head(got), head(wants[i]))
			}
		}
	}
	compare("lancer's indices", 80, 1)

	// Lance appends (no dates or timestamps: NULL) and updates lancer's
	// indices with the new fragment.
	var rows []any
	for i := 20000; i < 20300; i++ {
		rows = append(rows, map[string]any{"id": i, "i32": i%40 - 20, "f64": float64(i%17) / 2, "s": fmt.Sprintf("s%03d", i%300),
			"cat": fmt.Sprintf("c%d", i%8), "u8": (i % 6) * 50, "tags": []string{fmt.Sprintf("t%d", i%10)}, "v": i % 100})
	}
	for i, rep := range ask(lancerScalarRequest{URI: uri, Op: "append", Rows: rows}, lancerScalarRequest{URI: uri, Op: "optimize"}) {
		if rep.Error != "" {
			t.Fatalf("real Lance's step %d: %s", i, rep.Error)
		}
	}
	if d, err = openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem}); err != nil {
		t.Fatal(err)
	}
	for _, ix := range d.Indices() {
		t.Logf("after Lance's optimize: %s (%s) covers %v", ix.Name, ix.Type, ix.Fragments)
	}
	compare("Lance's optimized indices", 40, 2)

	// lancer optimizes what Lance left and Lance still agrees.
	r = scalarBatch(mem, 30000, 30500)
	d, err = d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: co})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.OptimizeIndexes(ctx, &dataset.OptimizeIndexesOptions{CommitOptions: co}); err != nil {
		t.Fatal(err)
	}
	for _, ix := range d.Indices() {
		if strings.HasSuffix(ix.Name, "_idx") && len(ix.Fragments) != len(d.Manifest().Fragments) {
			t.Errorf("after lancer's optimize %s covers %v of %d fragments", ix.Name, ix.Fragments, len(d.Manifest().Fragments))
		}
	}
	compare("lancer's optimized indices", 40, 3)
}
