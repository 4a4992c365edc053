package vector

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
)

// sliceReader serves readAt from b, counting the bytes read, failing
// reads that start at failAt (if ≥ 0).
type sliceReader struct {
	b      []byte
	read   atomic.Int64
	failAt atomic.Int64
}

func newSliceReader(b []byte) *sliceReader {
	r := &sliceReader{b: b}
	r.failAt.Store(-1)
	return r
}

func (r *sliceReader) readAt(ctx context.Context, off, n int64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if off < 0 || n < 0 || off > int64(len(r.b)) || n > int64(len(r.b))-off {
		return nil, fmt.Errorf("range %d+%d of %d bytes: %w", off, n, len(r.b), lancer.ErrInvalidArgument)
	}
	if off == r.failAt.Load() {
		return nil, errors.New("injected read error")
	}
	r.read.Add(n)
	return slices.Clone(r.b[off : off+n]), nil
}

// marshalV1 encodes x in format version 1, as earlier releases did.
func marshalV1(t testing.TB, x *IVF) []byte {
	var b bytes.Buffer
	w := func(v any) {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
	}
	b.WriteString(ivfMagic)
	w(uint16(1))
	w(uint16(0))
	w(uint32(x.dim))
	b.Write([]byte{byte(x.metric), byte(x.sub), byte(x.storage), 0})
	w(uint32(x.Partitions()))
	w(uint32(len(x.ids)))
	w(uint16(x.m))
	w(uint32(x.efc))
	w(x.centroids)
	if x.sq != nil {
		w(x.sq.Min())
		w(x.sq.Max())
	}
	for _, c := range x.PartitionSizes() {
		w(uint32(c))
	}
	for p, pt := range x.parts {
		w(x.ids[x.offsets[p]:x.offsets[p+1]])
		if x.sq != nil {
			b.Write(pt.codes)
		} else {
			w(pt.vecs)
		}
		if x.sub == SubHNSW {
			var g []byte
			if pt.graph != nil {
				g, _ = pt.graph.MarshalBinary()
			}
			w(uint32(len(g)))
			b.Write(g)
		}
	}
	w(crc32c(b.Bytes()))
	return b.Bytes()
}

