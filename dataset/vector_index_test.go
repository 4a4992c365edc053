package dataset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/vector"
)

// vecTable is the model of a small vector dataset: row i has id i,
// category "c<i%7>" and vector vecs[i*dim:(i+1)*dim].
type vecTable struct {
	dim  int
	vecs []float32
}

// clustered returns n vectors around 16 random centres.
func clustered(rng *rand.Rand, n, dim int) []float32 {
	centres := make([]float32, 16*dim)
	for i := range centres {
		centres[i] = float32(rng.NormFloat64())
	}
	out := make([]float32, n*dim)
	for i := range n {
		c := rng.IntN(16)
		for j := range dim {
			out[i*dim+j] = centres[c*dim+j] + 0.3*float32(rng.NormFloat64())
		}
	}
	return out
}

// vecReader returns rows [from, to) of a {id, category, vec} table.
func vecReader(mem memory.Allocator, vecs []float32, dim int, from, to int) array.RecordReader {
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
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("c%d", i%7))
		vb.Append(true)
		fb.AppendValues(vecs[i*dim:(i+1)*dim], nil)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		panic(err)
	}
	return r
}

// exactTop returns the ids (row index = id) of the k nearest rows among
// those keep accepts.
func exactTop(vecs []float32, dim int, q []float32, k int, m vector.Metric, keep func(i int) bool) []uint64 {
	allow := vector.FilterFunc(func(id uint64) bool { return keep == nil || keep(int(id)) })
	var out []uint64
	for _, n := range vector.FlatSearch(vecs, dim, q, k, m, allow) {
		out = append(out, n.ID)
	}
	return out
}

// searchIDs runs a search and returns the "id" column of its rows, and
// their distances.
func searchIDs(t *testing.T, d *Dataset, q []float32, o *SearchOptions) ([]uint64, []float32) {
	t.Helper()
	o.Columns = []string{"id"}
	rec, err := d.Search(context.Background(), "vec", q, o)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	if got := rec.Schema().Field(int(rec.NumCols()) - 1).Name; got != DistanceColumn {
		t.Fatalf("last column %q, want %s", got, DistanceColumn)
	}
	var ids []uint64
	for _, v := range rec.Column(0).(*array.Int64).Int64Values() {
		ids = append(ids, uint64(v))
	}
	dists := slices.Clone(rec.Column(int(rec.NumCols()) - 1).(*array.Float32).Float32Values())
	for i := 1; i < len(dists); i++ {
		if dists[i] < dists[i-1] {
			t.Fatalf("distances not ascending: %v", dists)
		}
	}
	return ids, dists
}

