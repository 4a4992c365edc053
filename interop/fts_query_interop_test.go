package interop_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

type ftsQueryRequest struct {
	vecRequest
	IndexOptions map[string]any  `json:"indexOptions,omitempty"`
	FTS          json.RawMessage `json:"fts,omitempty"`
}

// writeFTSTable writes n rows (id, text, title; some texts null) with
// lancer and has real Lance build FTS indices with positions (no
// stemming or stop words) on text and title.
func writeFTSTable(t *testing.T, node, ref, uri string, n int, rng *rand.Rand) {
	t.Helper()
	ctx := context.Background()
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "text", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "title", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%50 == 7 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(ftsText(rng))
		}
		w := ftsWords[rng.IntN(8)] + " " + ftsWords[rng.IntN(len(ftsWords))]
		b.Field(2).(*array.StringBuilder).Append(w)
	}
	rec := b.NewRecordBatch()
	b.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.Write(ctx, store, rr, nil); err != nil {
		t.Fatal(err)
	}
	rr.Release()
	rec.Release()
	opts := map[string]any{"withPosition": true, "stem": false, "removeStopWords": false, "asciiFolding": true, "lowercase": true}
	askFTS(t, node, ref,
		ftsQueryRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "text", Type: "fts"}, IndexOptions: opts},
		ftsQueryRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "title", Type: "fts"}, IndexOptions: opts})
}

func askFTS(t *testing.T, node, ref string, reqs ...ftsQueryRequest) []vecReply {
	t.Helper()
	replies, err := lancereftest.Ask[ftsQueryRequest, vecReply](script(node, ref), "lance-ops.mjs", reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range replies {
		if r.Error != "" {
			t.Fatalf("real Lance refused %s %s: %s", reqs[i].Op, reqs[i].FTS, r.Error)
		}
	}
	return replies
}

// structuredFTSQueries are Lance-JSON query trees over writeFTSTable's
// columns, each with a limit and optionally a filter.
var structuredFTSQueries = []struct {
	fts    string
	k      int
	filter string
}{
	{fts: `"apple"`, k: 20}, // no column: a multi-match over text and title
	{fts: `{"match":{"terms":"banana cherry","column":"text","boost":2.5}}`, k: 15},
	{fts: `{"match":{"terms":"banana cherry","column":"text","operator":"And"}}`, k: 10},
	{fts: `{"match":{"terms":"banana zzzz","column":"text","operator":"And"}}`, k: 10},
	{fts: `{"match":{"terms":"bananna","column":"text","fuzziness":1}}`, k: 10},
	{fts: `{"match":{"terms":"Cherri quinse","column":"text","fuzziness":2,"max_expansions":3}}`, k: 10},
	{fts: `{"match":{"terms":"mnago ellder","column":"text","fuzziness":2,"prefix_length":1}}`, k: 10},
	{fts: `{"match":{"terms":"grape","column":"text"}}`, k: 10, filter: "id % 3 = 1"},
	{fts: `{"phrase":{"terms":"apple banana","column":"text"}}`, k: 10},
	{fts: `{"phrase":{"terms":"cherry elder","column":"text","slop":2}}`, k: 10, filter: "id < 500"},
	{fts: `{"multi_match":{"query":"apple fig","columns":["text","title"],"boost":[1,3]}}`, k: 20},
	{fts: `{"multi_match":{"query":"date","columns":["title","text"]}}`, k: 10},
	{fts: `{"boost":{"positive":{"match":{"terms":"apple","column":"text"}},"negative":{"match":{"terms":"banana","column":"text"}},"negative_boost":0.3}}`, k: 15},
	{fts: `{"boost":{"positive":{"match":{"terms":"kiwi lemon","column":"text"}},"negative":{"match":{"terms":"apple","column":"title"}}}}`, k: 10},
	{fts: `{"boolean":{"must":[{"match":{"terms":"apple","column":"text"}},{"match":{"terms":"banana","column":"text"}}],"should":[],"must_not":[]}}`, k: 10},
	{fts: `{"boolean":{"must":[{"match":{"terms":"apple","column":"text"}}],"should":[{"match":{"terms":"cherry","column":"text"}},{"match":{"terms":"fig","column":"title"}}],"must_not":[{"match":{"terms":"banana","column":"text"}}]}}`, k: 25},
	{fts: `{"boolean":{"should":[{"phrase":{"terms":"apple apple","column":"text"}},{"match":{"terms":"date","column":"title"}}],"must":[],"must_not":[{"match":{"terms":"cherry","column":"text"}}]}}`, k: 25, filter: "id > 100"},
	{fts: `{"boolean":{"should":[{"boolean":{"must":[{"match":{"terms":"elder","column":"text"}}],"should":[],"must_not":[]}},{"boost":{"positive":{"match":{"terms":"grape","column":"text"}},"negative":{"match":{"terms":"fig","column":"text"}}}}],"must":[],"must_not":[]}}`, k: 10},
}

// TestLancerStructuredFTS: real Lance builds FTS indices on a table
// lancer wrote; lancer's FullTextQuery answers match (boost, AND, fuzzy
// with max_expansions and prefix_length), phrase, multi-match, boost and
// nested boolean queries, with prefilters and limits, with Lance's rows
// and _score values: on the indexed table, then after Lance appends an
// unindexed fragment and deletes rows.
func TestLancerStructuredFTS(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 17))
	uri := filepath.Join(t.TempDir(), "s.lance")
	writeFTSTable(t, node, ref, uri, 900, rng)
	compare := func(stage string) {
		t.Helper()
		var reqs []ftsQueryRequest
		for _, q := range structuredFTSQueries {
			reqs = append(reqs, ftsQueryRequest{vecRequest: vecRequest{URI: uri, Op: "ftsQuery", K: q.k, Filter: q.filter, Select: []string{"id"}}, FTS: json.RawMessage(q.fts)})
		}
		replies := askFTS(t, node, ref, reqs...)
		d, err := openDir(ctx, uri, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range structuredFTSQueries {
			want := make([]ftsHit, len(replies[i].Rows))
			for j, raw := range replies[i].Rows {
				if err := json.Unmarshal(raw, &want[j]); err != nil {
					t.Fatal(err)
				}
			}
			var tree *ftsindex.FTSQuery
			var text string
			if json.Unmarshal([]byte(q.fts), &text) == nil {
				tree = &ftsindex.FTSQuery{Match: &ftsindex.MatchQuery{Terms: text}}
			} else if tree, err = ftsindex.ParseQuery([]byte(q.fts)); err != nil {
				t.Fatalf("%s: %v", q.fts, err)
			}
			got, err := d.FullTextQuery(ctx, tree, &dataset.FullTextQueryOptions{Limit: q.k, Filter: q.filter})
			if err != nil {
				t.Fatalf("%s: %s: %v", stage, q.fts, err)
			}
			if !sameFTS(got, want) {
				t.Errorf("%s: %s:\nlancer %v\nLance  %v", stage, q.fts, got, want)
			}
		}
	}
	compare("indexed")
	var rows []map[string]any
	for i := 900; i < 980; i++ {
		rows = append(rows, map[string]any{"id": i, "text": ftsText(rng), "title": ftsWords[rng.IntN(8)]})
	}
	askFTS(t, node, ref, ftsQueryRequest{vecRequest: vecRequest{URI: uri, Op: "append", Rows: rows}},
		ftsQueryRequest{vecRequest: vecRequest{URI: uri, Op: "delete", Filter: "id % 11 = 4"}})
	compare("appended and deleted")
}

