package vecindex

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/pb/indexpb"
	"github.com/lancerdb/lancer/vector"
)

// WriteSpec describes a segment to write in Lance's format (I1-I5): an IVF
// whose partitions are searched flat (Sub SubFlat, or "") or through one
// HNSW graph each (SubHNSW), over exact vectors (QuantFlat: IVF_FLAT,
// IVF_HNSW_FLAT), 8-bit PQ codes (QuantPQ: IVF_PQ, IVF_HNSW_PQ) or Lance's 8-bit scalar
// quantization (QuantSQ: IVF_SQ, IVF_HNSW_SQ), whose bounds and codes
// Write computes from the exact vectors.
type WriteSpec struct {
	Quant  Quantization
	Sub    SubIndex
	Metric vector.Metric
	Dim    int
	// Centroids are Partitions × Dim floats.
	Centroids  []float32
	Partitions int
	// PQSubVectors, PQBits and PQCodebook (2^PQBits × Dim floats laid out
	// [sub-vector][centroid][Dim/PQSubVectors]) are QuantPQ's. PQBits is 8
	// (one byte a sub-vector; 0 means 8) or 4 (two sub-vectors a byte,
	// sub-vector 2i in the low nibble of byte i, as Lance packs them; an
	// even PQSubVectors). Its codes are of
	// residuals to the centroids for l2 and cosine and of the vectors for
	// dot, as Lance's (S2).
	PQSubVectors int
	PQBits       int
	PQCodebook   []float32
	// SQBounds, when set, are QuantSQ's bounds: Write codes the vectors
	// with them instead of computing them from the vectors (W2), as a
	// delta or a remapped copy keeps its index's quantizer. Values
	// outside saturate, as in Lance.
	SQBounds *SQBounds
	// Rows returns partition p's row ids and its vectors (QuantFlat and
	// QuantSQ: len(ids) × Dim exact floats) or codes (QuantPQ, len(ids) ×
	// CodeWidth() bytes, row by row; with HNSW the exact vectors too when
	// Graph is set, for the graph's distances). With SQBounds set, QuantSQ
	// rows may come as codes instead (len(ids) × Dim, row by row), written
	// as they are. It is called once per partition, in order (for QuantSQ
	// without SQBounds twice: the bounds, then the codes), so that only
	// one partition is held at a time.
	Rows func(ctx context.Context, p int) (ids []uint64, vecs []float32, codes []uint8, err error)
	// Graph returns partition p's HNSW graph (SubHNSW), whose node i is
	// row i of Rows(p); nil for an empty partition. Called after Rows(p).
	// When Graph is nil, Write builds each partition's graph itself with
	// lancer's builder (vector.BuildPartitionHNSW, HNSWM and
	// HNSWEfConstruction, a seed derived from HNSWSeed and the partition)
	// over the rows' vectors, or over the vectors their codes stand for
	// when Rows gives none, as Lance builds a graph over its storage.
	Graph func(ctx context.Context, p int) (*vector.HNSW, error)
	// HNSWM, HNSWEfConstruction and HNSWMaxLevel are the graph parameters
	// the details record (SubHNSW). Default for HNSWMaxLevel: Lance's 7;
	// for HNSWM and HNSWEfConstruction, when Write builds the graphs,
	// Lance's 20 and 150.
	HNSWM, HNSWEfConstruction, HNSWMaxLevel int
	// HNSWSeed seeds the graphs Write builds (Graph nil).
	HNSWSeed uint64
	// Allocator allocates the Arrow arrays written. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
}

// SQBounds is the range [Start, End] Lance's 8-bit scalar quantizer maps
// to codes 0..255 (its storage metadata's bounds).
type SQBounds struct {
	Start, End float64
}

// WrittenSegment lists the files Write wrote, in dir.
type WrittenSegment struct {
	Files []WrittenIndexFile
}

// WrittenIndexFile is one file of a segment: its name in the directory and
// size.
type WrittenIndexFile struct {
	Name string
	Size uint64
}

func (s *WriteSpec) pqBits() int {
	if s.PQBits == 0 {
		return 8
	}
	return s.PQBits
}

func (s *WriteSpec) pqCentroids() int { return 1 << min(s.pqBits(), 8) }

// CodeWidth returns the bytes a row's code takes in the storage (I4): Dim
// for SQ, PQSubVectors for 8-bit PQ, half that for 4-bit, 0 for flat.
func (s *WriteSpec) CodeWidth() int {
	switch s.Quant {
	case QuantSQ:
		return s.Dim
	case QuantPQ:
		return s.PQSubVectors * s.pqBits() / 8
	}
	return 0
}