func recallOf(got, want []uint64) float64 {
	if len(want) == 0 {
		return 1
	}
	hit := 0
	for _, id := range got {
		if slices.Contains(want, id) {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

// newVecDataset writes n rows in fragments of per rows.
func newVecDataset(t *testing.T, store blob.Store, vecs []float32, dim, n, per int, stable bool) *Dataset {
	t.Helper()
	ctx := context.Background()
	mem := checkedAlloc(t)
	var d *Dataset
	for from := 0; from < n; from += per {
		r := vecReader(mem, vecs, dim, from, min(n, from+per))
		var err error
		if d == nil {
			d, err = Write(ctx, store, r, &WriteOptions{EnableStableRowIDs: stable, CommitOptions: CommitOptions{Allocator: mem}})
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

func TestVectorIndexTypes(t *testing.T) {
	ctx := context.Background()
	const dim, n = 16, 3000
	rng := rand.New(rand.NewPCG(1, 2))
	vecs := clustered(rng, n, dim)
	queries := clustered(rng, 20, dim)
	for _, typ := range []string{IndexFlat, IndexIVFFlat, IndexHNSW, IndexIVFHNSWSQ, IndexIVFSQ, IndexIVFHNSWFlat} {
		for _, metric := range []vector.Metric{vector.L2, vector.Cosine, vector.Dot} {
			t.Run(fmt.Sprintf("%s/%s", typ, metric), func(t *testing.T) {
				store := blob.NewMemStore("v")
				d := newVecDataset(t, store, vecs, dim, n, 1000, false)
				d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: typ, Metric: metric, Partitions: 8})
				if err != nil {
					t.Fatal(err)
				}
				ix := d.Indices()
				if len(ix) != 1 || ix[0].Name != "vec_idx" || ix[0].TypeURL != LanceVectorIndexTypeURL || len(ix[0].Fragments) != 3 {
					t.Fatalf("indices %+v", ix)
				}
				// A fresh open reads the index from the store.
				d2 := openStore(t, store, 0, checkedAlloc(t))
				total := 0.0
				for qi := range 20 {
					q := queries[qi*dim : (qi+1)*dim]
					want := exactTop(vecs, dim, q, 10, metric, nil)
					got, gotDists := searchIDs(t, d2, q, &SearchOptions{K: 10, NProbes: 8, Ef: 64})
					total += recallOf(got, want)
					if len(got) != 10 || !slices.IsSorted(gotDists) {
						t.Fatalf("query %d: %v at %v", qi, got, gotDists)
					}
					exact, dists := searchIDs(t, d2, q, &SearchOptions{K: 10, Exact: true})
					if !slices.Equal(exact, want) {
						t.Fatalf("query %d: exact search %v, want %v (%v)", qi, exact, want, dists)
					}
				}
				minRecall := 0.9
				if typ == IndexHNSW || typ == IndexIVFHNSWSQ || typ == IndexIVFSQ {
					minRecall = 0.85 // one SQ range for every dimension, as Lance's
				}
				if r := total / 20; r < minRecall {
					t.Fatalf("recall@10 %.3f with every partition probed", r)
				}
			})
		}
	}
}

func TestVectorIndexTracksWrites(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 2000
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			vecs := clustered(rng, n+100, dim)
			store := blob.NewMemStore("v")
			d := newVecDataset(t, store, vecs, dim, n, 500, stable)
			// IVF_FLAT: a kind OptimizeIndexes extends and compaction
			// remaps (not yet the default IVF_HNSW_SQ).
			d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: IndexIVFFlat, Partitions: 4})
			if err != nil {
				t.Fatal(err)
			}
			indexed := d
			q := vecs[7*dim : 8*dim]

			// Appended rows are found (scored exactly): append copies of
			// row 7's vector.
			extra := slices.Clone(vecs[:(n+100)*dim])
			for i := n; i < n+100; i++ {
				copy(extra[i*dim:], q)
			}
			r := vecReader(checkedAlloc(t), extra, dim, n, n+3)
			d, err = d.Append(ctx, r, nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
			got, dists := searchIDs(t, d, q, &SearchOptions{K: 4, NProbes: 4})
			if !sameSet(got, []uint64{7, uint64(n), uint64(n + 1), uint64(n + 2)}) || dists[2] != 0 || dists[3] > 0.01 { // row 7 comes from the 8-bit index
				t.Fatalf("after append: %v %v", got, dists)
			}

			// Deleted rows are never returned.
			if d, err = d.Delete(ctx, fmt.Sprintf("id = 7 OR id = %d", n), nil); err != nil {
				t.Fatal(err)
			}
			got, _ = searchIDs(t, d, q, &SearchOptions{K: 4, NProbes: 4})
			if slices.Contains(got, 7) || slices.Contains(got, uint64(n)) || !slices.Contains(got, uint64(n+1)) {
				t.Fatalf("after delete: %v", got)
			}

			// Updated rows are returned once, with their new vector.
			if d, _, err = d.Update(ctx, map[string]string{"category": "'moved'"}, "id = 8", nil); err != nil {
				t.Fatal(err)
			}
			q8 := vecs[8*dim : 9*dim]
			rec, err := d.Search(ctx, "vec", q8, &SearchOptions{K: 3, NProbes: 4, Columns: []string{"id", "category"}})
			if err != nil {
				t.Fatal(err)
			}
			ids := rec.Column(0).(*array.Int64).Int64Values()
			if ids[0] != 8 || rec.Column(1).(*array.String).Value(0) != "moved" || slices.Contains(ids[1:], 8) {
				t.Fatalf("after update: ids %v, category %q", ids, rec.Column(1).(*array.String).Value(0))
			}
			rec.Release()

			// Time travel: the indexed version still sees row 7.
			got, _ = searchIDs(t, indexed, q, &SearchOptions{K: 1, NProbes: 4})
			if !slices.Equal(got, []uint64{7}) {
				t.Fatalf("old version: %v", got)
			}

			// OptimizeIndexes covers the appended fragment with a delta
			// segment; results stay the same.
			before, _ := searchIDs(t, d, q, &SearchOptions{K: 5, NProbes: 4})
			opt, err := d.OptimizeIndexes(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			segs := opt.Indices()
			if len(segs) != 2 || segs[0].Name != segs[1].Name || opt.Version() != d.Version()+1 {
				t.Fatalf("after optimize: %+v", segs)
			}
			covered := append(slices.Clone(segs[0].Fragments), segs[1].Fragments...)
			if len(covered) != len(opt.Manifest().Fragments) {
				t.Fatalf("segments cover %v of %d fragments", covered, len(opt.Manifest().Fragments))
			}
			after, _ := searchIDs(t, opt, q, &SearchOptions{K: 5, NProbes: 4})
			if !sameSet(before[:2], after[:2]) {
				t.Fatalf("optimize changed the nearest rows: %v -> %v", before, after)
			}
			if again, err := opt.OptimizeIndexes(ctx, nil); err != nil || again.Version() != opt.Version() {
				t.Fatalf("second optimize: version %d, %v", again.Version(), err)
			}
		})
	}
}

func sameSet(a, b []uint64) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestVectorSearchFilters(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 4000
	rng := rand.New(rand.NewPCG(5, 6))
	vecs := clustered(rng, n, dim)
	store := blob.NewMemStore("v")
	d := newVecDataset(t, store, vecs, dim, n, 4000, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Partitions: 16})
	if err != nil {
		t.Fatal(err)
	}
	q := clustered(rng, 1, dim)
	for _, tc := range []struct {
		filter string
		keep   func(i int) bool
	}{
		{"category = 'c3'", func(i int) bool { return i%7 == 3 }},
		{"id < 4", func(i int) bool { return i < 4 }}, // 0.1% of rows
		{"id > 3000 AND id % 2 = 0", func(i int) bool { return i > 3000 && i%2 == 0 }},
		{"id < 0", func(int) bool { return false }},
	} {
		want := exactTop(vecs, dim, q, 10, vector.L2, tc.keep)
		got, _ := searchIDs(t, d, q, &SearchOptions{K: 10, Filter: tc.filter, NProbes: 16})
		for _, id := range got {
			if !tc.keep(int(id)) {
				t.Fatalf("%s: row %d does not match", tc.filter, id)
			}
		}
		if r := recallOf(got, want); r < 0.9 || len(got) != len(want) {
			t.Fatalf("%s: got %v, want %v", tc.filter, got, want)
		}
		// A postfilter keeps only the matching rows of the 10 nearest.
		top := exactTop(vecs, dim, q, 10, vector.L2, nil)
		post, _ := searchIDs(t, d, q, &SearchOptions{K: 10, Filter: tc.filter, Postfilter: true, Exact: true})
		var wantPost []uint64
		for _, id := range top {
			if tc.keep(int(id)) {
				wantPost = append(wantPost, id)
			}
		}
		if !slices.Equal(post, wantPost) {
			t.Fatalf("%s postfilter: %v, want %v", tc.filter, post, wantPost)
		}
	}
	if _, err := d.Search(ctx, "vec", q, &SearchOptions{Filter: "nosuch > 1"}); err == nil {
		t.Fatal("bad filter accepted")
	}
}

