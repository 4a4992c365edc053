package cache

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
)

func key(i int) Key { return Key{Namespace: "t", Name: fmt.Sprint(i)} }

func mustNew(t testing.TB, limit int64) *Cache {
	t.Helper()
	c, err := New(limit)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// oracle is the model of a Cache used by one goroutine: resident keys,
// most recently used last, with their sizes.
type oracle struct {
	limit int64
	keys  []Key
	sizes map[Key]int64
}

func (o *oracle) used() int64 {
	var n int64
	for _, k := range o.keys {
		n += o.sizes[k]
	}
	return n
}

// get records a Get of k: a hit moves it to the back; a successful load
// of size appends it and evicts from the front while over the limit.
func (o *oracle) get(k Key, size int64, fail bool) (hit bool) {
	if i := slices.Index(o.keys, k); i >= 0 {
		o.keys = append(slices.Delete(o.keys, i, i+1), k)
		return true
	}
	if fail || size > o.limit {
		return false
	}
	o.keys = append(o.keys, k)
	o.sizes[k] = size
	for o.used() > o.limit {
		o.keys = o.keys[1:]
	}
	return false
}

// TestCacheModel runs random Gets (hits, loads of random sizes, failed
// loads, values larger than the cache) and checks the cache against the
// oracle after each: the same values resident, the same bytes, never more
// than the limit, and a load exactly on each miss.
func TestCacheModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 3))
	for round := range 20 {
		limit := int64(rng.IntN(1000))
		c := mustNew(t, limit)
		o := &oracle{limit: limit, sizes: map[Key]int64{}}
		var hits, misses uint64
		for op := range 2000 {
			k := key(rng.IntN(40))
			size := int64(rng.IntN(int(limit/4) + 2))
			if rng.IntN(50) == 0 {
				size = limit + 1 + int64(rng.IntN(10))
			}
			fail := rng.IntN(10) == 0
			loaded := false
			v, err := c.Get(context.Background(), k, func(context.Context) (any, int64, error) {
				loaded = true
				if fail {
					return nil, 0, errors.New("boom")
				}
				return k.Name, size, nil
			})
			hit := o.get(k, size, fail)
			if hit {
				hits++
			} else {
				misses++
			}
			switch {
			case hit == loaded:
				t.Fatalf("round %d op %d: %v: hit %t but loaded %t", round, op, k, hit, loaded)
			case fail && !hit && err == nil:
				t.Fatalf("round %d op %d: a failed load returned no error", round, op)
			case err == nil && v != k.Name:
				t.Fatalf("round %d op %d: %v = %v", round, op, k, v)
			}
			s := c.Stats()
			if s.Bytes != o.used() || s.Bytes > limit || s.Entries != len(o.keys) || s.BytesByNamespace["t"] != s.Bytes {
				t.Fatalf("round %d op %d: cache holds %d bytes in %d entries (%v), oracle %d in %d, limit %d",
					round, op, s.Bytes, s.Entries, s.BytesByNamespace, o.used(), len(o.keys), limit)
			}
			if s.Hits != hits || s.Misses != misses {
				t.Fatalf("round %d op %d: %d hits %d misses, oracle %d %d", round, op, s.Hits, s.Misses, hits, misses)
			}
		}
		// The resident keys are the oracle's, in its recency order.
		var got []Key
		for e := c.lru.prev; e != &c.lru; e = e.prev {
			got = append(got, e.key)
		}
		if !slices.Equal(got, o.keys) {
			t.Fatalf("round %d: resident %v, oracle %v", round, got, o.keys)
		}
	}
}

// TestCacheSingleFlight: concurrent Gets of one key share one load.
func TestCacheSingleFlight(t *testing.T) {
	c := mustNew(t, 1<<20)
	var loads atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			v, err := c.Get(context.Background(), key(1), func(context.Context) (any, int64, error) {
				loads.Add(1)
				<-release
				return 42, 8, nil
			})
			if err != nil || v != 42 {
				t.Errorf("got %v, %v", v, err)
			}
		})
	}
	for c.waiters(key(1)) < 16 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Fatalf("%d loads", n)
	}
}

// waiters returns how many callers wait for key's load.
func (c *Cache) waiters(k Key) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[k]; e != nil && e.flight != nil {
		return e.flight.waiters
	}
	return 0
}

