package vector

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/lancerdb/lancer"
)

// SubIndex is how an IVF searches inside a partition.
type SubIndex uint8

const (
	// SubFlat scans a partition's rows exhaustively (Lance's IVF_FLAT,
	// IVF_SQ).
	SubFlat SubIndex = iota
	// SubHNSW keeps one HNSW graph per partition (Lance's IVF_HNSW_*).
	SubHNSW
)

// String returns "flat" or "hnsw".
func (s SubIndex) String() string {
	switch s {
	case SubFlat:
		return "flat"
	case SubHNSW:
		return "hnsw"
	}
	return fmt.Sprintf("subindex(%d)", uint8(s))
}

// Storage is how an IVF keeps its vectors.
type Storage uint8

const (
	// StoreFloat32 keeps the exact vectors: distances are exact.
	StoreFloat32 Storage = iota
	// StoreSQ8 keeps 8-bit scalar-quantized codes (one SQ8 trained over all
	// vectors), 4× smaller; distances are to the decoded vectors.
	StoreSQ8
	// StorePQ keeps product-quantized codes of each row's residual to its
	// partition centroid (Lance's IVF_PQ; see PQOptions): one byte per
	// sub-vector, 32× smaller than float32 with the default sub-vectors.
	// Distances are to the decoded vectors, computed with per-query
	// lookup tables (asymmetric distance), and are coarse: follow a search
	// with Rerank over a few times k candidates. With SubHNSW the graphs
	// are built and searched on the exact vectors, kept too, and the codes
	// are only for writing Lance's IVF_HNSW_PQ (no .lancer-ivf form).
	StorePQ
)

// String returns "float32", "sq8" or "pq".
func (s Storage) String() string {
	switch s {
	case StoreFloat32:
		return "float32"
	case StoreSQ8:
		return "sq8"
	case StorePQ:
		return "pq"
	}
	return fmt.Sprintf("storage(%d)", uint8(s))
}

const (
	defaultIVFEfConstruction = 100
	defaultIVFNProbes        = 20
	defaultIVFMinEf          = 40
	// ivfKMeansSamplePerPartition is BuildIVF's default k-means sample,
	// rows per partition: a quarter of Lance's 256 keeps training (its
	// k-means++ costs sample×partitions distances) below the assignment of
	// all rows in time.
	ivfKMeansSamplePerPartition = 64
	// ivfKMeansIters is BuildIVF's default MaxIters.
	ivfKMeansIters = 15
)

// IVFOptions configures BuildIVF. The zero value (or a nil pointer) gives
// the defaults.
type IVFOptions struct {
	// Partitions is the number of k-means partitions. Default round(sqrt(n));
	// it is clamped to [1, n]. 1 means no partitioning: a single flat list
	// or HNSW graph.
	Partitions int
	// Metric is the distance. Default L2.
	Metric Metric
	// Sub is the per-partition search structure. Default SubFlat.
	Sub SubIndex
	// Storage is how vectors are kept. Default StoreFloat32.
	Storage Storage
	// PQ configures the product quantizer of StorePQ (ignored otherwise).
	PQ PQOptions
	// HNSW configures the per-partition graphs of SubHNSW: M (default 16)
	// and EfConstruction (default 100 here: partitions are small). Its
	// Metric, Seed and Workers are ignored: graphs use Metric, a seed
	// derived from Seed and the partition number, and one worker each.
	HNSW HNSWOptions
	// KMeans configures partition training: MaxIters (default 15) and
	// SampleSize (default min(n, 64*Partitions)). Its Metric, Seed and
	// Workers are ignored in favour of the fields here.
	KMeans KMeansOptions
	// Workers is the number of goroutines of the build. Default
	// runtime.GOMAXPROCS(0). Partitions are built concurrently, each graph
	// by one goroutine, so the index is a pure function of the vectors, the
	// ids and the options other than Workers and Progress.
	Workers int
	// Seed seeds k-means and the graphs. Zero is a valid seed.
	Seed uint64
	// BufferBytes bounds the rows TrainIVF's partitions hold at once: its
	// IVFBuild loads consecutive partitions of up to this many bytes of
	// float32 rows (a larger partition alone) per pass over the source.
	// Default DefaultIVFBufferBytes. BuildIVF, which has every row in
	// memory, ignores it.
	BufferBytes int
	// Progress, if not nil, is told about the build's stages: "kmeans"
	// (iterations), "assign" (rows) and "partitions" (partitions built),
	// each as done out of total. It is called from any goroutine,
	// concurrently, and must be cheap.
	Progress func(stage string, done, total int)
}

// IVFSearchOptions tunes one IVF search. A nil pointer gives the defaults.
type IVFSearchOptions struct {
	// NProbes is how many partitions, nearest centroid first, are
	// searched. Default 20 (LanceDB's default), clamped to Partitions.
	NProbes int
	// Ef is the HNSW beam width in each partition (SubHNSW only); it is
	// raised to k when smaller. Default max(2k, 40): on the clustered
	// 200k×128 benchmark with 447 partitions and the default NProbes it
	// gives recall@10 0.96 with StoreSQ8 (quantization's ceiling) and 0.99
	// with StoreFloat32.
	Ef int
}

