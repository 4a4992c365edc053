package vector

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/lancerdb/lancer"
)

// ivfTestData is 5000×32 clustered rows (60 centres) and 40 queries, with
// caller ids that are not row positions: id(i) = 1000 + 7i.
type ivfTestSet struct {
	n, dim   int
	vecs, qs []float32
	ids      []uint64
}

func ivfTestData() *ivfTestSet {
	const n, dim = 5000, 32
	vecs, qs := clusteredData(n, 40, dim, 60, 77)
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = 1000 + 7*uint64(i)
	}
	return &ivfTestSet{n: n, dim: dim, vecs: vecs, qs: qs, ids: ids}
}

func (s *ivfTestSet) query(q int) []float32 { return s.qs[q*s.dim : (q+1)*s.dim] }

// truth is exact search with caller ids.
func (s *ivfTestSet) truth(q []float32, k int, m Metric, allow func(id uint64) bool) []Neighbor {
	var f Filter
	if allow != nil {
		f = FilterFunc(func(row uint64) bool { return allow(s.ids[row]) })
	}
	out := FlatSearch(s.vecs, s.dim, q, k, m, f)
	for i := range out {
		out[i].ID = s.ids[out[i].ID]
	}
	return out
}

func checkIVFOrder(t *testing.T, res []Neighbor) {
	t.Helper()
	for i := 1; i < len(res); i++ {
		a, b := res[i-1], res[i]
		if a.Distance > b.Distance || (a.Distance == b.Distance && a.ID >= b.ID) {
			t.Fatalf("results out of order at %d: %v", i, res)
		}
	}
}

func TestIVFRecall(t *testing.T) {
	s := ivfTestData()
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		for _, st := range []Storage{StoreFloat32, StoreSQ8} {
			for _, m := range []Metric{L2, Cosine, Dot} {
				if hnswRace && m != L2 {
					continue // the race detector makes builds slow
				}
				t.Run(fmt.Sprintf("%v/%v/%v", sub, st, m), func(t *testing.T) {
					x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Metric: m, Sub: sub, Storage: st, Seed: 1})
					if err != nil {
						t.Fatal(err)
					}
					if x.Partitions() != 71 || x.Len() != s.n || x.Dim() != s.dim || x.Metric() != m || x.Sub() != sub || x.Storage() != st {
						t.Fatalf("accessors: %d partitions, %d rows, dim %d, %v %v %v", x.Partitions(), x.Len(), x.Dim(), x.Metric(), x.Sub(), x.Storage())
					}
					fn := m.Func()
					recall := 0.0
					for q := 0; q < 40; q++ {
						res := searchIVF(x, s.query(q), 10, nil, nil)
						if len(res) != 10 {
							t.Fatalf("query %d: %d results", q, len(res))
						}
						checkIVFOrder(t, res)
						for _, nb := range res {
							row := int(nb.ID-1000) / 7
							if st == StoreFloat32 && nb.Distance != fn(s.query(q), s.vecs[row*s.dim:(row+1)*s.dim]) {
								t.Fatalf("query %d: id %d distance %v, want the exact %v", q, nb.ID, nb.Distance, fn(s.query(q), s.vecs[row*s.dim:(row+1)*s.dim]))
							}
						}
						recall += recallAt(res, s.truth(s.query(q), 10, m, nil))
					}
					recall /= 40
					// Two probes of 71 partitions: a search that ranked
					// partitions wrongly would fall far below.
					narrow := 0.0
					for q := 0; q < 40; q++ {
						narrow += recallAt(searchIVF(x, s.query(q), 10, &IVFSearchOptions{NProbes: 2}, nil), s.truth(s.query(q), 10, m, nil))
					}
					narrow /= 40
					if narrow < 0.6 {
						t.Errorf("recall@10 with 2 probes %.3f, want ≥ 0.6", narrow)
					}
					t.Logf("recall@10 with 2 probes %.3f", narrow)
					// Exact storage loses only to unprobed partitions;
					// SQ8 also to quantization (32 dims of range ~6 in
					// 255 steps).
					want := 0.95
					if st == StoreSQ8 {
						want = 0.93
					}
					if recall < want {
						t.Errorf("recall@10 %.3f, want ≥ %.2f", recall, want)
					}
					t.Logf("recall@10 %.3f", recall)
				})
			}
		}
	}
}

