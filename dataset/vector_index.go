package dataset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/scalarindex"
	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/vector"
)

// Vector index types CreateIndex builds.
const (
	// IndexFlat keeps a contiguous copy of the vectors and answers every
	// search exactly (one partition, float32).
	IndexFlat = "flat"
	// IndexIVFFlat partitions the vectors with k-means and scans the
	// NProbes nearest partitions exactly (Lance's IVF_FLAT).
	IndexIVFFlat = "ivf_flat"
	// IndexHNSW is one HNSW graph over all vectors, stored as 8-bit scalar
	// quantized codes.
	IndexHNSW = "hnsw"
	// IndexIVFHNSWSQ partitions the vectors with k-means and builds one
	// HNSW graph per partition over 8-bit scalar-quantized codes (Lance's
	// IVF_HNSW_SQ). The default.
	IndexIVFHNSWSQ = "ivf_hnsw_sq"
	// IndexIVFPQ partitions the vectors with k-means and keeps each row as
	// a product-quantized code of its residual to its partition centroid
	// (of the row itself for dot, as Lance;
	// CreateIndexOptions.SubVectors bytes), scanned with per-query lookup
	// tables (Lance's IVF_PQ). The smallest index; its distances are
	// coarse, so search it with SearchOptions.RefineFactor for exact
	// distances and good recall.
	IndexIVFPQ = "ivf_pq"
	// IndexIVFSQ partitions the vectors with k-means and scans the NProbes
	// nearest partitions' 8-bit scalar-quantized codes (Lance's IVF_SQ).
	IndexIVFSQ = "ivf_sq"
	// IndexIVFHNSWFlat partitions the vectors with k-means and builds one
	// HNSW graph per partition over the exact vectors (Lance's
	// IVF_HNSW_FLAT).
	IndexIVFHNSWFlat = "ivf_hnsw_flat"
	// IndexIVFHNSWPQ partitions the vectors with k-means and builds one
	// HNSW graph per partition over product-quantized codes (Lance's
	// IVF_HNSW_PQ; the graph is built on the exact vectors).
	IndexIVFHNSWPQ = "ivf_hnsw_pq"
)

// vectorIndexFile is the name of a lancer vector index file in its segment
// directory, _indices/<uuid>/: lancer's own format, which it reads (earlier
// lancers wrote it) and no longer writes.
const vectorIndexFile = "vectors.lancer-ivf"

// CreateIndexOptions configures CreateIndex. A nil pointer or zero fields
// mean the defaults.
type CreateIndexOptions struct {
	// CommitOptions configure the commit (retries, allocator of the
	// vectors read, transaction properties).
	CommitOptions
	// Type is IndexIVFHNSWSQ (default), IndexHNSW, IndexIVFFlat,
	// IndexIVFPQ, IndexIVFSQ, IndexIVFHNSWFlat, IndexIVFHNSWPQ or
	// IndexFlat for a vector index, IndexBTree, IndexBitmap or
	// IndexLabelList for a scalar one, IndexFTS ("fts", "inverted") for a
	// full-text one. Lance's spellings ("IVF_HNSW_SQ",
	// "IVF_FLAT", "IVF_PQ", "IVF_SQ", "IVF_HNSW_FLAT", "IVF_HNSW_PQ",
	// "BTREE", "BITMAP", "LABEL_LIST") are accepted. The vector options
	// below mean nothing to a scalar index.
	Type string
	// Name is the index name. Default: "<column>_idx", as Lance names
	// indices.
	Name string
	// Metric is the distance the index orders by. Default vector.L2.
	Metric vector.Metric
	// Partitions is the number of IVF partitions of the ivf_* types.
	// Default round(√rows), Lance's default.
	Partitions int
	// SubVectors is the number of product-quantization sub-vectors of
	// IndexIVFPQ, the bytes each row takes; it must divide the dimension.
	// Default: the largest divisor of the dimension not above dim/8 (16 for
	// 128 dimensions; see vector.PQOptions). Ignored by the other types.
	SubVectors int
	// PQBits is the code width of each IndexIVFPQ sub-vector, Lance's
	// num_bits: 8 (the default; 0 means 8) or 4 (16 codewords a
	// sub-vector, two sub-vectors a byte, so SubVectors must be even;
	// half the bytes of 8-bit codes and coarser distances). Lance builds
	// 4-bit PQ only for IVF_PQ, and so does lancer: other types refuse it.
	PQBits int
	// M and EfConstruction are the HNSW parameters of the *hnsw* types.
	// Defaults: vector.HNSWOptions' M and, per partition, the vector
	// package's default for IVF partitions.
	M, EfConstruction int
	// Replace replaces an index of the same name. Default false: creating
	// an index whose name exists fails with lancer.ErrAlreadyExists.
	Replace bool
	// Seed seeds the build (k-means sampling, HNSW levels): the same seed
	// and data give the same index. Default 0.
	Seed uint64
	// Workers is the number of goroutines building. Default GOMAXPROCS.
	Workers int
	// FTS are the analyzer parameters of an IndexFTS index (tokenizer,
	// filters, positions). Default nil: ftsindex.DefaultParams(), Lance's
	// defaults (stemming, stop words, no positions).
	FTS *ftsindex.Params
	// FTSPartitionBytes bounds the memory of an IndexFTS build: past this
	// estimate of posting-list bytes a partition is written and dropped
	// (ftsindex.BuildOptions.PartitionBytes). Default 0:
	// ftsindex.DefaultPartitionBytes.
	FTSPartitionBytes int
	// VectorBufferBytes bounds the rows a vector index build holds in
	// memory at once: the build spills the column's vectors (as float32)
	// to a temporary file in SpillDir and builds a group of partitions
	// of up to this many bytes of rows per pass over it
	// (vector.IVFOptions.BufferBytes). Default 0:
	// vector.DefaultIVFBufferBytes. The k-means sample (64 rows a
	// partition) and IVF_PQ's codebook sample (up to 65536 rows) come on
	// top, while they train.
	VectorBufferBytes int
	// SpillDir is the directory of the vector build's temporary file
	// (VectorBufferBytes): as large as the column's vectors as float32, so
	// it belongs on a disk with room (the system's /tmp is often a small
	// tmpfs, that is memory). The file is unlinked as soon as it is
	// created where the system allows it. Default "": os.TempDir().
	SpillDir string
	// Progress, if set, is called as the build goes on: stage is "read"
	// (rows read of the total), then the vector package's stages
	// ("kmeans", "assign", "partitions"), then "write". It may be called
	// from several goroutines and must be cheap.
	Progress func(stage string, done, total int)
}

