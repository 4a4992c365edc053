package vecindex

import (
	"context"
	"fmt"
	"math"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/vector"
)

// Lance's HnswBuildParams defaults (rust/lance-index/src/vector/hnsw/
// builder.rs), which Lance's optimize_vector_indices_v2 builds a delta's
// graphs with whatever the index was built with.
const (
	LanceDefaultHNSWM              = 20
	LanceDefaultHNSWEfConstruction = 150
)

// Model returns a WriteSpec (Rows unset) for writing another segment with
// ix's IVF model and quantizer, as Lance's optimize writes an index's
// delta segments and its compaction writes a remapped copy of a segment:
// the same partitions (centroids), the same PQ codebook or SQ bounds, so
// that codes are comparable with ix's, the same sub-index. For HNSW the
// spec has no Graph: Write builds each partition's graph with lancer's
// builder over the rows it is given (Lance rebuilds the graphs of a delta
// and of a remapped segment too), with the M and ef_construction of ix's
// graphs (Lance's defaults when ix records none). It fails with
// lancer.ErrUnsupported, naming the type, for the kinds Write does not
// write: PQ of other widths than 8 and 4 bits, other sub-indices, the
// legacy file.
func (ix *Index) Model() (*WriteSpec, error) {
	if err := ix.writable(); err != nil {
		return nil, err
	}
	s := &WriteSpec{Quant: ix.Quant, Sub: ix.Sub, Metric: ix.Metric, Dim: ix.dim, Centroids: ix.centroids, Partitions: ix.nparts}
	switch ix.Quant {
	case QuantPQ:
		s.PQSubVectors, s.PQBits, s.PQCodebook = ix.pq.m, ix.pq.nbits, ix.pq.codebook
	case QuantSQ:
		s.SQBounds = &SQBounds{Start: ix.sq.lo, End: ix.sq.hi}
	}
	if ix.Sub == SubHNSW {
		s.HNSWM, s.HNSWEfConstruction = LanceDefaultHNSWM, LanceDefaultHNSWEfConstruction
		for _, hm := range ix.hnswMeta {
			if hm.Params.M >= 2 && hm.Params.EfConstruction >= 1 {
				s.HNSWM, s.HNSWEfConstruction = hm.Params.M, hm.Params.EfConstruction
				break
			}
		}
		s.HNSWM = min(s.HNSWM, 256)
		s.HNSWEfConstruction = min(s.HNSWEfConstruction, 1<<20)
	}
	return s, nil
}

// writable says whether Write writes segments of ix's kind (Model), and
// if not, why, wrapping lancer.ErrUnsupported.
func (ix *Index) writable() error {
	switch {
	case ix.Legacy, ix.Quant == QuantPQ && ix.pq.nbits != 8 && ix.pq.nbits != 4,
		ix.Quant != QuantFlat && ix.Quant != QuantPQ && ix.Quant != QuantSQ,
		ix.Sub != SubFlat && ix.Sub != SubHNSW:
		return fmt.Errorf("vecindex: index %s: lancer does not write %s segments: %w", ix.location, ix.Kind(), lancer.ErrUnsupported)
	}
	return nil
}

// Kind names the segment's kind for messages: its type, with "legacy
// file" or the PQ width when they are what sets it apart ("IVF_PQ
// (4-bit)").
func (ix *Index) Kind() string {
	switch {
	case ix.Legacy:
		return ix.Type + " (legacy file)"
	case ix.Quant == QuantPQ && ix.pq.nbits != 8:
		return fmt.Sprintf("%s (%d-bit)", ix.Type, ix.pq.nbits)
	}
	return ix.Type
}

// PartitionRows reads partition p and returns its row ids with what its
// storage holds, as WriteSpec.Rows takes them: the vectors (QuantFlat;
// normalized for cosine, as stored), the PQ codes row by row (QuantPQ) or
// the SQ codes row by row (QuantSQ). An HNSW partition's graph is not
// returned: a copy of the partition gets a graph built anew, as Lance's
// remap rebuilds it. The partition is read afresh and not kept.
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
// dot) and what a segment is given of it, as Lance's optimize adds rows
// to an existing index: the vector (normalized for cosine, as Lance's
// builder stores it) for QuantFlat, QuantSQ (Write codes it with
// s.SQBounds) and any HNSW (the graph's distances), and the PQ code for
// QuantPQ (per sub-vector the nearest codebook entry to the residual to
// the centroid; of the vector itself for dot, which Lance does not code
// residually). v must have s.Dim values.
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
	if s.Quant != QuantPQ || s.sub() == SubHNSW {
		vec = append([]float32(nil), x...)
	}
	if s.Quant != QuantPQ {
		return p, vec, nil
	}
	r := make([]float32, dim)
	copy(r, x)
	if s.Metric != vector.Dot {
		cent := s.Centroids[p*dim : (p+1)*dim]
		for i := range r {
			r[i] -= cent[i]
		}
	}
	m := s.PQSubVectors
	sub := dim / m
	nc := s.pqCentroids()
	code = make([]uint8, s.CodeWidth())
	for j := range m {
		rs := r[j*sub : (j+1)*sub]
		cb := s.PQCodebook[j*nc*sub : (j+1)*nc*sub]
		bd := float32(math.Inf(1))
		var best uint8
		for e := range nc {
			if d := vector.L2Squared(rs, cb[e*sub:(e+1)*sub]); d < bd || e == 0 {
				bd, best = d, uint8(e)
			}
		}
		if nc == 16 {
			// Two sub-vectors a byte: 2i low, 2i+1 high (I4).
			code[j/2] |= best << (4 * (j % 2))
		} else {
			code[j] = best
		}
	}
	return p, vec, code
}

// decode returns the vectors that n rows' codes of partition p stand for
// (SQ: start + code × (end − start)/255; PQ: the codebook entries, plus
// the centroid for l2 and cosine), for building a graph over a partition
// whose exact vectors are not at hand (a remapped copy), as Lance builds
// it over the quantized storage.
func (w *segWriter) decode(p int, codes []uint8, n int) []float32 {
	s := w.s
	dim := s.Dim
	out := make([]float32, n*dim)
	switch s.Quant {
	case QuantSQ:
		scale := (w.hi - w.lo) / 255
		for i, c := range codes[:n*dim] {
			out[i] = float32(w.lo + float64(c)*scale)
		}
	case QuantPQ:
		m := s.PQSubVectors
		sub := dim / m
		nc, cw := s.pqCentroids(), s.CodeWidth()
		var cent []float32
		if s.Metric != vector.Dot {
			cent = s.Centroids[p*dim : (p+1)*dim]
		}
		for r := range n {
			v := out[r*dim : (r+1)*dim]
			for j := range m {
				var e int
				if nc == 16 {
					e = int(codes[r*cw+j/2]>>(4*(j%2))) & 0x0f
				} else {
					e = int(codes[r*cw+j])
				}
				copy(v[j*sub:(j+1)*sub], s.PQCodebook[(j*nc+e)*sub:(j*nc+e+1)*sub])
			}
			for i := range cent {
				v[i] += cent[i]
			}
		}
	}
	return out
}