// TestLancerHybridSearchRRF: lancer's HybridSearch with reciprocal-rank
// fusion returns the rows and _relevance_score of LanceDB's hybrid search
// (its default RRFReranker) on the same table: real Lance builds the FTS
// index on a table lancer wrote, whose texts have distinct BM25 scores
// and whose vectors distinct distances, so that both engines rank the
// two lists alike.
func TestLancerHybridSearchRRF(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(8, 1))
	const n, dim = 300, 4
	uri := filepath.Join(t.TempDir(), "h.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "note", Type: arrow.BinaryTypes.String},
		{Name: "vec", Type: arrow.FixedSizeListOf(dim, arrow.PrimitiveTypes.Float32)},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		note := "filler"
		if i%3 == 0 { // apple in a third of the rows, each a different length
			note = "apple" + strings.Repeat(" filler", i/3)
		}
		b.Field(1).(*array.StringBuilder).Append(note)
		vb := b.Field(2).(*array.FixedSizeListBuilder)
		vb.Append(true)
		for range dim {
			vb.ValueBuilder().(*array.Float32Builder).Append(rng.Float32())
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dataset.Write(ctx, store, rr, nil); err != nil {
		t.Fatal(err)
	}
	rr.Release()
	rec.Release()
	askFTS(t, node, ref, ftsQueryRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "note", Type: "fts"},
		IndexOptions: map[string]any{"withPosition": false, "stem": false, "removeStopWords": false, "lowercase": true}})
	fts := `{"match":{"terms":"apple","column":"note"}}`
	tree, err := ftsindex.ParseQuery([]byte(fts))
	if err != nil {
		t.Fatal(err)
	}
	d, err := openDir(ctx, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		k      int
		filter string
	}{{10, ""}, {25, ""}, {8, "id % 2 = 0"}} {
		q := []float32{rng.Float32(), rng.Float32(), rng.Float32(), rng.Float32()}
		replies := askFTS(t, node, ref, ftsQueryRequest{vecRequest: vecRequest{URI: uri, Op: "hybridSearch", Column: "vec", Vector: q,
			K: tc.k, Filter: tc.filter, Select: []string{"id"}}, FTS: json.RawMessage(fts)})
		var want []ftsHit
		for _, raw := range replies[0].Rows {
			var r struct {
				RowID     uint64  `json:"_rowid"`
				Relevance float32 `json:"_relevance_score"`
			}
			if err := json.Unmarshal(raw, &r); err != nil {
				t.Fatal(err)
			}
			want = append(want, ftsHit{RowID: r.RowID, Score: r.Relevance})
		}
		hits, err := d.HybridSearch(ctx, &dataset.HybridSearchOptions{Text: tree, Vector: q, VectorColumn: "vec", Limit: tc.k, Filter: tc.filter,
			Search: dataset.SearchOptions{Exact: true}})
		if err != nil {
			t.Fatal(err)
		}
		got := make([]dataset.FTSHit, len(hits))
		for i, h := range hits {
			got[i] = dataset.FTSHit{RowID: h.RowID, Score: h.Relevance}
		}
		if len(got) == 0 || !sameFTS(got, want) {
			t.Errorf("k=%d filter %q:\nlancer %v\nLance  %v", tc.k, tc.filter, got, want)
		}
	}
}
