package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/lancereftest"
	"github.com/lancerdb/lancer/vector"
)

// vecRequest asks lance-ops.mjs for a vector search or an index operation.
type vecRequest struct {
	URI          string           `json:"uri"`
	Op           string           `json:"op"`
	Column       string           `json:"column,omitempty"`
	Vector       []float32        `json:"vector,omitempty"`
	K            int              `json:"k,omitempty"`
	Filter       string           `json:"filter,omitempty"`
	DistanceType string           `json:"distanceType,omitempty"`
	Type         string           `json:"type,omitempty"`
	Rows         []map[string]any `json:"rows,omitempty"`
	Version      uint64           `json:"version,omitempty"`
	Select       []string         `json:"select,omitempty"`

	CleanupOlderThanMs *int64 `json:"cleanupOlderThanMs,omitempty"`
	DeleteUnverified   bool   `json:"deleteUnverified,omitempty"`
}

type vecReply struct {
	Version uint64            `json:"version"`
	Count   uint64            `json:"count"`
	Rows    []json.RawMessage `json:"rows"`
	Indices []struct {
		Name    string   `json:"name"`
		Type    string   `json:"indexType"`
		Columns []string `json:"columns"`
	} `json:"indices"`
	Error string `json:"error"`
}

func vecOps(t *testing.T, node, ref string, reqs ...vecRequest) []vecReply {
	t.Helper()
	replies, err := lancereftest.Ask[vecRequest, vecReply](script(node, ref), "lance-ops.mjs", reqs)
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

// lanceHit is one row of a Lance vector search.
type lanceHit struct {
	ID       int64   `json:"id"`
	Distance float32 `json:"_distance"`
}

func lanceHits(t *testing.T, r vecReply) []lanceHit {
	t.Helper()
	out := make([]lanceHit, len(r.Rows))
	for i, raw := range r.Rows {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func vecBatch(mem memory.Allocator, vecs []float32, dim, from, to int) array.RecordReader {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "category", Type: arrow.BinaryTypes.String},
		{Name: "vec", Type: arrow.FixedSizeListOf(int32(dim), arrow.PrimitiveTypes.Float32), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	vb := b.Field(2).(*array.FixedSizeListBuilder)
	fb := vb.ValueBuilder().(*array.Float32Builder)
	for i := from; i < to; i++ {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("c%d", i%5))
		vb.Append(true)
		fb.AppendValues(vecs[i*dim:(i+1)*dim], nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, _ := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	return r
}

// writeVecFragments writes rows [0, n) of vecBatch's table to store, one
// fragment per per rows, and returns the dataset written.
func writeVecFragments(t *testing.T, store blob.Store, mem memory.Allocator, vecs []float32, dim, n, per int) *dataset.Dataset {
	t.Helper()
	ctx := context.Background()
	var (
		d   *dataset.Dataset
		err error
	)
	for from := 0; from < n; from += per {
		r := vecBatch(mem, vecs, dim, from, min(from+per, n))
		if d == nil {
			d, err = dataset.Write(ctx, store, r, nil)
		} else {
			d, err = d.Append(ctx, r, nil)
		}
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestLanceUsesDatasetsWithLancerIndex: a dataset with a lancer vector
// index stays a Lance dataset: real Lance lists the index, counts, filters,
// searches the column (exactly), appends, deletes and compacts, and lancer
// then still searches it correctly with its index.
func TestLanceUsesDatasetsWithLancerIndex(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n = 16, 1200
	rng := rand.New(rand.NewPCG(42, 42))
	vecs := make([]float32, (n+50)*dim)
	for i := range vecs {
		vecs[i] = float32(rng.NormFloat64())
	}
	uri := filepath.Join(t.TempDir(), "v.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewGoAllocator()
	d := writeVecFragments(t, store, mem, vecs, dim, n, 300) // 4 fragments
	if d, err = d.CreateIndex(ctx, "vec", &dataset.CreateIndexOptions{Partitions: 6}); err != nil {
		t.Fatal(err)
	}
	q := vecs[5*dim : 6*dim]
	exact := func(keep func(int) bool, m vector.Metric, upto int) []int64 {
		var out []int64
		allow := vector.FilterFunc(func(id uint64) bool { return keep == nil || keep(int(id)) })
		for _, nb := range vector.FlatSearch(vecs[:upto*dim], dim, q, 5, m, allow) {
			out = append(out, int64(nb.ID))
		}
		return out
	}
	ids := func(hs []lanceHit) []int64 {
		var out []int64
		for _, h := range hs {
			out = append(out, h.ID)
		}
		return out
	}

	replies := vecOps(t, node, ref,
		vecRequest{URI: uri, Op: "countRows"},
		vecRequest{URI: uri, Op: "listIndices"},
		vecRequest{URI: uri, Op: "search", Column: "vec", Vector: q, K: 5, Select: []string{"id"}},
		vecRequest{URI: uri, Op: "search", Column: "vec", Vector: q, K: 5, Filter: "category = 'c1'", Select: []string{"id"}},
		vecRequest{URI: uri, Op: "search", Column: "vec", Vector: q, K: 5, DistanceType: "cosine", Select: []string{"id"}},
	)
	if replies[0].Count != n {
		t.Fatalf("Lance counts %d rows", replies[0].Count)
	}
	t.Logf("Lance lists: %+v", replies[1].Indices)
	if got, want := ids(lanceHits(t, replies[2])), exact(nil, vector.L2, n); !slices.Equal(got, want) {
		t.Fatalf("Lance search: %v, want %v", got, want)
	}
	if got, want := ids(lanceHits(t, replies[3])), exact(func(i int) bool { return i%5 == 1 }, vector.L2, n); !slices.Equal(got, want) {
		t.Fatalf("Lance filtered search: %v, want %v", got, want)
	}
	if got, want := ids(lanceHits(t, replies[4])), exact(nil, vector.Cosine, n); !slices.Equal(got, want) {
		t.Fatalf("Lance cosine search: %v, want %v", got, want)
	}

	// Lance appends, deletes and compacts; lancer's index survives where
	// it can and lancer's searches stay right.
	var rows []map[string]any
	for i := n; i < n+50; i++ {
		rows = append(rows, map[string]any{"id": i, "category": fmt.Sprintf("c%d", i%5), "vec": vecs[i*dim : (i+1)*dim]})
	}
	zero := int64(0)
	replies = vecOps(t, node, ref,
		vecRequest{URI: uri, Op: "append", Rows: rows},
		vecRequest{URI: uri, Op: "delete", Filter: "id = 5"},
		vecRequest{URI: uri, Op: "listIndices"},
		vecRequest{URI: uri, Op: "optimize", CleanupOlderThanMs: &zero, DeleteUnverified: true},
		vecRequest{URI: uri, Op: "listIndices"},
	)
	t.Logf("Lance lists after its writes: %+v / after optimize: %+v", replies[2].Indices, replies[4].Indices)
	after, err := openDir(ctx, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lancer sees indices %+v", after.Indices())
	for _, f := range after.Manifest().Fragments {
		t.Logf("fragment %d: %d rows, deletions %v", f.ID, f.PhysicalRows, f.DeletionFile != nil)
	}
	rec, err := after.Search(ctx, "vec", q, &dataset.SearchOptions{K: 5, Columns: []string{"id"}, NProbes: 6})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	got := rec.Column(0).(*array.Int64).Int64Values()
	want := exact(func(i int) bool { return i != 5 }, vector.L2, n+50)
	if !slices.Equal(got, want) {
		t.Fatalf("lancer search after Lance's writes: %v, want %v", got, want)
	}
}