func TestOpenIVFLazy(t *testing.T) {
	ctx := context.Background()
	s := ivfTestData()
	type cfg struct {
		sub SubIndex
		st  Storage
	}
	for _, c := range []cfg{{SubFlat, StoreFloat32}, {SubFlat, StoreSQ8}, {SubFlat, StorePQ}, {SubHNSW, StoreSQ8}, {SubHNSW, StoreFloat32}} {
		x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Sub: c.sub, Storage: c.st, Partitions: 20, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		b, err := x.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		y, err := UnmarshalIVF(b)
		if err != nil {
			t.Fatal(err)
		}
		r := newSliceReader(b)
		limit := int64(len(b)) / 6
		z, err := OpenIVF(context.Background(), int64(len(b)), r.readAt, &OpenIVFOptions{CacheBytes: limit})
		if err != nil {
			t.Fatal(err)
		}
		// The front matter only (for PQ at dimension 32 it is most of the
		// file: codebooks and ids).
		if opened := r.read.Load(); opened != 10+x.metaEnd()+int64(ivfDirEntry*x.Partitions())+4 || z.LoadedPartitions() != 0 {
			t.Fatalf("%v/%v: open read %d of %d bytes, %d partitions loaded", c.sub, c.st, opened, len(b), z.LoadedPartitions())
		}
		if z.Len() != x.Len() || !slices.Equal(z.IDs(), x.IDs()) || z.Storage() != c.st || z.Sub() != c.sub || z.EncodedSize() != int64(len(b)) {
			t.Fatalf("%v/%v: accessors differ", c.sub, c.st)
		}
		allow := NewAllowList(s.ids[:2500]...)
		few := NewAllowList(s.ids[100:130]...)
		odd := FilterFunc(func(id uint64) bool { return id%2 == 1 })
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for g := 0; g < 4; g++ {
			wg.Go(func() {
				for q := g; q < 40; q += 4 {
					for _, f := range []Filter{nil, allow, few, odd} {
						for _, so := range []*IVFSearchOptions{{NProbes: 3, Ef: 12}, nil, {NProbes: 20}} {
							want := searchIVF(y, s.query(q), 10, so, f)
							got, err := z.Search(ctx, s.query(q), 10, so, f)
							if err != nil {
								errs <- err
								return
							}
							if !slices.Equal(want, got) {
								errs <- fmt.Errorf("%v/%v query %d: %v whole, %v lazy", c.sub, c.st, q, want, got)
								return
							}
						}
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		maxPart := int64(0)
		for p := range x.Partitions() {
			maxPart = max(maxPart, x.parts[p].memBytes())
		}
		if res := z.ResidentBytes(); res > z.lazy.meta+limit+4*maxPart {
			t.Errorf("%v/%v: %d resident bytes, limit %d + metadata %d", c.sub, c.st, res, limit, z.lazy.meta)
		}
		// Re-encoding a lazy index gives the same bytes.
		if b2, err := z.MarshalBinary(); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("%v/%v: lazy re-encoding differs (%v)", c.sub, c.st, err)
		}
	}
}

// A damaged partition fails the searches that need it, naming it, and
// leaves the others usable; a read error is reported and retried.
func TestOpenIVFCorruptPartition(t *testing.T) {
	ctx := context.Background()
	s := ivfTestData()
	for _, st := range []Storage{StoreFloat32, StorePQ, StoreSQ8} {
		x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Storage: st, Partitions: 10, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := x.MarshalBinary()
		probe, err := OpenIVF(context.Background(), int64(len(b)), newSliceReader(b).readAt, nil)
		if err != nil {
			t.Fatal(err)
		}
		const bad = 3
		off, n := probe.lazy.off[bad], probe.lazy.length[bad]
		c := slices.Clone(b)
		c[off+n/2] ^= 0x10
		if _, err := UnmarshalIVF(c); !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), "partition 3") {
			t.Fatalf("%v: UnmarshalIVF: %v", st, err)
		}
		r := newSliceReader(c)
		z, err := OpenIVF(context.Background(), int64(len(c)), r.readAt, &OpenIVFOptions{CacheBytes: 1})
		if err != nil {
			t.Fatal(err)
		}
		all := &IVFSearchOptions{NProbes: 10}
		q := s.query(0)
		if _, err := z.Search(ctx, q, 10, all, nil); !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), "partition 3") {
			t.Fatalf("%v: Search: %v", st, err)
		}
		// A search that does not probe it succeeds.
		var far int
		for far = 0; far < x.Partitions(); far++ {
			if far != bad && x.offsets[far+1] > x.offsets[far] {
				break
			}
		}
		if got, err := z.Search(ctx, q, 3, all, NewAllowList(x.ids[x.offsets[far]])); err != nil || len(got) != 1 {
			t.Fatalf("%v: a search of partition %d only: %v, %v", st, far, got, err)
		}
		// An exact (filtered) search touching it fails too.
		if _, err := z.Search(ctx, q, 3, all, NewAllowList(x.ids[x.offsets[bad]])); !errors.Is(err, lancer.ErrCorrupt) {
			t.Fatalf("%v: filtered Search: %v", st, err)
		}
		// Read errors surface, and a later search retries.
		r2 := newSliceReader(b)
		z2, _ := OpenIVF(context.Background(), int64(len(b)), r2.readAt, nil)
		r2.failAt.Store(off)
		if _, err := z2.Search(ctx, q, 10, all, nil); err == nil || !strings.Contains(err.Error(), "injected") || !strings.Contains(err.Error(), "partition 3") {
			t.Fatalf("%v: read error: %v", st, err)
		}
		r2.failAt.Store(-1)
		if got, err := z2.Search(ctx, q, 10, all, nil); err != nil || !slices.Equal(got, searchIVF(x, q, 10, all, nil)) {
			t.Fatalf("%v: retry: %v", st, err)
		}
	}
}