// Probing every partition of a flat float32 index is exact search.
func TestIVFAllProbesIsExact(t *testing.T) {
	s := ivfTestData()
	for _, parts := range []int{1, 13} {
		x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Partitions: parts})
		if err != nil {
			t.Fatal(err)
		}
		for q := 0; q < 10; q++ {
			got := searchIVF(x, s.query(q), 25, &IVFSearchOptions{NProbes: parts}, nil)
			if want := s.truth(s.query(q), 25, L2, nil); !slices.Equal(got, want) {
				t.Fatalf("partitions %d query %d:\n got %v\nwant %v", parts, q, got, want)
			}
		}
	}
}

func TestIVFFilters(t *testing.T) {
	s := ivfTestData()
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Sub: sub, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(4, 4))
		for _, frac := range []float64{0.001, 0.01, 0.3} {
			set := map[uint64]bool{}
			var list []uint64
			for _, id := range s.ids {
				if r.Float64() < frac {
					set[id] = true
					list = append(list, id)
				}
			}
			al := NewAllowList(append(list, 3, 1<<40)...) // ids not in the index too
			ff := FilterFunc(func(id uint64) bool { return set[id] })
			for _, f := range []Filter{al, ff} {
				recall := 0.0
				for q := 0; q < 20; q++ {
					res := searchIVF(x, s.query(q), 10, nil, f)
					want := s.truth(s.query(q), 10, L2, func(id uint64) bool { return set[id] })
					checkIVFOrder(t, res)
					for _, nb := range res {
						if !set[nb.ID] {
							t.Fatalf("%v frac %v: id %d not allowed", sub, frac, nb.ID)
						}
					}
					if frac <= 0.01 && !slices.Equal(res, want) {
						// A selective filter is answered exactly.
						t.Fatalf("%v frac %v %T query %d:\n got %v\nwant %v", sub, frac, f, q, res, want)
					}
					recall += recallAt(res, want)
				}
				if recall/20 < 0.9 {
					t.Errorf("%v frac %v %T: recall %.3f", sub, frac, f, recall/20)
				}
			}
		}
		for _, none := range []Filter{NewAllowList(), NewAllowList(1, 2, 3), FilterFunc(func(uint64) bool { return false })} {
			if res := searchIVF(x, s.query(0), 10, nil, none); len(res) != 0 {
				t.Errorf("%v: filter allowing nothing returned %v", sub, res)
			}
		}
	}
}

func TestIVFSmall(t *testing.T) {
	vecs := []float32{0, 0, 1, 0, 0, 1, 5, 5}
	ids := []uint64{40, 10, 30, 20}
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		for _, st := range []Storage{StoreFloat32, StoreSQ8} {
			for _, parts := range []int{0, 1, 3, 100} {
				x, err := BuildIVF(vecs, 2, ids, &IVFOptions{Partitions: parts, Sub: sub, Storage: st})
				if err != nil {
					t.Fatal(err)
				}
				want := min(max(parts, 1), 4)
				if parts == 0 {
					want = 2
				}
				if x.Partitions() != want {
					t.Errorf("Partitions: %d → %d, want %d", parts, x.Partitions(), want)
				}
				res := searchIVF(x, []float32{0, 0}, 10, &IVFSearchOptions{NProbes: 100}, nil)
				if len(res) != 4 || res[0].ID != 40 || res[3].ID != 20 {
					t.Errorf("%v/%v/%d: %v", sub, st, parts, res)
				}
				checkIVFOrder(t, res)
				ids := x.IDs()
				slices.Sort(ids)
				if !slices.Equal(ids, []uint64{10, 20, 30, 40}) {
					t.Errorf("IDs() = %v", ids)
				}
				if searchIVF(x, []float32{0, 0}, 0, nil, nil) != nil {
					t.Error("k = 0: want nil")
				}
			}
		}
	}
	one, err := BuildIVF([]float32{1, 2, 3}, 3, []uint64{9}, &IVFOptions{Sub: SubHNSW})
	if err != nil {
		t.Fatal(err)
	}
	if res := searchIVF(one, []float32{0, 0, 0}, 3, nil, nil); len(res) != 1 || res[0].ID != 9 || res[0].Distance != 14 {
		t.Errorf("one row: %v", res)
	}
}

