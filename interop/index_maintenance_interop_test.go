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

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/internal/lancereftest"
)

// Index maintenance both ways (issue #17): Lance's optimize on lancer's
// indices, lancer's OptimizeIndexes and compaction on Lance's.

type maintRequest struct {
	vecRequest
	Name         string         `json:"name,omitempty"`
	IndexOptions map[string]any `json:"indexOptions,omitempty"`
	NProbes      int            `json:"nprobes,omitempty"`
	RefineFactor int            `json:"refineFactor,omitempty"`
	Explain      bool           `json:"explain,omitempty"`
	Ef           int            `json:"ef,omitempty"`
	Text         string         `json:"text,omitempty"`
}

type maintReply struct {
	vecReply
	Plan  string `json:"plan"`
	Stats *struct {
		NumIndexedRows   int64  `json:"numIndexedRows"`
		NumUnindexedRows int64  `json:"numUnindexedRows"`
		NumIndices       int    `json:"numIndices"`
		IndexType        string `json:"indexType"`
	} `json:"stats"`
	Optimize json.RawMessage `json:"optimize"`
}

func maintAsk(t *testing.T, node, ref string, reqs ...maintRequest) []maintReply {
	t.Helper()
	replies, err := lancereftest.Ask[maintRequest, maintReply](script(node, ref), "lance-ops.mjs", reqs)
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

// maintData returns n clustered vectors of dim and queries near the
// clusters (fixed seed).
func maintData(seed uint64, n, dim, nq int) (vecs []float32, queries [][]float32) {
	const clusters = 10
	rng := rand.New(rand.NewPCG(seed, seed*7+1))
	centers := make([]float32, clusters*dim)
	for i := range centers {
		centers[i] = float32(rng.NormFloat64() * 4)
	}
	vecs = make([]float32, n*dim)
	for i := range n {
		c := rng.IntN(clusters)
		for j := range dim {
			vecs[i*dim+j] = centers[c*dim+j] + float32(rng.NormFloat64())
		}
	}
	for range nq {
		q := make([]float32, dim)
		c := rng.IntN(clusters)
		for j := range q {
			q[j] = centers[c*dim+j] + float32(rng.NormFloat64())
		}
		queries = append(queries, q)
	}
	return vecs, queries
}

func maintRows(vecs []float32, dim, from, to int) []map[string]any {
	var rows []map[string]any
	for i := from; i < to; i++ {
		rows = append(rows, map[string]any{"id": i, "category": fmt.Sprintf("c%d", i%5), "vec": vecs[i*dim : (i+1)*dim]})
	}
	return rows
}

// deletedRow is the rows the tests delete.
func deletedRow(id int64) bool { return id%7 == 3 }

// checkIndexUse checks the index vec_idx of the dataset at uri as both
// engines see it: every fragment covered (lancer's plan scores no row
// exactly; Lance counts no unindexed row and its plan is the ANN path);
// on queries, lancer's rows and distances are Lance's; the rows of
// appended (the ids that the index must find through its delta or its
// remapped segments) are found by their own vectors, by both; deleted rows
// are never returned. With hnsw (an HNSW sub-index), the answers agree as
// issue #17 asks of HNSW: the same top k (ties at the k-th distance aside)
// on at least 99% of the queries, so pass at least 100; both engines
// search with ef 40 (at their default ef, Lance's beam on its own
// IVF_HNSW_PQ graphs after its optimize ends farther than lancer's on
// about 2.5% of queries: lancer's rows are nearer every time).
//
// With pq4 (4-bit PQ) a row need not come first by its own vector: on
// these clustered rows Lance's 4-bit quantizer gives many rows of a
// partition the same code (measured: the row's own PQ distance, ~600,
// shared by 30 or more rows), so the k × refine candidates are a tie
// that Lance's heap breaks by position, and rows late in a partition (the
// appended ones, after a merge) lose it in Lance as in lancer. Instead
// both engines must return the same rows and distances for those queries,
// and every row of every segment must hold the partition and code Lance's
// quantizer gives its vector (checkPQCodes), which a delta lancer wrote
// wrong, or a merge of it Lance read wrong, fails.
func checkIndexUse(t *testing.T, node, ref, uri, stage, lanceType string, vecs []float32, dim int, queries [][]float32, appended []int, hnsw, pq4 bool) {
	t.Helper()
	ctx := context.Background()
	d, err := openDir(ctx, uri, nil)
	if err != nil {
		t.Fatal(err)
	}
	var segs []string
	for _, ix := range d.Indices() {
		if ix.Name == "vec_idx" {
			segs = append(segs, fmt.Sprintf("%s covers %v", ix.UUID, ix.Fragments))
		}
	}
	t.Logf("%s: vec_idx segments: %s", stage, strings.Join(segs, "; "))
	plan, err := d.ExplainSearch(ctx, "vec", queries[0], &dataset.SearchOptions{K: 10, NProbes: 3})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Index != "vec_idx" || len(plan.UnindexedFragments) != 0 {
		t.Errorf("%s: lancer's plan: index %q, unindexed fragments %v", stage, plan.Index, plan.UnindexedFragments)
	}

	const k, nprobes = 10, 3
	// HNSW: the beam width both engines search with (S4 of vecindex).
	ef := 0
	if hnsw {
		ef = 40
	}
	reqs := []maintRequest{
		{vecRequest: vecRequest{URI: uri, Op: "listIndices"}},
		{vecRequest: vecRequest{URI: uri, Op: "indexStats"}, Name: "vec_idx"},
		{vecRequest: vecRequest{URI: uri, Op: "search", Column: "vec", Vector: queries[0], K: k, Select: []string{"id"}}, NProbes: nprobes, Explain: true},
	}
	for _, q := range queries {
		reqs = append(reqs, maintRequest{vecRequest: vecRequest{URI: uri, Op: "search", Column: "vec", Vector: q, K: k, Select: []string{"id"}}, NProbes: nprobes, Ef: ef})
	}
	// Each appended row by its own vector, every partition probed, exact
	// distances for the candidates (refine), so that the row is first.
	for _, id := range appended {
		reqs = append(reqs, maintRequest{vecRequest: vecRequest{URI: uri, Op: "search", Column: "vec", Vector: vecs[id*dim : (id+1)*dim], K: 3, Select: []string{"id"}}, NProbes: 100, RefineFactor: 10})
	}
	replies := maintAsk(t, node, ref, reqs...)
	var types []string
	for _, ix := range replies[0].Indices {
		if ix.Name == "vec_idx" {
			types = append(types, ix.Type)
		}
	}
	if !slices.Equal(types, []string{lanceType}) {
		t.Errorf("%s: Lance lists vec_idx as %v, want %s", stage, types, lanceType)
	}
	if st := replies[1].Stats; st == nil || st.NumUnindexedRows != 0 {
		t.Errorf("%s: Lance's index statistics %+v: want no unindexed rows", stage, st)
	} else {
		t.Logf("%s: Lance: vec_idx %s, %d segments, %d rows indexed, %d unindexed", stage, st.IndexType, st.NumIndices, st.NumIndexedRows, st.NumUnindexedRows)
	}
	if p := replies[2].Plan; !strings.Contains(p, "ANNSubIndex") || !strings.Contains(p, "ANNIvfPartition") {
		t.Errorf("%s: Lance's plan does not use the index:\n%s", stage, p)
	}
	mismatched := 0
	for qi, q := range queries {
		want := lanceHits(t, replies[3+qi].vecReply)
		rec, err := d.Search(ctx, "vec", q, &dataset.SearchOptions{K: k, NProbes: nprobes, Ef: ef, Columns: []string{"id"}})
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(0).(*array.Int64).Int64Values()
		dist := rec.Column(1).(*array.Float32).Float32Values()
		if !sameHits(ids, dist, want, hnsw) {
			mismatched++
			t.Logf("%s: query %d: lancer %v %v, Lance %v", stage, qi, ids, dist, want)
		}
		for _, id := range ids {
			if deletedRow(id) {
				t.Errorf("%s: lancer returned deleted row %d", stage, id)
			}
		}
		for _, h := range want {
			if deletedRow(h.ID) {
				t.Errorf("%s: Lance returned deleted row %d", stage, h.ID)
			}
		}
		rec.Release()
	}
	allowed := 0
	if hnsw {
		allowed = len(queries) / 100
	}
	if mismatched > allowed {
		t.Errorf("%s: %d of %d searches differ from Lance's", stage, mismatched, len(queries))
	} else if mismatched > 0 {
		t.Logf("%s: %d of %d searches differ from Lance's (HNSW: at most %d allowed)", stage, mismatched, len(queries), allowed)
	}
	if pq4 {
		checkPQCodes(t, d, uri, stage, vecs, dim)
	}
	for i, id := range appended {
		want := lanceHits(t, replies[3+len(queries)+i].vecReply)
		rec, err := d.Search(ctx, "vec", vecs[id*dim:(id+1)*dim], &dataset.SearchOptions{K: 3, NProbes: 100, RefineFactor: 10, Columns: []string{"id"}})
		if err != nil {
			t.Fatal(err)
		}
		ids, dist := rec.Column(0).(*array.Int64).Int64Values(), rec.Column(1).(*array.Float32).Float32Values()
		switch {
		case pq4 && !sameHits(ids, dist, want, false):
			t.Errorf("%s: row %d's own vector: lancer %v %v, Lance %v", stage, id, ids, dist, want)
		case !pq4 && (len(want) == 0 || want[0].ID != int64(id)):
			t.Errorf("%s: Lance does not find row %d by its vector: %v", stage, id, want)
		case !pq4 && (len(ids) == 0 || ids[0] != int64(id)):
			t.Errorf("%s: lancer does not find row %d by its vector: %v", stage, id, ids)
		}
		rec.Release()
	}
}

// checkPQCodes checks that every row of every vec_idx segment of d (at
// uri) sits in the partition, with the code, that the segment's own
// quantizer gives the row's vector (vecindex's Encode, which agrees with
// the codes Lance writes for the rows it indexes).
func checkPQCodes(t *testing.T, d *dataset.Dataset, uri, stage string, vecs []float32, dim int) {
	t.Helper()
	ctx := context.Background()
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	ids, addrs := scanIDs(t, d)
	idOf := make(map[uint64]int64, len(ids))
	for i, a := range addrs {
		idOf[a] = ids[i]
	}
	for _, seg := range d.Indices() {
		if seg.Name != "vec_idx" {
			continue
		}
		ix, err := vecindex.Open(ctx, store, "_indices/"+seg.UUID, nil)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := ix.Model()
		if err != nil {
			t.Fatal(err)
		}
		rows, wrong := 0, 0
		for p := range spec.Partitions {
			rowIDs, _, codes, err := ix.PartitionRows(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			w := spec.CodeWidth()
			for i, a := range rowIDs {
				id, ok := idOf[a]
				if !ok {
					continue // deleted after the segment was written: it keeps the row, searches skip it
				}
				rows++
				gp, _, code := spec.Encode(vecs[int(id)*dim : (int(id)+1)*dim])
				if gp != p || !slices.Equal(code, codes[i*w:(i+1)*w]) {
					if wrong++; wrong <= 3 {
						t.Errorf("%s: segment %s: row %d in partition %d with code %x, its vector's are %d and %x", stage, seg.UUID, id, p, codes[i*w:(i+1)*w], gp, code)
					}
				}
			}
		}
		if wrong > 0 || rows == 0 {
			t.Errorf("%s: segment %s: %d of %d rows with another partition or code than their vectors'", stage, seg.UUID, wrong, rows)
		}
	}
}

// liveSample returns up to n ids in [from, to) that are not deleted.
func liveSample(from, to, n int) []int {
	var out []int
	for id := from; id < to && len(out) < n; id += 7 {
		if !deletedRow(int64(id)) {
			out = append(out, id)
		}
	}
	return out
}

// TestLanceMaintainsLancerIndices: lancer builds each kind it writes in
// Lance's format (IVF_PQ of 8- and 4-bit codes, IVF_FLAT, IVF_SQ, IVF_HNSW_SQ, IVF_HNSW_FLAT,
// IVF_HNSW_PQ); real Lance appends two fragments, deletes rows and runs
// its optimize (compaction, which rewrites the indexed fragments and so
// remaps lancer's index; index optimization, which indexes the appended
// rows with lancer's centroids and quantizer; cleanup). Both engines then
// use the index for every fragment, agree on the rows and distances (HNSW:
// on 99% of 200 queries), find the appended rows and never return deleted
// ones.
func TestLanceMaintainsLancerIndices(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n, extra = 32, 1500, 200
	vecs, queries := maintData(23, n+extra, dim, 200)
	for _, tc := range []struct {
		name, typ, lanceType string
		hnsw                 bool
		pqBits               int
	}{
		{"IVF_PQ", dataset.IndexIVFPQ, "IvfPq", false, 0},
		{"IVF_PQ 4-bit", dataset.IndexIVFPQ, "IvfPq", false, 4},
		{"IVF_FLAT", dataset.IndexIVFFlat, "IvfFlat", false, 0},
		{"IVF_SQ", dataset.IndexIVFSQ, "IvfSq", false, 0},
		{"IVF_HNSW_SQ", dataset.IndexIVFHNSWSQ, "IvfHnswSq", true, 0},
		{"IVF_HNSW_FLAT", dataset.IndexIVFHNSWFlat, "IvfHnswFlat", true, 0},
		{"IVF_HNSW_PQ", dataset.IndexIVFHNSWPQ, "IvfHnswPq", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "v.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			d := writeVecFragments(t, store, memory.NewGoAllocator(), vecs, dim, n, n/3)
			if d, err = d.CreateIndex(ctx, "vec", &dataset.CreateIndexOptions{Type: tc.typ, Partitions: 8, SubVectors: 8, PQBits: tc.pqBits}); err != nil {
				t.Fatal(err)
			}
			built := d.Indices()[0].UUID
			replies := maintAsk(t, node, ref,
				maintRequest{vecRequest: vecRequest{URI: uri, Op: "append", Rows: maintRows(vecs, dim, n, n+extra/2)}},
				maintRequest{vecRequest: vecRequest{URI: uri, Op: "append", Rows: maintRows(vecs, dim, n+extra/2, n+extra)}},
				maintRequest{vecRequest: vecRequest{URI: uri, Op: "delete", Filter: "id % 7 = 3"}},
				maintRequest{vecRequest: vecRequest{URI: uri, Op: "optimize"}})
			t.Logf("Lance's optimize: %s", replies[3].Optimize)
			d, err = openDir(ctx, uri, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, ix := range d.Indices() {
				if ix.UUID == built {
					t.Errorf("lancer's segment %s is still there after Lance compacted its fragments", built)
				}
			}
			checkIndexUse(t, node, ref, uri, "after Lance's optimize", tc.lanceType, vecs, dim, queries,
				append(liveSample(0, n, 6), liveSample(n, n+extra, 6)...), tc.hnsw, tc.pqBits == 4)
		})
	}
}

// TestLancerOptimizesLanceIndices: real Lance builds IVF_PQ (8- and
// 4-bit), IVF_FLAT,
// IVF_HNSW_SQ and IVF_HNSW_PQ on a lancer table; lancer appends a
// fragment, deletes rows and runs OptimizeIndexes, which adds a delta
// segment in Lance's format (same name, new uuid, the appended fragment's
// bitmap, Lance's centroids and codebook or SQ bounds, HNSW graphs lancer
// builds over the delta's rows); real Lance counts no unindexed row,
// plans through the index, searches both segments and finds the new rows
// through the index, as lancer does (HNSW: the same answers on 99% of 100
// queries); then Lance's own optimize (compaction, index merge) over
// lancer's delta leaves both engines agreeing again.
func TestLancerOptimizesLanceIndices(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n, extra = 32, 1500, 200
	vecs, queries := maintData(29, n+extra, dim, 200)
	for _, tc := range []struct {
		name, typ, lanceType string
		opts                 map[string]any
		hnsw                 bool
	}{
		{"IVF_PQ", "ivfPq", "IvfPq", map[string]any{"numPartitions": 6, "numSubVectors": 8}, false},
		{"IVF_PQ 4-bit", "ivfPq", "IvfPq", map[string]any{"numPartitions": 6, "numSubVectors": 8, "numBits": 4}, false},
		{"IVF_FLAT", "ivfFlat", "IvfFlat", map[string]any{"numPartitions": 6}, false},
		{"IVF_HNSW_SQ", "hnswSq", "IvfHnswSq", map[string]any{"numPartitions": 4}, true},
		{"IVF_HNSW_PQ", "hnswPq", "IvfHnswPq", map[string]any{"numPartitions": 4, "numSubVectors": 8}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "v.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			d := writeVecFragments(t, store, mem, vecs, dim, n, n/3)
			maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "vec", Type: tc.typ}, IndexOptions: tc.opts})
			d, err = openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			base := d.Indices()
			if len(base) != 1 {
				t.Fatalf("Lance built %d segments", len(base))
			}
			r := vecBatch(mem, vecs, dim, n, n+extra)
			d, err = d.Append(ctx, r, nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			added := d.Manifest().Fragments[len(d.Manifest().Fragments)-1].ID
			if d, err = d.Delete(ctx, "id % 7 = 3", nil); err != nil {
				t.Fatal(err)
			}
			if d, err = d.OptimizeIndexes(ctx, nil); err != nil {
				t.Fatal(err)
			}
			segs := d.Indices()
			if len(segs) != 2 || segs[0].UUID != base[0].UUID || segs[1].Name != "vec_idx" || segs[1].UUID == base[0].UUID ||
				!slices.Equal(segs[1].Fragments, []uint32{uint32(added)}) || segs[1].TypeURL != base[0].TypeURL {
				t.Fatalf("after OptimizeIndexes: %+v, want Lance's segment %s and a delta vec_idx over fragment %d", segs, base[0].UUID, added)
			}
			appended := append(liveSample(0, n, 4), liveSample(n, n+extra, 8)...)
			checkIndexUse(t, node, ref, uri, "after lancer's OptimizeIndexes", tc.lanceType, vecs, dim, queries, appended, tc.hnsw, tc.opts["numBits"] == 4)

			replies := maintAsk(t, node, ref, maintRequest{vecRequest: vecRequest{URI: uri, Op: "optimize"}})
			t.Logf("Lance's optimize over lancer's delta: %s", replies[0].Optimize)
			checkIndexUse(t, node, ref, uri, "after Lance's optimize", tc.lanceType, vecs, dim, queries, appended, tc.hnsw, tc.opts["numBits"] == 4)
		})
	}
}

