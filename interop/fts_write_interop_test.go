package interop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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

// ftsLongText is a document of 1..60 words of a skewed vocabulary, some
// repeated, so that posting lists span several blocks and documents'
// lengths and frequencies vary.
func ftsLongText(rng *rand.Rand) string {
	n := 1 + rng.IntN(60)
	w := make([]string, n)
	for i := range w {
		w[i] = ftsWords[min(rng.IntN(len(ftsWords)), rng.IntN(len(ftsWords)), rng.IntN(len(ftsWords)))]
		if rng.IntN(9) == 0 {
			w[i] = strings.ToUpper(w[i]) + "s"
		}
	}
	return strings.Join(w, " ")
}

func writeTextTable(t *testing.T, uri string, texts []*string) blob.Store {
	t.Helper()
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}, {Name: "text", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	for i, s := range texts {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		if s == nil {
			b.Field(1).AppendNull()
		} else {
			b.Field(1).(*array.StringBuilder).Append(*s)
		}
	}
	rec := b.NewRecordBatch()
	b.Release()
	defer rec.Release()
	rr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Release()
	if _, err := dataset.Write(context.Background(), store, rr, nil); err != nil {
		t.Fatal(err)
	}
	return store
}

// TestLanceSearchesLancerFTS: lancer and real Lance each build an FTS
// index (Lance's defaults, with and without positions) on the same
// table; real Lance's fullTextSearch answers match, AND and phrase
// queries on lancer's index with the rows and scores it gives on its own,
// lancer answers them the same on its index, and the two indices hold
// the same documents and the same posting lists, block for block. Built
// with a small FTSPartitionBytes, lancer's index has several partitions
// and both engines still give Lance's rows and scores.
func TestLanceSearchesLancerFTS(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	for _, tc := range []struct {
		withPos bool
		// partitionBytes > 0 makes lancer spill several partitions (its
		// bounded-memory build); Lance then sums their statistics, so
		// rows and scores still match Lance's one-partition index.
		partitionBytes int
	}{{false, 0}, {true, 0}, {false, 16 << 10}, {true, 16 << 10}} {
		withPos := tc.withPos
		t.Run(fmt.Sprintf("positions=%v/partitionBytes=%d", withPos, tc.partitionBytes), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 9))
			const n = 900
			texts := make([]*string, n)
			for i := range texts {
				if i%53 != 4 {
					s := ftsLongText(rng)
					texts[i] = &s
				}
			}
			dir := t.TempDir()
			lanceURI, lancerURI := filepath.Join(dir, "lance.lance"), filepath.Join(dir, "lancer.lance")
			lanceStore := writeTextTable(t, lanceURI, texts)
			lancerStore := writeTextTable(t, lancerURI, texts)
			params := ftsindex.DefaultParams()
			params.WithPosition = withPos
			d, err := openDir(ctx, lancerURI, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.CreateIndex(ctx, "text", &dataset.CreateIndexOptions{Type: "fts", FTS: &params, FTSPartitionBytes: tc.partitionBytes}); err != nil {
				t.Fatal(err)
			}
			if tc.partitionBytes > 0 {
				if parts := ftsPartitions(t, lancerURI, lancerStore); parts < 2 {
					t.Fatalf("lancer wrote %d partitions with PartitionBytes %d, want several", parts, tc.partitionBytes)
				} else {
					t.Logf("lancer's index: %d partitions", parts)
				}
			}
			ask := func(reqs ...ftsRequest) []vecReply {
				t.Helper()
				replies, err := lancereftest.Ask[ftsRequest, vecReply](script(node, ref), "lance-ops.mjs", reqs)
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
			ask(ftsRequest{vecRequest: vecRequest{URI: lanceURI, Op: "createIndex", Column: "text", Type: "fts"},
				IndexOptions: map[string]any{"withPosition": withPos}})
			if tc.partitionBytes == 0 {
				compareFTSFiles(t, lanceURI, lancerURI, lanceStore, lancerStore)
			}

			type query struct {
				text, op string
				phrase   bool
				slop, k  int
			}
			queries := []query{
				{text: "apple", k: 10}, {text: "Banana cherry", k: 10}, {text: "zucchini yam xigua", k: 20},
				{text: "cafe", k: 10}, {text: "NAIVE uber", k: 30}, {text: "apples apple banana", k: 15},
				{text: "banana cherry", op: "AND", k: 10}, {text: "quince", k: 1000}, {text: "the apple of", k: 50},
			}
			if withPos {
				queries = append(queries, query{text: "apple banana", phrase: true, k: 10}, query{text: "apple apple", phrase: true, k: 100},
					query{text: "cherry date elder", phrase: true, slop: 2, k: 10})
			}
			var reqs []ftsRequest
			for _, uri := range []string{lanceURI, lancerURI} {
				for _, q := range queries {
					reqs = append(reqs, ftsRequest{vecRequest: vecRequest{URI: uri, Op: "ftsSearch", Column: "text", K: q.k, Select: []string{"id"}},
						Text: q.text, Operator: q.op, Phrase: q.phrase, Slop: q.slop})
				}
			}
			replies := ask(reqs...)
			d, err = openDir(ctx, lancerURI, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, q := range queries {
				parse := func(r vecReply) []ftsHit {
					hits := make([]ftsHit, len(r.Rows))
					for j, raw := range r.Rows {
						if err := json.Unmarshal(raw, &hits[j]); err != nil {
							t.Fatal(err)
						}
					}
					return hits
				}
				onLance, onLancer := parse(replies[i]), parse(replies[len(queries)+i])
				if len(onLance) == 0 {
					t.Errorf("%q: Lance finds nothing on its own index", q.text)
				}
				asHits := func(h []ftsHit) []dataset.FTSHit {
					out := make([]dataset.FTSHit, len(h))
					for j := range h {
						out[j] = dataset.FTSHit{RowID: h[j].RowID, Score: h[j].Score}
					}
					return out
				}
				if !sameFTS(asHits(onLancer), onLance) {
					t.Errorf("%q: Lance on lancer's index %v, on its own %v", q.text, onLancer, onLance)
				}
				o := &dataset.FullTextSearchOptions{Column: "text", Limit: q.k, Phrase: q.phrase, Slop: q.slop}
				if q.op == "AND" {
					o.Operator = ftsindex.And
				}
				got, err := d.FullTextSearch(ctx, q.text, o)
				if err != nil {
					t.Fatalf("%q: %v", q.text, err)
				}
				if !sameFTS(got, onLance) {
					t.Errorf("%q: lancer on its index %v, Lance on its own %v", q.text, got, onLance)
				}
			}
		})
	}
}

