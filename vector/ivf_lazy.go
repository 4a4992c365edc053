package vector

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"sync"

	"github.com/lancerdb/lancer"
)

// OpenIVFOptions configures OpenIVF. A nil pointer gives the defaults.
type OpenIVFOptions struct {
	// CacheBytes bounds the memory of the partitions kept loaded (their
	// vectors, codes and graphs as held in memory, which for StoreSQ8
	// with SubHNSW is five times the codes): when a load takes the total
	// over it, the least recently used other partitions are dropped. A
	// partition in use by a search stays usable by it. Default 0:
	// unbounded, every partition stays once loaded. A bound below the
	// largest partition still works, reloading partitions as searches
	// need them. Ignored when Partitions is set.
	CacheBytes int64
	// Partitions, when set, keeps the loaded partitions instead of the
	// index's own cache, so that the partitions of many indices (and
	// whatever else the caller caches) share one budget. Default nil: the
	// index's own cache, bounded by CacheBytes.
	Partitions PartitionCache
}

// PartitionCache keeps the partitions of an index opened with OpenIVF.
type PartitionCache interface {
	// Partition returns partition p of the index, calling load when it
	// is not cached; concurrent calls for one p should share one load.
	// It returns ctx's error if ctx is done first, and load's error (not
	// cached) if the load fails.
	Partition(ctx context.Context, p int, load func(ctx context.Context) (*Partition, error)) (*Partition, error)
}

// Partition is one loaded partition of an index opened with OpenIVF,
// opaque and read only: what a PartitionCache keeps.
type Partition struct{ part *ivfPart }

// Bytes estimates the memory the partition holds (its vectors, codes and
// graph as held in memory).
func (p *Partition) Bytes() int64 { return p.part.memBytes() }

// ivfLazy loads the partitions of an index opened with OpenIVF.
type ivfLazy struct {
	size   int64
	readAt func(ctx context.Context, off, n int64) ([]byte, error)
	off    []int64 // per partition: first byte
	length []int64 // per partition: byte length
	crc    []uint32
	meta   int64 // bytes of the always-loaded part
	cache  PartitionCache
	own    *partitionLRU // cache when it is the index's own
}

// partitionLRU is an index's own partition cache: least recently used
// partitions out once they hold more than limit bytes (0: unbounded).
type partitionLRU struct {
	limit   int64
	mu      sync.Mutex
	used    int64
	tick    uint64
	entries map[int]*lazyPart
}

type lazyPart struct {
	done    chan struct{}
	part    *Partition
	err     error
	bytes   int64
	lastUse uint64
}

// OpenIVF opens an index of size bytes written by WriteTo without
// reading it all: readAt(ctx, off, n) must return the n bytes at off
// (exactly n, or an error), and may be called from several goroutines at
// once. OpenIVF's reads use ctx; a partition's, the ctx of the Search that
// loads it.
//
// It reads the header, centroids, quantizer, partition radii and sizes,
// all row ids (8 bytes per row: IDs and filters need them) and the
// partition directory, checks their CRC-32C and every count against size
// before allocating, and loads a partition — checking its own CRC-32C and
// contents — the first time a search probes it, keeping it in a cache
// bounded by opts.CacheBytes (least recently used first out), or in
// opts.Partitions. Concurrent searches needing the same partition share
// one load.
//
// An index in format version 1 (no directory) is read whole and decoded
// as by UnmarshalIVF. Damaged front matter is an error wrapping
// lancer.ErrCorrupt; a partition that fails to load fails the Search
// that needs it, with a read error or lancer.ErrCorrupt naming the
// partition, and is retried by later searches.
func OpenIVF(ctx context.Context, size int64, readAt func(ctx context.Context, off, n int64) ([]byte, error), opts *OpenIVFOptions) (*IVF, error) {
	var o OpenIVFOptions
	if opts != nil {
		o = *opts
	}
	if o.CacheBytes < 0 {
		return nil, fmt.Errorf("vector: OpenIVF with CacheBytes %d: %w", o.CacheBytes, lancer.ErrInvalidArgument)
	}
	if size < 10 {
		return nil, ivfCorrupt("header", "%d bytes, shorter than the header", size)
	}
	head, err := readAt(ctx, 0, 10)
	if err != nil {
		return nil, fmt.Errorf("vector: ivf index: read header: %w", err)
	}
	if string(head[:8]) != ivfMagic {
		return nil, ivfCorrupt("header", "bad magic %q", head[:8])
	}
	if binary.LittleEndian.Uint16(head[8:]) == ivfVersion1 {
		data, err := readAt(ctx, 0, size)
		if err != nil {
			return nil, fmt.Errorf("vector: ivf index: read: %w", err)
		}
		return unmarshalIVFv1(data)
	}
	return openIVF(ctx, size, readAt, &o)
}

