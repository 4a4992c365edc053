package vecindex

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/internal/pb/indexpb"
	"github.com/lancerdb/lancer/vector"
)

// File names of a v3 vector index segment (I1).
const (
	IndexFile     = "index.idx"
	AuxiliaryFile = "auxiliary.idx"
)

// Schema metadata keys (I2-I6).
const (
	keyIndex       = "lance:index"
	keyIVF         = "lance:ivf"
	keyFlat        = "lance:flat"
	keyHNSW        = "lance:hnsw"
	keyStorage     = "storage_metadata"
	keyDistance    = "distance_type"
	colRowID       = "_rowid"
	colPQ          = "__pq_code"
	colSQ          = "__sq_code"
	colFlat        = "flat"
	colVectorID    = "__vector_id"
	colNeighbors   = "__neighbors"
	colDistance    = "_distance"
	maxDim         = 1 << 16
	maxPartitions  = 1 << 20
	maxGlobalBytes = 1 << 30
)

// Quantization says how a segment stores its vectors.
type Quantization string

// SubIndex says how a segment searches a partition.
type SubIndex string

// The quantizations and sub-indices Lance writes.
const (
	QuantFlat Quantization = "FLAT"
	QuantPQ   Quantization = "PQ"
	QuantSQ   Quantization = "SQ"
	SubFlat   SubIndex     = "FLAT"
	SubHNSW   SubIndex     = "HNSW"
)

// Index is one opened Lance v3 vector index segment. Its partitions are
// read when a search first probes them and kept (the segment's files bound
// what it keeps). It is safe for concurrent use.
type Index struct {
	// Type is the index type as index.idx records it ("IVF_PQ",
	// "IVF_HNSW_SQ", ...).
	Type string
	// Metric is the segment's distance.
	Metric vector.Metric
	// Quant and Sub are the storage and the partition search.
	Quant Quantization
	Sub   SubIndex
	// Legacy says the segment is Lance's legacy single-file IVF_PQ (file
	// version 0.1, L1-L4 of doc.go).
	Legacy bool

	dim       int
	centroids []float32 // nparts × dim
	nparts    int
	// row ranges of each partition in auxiliary.idx and (HNSW) index.idx
	auxStart, auxLen []uint64
	subStart, subLen []uint64
	hnswMeta         []hnswMetadata

	pq pqMeta
	sq sqMeta

	location string // the segment directory, for errors
	idx, aux *format.Reader
	legacy   *legacyFile // a legacy segment's file; idx and aux are nil

	cache PartitionCache // nil: parts keeps them
	mu    sync.Mutex
	parts map[int]*partition
	bytes int64
}

type pqMeta struct {
	nbits      int
	m          int
	codebook   []float32 // m × 2^nbits × (dim/m)
	transposed bool
}

type sqMeta struct {
	lo, hi float64
}

type hnswMetadata struct {
	EntryPoint uint32 `json:"entry_point"`
	Params     struct {
		MaxLevel       int `json:"max_level"`
		M              int `json:"m"`
		EfConstruction int `json:"ef_construction"`
	} `json:"params"`
	LevelOffsets []int `json:"level_offsets"`
}

// OpenOptions configures Open. The zero value is valid.
type OpenOptions struct {
	// Name names the index in errors. Default: the directory.
	Name string
	// Partitions, when set, keeps the partitions searches load instead of
	// the Index, so that they share the caller's memory budget (and may
	// be evicted, then read again). Default nil: the Index keeps every
	// partition it loaded.
	Partitions PartitionCache
}

// PartitionCache keeps the partitions of an Index (OpenOptions.Partitions).
type PartitionCache interface {
	// Partition returns partition p of the index, calling load when it is
	// not cached; concurrent calls for one p should share one load. It
	// returns ctx's error if ctx is done first, and load's error (not
	// cached) if the load fails.
	Partition(ctx context.Context, p int, load func(ctx context.Context) (*Partition, error)) (*Partition, error)
}

// Partition is one loaded partition of an Index, opaque and read only:
// what a PartitionCache keeps.
type Partition struct{ part *partition }

// Bytes estimates the memory the partition holds.
func (p *Partition) Bytes() int64 { return p.part.bytes + 128 }

// corrupt returns an error wrapping lancer.ErrCorrupt naming the index and
// file.
func (ix *Index) corrupt(file, format_ string, args ...any) error {
	return fmt.Errorf("vecindex: index %s: %s: %s: %w", ix.location, file, fmt.Sprintf(format_, args...), lancer.ErrCorrupt)
}