// Format version 1 files still decode, whole and through OpenIVF.
func TestIVFVersion1(t *testing.T) {
	s := ivfTestData()
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		for _, st := range []Storage{StoreFloat32, StoreSQ8} {
			x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Sub: sub, Storage: st, Partitions: 12})
			if err != nil {
				t.Fatal(err)
			}
			v1 := marshalV1(t, x)
			y, err := UnmarshalIVF(v1)
			if err != nil {
				t.Fatal(err)
			}
			z, err := OpenIVF(context.Background(), int64(len(v1)), newSliceReader(v1).readAt, nil)
			if err != nil {
				t.Fatal(err)
			}
			for q := 0; q < 40; q++ {
				want := searchIVF(x, s.query(q), 10, nil, nil)
				if a, b := searchIVF(y, s.query(q), 10, nil, nil), searchIVF(z, s.query(q), 10, nil, nil); !slices.Equal(a, want) || !slices.Equal(b, want) {
					t.Fatalf("%v/%v query %d differs from version 1", sub, st, q)
				}
			}
			b1, _ := x.MarshalBinary()
			b2, _ := y.MarshalBinary()
			if !bytes.Equal(b1, b2) {
				t.Fatalf("%v/%v: version 1 re-encodes differently", sub, st)
			}
			if _, err := UnmarshalIVF(withCRC(v1[:len(v1)-9])); !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("truncated version 1: %v", err)
			}
		}
	}
}

// FuzzOpenIVF opens arbitrary bytes lazily, as they are and with their
// checksums recomputed, with a one-byte partition cache. It must return an
// index or an error wrapping lancer.ErrCorrupt or lancer.ErrUnsupported,
// never panic; searches of an index it accepts must succeed or fail with
// lancer.ErrCorrupt, and agree with UnmarshalIVF when that accepts the
// bytes.
func FuzzOpenIVF(f *testing.F) {
	for _, sub := range []SubIndex{SubFlat, SubHNSW} {
		for _, st := range []Storage{StoreFloat32, StoreSQ8, StorePQ} {
			if sub == SubHNSW && st == StorePQ {
				continue
			}
			f.Add(smallIVFBytes(f, sub, st))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		try := func(data []byte) {
			r := newSliceReader(data)
			x, err := OpenIVF(context.Background(), int64(len(data)), r.readAt, &OpenIVFOptions{CacheBytes: 1})
			if err != nil {
				if !errors.Is(err, lancer.ErrCorrupt) && !errors.Is(err, lancer.ErrUnsupported) {
					t.Fatalf("error %v is neither corrupt nor unsupported", err)
				}
				return
			}
			q := make([]float32, x.Dim())
			all := &IVFSearchOptions{NProbes: x.Partitions()}
			res, err := x.Search(context.Background(), q, 3, all, nil)
			if err != nil && !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("search error %v is not corrupt", err)
			}
			if _, err := x.Search(context.Background(), q, 3, all, NewAllowList(x.IDs()[:1]...)); err != nil && !errors.Is(err, lancer.ErrCorrupt) {
				t.Fatalf("filtered search error %v is not corrupt", err)
			}
			if y, uerr := UnmarshalIVF(data); uerr == nil {
				if err != nil {
					t.Fatalf("UnmarshalIVF accepts what a lazy search rejects: %v", err)
				}
				if want := searchIVF(y, q, 3, all, nil); !slices.Equal(res, want) {
					t.Fatalf("lazy %v, whole %v", res, want)
				}
			}
		}
		try(data)
		try(withCRC(data))
	})
}

// blockingReader is a sliceReader whose reads, once armed (after the
// front matter is read), wait for release or their ctx, and announce
// themselves.
type blockingReader struct {
	*sliceReader
	armed   atomic.Bool
	started chan struct{}
	release chan struct{}
}

