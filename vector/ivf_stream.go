package vector

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lancerdb/lancer"
)

// DefaultIVFBufferBytes is IVFOptions.BufferBytes' default: the float32
// rows a streaming build's partitions hold at once. 8 MiB is thirteen
// passes over the 200k×128 benchmark's rows (each a read of the source at
// memory speed when it is a local file), against the 100 MiB of holding
// them all.
const DefaultIVFBufferBytes = 8 << 20

// ivfChunkBytes is the size of the chunks TrainIVF reads its source in.
const ivfChunkBytes = 1 << 20

// RowSource is what TrainIVF reads its rows from: Rows() rows of the
// build's dimension, float32, read front to back in chunks, once per
// phase of the build and once per group of partitions. A spill file of a
// column read once suits it; so does a slice (SliceRows).
type RowSource interface {
	// Rows returns the number of rows.
	Rows() int
	// ReadRows fills dst, whole rows, with the rows from row lo on.
	ReadRows(ctx context.Context, lo int, dst []float32) error
}

// SliceRows is a RowSource over rows in memory, dim float32s each.
type SliceRows struct {
	Vectors []float32
	Dim     int
}

// Rows returns len(Vectors)/Dim.
func (s SliceRows) Rows() int { return len(s.Vectors) / s.Dim }

// ReadRows copies the rows from lo on into dst.
func (s SliceRows) ReadRows(ctx context.Context, lo int, dst []float32) error {
	if lo < 0 || lo*s.Dim+len(dst) > len(s.Vectors) {
		return fmt.Errorf("vector: rows from %d (%d floats) of %d: %w", lo, len(dst), s.Rows(), lancer.ErrInvalidArgument)
	}
	copy(dst, s.Vectors[lo*s.Dim:])
	return ctx.Err()
}

// IVFBuild is an IVF trained by TrainIVF whose partitions are built when
// they are asked for, a group of consecutive partitions at a time, and
// dropped when a partition of another group is: the index BuildIVF builds
// over the same rows, ids and options (the same centroids, codebooks,
// partition rows, codes and graphs), in bounded memory, for writing it
// out partition by partition (the Lance format's writer asks for them in
// order). It is not safe for concurrent use.
type IVFBuild struct {
	x       *IVF // the model: centroids, offsets, ids, quantizer; no partitions
	src     RowSource
	pos     []uint32 // pos[i] is the position of source row i in partition order
	hopts   HNSWOptions
	seed    uint64
	workers int
	budget  int // floats a group holds, BufferBytes/4
	prog    func(done, total int)
	built   int // partitions built so far, for prog

	gLo, gHi int        // the partitions in memory: [gLo, gHi)
	parts    []*ivfPart // parts[p-gLo]
	buf      []float32  // the group's rows in partition order
	chunk    []float32  // a read chunk
}

