package vector

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

// rerankIDs re-ranks candidates (caller ids of ivfTestData) with exact
// distances and keeps k.
func (s *ivfTestSet) rerank(q []float32, cands []Neighbor, k int, m Metric) []Neighbor {
	rows := make([]Neighbor, len(cands))
	for i, c := range cands {
		rows[i] = Neighbor{ID: (c.ID - 1000) / 7}
	}
	out := Rerank(s.vecs, s.dim, q, rows, k, m)
	for i := range out {
		out[i].ID = s.ids[out[i].ID]
	}
	return out
}

func TestIVFPQRecall(t *testing.T) {
	s := ivfTestData()
	for _, m := range []Metric{L2, Cosine, Dot} {
		x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Metric: m, Storage: StorePQ, Partitions: 20, PQ: PQOptions{SubVectors: 8}})
		if err != nil {
			t.Fatal(err)
		}
		if x.Storage() != StorePQ || x.PQSubVectors() != 8 {
			t.Fatalf("storage %v, %d sub-vectors", x.Storage(), x.PQSubVectors())
		}
		raw, refined := 0.0, 0.0
		for q := 0; q < 40; q++ {
			query := s.query(q)
			truth := s.truth(query, 10, m, nil)
			res := searchIVF(x, query, 10, &IVFSearchOptions{NProbes: 20}, nil)
			checkIVFOrder(t, res)
			raw += recallAt(res, truth)
			cands := searchIVF(x, query, 100, &IVFSearchOptions{NProbes: 20}, nil)
			refined += recallAt(s.rerank(query, cands, 10, m), truth)
		}
		raw, refined = raw/40, refined/40
		t.Logf("%v: PQ recall@10 %.3f, reranked from 100: %.3f", m, raw, refined)
		if raw < 0.5 || refined < 0.95 {
			t.Errorf("%v: recall@10 %.3f, reranked %.3f", m, raw, refined)
		}
	}
}

// The asymmetric distance is the distance to the decoded vector.
func TestIVFPQDistance(t *testing.T) {
	s := ivfTestData()
	for _, m := range []Metric{L2, Cosine, Dot} {
		x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Metric: m, Storage: StorePQ, Partitions: 7, PQ: PQOptions{SubVectors: 4}})
		if err != nil {
			t.Fatal(err)
		}
		q := s.query(3)
		sc := x.newScorer(q)
		for p := 0; p < x.Partitions(); p++ {
			pt := x.parts[p]
			c := x.centroids[p*x.dim : (p+1)*x.dim]
			for i := 0; i < int(x.offsets[p+1]-x.offsets[p]); i += 17 {
				dec := x.pq.decode(nil, pt.codes[i*4:(i+1)*4])
				for j := range dec {
					dec[j] += c[j]
				}
				var want float32
				switch m {
				case L2:
					want = L2Squared(q, dec)
				case Dot:
					want = 1 - DotProduct(q, dec)
				case Cosine:
					want = CosineDistance(q, dec)
				}
				got := sc.dist(p, pt, i)
				if math.Abs(float64(got-want)) > 1e-3*(1+math.Abs(float64(want))) {
					t.Fatalf("%v partition %d row %d: distance %v, decoded %v", m, p, i, got, want)
				}
			}
		}
		if m == L2 {
			// Radii bound the decoded rows.
			for p := range x.Partitions() {
				if x.radius[p] <= 0 && x.offsets[p+1]-x.offsets[p] > 1 {
					t.Errorf("partition %d radius %v", p, x.radius[p])
				}
			}
		}
	}
}