// normalizeIndexType maps the accepted spellings onto the Index* constants.
func normalizeIndexType(t string) (string, error) {
	switch strings.ToLower(t) {
	case "", IndexIVFHNSWSQ:
		return IndexIVFHNSWSQ, nil
	case IndexHNSW, "hnsw_sq":
		return IndexHNSW, nil
	case IndexIVFFlat:
		return IndexIVFFlat, nil
	case IndexIVFPQ:
		return IndexIVFPQ, nil
	case IndexFlat:
		return IndexFlat, nil
	case IndexIVFSQ:
		return IndexIVFSQ, nil
	case IndexIVFHNSWFlat:
		return IndexIVFHNSWFlat, nil
	case IndexIVFHNSWPQ:
		return IndexIVFHNSWPQ, nil
	case IndexBTree:
		return IndexBTree, nil
	case IndexBitmap:
		return IndexBitmap, nil
	case IndexLabelList, "labellist":
		return IndexLabelList, nil
	case IndexFTS, "inverted":
		return IndexFTS, nil
	}
	return "", fmt.Errorf("dataset: index type %q: want flat, ivf_flat, hnsw, ivf_hnsw_sq, ivf_pq, ivf_sq, ivf_hnsw_flat, ivf_hnsw_pq, btree, bitmap, label_list or fts: %w", t, lancer.ErrInvalidArgument)
}

// ivfOptions returns the vector package's build options for an index type.
// The SQ types keep the exact vectors: the segment writer quantizes them as
// Lance does (one range for every dimension).
func ivfOptions(typ string, o *CreateIndexOptions, n int) *vector.IVFOptions {
	io := &vector.IVFOptions{
		Metric:  o.Metric,
		Seed:    o.Seed,
		Workers: o.Workers,
		HNSW:    vector.HNSWOptions{M: o.M, EfConstruction: o.EfConstruction, Metric: o.Metric, Seed: o.Seed},
		KMeans:  vector.KMeansOptions{Metric: o.Metric, Seed: o.Seed, Workers: o.Workers},
	}
	switch typ {
	case IndexFlat:
		io.Partitions, io.Sub, io.Storage = 1, vector.SubFlat, vector.StoreFloat32
	case IndexIVFFlat:
		io.Partitions, io.Sub, io.Storage = o.Partitions, vector.SubFlat, vector.StoreFloat32
	case IndexHNSW:
		io.Partitions, io.Sub, io.Storage = 1, vector.SubHNSW, vector.StoreFloat32
	case IndexIVFPQ:
		io.Partitions, io.Sub, io.Storage = o.Partitions, vector.SubFlat, vector.StorePQ
		io.PQ = vector.PQOptions{SubVectors: o.SubVectors, Bits: o.PQBits, Raw: o.Metric == vector.Dot}
	case IndexIVFSQ:
		io.Partitions, io.Sub, io.Storage = o.Partitions, vector.SubFlat, vector.StoreFloat32
	case IndexIVFHNSWPQ:
		io.Partitions, io.Sub, io.Storage = o.Partitions, vector.SubHNSW, vector.StorePQ
		io.PQ = vector.PQOptions{SubVectors: o.SubVectors, Raw: o.Metric == vector.Dot}
	default: // IndexIVFHNSWSQ, IndexIVFHNSWFlat
		io.Partitions, io.Sub, io.Storage = o.Partitions, vector.SubHNSW, vector.StoreFloat32
	}
	if io.Partitions <= 0 {
		io.Partitions = max(1, int(math.Round(math.Sqrt(float64(n)))))
	}
	io.Partitions = min(io.Partitions, max(n, 1))
	if o.Progress != nil {
		io.Progress = o.Progress
	}
	return io
}

// vectorColumn resolves column to a field holding fixed-size lists of
// floats and returns it with its dimension.
func (d *Dataset) vectorColumn(column string) (*schema.Field, int, error) {
	f, _, err := resolveColumn(d.manifest.Schema, column)
	if err != nil {
		return nil, 0, err
	}
	fsl, ok := f.Type.(*arrow.FixedSizeListType)
	if !ok {
		return nil, 0, fmt.Errorf("dataset: column %q is %s, not a vector (fixed-size list of floats): %w",
			column, f.Type, lancer.ErrInvalidArgument)
	}
	switch fsl.Elem().ID() {
	case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
	default:
		return nil, 0, fmt.Errorf("dataset: column %q holds %s, not floats: %w", column, fsl.Elem(), lancer.ErrInvalidArgument)
	}
	if fsl.Len() <= 0 {
		return nil, 0, fmt.Errorf("dataset: column %q has dimension %d: %w", column, fsl.Len(), lancer.ErrInvalidArgument)
	}
	return f, int(fsl.Len()), nil
}

