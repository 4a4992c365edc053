package cache

import (
	"context"
	"fmt"
	"sync"

	"github.com/lancerdb/lancer"
)

// Key names a cached value: Namespace keeps the kinds of value that share
// a Cache apart (as "reader", "deletions", "index"), Name is unique within
// its namespace.
type Key struct {
	Namespace string
	Name      string
}

func (k Key) String() string { return k.Namespace + ":" + k.Name }

// LoadFunc loads a key's value on a miss and returns it with its size in
// bytes (what the cache charges for it; at least the memory it holds that
// nothing else accounts for). ctx is the load's own (invariant 3).
type LoadFunc func(ctx context.Context) (value any, size int64, err error)

// Releaser is a value that holds resources beyond memory: the cache calls
// Release once the value has left the cache and no Handle holds it
// (invariant 4). Such values are got with Acquire.
type Releaser interface {
	Release()
}

// Cache is a byte-bounded LRU cache of loaded values. The zero value is not
// usable: call New.
type Cache struct {
	mu      sync.Mutex
	limit   int64
	used    int64
	entries map[Key]*entry
	// lru is a ring of the resident entries (sentinel), most recent
	// first.
	lru entry

	resident                int
	hits, misses, evictions uint64
	byNamespace             map[string]int64 // resident bytes
}

// entry is a key being loaded (flight != nil) or resident.
type entry struct {
	key    Key
	flight *flight
	value  any
	size   int64
	// refs counts the Handles of value plus one while it is resident;
	// a Releaser value is released when it drops to zero.
	refs       int
	prev, next *entry
}

// flight is one load in progress.
type flight struct {
	done    chan struct{}
	waiters int // callers waiting; the load is cancelled when none are left
	// refWaiters counts the waiters that Acquire (they get a reference).
	refWaiters int
	cancel     context.CancelFunc
	// Set before done closes:
	err      error
	panicked any
	ok       bool // the load returned (it did not panic)
}

// New returns a cache holding at most limit bytes. A limit of 0 keeps
// nothing (every Get loads; concurrent Gets of one key still share a
// load); a negative limit is an error wrapping lancer.ErrInvalidArgument.
func New(limit int64) (*Cache, error) {
	if limit < 0 {
		return nil, fmt.Errorf("cache: limit %d bytes: %w", limit, lancer.ErrInvalidArgument)
	}
	c := &Cache{limit: limit, entries: map[Key]*entry{}, byNamespace: map[string]int64{}}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c, nil
}

// Get returns key's value, loading it with load on a miss (invariants 2
// and 3). It returns ctx's error if ctx is done before the value is there,
// load's error if the load failed, and re-panics with the load's panic.
//
// Get is for values the garbage collector frees: the value stays usable
// after it is evicted. A value that implements Releaser may be released as
// soon as it is evicted; get it with Acquire.
func (c *Cache) Get(ctx context.Context, key Key, load LoadFunc) (any, error) {
	e, err := c.get(ctx, key, load, false)
	if err != nil {
		return nil, err
	}
	return e.value, nil
}

// Handle holds a value got with Acquire until Release.
type Handle struct {
	c *Cache
	e *entry
}

// Value returns the value.
func (h *Handle) Value() any { return h.e.value }

// Release lets the value be released once it leaves the cache. It must be
// called exactly once.
func (h *Handle) Release() {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	h.c.unref(h.e)
}

// Acquire is Get for values that must be released (Releaser): the value
// is not released before the Handle is.
func (c *Cache) Acquire(ctx context.Context, key Key, load LoadFunc) (*Handle, error) {
	e, err := c.get(ctx, key, load, true)
	if err != nil {
		return nil, err
	}
	return &Handle{c: c, e: e}, nil
}