// IVF is an inverted-file index: k-means centroids split the vectors into
// partitions, and a search visits the partitions of the centroids nearest
// the query, scanning each (SubFlat) or walking its HNSW graph (SubHNSW).
//
// Rows are numbered contiguously by partition: partition p holds positions
// [offsets[p], offsets[p+1]) of ids, and its vectors, codes and graph in
// an ivfPart. An index built or decoded whole has every partition in
// memory; one opened with OpenIVF loads them on first use. An IVF is
// immutable (apart from that cache) and safe for concurrent use.
type IVF struct {
	dim     int
	metric  Metric
	sub     SubIndex
	storage Storage
	m, efc  int // HNSW parameters; 0 for SubFlat

	centroids []float32   // P*dim; unit length for Cosine
	offsets   []uint32    // P+1
	ids       []uint64    // n caller ids, partition order
	sq        *SQ8        // StoreSQ8
	pq        *pqCodebook // StorePQ
	pqRaw     bool        // StorePQ of the vectors, not residuals (PQOptions.Raw)

	// radius[p] is the largest L2 distance (not squared) from centroid p to
	// a row of p as searched (decoded for SQ8 and PQ): for L2, no row of p
	// is nearer to q than dist(q, centroid) - radius, which lets a search
	// skip partitions that cannot improve its result. Nil for other
	// metrics.
	radius []float32
	// byID is ids sorted with each id's position: the exact search of a
	// selective filter walks the filter's ids and looks them up here.
	byID []idPos

	parts []*ivfPart // every partition; nil for a lazily opened index
	lazy  *ivfLazy   // OpenIVF's partition loader; nil otherwise
}

// ivfPart is the searchable data of one partition of c rows.
type ivfPart struct {
	vecs  []float32 // c*dim: exact (StoreFloat32) or decoded codes (StoreSQ8 with SubHNSW); else nil
	codes []uint8   // StoreSQ8: c*dim; StorePQ: c*sub-vectors
	graph *HNSW     // SubHNSW, nil for an empty partition
}

// memBytes estimates the memory pt holds.
func (pt *ivfPart) memBytes() int64 {
	b := int64(64 + 4*len(pt.vecs) + len(pt.codes))
	if pt.graph != nil {
		b += int64(pt.graph.encodedSize())
	}
	return b
}

type idPos struct {
	id  uint64
	pos uint32
}

// Len returns the number of indexed vectors.
func (x *IVF) Len() int { return len(x.ids) }

// Dim returns the vector dimension.
func (x *IVF) Dim() int { return x.dim }

// Metric returns the index's distance metric.
func (x *IVF) Metric() Metric { return x.metric }

// Partitions returns the number of partitions.
func (x *IVF) Partitions() int { return len(x.offsets) - 1 }

// Sub returns the per-partition search structure.
func (x *IVF) Sub() SubIndex { return x.sub }

// Storage returns how the vectors are kept.
func (x *IVF) Storage() Storage { return x.storage }

// PQSubVectors returns the number of PQ sub-vectors (bytes per row) of a
// StorePQ index, 0 for other storages.
func (x *IVF) PQSubVectors() int {
	if x.pq == nil {
		return 0
	}
	return x.pq.m
}

// IDs returns a copy of the ids of all indexed vectors, in partition order.
// A lazily opened index holds them all from the start.
func (x *IVF) IDs() []uint64 { return slices.Clone(x.ids) }

// Centroids returns the partition centroids, Partitions()*Dim() floats (unit
// length for Cosine). Do not modify.
func (x *IVF) Centroids() []float32 { return x.centroids }

// PartitionSizes returns the number of rows of each partition.
func (x *IVF) PartitionSizes() []int {
	out := make([]int, x.Partitions())
	for p := range out {
		out[p] = int(x.offsets[p+1] - x.offsets[p])
	}
	return out
}

// part returns partition p's data, loading it with ctx for a lazily
// opened index.
func (x *IVF) part(ctx context.Context, p int) (*ivfPart, error) {
	if x.lazy == nil {
		return x.parts[p], nil
	}
	return x.lazy.get(ctx, x, p)
}

// ivfPrep is what BuildIVF and TrainIVF settle before reading a row: the
// options with their defaults, the IVF's fields, and the partitions.
type ivfPrep struct {
	x     *IVF
	o     IVFOptions
	hopts HNSWOptions
	pqo   PQOptions
	parts int
	km    KMeansOptions
}

// progress returns the reporter of one stage, nil without Progress.
func (pb *ivfPrep) progress(stage string) func(done, total int) {
	if pb.o.Progress == nil {
		return nil
	}
	return func(done, total int) { pb.o.Progress(stage, done, total) }
}

// prepareIVF checks the options of an IVF over n rows of dim and fills
// their defaults.
func prepareIVF(n, dim int, opts *IVFOptions) (*ivfPrep, error) {
	var o IVFOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case dim < 1:
		return nil, fmt.Errorf("vector: IVF of dimension %d: %w", dim, lancer.ErrInvalidArgument)
	case n == 0:
		return nil, fmt.Errorf("vector: IVF over no vectors: %w", lancer.ErrInvalidArgument)
	case uint64(n) >= math.MaxUint32:
		return nil, fmt.Errorf("vector: IVF of %d vectors, at most %d: %w", n, uint32(math.MaxUint32-1), lancer.ErrInvalidArgument)
	case o.Metric > Dot:
		return nil, fmt.Errorf("vector: IVF metric %v: %w", o.Metric, lancer.ErrInvalidArgument)
	case o.Sub > SubHNSW:
		return nil, fmt.Errorf("vector: IVF sub-index %v: %w", o.Sub, lancer.ErrInvalidArgument)
	case o.Storage > StorePQ:
		return nil, fmt.Errorf("vector: IVF storage %v: %w", o.Storage, lancer.ErrInvalidArgument)
	case o.Storage == StorePQ && o.PQ.Raw && o.Metric != Dot:
		return nil, fmt.Errorf("vector: IVF of raw PQ codes for %v (only dot): %w", o.Metric, lancer.ErrInvalidArgument)
	case o.Partitions < 0 || o.Workers < 0 || o.BufferBytes < 0:
		return nil, fmt.Errorf("vector: IVF Partitions %d, Workers %d, BufferBytes %d must not be negative: %w", o.Partitions, o.Workers, o.BufferBytes, lancer.ErrInvalidArgument)
	}
	pb := &ivfPrep{}
	if o.Storage == StorePQ {
		var err error
		if pb.pqo, err = o.PQ.resolve(dim); err != nil {
			return nil, err
		}
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	x := &IVF{dim: dim, metric: o.Metric, sub: o.Sub, storage: o.Storage, pqRaw: o.Storage == StorePQ && o.PQ.Raw}
	if o.Sub == SubHNSW {
		pb.hopts = HNSWOptions{M: o.HNSW.M, EfConstruction: o.HNSW.EfConstruction, Metric: o.Metric, Workers: 1}
		if pb.hopts.M == 0 {
			pb.hopts.M = defaultHNSWM
		}
		if pb.hopts.EfConstruction == 0 {
			pb.hopts.EfConstruction = defaultIVFEfConstruction
		}
		if err := pb.hopts.Validate(); err != nil {
			return nil, err
		}
		x.m, x.efc = pb.hopts.M, pb.hopts.EfConstruction
	}
	parts := o.Partitions
	if parts == 0 {
		parts = int(math.Round(math.Sqrt(float64(n))))
	}
	parts = min(max(parts, 1), n)
	km := o.KMeans
	km.Metric, km.Seed, km.Workers = o.Metric, o.Seed, o.Workers
	if km.SampleSize == 0 {
		km.SampleSize = min(n, ivfKMeansSamplePerPartition*parts)
	}
	if km.MaxIters == 0 {
		km.MaxIters = ivfKMeansIters
	}
	pb.x, pb.o, pb.parts, pb.km = x, o, parts, km
	return pb, nil
}

