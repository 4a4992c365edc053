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

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
)

// Maintenance of scalar and FTS indices across engines: lancer's
// OptimizeIndexes and compaction over indices either engine built, and
// real Lance's optimize (compaction, index update) over lancer's.

var docSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "cat", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

// docRow is row i of the document table: its values depend on i only,
// so a twin table holds the same rows.
func docRow(i int) (cat string, tags []string, text *string) {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	cat = fmt.Sprintf("c%d", i%8)
	tags = []string{fmt.Sprintf("t%d", i%5), fmt.Sprintf("u%d", i%3)}
	if i%41 != 9 {
		s := ftsLongText(rng)
		text = &s
	}
	return cat, tags, text
}

// docRows returns rows ids of the document table.
func docRows(mem memory.Allocator, ids []int) array.RecordReader {
	b := array.NewRecordBuilder(mem, docSchema)
	defer b.Release()
	for _, i := range ids {
		cat, tags, text := docRow(i)
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(cat)
		lb := b.Field(2).(*array.ListBuilder)
		lb.Append(true)
		for _, tag := range tags {
			lb.ValueBuilder().(*array.StringBuilder).Append(tag)
		}
		if text == nil {
			b.Field(3).AppendNull()
		} else {
			b.Field(3).(*array.StringBuilder).Append(*text)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rr, err := array.NewRecordReader(docSchema, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err)
	}
	return rr
}

// docJSON returns rows ids as the rows lance-ops.mjs appends.
func docJSON(ids []int) []map[string]any {
	var rows []map[string]any
	for _, i := range ids {
		cat, tags, text := docRow(i)
		row := map[string]any{"id": i, "cat": cat, "tags": tags, "text": nil}
		if text != nil {
			row["text"] = *text
		}
		rows = append(rows, row)
	}
	return rows
}

func idRange(from, to int) []int {
	var ids []int
	for i := from; i < to; i++ {
		ids = append(ids, i)
	}
	return ids
}

// ftsIDHit is a full-text hit Lance returns with the id column.
type ftsIDHit struct {
	ID    int64   `json:"id"`
	RowID uint64  `json:"_rowid"`
	Score float32 `json:"_score"`
}

func parseIDHits(t *testing.T, r maintReply) []ftsIDHit {
	t.Helper()
	hits := make([]ftsIDHit, len(r.Rows))
	for i, raw := range r.Rows {
		if err := json.Unmarshal(raw, &hits[i]); err != nil {
			t.Fatal(err)
		}
	}
	return hits
}

// sameIDHits compares hits of two tables by id and score (ties at the
// cut may differ), through sameFTS.
func sameIDHits(got, want []ftsIDHit) bool {
	g := make([]dataset.FTSHit, len(got))
	w := make([]ftsHit, len(want))
	for i, h := range got {
		g[i] = dataset.FTSHit{RowID: uint64(h.ID), Score: h.Score}
	}
	for i, h := range want {
		w[i] = ftsHit{RowID: uint64(h.ID), Score: h.Score}
	}
	return sameFTS(g, w)
}

// asLanceHits turns Lance's hits into the form sameFTS compares lancer's
// against (by row id).
func asLanceHits(h []ftsIDHit) []ftsHit {
	out := make([]ftsHit, len(h))
	for i := range h {
		out[i] = ftsHit{RowID: h[i].RowID, Score: h[i].Score}
	}
	return out
}

var rebuildQueries = []string{"apple", "Banana cherry", "zucchini yam xigua", "cafe", "NAIVE uber", "the apple of", "quince"}

// ftsAskAll asks Lance each of rebuildQueries on uri (k 30, the id
// column) and returns the hits.
func ftsAskAll(t *testing.T, node, ref, uri string) [][]ftsIDHit {
	t.Helper()
	var reqs []maintRequest
	for _, q := range rebuildQueries {
		reqs = append(reqs, maintRequest{vecRequest: vecRequest{URI: uri, Op: "ftsSearch", Column: "text", K: 30, Select: []string{"id"}}, Text: q})
	}
	var out [][]ftsIDHit
	for i, r := range maintAsk(t, node, ref, reqs...) {
		h := parseIDHits(t, r)
		if len(h) == 0 {
			t.Fatalf("%q: Lance finds nothing on %s", rebuildQueries[i], uri)
		}
		out = append(out, h)
	}
	return out
}

// TestLancerOptimizesFTSIndices: an FTS index (built by lancer, or by real
// Lance, with and without positions) over 900 rows of a lancer table;
// lancer appends 300 rows and OptimizeIndexes replaces the index by one
// segment over both fragments, with the old index's analyzer. Real Lance
// counts no unindexed row, and its fullTextSearch on the optimized index
// returns the rows and scores it returns on a twin table (the same rows,
// the same fragments) whose index it built over all 1200 rows; lancer's
// FullTextSearch returns them too, and the appended rows are found through
// the index.
func TestLancerOptimizesFTSIndices(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, builder := range []string{"lancer", "lance"} {
		for _, withPos := range []bool{false, true} {
			t.Run(fmt.Sprintf("built_by=%s/positions=%v", builder, withPos), func(t *testing.T) {
				mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
				defer mem.AssertSize(t, 0)
				co := dataset.CommitOptions{Allocator: mem}
				dir := t.TempDir()
				uri, twinURI := filepath.Join(dir, "t.lance"), filepath.Join(dir, "twin.lance")
				write := func(uri string) *dataset.Dataset {
					store, err := blob.NewLocalStore(uri)
					if err != nil {
						t.Fatal(err)
					}
					r := docRows(mem, idRange(0, 900))
					defer r.Release()
					d, err := dataset.Write(ctx, store, r, &dataset.WriteOptions{CommitOptions: co})
					if err != nil {
						t.Fatal(err)
					}
					return d
				}
				appendRows := func(d *dataset.Dataset, ids []int) *dataset.Dataset {
					r := docRows(mem, ids)
					defer r.Release()
					d, err := d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: co})
					if err != nil {
						t.Fatal(err)
					}
					return d
				}
				d := write(uri)
				lanceOpts := map[string]any{"withPosition": withPos}
				if builder == "lancer" {
					params := ftsindex.DefaultParams()
					params.WithPosition = withPos
					if _, err := d.CreateIndex(ctx, "text", &dataset.CreateIndexOptions{Type: dataset.IndexFTS, FTS: &params, CommitOptions: co}); err != nil {
						t.Fatal(err)
					}
				} else {
					maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "text", Type: "fts"}, IndexOptions: lanceOpts})
				}
				d, err := openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
				if err != nil {
					t.Fatal(err)
				}
				before := d.Indices()
				d = appendRows(d, idRange(900, 1200))
				if d, err = d.OptimizeIndexes(ctx, &dataset.OptimizeIndexesOptions{CommitOptions: co}); err != nil {
					t.Fatal(err)
				}
				after := d.Indices()
				if len(after) != 1 || len(before) != 1 || after[0].UUID == before[0].UUID || after[0].Name != before[0].Name ||
					len(after[0].Fragments) != 2 || after[0].Type != "Inverted" {
					t.Fatalf("after OptimizeIndexes: %+v (before %+v)", after, before)
				}
				if again, err := d.OptimizeIndexes(ctx, &dataset.OptimizeIndexesOptions{CommitOptions: co}); err != nil || again.Version() != d.Version() {
					t.Errorf("a second OptimizeIndexes: version %d (was %d), %v", again.Version(), d.Version(), err)
				}

				appendRows(write(twinURI), idRange(900, 1200))
				maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: twinURI, Op: "createIndex", Column: "text", Type: "fts"}, IndexOptions: lanceOpts})
				stats := maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: uri, Op: "indexStats"}, Name: after[0].Name})[0].Stats
				if stats == nil || stats.NumUnindexedRows != 0 || stats.NumIndices != 1 {
					t.Errorf("Lance's stats of the optimized index: %+v", stats)
				}
				onTable, onTwin := ftsAskAll(t, node, ref, uri), ftsAskAll(t, node, ref, twinURI)
				appendedFound := false
				for i, q := range rebuildQueries {
					if !sameIDHits(onTable[i], onTwin[i]) {
						t.Errorf("%q: Lance on the optimized index %v, on its own over every row %v", q, onTable[i], onTwin[i])
					}
					got, err := d.FullTextSearch(ctx, q, &dataset.FullTextSearchOptions{Column: "text", Limit: 30})
					if err != nil {
						t.Fatal(err)
					}
					if !sameFTS(got, asLanceHits(onTable[i])) {
						t.Errorf("%q: lancer on the optimized index %v, Lance %v", q, got, onTable[i])
					}
					for _, h := range onTable[i] {
						appendedFound = appendedFound || h.ID >= 900
					}
				}
				if !appendedFound {
					t.Error("no query found an appended row")
				}
				if missing := d.IndexMissingFragments(after[0].Name); len(missing) != 0 {
					t.Errorf("lancer searches fragments %v without the index", missing)
				}
			})
		}
	}
}