// get returns the resident entry of key, or an entry holding the value a
// load just returned, with a reference taken if ref.
func (c *Cache) get(ctx context.Context, key Key, load LoadFunc, ref bool) (*entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	e := c.entries[key]
	switch {
	case e != nil && e.flight == nil:
		c.hits++
		c.moveToFront(e)
		if ref {
			e.refs++
		}
		c.mu.Unlock()
		return e, nil
	case e != nil:
		e.flight.waiters++
	default:
		c.misses++
		lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		e = &entry{key: key, flight: &flight{done: make(chan struct{}), waiters: 1, cancel: cancel}}
		c.entries[key] = e
		go c.load(lctx, e, load)
	}
	f := e.flight
	if ref {
		f.refWaiters++
	}
	c.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		c.mu.Lock()
		select {
		case <-f.done:
			// The load finished meanwhile: this caller takes its result
			// (and the reference the load counted for it).
			c.mu.Unlock()
		default:
			f.waiters--
			if ref {
				f.refWaiters--
			}
			if f.waiters == 0 {
				// Nobody wants the value any more: stop the load and let
				// the next Get start afresh.
				f.cancel()
				if c.entries[key] == e {
					delete(c.entries, key)
				}
			}
			c.mu.Unlock()
			return nil, ctx.Err()
		}
	}
	if !f.ok {
		panic(f.panicked)
	}
	if f.err != nil {
		return nil, f.err
	}
	return e, nil
}

// load runs one flight and keeps its value if it succeeded, anyone still
// wants it and it fits. The references of the callers that Acquire it are
// counted here, before they wake.
func (c *Cache) load(ctx context.Context, e *entry, load LoadFunc) {
	f := e.flight
	var (
		value any
		size  int64
		err   error
	)
	defer func() {
		r := recover()
		c.mu.Lock()
		defer c.mu.Unlock()
		f.cancel()
		f.ok, f.panicked, f.err = r == nil, r, err
		loaded := f.ok && err == nil
		wanted := c.entries[e.key] == e
		if wanted {
			delete(c.entries, e.key)
		}
		if loaded {
			e.value, e.refs = value, f.refWaiters
			if wanted && size >= 0 && size <= c.limit {
				e.size = size
				e.refs++ // the cache's own
				c.entries[e.key] = e
				c.pushFront(e)
				c.used += size
				c.resident++
				c.byNamespace[e.key.Namespace] += size
				c.evict()
			} else if e.refs == 0 {
				// Not kept (too large, or every caller gave up) and no
				// Handle: release now.
				e.refs = 1
				c.unref(e)
			}
		}
		e.flight = nil
		close(f.done)
	}()
	value, size, err = load(ctx)
}

// evict drops least recently used entries while over the limit. c.mu is
// held.
func (c *Cache) evict() {
	for c.used > c.limit && c.lru.prev != &c.lru {
		old := c.lru.prev
		c.remove(old)
		c.evictions++
	}
}

// remove takes resident entry e out of the cache. c.mu is held.
func (c *Cache) remove(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	c.used -= e.size
	c.resident--
	c.byNamespace[e.key.Namespace] -= e.size
	if c.byNamespace[e.key.Namespace] == 0 {
		delete(c.byNamespace, e.key.Namespace)
	}
	if c.entries[e.key] == e {
		delete(c.entries, e.key)
	}
	c.unref(e)
}

// unref drops a reference to e's value, releasing a Releaser value at the
// last. c.mu is held.
func (c *Cache) unref(e *entry) {
	e.refs--
	if e.refs == 0 {
		if r, ok := e.value.(Releaser); ok {
			r.Release()
		}
	}
}

func (c *Cache) pushFront(e *entry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (c *Cache) moveToFront(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	c.pushFront(e)
}

// Stats are a cache's counters, for metrics.
type Stats struct {
	// Limit is the bound on Bytes.
	Limit int64
	// Bytes is what the resident values are charged, Entries their
	// number, and BytesByNamespace the bytes by Key.Namespace.
	Bytes            int64
	Entries          int
	BytesByNamespace map[string]int64
	// Hits counts Gets answered from the cache, Misses Gets that started
	// a load (a Get that joined another's load counts as neither),
	// Evictions values dropped to stay within Limit.
	Hits, Misses, Evictions uint64
}

// Stats returns the counters now.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Stats{Limit: c.limit, Bytes: c.used, Entries: c.resident, Hits: c.hits, Misses: c.misses, Evictions: c.evictions,
		BytesByNamespace: make(map[string]int64, len(c.byNamespace))}
	for ns, b := range c.byNamespace {
		s.BytesByNamespace[ns] = b
	}
	return s
}

// Limit returns the bound on the bytes the cache holds.
func (c *Cache) Limit() int64 { return c.limit }