// CreateIndex builds a vector index over column (a fixed-size list of
// float16, float32 or float64) from every row of this version and commits it
// as a new version (a CreateIndex transaction, as Lance records index
// creation). The index is written to _indices/<uuid>/ and covers the
// fragments of this version; rows appended later are searched exactly until
// OptimizeIndexes indexes them, and deleted rows are never returned. Null
// vectors, and vectors holding NaN or ±Inf, are not indexed (Search never
// returns them).
//
// Every type is written in Lance's own v3 format (index.idx and
// auxiliary.idx, package vecindex) and committed as Lance commits it
// (details /lance.index.pb.VectorIndexDetails, index version 1): real
// Lance lists and searches it. IndexFlat is an IVF_FLAT of one partition,
// IndexHNSW an IVF_HNSW_SQ of one.
//
// With Type IndexBTree, IndexBitmap or IndexLabelList it builds a scalar
// index over a top-level column instead, in Lance's format (package
// scalarindex), committed as Lance 12 commits it (details
// /lance.table.BTreeIndexDetails, ...BitmapIndexDetails or
// ...LabelListIndexDetails; index version 0, 0 and 1; the segment's files
// with their sizes): it holds the live rows' stable row ids, or their row
// addresses without stable row ids, and NULLs as Lance does. Real Lance
// uses it for its filters, and lancer for every filter it runs (see
// ScanOptions.NoScalarIndex); rows of fragments it does not cover are
// filtered by reading them, until OptimizeIndexes adds them.
func (d *Dataset) CreateIndex(ctx context.Context, column string, opts *CreateIndexOptions) (*Dataset, error) {
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	var o CreateIndexOptions
	if opts != nil {
		o = *opts
	}
	d = d.using(&o.CommitOptions)
	typ, err := normalizeIndexType(o.Type)
	if err != nil {
		return nil, err
	}
	if kind, ok := scalarKinds[typ]; ok {
		return d.createScalarIndex(ctx, column, kind, &o)
	}
	if typ == IndexFTS {
		return d.createFTSIndex(ctx, column, &o)
	}
	field, dim, err := d.vectorColumn(column)
	if err != nil {
		return nil, err
	}
	if o.PQBits != 0 && o.PQBits != 8 && (typ != IndexIVFPQ || o.PQBits != 4) {
		return nil, fmt.Errorf("dataset: %d-bit PQ for an index of type %s: PQBits is 8, or 4 for ivf_pq (as Lance builds them): %w", o.PQBits, typ, lancer.ErrInvalidArgument)
	}
	if o.Name == "" {
		o.Name = column + "_idx"
	}
	removed, err := d.replacedSegments(&o)
	if err != nil {
		return nil, err
	}
	frags := d.fragmentIDs()
	seg, files, err := d.buildVectorSegment(ctx, column, field, dim, typ, &o, frags)
	if err != nil {
		return nil, err
	}
	op := &operation{kind: opCreateIndex, newIndices: []*manifest.IndexMetadata{seg}, removedIndices: removed, indexFiles: files}
	return d.commit(ctx, op, &o.CommitOptions)
}

// replacedSegments returns the segments of the index named o.Name that a
// new one replaces: none without one, an error wrapping
// lancer.ErrAlreadyExists when there is one and o.Replace is not set.
func (d *Dataset) replacedSegments(o *CreateIndexOptions) ([]*manifest.IndexMetadata, error) {
	var removed []*manifest.IndexMetadata
	for _, ix := range d.manifest.IndexSegments() {
		if ix.Name != o.Name {
			continue
		}
		if !o.Replace {
			return nil, fmt.Errorf("dataset: an index named %q exists (set Replace to rebuild it): %w", o.Name, lancer.ErrAlreadyExists)
		}
		removed = append(removed, ix)
	}
	return removed, nil
}

// fragmentIDs returns the ids of the version's fragments, in order.
func (d *Dataset) fragmentIDs() []uint64 {
	frags := make([]uint64, len(d.manifest.Fragments))
	for i, f := range d.manifest.Fragments {
		frags[i] = f.ID
	}
	return frags
}

// buildVectorSegment reads column from the fragments frags, builds an
// index of type typ and writes it to a new segment directory. It returns
// the segment's metadata and the files written.
func (d *Dataset) buildVectorSegment(ctx context.Context, column string, field *schema.Field, dim int, typ string,
	o *CreateIndexOptions, frags []uint64) (*manifest.IndexMetadata, []string, error) {
	if o.VectorBufferBytes < 0 {
		return nil, nil, fmt.Errorf("dataset: VectorBufferBytes %d: %w", o.VectorBufferBytes, lancer.ErrInvalidArgument)
	}
	var sq *vecindex.SQRange
	switch typ {
	case IndexIVFSQ, IndexIVFHNSWSQ, IndexHNSW:
		// The SQ bounds are over every vector: taken while the column
		// streams past, they spare the writer a pass over the partitions.
		sq = vecindex.NewSQRange(o.Metric)
	}
	// The column goes to a temporary file rather than memory, and the
	// build reads it in passes: the k-means sample, the assignment, a
	// group of partitions at a time (vector.TrainIVF). Holding it made the
	// build's memory grow by several times the column (issue #17).
	spill, ids, err := d.spillVectors(ctx, column, dim, frags, o.SpillDir, o.Progress, sq)
	if err != nil {
		return nil, nil, err
	}
	defer spill.Close()
	io := ivfOptions(typ, o, len(ids))
	io.BufferBytes = o.VectorBufferBytes
	b, err := vector.TrainIVF(ctx, spill, dim, ids, io)
	ids = nil // the build holds them in partition order
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: build index on %q: %w", column, err)
	}
	var bounds *vecindex.SQBounds
	if sq != nil {
		bb := sq.Bounds()
		bounds = &bb
	}
	u := newUUID()
	return d.writeLanceSegment(ctx, b, field, typ, o, frags, u, bounds)
}

