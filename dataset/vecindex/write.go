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

// WriteSpec describes a segment to write in Lance's format (I1-I4): an IVF
// with a flat sub-index over exact vectors (QuantFlat, Lance's IVF_FLAT)
// or 8-bit PQ codes (QuantPQ, IVF_PQ).
type WriteSpec struct {
	Quant  Quantization
	Metric vector.Metric
	Dim    int
	// Centroids are Partitions × Dim floats.
	Centroids  []float32
	Partitions int
	// PQSubVectors and PQCodebook (256 × Dim floats laid out [sub-vector]
	// [centroid][Dim/PQSubVectors]) are QuantPQ's; its codes are of
	// residuals to the centroids for l2 and cosine, as Lance's (S2).
	PQSubVectors int
	PQCodebook   []float32
	// Rows returns partition p's row ids and its vectors (QuantFlat,
	// len(ids) × Dim) or codes (QuantPQ, len(ids) × PQSubVectors, row by
	// row). It is called once per partition, in order, so that only one
	// partition is held at a time.
	Rows func(ctx context.Context, p int) (ids []uint64, vecs []float32, codes []uint8, err error)
	// Allocator allocates the Arrow arrays written. Default
	// memory.DefaultAllocator.
	Allocator memory.Allocator
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

// Type returns the Lance index type the spec writes ("IVF_PQ", "IVF_FLAT").
func (s *WriteSpec) Type() string {
	if s.Quant == QuantPQ {
		return "IVF_PQ"
	}
	return "IVF_FLAT"
}

// Write writes the segment s describes as dir+"/index.idx" and
// dir+"/auxiliary.idx" in store, as Lance's IvfIndexBuilder writes them:
// auxiliary.idx the storage (one batch per partition, PQ codes
// transposed), its IVF (partition lengths) in global buffer 1 and the PQ
// codebook in global buffer 2; index.idx the empty flat sub-index with
// the centroids' IVF in global buffer 1.
func Write(ctx context.Context, store blob.Store, dir string, s *WriteSpec) (*WrittenSegment, error) {
	if s.Quant != QuantFlat && s.Quant != QuantPQ {
		return nil, fmt.Errorf("vecindex: write %s: quantization %q: %w", dir, s.Quant, lancer.ErrUnsupported)
	}
	if s.Dim <= 0 || s.Partitions <= 0 || len(s.Centroids) != s.Dim*s.Partitions {
		return nil, fmt.Errorf("vecindex: write %s: %d centroid values for %d partitions of %d dimensions: %w",
			dir, len(s.Centroids), s.Partitions, s.Dim, lancer.ErrInvalidArgument)
	}
	if s.Quant == QuantPQ && (s.PQSubVectors <= 0 || s.Dim%s.PQSubVectors != 0 || len(s.PQCodebook) != 256*s.Dim) {
		return nil, fmt.Errorf("vecindex: write %s: PQ of %d sub-vectors, %d codebook values, dimension %d: %w",
			dir, s.PQSubVectors, len(s.PQCodebook), s.Dim, lancer.ErrInvalidArgument)
	}
	mem := s.Allocator
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	metric := metricName(s.Metric)
	out := &WrittenSegment{}
	auxSize, lengths, err := writeAux(ctx, store, dir+"/"+AuxiliaryFile, s, metric, mem)
	if err != nil {
		return nil, err
	}
	out.Files = append(out.Files, WrittenIndexFile{Name: AuxiliaryFile, Size: auxSize})
	_ = lengths
	idxSize, err := writeIndex(ctx, store, dir+"/"+IndexFile, s, metric, mem)
	if err != nil {
		_ = store.Delete(context.WithoutCancel(ctx), dir+"/"+AuxiliaryFile)
		return nil, err
	}
	out.Files = append(out.Files, WrittenIndexFile{Name: IndexFile, Size: idxSize})
	return out, nil
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

func writeAux(ctx context.Context, store blob.Store, key string, s *WriteSpec, metric string, mem memory.Allocator) (uint64, []uint32, error) {
	codeCol, width, elem := colFlat, s.Dim, arrow.DataType(arrow.PrimitiveTypes.Float32)
	if s.Quant == QuantPQ {
		codeCol, width, elem = colPQ, s.PQSubVectors, arrow.PrimitiveTypes.Uint8
	}
	fsl := arrow.FixedSizeListOf(int32(width), elem)
	as := arrow.NewSchema([]arrow.Field{
		{Name: colRowID, Type: arrow.PrimitiveTypes.Uint64, Nullable: true},
		{Name: codeCol, Type: fsl, Nullable: true},
	}, nil)
	sch, err := schema.FromArrow(as, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("vecindex: write %s: %w", key, err)
	}
	w, err := format.NewWriter(ctx, store, key, sch, &format.WriterOptions{Allocator: mem})
	if err != nil {
		return 0, nil, fmt.Errorf("vecindex: write %s: %w", key, err)
	}
	fail := func(err error) (uint64, []uint32, error) {
		w.Abort(ctx)
		return 0, nil, fmt.Errorf("vecindex: write %s: %w", key, err)
	}
	lengths := make([]uint32, s.Partitions)
	var tr []uint8
	for p := range s.Partitions {
		ids, vecs, codes, err := s.Rows(ctx, p)
		if err != nil {
			return fail(err)
		}
		n := len(ids)
		if n > math.MaxUint32 || (s.Quant == QuantPQ && len(codes) != n*width) || (s.Quant == QuantFlat && len(vecs) != n*width) {
			return fail(fmt.Errorf("partition %d: %d rows, %d vector values, %d codes: %w", p, n, len(vecs), len(codes), lancer.ErrInvalidArgument))
		}
		lengths[p] = uint32(n)
		if n == 0 {
			continue
		}
		ib := array.NewUint64Builder(mem)
		ib.AppendValues(ids, nil)
		idArr := ib.NewArray()
		ib.Release()
		var vals arrow.Array
		if s.Quant == QuantPQ {
			// Transposed, as Lance writes PQ storage (I4): byte j of every
			// row, then byte j+1.
			tr = slicesGrow(tr, len(codes))
			for i := range n {
				for j := range width {
					tr[j*n+i] = codes[i*width+j]
				}
			}
			b := array.NewUint8Builder(mem)
			b.AppendValues(tr, nil)
			vals = b.NewArray()
			b.Release()
		} else {
			b := array.NewFloat32Builder(mem)
			b.AppendValues(vecs, nil)
			vals = b.NewArray()
			b.Release()
		}
		ld := array.NewData(fsl, n, []*memory.Buffer{nil}, []arrow.ArrayData{vals.Data()}, 0, 0)
		list := array.NewFixedSizeListData(ld)
		ld.Release() // the list holds it
		vals.Release()
		rec := array.NewRecordBatch(as, []arrow.Array{idArr, list}, int64(n))
		idArr.Release()
		list.Release()
		err = w.Write(ctx, rec)
		rec.Release()
		if err != nil {
			return fail(err)
		}
	}
	ivf, err := ivfBuffer(lengths, nil, s.Dim)
	if err != nil {
		return fail(err)
	}
	pos, err := w.AddGlobalBuffer(ctx, ivf)
	if err != nil {
		return fail(err)
	}
	md := map[string]string{keyDistance: metric, keyIVF: strconv.Itoa(pos)}
	var storage string
	if s.Quant == QuantPQ {
		cb, err := proto.MarshalOptions{Deterministic: true}.Marshal(floatTensor(s.PQCodebook, 256, uint32(s.Dim)))
		if err != nil {
			return fail(err)
		}
		cpos, err := w.AddGlobalBuffer(ctx, cb)
		if err != nil {
			return fail(err)
		}
		b, err := json.Marshal(struct {
			CodebookPosition int   `json:"codebook_position"`
			NBits            int   `json:"nbits"`
			NumSubVectors    int   `json:"num_sub_vectors"`
			Dimension        int   `json:"dimension"`
			CodebookTensor   []int `json:"codebook_tensor"`
			Transposed       bool  `json:"transposed"`
		}{cpos, 8, s.PQSubVectors, s.Dim, []int{}, true})
		if err != nil {
			return fail(err)
		}
		storage = string(b)
	} else {
		b, err := json.Marshal(struct {
			Dim int `json:"dim"`
		}{s.Dim})
		if err != nil {
			return fail(err)
		}
		storage = string(b)
	}
	list, err := json.Marshal([]string{storage})
	if err != nil {
		return fail(err)
	}
	md[keyStorage] = string(list)
	sch.Metadata = md
	wf, err := w.Finish(ctx)
	if err != nil {
		return 0, nil, fmt.Errorf("vecindex: write %s: %w", key, err)
	}
	return wf.Size, lengths, nil
}

func slicesGrow(b []uint8, n int) []uint8 {
	if cap(b) < n {
		return make([]uint8, n)
	}
	return b[:n]
}

func writeIndex(ctx context.Context, store blob.Store, key string, s *WriteSpec, metric string, mem memory.Allocator) (uint64, error) {
	as := arrow.NewSchema([]arrow.Field{{Name: "__flat_marker", Type: arrow.PrimitiveTypes.Uint64}}, nil)
	sch, err := schema.FromArrow(as, 0)
	if err != nil {
		return 0, fmt.Errorf("vecindex: write %s: %w", key, err)
	}
	w, err := format.NewWriter(ctx, store, key, sch, &format.WriterOptions{Allocator: mem})
	if err != nil {
		return 0, fmt.Errorf("vecindex: write %s: %w", key, err)
	}
	fail := func(err error) (uint64, error) {
		w.Abort(ctx)
		return 0, fmt.Errorf("vecindex: write %s: %w", key, err)
	}
	// The flat sub-index has no rows: every partition's length is 0.
	ivf, err := ivfBuffer(make([]uint32, s.Partitions), s.Centroids, s.Dim)
	if err != nil {
		return fail(err)
	}
	pos, err := w.AddGlobalBuffer(ctx, ivf)
	if err != nil {
		return fail(err)
	}
	im, err := json.Marshal(struct {
		Type         string `json:"type"`
		DistanceType string `json:"distance_type"`
	}{s.Type(), metric})
	if err != nil {
		return fail(err)
	}
	flat, err := json.Marshal(make([]string, s.Partitions))
	if err != nil {
		return fail(err)
	}
	sch.Metadata = map[string]string{keyIndex: string(im), keyIVF: strconv.Itoa(pos), keyFlat: string(flat)}
	wf, err := w.Finish(ctx)
	if err != nil {
		return 0, fmt.Errorf("vecindex: write %s: %w", key, err)
	}
	return wf.Size, nil
}

// Details returns the encoded VectorIndexDetails Lance records in the
// manifest for the segment s describes (type URL
// /lance.index.pb.VectorIndexDetails): the metric and the compression.
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
	if s.Quant == QuantPQ {
		d.Compression = &indexpb.VectorIndexDetails_Pq{Pq: &indexpb.VectorIndexDetails_ProductQuantization{NumBits: 8, NumSubVectors: uint32(s.PQSubVectors)}}
	} else {
		d.Compression = &indexpb.VectorIndexDetails_Flat{Flat: &indexpb.VectorIndexDetails_FlatCompression{}}
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(d)
}

// ParseDetails decodes the VectorIndexDetails of a segment and returns
// what Write needs to write another segment like it: the quantization,
// metric and PQ sub-vectors. ok is false for indices Write cannot write
// (HNSW, SQ, RQ, 4-bit PQ).
func ParseDetails(b []byte) (quant Quantization, metric vector.Metric, subVectors int, ok bool, err error) {
	var d indexpb.VectorIndexDetails
	if err := proto.Unmarshal(b, &d); err != nil {
		return "", 0, 0, false, fmt.Errorf("vecindex: VectorIndexDetails: %v: %w", err, lancer.ErrCorrupt)
	}
	switch d.GetMetricType() {
	case indexpb.VectorMetricType_L2:
		metric = vector.L2
	case indexpb.VectorMetricType_Cosine:
		metric = vector.Cosine
	case indexpb.VectorMetricType_Dot:
		metric = vector.Dot
	default:
		return "", 0, 0, false, nil
	}
	if d.HnswIndexConfig != nil {
		return "", metric, 0, false, nil
	}
	switch c := d.GetCompression().(type) {
	case *indexpb.VectorIndexDetails_Flat:
		return QuantFlat, metric, 0, true, nil
	case *indexpb.VectorIndexDetails_Pq:
		if c.Pq.GetNumBits() != 8 {
			return "", metric, 0, false, nil
		}
		return QuantPQ, metric, int(c.Pq.GetNumSubVectors()), true, nil
	}
	return "", metric, 0, false, nil
}