func TestVectorRefineGivesExactDistances(t *testing.T) {
	ctx := context.Background()
	const dim, n = 16, 2000
	rng := rand.New(rand.NewPCG(7, 8))
	vecs := clustered(rng, n, dim)
	d := newVecDataset(t, blob.NewMemStore("v"), vecs, dim, n, n, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	q := clustered(rng, 1, dim)
	ids, dists := searchIDs(t, d, q, &SearchOptions{K: 5, NProbes: 4, RefineFactor: 4})
	for i, id := range ids {
		if want := vector.L2Squared(q, vecs[int(id)*dim:int(id+1)*dim]); dists[i] != want {
			t.Fatalf("row %d: refined distance %v, exact %v", id, dists[i], want)
		}
	}
}

func TestVectorIndexErrors(t *testing.T) {
	ctx := context.Background()
	const dim = 4
	vecs := clustered(rand.New(rand.NewPCG(9, 9)), 100, dim)
	d := newVecDataset(t, blob.NewMemStore("v"), vecs, dim, 100, 100, false)
	for _, tc := range []struct {
		column string
		opts   *CreateIndexOptions
		want   error
	}{
		{"nosuch", nil, lancer.ErrNotFound},
		{"category", nil, lancer.ErrInvalidArgument},
		{"vec", &CreateIndexOptions{Type: "pq"}, lancer.ErrInvalidArgument},
	} {
		if _, err := d.CreateIndex(ctx, tc.column, tc.opts); !errors.Is(err, tc.want) {
			t.Errorf("CreateIndex(%q, %+v) = %v, want %v", tc.column, tc.opts, err, tc.want)
		}
	}
	// The build's temporary copy of the vectors goes to SpillDir.
	missing := filepath.Join(t.TempDir(), "nosuch")
	if _, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{SpillDir: missing}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("CreateIndex with SpillDir %s: %v", missing, err)
	}
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{SpillDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateIndex(ctx, "vec", nil); !errors.Is(err, lancer.ErrAlreadyExists) {
		t.Fatalf("second index of the same name: %v", err)
	}
	r, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Replace: true, Type: IndexFlat})
	if err != nil || len(r.Indices()) != 1 || r.Indices()[0].UUID == d.Indices()[0].UUID {
		t.Fatalf("replace: %v %+v", err, r.Indices())
	}
	for _, q := range [][]float32{{1, 2, 3}, {1, 2, 3, float32NaN()}} {
		if _, err := d.Search(ctx, "vec", q, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("query %v: %v", q, err)
		}
	}
	dropped, err := r.DropIndex(ctx, "vec_idx", nil)
	if err != nil || len(dropped.Indices()) != 0 {
		t.Fatalf("drop: %v %+v", err, dropped.Indices())
	}
	if _, err := dropped.DropIndex(ctx, "vec_idx", nil); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("drop again: %v", err)
	}
	// Without an index the search is exact.
	got, _ := searchIDs(t, dropped, vecs[:dim], &SearchOptions{K: 1})
	if !slices.Equal(got, []uint64{0}) {
		t.Fatalf("exact search without index: %v", got)
	}
}