// segmentSource is what writeLanceSegment writes: a built vector.IVF, or
// a vector.IVFBuild that builds its partitions as they are written.
type segmentSource interface {
	Metric() vector.Metric
	Dim() int
	Centroids() []float32
	Partitions() int
	Sub() vector.SubIndex
	PartitionRows(ctx context.Context, p int) ([]uint64, []float32, []uint8, error)
	PartitionGraph(ctx context.Context, p int) (*vector.HNSW, error)
	PQSubVectors() int
	PQBits() int
	PQCodebook() []float32
	HNSWParams() (m, efConstruction int)
}

// fragmentBitmap encodes the fragment ids frags as a roaring bitmap, as the
// manifest records an index's fragments.
func fragmentBitmap(frags []uint64) ([]byte, error) {
	bm := roaring.New()
	for _, id := range frags {
		bm.Add(uint32(id))
	}
	bm.RunOptimize()
	return bm.ToBytes()
}

// writeLanceSegment writes ivf, an index of type typ, as a Lance v3 index segment (index.idx and
// auxiliary.idx, package vecindex) in _indices/<u>/ and returns its
// metadata as Lance records it: VectorIndexDetails, index version 1, the
// fragments and the files with their sizes.
//
// sqBounds, if set, are the SQ types' bounds, taken from every vector
// already (else Write computes them, a pass over the partitions).
func (d *Dataset) writeLanceSegment(ctx context.Context, ivf segmentSource, field *schema.Field, typ string,
	o *CreateIndexOptions, frags []uint64, u [16]byte, sqBounds *vecindex.SQBounds) (*manifest.IndexMetadata, []string, error) {
	dir := indicesDir + manifest.FormatUUID(u[:])
	spec := &vecindex.WriteSpec{
		Quant:      vecindex.QuantFlat,
		Metric:     ivf.Metric(),
		Dim:        ivf.Dim(),
		Centroids:  ivf.Centroids(),
		Partitions: ivf.Partitions(),
		Rows:       ivf.PartitionRows,
		Allocator:  o.CommitOptions.allocator(nil),
	}
	switch typ {
	case IndexIVFPQ, IndexIVFHNSWPQ:
		spec.Quant, spec.PQSubVectors, spec.PQBits, spec.PQCodebook = vecindex.QuantPQ, ivf.PQSubVectors(), ivf.PQBits(), ivf.PQCodebook()
		if spec.PQBits == 4 {
			// The IVF keeps a byte a sub-vector; Lance's storage packs
			// two (I4 of vecindex).
			m := spec.PQSubVectors
			spec.Rows = func(ctx context.Context, p int) ([]uint64, []float32, []uint8, error) {
				ids, vecs, codes, err := ivf.PartitionRows(ctx, p)
				return ids, vecs, vecindex.PackPQ4(make([]uint8, 0, len(codes)/2), codes, m), err
			}
		}
	case IndexIVFSQ, IndexIVFHNSWSQ, IndexHNSW:
		spec.Quant, spec.SQBounds = vecindex.QuantSQ, sqBounds
	}
	if ivf.Sub() == vector.SubHNSW {
		spec.Sub, spec.Graph = vecindex.SubHNSW, ivf.PartitionGraph
		spec.HNSWM, spec.HNSWEfConstruction = ivf.HNSWParams()
	}
	if o.Progress != nil {
		o.Progress("write", 0, ivf.Partitions())
	}
	ws, err := vecindex.Write(ctx, d.store, dir, spec)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: write index %s: %w", manifest.Location(d.store, dir), err)
	}
	if o.Progress != nil {
		o.Progress("write", ivf.Partitions(), ivf.Partitions())
	}
	var keys []string
	var files []manifest.IndexFile
	for _, f := range ws.Files {
		keys = append(keys, dir+"/"+f.Name)
		files = append(files, manifest.IndexFile{Path: f.Name, SizeBytes: f.Size})
	}
	value, err := spec.Details()
	if err != nil {
		return nil, keys, err
	}
	bitmap, err := fragmentBitmap(frags)
	if err != nil {
		return nil, keys, err
	}
	version := int32(lanceVectorIndexVersion)
	created := uint64(time.Now().UnixMilli())
	return &manifest.IndexMetadata{
		UUID:           u[:],
		Fields:         []int32{field.ID},
		Name:           o.Name,
		DatasetVersion: d.manifest.Version,
		FragmentBitmap: bitmap,
		Details:        &manifest.IndexDetails{TypeURL: LanceVectorIndexTypeURL, Value: value},
		IndexVersion:   &version,
		CreatedAt:      &created,
		Files:          files,
	}, keys, nil
}

// lanceVectorIndexVersion is Lance's VECTOR_INDEX_VERSION, the index_version
// of the v3 vector indices it builds.
const lanceVectorIndexVersion = 1