// openIVF opens a version 2 index (see OpenIVF).
func openIVF(ctx context.Context, size int64, readAt func(ctx context.Context, off, n int64) ([]byte, error), o *OpenIVFOptions) (*IVF, error) {
	le := binary.LittleEndian
	if size < ivfHeaderLen+4 {
		return nil, ivfCorrupt("header", "%d bytes, shorter than the %d-byte header and checksum", size, ivfHeaderLen+4)
	}
	h, err := readAt(ctx, 0, ivfHeaderLen)
	if err != nil {
		return nil, fmt.Errorf("vector: ivf index: read header: %w", err)
	}
	if string(h[:8]) != ivfMagic {
		return nil, ivfCorrupt("header", "bad magic %q", h[:8])
	}
	if v := le.Uint16(h[8:]); v != ivfVersion {
		if v == 0 {
			return nil, ivfCorrupt("header", "version 0")
		}
		return nil, fmt.Errorf("vector: ivf index version %d (want %d or %d): %w", v, ivfVersion1, ivfVersion, lancer.ErrUnsupported)
	}
	if f := le.Uint16(h[10:]); f != 0 {
		return nil, fmt.Errorf("vector: ivf index flags %#x: %w", f, lancer.ErrUnsupported)
	}
	dim := uint64(le.Uint32(h[12:]))
	metric, sub, storage, reserved := Metric(h[16]), SubIndex(h[17]), Storage(h[18]), h[19]
	P := uint64(le.Uint32(h[20:]))
	n := uint64(le.Uint32(h[24:]))
	hm := int(le.Uint16(h[28:]))
	hefc := int(le.Uint32(h[30:]))
	S := uint64(le.Uint16(h[34:]))
	K := uint64(le.Uint16(h[36:]))
	if err := checkIVFHeader(dim, metric, sub, storage, reserved, P, n, hm, hefc); err != nil {
		return nil, err
	}
	switch {
	case le.Uint16(h[38:]) != 0:
		return nil, ivfCorrupt("header", "reserved bytes %#x", le.Uint16(h[38:]))
	case storage == StorePQ && (S == 0 || dim%S != 0 || K == 0 || K > pqCodebookSize):
		return nil, ivfCorrupt("header", "PQ of %d sub-vectors of %d codewords for dimension %d", S, K, dim)
	case storage != StorePQ && (S != 0 || K != 0):
		return nil, ivfCorrupt("header", "PQ fields %d, %d for %v storage", S, K, storage)
	}
	metaEnd := ivfMetaEnd(dim, P, n, storage, K)
	dirLen := int64(ivfDirEntry * P)
	if uint64(metaEnd)+uint64(dirLen)+4 > uint64(size) {
		return nil, ivfCorrupt("header", "%d partitions of %d rows of dimension %d need %d bytes before the partitions and %d after, have %d in all", P, n, dim, metaEnd, dirLen+4, size)
	}
	meta, err := readAt(ctx, ivfHeaderLen, metaEnd-ivfHeaderLen)
	if err != nil {
		return nil, fmt.Errorf("vector: ivf index: read metadata: %w", err)
	}
	tail, err := readAt(ctx, size-dirLen-4, dirLen+4)
	if err != nil {
		return nil, fmt.Errorf("vector: ivf index: read directory: %w", err)
	}
	sum := crc32.Update(crc32.Update(crc32.Checksum(h, castagnoli), castagnoli, meta), castagnoli, tail[:dirLen])
	if want := le.Uint32(tail[dirLen:]); want != sum {
		return nil, ivfCorrupt("checksum", "stored CRC-32C %08x of the header, metadata and directory, computed %08x (truncated or damaged)", want, sum)
	}

	x := &IVF{dim: int(dim), metric: metric, sub: sub, storage: storage}
	if sub == SubHNSW {
		x.m, x.efc = hm, hefc
	}
	p := meta
	if p, err = x.readCentroids(p, P); err != nil {
		return nil, err
	}
	switch storage {
	case StoreSQ8:
		if p, err = x.readSQ8(p); err != nil {
			return nil, err
		}
	case StorePQ:
		q := &pqCodebook{dim: int(dim), m: int(S), sub: int(dim / S), k: int(K), books: make([]float32, K*dim)}
		readF32s(q.books, p)
		p = p[4*K*dim:]
		for i, v := range q.books {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, ivfCorrupt("pq", "codebook value %d is %v", i, v)
			}
		}
		x.pq = q
	}
	radius := make([]float32, P)
	readF32s(radius, p)
	p = p[4*P:]
	for i, r := range radius {
		if !(r >= 0) || math.IsInf(float64(r), 0) || (metric != L2 && math.Float32bits(r) != 0) {
			return nil, ivfCorrupt("radii", "partition %d has radius %v", i, r)
		}
	}
	if metric == L2 {
		x.radius = radius
	}
	if p, err = x.readSizes(p, P, n); err != nil {
		return nil, err
	}
	x.ids = make([]uint64, n)
	for i := range x.ids {
		x.ids[i] = le.Uint64(p[8*i:])
	}
	if err := x.buildByID(); err != nil {
		return nil, ivfCorrupt("ids", "%v", err)
	}

	lz := &ivfLazy{
		size: size, readAt: readAt,
		off: make([]int64, P), length: make([]int64, P), crc: make([]uint32, P),
		meta: metaEnd + dirLen + int64(len(x.ids))*16,
	}
	next := metaEnd
	for i := range int(P) {
		e := tail[ivfDirEntry*i:]
		off, length := le.Uint64(e), le.Uint64(e[8:])
		name := fmt.Sprintf("directory entry %d", i)
		if off != uint64(next) || length > uint64(size) {
			return nil, ivfCorrupt(name, "partition at %d of %d bytes, want it at %d", off, length, next)
		}
		fixed := x.partFixed(i)
		switch {
		case x.sub == SubHNSW && x.offsets[i+1] > x.offsets[i]:
			if int64(length) <= fixed {
				return nil, ivfCorrupt(name, "%d bytes for %d bytes of codes and a graph", length, fixed)
			}
		case int64(length) != fixed:
			return nil, ivfCorrupt(name, "%d bytes, want %d", length, fixed)
		}
		lz.off[i], lz.length[i], lz.crc[i] = int64(off), int64(length), le.Uint32(e[16:])
		next += int64(length)
		if next > size-dirLen-4 {
			return nil, ivfCorrupt(name, "partition ends at %d, past the directory at %d", next, size-dirLen-4)
		}
	}
	if next != size-dirLen-4 {
		return nil, ivfCorrupt("directory", "partitions end at %d, the directory starts at %d", next, size-dirLen-4)
	}
	switch {
	case o != nil && o.Partitions != nil:
		lz.cache = o.Partitions
	default:
		lz.own = &partitionLRU{entries: map[int]*lazyPart{}}
		if o != nil {
			lz.own.limit = o.CacheBytes
		}
		lz.cache = lz.own
	}
	x.lazy = lz
	return x, nil
}