func (r *blockingReader) readAt(ctx context.Context, off, n int64) ([]byte, error) {
	if r.armed.Load() {
		select {
		case r.started <- struct{}{}:
		default:
		}
		select {
		case <-r.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r.sliceReader.readAt(ctx, off, n)
}

// countingPartitions is a PartitionCache that keeps every partition and
// counts the loads.
type countingPartitions struct {
	mu    sync.Mutex
	parts map[int]*Partition
	loads int
}

func (c *countingPartitions) Partition(ctx context.Context, p int, load func(context.Context) (*Partition, error)) (*Partition, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if pt, ok := c.parts[p]; ok {
		return pt, nil
	}
	pt, err := load(ctx)
	if err != nil {
		return nil, err
	}
	c.loads++
	c.parts[p] = pt
	return pt, nil
}

// TestOpenIVFContext: partition reads use the ctx of the search that
// loads them, in the index's own cache and in a caller's: a search whose
// ctx is cancelled while it loads fails with the ctx's error, and another
// search waiting for the same partition loads it and succeeds.
func TestOpenIVFContext(t *testing.T) {
	s := ivfTestData()
	x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Partitions: 6, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := x.MarshalBinary()
	q := s.query(1)
	want := searchIVF(x, q, 10, nil, nil)
	for _, shared := range []bool{false, true} {
		r := &blockingReader{sliceReader: newSliceReader(b), started: make(chan struct{}, 1), release: make(chan struct{})}
		opts := &OpenIVFOptions{}
		var pc *countingPartitions
		if shared {
			pc = &countingPartitions{parts: map[int]*Partition{}}
			opts.Partitions = pc
		}
		z, err := OpenIVF(context.Background(), int64(len(b)), r.readAt, opts)
		if err != nil {
			t.Fatal(err)
		}
		r.armed.Store(true)
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan error, 1)
		go func() {
			_, err := z.Search(ctx, q, 10, nil, nil)
			first <- err
		}()
		<-r.started
		second := make(chan error, 1)
		go func() {
			got, err := z.Search(context.Background(), q, 10, nil, nil)
			if err == nil && !slices.Equal(got, want) {
				err = fmt.Errorf("got %v, want %v", got, want)
			}
			second <- err
		}()
		cancel()
		if err := <-first; !errors.Is(err, context.Canceled) {
			t.Fatalf("shared %t: the cancelled search: %v", shared, err)
		}
		close(r.release)
		if err := <-second; err != nil {
			t.Fatalf("shared %t: the other search: %v", shared, err)
		}
		if shared && (pc.loads == 0 || z.LoadedPartitions() != 0) {
			t.Fatalf("the caller's cache loaded %d partitions, the index's own holds %d", pc.loads, z.LoadedPartitions())
		}
	}
}

// TestIVFWriteToContext: writing out an index opened with OpenIVF loads
// the partitions it does not hold with the caller's ctx: it writes what
// MarshalBinary writes, and a ctx cancelled before, or while a partition
// loads, stops it with an error wrapping context.Canceled.
func TestIVFWriteToContext(t *testing.T) {
	s := ivfTestData()
	x, err := BuildIVF(s.vecs, s.dim, s.ids, &IVFOptions{Partitions: 6, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := x.MarshalBinary()
	open := func(readAt func(ctx context.Context, off, n int64) ([]byte, error)) *IVF {
		t.Helper()
		z, err := OpenIVF(context.Background(), int64(len(b)), readAt, nil)
		if err != nil {
			t.Fatal(err)
		}
		return z
	}

	var w bytes.Buffer
	if n, err := open(newSliceReader(b).readAt).WriteToContext(context.Background(), &w); err != nil || n != int64(len(b)) || !bytes.Equal(w.Bytes(), b) {
		t.Fatalf("WriteToContext: %d bytes, %v; differs from MarshalBinary", n, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := open(newSliceReader(b).readAt).WriteToContext(ctx, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteToContext with a cancelled ctx: %v, want context.Canceled", err)
	}

	r := &blockingReader{sliceReader: newSliceReader(b), started: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(r.release)
	z := open(r.readAt)
	r.armed.Store(true)
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := z.WriteToContext(ctx, io.Discard)
		done <- err
	}()
	<-r.started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("WriteToContext cancelled while a partition loads: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WriteToContext goes on loading a partition after its ctx was cancelled")
	}
}
