package vector

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lancerdb/lancer"
)

// clustered returns n rows of dim float32s around a few random centers, the
// shape of real embeddings more than uniform noise is.
func clustered(r *rand.Rand, n, dim, clusters int) []float32 {
	centers := make([][]float32, clusters)
	for c := range centers {
		centers[c] = randVec(r, dim)
	}
	vs := make([]float32, n*dim)
	for i := range n {
		c := centers[r.IntN(clusters)]
		for j := range dim {
			vs[i*dim+j] = c[j] + 0.3*float32(r.NormFloat64())
		}
	}
	return vs
}

func TestSQ8EncodeDecode(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const dim, n = 33, 500
	vs := clustered(r, n, dim, 5)
	q, err := TrainSQ8(vs, dim)
	if err != nil {
		t.Fatal(err)
	}
	codes := q.EncodeAll(nil, vs)
	if len(codes) != n*dim {
		t.Fatalf("%d bytes of codes", len(codes))
	}
	for i := range n {
		dec := q.Decode(nil, codes[i*dim:(i+1)*dim])
		for j, x := range dec {
			// Within half a step of the original (the sample is the
			// training set, so nothing clamps).
			if e := math.Abs(float64(x - vs[i*dim+j])); e > float64(q.step[j])*0.5001+1e-6 {
				t.Fatalf("row %d dim %d: %v decodes to %v, step %v", i, j, vs[i*dim+j], x, q.step[j])
			}
		}
	}
	// Out of range values clamp; NaN encodes as 0; a constant dimension
	// encodes as 0 and decodes exactly.
	c := q.Encode(nil, slices.Repeat([]float32{1e9}, dim))
	if c[0] != 255 {
		t.Fatalf("1e9 encodes as %d", c[0])
	}
	c = q.Encode(nil, slices.Repeat([]float32{float32(math.NaN())}, dim))
	if c[0] != 0 {
		t.Fatalf("NaN encodes as %d", c[0])
	}
	k, err := NewSQ8([]float32{2, 0}, []float32{2, 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := k.Decode(nil, k.Encode(nil, []float32{2, 1})); !slices.Equal(got, []float32{2, 1}) {
		t.Fatalf("constant dimension round trip %v", got)
	}
}

func TestSQ8Invalid(t *testing.T) {
	for _, c := range []struct {
		sample []float32
		dim    int
	}{{nil, 4}, {make([]float32, 5), 4}, {make([]float32, 4), 0}} {
		if _, err := TrainSQ8(c.sample, c.dim); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("TrainSQ8(%d values, %d): %v", len(c.sample), c.dim, err)
		}
	}
	if _, err := NewSQ8([]float32{1}, []float32{0}); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("NewSQ8 with min > max: %v", err)
	}
}

// TestSQ8Distance checks that the asymmetric distance is the exact distance
// to the decoded vector, and close to the distance to the original.
func TestSQ8Distance(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dim := range []int{7, 128, 129} {
		const n = 400
		vs := clustered(r, n, dim, 8)
		q, err := TrainSQ8(vs, dim)
		if err != nil {
			t.Fatal(err)
		}
		codes := q.EncodeAll(nil, vs)
		for _, m := range []Metric{L2, Cosine, Dot} {
			var relSum float64
			for trial := range 20 {
				query := clustered(r, 1, dim, 8)
				sq := q.Query(m, query)
				for i := range n {
					code := codes[i*dim : (i+1)*dim]
					got := sq.Distance(code)
					dec := q.Decode(nil, code)
					exactDecoded := m.Func()(query, dec)
					if math.Abs(float64(got-exactDecoded)) > 1e-4*(1+math.Abs(float64(exactDecoded))) {
						t.Fatalf("dim %d %v: SQ8 distance %v, to decoded %v", dim, m, got, exactDecoded)
					}
					// Error relative to the scale of the distance: |q|·|x|
					// for dot, 1 for cosine, the distance itself for L2.
					exact := float64(m.Func()(query, vs[i*dim:(i+1)*dim]))
					scale := 1.0
					switch m {
					case L2:
						scale = exact
					case Dot:
						scale = math.Sqrt(float64(DotProduct(query, query)) * float64(DotProduct(vs[i*dim:(i+1)*dim], vs[i*dim:(i+1)*dim])))
					}
					rel := math.Abs(float64(got)-exact) / scale
					relSum += rel
					if rel > 0.02 {
						t.Fatalf("dim %d %v trial %d row %d: SQ8 %v, exact %v (relative error %.4f)", dim, m, trial, i, got, exact, rel)
					}
				}
			}
			if mean := relSum / (20 * n); mean > 0.005 {
				t.Errorf("dim %d %v: mean relative error %.5f", dim, m, mean)
			}
		}
	}
}

