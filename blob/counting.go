package blob

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
)

// Op names one kind of Store request, for the wrappers that count or
// inject faults by kind.
type Op uint8

// The Store methods, one Op each. OpClose is an ObjectWriter's Close: the
// moment a streamed object is published (for a cloud store, the upload or
// its completion), so fault injection can fail it on its own.
const (
	OpStat Op = iota
	OpReadRange
	OpReadAll
	OpList
	OpWrite
	OpCreateIfAbsent
	OpNewWriter
	OpDelete
	OpClose
	numOps
)

var opNames = [numOps]string{"Stat", "ReadRange", "ReadAll", "List", "Write", "CreateIfAbsent", "NewWriter", "Delete", "Close"}

// String returns the method name ("ReadRange").
func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// IsRead reports whether o only reads (Stat, ReadRange, ReadAll, List).
func (o Op) IsRead() bool { return o <= OpList }

// OpStats is what a CountingStore counted for one Op.
type OpStats struct {
	// Requests is the number of calls.
	Requests int64
	// Bytes is the payload moved: bytes returned by reads, bytes given to
	// writes (for NewWriter, the bytes written through the writer). Stat,
	// List and Delete move none.
	Bytes int64
}

// Counts is a snapshot of a CountingStore: requests and bytes per Op.
type Counts struct {
	Stat, ReadRange, ReadAll, List, Write, CreateIfAbsent, NewWriter, Delete OpStats
}

// op returns the field for o (OpClose is counted under NewWriter).
func (c *Counts) op(o Op) *OpStats {
	switch o {
	case OpStat:
		return &c.Stat
	case OpReadRange:
		return &c.ReadRange
	case OpReadAll:
		return &c.ReadAll
	case OpList:
		return &c.List
	case OpWrite:
		return &c.Write
	case OpCreateIfAbsent:
		return &c.CreateIfAbsent
	case OpNewWriter, OpClose:
		return &c.NewWriter
	case OpDelete:
		return &c.Delete
	}
	return nil
}

// Requests is the total number of requests of every kind.
func (c Counts) Requests() int64 {
	return c.Stat.Requests + c.ReadRange.Requests + c.ReadAll.Requests + c.List.Requests +
		c.Write.Requests + c.CreateIfAbsent.Requests + c.NewWriter.Requests + c.Delete.Requests
}

// ReadRequests is the number of Stat, ReadRange, ReadAll and List calls.
func (c Counts) ReadRequests() int64 {
	return c.Stat.Requests + c.ReadRange.Requests + c.ReadAll.Requests + c.List.Requests
}

// BytesRead is the number of bytes ReadRange and ReadAll returned.
func (c Counts) BytesRead() int64 { return c.ReadRange.Bytes + c.ReadAll.Bytes }

// BytesWritten is the number of bytes given to Write, CreateIfAbsent and
// streamed writers.
func (c Counts) BytesWritten() int64 {
	return c.Write.Bytes + c.CreateIfAbsent.Bytes + c.NewWriter.Bytes
}

// Sub returns c minus before, the traffic between two snapshots.
func (c Counts) Sub(before Counts) Counts {
	for o := range numOps {
		if o == OpClose {
			continue
		}
		a, b := c.op(o), before.op(o)
		a.Requests -= b.Requests
		a.Bytes -= b.Bytes
	}
	return c
}

// String lists the non-zero counters and the totals, e.g.
// "ReadRange 12 (1048576 B), Stat 1; total 13 requests, 1048576 B read, 0 B written".
func (c Counts) String() string {
	var parts []string
	for o := range numOps {
		if o == OpClose {
			continue
		}
		s := c.op(o)
		if s.Requests == 0 {
			continue
		}
		p := fmt.Sprintf("%s %d", o, s.Requests)
		if s.Bytes > 0 {
			p += fmt.Sprintf(" (%d B)", s.Bytes)
		}
		parts = append(parts, p)
	}
	return fmt.Sprintf("%s; total %d requests, %d B read, %d B written",
		strings.Join(parts, ", "), c.Requests(), c.BytesRead(), c.BytesWritten())
}

// CountingStore wraps a Store and counts its requests and bytes by Op; the
// benchmarks report them (an object store bills, and waits, per request).
// Every call counts, failed ones included, as each would have been a
// request on the wire. A List counts as one request however many keys it
// yields (backends page listings differently). It is safe for concurrent
// use; Snapshot and Reset may run while requests are in flight.
//
// For tests that check which objects and ranges a call touched, StartLog
// also makes it log every request.
type CountingStore struct {
	inner    Store
	requests [numOps]atomic.Int64
	bytes    [numOps]atomic.Int64

	logging atomic.Bool
	mu      sync.Mutex
	log     []Request
}