func float32NaN() float32 {
	var z float32
	return z / z
}

// A corrupt index file is reported, naming the file, never a panic.
func TestVectorIndexCorruptFile(t *testing.T) {
	ctx := context.Background()
	const dim = 4
	vecs := clustered(rand.New(rand.NewPCG(10, 10)), 200, dim)
	store := blob.NewMemStore("v")
	d := newVecDataset(t, store, vecs, dim, 200, 200, false)
	d = createLancerIVF(t, d, "vec", nil) // lancer's own format, still read
	key := indicesDir + d.Indices()[0].UUID + "/" + vectorIndexFile
	data, err := store.ReadAll(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x40
	if err := store.Write(ctx, key, data); err != nil {
		t.Fatal(err)
	}
	fresh := blob.NewMemStore("w") // another store: not in the index cache
	copyStore(t, store, fresh)
	d2 := openStore(t, fresh, 0, checkedAlloc(t))
	// The index loads partitions lazily: search them all (K = every row,
	// so none is skipped) to reach the damaged byte wherever it is.
	rec, err := d2.Search(ctx, "vec", vecs[:dim], &SearchOptions{K: 200})
	if err == nil {
		rec.Release()
	}
	if !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), vectorIndexFile) {
		t.Fatalf("corrupt index: %v", err)
	}
}