// TestSQ8Recall: SQ8 search for 4k candidates then exact re-rank finds the
// true 10 nearest neighbors.
func TestSQ8Recall(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const dim, n, k, queries = 64, 20000, 10, 50
	vs := clustered(r, n, dim, 50)
	q, err := TrainSQ8(vs[:2000*dim], dim) // train on a sample
	if err != nil {
		t.Fatal(err)
	}
	codes := q.EncodeAll(nil, vs)
	for _, m := range []Metric{L2, Cosine, Dot} {
		hits := 0
		for range queries {
			query := clustered(r, 1, dim, 50)
			want := FlatSearch(vs, dim, query, k, m, nil)
			cands := q.Search(codes, query, 4*k, m, nil)
			got := Rerank(vs, dim, query, cands, k, m)
			for _, g := range got {
				for _, w := range want {
					if g.ID == w.ID {
						hits++
					}
				}
			}
		}
		recall := float64(hits) / (queries * k)
		t.Logf("%v: recall@%d %.4f", m, k, recall)
		if recall < 0.99 {
			t.Errorf("%v: recall@%d %.4f < 0.99", m, k, recall)
		}
	}
}

func TestSQ8SearchFilters(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const dim, n = 24, 2000
	vs := clustered(r, n, dim, 4)
	q, _ := TrainSQ8(vs, dim)
	codes := q.EncodeAll(nil, vs)
	allow := NewAllowList(1, 5, 9, 500, 1999, 5000)
	odd := FilterFunc(func(id uint64) bool { return id%2 == 1 })
	query := randVec(r, dim)
	for _, m := range []Metric{L2, Cosine, Dot} {
		sq := q.Query(m, query)
		for _, f := range []Filter{nil, allow, odd} {
			var all []Neighbor
			for i := range n {
				if f == nil || f.Contains(uint64(i)) {
					all = append(all, Neighbor{ID: uint64(i), Distance: sq.Distance(codes[i*dim : (i+1)*dim])})
				}
			}
			want := sortedNeighbors(all, 20)
			if got := q.Search(codes, query, 20, m, f); !slices.Equal(got, want) {
				t.Fatalf("%v filter %T: got %v, want %v", m, f, got, want)
			}
		}
	}
}

func BenchmarkSQ8Distance(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, dim := range []int{128, 768} {
		vs := clustered(r, 256, dim, 4)
		q, _ := TrainSQ8(vs, dim)
		code := q.Encode(nil, vs[:dim])
		query := randVec(r, dim)
		for _, m := range []Metric{L2, Dot, Cosine} {
			sq := q.Query(m, query)
			b.Run(fmt.Sprintf("d=%d/%v", dim, m), func(b *testing.B) {
				var s float32
				for b.Loop() {
					s += sq.Distance(code)
				}
				sink = s
			})
		}
	}
}

func BenchmarkSQ8Search(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const dim, n, k = 128, 200_000, 10
	vs := clustered(r, n, dim, 100)
	q, _ := TrainSQ8(vs[:10000*dim], dim)
	codes := q.EncodeAll(nil, vs)
	qs := clustered(r, 16, dim, 100)
	for _, m := range []Metric{L2, Cosine} {
		b.Run(fmt.Sprintf("200kx128/%v/sq8+rerank4k", m), func(b *testing.B) {
			i := 0
			for b.Loop() {
				query := qs[(i%16)*dim : (i%16+1)*dim]
				Rerank(vs, dim, query, q.Search(codes, query, 4*k, m, nil), k, m)
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "QPS")
		})
	}
}