// TestCacheCancel: a caller whose ctx is done stops waiting with its
// error while the load goes on for the others; when every caller has
// given up the load's ctx is cancelled and nothing is kept.
func TestCacheCancel(t *testing.T) {
	c := mustNew(t, 1<<20)
	release := make(chan struct{})
	loadCtx := make(chan context.Context, 1)
	load := func(ctx context.Context) (any, int64, error) {
		loadCtx <- ctx
		select {
		case <-release:
			return "v", 1, nil
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	type traceKey struct{}
	first, cancelFirst := context.WithCancel(context.WithValue(context.Background(), traceKey{}, "first"))
	firstErr := make(chan error, 1)
	go func() {
		_, err := c.Get(first, key(1), load)
		firstErr <- err
	}()
	lctx := <-loadCtx
	if lctx.Value(traceKey{}) != "first" {
		t.Fatal("the load's ctx lost the caller's values")
	}
	second := make(chan error, 1)
	go func() {
		v, err := c.Get(context.Background(), key(1), load)
		if err == nil && v != "v" {
			err = fmt.Errorf("got %v", v)
		}
		second <- err
	}()
	for c.waiters(key(1)) < 2 {
		time.Sleep(time.Millisecond)
	}
	cancelFirst()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	if lctx.Err() != nil {
		t.Fatal("the load was cancelled though a caller still waits")
	}
	close(release)
	if err := <-second; err != nil {
		t.Fatalf("the other caller: %v", err)
	}
	if s := c.Stats(); s.Entries != 1 {
		t.Fatalf("%d entries after the load", s.Entries)
	}

	// Every caller gives up: the load is cancelled, nothing kept, and the
	// next Get loads afresh.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Get(ctx, key(2), func(ctx context.Context) (any, int64, error) {
			loadCtx <- ctx
			<-ctx.Done()
			return nil, 0, ctx.Err()
		})
		done <- err
	}()
	lctx = <-loadCtx
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	<-lctx.Done()
	v, err := c.Get(context.Background(), key(2), func(context.Context) (any, int64, error) { return "w", 1, nil })
	if err != nil || v != "w" {
		t.Fatalf("after an abandoned load: %v, %v", v, err)
	}
	// A done ctx fails before any load.
	if _, err := c.Get(ctx, key(3), func(context.Context) (any, int64, error) {
		t.Fatal("loaded for a done ctx")
		return nil, 0, nil
	}); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// TestCachePanic: a load that panics panics its callers and caches
// nothing.
func TestCachePanic(t *testing.T) {
	c := mustNew(t, 1<<20)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		c.Get(context.Background(), key(1), func(context.Context) (any, int64, error) { panic("boom") })
	}()
	v, err := c.Get(context.Background(), key(1), func(context.Context) (any, int64, error) { return 7, 8, nil })
	if err != nil || v != 7 {
		t.Fatalf("after a panicked load: %v, %v", v, err)
	}
}

type releaser struct{ n *atomic.Int32 }

func (r releaser) Release() { r.n.Add(1) }

// TestCacheRelease: a Releaser is released once, after it is evicted and
// its Handles are released; one too large to keep is released with its
// last Handle.
func TestCacheRelease(t *testing.T) {
	ctx := context.Background()
	c := mustNew(t, 10)
	var n atomic.Int32
	load := func(size int64) LoadFunc {
		return func(context.Context) (any, int64, error) { return releaser{&n}, size, nil }
	}
	h, err := c.Acquire(ctx, key(1), load(6))
	if err != nil {
		t.Fatal(err)
	}
	h2, err := c.Acquire(ctx, key(1), load(6))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, key(2), load(6)); err != nil { // evicts key 1
		t.Fatal(err)
	}
	h.Release()
	if n.Load() != 0 {
		t.Fatal("released while a Handle holds it")
	}
	h2.Release()
	if n.Load() != 1 {
		t.Fatalf("released %d times after eviction and its last Handle", n.Load())
	}
	big, err := c.Acquire(ctx, key(3), load(11))
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 || c.Stats().Bytes != 6 {
		t.Fatalf("a value too large: released %d, cache %d bytes", n.Load(), c.Stats().Bytes)
	}
	big.Release()
	if n.Load() != 2 {
		t.Fatal("a value too large to keep was not released with its Handle")
	}
}

func TestCacheNegativeLimit(t *testing.T) {
	if _, err := New(-1); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Fatal(err)
	}
}

// TestCacheConcurrent hammers one cache from many goroutines (run it with
// -race): the bound holds throughout and every Get gets its key's value.
func TestCacheConcurrent(t *testing.T) {
	const limit = 500
	c := mustNew(t, limit)
	var wg sync.WaitGroup
	var stop atomic.Bool
	wg.Go(func() {
		for !stop.Load() {
			if s := c.Stats(); s.Bytes > limit {
				t.Errorf("%d bytes over the limit %d", s.Bytes, limit)
			}
		}
	})
	var workers sync.WaitGroup
	for g := range 8 {
		workers.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 1500 {
				k := key(rng.IntN(30))
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(20) == 0 {
					cancel()
				}
				v, err := c.Get(ctx, k, func(context.Context) (any, int64, error) {
					if rng := rand.IntN(15); rng == 0 {
						return nil, 0, errors.New("boom")
					}
					return k.Name, int64(1 + rand.IntN(100)), nil
				})
				cancel()
				if err == nil && v != k.Name {
					t.Errorf("%v = %v", k, v)
				}
			}
		})
	}
	workers.Wait()
	stop.Store(true)
	wg.Wait()
}