func copyStore(t *testing.T, from, to blob.Store) {
	ctx := context.Background()
	for info, err := range from.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		b, err := from.ReadAll(ctx, info.Key)
		if err != nil {
			t.Fatal(err)
		}
		if err := to.Write(ctx, info.Key, b); err != nil {
			t.Fatal(err)
		}
	}
}

// An index built while another writer appends lands next to the append.
func TestCreateIndexRebasesOverAppend(t *testing.T) {
	ctx := context.Background()
	const dim = 4
	vecs := clustered(rand.New(rand.NewPCG(11, 11)), 300, dim)
	store := blob.NewMemStore("v")
	d := newVecDataset(t, store, vecs, dim, 200, 200, false)
	r := vecReader(checkedAlloc(t), vecs, dim, 200, 300)
	appended, err := d.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	withIndex, err := d.CreateIndex(ctx, "vec", nil) // read at version 1
	if err != nil {
		t.Fatal(err)
	}
	if withIndex.Version() != appended.Version()+1 || len(withIndex.Manifest().Fragments) != 2 {
		t.Fatalf("version %d with %d fragments", withIndex.Version(), len(withIndex.Manifest().Fragments))
	}
	if ix := withIndex.Indices(); len(ix) != 1 || !slices.Equal(ix[0].Fragments, []uint32{0}) {
		t.Fatalf("index %+v", ix)
	}
	got, _ := searchIDs(t, withIndex, vecs[250*dim:251*dim], &SearchOptions{K: 1})
	if !slices.Equal(got, []uint64{250}) {
		t.Fatalf("appended row not found: %v", got)
	}
}

// Compaction keeps searches right: without stable row ids the rewritten
// rows leave the index and are scored exactly; with them the index follows
// the rows to their new fragments.
func TestVectorSearchAfterCompaction(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 1000
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(12, 12))
			vecs := clustered(rng, n, dim)
			d := newVecDataset(t, blob.NewMemStore("v"), vecs, dim, 750, 250, stable)
			// IVF_FLAT: compaction remaps it (it skips the fragments of
			// an IVF_HNSW_SQ index for now).
			d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: IndexIVFFlat, Partitions: 4})
			if err != nil {
				t.Fatal(err)
			}
			r := vecReader(checkedAlloc(t), vecs, dim, 750, n)
			if d, err = d.Append(ctx, r, nil); err != nil {
				t.Fatal(err)
			}
			r.Release()
			if d, err = d.Delete(ctx, "id % 10 = 3", nil); err != nil {
				t.Fatal(err)
			}
			c, stats, err := d.Compact(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if stats.FragmentsRemoved == 0 {
				t.Fatal("nothing compacted")
			}
			segs := c.Indices()
			if stable && (len(segs) != 1 || len(segs[0].Fragments) == 0) {
				t.Fatalf("stable row ids: index lost its coverage: %+v", segs)
			}
			keep := func(i int) bool { return i%10 != 3 }
			for qi := range 10 {
				q := vecs[(qi*97)*dim : (qi*97+1)*dim]
				want := exactTop(vecs, dim, q, 5, vector.L2, keep)
				got, _ := searchIDs(t, c, q, &SearchOptions{K: 5, NProbes: 4})
				if recallOf(got, want) < 0.8 {
					t.Fatalf("query %d: %v, want %v", qi, got, want)
				}
				for _, id := range got {
					if !keep(int(id)) {
						t.Fatalf("deleted row %d returned", id)
					}
				}
			}
		})
	}
}