// Open opens the segment whose files are dir+"/index.idx" and
// dir+"/auxiliary.idx" in store: it reads both files' metadata, the IVF
// model and the quantizer now, with ctx. A segment of a kind this package
// does not search is an error wrapping lancer.ErrUnsupported; malformed
// files lancer.ErrCorrupt, naming the index and file.
func Open(ctx context.Context, store blob.Store, dir string, opts *OpenOptions) (*Index, error) {
	var o OpenOptions
	if opts != nil {
		o = *opts
	}
	loc := dir
	if o.Name != "" {
		loc = o.Name + " (" + dir + ")"
	}
	ix := &Index{location: loc, parts: map[int]*partition{}, cache: o.Partitions}
	// Lance's legacy vector index (file version 0.1) is index.idx alone
	// with a protobuf footer (I1).
	if _, err := store.Stat(ctx, dir+"/"+AuxiliaryFile); errors.Is(err, lancer.ErrNotFound) {
		if err := ix.openLegacy(ctx, store, dir+"/"+IndexFile); err != nil {
			return nil, err
		}
		return ix, nil
	} else if err != nil {
		return nil, fmt.Errorf("vecindex: index %s: %w", loc, err)
	}
	var err error
	if ix.idx, err = format.Open(ctx, store, dir+"/"+IndexFile, nil); err != nil {
		return nil, fmt.Errorf("vecindex: index %s: %w", loc, err)
	}
	if ix.aux, err = format.Open(ctx, store, dir+"/"+AuxiliaryFile, nil); err != nil {
		return nil, fmt.Errorf("vecindex: index %s: %w", loc, err)
	}
	if err := ix.readIndexFile(ctx, store); err != nil {
		return nil, err
	}
	if err := ix.readAuxFile(ctx, store); err != nil {
		return nil, err
	}
	return ix, nil
}

// ResidentBytes is about what the Index holds in memory now: its front
// matter and the partitions loaded so far.
func (ix *Index) ResidentBytes() int64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n := int64(4*len(ix.centroids)+4*len(ix.pq.codebook)+32*(len(ix.auxStart)+len(ix.subStart))) + ix.bytes + 512
	if ix.legacy != nil {
		return n + int64(8*len(ix.legacy.offsets))
	}
	return n + ix.idx.MetadataBytes() + ix.aux.MetadataBytes()
}

// Dim returns the vectors' dimension.
func (ix *Index) Dim() int { return ix.dim }

// Partitions returns the number of IVF partitions.
func (ix *Index) Partitions() int { return ix.nparts }