// BuildIVF builds an index over n = len(ids) vectors: vectors holds n rows
// of dim float32s, and ids[i] is the caller's id of row i (a Lance row id),
// which results report and filters are asked about. Ids must be distinct.
// The index copies what it keeps (only the codes for StoreSQ8 and StorePQ
// with SubFlat); opts may be nil for the defaults.
//
// The build trains k-means on a sample (KMeans), assigns every row to its
// nearest centroid (in parallel), trains one SQ8 over all rows for
// StoreSQ8 or the PQ codebooks on a sample of residuals for StorePQ, and
// builds the partitions concurrently on Workers goroutines. Graphs are
// built on the exact vectors, also for StoreSQ8 (a better graph), then
// searched over the decoded codes; a partition of up to 2048 rows gets a
// one-layer graph from exact neighbour lists (see buildPartitionGraph), a
// larger one an incremental BuildHNSW graph.
//
// Bad arguments (no rows, a non-finite value, duplicate ids, bad options)
// are errors wrapping lancer.ErrInvalidArgument.
func BuildIVF(vectors []float32, dim int, ids []uint64, opts *IVFOptions) (*IVF, error) {
	n := len(ids)
	if dim < 1 || len(vectors) != n*dim {
		return nil, fmt.Errorf("vector: IVF of %d floats, %d ids and dimension %d: %w", len(vectors), n, dim, lancer.ErrInvalidArgument)
	}
	pb, err := prepareIVF(n, dim, opts)
	if err != nil {
		return nil, err
	}
	x, o, hopts, pqo, parts, km := pb.x, pb.o, pb.hopts, pb.pqo, pb.parts, pb.km
	if err := checkFinite(vectors, dim, o.Workers); err != nil {
		return nil, err
	}
	progress := pb.progress
	cent, err := trainKMeans(vectors, dim, parts, km, progress("kmeans"))
	if err != nil {
		return nil, err
	}
	if o.Metric == Cosine {
		for c := 0; c < parts; c++ {
			normalize(cent[c*dim : (c+1)*dim])
		}
	}
	x.centroids = cent
	assign := assignPartitions(vectors, dim, cent, o.Metric, o.Workers, progress("assign"))

	// Counting sort: rows in partition order, by input order within one.
	x.offsets = make([]uint32, parts+1)
	for _, p := range assign {
		x.offsets[p+1]++
	}
	for p := 1; p <= parts; p++ {
		x.offsets[p] += x.offsets[p-1]
	}
	perm := make([]uint32, n)
	fill := slices.Clone(x.offsets[:parts])
	for i, p := range assign {
		perm[fill[p]] = uint32(i)
		fill[p]++
	}
	x.ids = make([]uint64, n)
	for pos, i := range perm {
		x.ids[pos] = ids[i]
	}
	if err := x.buildByID(); err != nil {
		return nil, fmt.Errorf("vector: IVF ids: %w: %w", err, lancer.ErrInvalidArgument)
	}

	switch o.Storage {
	case StoreSQ8:
		if x.sq, err = TrainSQ8(vectors, dim); err != nil {
			return nil, err
		}
	case StorePQ:
		pqCent := cent
		if x.pqRaw {
			pqCent = make([]float32, len(cent)) // residuals to zero: the vectors
		}
		if x.pq, err = trainPQ(vectors, dim, pqCent, assign, o.Metric, pqo, o.Seed, o.Workers); err != nil {
			return nil, err
		}
	}
	assign = nil
	x.parts = make([]*ivfPart, parts)

	// Build the partitions, largest first for load balance.
	order := make([]int, parts)
	for p := range order {
		order[p] = p
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(x.offsets[b+1]-x.offsets[b], x.offsets[a+1]-x.offsets[a])
	})
	prog := progress("partitions")
	var next, done atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range min(o.Workers, parts) {
		wg.Go(func() {
			var scratch graphScratch
			for {
				j := int(next.Add(1) - 1)
				if j >= parts {
					return
				}
				p := order[j]
				row := func(pos int) []float32 {
					i := int(perm[pos])
					return vectors[i*dim : (i+1)*dim]
				}
				pt, err := x.buildPartition(p, row, nil, hopts, o.Seed, &scratch)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
				}
				x.parts[p] = pt
				if prog != nil {
					prog(int(done.Add(1)), parts)
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	x.computeRadii()
	return x, nil
}

// buildPartition returns partition p: its rows (row(pos) is the row at
// position pos, offsets[p] ≤ pos < offsets[p+1]) copied, encoded, and its
// graph built. rows, if not nil, holds those rows packed in order, and the
// partition keeps it instead of a copy (a streaming build's buffer).
//
// scratch is the calling worker's (see buildPartitionGraph), or nil.
func (x *IVF) buildPartition(p int, row func(pos int) []float32, rows []float32, hopts HNSWOptions, seed uint64, scratch *graphScratch) (*ivfPart, error) {
	dim := x.dim
	lo, hi := int(x.offsets[p]), int(x.offsets[p+1])
	c := hi - lo
	pt := &ivfPart{}
	if rows != nil && x.storage != StoreSQ8 && (x.storage == StoreFloat32 || x.sub == SubHNSW) {
		pt.vecs = rows[: c*dim : c*dim]
	} else if x.storage == StoreFloat32 || x.sub == SubHNSW {
		pt.vecs = make([]float32, c*dim)
		for pos := lo; pos < hi; pos++ {
			copy(pt.vecs[(pos-lo)*dim:(pos-lo+1)*dim], row(pos))
		}
	}
	switch x.storage {
	case StoreSQ8:
		pt.codes = make([]uint8, 0, c*dim)
		for pos := lo; pos < hi; pos++ {
			pt.codes = x.sq.Encode(pt.codes, row(pos))
		}
	case StorePQ:
		pt.codes = make([]uint8, 0, c*x.pq.m)
		r := make([]float32, dim)
		var acc [pqCodebookSize]float32
		cent := x.centroids[p*dim : (p+1)*dim]
		if x.pqRaw {
			cent = make([]float32, dim)
		}
		for pos := lo; pos < hi; pos++ {
			residual(r, row(pos), cent, x.metric)
			pt.codes = x.pq.encode(pt.codes, r, &acc)
		}
	}
	if x.sub == SubHNSW && c > 0 {
		hopts.Seed = seed ^ (uint64(p)+1)*0x9e3779b97f4a7c15
		g, err := buildPartitionGraph(pt.vecs[:c*dim:c*dim], dim, hopts, scratch)
		if err != nil {
			return nil, fmt.Errorf("vector: IVF partition %d: %w", p, err)
		}
		pt.graph = g
		if x.sq != nil {
			// The graph was built on the exact vectors; search the decoded
			// ones (the graph keeps this very slice).
			seg := pt.vecs[:0]
			for i := 0; i < c; i++ {
				seg = x.sq.Decode(seg, pt.codes[i*dim:(i+1)*dim])
			}
		}
	}
	return pt, nil
}

// checkFinite reports the first row of vectors with a NaN or infinite value.
func checkFinite(vectors []float32, dim, workers int) error {
	n := len(vectors) / dim
	var bad atomic.Int64
	bad.Store(math.MaxInt64)
	runChunks(n, 4096, workers, func() func(lo, hi int) {
		return func(lo, hi int) {
			for i, v := range vectors[lo*dim : hi*dim] {
				if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
					r := int64(lo + i/dim)
					for {
						cur := bad.Load()
						if r >= cur || bad.CompareAndSwap(cur, r) {
							break
						}
					}
					return
				}
			}
		}
	})
	if r := bad.Load(); r != math.MaxInt64 {
		return fmt.Errorf("vector: IVF: vector %d has a NaN or infinite value: %w", r, lancer.ErrInvalidArgument)
	}
	return nil
}

// buildByID sorts the ids with their positions and reports a duplicate.
func (x *IVF) buildByID() error {
	x.byID = make([]idPos, len(x.ids))
	for pos, id := range x.ids {
		x.byID[pos] = idPos{id, uint32(pos)}
	}
	slices.SortFunc(x.byID, func(a, b idPos) int { return cmp.Compare(a.id, b.id) })
	for i := 1; i < len(x.byID); i++ {
		if x.byID[i].id == x.byID[i-1].id {
			return fmt.Errorf("id %d appears twice", x.byID[i].id)
		}
	}
	return nil
}

// computeRadii sets radius for L2 indexes whose partitions are in memory.
func (x *IVF) computeRadii() {
	if x.metric != L2 {
		return
	}
	dim := x.dim
	x.radius = make([]float32, x.Partitions())
	var norms []float32
	if x.pq != nil {
		// Squared codeword norms: ‖x̂ − c‖² is the sum over sub-spaces.
		norms = make([]float32, x.pq.m*pqCodebookSize)
		x.pq.l2Table(norms, make([]float32, dim))
	}
	for p := range x.radius {
		c := x.centroids[p*dim : (p+1)*dim]
		pt := x.parts[p]
		var sq *SQ8Query
		if pt.vecs == nil && x.sq != nil {
			sq = x.sq.Query(L2, c)
		}
		r := float32(0)
		for i := 0; i < int(x.offsets[p+1]-x.offsets[p]); i++ {
			var d float32
			switch {
			case norms != nil:
				d = pqSum(norms, pt.codes[i*x.pq.m:(i+1)*x.pq.m])
			case sq != nil:
				d = sq.Distance(pt.codes[i*dim : (i+1)*dim])
			default:
				d = l2(c, pt.vecs[i*dim:(i+1)*dim])
			}
			r = max(r, d)
		}
		x.radius[p] = float32(math.Sqrt(float64(r)))
	}
}

// probeMetric is the distance by which partitions are ranked for a query:
// the index metric (for Cosine the centroids are unit vectors).
func (x *IVF) probeMetric() Metric { return x.metric }

// Search returns the k vectors nearest to query, nearest first with ties
// broken by smaller id, among those whose ids allow contains (nil allows
// all). Neighbor.ID is the caller's id.
//
// It ranks the centroids by their distance to the query and searches the
// NProbes nearest partitions, each with its HNSW graph (beam Ef) or by a
// scan; for L2 it skips a partition whose rows are all provably farther
// than the k-th result so far (its centroid distance minus its radius), so
// raising NProbes costs little on clustered data. Results are approximate
// and deterministic.
//
// A selective filter is answered exactly, by scoring the allowed rows (an
// AllowList is walked, other filters are asked about every row): when the
// estimated number of allowed rows A is below 32*Ef, or the probed
// partitions are expected to hold fewer than 2k of them, or the search found
// fewer than k. So a filter keeping 0.1% of rows returns exactly the nearest
// allowed rows.
//
// An index opened with OpenIVF loads the partitions a search needs, with
// ctx. Search fails when a partition it needs cannot be loaded: ctx's
// error, the read error, or for damaged bytes an error wrapping
// lancer.ErrCorrupt that names the partition. For an index built by
// BuildIVF or decoded by UnmarshalIVF it never fails (and ignores ctx).
//
// It returns nil when k <= 0 and panics if len(query) != Dim().
func (x *IVF) Search(ctx context.Context, query []float32, k int, o *IVFSearchOptions, allow Filter) ([]Neighbor, error) {
	if len(query) != x.dim {
		panic(fmt.Sprintf("vector: IVF.Search with a %d-dim query on a %d-dim index", len(query), x.dim))
	}
	if k <= 0 || len(x.ids) == 0 {
		return nil, nil
	}
	var so IVFSearchOptions
	if o != nil {
		so = *o
	}
	nprobes := so.NProbes
	if nprobes <= 0 {
		nprobes = defaultIVFNProbes
	}
	nprobes = min(nprobes, x.Partitions())
	ef := so.Ef
	if ef <= 0 {
		ef = max(2*k, defaultIVFMinEf)
	}
	ef = max(ef, k)

	dim := x.dim
	cd := Distances(x.probeMetric(), query, x.centroids, dim, nil)
	pt := NewTopK(nprobes)
	for p, d := range cd {
		pt.Push(uint64(p), d)
	}
	probes := pt.Sorted()

	s := x.newScorer(query)
	if allow != nil {
		est := x.estimate(allow)
		probed := 0
		for _, p := range probes {
			probed += int(x.offsets[p.ID+1] - x.offsets[p.ID])
		}
		n := len(x.ids)
		// In floats: k and ef are the caller's and may be near MaxInt.
		if est < k || float64(est) <= 32*float64(ef) || float64(est)*float64(probed) < 2*float64(k)*float64(n) {
			return x.exact(ctx, s, k, allow)
		}
	}
	t := NewTopK(k)
	var buf [flatBlock]float32
	for _, pr := range probes {
		p := int(pr.ID)
		if x.radius != nil && t.Full() {
			// Skip when sqrt(dc) - r > sqrt(worst), with slack for rounding.
			dc := math.Sqrt(float64(pr.Distance))
			r := float64(x.radius[p])
			w := math.Sqrt(float64(t.Worst()))
			if dc-r-w > 1e-5*(dc+r+w) {
				continue
			}
		}
		if x.offsets[p] == x.offsets[p+1] {
			continue
		}
		part, err := x.part(ctx, p)
		if err != nil {
			return nil, err
		}
		x.searchPartition(t, p, part, s, k, ef, allow, buf[:])
	}
	if allow != nil && t.Len() < k {
		return x.exact(ctx, s, k, allow)
	}
	return t.Sorted(), nil
}

// ivfScorer scores the rows of partitions against one query.
type ivfScorer struct {
	x     *IVF
	query []float32
	fn    func(a, b []float32) float32
	sq    *SQ8Query // StoreSQ8 with SubFlat: scores codes
	pq    *pqQuery  // StorePQ
}

func (x *IVF) newScorer(query []float32) *ivfScorer {
	s := &ivfScorer{x: x, query: query, fn: x.metric.Func()}
	switch {
	case x.pq != nil:
		s.pq = newPQQuery(x, query)
	case x.sq != nil && x.sub == SubFlat:
		s.sq = x.sq.Query(x.metric, query)
	}
	return s
}

// dist returns the distance of row i of partition p (data pt).
func (s *ivfScorer) dist(p int, pt *ivfPart, i int) float32 {
	dim := s.x.dim
	switch {
	case s.pq != nil:
		s.pq.setPartition(p)
		m := s.x.pq.m
		return s.pq.distance(pt.codes[i*m : (i+1)*m])
	case s.sq != nil:
		return s.sq.Distance(pt.codes[i*dim : (i+1)*dim])
	}
	return s.fn(s.query, pt.vecs[i*dim:(i+1)*dim])
}

// searchPartition pushes partition p's (data pt) nearest allowed rows
// into t.
func (x *IVF) searchPartition(t *TopK, p int, pt *ivfPart, s *ivfScorer, k, ef int, allow Filter, buf []float32) {
	dim := x.dim
	lo, hi := int(x.offsets[p]), int(x.offsets[p+1])
	if hi == lo {
		return
	}
	ids := x.ids[lo:hi]
	if pt.graph != nil {
		var f Filter
		if allow != nil {
			f = FilterFunc(func(local uint64) bool { return allow.Contains(ids[local]) })
		}
		for _, nb := range pt.graph.Search(s.query, k, ef, f) {
			t.Push(ids[nb.ID], nb.Distance)
		}
		return
	}
	if s.pq != nil {
		s.pq.setPartition(p)
		m := x.pq.m
		worst := t.Worst()
		for i, id := range ids {
			if allow != nil && !allow.Contains(id) {
				continue
			}
			if d := s.pq.distance(pt.codes[i*m : (i+1)*m]); d <= worst && t.Push(id, d) {
				worst = t.Worst()
			}
		}
		return
	}
	if s.sq != nil {
		worst := t.Worst()
		for i, id := range ids {
			if allow != nil && !allow.Contains(id) {
				continue
			}
			if d := s.sq.Distance(pt.codes[i*dim : (i+1)*dim]); d <= worst && t.Push(id, d) {
				worst = t.Worst()
			}
		}
		return
	}
	for b := 0; b < hi-lo; b += flatBlock {
		e := min(b+flatBlock, hi-lo)
		d := Distances(x.metric, s.query, pt.vecs[b*dim:e*dim], dim, buf)
		worst := t.Worst()
		for i, v := range d {
			id := ids[b+i]
			if v > worst || (allow != nil && !allow.Contains(id)) {
				continue
			}
			if t.Push(id, v) {
				worst = t.Worst()
			}
		}
	}
}

// estimate returns how many indexed rows allow admits: at most its size
// for an AllowList, otherwise extrapolated from 256 evenly spaced rows.
func (x *IVF) estimate(allow Filter) int {
	n := len(x.ids)
	if al, ok := allow.(*AllowList); ok {
		return int(min(al.Len(), uint64(n)))
	}
	samples := min(n, 256)
	hits := 0
	for i := 0; i < samples; i++ {
		if allow.Contains(x.ids[i*n/samples]) {
			hits++
		}
	}
	return int(math.Round(float64(hits) * float64(n) / float64(samples)))
}

// partitionOf returns the partition holding position pos.
func (x *IVF) partitionOf(pos int) int {
	return sort.Search(x.Partitions(), func(p int) bool { return int(x.offsets[p+1]) > pos })
}

// exact scores every allowed row: it walks an AllowList no longer than the
// index and asks any other filter about every row. It loads only the
// partitions holding allowed rows.
func (x *IVF) exact(ctx context.Context, s *ivfScorer, k int, allow Filter) ([]Neighbor, error) {
	t := NewTopK(k)
	if al, ok := allow.(*AllowList); ok && al.Len() <= uint64(len(x.ids)) {
		// Walk the list (usually the shorter), looking each id up.
		lastP := -1
		var pt *ivfPart
		for it := al.Bitmap().Iterator(); it.HasNext(); {
			id := it.Next()
			j := sort.Search(len(x.byID), func(j int) bool { return x.byID[j].id >= id })
			if j >= len(x.byID) || x.byID[j].id != id {
				continue
			}
			pos := int(x.byID[j].pos)
			p := x.partitionOf(pos)
			if p != lastP {
				var err error
				if pt, err = x.part(ctx, p); err != nil {
					return nil, err
				}
				lastP = p
			}
			t.Push(id, s.dist(p, pt, pos-int(x.offsets[p])))
		}
		return t.Sorted(), nil
	}
	for p := 0; p < x.Partitions(); p++ {
		lo, hi := int(x.offsets[p]), int(x.offsets[p+1])
		var pt *ivfPart
		for pos := lo; pos < hi; pos++ {
			id := x.ids[pos]
			if !allow.Contains(id) {
				continue
			}
			if pt == nil {
				var err error
				if pt, err = x.part(ctx, p); err != nil {
					return nil, err
				}
			}
			t.Push(id, s.dist(p, pt, pos-lo))
		}
	}
	return t.Sorted(), nil
}

// exactGraphMax is the largest partition whose graph buildPartitionGraph
// builds from exact neighbour lists (its n×n distance matrix is 16 MiB);
// larger partitions are built by BuildHNSW's incremental insertion.
const exactGraphMax = 2048

// buildPartitionGraph returns the search graph of one partition (rows
// packed in vecs). For up to exactGraphMax rows it builds it from exact
// candidate lists instead of inserting nodes one by one. Nodes get HNSW
// levels as in BuildHNSW; then, with the full distance matrix at hand, on
// every layer each node considers its EfConstruction nearest nodes of
// that layer (what an HNSW insert's beam search returns at best) and the
// nodes that have it among their nearest (the reverse links), and keeps M
// of them (2M on layer 0) with HNSW's neighbour-selection heuristic,
// pruned connections kept. The sparse upper layers hold the long links
// that lead a search to the right region. The entry point is the top-level
// node nearest the partition's mean, and a node unreachable on layer 0
// from it gets a link from its nearest reachable node. The result is an
// ordinary HNSW (Search, MarshalBinary), built with about n²/2 distances:
// on partitions of a few hundred rows, a fifth of the time of incremental
// insertion for the same recall.
//
// scratch, if not nil, lends the distance matrix: a worker building
// partition after partition reuses one instead of allocating up to 16 MiB
// for each (those matrices were most of an IVF_HNSW build's allocations,
// and the garbage between collections most of its peak heap, issue #17).
func buildPartitionGraph(vecs []float32, dim int, o HNSWOptions, scratch *graphScratch) (*HNSW, error) {
	n := len(vecs) / dim
	if n > exactGraphMax {
		return BuildHNSW(vecs, dim, &o)
	}
	h := &HNSW{dim: dim, n: n, metric: o.Metric, dist: o.Metric.Func(), m: o.M, m0: 2 * o.M, efc: o.EfConstruction, vectors: vecs}
	rng := rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15))
	mL := 1 / math.Log(float64(o.M))
	levels := make([]uint8, n)
	top := 0
	for i := range levels {
		l := min(int(-math.Log(1-rng.Float64())*mL), maxHNSWLevel)
		levels[i] = uint8(l)
		top = max(top, l)
	}
	h.alloc(levels)
	if n == 0 {
		return h, nil
	}
	// D is symmetric: the kernels give d(a, b) == d(b, a) bit for bit.
	D := scratch.matrix(n)
	buf := make([]float32, n)
	for i := 0; i < n; i++ {
		D[i*n+i] = 0 // a reused matrix holds the last partition's values
		d := Distances(o.Metric, vecs[i*dim:(i+1)*dim], vecs[(i+1)*dim:], dim, buf)
		for j, v := range d {
			D[i*n+i+1+j] = v
			D[(i+1+j)*n+i] = v
		}
	}
	lb := &layerBuilder{h: h, D: D, n: n, mark: make([]int32, n)}
	var nodes []uint32
	for l := top; l >= 0; l-- {
		nodes = nodes[:0]
		for i, lv := range levels {
			if int(lv) >= l {
				nodes = append(nodes, uint32(i))
			}
		}
		lb.link(nodes, l)
	}
	// Entry: the top-level node nearest the mean.
	mean := make([]float64, dim)
	for i := 0; i < n; i++ {
		for j, v := range vecs[i*dim : (i+1)*dim] {
			mean[j] += float64(v)
		}
	}
	mf := make([]float32, dim)
	for j := range mf {
		mf[j] = float32(mean[j] / float64(n))
	}
	h.entry, h.maxLevel = noUpper, top
	best := float32(0)
	for i, lv := range levels {
		if int(lv) == top {
			if d := l2(mf, vecs[i*dim:(i+1)*dim]); h.entry == noUpper || d < best {
				h.entry, best = uint32(i), d
			}
		}
	}
	linkUnreachable(h, D)
	return h, nil
}