// Searches share one Dataset's index, caches and open files safely.
func TestVectorSearchConcurrent(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 2000
	rng := rand.New(rand.NewPCG(13, 13))
	vecs := clustered(rng, n, dim)
	store := blob.NewMemStore("v")
	d := newVecDataset(t, store, vecs, dim, 1500, 500, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Partitions: 4})
	if err != nil {
		t.Fatal(err)
	}
	r := vecReader(checkedAlloc(t), vecs, dim, 1500, n)
	if d, err = d.Append(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	r.Release()
	d = openStore(t, store, 0, checkedAlloc(t)) // cold caches
	want := make([][]uint64, 16)
	queries := clustered(rng, 16, dim)
	errs := make(chan error, 16)
	got := make([][]uint64, 16)
	for qi := range 16 {
		go func() {
			rec, err := d.Search(ctx, "vec", queries[qi*dim:(qi+1)*dim], &SearchOptions{K: 5, Columns: []string{"id"}, Filter: "id % 2 = 0"})
			if err == nil {
				for _, v := range rec.Column(0).(*array.Int64).Int64Values() {
					got[qi] = append(got[qi], uint64(v))
				}
				rec.Release()
			}
			errs <- err
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for qi := range 16 {
		want[qi], _ = searchIDs(t, d, queries[qi*dim:(qi+1)*dim], &SearchOptions{K: 5, Filter: "id % 2 = 0"})
		if !slices.Equal(got[qi], want[qi]) {
			t.Fatalf("query %d: concurrent %v, alone %v", qi, got[qi], want[qi])
		}
	}
}

func TestVectorIndexIVFPQ(t *testing.T) {
	ctx := context.Background()
	const dim, n = 16, 4000
	rng := rand.New(rand.NewPCG(21, 22))
	vecs := clustered(rng, n, dim)
	queries := clustered(rng, 20, dim)
	store := blob.NewMemStore("v")
	d := newVecDataset(t, store, vecs, dim, n, 1000, false)
	if _, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: "IVF_PQ", SubVectors: 3}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Fatalf("3 sub-vectors of 16 dimensions: %v", err)
	}
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Type: "IVF_PQ", SubVectors: 8, Partitions: 8})
	if err != nil {
		t.Fatal(err)
	}
	d2 := openStore(t, store, 0, checkedAlloc(t))
	raw, refined := 0.0, 0.0
	for qi := range 20 {
		q := queries[qi*dim : (qi+1)*dim]
		want := exactTop(vecs, dim, q, 10, vector.L2, nil)
		got, _ := searchIDs(t, d2, q, &SearchOptions{K: 10, NProbes: 8})
		raw += recallOf(got, want)
		got, dists := searchIDs(t, d2, q, &SearchOptions{K: 10, NProbes: 8, RefineFactor: 10})
		refined += recallOf(got, want)
		for i, id := range got {
			if exact := vector.L2Squared(q, vecs[int(id)*dim:int(id+1)*dim]); dists[i] != exact {
				t.Fatalf("row %d: refined distance %v, exact %v", id, dists[i], exact)
			}
		}
	}
	t.Logf("IVF_PQ recall@10 %.3f, refined ×10 %.3f", raw/20, refined/20)
	if refined/20 < 0.95 {
		t.Fatalf("refined recall@10 %.3f", refined/20)
	}
	// Deltas keep the type and sub-vectors.
	r := vecReader(checkedAlloc(t), clustered(rng, 500, dim), dim, 0, 500)
	d, err = d.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	d, err = d.OptimizeIndexes(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	segs := d.Indices()
	if len(segs) != 2 {
		t.Fatalf("%d segments after optimize", len(segs))
	}
	for i, raw := range d.manifest.IndexSegments() {
		det, _, ok, err := segmentBuildParams(raw)
		if err != nil || !ok || raw.Details.TypeURL != LanceVectorIndexTypeURL {
			t.Fatalf("segment %d: %s: %v %v", i, raw.Details.TypeURL, ok, err)
		}
		if det.Type != IndexIVFPQ || det.SubVectors != 8 {
			t.Fatalf("segment %d: type %q, %d sub-vectors", i, det.Type, det.SubVectors)
		}
	}
}