func TestIVFBuildErrors(t *testing.T) {
	vecs := []float32{1, 2, 3, 4}
	ids := []uint64{1, 2}
	for _, c := range []struct {
		name string
		vecs []float32
		dim  int
		ids  []uint64
		o    *IVFOptions
	}{
		{"no rows", nil, 2, nil, nil},
		{"dim 0", vecs, 0, ids, nil},
		{"ids/vectors", vecs, 2, []uint64{1}, nil},
		{"nan", []float32{1, float32(math.NaN()), 3, 4}, 2, ids, nil},
		{"inf", []float32{1, 2, 3, float32(math.Inf(-1))}, 2, ids, nil},
		{"duplicate ids", vecs, 2, []uint64{5, 5}, nil},
		{"metric", vecs, 2, ids, &IVFOptions{Metric: 3}},
		{"sub", vecs, 2, ids, &IVFOptions{Sub: 2}},
		{"storage", vecs, 2, ids, &IVFOptions{Storage: 3}},
		{"pq bits", vecs, 2, ids, &IVFOptions{Storage: StorePQ, PQ: PQOptions{Bits: 4}}},
		{"pq sub-vectors", vecs, 2, ids, &IVFOptions{Storage: StorePQ, PQ: PQOptions{SubVectors: 3}}},
		{"pq negative", vecs, 2, ids, &IVFOptions{Storage: StorePQ, PQ: PQOptions{SubVectors: -1}}},
		{"partitions", vecs, 2, ids, &IVFOptions{Partitions: -1}},
		{"workers", vecs, 2, ids, &IVFOptions{Workers: -1}},
		{"hnsw M", vecs, 2, ids, &IVFOptions{Sub: SubHNSW, HNSW: HNSWOptions{M: 1}}},
		{"kmeans iters", vecs, 2, ids, &IVFOptions{KMeans: KMeansOptions{MaxIters: -2}}},
	} {
		if _, err := BuildIVF(c.vecs, c.dim, c.ids, c.o); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("%s: err = %v, want ErrInvalidArgument", c.name, err)
		}
	}
	// PQ with HNSW is built for Lance's IVF_HNSW_PQ only: no binary form.
	x, err := BuildIVF(vecs, 2, ids, &IVFOptions{Storage: StorePQ, Sub: SubHNSW, PQ: PQOptions{SubVectors: 1}})
	if err != nil {
		t.Fatalf("PQ with HNSW: %v", err)
	}
	if _, err := x.MarshalBinary(); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("PQ with HNSW: MarshalBinary err = %v, want ErrUnsupported", err)
	}
}

// The index is a pure function of its input and options (Workers and
// Progress aside): the serialized bytes agree.
func TestIVFDeterministic(t *testing.T) {
	s := ivfTestData()
	var first []byte
	for _, w := range []int{1, 2, 5} {
		x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Sub: SubHNSW, Storage: StoreSQ8, Workers: w, Seed: 11})
		if err != nil {
			t.Fatal(err)
		}
		b, err := x.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("Workers=%d builds a different index", w)
		}
	}
}

