package bench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/lancerdb/lancer/vector"
)

// The vector suite's default data: the workload of the real-Lance baseline
// (shared/bench/lance-baseline.mjs).
const (
	DefaultVectorRows    = 200_000
	DefaultVectorDim     = 128
	DefaultVectorCenters = 256
	DefaultVectorQueries = 100
	DefaultVectorK       = 10
	DefaultVectorSeed    = 12345
)

// mulberry32 is the PRNG of lance-baseline.mjs, bit for bit: JavaScript's
// Math.imul is a wrapping uint32 product.
type mulberry32 struct{ a uint32 }

func (r *mulberry32) float() float64 {
	r.a += 0x6D2B79F5
	t := r.a
	t = (t ^ t>>15) * (t | 1)
	t ^= t + (t^t>>7)*(t|61)
	return float64(t^t>>14) / 4294967296
}

// gauss is the script's Box–Muller draw.
func (r *mulberry32) gauss() float64 {
	u := 0.0
	for u == 0 {
		u = r.float()
	}
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*r.float())
}

// ClusteredVectors draws the lance-baseline vector workload: centers
// centres with N(0,1) coordinates, then n vectors and nq queries, each a
// uniformly drawn centre plus N(0, 0.5²) noise per coordinate, all from
// one mulberry32 stream seeded with seed, in the script's order. The
// queries are not in the table. With n = 200000, dim = 128, centers = 256,
// nq = 100 and seed 12345 it reproduces the baseline's table and queries
// (up to last-bit libm differences between Go and V8 that rounding to
// float32 almost always hides; the suite hands Lance these very numbers,
// see WriteFloat32s, so both sides search the same data regardless).
//
// Both results are packed row-major: vector i is vectors[i*dim:(i+1)*dim].
func ClusteredVectors(n, dim, centers, nq int, seed uint32) (vectors, queries []float32) {
	r := &mulberry32{seed}
	c := make([]float32, centers*dim)
	for i := range c {
		c[i] = float32(r.gauss())
	}
	draw := func(count int) []float32 {
		out := make([]float32, count*dim)
		for i := 0; i < count; i++ {
			k := int(math.Floor(r.float() * float64(centers)))
			for d := 0; d < dim; d++ {
				out[i*dim+d] = float32(float64(c[k*dim+d]) + 0.5*r.gauss())
			}
		}
		return out
	}
	vectors = draw(n)
	queries = draw(nq)
	return vectors, queries
}

// GroundTruth returns, per query, the row indices of the k vectors nearest
// to it by squared L2 distance (exact, ties broken by index), nearest first.
func GroundTruth(vectors, queries []float32, dim, k int) [][]uint64 {
	nq := len(queries) / dim
	out := make([][]uint64, nq)
	for q := range nq {
		hits := vector.FlatSearchParallel(vectors, dim, queries[q*dim:(q+1)*dim], k, vector.L2, nil, 0)
		ids := make([]uint64, len(hits))
		for i, h := range hits {
			ids[i] = h.ID
		}
		out[q] = ids
	}
	return out
}

// Recall is the mean over queries of |got[q] ∩ want[q]| / |want[q]|.
func Recall(got, want [][]uint64) float64 {
	if len(want) == 0 {
		return 1
	}
	sum := 0.0
	for q, w := range want {
		if len(w) == 0 {
			sum++
			continue
		}
		set := make(map[uint64]bool, len(w))
		for _, id := range w {
			set[id] = true
		}
		hit := 0
		if q < len(got) {
			for _, id := range got[q] {
				if set[id] {
					hit++
					delete(set, id) // a duplicate id counts once
				}
			}
		}
		sum += float64(hit) / float64(len(w))
	}
	return sum / float64(len(want))
}

// WriteFloat32s writes xs to path as little-endian float32s, nothing else:
// the suite's Node side reads the same numbers into a Float32Array.
func WriteFloat32s(path string, xs []float32) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b [4]byte
	for _, x := range xs {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("bench: writing %s: %w", path, err)
	}
	return f.Close()
}