// indicesDir is where index segments live, one directory per uuid.
const indicesDir = "_indices/"

// readVectors reads column from the fragments frags (in their scan order)
// and returns the finite, non-null vectors packed row-major with their row
// ids (stable row ids, or row addresses without them).
func (d *Dataset) readVectors(ctx context.Context, column string, dim int, frags []uint64,
	progress func(string, int, int)) ([]float32, []uint64, error) {
	var vecs []float32
	var ids []uint64
	err := d.scanVectors(ctx, column, frags, progress, func(total int) {
		vecs = make([]float32, 0, preallocRows(total, dim)*dim)
		ids = make([]uint64, 0, preallocRows(total, 1))
	}, func(col *array.FixedSizeList, rowIDs []uint64) error {
		vecs, ids = appendVectors(vecs, ids, col, rowIDs, dim)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return vecs, ids, nil
}

// scanVectors scans column of the fragments frags with the row ids and
// hands each batch to batch, after start is told the rows the manifest
// counts (the room to reserve; it may be damaged); progress, if set, is
// told of the rows read.
func (d *Dataset) scanVectors(ctx context.Context, column string, frags []uint64, progress func(string, int, int),
	start func(total int), batch func(col *array.FixedSizeList, rowIDs []uint64) error) error {
	view := d.withFragments(frags)
	total := 0
	for _, f := range view.manifest.Fragments {
		total += int(f.PhysicalRows)
	}
	s, err := view.Scan(&ScanOptions{Columns: []string{column}, WithRowID: true})
	if err != nil {
		return err
	}
	start(total)
	done := 0
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return err
		}
		col, ok := rec.Column(0).(*array.FixedSizeList)
		if !ok {
			return fmt.Errorf("dataset: column %q read as %s: %w", column, rec.Column(0).DataType(), lancer.ErrCorrupt)
		}
		if err := batch(col, rec.Column(1).(*array.Uint64).Values()); err != nil {
			return err
		}
		done += int(rec.NumRows())
		if progress != nil {
			progress("read", done, total)
		}
	}
	return nil
}

// appendVectors appends the finite, non-null vectors of col (and their ids)
// as float32.
func appendVectors(vecs []float32, ids []uint64, col *array.FixedSizeList, rowIDs []uint64, dim int) ([]float32, []uint64) {
	off := col.Offset()
	values := col.ListValues()
	var row []float32
	for i := 0; i < col.Len(); i++ {
		if col.IsNull(i) {
			continue
		}
		row = vectorAt(row[:0], values, (off+i)*dim, dim)
		if row == nil {
			continue
		}
		vecs = append(vecs, row...)
		ids = append(ids, rowIDs[i])
	}
	return vecs, ids
}

// preallocRows is how many rows of width values to allocate room for
// ahead of reading total rows: the row counts come from the manifest,
// which a damaged or hostile file can set to billions, so at most 16 Mi
// values are reserved and the slices grow with the rows actually read.
func preallocRows(total, width int) int {
	const maxValues = 1 << 24
	if width <= 0 || total <= 0 {
		return 0
	}
	return min(total, maxValues/width)
}