func TestIVFProgress(t *testing.T) {
	s := ivfTestData()
	var mu sync.Mutex
	last := map[string][2]int{}
	_, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Sub: SubHNSW, Progress: func(stage string, done, total int) {
		mu.Lock()
		defer mu.Unlock()
		// Only k-means reports from one goroutine, in order.
		if p := last[stage]; done < 0 || done > total || (stage == "kmeans" && done < p[0]) {
			t.Errorf("%s: %d/%d after %d/%d", stage, done, total, p[0], p[1])
		}
		if done > last[stage][0] {
			last[stage] = [2]int{done, total}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"kmeans", "assign", "partitions"} {
		if p := last[stage]; p[0] != p[1] || p[1] == 0 {
			t.Errorf("stage %s ended at %d/%d", stage, p[0], p[1])
		}
	}
	if last["assign"][1] != s.n || last["partitions"][1] != 71 {
		t.Errorf("totals: %v", last)
	}
}

func TestIVFConcurrentSearch(t *testing.T) {
	s := ivfTestData()
	x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Sub: SubHNSW, Storage: StoreSQ8})
	if err != nil {
		t.Fatal(err)
	}
	want := make([][]Neighbor, 40)
	for q := range want {
		want[q] = searchIVF(x, s.query(q), 10, nil, nil)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for q := range want {
				if got := searchIVF(x, s.query((q+g)%40), 10, nil, nil); !slices.Equal(got, want[(q+g)%40]) {
					t.Errorf("concurrent query %d differs", (q+g)%40)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestIVFMarshalRoundTrip(t *testing.T) {
	s := ivfTestData()
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		for _, st := range []Storage{StoreFloat32, StoreSQ8} {
			for _, m := range []Metric{L2, Cosine} {
				if hnswRace && m != L2 {
					continue
				}
				x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Metric: m, Sub: sub, Storage: st, Partitions: 20})
				if err != nil {
					t.Fatal(err)
				}
				b, err := x.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if int64(len(b)) != x.EncodedSize() {
					t.Fatalf("EncodedSize %d, MarshalBinary %d bytes", x.EncodedSize(), len(b))
				}
				var w bytes.Buffer
				if n, err := x.WriteTo(&w); err != nil || n != int64(len(b)) || !bytes.Equal(w.Bytes(), b) {
					t.Fatalf("WriteTo: %d bytes, %v; differs from MarshalBinary", n, err)
				}
				y, err := UnmarshalIVF(b)
				if err != nil {
					t.Fatal(err)
				}
				if y.Len() != x.Len() || y.Dim() != x.Dim() || y.Metric() != m || y.Sub() != sub || y.Storage() != st || y.Partitions() != 20 || !slices.Equal(y.IDs(), x.IDs()) {
					t.Fatalf("%v/%v/%v: accessors differ after the round trip", sub, st, m)
				}
				allow := NewAllowList(s.ids[:2500]...)
				for q := 0; q < 40; q++ {
					for _, f := range []Filter{nil, allow} {
						if a, b := searchIVF(x, s.query(q), 10, &IVFSearchOptions{NProbes: 3, Ef: 12}, f), searchIVF(y, s.query(q), 10, &IVFSearchOptions{NProbes: 3, Ef: 12}, f); !slices.Equal(a, b) {
							t.Fatalf("%v/%v/%v query %d: %v before, %v after", sub, st, m, q, a, b)
						}
					}
				}
				b2, _ := y.MarshalBinary()
				if !bytes.Equal(b, b2) {
					t.Errorf("%v/%v/%v: re-marshalled bytes differ", sub, st, m)
				}
			}
		}
	}
}

