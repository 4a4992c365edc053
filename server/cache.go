package server

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
)

// DefaultCacheSize is how many opened versions the server keeps by default.
const DefaultCacheSize = 16

// datasetCache keeps recently opened versions (*dataset.Dataset) by table,
// branch and version, least recently used first out. A Dataset is
// immutable and caches what searches computed (the vectors of unindexed
// fragments, index parts), so reusing one across requests saves reopening
// the manifest and rereading those.
//
// Freshness is unchanged: a request for the latest version still looks
// the latest up in the store (latestVersion: from the newest version the
// last lookup found, listing at least every listEvery) and uses the cached
// Dataset of that version only. An entry is trusted only while its manifest file
// is the one it was opened from (same size and modification time), so a
// table dropped and written again, by the server or by anyone else, is
// opened afresh even where its version numbers repeat. (Object stores
// report modification times to the second: a table another writer drops
// and creates again within one second, with a manifest of the same size,
// could be served from the old entry until it is evicted. The server's
// own drops forget the table's entries.)
type datasetCache struct {
	max int // 0: disabled

	mu      sync.Mutex
	lru     *list.List // of *cacheEntry, most recent first
	entries map[cacheKey]*list.Element
	// newest holds, by table and branch (version 0), the newest version
	// a lookup of the latest found, where the next lookup starts
	// (dataset.LatestVersionSince), and when the line was last listed.
	newest map[cacheKey]newestSeen

	hits, misses atomic.Uint64
}

type cacheKey struct {
	table, branch string
	version       uint64
}

type cacheEntry struct {
	key  cacheKey
	ds   *dataset.Dataset // its Store and ManifestKey name the manifest
	size int64
	mod  time.Time
}

func newDatasetCache(max int) *datasetCache {
	if max < 0 {
		max = 0
	}
	return &datasetCache{max: max, lru: list.New(), entries: map[cacheKey]*list.Element{}, newest: map[cacheKey]newestSeen{}}
}

func (c *datasetCache) enabled() bool { return c != nil && c.max > 0 }

// get returns the cached version, or nil. Checking the manifest is one
// Stat of the store (a HEAD request on object storage).
func (c *datasetCache) get(ctx context.Context, table, branchName string, version uint64) *dataset.Dataset {
	if !c.enabled() {
		return nil
	}
	k := cacheKey{table, branchName, version}
	c.mu.Lock()
	el, ok := c.entries[k]
	var e *cacheEntry
	if ok {
		e = el.Value.(*cacheEntry)
		c.lru.MoveToFront(el)
	}
	c.mu.Unlock()
	if e == nil {
		c.misses.Add(1)
		return nil
	}
	if fi, err := e.ds.Store().Stat(ctx, e.ds.ManifestKey()); err != nil || fi.Size != e.size || !fi.ModTime.Equal(e.mod) {
		c.remove(k, e)
		c.misses.Add(1)
		return nil
	}
	c.hits.Add(1)
	return e.ds
}

// put caches ds as version ds.Version() of a table's line (ds.Store() is
// the line's store: the table's for main, its tree/<branch> for a branch).
func (c *datasetCache) put(ctx context.Context, table, branchName string, ds *dataset.Dataset) {
	if !c.enabled() || ds == nil {
		return
	}
	fi, err := ds.Store().Stat(ctx, ds.ManifestKey())
	if err != nil {
		return
	}
	k := cacheKey{table, branchName, ds.Manifest().Version}
	e := &cacheEntry{key: k, ds: ds, size: fi.Size, mod: fi.ModTime}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok {
		old := el.Value.(*cacheEntry)
		if old.size == e.size && old.mod.Equal(e.mod) {
			// Keep the entry already there: its Dataset may have cached
			// search state.
			c.lru.MoveToFront(el)
			return
		}
		el.Value = e
		c.lru.MoveToFront(el)
		return
	}
	c.entries[k] = c.lru.PushFront(e)
	for c.lru.Len() > c.max {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}

// newestSeen is what the last lookup of a line's latest version found.
type newestSeen struct {
	version uint64
	listed  time.Time // when the line's versions were last listed
}

// newestLines bounds the lines whose newest version the cache remembers;
// past it they are all forgotten (each then costs one listing again).
const newestLines = 4096

// listEvery is how often the latest version of a line is found by listing
// its versions rather than from the newest one seen: a cleanup that keeps
// that version but removes the one after it, by a writer that leaves no
// version hint, could otherwise leave the answer stale
// (dataset.LatestVersionSince).
const listEvery = time.Second

// latestVersion returns the latest version of a table's line (its store
// line), from the newest version the last lookup found, or by listing
// when none was found, the last listing is listEvery old, or the cache is
// disabled.
func (c *datasetCache) latestVersion(ctx context.Context, table, branchName string, line blob.Store) (uint64, error) {
	k := cacheKey{table: table, branch: branchName}
	var seen newestSeen
	if c.enabled() {
		c.mu.Lock()
		seen = c.newest[k]
		c.mu.Unlock()
	}
	now := time.Now()
	var (
		v   uint64
		err error
	)
	if seen.version == 0 || now.Sub(seen.listed) >= listEvery {
		v, err = dataset.LatestVersion(ctx, line)
		seen.listed = now
	} else {
		v, err = dataset.LatestVersionSince(ctx, line, seen.version)
	}
	if !c.enabled() {
		return v, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		delete(c.newest, k)
		return 0, err
	}
	if len(c.newest) >= newestLines {
		clear(c.newest)
	}
	seen.version = v
	c.newest[k] = seen
	return v, nil
}

// remove drops k's entry if it is still e.
func (c *datasetCache) remove(k cacheKey, e *cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[k]; ok && el.Value.(*cacheEntry) == e {
		c.lru.Remove(el)
		delete(c.entries, k)
	}
}

// dropTable forgets every version of a table (dropped, renamed or
// overwritten).
func (c *datasetCache) dropTable(table string) {
	if !c.enabled() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, el := range c.entries {
		if k.table == table {
			c.lru.Remove(el)
			delete(c.entries, k)
		}
	}
	for k := range c.newest {
		if k.table == table {
			delete(c.newest, k)
		}
	}
}

// len returns the number of cached versions.
func (c *datasetCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