// PackPQ4 appends to dst the 4-bit PQ codes of rows given one byte a
// sub-vector (m bytes a row, each below 16), packed as Lance stores them
// (I4): sub-vector 2i in the low nibble of byte i, 2i+1 in the high, m/2
// bytes a row. m must be even and divide len(codes).
func PackPQ4(dst, codes []uint8, m int) []uint8 {
	for r := 0; r+m <= len(codes); r += m {
		for j := 0; j < m; j += 2 {
			dst = append(dst, codes[r+j]&0x0f|codes[r+j+1]<<4)
		}
	}
	return dst
}

func (s *WriteSpec) sub() SubIndex {
	if s.Sub == "" {
		return SubFlat
	}
	return s.Sub
}

// Type returns the Lance index type the spec writes ("IVF_PQ",
// "IVF_HNSW_SQ", ...).
func (s *WriteSpec) Type() string {
	if s.sub() == SubHNSW {
		return "IVF_HNSW_" + string(s.Quant)
	}
	return "IVF_" + string(s.Quant)
}

// lanceDefaultMaxLevel is Lance's HnswBuildParams max_level default.
const lanceDefaultMaxLevel = 7

// Write writes the segment s describes as dir+"/index.idx" and
// dir+"/auxiliary.idx" in store, as Lance's IvfIndexBuilder writes them:
// auxiliary.idx the storage (one batch per partition, PQ codes
// transposed), its IVF (partition lengths) in global buffer 1 and the PQ
// codebook in global buffer 2; index.idx the sub-index (no rows for a
// flat one; for HNSW each partition's graph levels, I5) with the
// centroids' IVF in global buffer 1. A partition's HNSW entry point is
// written as its node 0, where Lance starts its searches.
func Write(ctx context.Context, store blob.Store, dir string, s *WriteSpec) (*WrittenSegment, error) {
	sub := s.sub()
	switch {
	case s.Quant != QuantFlat && s.Quant != QuantPQ && s.Quant != QuantSQ,
		sub != SubFlat && sub != SubHNSW:
		return nil, fmt.Errorf("vecindex: write %s: %s: %w", dir, s.Type(), lancer.ErrUnsupported)
	}
	if s.Dim <= 0 || s.Partitions <= 0 || len(s.Centroids) != s.Dim*s.Partitions {
		return nil, fmt.Errorf("vecindex: write %s: %d centroid values for %d partitions of %d dimensions: %w",
			dir, len(s.Centroids), s.Partitions, s.Dim, lancer.ErrInvalidArgument)
	}
	if s.Quant == QuantPQ && (s.PQSubVectors <= 0 || s.Dim%s.PQSubVectors != 0 || len(s.PQCodebook) != s.pqCentroids()*s.Dim ||
		s.pqBits() != 8 && s.pqBits() != 4 || s.pqBits() == 4 && s.PQSubVectors%2 != 0) {
		return nil, fmt.Errorf("vecindex: write %s: %d-bit PQ of %d sub-vectors, %d codebook values, dimension %d: %w",
			dir, s.pqBits(), s.PQSubVectors, len(s.PQCodebook), s.Dim, lancer.ErrInvalidArgument)
	}
	if b := s.SQBounds; b != nil && (!finite(b.Start) || !finite(b.End) || b.End < b.Start) {
		return nil, fmt.Errorf("vecindex: write %s: SQ bounds [%v, %v]: %w", dir, b.Start, b.End, lancer.ErrInvalidArgument)
	}
	w := &segWriter{s: s, sub: sub, mem: s.Allocator, metric: metricName(s.Metric)}
	if w.mem == nil {
		w.mem = memory.DefaultAllocator
	}
	if sub == SubHNSW && s.Graph == nil {
		w.hopts = vector.HNSWOptions{M: s.HNSWM, EfConstruction: s.HNSWEfConstruction, Metric: s.Metric}
		if w.hopts.M == 0 {
			w.hopts.M = LanceDefaultHNSWM
		}
		if w.hopts.EfConstruction == 0 {
			w.hopts.EfConstruction = LanceDefaultHNSWEfConstruction
		}
		if err := w.hopts.Validate(); err != nil {
			return nil, fmt.Errorf("vecindex: write %s: %w", dir, err)
		}
	}
	if s.Quant == QuantSQ && s.SQBounds != nil {
		w.lo, w.hi = s.SQBounds.Start, s.SQBounds.End
	} else if s.Quant == QuantSQ {
		lo, hi, err := w.sqBounds(ctx)
		if err != nil {
			return nil, fmt.Errorf("vecindex: write %s: %w", dir, err)
		}
		w.lo, w.hi = lo, hi
	}
	auxKey, idxKey := dir+"/"+AuxiliaryFile, dir+"/"+IndexFile
	if err := w.open(ctx, store, auxKey, idxKey); err != nil {
		return nil, fmt.Errorf("vecindex: write %s: %w", dir, err)
	}
	for p := range s.Partitions {
		if err := w.partition(ctx, p); err != nil {
			w.abort(ctx)
			return nil, fmt.Errorf("vecindex: write %s: partition %d: %w", dir, p, err)
		}
	}
	auxSize, err := w.finishAux(ctx)
	if err != nil {
		w.idx.Abort(ctx)
		return nil, fmt.Errorf("vecindex: write %s: %w", auxKey, err)
	}
	idxSize, err := w.finishIndex(ctx)
	if err != nil {
		_ = store.Delete(context.WithoutCancel(ctx), auxKey)
		return nil, fmt.Errorf("vecindex: write %s: %w", idxKey, err)
	}
	return &WrittenSegment{Files: []WrittenIndexFile{{Name: AuxiliaryFile, Size: auxSize}, {Name: IndexFile, Size: idxSize}}}, nil
}