// graphScratch is what a worker building partition graphs one after
// another reuses: the n×n distance matrix of the largest partition so far
// (at most exactGraphMax² floats).
type graphScratch struct {
	d []float32
}

// matrix returns an n×n matrix whose values are left over from earlier
// use: the caller writes every cell it reads.
func (s *graphScratch) matrix(n int) []float32 {
	if s == nil {
		return make([]float32, n*n)
	}
	if cap(s.d) < n*n {
		s.d = nil // before the new one, so both are never held
		s.d = make([]float32, n*n)
	}
	return s.d[:n*n]
}

// layerBuilder links the layers of buildPartitionGraph.
type layerBuilder struct {
	h           *HNSW
	D           []float32
	n           int
	mark        []int32 // mark[i] == stamp: i is in the current union
	stamp       int32
	keys        []uint64
	sel, pruned []cand
	cs          []cand
}

// selectFrom keeps up to capacity of cs (sorted nearest first) by HNSW's
// heuristic: a candidate is kept when it is nearer to the base node than
// to every neighbour kept so far; rejected ones then fill the free slots.
func (b *layerBuilder) selectFrom(cs []cand, capacity int) []cand {
	sel, pruned := b.sel[:0], b.pruned[:0]
	defer func() { b.sel, b.pruned = sel, pruned }()
	if len(cs) <= capacity {
		return append(sel, cs...)
	}
	n, D := b.n, b.D
	for _, c := range cs {
		if len(sel) >= capacity {
			break
		}
		row := D[int(c.id)*n : (int(c.id)+1)*n]
		good := true
		for _, r := range sel {
			if row[r.id] < c.d {
				good = false
				break
			}
		}
		if good {
			sel = append(sel, c)
		} else {
			pruned = append(pruned, c)
		}
	}
	for _, c := range pruned {
		if len(sel) >= capacity {
			break
		}
		sel = append(sel, c)
	}
	return sel
}

