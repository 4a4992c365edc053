package dataset

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/cache"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
)

// DefaultCacheBytes is the size of the cache Open makes when
// OpenOptions.Cache is nil: 1 GiB, filled only as reads need it. The
// versions and write results derived from the Dataset share it.
const DefaultCacheBytes = 1 << 30

// The namespaces of what a Dataset keeps in its cache. Every name in
// them starts with the location of a file (or the dataset root), so
// datasets sharing a cache never collide.
const (
	cacheReaders    = "dataset.reader"          // *format.Reader by data file and allocator
	cacheDeletions  = "dataset.deletions"       // *deletionVector by deletion file
	cacheIndices    = "dataset.index"           // *loadedIndex (front matter) by index file
	cachePartitions = "dataset.index-partition" // *vector.Partition by index file and partition
	cacheSearch     = "dataset.search"          // per-fragment and per-version search state
)

// newDefaultCache returns the cache of an Open given none.
func newDefaultCache() *cache.Cache {
	c, err := cache.New(DefaultCacheBytes)
	if err != nil {
		panic(err) // a constant, non-negative limit
	}
	return c
}

// cached returns the value of (ns, name) in c, loaded with load on a miss.
// load must use the ctx it is given, not its caller's: the load goes on
// for other callers when this one gives up.
func cached[T any](ctx context.Context, c *cache.Cache, ns, name string, load func(ctx context.Context) (T, int64, error)) (T, error) {
	v, err := c.Get(ctx, cache.Key{Namespace: ns, Name: name}, func(ctx context.Context) (any, int64, error) {
		return load(ctx)
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v.(T), nil
}

// allocatorKey names an allocator in cache keys: a reader allocates what
// it returns with the allocator it was opened with, so a Dataset with
// another allocator (a compaction's) opens its own. A cached reader holds
// its allocator, so the address is not reused while the key is in use.
func allocatorKey(a memory.Allocator) string {
	return fmt.Sprintf("%T@%p", a, a)
}

// readerBytes is what the cache charges for an open data file reader: the
// file metadata it keeps (format.Reader.MetadataBytes), plus its decoded
// schema, about a KiB a field.
func readerBytes(r *format.Reader) int64 {
	n := r.MetadataBytes()
	for _, f := range r.Schema().Fields {
		f.Walk(func(*schema.Field) { n += 1 << 10 })
	}
	return n
}

// cachedPartitions keeps the partitions of one index in the Dataset's
// cache (vector.OpenIVFOptions.Partitions for lancer's own files,
// vecindex.OpenOptions.Partitions for Lance's), so that they share its
// budget with everything else.
type cachedPartitions[P interface{ Bytes() int64 }] struct {
	c        *cache.Cache
	location string // the index
}

func (cp cachedPartitions[P]) Partition(ctx context.Context, p int, load func(context.Context) (P, error)) (P, error) {
	return cached(ctx, cp.c, cachePartitions, cp.location+"#"+strconv.Itoa(p), func(ctx context.Context) (P, int64, error) {
		pt, err := load(ctx)
		if err != nil {
			var zero P
			return zero, 0, err
		}
		return pt, pt.Bytes(), nil
	})
}

// memBytes is what the cache charges for a deletion vector.
func (dv *deletionVector) memBytes() int64 {
	if dv == nil {
		return 64
	}
	return int64(dv.bm.GetSizeInBytes()) + 64
}