// A damaged partition of a lazily opened index is reported by the search
// that needs it, naming the file and the partition.
func TestVectorIndexCorruptPartition(t *testing.T) {
	ctx := context.Background()
	const dim, n = 4, 2000
	vecs := clustered(rand.New(rand.NewPCG(11, 11)), n, dim)
	store := blob.NewMemStore("v")
	d := newVecDataset(t, store, vecs, dim, n, n, false)
	// lancer's own format, still read.
	d = createLancerIVF(t, d, "vec", &CreateIndexOptions{Type: IndexIVFPQ, Metric: vector.Dot, SubVectors: 4, Partitions: 8})
	key := indicesDir + d.Indices()[0].UUID + "/" + vectorIndexFile
	data, err := store.ReadAll(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	// The partitions (4·dim bytes a row) end before the 8-partition
	// directory and the checksum: damage the last partition's vectors.
	data[len(data)-4-20*8-10] ^= 0x40
	if err := store.Write(ctx, key, data); err != nil {
		t.Fatal(err)
	}
	fresh := blob.NewMemStore("w") // another store: not in the index cache
	copyStore(t, store, fresh)
	d2 := openStore(t, fresh, 0, checkedAlloc(t))
	// K = n: no partition can be skipped.
	_, err = d2.Search(ctx, "vec", vecs[:dim], &SearchOptions{K: n, NProbes: 8})
	if !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), vectorIndexFile) || !strings.Contains(err.Error(), "partition 7") {
		t.Fatalf("corrupt partition: %v", err)
	}
}

// TestVectorSearchHugeK checks the k and refine factor a caller controls:
// k beyond the rows means every row (without allocating by k), and a
// k × refine factor past MaxInt is an error, not an empty result.
func TestVectorSearchHugeK(t *testing.T) {
	ctx := context.Background()
	const dim, n = 8, 300
	rng := rand.New(rand.NewPCG(21, 22))
	vecs := clustered(rng, n, dim)
	d := newVecDataset(t, blob.NewMemStore("v"), vecs, dim, n, 100, false)
	d, err := d.CreateIndex(ctx, "vec", &CreateIndexOptions{Partitions: 4, Type: IndexIVFHNSWSQ})
	if err != nil {
		t.Fatal(err)
	}
	q := clustered(rng, 1, dim)
	// Checked first: unfixed, the product wrapped negative and the search
	// returned no rows rather than failing.
	for _, o := range []SearchOptions{
		{K: 3, RefineFactor: math.MaxInt/2 + 1},
		{K: math.MaxInt, RefineFactor: 2},
		{K: -1}, {NProbes: -1}, {Ef: -1}, {RefineFactor: -1},
	} {
		if hits, err := d.SearchRowIDs(ctx, "vec", q, &o); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Fatalf("%+v: %d hits, %v; want ErrInvalidArgument", o, len(hits), err)
		}
	}
	all := exactTop(vecs, dim, q, n, vector.L2, nil)
	for _, o := range []SearchOptions{
		{K: math.MaxInt32, Exact: true},
		{K: math.MaxInt32, NProbes: math.MaxInt32, Ef: math.MaxInt32, RefineFactor: 1},
		{K: 5, RefineFactor: math.MaxInt / 5}, // candidates clamp to the rows
		{K: math.MaxInt, RefineFactor: 1},
	} {
		got, _ := searchIDs(t, d, q, &o)
		want := all[:min(o.K, n)]
		if !slices.Equal(got, want) {
			t.Errorf("K %d refine %d exact %v: %d rows %v, want %d", o.K, o.RefineFactor, o.Exact, len(got), got[:min(len(got), 5)], len(want))
		}
	}
}