// link builds layer l over nodes (increasing ids, all of level ≥ l).
func (b *layerBuilder) link(nodes []uint32, l int) {
	h, n, D := b.h, b.n, b.D
	if len(nodes) < 2 {
		return
	}
	capacity := h.m
	if l == 0 {
		capacity = h.m0
	}
	L := min(max(h.efc, capacity), len(nodes)-1)
	backing := make([]cand, len(nodes)*L)
	lists := make([][]cand, len(nodes)) // by index in nodes
	var smp [64]float32
	for x, i := range nodes {
		row := D[int(i)*n : (int(i)+1)*n]
		// Keep only distances up to a threshold estimated from an evenly
		// spaced sample, at about twice L's share; all when too few pass.
		limit := float32(math.Inf(1))
		if len(nodes)-1 >= 4*L && len(nodes) >= 256 {
			for k := range smp {
				smp[k] = row[nodes[(k*len(nodes)/len(smp)+1+x)%len(nodes)]]
			}
			slices.Sort(smp[:])
			limit = smp[min(len(smp)-1, 2*L*len(smp)/len(nodes)+1)]
		}
		keys := b.keys[:0]
		for {
			for _, j := range nodes {
				if v := row[j]; v <= limit && j != i {
					keys = append(keys, uint64(sortableFloat(v))<<32|uint64(j))
				}
			}
			if len(keys) >= L {
				break
			}
			keys, limit = keys[:0], float32(math.Inf(1))
		}
		b.keys = keys
		slices.Sort(selectSmallest(keys, L))
		list := backing[x*L : (x+1)*L]
		for k, key := range keys[:L] {
			j := uint32(key)
			list[k] = cand{row[j], j}
		}
		lists[x] = list
	}
	// Reverse links: node j also considers every i that has j among its
	// capacity nearest.
	pos := func(id uint32) int {
		p, _ := slices.BinarySearch(nodes, id)
		return p
	}
	in := make([][]uint32, len(nodes))
	for x, list := range lists {
		for _, c := range list[:min(len(list), capacity)] {
			p := pos(c.id)
			in[p] = append(in[p], nodes[x])
		}
	}
	for x, j := range nodes {
		b.stamp++
		cs := append(b.cs[:0], lists[x]...)
		for _, c := range cs {
			b.mark[c.id] = b.stamp
		}
		for _, i := range in[x] {
			if b.mark[i] != b.stamp {
				b.mark[i] = b.stamp
				cs = append(cs, cand{D[int(j)*n+int(i)], i})
			}
		}
		slices.SortFunc(cs, candCmp)
		b.cs = cs
		final := b.selectFrom(cs, capacity)
		blk := h.links(j, l)
		blk[0] = uint32(len(final))
		for k, c := range final {
			blk[1+k] = c.id
		}
	}
}