func (ix *Index) readIndexFile(ctx context.Context, store blob.Store) error {
	md := ix.idx.Schema().Metadata
	raw, ok := md[keyIndex]
	if !ok {
		return ix.corrupt(IndexFile, "no %s metadata", keyIndex)
	}
	var im struct {
		Type         string `json:"type"`
		DistanceType string `json:"distance_type"`
	}
	if err := json.Unmarshal([]byte(raw), &im); err != nil {
		return ix.corrupt(IndexFile, "%s: %v", keyIndex, err)
	}
	ix.Type = im.Type
	m, err := parseMetric(im.DistanceType)
	if err != nil {
		return ix.corrupt(IndexFile, "%s distance_type: %v", keyIndex, err)
	}
	ix.Metric = m
	switch im.Type {
	case "IVF_FLAT":
		ix.Quant, ix.Sub = QuantFlat, SubFlat
	case "IVF_PQ":
		ix.Quant, ix.Sub = QuantPQ, SubFlat
	case "IVF_SQ":
		ix.Quant, ix.Sub = QuantSQ, SubFlat
	case "IVF_HNSW_FLAT":
		ix.Quant, ix.Sub = QuantFlat, SubHNSW
	case "IVF_HNSW_PQ":
		ix.Quant, ix.Sub = QuantPQ, SubHNSW
	case "IVF_HNSW_SQ":
		ix.Quant, ix.Sub = QuantSQ, SubHNSW
	default:
		return fmt.Errorf("vecindex: index %s: type %q: %w", ix.location, im.Type, lancer.ErrUnsupported)
	}
	ivf, err := ix.readIVF(ctx, store, ix.idx, IndexFile)
	if err != nil {
		return err
	}
	ix.nparts = len(ivf.GetLengths())
	// Lance keeps the centroids in index.idx's IVF; auxiliary.idx's holds
	// only the storage's partition lengths.
	if err := ix.readCentroids(ivf, IndexFile); err != nil {
		return err
	}
	key := keyFlat
	if ix.Sub == SubHNSW {
		key = keyHNSW
	}
	raw, ok = md[key]
	if !ok {
		return ix.corrupt(IndexFile, "no %s metadata", key)
	}
	var subs []string
	if err := json.Unmarshal([]byte(raw), &subs); err != nil {
		return ix.corrupt(IndexFile, "%s: %v", key, err)
	}
	if len(subs) != ix.nparts {
		return ix.corrupt(IndexFile, "%s has %d partitions, lance:ivf %d", key, len(subs), ix.nparts)
	}
	if ix.Sub == SubHNSW {
		ix.subStart, ix.subLen, err = ix.rowRanges(ivf, ix.idx.NumRows(), IndexFile)
		if err != nil {
			return err
		}
		ix.hnswMeta = make([]hnswMetadata, len(subs))
		for p, s := range subs {
			hm := &ix.hnswMeta[p]
			if s == "" {
				continue
			}
			if err := json.Unmarshal([]byte(s), hm); err != nil {
				return ix.corrupt(IndexFile, "%s partition %d: %v", key, p, err)
			}
			if hm.Params.MaxLevel < 0 || hm.Params.MaxLevel > 64 || len(hm.LevelOffsets) > 65 {
				return ix.corrupt(IndexFile, "%s partition %d: %d levels", key, p, hm.Params.MaxLevel)
			}
			if len(hm.LevelOffsets) > 1 && hm.LevelOffsets[1] > hm.LevelOffsets[0] && int(hm.EntryPoint) >= hm.LevelOffsets[1]-hm.LevelOffsets[0] {
				return ix.corrupt(IndexFile, "%s partition %d: entry point %d of %d nodes", key, p, hm.EntryPoint, hm.LevelOffsets[1]-hm.LevelOffsets[0])
			}
			prev := 0
			for _, off := range hm.LevelOffsets {
				if off < prev || uint64(off) > ix.subLen[p] {
					return ix.corrupt(IndexFile, "%s partition %d: level offsets %v outside its %d rows", key, p, hm.LevelOffsets, ix.subLen[p])
				}
				prev = off
			}
		}
	}
	return nil
}

