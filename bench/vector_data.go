package bench

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/lancerdb/lancer/internal/baselinetest"
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

// ClusteredVectors draws the lance-baseline vector workload (see package
// internal/baselinetest): centers centres, n vectors and nq queries not in the
// table. With the defaults above it reproduces the baseline's table and
// queries; the suite hands Lance these very numbers (see WriteFloat32s), so
// both sides search the same data regardless of libm differences.
//
// Both results are packed row-major: vector i is vectors[i*dim:(i+1)*dim].
func ClusteredVectors(n, dim, centers, nq int, seed uint32) (vectors, queries []float32) {
	return baselinetest.Clustered(n, dim, centers, nq, seed)
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