// linkUnreachable makes every node reachable on layer 0 from the entry
// point: an unreachable node replaces the farthest link of its
// nearest reachable node, and reachability is recomputed, up to n rounds.
func linkUnreachable(h *HNSW, D []float32) {
	n := h.n
	seen := make([]bool, n)
	var queue []uint32
	reach := func() int {
		clear(seen)
		seen[h.entry] = true
		queue = append(queue[:0], h.entry)
		count := 1
		for len(queue) > 0 {
			u := queue[len(queue)-1]
			queue = queue[:len(queue)-1]
			for _, v := range h.neighbors(u, 0) {
				if !seen[v] {
					seen[v] = true
					count++
					queue = append(queue, v)
				}
			}
		}
		return count
	}
	for round := 0; round < n && reach() < n; round++ {
		for u := 0; u < n; u++ {
			if seen[u] {
				continue
			}
			best := -1
			for v := 0; v < n; v++ {
				if seen[v] && (best < 0 || D[u*n+v] < D[u*n+best]) {
					best = v
				}
			}
			blk := h.links(uint32(best), 0)
			if int(blk[0]) < h.m0 {
				blk[1+blk[0]] = uint32(u)
				blk[0]++
			} else {
				// The last link is the farthest of the kept pruned ones
				// (or of all, when none was pruned).
				blk[blk[0]] = uint32(u)
			}
			break // recompute reachability after each repair
		}
	}
}

