package interop_test

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// TestFragReuseAgreesWithLance: real Lance builds a vector index on a
// table lancer wrote; lancer deletes rows and compacts, and a further
// version puts back Lance's index as it was before the compaction with a
// legacy fragment reuse index recording the rewrite: the state a Lance
// compaction with defer_index_remap commits (LanceDB for Node cannot ask
// for one: its optimize takes no compaction options, and the flagged
// forms, 512 and 1024, are refused by Lance 12 itself). Lance and lancer
// then search the stale index alike, rows and distances, with and without
// a filter; after Lance appends and deletes on it (its commit records the
// translated fragment bitmaps) and after lancer deletes on it.
func TestFragReuseAgreesWithLance(t *testing.T) {
	node, ref := lanceRef(t)
	ctx := context.Background()
	const dim, n, per = 16, 600, 200
	rng := rand.New(rand.NewPCG(3, 5))
	vecs := make([]float32, (n+40)*dim)
	for i := range vecs {
		vecs[i] = float32(rng.NormFloat64())
	}
	queries := make([][]float32, 20)
	for i := range queries {
		queries[i] = vecs[(i*29)*dim : (i*29+1)*dim]
	}
	for _, tc := range []struct {
		name, typ string
		opts      map[string]any
	}{
		{"IVF_PQ", "ivfPq", map[string]any{"numPartitions": 4, "numSubVectors": 4}},
		{"IVF_FLAT", "ivfFlat", map[string]any{"numPartitions": 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			uri := filepath.Join(t.TempDir(), "v.lance")
			store, err := blob.NewLocalStore(uri)
			if err != nil {
				t.Fatal(err)
			}
			mem := memory.NewGoAllocator()
			var d *dataset.Dataset
			for from := 0; from < n; from += per {
				r := vecBatch(mem, vecs, dim, from, from+per)
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
			ask := func(reqs ...lanceIndexRequest) []vecReply {
				t.Helper()
				replies, err := askLance(node, ref, reqs)
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
			ask(lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "vec", Type: tc.typ}, IndexOptions: tc.opts},
				lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "id", Type: "btree"}},
				lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "createIndex", Column: "category", Type: "bitmap"}})
			if d, err = openDir(ctx, uri, nil); err != nil {
				t.Fatal(err)
			}
			if d, err = d.Delete(ctx, "id % 11 = 4", nil); err != nil {
				t.Fatal(err)
			}
			deferCompaction(t, ctx, store, d)

			compare := func(stage string) {
				t.Helper()
				var reqs []lanceIndexRequest
				for _, filter := range []string{"", "id % 3 = 0"} {
					for _, q := range queries {
						reqs = append(reqs, lanceIndexRequest{
							vecRequest: vecRequest{URI: uri, Op: "search", Column: "vec", Vector: q, K: 10, Filter: filter, Select: []string{"id"}},
							NProbes:    2,
						})
					}
				}
				replies := ask(reqs...)
				d, err := openDir(ctx, uri, nil)
				if err != nil {
					t.Fatal(err)
				}
				if d.Manifest().FragReuse() == nil {
					t.Fatalf("%s: no fragment reuse index", stage)
				}
				mismatched := 0
				for i, req := range reqs {
					want := lanceHits(t, replies[i])
					rec, err := d.Search(ctx, "vec", req.Vector, &dataset.SearchOptions{K: req.K, NProbes: req.NProbes, Filter: req.Filter, Columns: []string{"id"}})
					if err != nil {
						t.Fatalf("%s: lancer search: %v", stage, err)
					}
					ids := rec.Column(0).(*array.Int64).Int64Values()
					dist := rec.Column(1).(*array.Float32).Float32Values()
					if !sameHits(ids, dist, want, false) {
						mismatched++
						t.Logf("%s: query %d (filter %q): lancer %v %v, Lance %v", stage, i, req.Filter, ids, dist, want)
					}
					for _, id := range ids {
						if id%11 == 4 && id < n {
							t.Errorf("%s: row %d, deleted before the compaction, returned", stage, id)
						}
					}
					rec.Release()
				}
				if mismatched > 0 {
					t.Errorf("%s: %d of %d searches differ from Lance's", stage, mismatched, len(reqs))
				}
				// Filters the scalar indices answer: the same rows, at the
				// same addresses.
				for _, filter := range []string{"id < 150", "id >= 290 AND id < 310", "category = 'c2'"} {
					want := lanceRowPairs(t, ask(lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "query", Filter: filter, Select: []string{"id"}}})[0])
					sc, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id"}, Filter: filter, WithRowID: true})
					if err != nil {
						t.Fatal(err)
					}
					if len(sc.FilterIndices()) == 0 {
						t.Errorf("%s: %q: lancer used no index", stage, filter)
					}
					var got [][2]int64
					for rec, err := range sc.Batches(ctx) {
						if err != nil {
							t.Fatal(err)
						}
						ids := rec.Column(0).(*array.Int64).Int64Values()
						rids := rec.Column(1).(*array.Uint64).Uint64Values()
						for i := range ids {
							got = append(got, [2]int64{ids[i], int64(rids[i])})
						}
					}
					slices.SortFunc(got, func(a, b [2]int64) int { return cmp.Compare(a[1], b[1]) })
					if !slices.Equal(got, want) {
						t.Errorf("%s: %q: lancer %v, Lance %v", stage, filter, got, want)
					}
				}
				rep, err := dataset.Check(ctx, store, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !rep.OK() {
					t.Errorf("%s: check: %v", stage, rep.Violations)
				}
			}
			compare("deferred")
			var rows []map[string]any
			for i := n; i < n+40; i++ {
				rows = append(rows, map[string]any{"id": i, "category": fmt.Sprintf("c%d", i%5), "vec": vecs[i*dim : (i+1)*dim]})
			}
			ask(lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "append", Rows: rows}},
				lanceIndexRequest{vecRequest: vecRequest{URI: uri, Op: "delete", Filter: "id % 13 = 1"}})
			compare("Lance appended and deleted")
			if d, err = openDir(ctx, uri, nil); err != nil {
				t.Fatal(err)
			}
			if _, err = d.Delete(ctx, "id % 17 = 2", nil); err != nil {
				t.Fatal(err)
			}
			compare("lancer deleted")
		})
	}
}

