package blob

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"path"
	"slices"
	"sync"
	"time"
)

// ErrInjected is wrapped by every error a FaultStore injects, so a test can
// tell injected failures from real ones.
var ErrInjected = errors.New("blob: injected fault")

// FaultAction is what a Fault does to the request it hits.
type FaultAction uint8

const (
	// FailBefore fails the request without passing it on: nothing
	// happened in the store.
	FailBefore FaultAction = iota
	// FailAfter passes the request on and then reports failure anyway,
	// as when a response is lost after the store acted on it: a Write or
	// CreateIfAbsent landed, yet the caller sees an error.
	FailAfter
	// Delay waits Fault.Delay (or until the context ends), then passes the
	// request on.
	Delay
	// Truncate passes a read on and returns its bytes short by
	// Fault.Drop (at least one byte of a non-empty result) with no error,
	// like a backend or proxy that breaks the contract; on other ops it
	// does nothing. Readers must notice, not decode misplaced bytes.
	Truncate
)

// Fault is one rule of a FaultStore. A request matches when its Op is in
// Ops (any Op if Ops is empty) and its key matches Key. Which matching
// requests it hits is chosen by Nth and Times, or by Probability.
type Fault struct {
	// Ops are the request kinds the fault applies to; empty means all.
	// OpClose is a streamed writer's Close (publishing the object); a
	// FailBefore there aborts the upload.
	Ops []Op
	// Key is a path.Match pattern the key must match ("data/*.lance",
	// "_versions/*"); "" matches every key. For List the key is the
	// prefix.
	Key string
	// Nth hits the Nth matching request (counting from 1) and the Times-1
	// after it. 0 with Probability 0 hits every matching request.
	Nth int
	// Times is how many matching requests from the Nth on are hit.
	// Default 1; negative means every one from the Nth on (a store that
	// stays down, or a process that died).
	Times int
	// Probability, if above 0, hits each matching request with this
	// probability instead, drawn from the FaultStore's seeded generator.
	Probability float64
	// Action is what happens to a hit request. Default FailBefore.
	Action FaultAction
	// Permanent makes the injected error permanent; by default it wraps
	// ErrTransient, so retrying layers try again.
	Permanent bool
	// Err, if set, is wrapped by the injected error in place of the
	// ErrTransient marker (e.g. lancer.ErrNotFound).
	Err error
	// Delay is how long a Delay action waits.
	Delay time.Duration
	// Drop is how many bytes a Truncate action drops (default 1, at most
	// all of them).
	Drop int
}

func (f *Fault) matches(op Op, key string) bool {
	if len(f.Ops) > 0 && !slices.Contains(f.Ops, op) {
		return false
	}
	if f.Key != "" {
		if ok, _ := path.Match(f.Key, key); !ok {
			return false
		}
	}
	return true
}

// FaultStore wraps a Store and injects faults into chosen requests:
// failures (transient or permanent, before or after the request reaches
// the store), delays and truncated reads. It is for tests: of retry
// layers, and of the commit protocol, whose every request can be failed in
// turn (Requests after a clean run gives how many there are). It is safe
// for concurrent use; with concurrent requests, which one is "the Nth"
// depends on scheduling.
type FaultStore struct {
	inner Store

	mu       sync.Mutex
	faults   []Fault
	seen     []int // matching requests so far, per fault
	rng      *rand.Rand
	requests int
	injected int
	log      []string
}

// NewFaultStore returns a FaultStore over s applying faults. seed seeds the
// generator Probability draws from, so a run can be repeated.
func NewFaultStore(s Store, seed uint64, faults ...Fault) *FaultStore {
	f := &FaultStore{inner: s, rng: rand.New(rand.NewPCG(seed, 0x5eed))}
	f.SetFaults(faults...)
	return f
}

// SetFaults replaces the faults and restarts their counts (the request log
// and counters are kept).
func (f *FaultStore) SetFaults(faults ...Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = slices.Clone(faults)
	f.seen = make([]int, len(faults))
}

// Unwrap returns the wrapped store.
func (f *FaultStore) Unwrap() Store { return f.inner }

// Requests returns how many requests came through, of every kind (a
// streamed writer's Close counts as one).
func (f *FaultStore) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// Injected returns how many requests a fault hit.
func (f *FaultStore) Injected() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected
}

// Log returns one line per request, "3 CreateIfAbsent _versions/2.manifest",
// with " <- fault" appended to the ones a fault hit.
func (f *FaultStore) Log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.log)
}

// hit counts the request and returns the fault that hits it, if any (the
// first one in order whose turn it is).
func (f *FaultStore) hit(op Op, key string) *Fault {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	line := fmt.Sprintf("%d %s %s", f.requests, op, key)
	var got *Fault
	for i := range f.faults {
		ft := &f.faults[i]
		if !ft.matches(op, key) {
			continue
		}
		f.seen[i]++
		n := f.seen[i]
		var on bool
		switch {
		case ft.Probability > 0:
			on = f.rng.Float64() < ft.Probability
		case ft.Nth <= 0:
			on = true
		default:
			times := ft.Times
			if times == 0 {
				times = 1
			}
			on = n >= ft.Nth && (times < 0 || n < ft.Nth+times)
		}
		if on && got == nil {
			got = ft
		}
	}
	if got != nil && (got.Action == FailBefore || got.Action == FailAfter || got.Action == Delay ||
		got.Action == Truncate && (op == OpReadRange || op == OpReadAll)) {
		f.injected++
		line += " <- fault"
	}
	f.log = append(f.log, line)
	return got
}