// sortableFloat maps a float32 that is not NaN to a uint32 of the same
// order (-0 before +0).
func sortableFloat(f float32) uint32 {
	b := math.Float32bits(f)
	if b&(1<<31) != 0 {
		return ^b
	}
	return b | 1<<31
}

// selectSmallest reorders keys so that its k smallest come first, in no
// particular order, and returns them (Hoare's quickselect with
// median-of-three pivots).
func selectSmallest(keys []uint64, k int) []uint64 {
	if k >= len(keys) {
		return keys
	}
	if len(keys) >= 4*k && len(keys) >= 256 {
		// One pass with a pivot from an evenly spaced sample of 64 keys,
		// ranked at twice k's share: usually leaves between k and 3k keys
		// to select from.
		var smp [64]uint64
		for i := range smp {
			smp[i] = keys[i*len(keys)/len(smp)]
		}
		slices.Sort(smp[:])
		p := smp[min(len(smp)-1, 2*k*len(smp)/len(keys)+1)]
		w := 0
		for i, key := range keys {
			if key <= p {
				keys[i], keys[w] = keys[w], key
				w++
			}
		}
		if w >= k {
			return selectSmallest(keys[:w], k)
		}
	}
	lo, hi := 0, len(keys)-1
	for hi > lo {
		mid := lo + (hi-lo)/2
		if keys[mid] < keys[lo] {
			keys[mid], keys[lo] = keys[lo], keys[mid]
		}
		if keys[hi] < keys[lo] {
			keys[hi], keys[lo] = keys[lo], keys[hi]
		}
		if keys[hi] < keys[mid] {
			keys[hi], keys[mid] = keys[mid], keys[hi]
		}
		p := keys[mid]
		i, j := lo, hi
		for i <= j {
			for keys[i] < p {
				i++
			}
			for p < keys[j] {
				j--
			}
			if i <= j {
				keys[i], keys[j] = keys[j], keys[i]
				i++
				j--
			}
		}
		// keys[lo..j] ≤ p ≤ keys[i..hi]; keys[j+1..i-1] == p.
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return keys[:k]
		}
	}
	return keys[:k]
}