func (ix *Index) readAuxFile(ctx context.Context, store blob.Store) error {
	md := ix.aux.Schema().Metadata
	if d, ok := md[keyDistance]; ok {
		m, err := parseMetric(d)
		if err != nil {
			return ix.corrupt(AuxiliaryFile, "%s: %v", keyDistance, err)
		}
		if m != ix.Metric {
			return ix.corrupt(AuxiliaryFile, "distance %v, index.idx %v", m, ix.Metric)
		}
	}
	ivf, err := ix.readIVF(ctx, store, ix.aux, AuxiliaryFile)
	if err != nil {
		return err
	}
	if len(ivf.GetLengths()) != ix.nparts {
		return ix.corrupt(AuxiliaryFile, "%d partitions, index.idx %d", len(ivf.GetLengths()), ix.nparts)
	}
	if ix.auxStart, ix.auxLen, err = ix.rowRanges(ivf, ix.aux.NumRows(), AuxiliaryFile); err != nil {
		return err
	}
	if ix.Sub == SubHNSW {
		for p := range ix.nparts {
			if n := ix.hnswMeta[p].LevelOffsets; len(n) > 1 && uint64(n[1]-n[0]) != ix.auxLen[p] {
				return ix.corrupt(IndexFile, "partition %d: HNSW bottom level of %d nodes over %d vectors", p, n[1]-n[0], ix.auxLen[p])
			}
		}
	}
	raw, ok := md[keyStorage]
	if !ok {
		return ix.corrupt(AuxiliaryFile, "no %s metadata", keyStorage)
	}
	var metas []string
	if err := json.Unmarshal([]byte(raw), &metas); err != nil || len(metas) == 0 {
		return ix.corrupt(AuxiliaryFile, "%s: %v (%d entries)", keyStorage, err, len(metas))
	}
	switch ix.Quant {
	case QuantPQ:
		return ix.readPQ(ctx, store, metas[0])
	case QuantSQ:
		var sm struct {
			Dim     int `json:"dim"`
			NumBits int `json:"num_bits"`
			Bounds  struct {
				Start float64 `json:"start"`
				End   float64 `json:"end"`
			} `json:"bounds"`
		}
		if err := json.Unmarshal([]byte(metas[0]), &sm); err != nil {
			return ix.corrupt(AuxiliaryFile, "%s: %v", keyStorage, err)
		}
		if sm.NumBits != 8 {
			return fmt.Errorf("vecindex: index %s: %d-bit SQ: %w", ix.location, sm.NumBits, lancer.ErrUnsupported)
		}
		if sm.Dim != ix.dim {
			return ix.corrupt(AuxiliaryFile, "SQ of %d dimensions, centroids %d", sm.Dim, ix.dim)
		}
		ix.sq = sqMeta{lo: sm.Bounds.Start, hi: sm.Bounds.End}
		if !finite(ix.sq.lo) || !finite(ix.sq.hi) || ix.sq.hi < ix.sq.lo {
			return ix.corrupt(AuxiliaryFile, "SQ bounds [%v, %v)", ix.sq.lo, ix.sq.hi)
		}
		return ix.checkCodeColumn(colSQ, ix.dim)
	default:
		return ix.checkCodeColumn(colFlat, ix.dim)
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// checkCodeColumn checks that auxiliary.idx holds _rowid and a fixed-size
// list column of width n.
func (ix *Index) checkCodeColumn(name string, n int) error {
	var haveRow, haveCode bool
	for _, f := range ix.aux.Schema().Fields {
		switch f.Name {
		case colRowID:
			haveRow = f.LogicalType == "uint64"
		case name:
			lt := f.LogicalType
			i := strings.LastIndexByte(lt, ':')
			w, err := strconv.Atoi(lt[i+1:])
			haveCode = strings.HasPrefix(lt, "fixed_size_list:") && err == nil && w == n
			if !haveCode {
				return ix.corrupt(AuxiliaryFile, "column %s is %s, want %d codes a row", name, lt, n)
			}
		}
	}
	if !haveRow || !haveCode {
		return ix.corrupt(AuxiliaryFile, "no uint64 %s or %s column", colRowID, name)
	}
	return nil
}

func (ix *Index) readPQ(ctx context.Context, store blob.Store, raw string) error {
	var pm struct {
		CodebookPosition int    `json:"codebook_position"`
		NBits            int    `json:"nbits"`
		NumSubVectors    int    `json:"num_sub_vectors"`
		Dimension        int    `json:"dimension"`
		CodebookTensor   []byte `json:"codebook_tensor"`
		Transposed       bool   `json:"transposed"`
	}
	if err := json.Unmarshal([]byte(raw), &pm); err != nil {
		return ix.corrupt(AuxiliaryFile, "%s: %v", keyStorage, err)
	}
	if pm.NBits != 8 && pm.NBits != 4 {
		return fmt.Errorf("vecindex: index %s: %d-bit PQ: %w", ix.location, pm.NBits, lancer.ErrUnsupported)
	}
	if pm.Dimension != ix.dim || pm.NumSubVectors <= 0 || ix.dim%pm.NumSubVectors != 0 || (pm.NBits == 4 && pm.NumSubVectors%2 != 0) {
		return ix.corrupt(AuxiliaryFile, "PQ of %d sub-vectors over %d dimensions (centroids %d)", pm.NumSubVectors, pm.Dimension, ix.dim)
	}
	var tb []byte
	if pm.CodebookPosition > 0 {
		b, err := ix.globalBuffer(ctx, store, ix.aux, AuxiliaryFile, pm.CodebookPosition)
		if err != nil {
			return err
		}
		tb = b
	} else {
		tb = pm.CodebookTensor
	}
	var t indexpb.Tensor
	if err := proto.Unmarshal(tb, &t); err != nil {
		return ix.corrupt(AuxiliaryFile, "PQ codebook: %v", err)
	}
	cb, err := tensorFloats(&t)
	if err != nil {
		return ix.corrupt(AuxiliaryFile, "PQ codebook: %v", err)
	}
	if want := (1 << pm.NBits) * ix.dim; len(cb) != want {
		return ix.corrupt(AuxiliaryFile, "PQ codebook of %d values, want %d (%d centroids × %d dimensions)", len(cb), want, 1<<pm.NBits, ix.dim)
	}
	ix.pq = pqMeta{nbits: pm.NBits, m: pm.NumSubVectors, codebook: cb, transposed: pm.Transposed}
	width := pm.NumSubVectors
	if pm.NBits == 4 {
		width /= 2
	}
	return ix.checkCodeColumn(colPQ, width)
}

// readIVF reads the IVF protobuf that metadata lance:ivf points to (the
// index of a global buffer).
func (ix *Index) readIVF(ctx context.Context, store blob.Store, r *format.Reader, file string) (*indexpb.IVF, error) {
	raw, ok := r.Schema().Metadata[keyIVF]
	if !ok {
		return nil, ix.corrupt(file, "no %s metadata", keyIVF)
	}
	pos, err := strconv.Atoi(raw)
	if err != nil {
		return nil, ix.corrupt(file, "%s %q: %v", keyIVF, raw, err)
	}
	b, err := ix.globalBuffer(ctx, store, r, file, pos)
	if err != nil {
		return nil, err
	}
	var ivf indexpb.IVF
	if err := proto.Unmarshal(b, &ivf); err != nil {
		return nil, ix.corrupt(file, "IVF: %v", err)
	}
	if n := len(ivf.GetLengths()); n == 0 || n > maxPartitions {
		return nil, ix.corrupt(file, "IVF of %d partitions", n)
	}
	return &ivf, nil
}

func (ix *Index) globalBuffer(ctx context.Context, store blob.Store, r *format.Reader, file string, pos int) ([]byte, error) {
	bufs := r.GlobalBuffers()
	if pos <= 0 || pos >= len(bufs) {
		return nil, ix.corrupt(file, "global buffer %d of %d", pos, len(bufs))
	}
	b := bufs[pos]
	if b.Size > maxGlobalBytes || b.Offset > uint64(r.Size()) || b.Size > uint64(r.Size())-b.Offset {
		return nil, ix.corrupt(file, "global buffer %d [%d, +%d) outside the file's %d bytes", pos, b.Offset, b.Size, r.Size())
	}
	data, err := store.ReadRange(ctx, r.Key(), int64(b.Offset), int64(b.Size))
	if err != nil {
		return nil, fmt.Errorf("vecindex: index %s: %s: %w", ix.location, file, err)
	}
	return data, nil
}

// rowRanges returns each partition's rows in a file of n rows (offsets,
// else the running sum of lengths, as Lance's IvfModel).
func (ix *Index) rowRanges(ivf *indexpb.IVF, n uint64, file string) (start, length []uint64, err error) {
	lens := ivf.GetLengths()
	offs := ivf.GetOffsets()
	if len(offs) != 0 && len(offs) != len(lens) {
		return nil, nil, ix.corrupt(file, "IVF of %d offsets and %d lengths", len(offs), len(lens))
	}
	start = make([]uint64, len(lens))
	length = make([]uint64, len(lens))
	var run uint64
	for p, l := range lens {
		s := run
		if len(offs) > 0 {
			s = offs[p]
		}
		if s > n || uint64(l) > n-s {
			return nil, nil, ix.corrupt(file, "partition %d rows [%d, +%d) overrun the file's %d rows", p, s, l, n)
		}
		start[p], length[p] = s, uint64(l)
		run = s + uint64(l)
	}
	return start, length, nil
}

func (ix *Index) readCentroids(ivf *indexpb.IVF, file string) error {
	var vals []float32
	var dim int
	if t := ivf.GetCentroidsTensor(); t != nil {
		if len(t.GetShape()) != 2 || int(t.GetShape()[0]) != ix.nparts {
			return ix.corrupt(file, "centroids of shape %v for %d partitions", t.GetShape(), ix.nparts)
		}
		dim = int(t.GetShape()[1])
		v, err := tensorFloats(t)
		if err != nil {
			return ix.corrupt(file, "centroids: %v", err)
		}
		vals = v
	} else if c := ivf.GetCentroids(); len(c) > 0 {
		vals = c
		dim = len(c) / ix.nparts
	} else {
		return ix.corrupt(file, "IVF without centroids")
	}
	if dim <= 0 || dim > maxDim || len(vals) != dim*ix.nparts {
		return ix.corrupt(file, "%d centroid values for %d partitions of %d dimensions", len(vals), ix.nparts, dim)
	}
	ix.dim, ix.centroids = dim, vals
	return nil
}

// tensorFloats decodes a float tensor's elements as float32.
func tensorFloats(t *indexpb.Tensor) ([]float32, error) {
	d := t.GetData()
	n := uint64(1)
	for _, s := range t.GetShape() {
		n *= uint64(s)
		if n > maxGlobalBytes {
			return nil, fmt.Errorf("tensor of shape %v", t.GetShape())
		}
	}
	var width uint64
	switch t.GetDataType() {
	case indexpb.Tensor_FLOAT32:
		width = 4
	case indexpb.Tensor_FLOAT16:
		width = 2
	case indexpb.Tensor_FLOAT64:
		width = 8
	default:
		return nil, fmt.Errorf("tensor of %v: %w", t.GetDataType(), lancer.ErrUnsupported)
	}
	if uint64(len(d)) != n*width {
		return nil, fmt.Errorf("tensor of shape %v holds %d bytes, want %d", t.GetShape(), len(d), n*width)
	}
	out := make([]float32, n)
	for i := range out {
		switch width {
		case 4:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:]))
		case 2:
			out[i] = vector.HalfToFloat32(binary.LittleEndian.Uint16(d[2*i:]))
		case 8:
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:])))
		}
	}
	return out, nil
}