func metricName(m vector.Metric) string {
	switch m {
	case vector.Cosine:
		return "cosine"
	case vector.Dot:
		return "dot"
	}
	return "l2"
}

// ivfBuffer encodes an IVF protobuf of the partition lengths (offsets
// their running sum) and, when centroids is not nil, the centroids.
func ivfBuffer(lengths []uint32, centroids []float32, dim int) ([]byte, error) {
	ivf := &indexpb.IVF{Lengths: lengths, Offsets: make([]uint64, len(lengths))}
	var run uint64
	for p, l := range lengths {
		ivf.Offsets[p] = run
		run += uint64(l)
	}
	if centroids != nil {
		ivf.CentroidsTensor = floatTensor(centroids, uint32(len(lengths)), uint32(dim))
		loss := 0.0
		ivf.Loss = &loss
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(ivf)
}

func floatTensor(v []float32, shape ...uint32) *indexpb.Tensor {
	data := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	return &indexpb.Tensor{DataType: indexpb.Tensor_FLOAT32, Shape: shape, Data: data}
}

// segWriter writes a segment's two files side by side, one partition at a
// time.
type segWriter struct {
	s      *WriteSpec
	sub    SubIndex
	mem    memory.Allocator
	metric string
	lo, hi float64            // SQ bounds
	hopts  vector.HNSWOptions // the graphs Write builds (Graph nil)

	aux, idx           *format.Writer
	auxSch, idxSch     *schema.Schema
	auxArrow, idxArrow *arrow.Schema
	codeType           *arrow.FixedSizeListType
	auxLens, idxLens   []uint32
	subMeta            []string
	maxLevel           int

	norm []float32 // a row normalized (cosine SQ)
}

func (w *segWriter) rows(ctx context.Context, p int) ([]uint64, []float32, []uint8, error) {
	s := w.s
	ids, vecs, codes, err := s.Rows(ctx, p)
	if err != nil {
		return nil, nil, nil, err
	}
	n := len(ids)
	bad := n > math.MaxUint32
	switch {
	case s.Quant == QuantPQ:
		// HNSW graphs given need the exact vectors for their distances;
		// graphs Write builds use them when given, else the codes.
		needVecs := w.sub == SubHNSW && s.Graph != nil
		bad = bad || len(codes) != n*s.CodeWidth() || (needVecs && len(vecs) != n*s.Dim) || (len(vecs) != 0 && len(vecs) != n*s.Dim)
	case s.Quant == QuantSQ && s.SQBounds != nil && len(vecs) == 0:
		bad = bad || len(codes) != n*s.Dim || (w.sub == SubHNSW && s.Graph != nil)
	default:
		bad = bad || len(vecs) != n*s.Dim
	}
	if bad {
		return nil, nil, nil, fmt.Errorf("%d rows, %d vector values, %d codes: %w", n, len(vecs), len(codes), lancer.ErrInvalidArgument)
	}
	return ids, vecs, codes, nil
}

// sqBounds is Lance's SQ training: the least and greatest value of any
// vector (normalized for cosine).
func (w *segWriter) sqBounds(ctx context.Context) (lo, hi float64, err error) {
	r := NewSQRange(w.s.Metric)
	dim := w.s.Dim
	for p := range w.s.Partitions {
		_, vecs, _, err := w.rows(ctx, p)
		if err != nil {
			return 0, 0, fmt.Errorf("partition %d: %w", p, err)
		}
		for i := 0; i < len(vecs); i += dim {
			r.Add(vecs[i : i+dim])
		}
	}
	b := r.Bounds()
	return b.Start, b.End, nil
}

// SQRange is Lance's SQ training over vectors seen one at a time: the
// bounds Write computes itself without WriteSpec.SQBounds, for a caller
// that sees every vector before it writes (a build streaming its column)
// and so spares Write its pass over the partitions.
type SQRange struct {
	cosine bool
	lo, hi float64
	seen   bool
}

// NewSQRange starts the bounds of an index of metric m.
func NewSQRange(m vector.Metric) *SQRange {
	return &SQRange{cosine: m == vector.Cosine, lo: math.Inf(1), hi: math.Inf(-1)}
}

// Add takes in one vector (normalized first for cosine, as the codes are
// of the normalized vectors).
func (r *SQRange) Add(v []float32) {
	r.seen = true
	var n float32 = 1
	if r.cosine {
		// normalize's arithmetic, without its copy.
		var s float32
		for _, x := range v {
			s += x * x
		}
		if s != 0 {
			n = float32(math.Sqrt(float64(s)))
		}
	}
	for _, x := range v {
		if r.cosine {
			x /= n
		}
		r.lo, r.hi = min(r.lo, float64(x)), max(r.hi, float64(x))
	}
}

// Bounds returns the bounds of the vectors added: [0, 0] for none.
func (r *SQRange) Bounds() SQBounds {
	if !r.seen || r.lo > r.hi {
		return SQBounds{}
	}
	return SQBounds{Start: r.lo, End: r.hi}
}

func (w *segWriter) open(ctx context.Context, store blob.Store, auxKey, idxKey string) error {
	s := w.s
	codeCol, width, elem := colFlat, s.Dim, arrow.DataType(arrow.PrimitiveTypes.Float32)
	switch s.Quant {
	case QuantPQ:
		codeCol, width, elem = colPQ, s.CodeWidth(), arrow.PrimitiveTypes.Uint8
	case QuantSQ:
		codeCol, elem = colSQ, arrow.PrimitiveTypes.Uint8
	}
	w.codeType = arrow.FixedSizeListOf(int32(width), elem)
	w.auxArrow = arrow.NewSchema([]arrow.Field{
		{Name: colRowID, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: codeCol, Type: w.codeType, Nullable: true},
	}, nil)
	if w.sub == SubHNSW {
		w.idxArrow = arrow.NewSchema([]arrow.Field{
			{Name: colVectorID, Type: arrow.PrimitiveTypes.Uint32, Nullable: true},
			{Name: colNeighbors, Type: arrow.ListOf(arrow.PrimitiveTypes.Uint32), Nullable: true},
			{Name: colDistance, Type: arrow.ListOf(arrow.PrimitiveTypes.Float32), Nullable: true},
		}, nil)
	} else {
		w.idxArrow = arrow.NewSchema([]arrow.Field{{Name: "__flat_marker", Type: arrow.PrimitiveTypes.Uint64}}, nil)
	}
	var err error
	if w.auxSch, err = schema.FromArrow(w.auxArrow, 0); err != nil {
		return err
	}
	if w.idxSch, err = schema.FromArrow(w.idxArrow, 0); err != nil {
		return err
	}
	if w.aux, err = format.NewWriter(ctx, store, auxKey, w.auxSch, &format.WriterOptions{Allocator: w.mem}); err != nil {
		return err
	}
	if w.idx, err = format.NewWriter(ctx, store, idxKey, w.idxSch, &format.WriterOptions{Allocator: w.mem}); err != nil {
		w.aux.Abort(ctx)
		return err
	}
	w.auxLens = make([]uint32, s.Partitions)
	w.idxLens = make([]uint32, s.Partitions)
	w.subMeta = make([]string, s.Partitions)
	return nil
}

func (w *segWriter) abort(ctx context.Context) {
	w.aux.Abort(ctx)
	w.idx.Abort(ctx)
}

// partition writes partition p's storage and (HNSW) graph.
func (w *segWriter) partition(ctx context.Context, p int) error {
	s := w.s
	ids, vecs, codes, err := w.rows(ctx, p)
	if err != nil {
		return err
	}
	n := len(ids)
	if n == 0 {
		return nil
	}
	w.auxLens[p] = uint32(n)
	// order[j] is the row written j-th: the rows as given, but for HNSW
	// with the entry point swapped to the front (Lance starts at node 0).
	var g *vector.HNSW
	var order []uint32
	gvecs := vecs // the graph's vectors
	if w.sub == SubHNSW {
		if s.Graph == nil {
			// Built here, over the exact vectors when given, else over
			// what the codes stand for; the graph's distances are of
			// the same vectors.
			if len(vecs) != n*s.Dim {
				gvecs = w.decode(p, codes, n)
			}
			o := w.hopts
			o.Seed = s.HNSWSeed ^ (uint64(p)+1)*0x9e3779b97f4a7c15
			g, err = vector.BuildPartitionHNSW(gvecs, s.Dim, &o)
		} else {
			g, err = s.Graph(ctx, p)
		}
		if err != nil {
			return err
		}
		if g == nil || g.Len() != n {
			return fmt.Errorf("HNSW graph of %v nodes over %d rows: %w", graphLen(g), n, lancer.ErrInvalidArgument)
		}
		order = make([]uint32, n)
		for i := range order {
			order[i] = uint32(i)
		}
		e := g.Entry()
		order[0], order[e] = e, 0
	}
	if err := w.writeStorage(ctx, ids, vecs, codes, order); err != nil {
		return err
	}
	if g != nil {
		return w.writeGraph(ctx, p, g, gvecs, order)
	}
	return nil
}

func graphLen(g *vector.HNSW) any {
	if g == nil {
		return "no"
	}
	return g.Len()
}

// fixedBuffer allocates exactly size bytes for an array's values, filled
// by the caller. The writer's arrays were built with Arrow builders, which
// reserve the next power of two and copy into an exact buffer at the end:
// three to four times the bytes allocated, and a copy (issue #17).
func (w *segWriter) fixedBuffer(size int) *memory.Buffer {
	b := memory.NewResizableBuffer(w.mem)
	b.Resize(size)
	return b
}

// fixedArray returns an array of n values of type dt over vals (no
// validity bitmap: every value is valid), or a list over offsets and
// child when child is set. It takes over the buffers' references.
func fixedArray(dt arrow.DataType, n int, vals *memory.Buffer, child arrow.ArrayData) arrow.Array {
	var d arrow.ArrayData
	if child != nil {
		d = array.NewData(dt, n, []*memory.Buffer{nil, vals}, []arrow.ArrayData{child}, 0, 0)
	} else {
		d = array.NewData(dt, n, []*memory.Buffer{nil, vals}, nil, 0, 0)
	}
	if vals != nil {
		vals.Release() // the data holds it
	}
	defer d.Release()
	return array.MakeFromData(d)
}

func (w *segWriter) writeStorage(ctx context.Context, ids []uint64, vecs []float32, codes []uint8, order []uint32) error {
	s := w.s
	n, dim := len(ids), s.Dim
	row := func(j int) int {
		if order == nil {
			return j
		}
		return int(order[j])
	}
	ib := w.fixedBuffer(8 * n)
	idv := arrow.Uint64Traits.CastFromBytes(ib.Bytes())
	for j := range n {
		idv[j] = ids[row(j)]
	}
	idArr := fixedArray(arrow.PrimitiveTypes.Uint64, n, ib, nil)
	defer idArr.Release()
	var vals arrow.Array
	switch s.Quant {
	case QuantPQ:
		// Transposed, as Lance writes PQ storage (I4): byte j of every
		// row, then byte j+1.
		width := s.CodeWidth()
		b := w.fixedBuffer(len(codes))
		tr := b.Bytes()
		for i := range n {
			for j := range width {
				tr[j*n+i] = codes[row(i)*width+j]
			}
		}
		vals = fixedArray(arrow.PrimitiveTypes.Uint8, len(codes), b, nil)
	case QuantSQ:
		b := w.fixedBuffer(n * dim)
		out := b.Bytes()[:0]
		for j := range n {
			if len(vecs) != n*dim { // codes given (rows checked them)
				out = append(out, codes[row(j)*dim:(row(j)+1)*dim]...)
				continue
			}
			v := vecs[row(j)*dim : (row(j)+1)*dim]
			if s.Metric == vector.Cosine {
				if nv := normalizeTo(w.norm, v); len(nv) > 0 && &nv[0] != &v[0] {
					w.norm, v = nv, nv
				}
			}
			out = appendSQ(out, v, w.lo, w.hi)
		}
		if len(out) != n*dim || (n > 0 && &out[0] != &b.Bytes()[0]) {
			b.Release()
			return fmt.Errorf("%d SQ codes for %d rows of %d: %w", len(out), n, dim, lancer.ErrInvalidArgument)
		}
		vals = fixedArray(arrow.PrimitiveTypes.Uint8, n*dim, b, nil)
	default:
		b := w.fixedBuffer(4 * n * dim)
		f := arrow.Float32Traits.CastFromBytes(b.Bytes())
		for j := range n {
			copy(f[j*dim:(j+1)*dim], vecs[row(j)*dim:(row(j)+1)*dim])
		}
		vals = fixedArray(arrow.PrimitiveTypes.Float32, n*dim, b, nil)
	}
	ld := array.NewData(w.codeType, n, []*memory.Buffer{nil}, []arrow.ArrayData{vals.Data()}, 0, 0)
	list := array.NewFixedSizeListData(ld)
	ld.Release() // the list holds it
	vals.Release()
	defer list.Release()
	rec := array.NewRecordBatch(w.auxArrow, []arrow.Array{idArr, list}, int64(n))
	defer rec.Release()
	return w.aux.Write(ctx, rec)
}

// hnswMeta is a partition's "lance:hnsw" entry as Lance writes it.
type hnswMeta struct {
	EntryPoint uint32     `json:"entry_point"`
	Params     hnswParams `json:"params"`
	// LevelOffsets are the first rows of each level, then the rows.
	LevelOffsets []int `json:"level_offsets"`
}

type hnswParams struct {
	MaxLevel         int `json:"max_level"`
	M                int `json:"m"`
	EfConstruction   int `json:"ef_construction"`
	PrefetchDistance int `json:"prefetch_distance"`
}

// writeGraph writes g, partition p's graph, as Lance's HNSW to_batch: its
// levels bottom up, each a row per node on it in the order written
// (order), with its neighbours (renumbered) and their distances.
func (w *segWriter) writeGraph(ctx context.Context, p int, g *vector.HNSW, vecs []float32, order []uint32) error {
	n, dim := len(order), w.s.Dim
	pos := make([]uint32, n) // pos[row] is its node id as written
	for j, r := range order {
		pos[r] = uint32(j)
	}
	dist := vector.L2Squared
	switch w.s.Metric {
	case vector.Cosine:
		dist = vector.CosineDistance
	case vector.Dot:
		dist = func(a, b []float32) float32 { return 1 - vector.DotProduct(a, b) }
	}
	vec := func(r uint32) []float32 { return vecs[int(r)*dim : int(r+1)*dim] }
	// Lance 12 writes max_level (7 by default) levels, the top ones empty.
	levels := max(g.MaxLevel()+1, lanceDefaultMaxLevel)
	// Counted first, so that each column's buffer is allocated once at
	// its size (the neighbour and distance lists share their offsets).
	rows, vals := 0, 0
	for l := range levels {
		for _, r := range order {
			if g.Level(r) >= l {
				rows++
				vals += len(g.Neighbors(r, l))
			}
		}
	}
	if vals > math.MaxInt32 {
		return fmt.Errorf("HNSW graph of %d links, more than a list holds: %w", vals, lancer.ErrInvalidArgument)
	}
	idBuf, offBuf := w.fixedBuffer(4*rows), w.fixedBuffer(4*(rows+1))
	nbBuf, dBuf := w.fixedBuffer(4*vals), w.fixedBuffer(4*vals)
	idv, offv := arrow.Uint32Traits.CastFromBytes(idBuf.Bytes()), arrow.Int32Traits.CastFromBytes(offBuf.Bytes())
	nbv, dv := arrow.Uint32Traits.CastFromBytes(nbBuf.Bytes()), arrow.Float32Traits.CastFromBytes(dBuf.Bytes())
	offsets := make([]int, 0, levels+1)
	k, v := 0, 0
	for l := range levels {
		offsets = append(offsets, k)
		for j, r := range order {
			if g.Level(r) < l {
				continue
			}
			idv[k], offv[k] = uint32(j), int32(v)
			for _, x := range g.Neighbors(r, l) {
				nbv[v], dv[v] = pos[x], dist(vec(r), vec(x))
				v++
			}
			k++
		}
	}
	offv[rows] = int32(v)
	offsets = append(offsets, rows)
	m, efc := g.M()
	meta, err := json.Marshal(hnswMeta{EntryPoint: 0, Params: hnswParams{MaxLevel: levels, M: m, EfConstruction: efc, PrefetchDistance: 2}, LevelOffsets: offsets})
	if err != nil {
		for _, b := range []*memory.Buffer{idBuf, offBuf, nbBuf, dBuf} {
			b.Release()
		}
		return err
	}
	w.subMeta[p] = string(meta)
	w.idxLens[p] = uint32(rows)
	w.maxLevel = max(w.maxLevel, levels)
	ids := fixedArray(arrow.PrimitiveTypes.Uint32, rows, idBuf, nil)
	defer ids.Release()
	nbItems := fixedArray(arrow.PrimitiveTypes.Uint32, vals, nbBuf, nil)
	defer nbItems.Release()
	dItems := fixedArray(arrow.PrimitiveTypes.Float32, vals, dBuf, nil)
	defer dItems.Release()
	offBuf.Retain() // one reference for each list
	nbs := fixedArray(w.idxArrow.Field(1).Type, rows, offBuf, nbItems.Data())
	defer nbs.Release()
	ds := fixedArray(w.idxArrow.Field(2).Type, rows, offBuf, dItems.Data())
	defer ds.Release()
	rec := array.NewRecordBatch(w.idxArrow, []arrow.Array{ids, nbs, ds}, int64(rows))
	defer rec.Release()
	return w.idx.Write(ctx, rec)
}

func (w *segWriter) finishAux(ctx context.Context) (uint64, error) {
	s := w.s
	fail := func(err error) (uint64, error) {
		w.aux.Abort(ctx)
		return 0, err
	}
	ivf, err := ivfBuffer(w.auxLens, nil, s.Dim)
	if err != nil {
		return fail(err)
	}
	pos, err := w.aux.AddGlobalBuffer(ctx, ivf)
	if err != nil {
		return fail(err)
	}
	md := map[string]string{keyDistance: w.metric, keyIVF: strconv.Itoa(pos)}
	var storage any
	switch s.Quant {
	case QuantPQ:
		cb, err := proto.MarshalOptions{Deterministic: true}.Marshal(floatTensor(s.PQCodebook, uint32(s.pqCentroids()), uint32(s.Dim)))
		if err != nil {
			return fail(err)
		}
		cpos, err := w.aux.AddGlobalBuffer(ctx, cb)
		if err != nil {
			return fail(err)
		}
		storage = struct {
			CodebookPosition int   `json:"codebook_position"`
			NBits            int   `json:"nbits"`
			NumSubVectors    int   `json:"num_sub_vectors"`
			Dimension        int   `json:"dimension"`
			CodebookTensor   []int `json:"codebook_tensor"`
			Transposed       bool  `json:"transposed"`
		}{cpos, s.pqBits(), s.PQSubVectors, s.Dim, []int{}, true}
	case QuantSQ:
		type bounds struct {
			Start float64 `json:"start"`
			End   float64 `json:"end"`
		}
		storage = struct {
			Dim     int    `json:"dim"`
			NumBits int    `json:"num_bits"`
			Bounds  bounds `json:"bounds"`
		}{s.Dim, 8, bounds{w.lo, w.hi}}
	default:
		storage = struct {
			Dim int `json:"dim"`
		}{s.Dim}
	}
	b, err := json.Marshal(storage)
	if err != nil {
		return fail(err)
	}
	list, err := json.Marshal([]string{string(b)})
	if err != nil {
		return fail(err)
	}
	md[keyStorage] = string(list)
	w.auxSch.Metadata = md
	wf, err := w.aux.Finish(ctx)
	if err != nil {
		return 0, err
	}
	return wf.Size, nil
}

func (w *segWriter) finishIndex(ctx context.Context) (uint64, error) {
	s := w.s
	fail := func(err error) (uint64, error) {
		w.idx.Abort(ctx)
		return 0, err
	}
	// A flat sub-index has no rows: every partition's length is 0.
	ivf, err := ivfBuffer(w.idxLens, s.Centroids, s.Dim)
	if err != nil {
		return fail(err)
	}
	pos, err := w.idx.AddGlobalBuffer(ctx, ivf)
	if err != nil {
		return fail(err)
	}
	im, err := json.Marshal(struct {
		Type         string `json:"type"`
		DistanceType string `json:"distance_type"`
	}{s.Type(), w.metric})
	if err != nil {
		return fail(err)
	}
	subs, err := json.Marshal(w.subMeta)
	if err != nil {
		return fail(err)
	}
	key := keyFlat
	if w.sub == SubHNSW {
		key = keyHNSW
	}
	w.idxSch.Metadata = map[string]string{keyIndex: string(im), keyIVF: strconv.Itoa(pos), key: string(subs)}
	wf, err := w.idx.Finish(ctx)
	if err != nil {
		return 0, err
	}
	return wf.Size, nil
}

// Details returns the encoded VectorIndexDetails Lance records in the
// manifest for the segment s describes (type URL
// /lance.index.pb.VectorIndexDetails): the metric, the compression and,
// for HNSW, the graph parameters.
func (s *WriteSpec) Details() ([]byte, error) {
	d := &indexpb.VectorIndexDetails{}
	switch s.Metric {
	case vector.Cosine:
		d.MetricType = indexpb.VectorMetricType_Cosine
	case vector.Dot:
		d.MetricType = indexpb.VectorMetricType_Dot
	default:
		d.MetricType = indexpb.VectorMetricType_L2
	}
	switch s.Quant {
	case QuantPQ:
		d.Compression = &indexpb.VectorIndexDetails_Pq{Pq: &indexpb.VectorIndexDetails_ProductQuantization{NumBits: uint32(s.pqBits()), NumSubVectors: uint32(s.PQSubVectors)}}
	case QuantSQ:
		d.Compression = &indexpb.VectorIndexDetails_Sq{Sq: &indexpb.VectorIndexDetails_ScalarQuantization{NumBits: 8}}
	default:
		d.Compression = &indexpb.VectorIndexDetails_Flat{Flat: &indexpb.VectorIndexDetails_FlatCompression{}}
	}
	if s.sub() == SubHNSW {
		ml := s.HNSWMaxLevel
		if ml <= 0 {
			ml = lanceDefaultMaxLevel
		}
		d.HnswIndexConfig = &indexpb.HnswParameters{MaxConnections: uint32(s.HNSWM), ConstructionEf: uint32(s.HNSWEfConstruction), MaxLevel: uint32(ml)}
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(d)
}

// DetailsSpec is what a segment's VectorIndexDetails say about how to
// write another segment like it.
type DetailsSpec struct {
	Quant  Quantization
	Sub    SubIndex
	Metric vector.Metric
	// SubVectors is PQ's; M and EfConstruction HNSW's (0 when the
	// details do not say).
	SubVectors, M, EfConstruction int
	// PQBits is PQ's code width (Lance's num_bits: 8 or 4), 0 for the
	// other quantizations.
	PQBits int
	// Writable says Write writes segments of this kind (not RQ, nor PQ
	// other than 8- and 4-bit, nor SQ other than 8-bit).
	Writable bool
}

// ParseDetailsSpec decodes the VectorIndexDetails of a segment.
func ParseDetailsSpec(b []byte) (DetailsSpec, error) {
	var d indexpb.VectorIndexDetails
	if err := proto.Unmarshal(b, &d); err != nil {
		return DetailsSpec{}, fmt.Errorf("vecindex: VectorIndexDetails: %v: %w", err, lancer.ErrCorrupt)
	}
	out := DetailsSpec{Sub: SubFlat}
	switch d.GetMetricType() {
	case indexpb.VectorMetricType_L2:
		out.Metric = vector.L2
	case indexpb.VectorMetricType_Cosine:
		out.Metric = vector.Cosine
	case indexpb.VectorMetricType_Dot:
		out.Metric = vector.Dot
	default:
		return out, nil
	}
	if h := d.HnswIndexConfig; h != nil {
		out.Sub, out.M, out.EfConstruction = SubHNSW, int(h.GetMaxConnections()), int(h.GetConstructionEf())
	}
	switch c := d.GetCompression().(type) {
	case *indexpb.VectorIndexDetails_Flat:
		out.Quant, out.Writable = QuantFlat, true
	case *indexpb.VectorIndexDetails_Pq:
		out.Quant, out.SubVectors, out.PQBits = QuantPQ, int(c.Pq.GetNumSubVectors()), int(c.Pq.GetNumBits())
		out.Writable = c.Pq.GetNumBits() == 8 || c.Pq.GetNumBits() == 4
	case *indexpb.VectorIndexDetails_Sq:
		out.Quant = QuantSQ
		out.Writable = c.Sq.GetNumBits() == 8 || c.Sq.GetNumBits() == 0
	}
	return out, nil
}

// ParseDetails decodes the VectorIndexDetails of a segment and returns
// what Write needs to write another flat-searched segment like it: the
// quantization, metric and PQ sub-vectors. ok is false for indices it
// does not describe (HNSW, SQ, RQ, 4-bit PQ: see ParseDetailsSpec).
func ParseDetails(b []byte) (quant Quantization, metric vector.Metric, subVectors int, ok bool, err error) {
	d, err := ParseDetailsSpec(b)
	if err != nil {
		return "", 0, 0, false, err
	}
	if !d.Writable || d.Sub != SubFlat || d.Quant == QuantSQ {
		return "", d.Metric, 0, false, nil
	}
	return d.Quant, d.Metric, d.SubVectors, true, nil
}