// PartitionRows returns partition p's ids and stored rows, for writing the
// index in another format: the exact vectors (c×Dim floats) of a StoreFloat32
// index, or the codes (c×Dim bytes for StoreSQ8, c×PQSubVectors for
// StorePQ). Do not modify them.
func (x *IVF) PartitionRows(ctx context.Context, p int) (ids []uint64, vecs []float32, codes []uint8, err error) {
	if p < 0 || p >= x.Partitions() {
		return nil, nil, nil, fmt.Errorf("vector: partition %d of %d: %w", p, x.Partitions(), lancer.ErrInvalidArgument)
	}
	pt, err := x.part(ctx, p)
	if err != nil {
		return nil, nil, nil, err
	}
	ids = x.ids[x.offsets[p]:x.offsets[p+1]]
	if x.storage == StoreFloat32 {
		return ids, pt.vecs, nil, nil
	}
	if x.sub == SubHNSW && x.storage == StorePQ {
		return ids, pt.vecs, pt.codes, nil // the graph's exact vectors too
	}
	return ids, nil, pt.codes, nil
}

// PQBits returns the code width of a StorePQ index's sub-vectors (8 or 4,
// PQOptions.Bits), 0 for other storages.
func (x *IVF) PQBits() int {
	if x.pq == nil {
		return 0
	}
	return x.pq.codeBits()
}

// PQCodebook returns the codebooks of a StorePQ index as Lance lays them
// out: n = 2^PQBits() codewords per sub-vector (zero beyond the ones
// trained, which no code uses), sub-vector j's codeword c at
// [(j*n+c)*sub, (j*n+c+1)*sub) with sub = Dim/PQSubVectors; nil for other
// storages. Codes are of the residuals to the partition centroids (of
// normalized rows for Cosine).
func (x *IVF) PQCodebook() []float32 {
	q := x.pq
	if q == nil {
		return nil
	}
	n := 1 << q.codeBits()
	out := make([]float32, q.m*n*q.sub)
	for j := 0; j < q.m; j++ {
		copy(out[j*n*q.sub:], q.books[j*q.k*q.sub:(j+1)*q.k*q.sub])
	}
	return out
}