func parseMetric(s string) (vector.Metric, error) {
	switch strings.ToLower(s) {
	case "l2", "euclidean":
		return vector.L2, nil
	case "cosine":
		return vector.Cosine, nil
	case "dot":
		return vector.Dot, nil
	}
	return 0, fmt.Errorf("distance %q", s)
}

// ReadType returns the type of the vector index segment in dir as
// index.idx records it ("IVF_PQ", "IVF_HNSW_SQ", "IVF_RQ", ...), whether
// or not this package searches it, and whether it is the legacy file
// (L1). It reads index.idx's metadata only.
func ReadType(ctx context.Context, store blob.Store, dir string) (typ string, legacy bool, err error) {
	if _, err := store.Stat(ctx, dir+"/"+AuxiliaryFile); errors.Is(err, lancer.ErrNotFound) {
		ix := &Index{location: dir, parts: map[int]*partition{}}
		if err := ix.openLegacy(ctx, store, dir+"/"+IndexFile); err != nil && !errors.Is(err, lancer.ErrUnsupported) {
			return "", true, err
		}
		return "IVF_PQ", true, nil
	} else if err != nil {
		return "", false, fmt.Errorf("vecindex: index %s: %w", dir, err)
	}
	r, err := format.Open(ctx, store, dir+"/"+IndexFile, nil)
	if err != nil {
		return "", false, fmt.Errorf("vecindex: index %s: %w", dir, err)
	}
	var im struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal([]byte(r.Schema().Metadata[keyIndex]), &im); err != nil || im.Type == "" {
		return "", false, fmt.Errorf("vecindex: index %s: %s: no index type in %s: %w", dir, IndexFile, keyIndex, lancer.ErrCorrupt)
	}
	return im.Type, false, nil
}