// smallIVFBytes returns a small serialized index for the corruption tests.
func smallIVFBytes(t testing.TB, sub SubIndex, st Storage) []byte {
	vecs, _ := clusteredData(300, 0, 8, 6, 5)
	x, err := BuildIVF(vecs, 8, seqIDs(300), &IVFOptions{Sub: sub, Storage: st, Partitions: 6, HNSW: HNSWOptions{M: 4}, PQ: PQOptions{SubVectors: 4}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withCRC returns b with its checksums recomputed, so that the structural
// checks behind them are reached: the trailing one of format version 1,
// and for version 2 every partition's in the directory and then the
// metadata's, where the header's counts leave them in range.
func withCRC(b []byte) []byte {
	b = slices.Clone(b)
	if len(b) >= 10 && binary.LittleEndian.Uint16(b[8:]) == ivfVersion {
		fixV2Checksums(b)
		return b
	}
	if len(b) >= 4 {
		le32put(b[len(b)-4:], crc32c(b[:len(b)-4]))
	}
	return b
}

func fixV2Checksums(b []byte) {
	le := binary.LittleEndian
	if len(b) < ivfHeaderLen+4 {
		return
	}
	dim, P, n := uint64(le.Uint32(b[12:])), uint64(le.Uint32(b[20:])), uint64(le.Uint32(b[24:]))
	if dim > 1<<20 {
		return
	}
	metaEnd := uint64(ivfMetaEnd(dim, P, n, Storage(b[18]), uint64(le.Uint16(b[36:]))))
	dirLen := uint64(ivfDirEntry) * P
	if metaEnd+dirLen+4 > uint64(len(b)) {
		return
	}
	dir := b[uint64(len(b))-4-dirLen : len(b)-4]
	for i := uint64(0); i < P; i++ {
		e := dir[ivfDirEntry*i:]
		off, length := le.Uint64(e), le.Uint64(e[8:])
		if off <= uint64(len(b)) && length <= uint64(len(b))-off {
			le32put(e[16:], crc32c(b[off:off+length]))
		}
	}
	tab := crc32.MakeTable(crc32.Castagnoli)
	sum := crc32.Update(crc32.Checksum(b[:metaEnd], tab), tab, dir)
	le32put(b[len(b)-4:], sum)
}

func TestIVFUnmarshalCorrupt(t *testing.T) {
	isCorrupt := func(err error) bool {
		return errors.Is(err, lancer.ErrCorrupt) || errors.Is(err, lancer.ErrUnsupported)
	}
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		for _, st := range []Storage{StoreFloat32, StoreSQ8, StorePQ} {
			if st == StorePQ && sub == SubHNSW {
				continue
			}
			b := smallIVFBytes(t, sub, st)
			if _, err := UnmarshalIVF(b); err != nil {
				t.Fatal(err)
			}
			// Every truncation (every 7th under the race detector).
			step, rounds := 1, 2000
			if hnswRace {
				step, rounds = 7, 200
			}
			for n := 0; n < len(b); n += step {
				if _, err := UnmarshalIVF(b[:n]); !errors.Is(err, lancer.ErrCorrupt) {
					t.Fatalf("%v/%v truncated to %d: err = %v", sub, st, n, err)
				}
			}
			// Bit flips: the checksum catches them.
			r := rand.New(rand.NewPCG(1, 2))
			for range 300 {
				c := slices.Clone(b)
				off := r.IntN(len(c))
				c[off] ^= 1 << r.IntN(8)
				if _, err := UnmarshalIVF(c); !errors.Is(err, lancer.ErrCorrupt) && !(off == 8 && errors.Is(err, lancer.ErrUnsupported)) {
					t.Fatalf("%v/%v bit flip: err = %v", sub, st, err)
				}
			}
			// Behind a valid checksum: damaged bytes anywhere must give an
			// error or a usable index, never a panic; header fields must
			// be rejected.
			for range rounds {
				c := slices.Clone(b)
				for range 1 + r.IntN(3) {
					c[r.IntN(len(c)-4)] = byte(r.Uint32())
				}
				x, err := UnmarshalIVF(withCRC(c))
				if err != nil && !isCorrupt(err) {
					t.Fatalf("%v/%v: error %v is neither corrupt nor unsupported", sub, st, err)
				}
				if err == nil {
					searchIVF(x, make([]float32, x.Dim()), 5, nil, nil)
				}
			}
			for _, off := range []int{0, 12, 16, 17, 18, 19, 20, 24, 28, 30, 34, 36, 38} {
				c := slices.Clone(b)
				c[off] ^= 0x55
				if off == 28 || off == 30 {
					c[off+1] ^= 0x55
				}
				if _, err := UnmarshalIVF(withCRC(c)); !isCorrupt(err) {
					t.Errorf("%v/%v: header byte %d damaged: err = %v", sub, st, off, err)
				}
			}
			// Trailing garbage and a truncated body, checksums fixed.
			if _, err := UnmarshalIVF(withCRC(append(slices.Clone(b), 0, 0, 0, 0))); !isCorrupt(err) {
				t.Errorf("trailing bytes: err = %v", err)
			}
			if _, err := UnmarshalIVF(withCRC(append(slices.Clone(b[:len(b)-20]), 0, 0, 0, 0))); !isCorrupt(err) {
				t.Errorf("short body: err = %v", err)
			}
		}
	}
}

func TestIVFUnmarshalHugeCounts(t *testing.T) {
	b := smallIVFBytes(t, SubHNSW, StoreSQ8)
	for _, c := range []struct {
		off int
		v   uint32
	}{{12, 1 << 20}, {20, math.MaxUint32 - 1}, {24, math.MaxUint32 - 1}, {20, 0}} {
		d := slices.Clone(b)
		le32put(d[c.off:], c.v)
		if _, err := UnmarshalIVF(withCRC(d)); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("field at %d = %d: err = %v", c.off, c.v, err)
		}
	}
}

// Partitions above exactGraphMax rows get incremental HNSW graphs.
func TestIVFLargePartitions(t *testing.T) {
	s := ivfTestData()
	x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Partitions: 2, Sub: SubHNSW, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	for p, size := range x.PartitionSizes() {
		if size > exactGraphMax && x.parts[p].graph.maxLevel == 0 {
			t.Logf("partition %d of %d rows has one layer", p, size)
		}
	}
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	y, err := UnmarshalIVF(b)
	if err != nil {
		t.Fatal(err)
	}
	recall := 0.0
	for q := 0; q < 40; q++ {
		res := searchIVF(x, s.query(q), 10, nil, nil)
		if !slices.Equal(res, searchIVF(y, s.query(q), 10, nil, nil)) {
			t.Fatalf("query %d differs after the round trip", q)
		}
		recall += recallAt(res, s.truth(s.query(q), 10, L2, nil))
	}
	if recall/40 < 0.95 {
		t.Errorf("recall@10 %.3f", recall/40)
	}
}

// TestPartitionGraphScratch: a graph built on a reused distance matrix is
// the one built on a fresh matrix, bit for bit, whatever the matrix held:
// the scratch is poisoned with -1, a distance nearer than any real one, so
// a cell read before it is written would change the links.
func TestPartitionGraphScratch(t *testing.T) {
	scratch := &graphScratch{d: make([]float32, 700*700)}
	for i := range scratch.d {
		scratch.d[i] = -1
	}
	for _, c := range []struct {
		n      int
		metric Metric
	}{{600, L2}, {300, Cosine}, {650, Dot}, {1, L2}, {2, L2}} {
		vecs, _ := clusteredData(c.n, 0, 16, 3, uint32(c.n))
		o := HNSWOptions{M: 4, EfConstruction: 20, Metric: c.metric, Seed: 7}
		want, err := buildPartitionGraph(vecs, 16, o, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := buildPartitionGraph(vecs, 16, o, scratch)
		if err != nil {
			t.Fatal(err)
		}
		wb, err := want.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		gb, err := got.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(wb, gb) {
			t.Fatalf("%d rows, %v: the graph built on the reused matrix differs", c.n, c.metric)
		}
	}
	if cap(scratch.d) != 700*700 {
		t.Fatalf("the scratch was reallocated to %d floats", cap(scratch.d))
	}
}

func TestPartitionGraph(t *testing.T) {
	vecs, _ := clusteredData(600, 0, 16, 3, 8)
	g, err := buildPartitionGraph(vecs, 16, HNSWOptions{M: 4, EfConstruction: 20, Metric: L2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	reachable := func() int {
		seen := map[uint32]bool{g.entry: true}
		stack := []uint32{g.entry}
		for len(stack) > 0 {
			u := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, v := range g.neighbors(u, 0) {
				if !seen[v] {
					seen[v] = true
					stack = append(stack, v)
				}
			}
		}
		return len(seen)
	}
	if r := reachable(); r != 600 {
		t.Fatalf("%d of 600 nodes reachable", r)
	}
	// Exact search through the graph.
	recall := 0.0
	for q := 0; q < 50; q++ {
		qv := vecs[q*16 : (q+1)*16]
		recall += recallAt(g.Search(qv, 10, 40, nil), FlatSearch(vecs, 16, qv, 10, L2, nil))
	}
	if recall/50 < 0.95 {
		t.Errorf("recall@10 %.3f", recall/50)
	}
	// Cut every layer-0 link into a block of 100 nodes without the entry
	// point: the repair reconnects them.
	n := g.n
	D := make([]float32, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			D[i*n+j] = L2Squared(vecs[i*16:(i+1)*16], vecs[j*16:(j+1)*16])
		}
	}
	lo := uint32(100)
	if g.entry >= lo && g.entry < lo+100 {
		lo = 300
	}
	cut := func(v uint32) bool { return v >= lo && v < lo+100 }
	for u := 0; u < n; u++ {
		blk := g.links(uint32(u), 0)
		nb := slices.DeleteFunc(slices.Clone(blk[1:1+blk[0]]), func(v uint32) bool { return cut(v) && !cut(uint32(u)) })
		blk[0] = uint32(len(nb))
		copy(blk[1:], nb)
	}
	if r := reachable(); r > 500 {
		t.Fatalf("cut failed: %d reachable", r)
	}
	linkUnreachable(g, D)
	if r := reachable(); r != 600 {
		t.Errorf("after repair %d of 600 nodes reachable", r)
	}
}

func TestSelectSmallest(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{1, 5, 100, 300, 1000} {
		for _, k := range []int{1, 3, 50, 200, 2000} {
			keys := make([]uint64, n)
			for i := range keys {
				keys[i] = r.Uint64N(uint64(n)) // duplicates too
			}
			want := slices.Sorted(slices.Values(keys))[:min(k, n)]
			got := slices.Clone(selectSmallest(keys, k))
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("n=%d k=%d: got %v, want %v", n, k, got, want)
			}
		}
	}
}

// searchIVF is Search on an index that holds every partition (built or
// decoded whole), which never fails: it panics if it does.
func searchIVF(x *IVF, query []float32, k int, o *IVFSearchOptions, allow Filter) []Neighbor {
	res, err := x.Search(context.Background(), query, k, o, allow)
	if err != nil {
		panic(err)
	}
	return res
}