// errorFor is the error a failing fault injects.
func (ft *Fault) errorFor(op Op, key string) error {
	kind := "transient"
	cause := ErrTransient
	if ft.Permanent {
		kind, cause = "permanent", nil
	}
	if ft.Err != nil {
		cause = ft.Err
	}
	if cause == nil {
		return fmt.Errorf("blob: %s %q: %s %w", op, key, kind, ErrInjected)
	}
	return fmt.Errorf("blob: %s %q: %s %w: %w", op, key, kind, ErrInjected, cause)
}

// before applies ft ahead of the request: it returns the error of a
// FailBefore, or waits out a Delay.
func (ft *Fault) before(ctx context.Context, op Op, key string) error {
	if ft == nil {
		return nil
	}
	switch ft.Action {
	case FailBefore:
		return ft.errorFor(op, key)
	case Delay:
		t := time.NewTimer(ft.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return fmt.Errorf("blob: %s %q: %w", op, key, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

// after applies ft to the outcome err of the request.
func (ft *Fault) after(op Op, key string, err error) error {
	if ft != nil && ft.Action == FailAfter && err == nil {
		return ft.errorFor(op, key)
	}
	return err
}

// truncate applies a Truncate fault to read bytes b.
func (ft *Fault) truncate(b []byte) []byte {
	if ft == nil || ft.Action != Truncate || len(b) == 0 {
		return b
	}
	return b[:len(b)-min(max(ft.Drop, 1), len(b))]
}

// Stat implements Store.
func (f *FaultStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	ft := f.hit(OpStat, key)
	if err := ft.before(ctx, OpStat, key); err != nil {
		return ObjectInfo{}, err
	}
	info, err := f.inner.Stat(ctx, key)
	if err = ft.after(OpStat, key, err); err != nil {
		return ObjectInfo{}, err
	}
	return info, nil
}

// ReadRange implements Store.
func (f *FaultStore) ReadRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	ft := f.hit(OpReadRange, key)
	if err := ft.before(ctx, OpReadRange, key); err != nil {
		return nil, err
	}
	b, err := f.inner.ReadRange(ctx, key, offset, length)
	if err = ft.after(OpReadRange, key, err); err != nil {
		return nil, err
	}
	return ft.truncate(b), nil
}

// ReadAll implements Store.
func (f *FaultStore) ReadAll(ctx context.Context, key string) ([]byte, error) {
	ft := f.hit(OpReadAll, key)
	if err := ft.before(ctx, OpReadAll, key); err != nil {
		return nil, err
	}
	b, err := f.inner.ReadAll(ctx, key)
	if err = ft.after(OpReadAll, key, err); err != nil {
		return nil, err
	}
	return ft.truncate(b), nil
}

// List implements Store. A failing fault fails the listing before its first
// key (FailBefore) or after its last (FailAfter).
func (f *FaultStore) List(ctx context.Context, prefix string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		ft := f.hit(OpList, prefix)
		if err := ft.before(ctx, OpList, prefix); err != nil {
			yield(ObjectInfo{}, err)
			return
		}
		for info, err := range f.inner.List(ctx, prefix) {
			if !yield(info, err) || err != nil {
				return
			}
		}
		if err := ft.after(OpList, prefix, nil); err != nil {
			yield(ObjectInfo{}, err)
		}
	}
}

// Write implements Store.
func (f *FaultStore) Write(ctx context.Context, key string, data []byte) error {
	ft := f.hit(OpWrite, key)
	if err := ft.before(ctx, OpWrite, key); err != nil {
		return err
	}
	return ft.after(OpWrite, key, f.inner.Write(ctx, key, data))
}

// CreateIfAbsent implements Store.
func (f *FaultStore) CreateIfAbsent(ctx context.Context, key string, data []byte) error {
	ft := f.hit(OpCreateIfAbsent, key)
	if err := ft.before(ctx, OpCreateIfAbsent, key); err != nil {
		return err
	}
	return ft.after(OpCreateIfAbsent, key, f.inner.CreateIfAbsent(ctx, key, data))
}

// NewWriter implements Store. The writer's Close is a request of its own
// (OpClose); its Writes are not requests.
func (f *FaultStore) NewWriter(ctx context.Context, key string) (ObjectWriter, error) {
	ft := f.hit(OpNewWriter, key)
	if err := ft.before(ctx, OpNewWriter, key); err != nil {
		return nil, err
	}
	w, err := f.inner.NewWriter(ctx, key)
	if err != nil {
		return nil, err
	}
	if err := ft.after(OpNewWriter, key, nil); err != nil {
		_ = w.Abort()
		return nil, err
	}
	// Close takes no ctx, so the fault on OpClose is applied by a closure
	// over NewWriter's: a Delay there still ends with ctx.
	closeFault := func() (*Fault, error) {
		ft := f.hit(OpClose, key)
		return ft, ft.before(ctx, OpClose, key)
	}
	return &faultWriter{ObjectWriter: w, closeFault: closeFault, key: key}, nil
}

type faultWriter struct {
	ObjectWriter
	closeFault func() (*Fault, error) // counts the Close and applies its fault ahead of it
	key        string
}

func (w *faultWriter) Close() error {
	ft, err := w.closeFault()
	if err != nil {
		// The upload failed: nothing may be published.
		_ = w.ObjectWriter.Abort()
		return err
	}
	return ft.after(OpClose, w.key, w.ObjectWriter.Close())
}

// Delete implements Store.
func (f *FaultStore) Delete(ctx context.Context, key string) error {
	ft := f.hit(OpDelete, key)
	if err := ft.before(ctx, OpDelete, key); err != nil {
		return err
	}
	return ft.after(OpDelete, key, f.inner.Delete(ctx, key))
}

// URI implements Store.
func (f *FaultStore) URI() string { return f.inner.URI() }