// TestLanceUsesIndicesAfterLancerCompact: real Lance builds IVF_PQ on vec,
// BTREE on id and FTS on category over a lancer table of small fragments,
// and deletes rows; lancer compacts (without stable row ids, so rows move):
// it remaps the IVF_PQ index (a new segment with the rows' new addresses,
// recorded as Lance records it) and the BTREE and FTS indices (built again
// over the compacted rows). Real Lance then still searches every row
// through the vector index with lancer's results, counts no unindexed row
// in the BTREE and FTS indices, plans its filter through the BTREE, and
// its filter and full-text queries return the rows (and scores) lancer
// returns.
func TestLanceUsesIndicesAfterLancerCompact(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n = 32, 1500
	vecs, queries := maintData(31, n, dim, 12)
	uri := filepath.Join(t.TempDir(), "v.lance")
	store, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	writeVecFragments(t, store, mem, vecs, dim, n, n/6)
	maintAsk(t, node, ref,
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "vec", Type: "ivfPq"}, IndexOptions: map[string]any{"numPartitions": 6, "numSubVectors": 8}},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "id", Type: "btree"}},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "category", Type: "fts"},
			IndexOptions: map[string]any{"withPosition": true, "stem": false, "removeStopWords": false, "asciiFolding": true, "lowercase": true}},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "delete", Filter: "id % 7 = 3"}})
	d, err := openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	out, stats, err := d.Compact(ctx, &dataset.CompactOptions{CommitOptions: dataset.CommitOptions{Allocator: mem}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lancer's compaction: %+v", stats)
	if stats.FragmentsRemoved != 6 || stats.IndicesRemapped != 3 || stats.IndexMessage != "" {
		t.Errorf("compaction %+v: want 6 fragments rewritten and the vector, BTREE and FTS indices remapped", stats)
	}
	checkIndexUse(t, node, ref, uri, "after lancer's compaction", "IvfPq", vecs, dim, queries, liveSample(0, n, 10), false, false)

	// The filter and full-text queries the scalar indices answered.
	const filter = "id >= 100 AND id < 160"
	replies := maintAsk(t, node, ref,
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "query", Filter: filter}},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "ftsSearch", Column: "category", K: 40, Select: []string{"id"}}, Text: "c3"},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "query", Filter: filter}, Explain: true},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "indexStats"}, Name: "id_idx"},
		maintRequest{vecRequest: vecRequest{URI: uri, Op: "indexStats"}, Name: "category_idx"})
	if !strings.Contains(replies[2].Plan, "ScalarIndexQuery") {
		t.Errorf("Lance's plan of %q after lancer's compaction does not use the BTREE:\n%s", filter, replies[2].Plan)
	}
	for _, r := range replies[3:] {
		if r.Stats == nil || r.Stats.NumUnindexedRows != 0 || r.Stats.NumIndices != 1 {
			t.Errorf("Lance's stats after lancer's compaction: %+v", r.Stats)
		}
	}
	var lanceIDs []int64
	for _, raw := range replies[0].Rows {
		var row struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(raw, &row); err != nil {
			t.Fatal(err)
		}
		lanceIDs = append(lanceIDs, row.ID)
	}
	slices.Sort(lanceIDs)
	var want []int64
	for id := int64(100); id < 160; id++ {
		if !deletedRow(id) {
			want = append(want, id)
		}
	}
	if !slices.Equal(lanceIDs, want) {
		t.Errorf("Lance's %q after lancer's compaction: %v, want %v", filter, lanceIDs, want)
	}
	sc, err := out.Scan(&dataset.ScanOptions{Columns: []string{"id"}, Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	var lancerIDs []int64
	for rec, err := range sc.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		lancerIDs = append(lancerIDs, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	slices.Sort(lancerIDs)
	if !slices.Equal(lancerIDs, want) {
		t.Errorf("lancer's %q after its compaction: %v, want %v", filter, lancerIDs, want)
	}
	fts := make([]ftsHit, len(replies[1].Rows))
	for i, raw := range replies[1].Rows {
		if err := json.Unmarshal(raw, &fts[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := out.FullTextSearch(ctx, "c3", &dataset.FullTextSearchOptions{Column: "category", Limit: 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(fts) != 40 || !sameFTS(got, fts) {
		t.Errorf("full-text search after lancer's compaction: lancer %v, Lance %v", got, fts)
	}
}

// TestLanceUsesHNSWIndicesAfterLancerCompact: real Lance builds
// IVF_HNSW_SQ and IVF_HNSW_PQ on a lancer table of small fragments and
// deletes rows; lancer compacts (without stable row ids, so rows move),
// remapping the index: a new segment with the rows' new addresses, the
// deleted rows dropped and each partition's graph rebuilt over the
// remapped storage, as Lance's remap rebuilds it, recorded in the
// Rewrite transaction. Real Lance then plans through the index, counts no
// unindexed row and answers as lancer does (the same top k on 99% of 200
// queries), never returning a deleted row.
func TestLanceUsesHNSWIndicesAfterLancerCompact(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n = 32, 1500
	vecs, queries := maintData(37, n, dim, 200)
	for _, tc := range []struct {
		name, typ, lanceType string
		opts                 map[string]any
	}{
		{"IVF_HNSW_SQ", "hnswSq", "IvfHnswSq", map[string]any{"numPartitions": 4}},
		{"IVF_HNSW_PQ", "hnswPq", "IvfHnswPq", map[string]any{"numPartitions": 4, "numSubVectors": 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "v.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			writeVecFragments(t, store, mem, vecs, dim, n, n/6)
			maintAsk(t, node, ref,
				maintRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "vec", Type: tc.typ}, IndexOptions: tc.opts},
				maintRequest{vecRequest: vecRequest{URI: uri, Op: "delete", Filter: "id % 7 = 3"}})
			d, err := openDir(ctx, uri, &dataset.OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatal(err)
			}
			built := d.Indices()[0].UUID
			out, stats, err := d.Compact(ctx, &dataset.CompactOptions{CommitOptions: dataset.CommitOptions{Allocator: mem}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("lancer's compaction: %+v", stats)
			if stats.FragmentsRemoved != 6 || stats.IndicesRemapped != 1 || stats.IndexMessage != "" {
				t.Errorf("compaction %+v: want 6 fragments rewritten and the vector index remapped", stats)
			}
			if segs := out.Indices(); len(segs) != 1 || segs[0].UUID == built || segs[0].Name != "vec_idx" {
				t.Fatalf("after compaction: %+v, want one remapped segment of vec_idx", segs)
			}
			checkIndexUse(t, node, ref, uri, "after lancer's compaction", tc.lanceType, vecs, dim, queries, liveSample(0, n, 10), true, false)
		})
	}
}
