// Package cache is one byte-bounded, least-recently-used cache of loaded
// values, in the style of pebble's block cache, that the caller creates
// and hands to what it opens: a library keeps no process-wide cache, and
// one budget serves every kind of value (the dataset package keeps data
// file readers, deletion vectors, index front matter and partitions, and
// per-fragment search state in one Cache, each kind under its own
// namespace).
//
// A value is loaded on a miss by the caller's load function, which reports
// the value's size in bytes; the cache charges that size against its
// limit and evicts the least recently used values to stay within it.
//
// Invariants:
//
//  1. The bytes charged for resident values never exceed the limit once a
//     Get returns: a value larger than the whole cache is handed to its
//     callers and not kept.
//  2. Concurrent Gets of one key that miss share one load (single flight).
//     A load that fails (error or panic) is not cached: the next Get loads
//     again.
//  3. A load runs under a context of its own that carries the values of
//     the first caller's context and is cancelled only when every caller
//     waiting for it has given up. A caller whose context is done stops
//     waiting and gets its context's error; the others keep waiting and
//     get the loaded value.
//  4. A value that implements Releaser is released exactly once, after it
//     has left the cache (evicted, or never kept) and every Handle of it
//     has been released. Values the garbage collector frees need nothing.
//  5. Keys of different namespaces never collide.
//
// A Cache is safe for concurrent use. Stats reports hits, misses, bytes and
// evictions, for metrics.
package cache