// load reads, checks and decodes partition p.
func (lz *ivfLazy) load(ctx context.Context, x *IVF, p int) (*ivfPart, error) {
	b, err := lz.readAt(ctx, lz.off[p], lz.length[p])
	if err != nil {
		return nil, fmt.Errorf("vector: ivf index: read partition %d: %w", p, err)
	}
	if int64(len(b)) != lz.length[p] {
		return nil, fmt.Errorf("vector: ivf index: read partition %d: %d bytes, want %d: %w", p, len(b), lz.length[p], lancer.ErrCorrupt)
	}
	if got := crc32.Checksum(b, castagnoli); got != lz.crc[p] {
		return nil, ivfCorrupt(fmt.Sprintf("partition %d", p), "stored CRC-32C %08x, computed %08x", lz.crc[p], got)
	}
	fixed := x.partFixed(p)
	return x.decodePart(p, b[:fixed], b[fixed:])
}

// get returns partition p, from the cache or loaded with ctx.
func (lz *ivfLazy) get(ctx context.Context, x *IVF, p int) (*ivfPart, error) {
	pt, err := lz.cache.Partition(ctx, p, func(ctx context.Context) (*Partition, error) {
		part, err := lz.load(ctx, x, p)
		if err != nil {
			return nil, err
		}
		return &Partition{part}, nil
	})
	if err != nil {
		return nil, err
	}
	return pt.part, nil
}