// deferCompaction compacts d's fragments with lancer and commits, on top,
// the version Lance's compaction with defer_index_remap would have
// committed instead: the rewritten fragments, the index segments as they
// were before, and a legacy fragment reuse index recording the rewrite.
func deferCompaction(t *testing.T, ctx context.Context, store blob.Store, before *dataset.Dataset) {
	t.Helper()
	stale := before.Manifest().IndexSegments()
	s, err := before.Scan(&dataset.ScanOptions{Columns: []string{}, WithRowAddress: true})
	if err != nil {
		t.Fatal(err)
	}
	var survivors []uint64
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		survivors = append(survivors, rec.Column(int(rec.NumCols())-1).(*array.Uint64).Uint64Values()...)
	}
	slices.Sort(survivors)
	after, stats, err := before.Compact(ctx, &dataset.CompactOptions{TargetRowsPerFragment: 1 << 20, MaterializeDeletionsThreshold: -1})
	if err != nil {
		t.Fatal(err)
	}
	if stats.FragmentsRemoved != len(before.Manifest().Fragments) {
		t.Fatalf("compaction %+v", stats)
	}
	rec := manifest.FragReuseRecord{DatasetVersion: before.Version(), Survivors: survivors}
	for _, f := range before.Manifest().Fragments {
		del, _ := f.NumDeletedRows()
		rec.Sources = append(rec.Sources, manifest.FragDigest{ID: f.ID, PhysicalRows: f.PhysicalRows, NumDeletedRows: del})
	}
	newFrags := roaring.New()
	for _, f := range after.Manifest().Fragments {
		rec.Destinations = append(rec.Destinations, manifest.FragDigest{ID: f.ID, PhysicalRows: f.PhysicalRows})
		newFrags.Add(uint32(f.ID))
	}
	content, err := manifest.EncodeFragReuseContent([]manifest.FragReuseRecord{rec})
	if err != nil {
		t.Fatal(err)
	}
	bitmap, err := newFrags.ToBytes()
	if err != nil {
		t.Fatal(err)
	}
	uuid := make([]byte, 16)
	_, _ = crand.Read(uuid)
	uuid[6] = uuid[6]&0x0f | 0x40
	uuid[8] = uuid[8]&0x3f | 0x80
	zero := int32(0)
	segs := []*manifest.IndexMetadata{{
		UUID: uuid, Name: manifest.FragReuseIndexName, DatasetVersion: after.Version(), FragmentBitmap: bitmap,
		Details:      &manifest.IndexDetails{TypeURL: manifest.FragReuseDetailsTypeURL, Value: manifest.EncodeFragReuseDetails(content, nil)},
		IndexVersion: &zero,
	}}
	for _, seg := range stale {
		segs = append(segs, seg.Clone())
	}
	m := after.Manifest().Clone()
	m.SetIndexSegments(segs)
	m.Version = after.Version() + 1
	file, err := manifest.EncodeFile(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := openLatestKey(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	naming := manifest.ParseName(strings.TrimPrefix(latest, manifest.VersionsDir)).Naming
	if err := store.Write(ctx, manifest.Key(naming, m.Version), file); err != nil {
		t.Fatal(err)
	}
}

// openLatestKey returns the key of the latest manifest in _versions/.
func openLatestKey(ctx context.Context, store blob.Store) (string, error) {
	var best string
	var bestV uint64
	for info, err := range store.List(ctx, manifest.VersionsDir) {
		if err != nil {
			return "", err
		}
		if nm := manifest.ParseName(strings.TrimPrefix(info.Key, manifest.VersionsDir)); nm.OK && nm.Version >= bestV {
			best, bestV = info.Key, nm.Version
		}
	}
	return best, nil
}

// lanceRowPairs returns the (id, _rowid) pairs of a query reply, by row id.
func lanceRowPairs(t *testing.T, r vecReply) [][2]int64 {
	t.Helper()
	if r.Error != "" {
		t.Fatalf("real Lance: %s", r.Error)
	}
	out := make([][2]int64, len(r.Rows))
	for i, raw := range r.Rows {
		var row struct {
			ID    int64  `json:"id"`
			RowID uint64 `json:"_rowid"`
		}
		if err := json.Unmarshal(raw, &row); err != nil {
			t.Fatal(err)
		}
		out[i] = [2]int64{row.ID, int64(row.RowID)}
	}
	slices.SortFunc(out, func(a, b [2]int64) int { return cmp.Compare(a[1], b[1]) })
	return out
}
