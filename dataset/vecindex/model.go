package vecindex

import (
	"context"
	"fmt"
	"math"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/vector"
)

// Model returns a WriteSpec (Rows unset) for writing another segment with
// ix's IVF model and quantizer, its centroids and PQ codebook, as Lance's
// optimize writes an index's delta segments and its compaction writes a
// remapped copy of a segment: the same partitions, and codes comparable
// with ix's. It fails with lancer.ErrUnsupported, naming the type, for the
// kinds Write does not write (HNSW sub-indices, SQ, 4-bit PQ, PQ of dot,
// the legacy file).
func (ix *Index) Model() (*WriteSpec, error) {
	if ix.Legacy || ix.Sub != SubFlat || (ix.Quant != QuantFlat && ix.Quant != QuantPQ) ||
		(ix.Quant == QuantPQ && (ix.pq.nbits != 8 || ix.Metric == vector.Dot)) {
		kind := ix.Type
		if ix.Legacy {
			kind += " (legacy file)"
		} else if ix.Quant == QuantPQ && ix.pq.nbits != 8 {
			kind += fmt.Sprintf(" (%d-bit)", ix.pq.nbits)
		} else if ix.Quant == QuantPQ && ix.Metric == vector.Dot {
			kind += " (dot)"
		}
		return nil, fmt.Errorf("vecindex: index %s: lancer does not write %s segments: %w", ix.location, kind, lancer.ErrUnsupported)
	}
	s := &WriteSpec{Quant: ix.Quant, Metric: ix.Metric, Dim: ix.dim, Centroids: ix.centroids, Partitions: ix.nparts}
	if ix.Quant == QuantPQ {
		s.PQSubVectors, s.PQCodebook = ix.pq.m, ix.pq.codebook
	}
	return s, nil
}

// PartitionRows reads partition p and returns its row ids with its vectors
// (QuantFlat) or its PQ codes row by row (QuantPQ), as WriteSpec.Rows
// takes them. The partition is read afresh and not kept.
func (ix *Index) PartitionRows(ctx context.Context, p int) (ids []uint64, vecs []float32, codes []uint8, err error) {
	if p < 0 || p >= ix.nparts {
		return nil, nil, nil, fmt.Errorf("vecindex: index %s: partition %d of %d: %w", ix.location, p, ix.nparts, lancer.ErrInvalidArgument)
	}
	part, err := ix.readPartition(ctx, p)
	if err != nil {
		return nil, nil, nil, err
	}
	codes = part.codes
	if ix.Quant == QuantPQ && len(part.rowIDs) > 0 {
		w := len(codes) / len(part.rowIDs)
		codes = transpose(codes, w, len(part.rowIDs)) // [w][rows] back to [rows][w]
	}
	return part.rowIDs, part.vecs, codes, nil
}

// Encode returns the partition of s's IVF model that v belongs to (the
// nearest centroid: L2, of the normalized vector for cosine; 1 − dot for
// dot) and what a segment stores of it: the vector (QuantFlat; normalized
// for cosine, as Lance's builder stores it) or its PQ code (QuantPQ: per
// sub-vector the nearest codebook entry to the residual to the centroid),
// as Lance's optimize adds rows to an existing index. v must have s.Dim
// values.
func (s *WriteSpec) Encode(v []float32) (p int, vec []float32, code []uint8) {
	dim := s.Dim
	x := v
	if s.Metric == vector.Cosine {
		x = normalize(v)
	}
	best := float32(math.Inf(1))
	for c := range s.Partitions {
		cent := s.Centroids[c*dim : (c+1)*dim]
		var d float32
		if s.Metric == vector.Dot {
			d = 1 - vector.DotProduct(x, cent)
		} else {
			d = vector.L2Squared(x, cent)
		}
		if d < best || c == 0 {
			best, p = d, c
		}
	}
	if s.Quant != QuantPQ {
		return p, append([]float32(nil), x...), nil
	}
	cent := s.Centroids[p*dim : (p+1)*dim]
	r := make([]float32, dim)
	for i := range r {
		r[i] = x[i] - cent[i]
	}
	m := s.PQSubVectors
	sub := dim / m
	code = make([]uint8, m)
	for j := range m {
		rs := r[j*sub : (j+1)*sub]
		cb := s.PQCodebook[j*256*sub : (j+1)*256*sub]
		bd := float32(math.Inf(1))
		for e := range 256 {
			if d := vector.L2Squared(rs, cb[e*sub:(e+1)*sub]); d < bd || e == 0 {
				bd, code[j] = d, uint8(e)
			}
		}
	}
	return p, nil, code
}