// ftsPartitions is the number of partitions of the dataset's FTS index.
func ftsPartitions(t *testing.T, uri string, st blob.Store) int {
	t.Helper()
	ctx := context.Background()
	d, err := openDir(ctx, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range d.Indices() {
		if info.Type == "Inverted" {
			ix, err := ftsindex.Open(ctx, st, "_indices/"+info.UUID, nil)
			if err != nil {
				t.Fatal(err)
			}
			return ix.NumPartitions()
		}
	}
	t.Fatal("no FTS index")
	return 0
}

// compareFTSFiles checks that the two datasets' single FTS indices hold
// the same documents (row id and token count, in order) and, token by
// token, the same posting blocks, maximum score, impacts and positions.
func compareFTSFiles(t *testing.T, lanceURI, lancerURI string, lanceStore, lancerStore blob.Store) {
	t.Helper()
	ctx := context.Background()
	open := func(uri string, st blob.Store) *ftsindex.Index {
		d, err := openDir(ctx, uri, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range d.Indices() {
			if info.Type == "Inverted" {
				ix, err := ftsindex.Open(ctx, st, "_indices/"+info.UUID, nil)
				if err != nil {
					t.Fatal(err)
				}
				return ix
			}
		}
		t.Fatalf("%s has no FTS index", uri)
		return nil
	}
	want, got := open(lanceURI, lanceStore), open(lancerURI, lancerStore)
	if want.NumPartitions() != 1 || got.NumPartitions() != 1 {
		t.Fatalf("partitions: Lance %d, lancer %d", want.NumPartitions(), got.NumPartitions())
	}
	wr, wn := want.Docs(0)
	gr, gn := got.Docs(0)
	if fmt.Sprint(wr) != fmt.Sprint(gr) || fmt.Sprint(wn) != fmt.Sprint(gn) {
		t.Fatalf("documents differ: Lance %d, lancer %d", len(wr), len(gr))
	}
	wt, gt := want.Tokens(0), got.Tokens(0)
	if len(wt) != len(gt) {
		t.Fatalf("tokens: Lance %d, lancer %d", len(wt), len(gt))
	}
	bad := 0
	for tok, wid := range wt {
		gid, ok := gt[tok]
		if !ok {
			t.Fatalf("token %q only in Lance's index", tok)
		}
		w, err := want.RawPosting(ctx, 0, wid)
		if err != nil {
			t.Fatal(err)
		}
		g, err := got.RawPosting(ctx, 0, gid)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what string
			w, g [][]byte
		}{{"blocks", w.Blocks, g.Blocks}, {"impacts", w.Impacts, g.Impacts}, {"positions", [][]byte{w.Positions}, [][]byte{g.Positions}}} {
			if len(c.w) != len(c.g) {
				t.Errorf("token %q: %d %s, lancer %d", tok, len(c.w), c.what, len(c.g))
				continue
			}
			for i := range c.w {
				if !bytes.Equal(c.w[i], c.g[i]) {
					if bad++; bad < 6 {
						t.Errorf("token %q: %s %d:\nLance  % x\nlancer % x", tok, c.what, i, c.w[i], c.g[i])
					}
				}
			}
		}
		if w.MaxScore != g.MaxScore || fmt.Sprint(w.PositionOffsets) != fmt.Sprint(g.PositionOffsets) {
			t.Errorf("token %q: max score %v / %v, position offsets %v / %v", tok, w.MaxScore, g.MaxScore, w.PositionOffsets, g.PositionOffsets)
		}
	}
}