func TestIVFPQRoundTripAndFilters(t *testing.T) {
	s := ivfTestData()
	x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Storage: StorePQ, Partitions: 16, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if x.PQSubVectors() != DefaultPQSubVectors(32) || DefaultPQSubVectors(32) != 4 || DefaultPQSubVectors(128) != 16 || DefaultPQSubVectors(100) != 10 || DefaultPQSubVectors(7) != 1 {
		t.Fatalf("default sub-vectors: %d, %d, %d, %d", x.PQSubVectors(), DefaultPQSubVectors(128), DefaultPQSubVectors(100), DefaultPQSubVectors(7))
	}
	b, err := x.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != x.EncodedSize() {
		t.Fatalf("EncodedSize %d, MarshalBinary %d bytes", x.EncodedSize(), len(b))
	}
	y, err := UnmarshalIVF(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := y.MarshalBinary()
	if !bytes.Equal(b, b2) {
		t.Fatal("re-marshalled bytes differ")
	}
	allow := NewAllowList(s.ids[:40]...)
	for q := 0; q < 40; q++ {
		for _, f := range []Filter{nil, allow, FilterFunc(func(id uint64) bool { return id%3 == 0 })} {
			a := searchIVF(x, s.query(q), 10, &IVFSearchOptions{NProbes: 4}, f)
			if c := searchIVF(y, s.query(q), 10, &IVFSearchOptions{NProbes: 4}, f); !slices.Equal(a, c) {
				t.Fatalf("query %d: %v before, %v after", q, a, c)
			}
			checkIVFOrder(t, a)
			if f == allow && len(a) != 10 {
				t.Fatalf("selective filter: %d results", len(a))
			}
		}
	}
	// Deterministic.
	z, _ := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Storage: StorePQ, Partitions: 16, Seed: 3, Workers: 1})
	bz, _ := z.MarshalBinary()
	if !bytes.Equal(b, bz) {
		t.Fatal("PQ index depends on Workers")
	}
	// Tiny inputs: fewer rows than codewords.
	tiny, err := BuildIVF([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 2, []uint64{1, 2, 3, 4}, &IVFOptions{Storage: StorePQ, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res := searchIVF(tiny, []float32{1, 2}, 4, &IVFSearchOptions{NProbes: 2}, nil); len(res) != 4 || res[0].ID != 1 {
		t.Fatalf("tiny: %v", res)
	}
}

// 4-bit PQ (Lance's num_bits=4): 16 codewords a sub-space, every code
// below 16, the codebook laid out 16 codewords a sub-vector, recall below
// 8-bit's but well above chance; odd sub-vectors and other widths refused.
func TestIVFPQ4Bit(t *testing.T) {
	s := ivfTestData()
	for _, m := range []Metric{L2, Cosine, Dot} {
		x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Metric: m, Storage: StorePQ, Partitions: 8, PQ: PQOptions{SubVectors: 8, Bits: 4, Raw: m == Dot}})
		if err != nil {
			t.Fatal(err)
		}
		if x.PQBits() != 4 || x.PQSubVectors() != 8 || len(x.PQCodebook()) != 16*s.dim {
			t.Fatalf("%v: %d bits, %d sub-vectors, codebook of %d values", m, x.PQBits(), x.PQSubVectors(), len(x.PQCodebook()))
		}
		for p := range x.Partitions() {
			_, _, codes, err := x.PartitionRows(t.Context(), p)
			if err != nil {
				t.Fatal(err)
			}
			if i := slices.IndexFunc(codes, func(c uint8) bool { return c >= 16 }); i >= 0 {
				t.Fatalf("%v: partition %d code byte %d is %d", m, p, i, codes[i])
			}
		}
		raw := 0.0
		for q := 0; q < 40; q++ {
			query := s.query(q)
			raw += recallAt(searchIVF(x, query, 10, &IVFSearchOptions{NProbes: 8}, nil), s.truth(query, 10, m, nil))
		}
		t.Logf("%v: 4-bit PQ recall@10 %.3f", m, raw/40)
		if raw/40 < 0.2 {
			t.Errorf("%v: 4-bit PQ recall@10 %.3f", m, raw/40)
		}
	}
	for _, o := range []PQOptions{{SubVectors: 5, Bits: 4}, {SubVectors: 8, Bits: 6}, {SubVectors: 8, Bits: 2}} {
		if _, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Storage: StorePQ, Partitions: 4, PQ: o}); err == nil {
			t.Errorf("PQ %+v accepted", o)
		}
	}
	x, _ := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Storage: StorePQ, Partitions: 4, PQ: PQOptions{SubVectors: 8}})
	if x.PQBits() != 8 || len(x.PQCodebook()) != 256*s.dim {
		t.Errorf("8-bit PQ: %d bits, codebook of %d values", x.PQBits(), len(x.PQCodebook()))
	}
}
