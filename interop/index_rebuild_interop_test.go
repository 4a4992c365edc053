package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
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
				if d, err = d.OptimizeIndexes(ctx, &co); err != nil {
					t.Fatal(err)
				}
				after := d.Indices()
				if len(after) != 1 || len(before) != 1 || after[0].UUID == before[0].UUID || after[0].Name != before[0].Name ||
					len(after[0].Fragments) != 2 || after[0].Type != "Inverted" {
					t.Fatalf("after OptimizeIndexes: %+v (before %+v)", after, before)
				}
				if again, err := d.OptimizeIndexes(ctx, &co); err != nil || again.Version() != d.Version() {
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