// TestScalarAndFTSIndicesAcrossCompaction: lancer builds BTREE (id),
// BITMAP (cat), LABEL_LIST (tags) and FTS (text, positions) indices over
// six fragments and deletes rows; lancer's compaction (no stable row ids:
// rows move) rewrites them into one fragment and rebuilds all four
// indices over it. Real Lance counts no unindexed row in any of them,
// plans its filters through them and returns lancer's rows, and its
// fullTextSearch returns on lancer's index the rows and scores it returns
// on a twin table of the live rows indexed by itself. Then lancer appends
// and OptimizeIndexes extends its indices, and Lance optimizes: its
// compaction merges the two fragments and remaps lancer's indices; lancer
// reads the indices Lance wrote, each covering every fragment, serves its
// filters through them with the rows of a scan without indices, and
// answers full-text queries as Lance does. The same after Lance appends
// and optimizes again (its index update of the indices it remapped).
func TestScalarAndFTSIndicesAcrossCompaction(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	co := dataset.CommitOptions{Allocator: mem}
	dir := t.TempDir()
	uri, twinURI := filepath.Join(dir, "t.lance"), filepath.Join(dir, "twin.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	r := docRows(mem, idRange(0, 3000))
	d, err := dataset.Write(ctx, store, r, &dataset.WriteOptions{MaxRowsPerFile: 500, CommitOptions: co})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	params := ftsindex.DefaultParams()
	params.WithPosition = true
	for _, ix := range []struct{ col, typ string }{{"id", dataset.IndexBTree}, {"cat", dataset.IndexBitmap}, {"tags", dataset.IndexLabelList}, {"text", dataset.IndexFTS}} {
		o := &dataset.CreateIndexOptions{Type: ix.typ, CommitOptions: co}
		if ix.typ == dataset.IndexFTS {
			o.FTS = &params
		}
		if d, err = d.CreateIndex(ctx, ix.col, o); err != nil {
			t.Fatalf("%s on %s: %v", ix.typ, ix.col, err)
		}
	}
	deleted := func(id int) bool { return id < 3000 && (id%7 == 3 || (id >= 1200 && id < 1300)) }
	if d, err = d.Delete(ctx, "id % 7 = 3 OR (id >= 1200 AND id < 1300)", &co); err != nil {
		t.Fatal(err)
	}
	d, stats, err := d.Compact(ctx, &dataset.CompactOptions{CommitOptions: co})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lancer's compaction: %+v", stats)
	if stats.FragmentsRemoved != 6 || stats.IndicesRemapped != 4 || stats.IndexMessage != "" {
		t.Fatalf("compaction %+v: want 6 fragments rewritten and the four indices remapped", stats)
	}
	for _, ix := range d.Indices() {
		if len(ix.Fragments) != len(d.Manifest().Fragments) {
			t.Errorf("after lancer's compaction %s covers %v of %d fragments", ix.Name, ix.Fragments, len(d.Manifest().Fragments))
		}
	}

	filters := []string{"id >= 1100 AND id < 1400", "id = 77", "cat = 'c3'", "cat IN ('c1', 'c6')", "array_has_any(tags, ['t2'])", "array_has_all(tags, ['t1', 'u2'])"}
	var reqs []maintRequest
	for _, f := range filters {
		reqs = append(reqs, maintRequest{vecRequest: vecRequest{URI: uri, Op: "query", Filter: f}},
			maintRequest{vecRequest: vecRequest{URI: uri, Op: "query", Filter: f}, Explain: true})
	}
	for _, name := range []string{"id_idx", "cat_idx", "tags_idx", "text_idx"} {
		reqs = append(reqs, maintRequest{vecRequest: vecRequest{URI: uri, Op: "indexStats"}, Name: name})
	}
	replies := maintAsk(t, node, ref, reqs...)
	compareFilters := func(stage string, d *dataset.Dataset, lance []maintReply) {
		t.Helper()
		for i, f := range filters {
			got, uses := scalarScan(t, d, f, dataset.ScanOptions{})
			plain, _ := scalarScan(t, d, f, dataset.ScanOptions{NoScalarIndex: true})
			slices.Sort(got)
			slices.Sort(plain)
			if !slices.Equal(got, plain) || len(uses) == 0 {
				t.Errorf("%s: %s: lancer with indices %d rows (indices %v), without %d", stage, f, len(got), uses, len(plain))
			}
			for _, id := range plain {
				if deleted(int(id)) {
					t.Fatalf("%s: %s: deleted row %d", stage, f, id)
				}
			}
			if lance == nil {
				continue
			}
			var ids []int64
			for _, raw := range lance[2*i].Rows {
				var row struct {
					ID int64 `json:"id"`
				}
				if err := json.Unmarshal(raw, &row); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, row.ID)
			}
			slices.Sort(ids)
			if !slices.Equal(ids, plain) {
				t.Errorf("%s: %s: Lance %d rows, lancer %d", stage, f, len(ids), len(plain))
			}
			if plan := lance[2*i+1].Plan; !strings.Contains(plan, "ScalarIndexQuery") {
				t.Errorf("%s: Lance's plan of %s uses no scalar index:\n%s", stage, f, plan)
			}
		}
	}
	compareFilters("after lancer's compaction", d, replies)
	for i, r := range replies[2*len(filters):] {
		if r.Stats == nil || r.Stats.NumUnindexedRows != 0 || r.Stats.NumIndices != 1 {
			t.Errorf("after lancer's compaction: Lance's stats of index %d: %+v", i, r.Stats)
		}
	}

	// Lance on lancer's remapped FTS index gives the rows and scores of
	// its own index over the live rows.
	var live []int
	for i := range 3000 {
		if !deleted(i) {
			live = append(live, i)
		}
	}
	twinStore, err := blob.NewLocalStore(twinURI)
	if err != nil {
		t.Fatal(err)
	}
	r = docRows(mem, live)
	_, err = dataset.Write(ctx, twinStore, r, &dataset.WriteOptions{CommitOptions: co})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: twinURI, Op: "createIndex", Column: "text", Type: "fts"}, IndexOptions: map[string]any{"withPosition": true}})
	compareFTS := func(stage string, d *dataset.Dataset, onTwin [][]ftsIDHit) {
		t.Helper()
		onTable := ftsAskAll(t, node, ref, uri)
		for i, q := range rebuildQueries {
			if onTwin != nil && !sameIDHits(onTable[i], onTwin[i]) {
				t.Errorf("%s: %q: Lance on lancer's index %v, on its own %v", stage, q, onTable[i], onTwin[i])
			}
			got, err := d.FullTextSearch(ctx, q, &dataset.FullTextSearchOptions{Column: "text", Limit: 30})
			if err != nil {
				t.Fatal(err)
			}
			if !sameFTS(got, asLanceHits(onTable[i])) {
				t.Errorf("%s: %q: lancer %v, Lance %v", stage, q, got, onTable[i])
			}
		}
	}
	compareFTS("after lancer's compaction", d, ftsAskAll(t, node, ref, twinURI))

	// lancer appends and extends its indices over the new fragment; Lance
	// optimizes: its compaction merges the two fragments, remapping
	// lancer's indices.
	r = docRows(mem, idRange(5000, 5400))
	d, err = d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: co})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.OptimizeIndexes(ctx, &dataset.OptimizeIndexesOptions{CommitOptions: co}); err != nil {
		t.Fatal(err)
	}
	lancerBuilt := map[string]string{}
	for _, ix := range d.Indices() {
		lancerBuilt[ix.Name] = ix.UUID
		if len(ix.Fragments) != 2 {
			t.Errorf("after lancer's OptimizeIndexes %s covers %v", ix.Name, ix.Fragments)
		}
	}
	maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: uri, Op: "optimize"}})
	lanceDid := func(stage string, fragments int) {
		t.Helper()
		if d, err = openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem}); err != nil {
			t.Fatal(err)
		}
		if n := len(d.Manifest().Fragments); n != fragments {
			t.Errorf("%s: %d fragments, want %d", stage, n, fragments)
		}
		for _, ix := range d.Indices() {
			t.Logf("%s: %s (%s) covers %v", stage, ix.Name, ix.Type, ix.Fragments)
			if len(ix.Fragments) != len(d.Manifest().Fragments) || ix.UUID == lancerBuilt[ix.Name] {
				t.Errorf("%s: %s (%s) covers %v of %d fragments", stage, ix.Name, ix.UUID, ix.Fragments, len(d.Manifest().Fragments))
			}
		}
	}
	lanceDid("after Lance's compaction", 1)
	filters = append(filters, "id >= 5100 AND id < 5150", "cat = 'c5' AND id > 4000")
	compareFilters("after Lance's compaction", d, nil)
	compareFTS("after Lance's compaction", d, nil)

	// Lance appends and updates the indices it remapped.
	maintAsk(t, node, ref,
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "append", Rows: docJSON(idRange(6000, 6300))}},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "optimize"}})
	lanceDid("after Lance's append and optimize", 2)
	filters = append(filters, "id >= 6100 AND id < 6120", "array_has_any(tags, ['u1']) AND id >= 6000")
	compareFilters("after Lance's append and optimize", d, nil)
	compareFTS("after Lance's append and optimize", d, nil)
}
