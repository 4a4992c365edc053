package interop_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
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

type ftsRequest struct {
	vecRequest
	IndexOptions map[string]any `json:"indexOptions,omitempty"`
	Text         string         `json:"text,omitempty"`
	Operator     string         `json:"operator,omitempty"`
	Phrase       bool           `json:"phrase,omitempty"`
	Slop         int            `json:"slop,omitempty"`
}

type ftsHit struct {
	RowID uint64  `json:"_rowid"`
	Score float32 `json:"_score"`
}

var ftsWords = strings.Fields("apple Banana cherry date elder fig grape honeydew kiwi lemon mango nectarine olive peach quince raspberry strawberry tangerine ugli vanilla watermelon xigua yam zucchini café naïve Über")

func ftsText(rng *rand.Rand) string {
	n := 1 + rng.IntN(12)
	w := make([]string, n)
	for i := range w {
		// a skewed vocabulary, so that idf varies
		w[i] = ftsWords[min(rng.IntN(len(ftsWords)), rng.IntN(len(ftsWords)))]
	}
	return strings.Join(w, " ")
}

// TestLancerSearchesLanceFTS: real Lance builds an FTS index (positions,
// no stemming or stop words) on a table lancer wrote; lancer's
// FullTextSearch returns Lance's rows with Lance's scores for match (OR,
// AND) and phrase queries, before and after Lance appends an unindexed
// fragment and deletes rows.
func TestLancerSearchesLanceFTS(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 23))
	const n, extra = 800, 80
	uri := filepath.Join(t.TempDir(), "f.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "text", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if i%50 == 7 {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(ftsText(rng))
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
	ask := func(reqs ...ftsRequest) []vecReply {
		t.Helper()
		replies, err := lancereftest.Ask[ftsRequest, vecReply](script(node, ref), "lance-ops.mjs", reqs)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range replies {
			if r.Error != "" {
				t.Fatalf("real Lance refused %s: %s", reqs[i].Op, r.Error)
			}
		}
		return replies
	}
	ask(ftsRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "text", Type: "fts"},
		IndexOptions: map[string]any{"withPosition": true, "stem": false, "removeStopWords": false, "asciiFolding": true, "lowercase": true}})
	type query struct {
		text, op string
		phrase   bool
		slop, k  int
	}
	queries := []query{
		{text: "apple", k: 10}, {text: "Banana cherry", k: 10}, {text: "zucchini yam xigua", k: 20},
		{text: "cafe", k: 10}, {text: "NAIVE uber", k: 10}, {text: "apple apple banana", k: 15},
		{text: "banana cherry", op: "AND", k: 10}, {text: "apple banana", phrase: true, k: 10},
		{text: "cherry date elder", phrase: true, slop: 1, k: 10}, {text: "quince", k: 1000},
	}
	compare := func(stage string) {
		t.Helper()
		var reqs []ftsRequest
		for _, q := range queries {
			reqs = append(reqs, ftsRequest{vecRequest: vecRequest{URI: uri, Op: "ftsSearch", Column: "text", K: q.k, Select: []string{"id"}},
				Text: q.text, Operator: q.op, Phrase: q.phrase, Slop: q.slop})
		}
		replies := ask(reqs...)
		d, err := openDir(ctx, uri, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range queries {
			want := make([]ftsHit, len(replies[i].Rows))
			for j, raw := range replies[i].Rows {
				if err := json.Unmarshal(raw, &want[j]); err != nil {
					t.Fatal(err)
				}
			}
			o := &dataset.FullTextSearchOptions{Column: "text", Limit: q.k, Phrase: q.phrase, Slop: q.slop}
			if q.op == "AND" {
				o.Operator = ftsindex.And
			}
			got, err := d.FullTextSearch(ctx, q.text, o)
			if err != nil {
				t.Fatalf("%s: %q: %v", stage, q.text, err)
			}
			if !sameFTS(got, want) {
				t.Errorf("%s: %q: lancer %v, Lance %v", stage, q.text, got, want)
			}
		}
	}
	compare("indexed")
	var rows []map[string]any
	for i := n; i < n+extra; i++ {
		rows = append(rows, map[string]any{"id": i, "text": ftsText(rng)})
	}
	ask(ftsRequest{vecRequest: vecRequest{URI: uri, Op: "append", Rows: rows}},
		ftsRequest{vecRequest: vecRequest{URI: uri, Op: "delete", Filter: "id % 7 = 3"}})
	compare("appended and deleted")
}

// sameFTS: the same scores in order (to f32 rounding) and the same rows per
// score, except at the last score, where Lance's cut among ties is
// arbitrary.
func sameFTS(got []dataset.FTSHit, want []ftsHit) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if math.Abs(float64(got[i].Score-want[i].Score)) > 1e-5*math.Max(1, math.Abs(float64(want[i].Score))) {
			return false
		}
	}
	if len(want) == 0 {
		return true
	}
	last := want[len(want)-1].Score
	var g, w []uint64
	for i := range got {
		if math.Abs(float64(want[i].Score-last)) > 1e-5*math.Max(1, math.Abs(float64(last))) {
			g, w = append(g, got[i].RowID), append(w, want[i].RowID)
		}
	}
	sort.Slice(g, func(i, j int) bool { return g[i] < g[j] })
	sort.Slice(w, func(i, j int) bool { return w[i] < w[j] })
	for i := range g {
		if g[i] != w[i] {
			return false
		}
	}
	return true
}