// TrainIVF trains the IVF BuildIVF would build over src's rows (ids[i]
// the id of row i) without holding them: it reads src once to check them
// and gather the k-means sample, once to assign every row to its
// partition, once more for StorePQ's codebook sample, and then, as
// partitions are asked for (IVFBuild.PartitionRows), once per group of
// partitions of at most opts.BufferBytes of rows, which it builds on
// Workers goroutines. It keeps the centroids, the codebooks, the ids and
// 4 bytes a row of positions; the samples it trains on live only while it
// does.
func TrainIVF(ctx context.Context, src RowSource, dim int, ids []uint64, opts *IVFOptions) (*IVFBuild, error) {
	n := len(ids)
	if src.Rows() != n {
		return nil, fmt.Errorf("vector: IVF of %d rows and %d ids: %w", src.Rows(), n, lancer.ErrInvalidArgument)
	}
	pb, err := prepareIVF(n, dim, opts)
	if err != nil {
		return nil, err
	}
	x, o, parts, km := pb.x, pb.o, pb.parts, pb.km
	if o.Storage == StoreSQ8 {
		// Its quantizer is trained over every row, which would be one
		// more pass; nothing streams it yet.
		return nil, fmt.Errorf("vector: a streaming IVF of %v storage: %w", o.Storage, lancer.ErrUnsupported)
	}
	if err := km.validate(); err != nil {
		return nil, err
	}
	b := &IVFBuild{x: x, src: src, hopts: pb.hopts, seed: o.Seed, workers: o.Workers, prog: pb.progress("partitions")}
	b.budget = o.BufferBytes / 4
	if b.budget == 0 {
		b.budget = DefaultIVFBufferBytes / 4
	}
	b.chunk = make([]float32, max(1, ivfChunkBytes/4/dim)*dim)

	// Pass 1: every row finite (as BuildIVF checks them all first), and
	// the k-means sample, the rows trainKMeans would take.
	rng, rows := kmeansSample(n, parts, km)
	sample := make([]float32, 0, len(rows)*dim)
	next := 0
	err = b.each(ctx, func(lo int, vecs []float32) error {
		for i, v := range vecs {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("vector: IVF: vector %d has a NaN or infinite value: %w", lo+i/dim, lancer.ErrInvalidArgument)
			}
		}
		hi := lo + len(vecs)/dim
		for ; next < len(rows) && int(rows[next]) < hi; next++ {
			r := int(rows[next]) - lo
			sample = append(sample, vecs[r*dim:(r+1)*dim]...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cent := trainKMeansSample(sample, dim, parts, km, rng, pb.progress("kmeans"))
	sample = nil
	if o.Metric == Cosine {
		for c := 0; c < parts; c++ {
			normalize(cent[c*dim : (c+1)*dim])
		}
	}
	x.centroids = cent

	// Pass 2: every row's partition.
	assign := make([]uint32, n)
	as := newAssigner(dim, cent, o.Metric, o.Workers)
	var report func(int)
	if p := pb.progress("assign"); p != nil {
		var done atomic.Int64
		report = func(rows int) { p(int(done.Add(int64(rows))), n) }
	}
	err = b.each(ctx, func(lo int, vecs []float32) error {
		as.assign(vecs, assign[lo:lo+len(vecs)/dim], report)
		return nil
	})
	if err != nil {
		return nil, err
	}

	// Counting sort, as BuildIVF: positions in partition order, by input
	// order within one.
	x.offsets = make([]uint32, parts+1)
	for _, p := range assign {
		x.offsets[p+1]++
	}
	for p := 1; p <= parts; p++ {
		x.offsets[p] += x.offsets[p-1]
	}
	b.pos = make([]uint32, n)
	x.ids = make([]uint64, n)
	fill := slices.Clone(x.offsets[:parts])
	for i, p := range assign {
		b.pos[i] = fill[p]
		x.ids[fill[p]] = ids[i]
		fill[p]++
	}
	if err := distinctIDs(ids); err != nil {
		return nil, fmt.Errorf("vector: IVF ids: %w: %w", err, lancer.ErrInvalidArgument)
	}

	// Pass 3 (StorePQ): the codebooks' sample, trainPQ's rows.
	if o.Storage == StorePQ {
		pqCent := cent
		if x.pqRaw {
			pqCent = make([]float32, len(cent)) // residuals to zero: the vectors
		}
		rows := pqSample(n, pb.pqo, o.Seed)
		split := newPQSplit(len(rows), dim, pb.pqo)
		next := 0
		err = b.each(ctx, func(lo int, vecs []float32) error {
			hi := lo + len(vecs)/dim
			for ; next < len(rows) && int(rows[next]) < hi; next++ {
				i := int(rows[next])
				c := int(assign[i])
				split.add(next, vecs[(i-lo)*dim:(i-lo+1)*dim], pqCent[c*dim:(c+1)*dim], o.Metric)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		x.pq = split.train(pb.pqo, o.Seed, o.Workers)
	}
	return b, nil
}

// distinctIDs reports an id that appears twice.
func distinctIDs(ids []uint64) error {
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return fmt.Errorf("id %d appears twice", sorted[i])
		}
	}
	return nil
}

// each reads the source front to back in chunks and calls fn with each
// chunk's first row and its rows (valid during the call).
func (b *IVFBuild) each(ctx context.Context, fn func(lo int, vecs []float32) error) error {
	dim, n := b.x.dim, b.src.Rows()
	per := len(b.chunk) / dim
	for lo := 0; lo < n; lo += per {
		vecs := b.chunk[:min(per, n-lo)*dim]
		if err := b.src.ReadRows(ctx, lo, vecs); err != nil {
			return err
		}
		if err := fn(lo, vecs); err != nil {
			return err
		}
	}
	return nil
}

// load builds the group of partitions that starts at p: consecutive
// partitions while their rows fit the budget (p alone when it does not),
// their rows gathered in one pass over the source and the partitions
// built on the workers, largest first.
func (b *IVFBuild) load(ctx context.Context, p int) error {
	x, dim := b.x, b.x.dim
	b.parts, b.gLo, b.gHi = nil, p, p // drop the last group first
	hi := p + 1
	for hi < x.Partitions() && int(x.offsets[hi+1]-x.offsets[p])*dim <= b.budget {
		hi++
	}
	lo, end := int(x.offsets[p]), int(x.offsets[hi])
	if need := (end - lo) * dim; cap(b.buf) < need {
		b.buf = nil
		b.buf = make([]float32, need)
	}
	buf := b.buf[:(end-lo)*dim]
	if end > lo {
		err := b.each(ctx, func(first int, vecs []float32) error {
			for r := range len(vecs) / dim {
				if ps := int(b.pos[first+r]); ps >= lo && ps < end {
					copy(buf[(ps-lo)*dim:(ps-lo+1)*dim], vecs[r*dim:(r+1)*dim])
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	parts := make([]*ivfPart, hi-p)
	order := make([]int, hi-p)
	for j := range order {
		order[j] = p + j
	}
	slices.SortStableFunc(order, func(a, c int) int {
		return cmp.Compare(x.offsets[c+1]-x.offsets[c], x.offsets[a+1]-x.offsets[a])
	})
	row := func(pos int) []float32 { return buf[(pos-lo)*dim : (pos-lo+1)*dim] }
	var next atomic.Int64
	var firstErr error
	var errOnce sync.Once
	var wg sync.WaitGroup
	for range min(b.workers, len(order)) {
		wg.Go(func() {
			// The matrix goes with the worker when the group is built:
			// held across groups it would add to the writer's peak.
			var scratch graphScratch
			for {
				j := int(next.Add(1) - 1)
				if j >= len(order) || ctx.Err() != nil {
					return
				}
				q := order[j]
				rows := buf[(int(x.offsets[q])-lo)*dim : (int(x.offsets[q+1])-lo)*dim]
				pt, err := x.buildPartition(q, row, rows, b.hopts, b.seed, &scratch)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				parts[q-p] = pt
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.built += hi - p
	if b.prog != nil {
		b.prog(b.built, x.Partitions())
	}
	b.parts, b.gHi = parts, hi
	return nil
}

// part returns partition p, building its group unless it is in memory.
// What it returns is valid until a partition of another group is asked
// for.
func (b *IVFBuild) part(ctx context.Context, p int) (*ivfPart, error) {
	if p < 0 || p >= b.x.Partitions() {
		return nil, fmt.Errorf("vector: partition %d of %d: %w", p, b.x.Partitions(), lancer.ErrInvalidArgument)
	}
	if p < b.gLo || p >= b.gHi {
		if err := b.load(ctx, p); err != nil {
			return nil, err
		}
	}
	return b.parts[p-b.gLo], nil
}

// PartitionRows returns partition p's ids and stored rows as
// IVF.PartitionRows does, building p's group of partitions when it is
// not the one in memory (ask for them in order: each group is built once
// then). They are valid until a partition of another group is asked for.
func (b *IVFBuild) PartitionRows(ctx context.Context, p int) (ids []uint64, vecs []float32, codes []uint8, err error) {
	pt, err := b.part(ctx, p)
	if err != nil {
		return nil, nil, nil, err
	}
	x := b.x
	ids = x.ids[x.offsets[p]:x.offsets[p+1]]
	if x.storage == StoreFloat32 {
		return ids, pt.vecs, nil, nil
	}
	if x.sub == SubHNSW && x.storage == StorePQ {
		return ids, pt.vecs, pt.codes, nil
	}
	return ids, nil, pt.codes, nil
}

// PartitionGraph returns partition p's HNSW graph (nil for SubFlat and an
// empty partition), as PartitionRows builds it.
func (b *IVFBuild) PartitionGraph(ctx context.Context, p int) (*HNSW, error) {
	pt, err := b.part(ctx, p)
	if err != nil {
		return nil, err
	}
	return pt.graph, nil
}

// Dim returns the vector dimension.
func (b *IVFBuild) Dim() int { return b.x.Dim() }

// Metric returns the index's distance metric.
func (b *IVFBuild) Metric() Metric { return b.x.Metric() }

// Partitions returns the number of partitions.
func (b *IVFBuild) Partitions() int { return b.x.Partitions() }

// Sub returns the per-partition search structure.
func (b *IVFBuild) Sub() SubIndex { return b.x.Sub() }

// Centroids returns the partition centroids (IVF.Centroids). Do not
// modify.
func (b *IVFBuild) Centroids() []float32 { return b.x.Centroids() }

// PartitionSizes returns the number of rows of each partition.
func (b *IVFBuild) PartitionSizes() []int { return b.x.PartitionSizes() }

// PQSubVectors returns the PQ sub-vectors of StorePQ, 0 otherwise.
func (b *IVFBuild) PQSubVectors() int { return b.x.PQSubVectors() }

// PQBits returns the PQ code width of StorePQ, 0 otherwise.
func (b *IVFBuild) PQBits() int { return b.x.PQBits() }

// PQCodebook returns the PQ codebooks as IVF.PQCodebook lays them out.
func (b *IVFBuild) PQCodebook() []float32 { return b.x.PQCodebook() }

// HNSWParams returns the graphs' M and EfConstruction (0, 0 for SubFlat).
func (b *IVFBuild) HNSWParams() (m, efConstruction int) { return b.x.HNSWParams() }