// LanceTypeName names an index type as Lance lists it: "IVF_HNSW_SQ" →
// "IvfHnswSq".
func LanceTypeName(typ string) string {
	var b strings.Builder
	for w := range strings.SplitSeq(typ, "_") {
		if w == "" {
			continue
		}
		b.WriteString(strings.ToUpper(w[:1]) + strings.ToLower(w[1:]))
	}
	return b.String()
}

// DetailsTypeName names a Lance vector index as Lance lists it from the
// VectorIndexDetails message its manifest records (Lance 12 records the
// quantization and the HNSW parameters there): "IvfHnswSq", ...; "" when
// the details do not say.
func DetailsTypeName(details []byte) string {
	if len(details) == 0 {
		return ""
	}
	var det indexpb.VectorIndexDetails
	if err := proto.Unmarshal(details, &det); err != nil {
		return ""
	}
	var quant string
	switch det.GetCompression().(type) {
	case *indexpb.VectorIndexDetails_Pq:
		quant = "PQ"
	case *indexpb.VectorIndexDetails_Sq:
		quant = "SQ"
	case *indexpb.VectorIndexDetails_Rq:
		quant = "RQ"
	case *indexpb.VectorIndexDetails_Flat:
		quant = "FLAT"
	default:
		return ""
	}
	typ := "IVF_"
	if det.HnswIndexConfig != nil {
		typ += "HNSW_"
	}
	return LanceTypeName(typ + quant)
}