// spillVectors reads column from the fragments frags (in their scan
// order) as readVectors does, but writes the vectors to a temporary file
// instead of holding them, and returns it (a vector.RowSource; Close
// removes it) with their row ids. sq, if set, takes in every vector.
func (d *Dataset) spillVectors(ctx context.Context, column string, dim int, frags []uint64, dir string,
	progress func(string, int, int), sq *vecindex.SQRange) (_ *vectorSpill, _ []uint64, err error) {
	spill, err := newVectorSpill(dir, dim)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			spill.Close()
		}
	}()
	w := bufio.NewWriterSize(spill.f, 1<<20)
	var ids []uint64
	var rows []float32
	err = d.scanVectors(ctx, column, frags, progress, func(total int) {
		ids = make([]uint64, 0, preallocRows(total, 1))
	}, func(col *array.FixedSizeList, rowIDs []uint64) error {
		rows, ids = appendVectors(rows[:0], ids, col, rowIDs, dim)
		if sq != nil {
			for i := 0; i < len(rows); i += dim {
				sq.Add(rows[i : i+dim])
			}
		}
		if _, err := w.Write(arrow.Float32Traits.CastToBytes(rows)); err != nil {
			return fmt.Errorf("dataset: spill the vectors of %q: %w", column, err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if err := w.Flush(); err != nil {
		return nil, nil, fmt.Errorf("dataset: spill the vectors of %q: %w", column, err)
	}
	spill.n = len(ids)
	return spill, ids, nil
}

// vectorSpill is an index build's copy of a column's vectors, float32 in
// native byte order, in a temporary file: the build reads it in passes
// (vector.RowSource) instead of holding the column.
type vectorSpill struct {
	f      *os.File
	name   string // still to remove on Close; "" once unlinked
	dim, n int
}

func newVectorSpill(dir string, dim int) (*vectorSpill, error) {
	f, err := os.CreateTemp(dir, "lancer-index-*.f32")
	if err != nil {
		return nil, fmt.Errorf("dataset: a temporary file for the index build (SpillDir %q): %w", dir, err)
	}
	s := &vectorSpill{f: f, name: f.Name(), dim: dim}
	// Unlinked at once where the system allows it (the open file stays
	// readable), so that not even a crash leaves it behind.
	if os.Remove(s.name) == nil {
		s.name = ""
	}
	return s, nil
}

// Rows returns the number of vectors spilled.
func (s *vectorSpill) Rows() int { return s.n }

// ReadRows reads the vectors from row lo on into dst.
func (s *vectorSpill) ReadRows(ctx context.Context, lo int, dst []float32) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if lo < 0 || len(dst)%s.dim != 0 || lo+len(dst)/s.dim > s.n {
		return fmt.Errorf("dataset: spilled rows from %d (%d floats) of %d: %w", lo, len(dst), s.n, lancer.ErrInvalidArgument)
	}
	if _, err := s.f.ReadAt(arrow.Float32Traits.CastToBytes(dst), int64(lo)*int64(s.dim)*4); err != nil {
		return fmt.Errorf("dataset: read back the spilled vectors: %w", err)
	}
	return nil
}

// Close closes and removes the file.
func (s *vectorSpill) Close() error {
	err := s.f.Close()
	if s.name != "" {
		err = errors.Join(err, os.Remove(s.name))
	}
	return err
}

// vectorAt appends values[start:start+dim] to dst as float32; nil if a
// value is null, NaN or infinite.
func vectorAt(dst []float32, values arrow.Array, start, dim int) []float32 {
	if values.NullN() > 0 {
		for j := start; j < start+dim; j++ {
			if values.IsNull(j) {
				return nil
			}
		}
	}
	switch v := values.(type) {
	case *array.Float32:
		dst = append(dst, v.Float32Values()[start:start+dim]...)
	case *array.Float16:
		for _, h := range v.Values()[start : start+dim] {
			dst = append(dst, h.Float32())
		}
	case *array.Float64:
		for _, x := range v.Float64Values()[start : start+dim] {
			dst = append(dst, float32(x))
		}
	default:
		return nil
	}
	for _, x := range dst[len(dst)-dim:] {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil
		}
	}
	return dst
}

// withFragments returns a view of d holding only the fragments whose ids
// are in ids (in d's order), for reading a subset of the rows.
func (d *Dataset) withFragments(ids []uint64) *Dataset {
	keep := map[uint64]bool{}
	for _, id := range ids {
		keep[id] = true
	}
	m := *d.manifest
	m.Fragments = nil
	for _, f := range d.manifest.Fragments {
		if keep[f.ID] {
			m.Fragments = append(m.Fragments, f)
		}
	}
	return &Dataset{store: d.store, opts: d.opts, manifest: &m, manifestKey: d.manifestKey, partial: true, bases: d.bases}
}

// DropIndex removes every segment of the index named name in a new version
// (a CreateIndex transaction with removed segments, as Lance records it).
// The index files stay until Cleanup removes them with the versions that
// use them. Dropping a name no segment has fails with lancer.ErrNotFound.
// opts configure the commit (nil: the defaults).
func (d *Dataset) DropIndex(ctx context.Context, name string, opts *CommitOptions) (*Dataset, error) {
	d = d.using(opts)
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	var removed []*manifest.IndexMetadata
	for _, ix := range d.manifest.IndexSegments() {
		if ix.Name == name {
			removed = append(removed, ix)
		}
	}
	if len(removed) == 0 {
		return nil, fmt.Errorf("dataset: no index named %q: %w", name, lancer.ErrNotFound)
	}
	return d.commit(ctx, &operation{kind: opCreateIndex, removedIndices: removed}, opts)
}

// OptimizeIndexesOptions configures OptimizeIndexes. A nil
// *OptimizeIndexesOptions means all defaults: Lance's optimize_indices
// with its default OptimizeOptions, one new delta segment per vector
// index over the fragments it misses.
type OptimizeIndexesOptions struct {
	// NumIndicesToMerge is Lance's OptimizeOptions.num_indices_to_merge:
	// how many of a vector index's newest segments are merged, with the
	// rows of the fragments the index misses, into one new segment that
	// replaces them. 0 (Lance's default, None, which Lance's v3 indices
	// treat as 0 unless their optimize splits a partition, which lancer's
	// never does) writes a delta segment beside the old ones; more than
	// the index has merges them all. Merging lets Compact rewrite the
	// fragments the merged segments covered together: a compaction never
	// gathers fragments that different segments cover. Scalar and FTS
	// indices are always rebuilt into one segment (see OptimizeIndexes),
	// whatever this says. Negative is an error.
	NumIndicesToMerge int
	// MergeSizeRatio, when positive, merges more of each vector index's
	// newest segments than NumIndicesToMerge when they are small (a
	// lancer policy, not Lance's): starting from the rows the index
	// misses, the next older segment joins the merge while it covers no
	// more than MergeSizeRatio times the rows gathered so far (the newest
	// segment joins unconditionally when no rows are missing, and a
	// merge of a single segment with nothing new is skipped). Under a
	// stream of small appends the segments then grow like a binary
	// counter: their number stays logarithmic in the rows, and each row
	// is rewritten a logarithmic number of times. Default 0: off.
	MergeSizeRatio float64
	// CommitOptions configure the commit.
	CommitOptions
}

// OptimizeIndexes brings the vector indices up to date with the rows
// appended since they were built: for each index, one new segment (same
// name, type and parameters, a new uuid) over the fragments no segment
// covers, committed together as one version (a CreateIndex transaction),
// as Lance's optimize_indices with its default options adds delta
// segments. A Lance-format vector index (Lance-built or lancer-built:
// IVF_FLAT, IVF_PQ, IVF_SQ, IVF_HNSW_FLAT, IVF_HNSW_SQ, IVF_HNSW_PQ) gets
// a delta with the IVF model and quantizer of its first segment, each new
// row assigned to its nearest centroid and coded with the index's PQ
// codebook or SQ bounds, HNSW graphs built over the delta's rows, as Lance
// writes one; one of lancer's own indices gets a delta trained on the new
// rows. Indices that cover every fragment, and Lance indices of kinds
// lancer does not write (the legacy file, RQ; see
// OptimizableIndex), are left alone: their new rows stay searched
// exactly. With nothing to do it returns d.
//
// With opts.NumIndicesToMerge (or MergeSizeRatio) the new segment also
// takes the rows of the index's newest segments and replaces them, as
// Lance's optimize with num_indices_to_merge merges delta indices: one
// segment with the first segment's IVF model and quantizer (lancer's own
// indices: trained again) over the merged segments' fragments and the
// missing ones. Lance takes the merged rows from the old segments'
// storage; lancer reads them from the column again and codes them with
// the same model, which gives the same codes (and leaves out the rows
// deleted since, which Lance keeps in the index and filters at query
// time).
//
// A scalar index (BTREE, BITMAP, LABEL_LIST) or full-text index (FTS,
// Lance's INVERTED), whoever built it, that misses fragments is replaced,
// as Lance's optimize_indices updates one: a new segment over every
// fragment of the version, built from the column with the index's own
// parameters (an FTS index's analyzer), takes the place of its segments,
// in the same commit (see rebuildSegment). One whose column or analyzer
// lancer does not index is left alone.
func (d *Dataset) OptimizeIndexes(ctx context.Context, opts *OptimizeIndexesOptions) (*Dataset, error) {
	var o OptimizeIndexesOptions
	if opts != nil {
		o = *opts
	}
	if o.NumIndicesToMerge < 0 || math.IsNaN(o.MergeSizeRatio) || math.IsInf(o.MergeSizeRatio, 0) || o.MergeSizeRatio < 0 {
		return nil, fmt.Errorf("dataset: optimize indices: NumIndicesToMerge %d, MergeSizeRatio %v: want 0 or more, finite: %w",
			o.NumIndicesToMerge, o.MergeSizeRatio, lancer.ErrInvalidArgument)
	}
	copts := &o.CommitOptions
	orig := d
	d = d.using(copts)
	if err := d.checkWritable(); err != nil {
		return nil, err
	}
	groups := map[string][]*manifest.IndexMetadata{}
	var names []string
	for _, ix := range d.manifest.IndexSegments() {
		if ix.Details == nil {
			continue
		}
		if !rebuildableSegment(ix) && ix.Details.TypeURL != manifest.VectorIndexTypeURL && ix.Details.TypeURL != LanceVectorIndexTypeURL {
			continue
		}
		if len(ix.CoveringFields) > 0 {
			continue // a delta segment lancer builds would not carry the covered values
		}
		if _, ok := groups[ix.Name]; !ok {
			names = append(names, ix.Name)
		}
		groups[ix.Name] = append(groups[ix.Name], ix)
	}
	op := &operation{kind: opCreateIndex}
	defer func() {
		if op != nil {
			for _, key := range op.indexFiles {
				_ = d.store.Delete(context.WithoutCancel(ctx), key)
			}
		}
	}()
	for _, name := range names {
		segs := groups[name]
		missing := d.IndexMissingFragments(name)
		last := segs[len(segs)-1]
		// merge is how many of the newest segments the new one replaces
		// (vector indices; scalar and FTS ones are rebuilt whole).
		merge := 0
		if !rebuildableSegment(last) {
			merge = d.indicesToMerge(segs, missing, o.NumIndicesToMerge, o.MergeSizeRatio)
		}
		if len(missing) == 0 && merge < 2 {
			continue // up to date, and nothing to merge
		}
		if rebuildableSegment(last) {
			// As Lance updates a scalar or FTS index: one new segment
			// over the old ones' rows and the new fragments' replaces
			// them (see rebuildSegment).
			seg, files, why, err := d.rebuildSegment(ctx, last, d.fragmentIDs())
			op.indexFiles = append(op.indexFiles, files...)
			if err != nil {
				return nil, err
			}
			if why != "" {
				continue // a column or analyzer lancer does not index: see OptimizableIndex
			}
			op.newIndices = append(op.newIndices, seg)
			op.removedIndices = append(op.removedIndices, segs...)
			continue
		}
		if len(last.Fields) != 1 {
			return nil, fmt.Errorf("dataset: index %q has %d fields: %w", name, len(last.Fields), lancer.ErrCorrupt)
		}
		column, ok := manifest.FieldPaths(d.manifest.Schema)[last.Fields[0]]
		if !ok {
			continue // the column was dropped; retainIndices drops the index
		}
		field, dim, err := d.vectorColumn(column)
		if err != nil {
			return nil, err
		}
		merged := segs[len(segs)-merge:]
		frags := d.mergedFragments(merged, missing)
		if len(frags) == 0 {
			continue // the merged segments cover no live fragment: retainIndices drops them
		}
		if last.Details.TypeURL == LanceVectorIndexTypeURL {
			// Lance's format: a delta with the index's own IVF model and
			// quantizer, as Lance's optimize writes one.
			seg, files, err := d.lanceDeltaSegment(ctx, segs, column, dim, frags, nil)
			op.indexFiles = append(op.indexFiles, files...)
			if errors.Is(err, lancer.ErrUnsupported) {
				continue // a kind lancer does not write: see OptimizableIndex
			}
			if err != nil {
				return nil, err
			}
			op.newIndices = append(op.newIndices, seg)
			op.removedIndices = append(op.removedIndices, merged...)
			continue
		}
		det, metric, ok, err := segmentBuildParams(last)
		if err != nil {
			return nil, fmt.Errorf("dataset: index %q: details: %w", name, err)
		}
		if !ok {
			continue
		}
		co := &CreateIndexOptions{Name: name, Metric: metric, M: int(det.M), EfConstruction: int(det.EfConstruction), Seed: det.Seed, SubVectors: int(det.SubVectors)}
		if det.Type != IndexFlat && det.Type != IndexHNSW {
			// A delta gets partitions in proportion to its rows.
			co.Partitions = 0
		}
		seg, files, err := d.buildVectorSegment(ctx, column, field, dim, det.Type, co, frags)
		if err != nil {
			return nil, err
		}
		op.newIndices = append(op.newIndices, seg)
		op.removedIndices = append(op.removedIndices, merged...)
		op.indexFiles = append(op.indexFiles, files...)
	}
	if len(op.newIndices) == 0 {
		op = nil
		return orig, nil
	}
	out, err := d.commit(ctx, op, copts)
	op = nil // commit removes the files itself when it definitely failed
	return out, err
}

// OptimizableIndex reports whether OptimizeIndexes extends the index
// segment ix: one of lancer's own vector indices, a Lance-format one of a
// kind lancer writes (IVF_FLAT, IVF_PQ of 8- or 4-bit codes, IVF_HNSW_PQ,
// IVF_SQ, IVF_HNSW_SQ, IVF_HNSW_FLAT), or a BTREE, BITMAP, LABEL_LIST or
// FTS index of a top-level column, on a column still in the schema (a dropped one shows as
// "#<id>").
func OptimizableIndex(ix manifest.IndexInfo) bool {
	if len(ix.Fields) != 1 || strings.HasPrefix(ix.Fields[0], "#") {
		return false
	}
	if _, ok := scalarindex.KindOf(ix.TypeURL); ok || strings.HasSuffix(ix.TypeURL, "InvertedIndexDetails") {
		return len(ix.FieldIDs) == 1 && !strings.Contains(ix.Fields[0], ".")
	}
	if ix.TypeURL == manifest.VectorIndexTypeURL {
		return true
	}
	if ix.TypeURL != LanceVectorIndexTypeURL {
		return false
	}
	_, ok, err := LanceDetailsType(ix.DetailsValue())
	return err == nil && ok
}

// LanceDetailsType returns the lancer index type (IndexIVFFlat, ...) that
// builds segments like the one Lance's VectorIndexDetails b describe, with
// their metric and parameters; ok is false for kinds lancer does not
// write.
func LanceDetailsType(b []byte) (*manifest.VectorIndexDetails, bool, error) {
	spec, err := vecindex.ParseDetailsSpec(b)
	if err != nil || !spec.Writable {
		return nil, false, err
	}
	det := &manifest.VectorIndexDetails{Metric: spec.Metric.String(), SubVectors: uint32(spec.SubVectors), M: uint32(spec.M), EfConstruction: uint32(spec.EfConstruction)}
	switch {
	case spec.Sub == vecindex.SubHNSW && spec.Quant == vecindex.QuantSQ:
		det.Type = IndexIVFHNSWSQ
	case spec.Sub == vecindex.SubHNSW && spec.Quant == vecindex.QuantFlat:
		det.Type = IndexIVFHNSWFlat
	case spec.Sub == vecindex.SubHNSW && spec.Quant == vecindex.QuantPQ:
		det.Type = IndexIVFHNSWPQ
	case spec.Quant == vecindex.QuantPQ:
		det.Type = IndexIVFPQ
	case spec.Quant == vecindex.QuantSQ:
		det.Type = IndexIVFSQ
	case spec.Quant == vecindex.QuantFlat:
		det.Type = IndexIVFFlat
	default:
		return nil, false, nil
	}
	return det, true, nil
}

// segmentBuildParams returns the parameters to build another segment like
// seg: from lancer's details, or from Lance's VectorIndexDetails of the
// kinds lancer writes in Lance's format (ok false for the others).
func segmentBuildParams(seg *manifest.IndexMetadata) (*manifest.VectorIndexDetails, vector.Metric, bool, error) {
	if seg.Details.TypeURL == LanceVectorIndexTypeURL {
		det, ok, err := LanceDetailsType(seg.Details.Value)
		if err != nil || !ok {
			return nil, 0, false, err
		}
		metric, err := vector.ParseMetric(det.Metric)
		return det, metric, err == nil, err
	}
	det, err := manifest.DecodeVectorIndexDetails(seg.Details.Value)
	if err != nil {
		return nil, 0, false, err
	}
	metric, err := vector.ParseMetric(det.Metric)
	if err != nil {
		return nil, 0, false, errors.Join(err, lancer.ErrCorrupt)
	}
	return det, metric, true, nil
}

// applyCreateIndex returns indices without the segments op removes (by
// uuid) and with the ones it adds.
func applyCreateIndex(indices []*manifest.IndexMetadata, op *operation) []*manifest.IndexMetadata {
	gone := map[string]bool{}
	for _, ix := range op.removedIndices {
		gone[string(ix.UUID)] = true
	}
	out := slices.DeleteFunc(slices.Clone(indices), func(ix *manifest.IndexMetadata) bool {
		return gone[string(ix.UUID)]
	})
	for _, ix := range op.newIndices {
		out = append(out, ix.Clone())
	}
	return out
}