// Request is one request a CountingStore logged.
type Request struct {
	Op Op
	// Key is the object's key; for List, the prefix.
	Key string
	// Offset and Length are a ReadRange's arguments.
	Offset, Length int64
}

// NewCountingStore returns a CountingStore over s with all counters zero.
func NewCountingStore(s Store) *CountingStore { return &CountingStore{inner: s} }

// Counting is NewCountingStore.
func Counting(s Store) *CountingStore { return NewCountingStore(s) }

// Unwrap returns the wrapped store.
func (c *CountingStore) Unwrap() Store { return c.inner }

// Snapshot returns the counters as they are now.
func (c *CountingStore) Snapshot() Counts {
	var out Counts
	for o := range numOps {
		s := out.op(o)
		s.Requests += c.requests[o].Load()
		s.Bytes += c.bytes[o].Load()
	}
	return out
}

// Reset zeroes the counters and empties the log.
func (c *CountingStore) Reset() {
	for o := range numOps {
		c.requests[o].Store(0)
		c.bytes[o].Store(0)
	}
	c.mu.Lock()
	c.log = nil
	c.mu.Unlock()
}

// StartLog makes c log every request from now on, in the order they are
// made (a streamed object once, as its NewWriter). The log grows with
// every request, so it is off until asked for.
func (c *CountingStore) StartLog() { c.logging.Store(true) }

// Log returns the requests logged since StartLog or the last Reset.
func (c *CountingStore) Log() []Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Request(nil), c.log...)
}

func (c *CountingStore) note(r Request) {
	if c.logging.Load() {
		c.mu.Lock()
		c.log = append(c.log, r)
		c.mu.Unlock()
	}
}

func (c *CountingStore) count(o Op, n int) {
	c.requests[o].Add(1)
	c.bytes[o].Add(int64(n))
}

// Stat implements Store.
func (c *CountingStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	c.note(Request{Op: OpStat, Key: key})
	c.count(OpStat, 0)
	return c.inner.Stat(ctx, key)
}

// ReadRange implements Store.
func (c *CountingStore) ReadRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	c.note(Request{Op: OpReadRange, Key: key, Offset: offset, Length: length})
	b, err := c.inner.ReadRange(ctx, key, offset, length)
	c.count(OpReadRange, len(b))
	return b, err
}

// ReadAll implements Store.
func (c *CountingStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	c.note(Request{Op: OpReadAll, Key: key})
	b, err := c.inner.ReadAll(ctx, key)
	c.count(OpReadAll, len(b))
	return b, err
}

// List implements Store.
func (c *CountingStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		c.count(OpList, 0)
		c.note(Request{Op: OpList, Key: prefix})
		for info, err := range c.inner.List(ctx, prefix) {
			if !yield(info, err) {
				return
			}
		}
	}
}

// Write implements Store.
func (c *CountingStore) Write(ctx context.Context, key string, data []byte) error {
	c.count(OpWrite, len(data))
	c.note(Request{Op: OpWrite, Key: key})
	return c.inner.Write(ctx, key, data)
}

// CreateIfAbsent implements Store.
func (c *CountingStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	c.count(OpCreateIfAbsent, len(data))
	c.note(Request{Op: OpCreateIfAbsent, Key: key})
	return c.inner.CreateIfAbsent(ctx, key, data)
}

// NewWriter implements Store. The writer's bytes count under NewWriter.
func (c *CountingStore) NewWriter(ctx context.Context, key string) (ObjectWriter, error) {
	c.count(OpNewWriter, 0)
	c.note(Request{Op: OpNewWriter, Key: key})
	w, err := c.inner.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	return &countingWriter{ObjectWriter: w, c: c}, nil
}

type countingWriter struct {
	ObjectWriter
	c *CountingStore
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ObjectWriter.Write(p)
	w.c.bytes[OpNewWriter].Add(int64(n))
	return n, err
}

// Delete implements Store.
func (c *CountingStore) Delete(ctx context.Context, key string) error {
	c.count(OpDelete, 0)
	c.note(Request{Op: OpDelete, Key: key})
	return c.inner.Delete(ctx, key)
}

// URI implements Store.
func (c *CountingStore) URI() string { return c.inner.URI() }