// Partition returns partition p from the cache or loaded. A caller whose
// ctx is done stops waiting for another's load; a caller that waited for
// a load another caller's cancellation cut short loads it itself.
func (c *partitionLRU) Partition(ctx context.Context, p int, load func(context.Context) (*Partition, error)) (*Partition, error) {
	for {
		c.mu.Lock()
		c.tick++
		e, ok := c.entries[p]
		if ok {
			e.lastUse = c.tick
			c.mu.Unlock()
			select {
			case <-e.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if e.err != nil && ctx.Err() == nil && (errors.Is(e.err, context.Canceled) || errors.Is(e.err, context.DeadlineExceeded)) {
				continue
			}
			return e.part, e.err
		}
		e = &lazyPart{done: make(chan struct{}), lastUse: c.tick}
		c.entries[p] = e
		c.mu.Unlock()

		part, err := load(ctx)
		c.mu.Lock()
		e.part, e.err = part, err
		if err != nil {
			delete(c.entries, p) // retried by the next search
		} else {
			e.bytes = part.Bytes()
			c.used += e.bytes
			c.evict(p)
		}
		c.mu.Unlock()
		close(e.done)
		return part, err
	}
}

// evict drops the least recently used loaded partitions other than keep
// while over the limit. c.mu is held.
func (c *partitionLRU) evict(keep int) {
	if c.limit <= 0 {
		return
	}
	for c.used > c.limit {
		oldest, found := 0, false
		var min uint64
		for p, e := range c.entries {
			if p == keep || e.part == nil {
				continue
			}
			if !found || e.lastUse < min {
				oldest, min, found = p, e.lastUse, true
			}
		}
		if !found {
			return
		}
		c.used -= c.entries[oldest].bytes
		delete(c.entries, oldest)
	}
}

// ResidentBytes estimates the memory the index holds: everything for an
// index built or decoded whole; for one opened with OpenIVF, the front
// matter (centroids, ids, lookup tables) plus the partitions now in its
// own cache (none with OpenIVFOptions.Partitions, which charges them).
func (x *IVF) ResidentBytes() int64 {
	if x.lazy != nil {
		if own := x.lazy.own; own != nil {
			own.mu.Lock()
			defer own.mu.Unlock()
			return x.lazy.meta + own.used
		}
		return x.lazy.meta
	}
	b := int64(4*len(x.centroids) + 4*len(x.offsets) + 8*len(x.ids) + 16*len(x.byID) + 4*len(x.radius))
	for _, pt := range x.parts {
		b += pt.memBytes()
	}
	return b
}

// LoadedPartitions returns how many partitions are in memory: all of
// them unless the index was opened with OpenIVF, else those in its own
// cache (0 with OpenIVFOptions.Partitions).
func (x *IVF) LoadedPartitions() int {
	if x.lazy == nil {
		return x.Partitions()
	}
	own := x.lazy.own
	if own == nil {
		return 0
	}
	own.mu.Lock()
	defer own.mu.Unlock()
	n := 0
	for _, e := range own.entries {
		if e.part != nil {
			n++
		}
	}
	return n
}
