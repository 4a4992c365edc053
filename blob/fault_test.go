package blob_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/blob/blobtest"
)

// The wrappers with nothing to inject are stores like any other.
func TestWrappersConform(t *testing.T) {
	var n atomic.Int64
	mem := func(t *testing.T) blob.Store { return blob.NewMemStore(fmt.Sprintf("wrap%d", n.Add(1))) }
	t.Run("Counting", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) blob.Store { return blob.NewCountingStore(mem(t)) })
	})
	t.Run("Retry", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) blob.Store { return blob.WithRetry(mem(t), &blob.RetryOptions{}) })
	})
	t.Run("Fault", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) blob.Store { return blob.NewFaultStore(mem(t), 1) })
	})
	// A third of the requests fail transiently; with retries the contract
	// still holds end to end.
	t.Run("RetryOverFlaky", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) blob.Store {
			// A streamed writer's Close is not retried, so it is spared.
			retried := []blob.Op{blob.OpStat, blob.OpReadRange, blob.OpReadAll, blob.OpList,
				blob.OpWrite, blob.OpCreateIfAbsent, blob.OpNewWriter, blob.OpDelete}
			f := blob.NewFaultStore(mem(t), 7, blob.Fault{Ops: retried, Probability: 0.3})
			return blob.WithRetry(f, &blob.RetryOptions{MaxTries: 30, Backoff: time.Microsecond})
		})
	})
}

func TestFaultNth(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemStore("nth")
	f := blob.NewFaultStore(mem, 1,
		blob.Fault{Ops: []blob.Op{blob.OpWrite}, Key: "data/*", Nth: 2, Times: 2},
		blob.Fault{Ops: []blob.Op{blob.OpReadAll}, Nth: 1, Permanent: true, Err: lancer.ErrNotFound},
	)
	var errs []error
	for i := range 5 {
		errs = append(errs, f.Write(ctx, fmt.Sprintf("data/%d", i), []byte("x")))
	}
	if err := f.Write(ctx, "other", nil); err != nil {
		t.Errorf("a key the pattern does not match failed: %v", err)
	}
	for i, err := range errs {
		failed := i == 1 || i == 2
		if (err != nil) != failed {
			t.Errorf("write %d: err = %v, want failure %t", i, err, failed)
		}
		if failed && (!errors.Is(err, blob.ErrInjected) || !errors.Is(err, blob.ErrTransient) || !blob.IsTransient(err) ||
			!strings.Contains(err.Error(), fmt.Sprintf("data/%d", i))) {
			t.Errorf("write %d: error %v is not a transient injected fault naming the key", i, err)
		}
		if _, serr := mem.Stat(ctx, fmt.Sprintf("data/%d", i)); (serr != nil) != failed {
			t.Errorf("write %d: FailBefore must not reach the store (stat: %v)", i, serr)
		}
	}
	_, err := f.ReadAll(ctx, "data/0")
	if !errors.Is(err, lancer.ErrNotFound) || blob.IsTransient(err) {
		t.Errorf("permanent fault: %v", err)
	}
	if b, err := f.ReadAll(ctx, "data/0"); err != nil || string(b) != "x" {
		t.Errorf("after the fault: %q, %v", b, err)
	}
	if got, want := f.Requests(), 8; got != want {
		t.Errorf("Requests = %d, want %d", got, want)
	}
	if got := f.Injected(); got != 3 {
		t.Errorf("Injected = %d, want 3; log %q", got, f.Log())
	}
}

func TestFaultFailAfterAndCrash(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemStore("after")
	f := blob.NewFaultStore(mem, 1, blob.Fault{Ops: []blob.Op{blob.OpCreateIfAbsent}, Nth: 1, Action: blob.FailAfter})
	if err := f.CreateIfAbsent(ctx, "_versions/1", []byte("m")); !errors.Is(err, blob.ErrInjected) {
		t.Fatalf("err = %v", err)
	}
	if b, err := mem.ReadAll(ctx, "_versions/1"); err != nil || string(b) != "m" {
		t.Fatalf("FailAfter: the request must have landed: %q, %v", b, err)
	}
	// From the 2nd mutation on, everything fails, as after a crash.
	f = blob.NewFaultStore(mem, 1, blob.Fault{Ops: []blob.Op{blob.OpWrite, blob.OpDelete, blob.OpClose}, Nth: 2, Times: -1, Permanent: true})
	if err := f.Write(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := f.Delete(ctx, "a"); !errors.Is(err, blob.ErrInjected) || blob.IsTransient(err) {
			t.Fatalf("crashed store: %v", err)
		}
	}
	w, err := f.NewWriter(ctx, "streamed")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = w.Write([]byte("abc"))
	if err := w.Close(); !errors.Is(err, blob.ErrInjected) {
		t.Fatalf("Close: %v", err)
	}
	if _, err := mem.Stat(ctx, "streamed"); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("a failed Close published the object: %v", err)
	}
}

func TestFaultTruncateAndDelay(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemStore("trunc")
	_ = mem.Write(ctx, "k", []byte("0123456789"))
	f := blob.NewFaultStore(mem, 1,
		blob.Fault{Ops: []blob.Op{blob.OpReadRange}, Nth: 1, Action: blob.Truncate, Drop: 3},
		blob.Fault{Ops: []blob.Op{blob.OpStat}, Action: blob.Delay, Delay: time.Hour},
	)
	if b, err := f.ReadRange(ctx, "k", 2, 5); err != nil || string(b) != "23" {
		t.Fatalf("truncated read = %q, %v", b, err)
	}
	// Through the retry layer a short read is caught and read again.
	r := blob.WithRetry(blob.NewFaultStore(mem, 1, blob.Fault{Ops: []blob.Op{blob.OpReadRange}, Nth: 1, Action: blob.Truncate}),
		&blob.RetryOptions{Backoff: time.Microsecond})
	if b, err := r.ReadRange(ctx, "k", 2, 5); err != nil || string(b) != "23456" {
		t.Fatalf("retried read = %q, %v", b, err)
	}
	// Without retries left, the short read is an error, never data.
	r = blob.WithRetry(blob.NewFaultStore(mem, 1, blob.Fault{Ops: []blob.Op{blob.OpReadRange}, Action: blob.Truncate}),
		&blob.RetryOptions{MaxTries: 2, Backoff: time.Microsecond})
	if b, err := r.ReadRange(ctx, "k", 2, 5); !errors.Is(err, blob.ErrShortRead) || !errors.Is(err, lancer.ErrCorrupt) || b != nil {
		t.Fatalf("persistent short read = %q, %v", b, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := f.Stat(cctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a delayed request must end with its context: %v", err)
	}
}

// TestFaultProbabilitySeeded: the same seed hits the same requests.
func TestFaultProbabilitySeeded(t *testing.T) {
	ctx := context.Background()
	run := func(seed uint64) string {
		f := blob.NewFaultStore(blob.NewMemStore("p"), seed, blob.Fault{Probability: 0.5})
		var b strings.Builder
		for i := range 64 {
			if f.Write(ctx, fmt.Sprintf("k%d", i), nil) != nil {
				b.WriteByte('x')
			} else {
				b.WriteByte('.')
			}
		}
		return b.String()
	}
	a, b, c := run(3), run(3), run(4)
	if a != b {
		t.Fatalf("same seed, different faults:\n%s\n%s", a, b)
	}
	if a == c || !strings.Contains(a, "x") || !strings.Contains(a, ".") {
		t.Fatalf("faults do not look random: %s / %s", a, c)
	}
}

func TestRetry(t *testing.T) {
	ctx := context.Background()
	fast := &blob.RetryOptions{Backoff: time.Microsecond}
	mem := blob.NewMemStore("retry")
	_ = mem.Write(ctx, "k", []byte("v"))

	// Three transient failures, four tries: success.
	f := blob.NewFaultStore(mem, 1, blob.Fault{Nth: 1, Times: 3})
	if b, err := blob.WithRetry(f, fast).ReadAll(ctx, "k"); err != nil || string(b) != "v" || f.Requests() != 4 {
		t.Fatalf("ReadAll = %q, %v after %d requests", b, err, f.Requests())
	}
	// Four: the last error comes back, naming the key.
	f = blob.NewFaultStore(mem, 1, blob.Fault{Nth: 1, Times: 4})
	if _, err := blob.WithRetry(f, fast).ReadAll(ctx, "k"); !errors.Is(err, blob.ErrInjected) || !strings.Contains(err.Error(), `"k"`) || f.Requests() != 4 {
		t.Fatalf("ReadAll: %v after %d requests", err, f.Requests())
	}
	// Permanent errors, missing keys and conflicts are tried once.
	for _, tc := range []struct {
		name string
		f    blob.Fault
		do   func(s blob.Store) error
		want error
	}{
		{"permanent", blob.Fault{Nth: 1, Permanent: true}, func(s blob.Store) error { _, err := s.Stat(ctx, "k"); return err }, blob.ErrInjected},
		{"not found", blob.Fault{Nth: 99}, func(s blob.Store) error { _, err := s.ReadAll(ctx, "missing"); return err }, lancer.ErrNotFound},
		{"conflict", blob.Fault{Nth: 99}, func(s blob.Store) error { return s.CreateIfAbsent(ctx, "k", []byte("other")) }, lancer.ErrConflict},
		{"bad range", blob.Fault{Nth: 99}, func(s blob.Store) error { _, err := s.ReadRange(ctx, "k", 0, 9); return err }, lancer.ErrInvalidArgument},
	} {
		f := blob.NewFaultStore(mem, 1, tc.f)
		if err := tc.do(blob.WithRetry(f, fast)); !errors.Is(err, tc.want) || f.Requests() != 1 {
			t.Errorf("%s: %v after %d requests, want %v after 1", tc.name, err, f.Requests(), tc.want)
		}
	}
	// A CreateIfAbsent whose response was lost: the retry finds its own
	// bytes and succeeds; someone else's bytes are a conflict.
	f = blob.NewFaultStore(mem, 1, blob.Fault{Ops: []blob.Op{blob.OpCreateIfAbsent}, Nth: 1, Action: blob.FailAfter})
	if err := blob.WithRetry(f, fast).CreateIfAbsent(ctx, "m1", []byte("mine")); err != nil {
		t.Fatalf("ambiguous create: %v", err)
	}
	_ = mem.Write(ctx, "m2", []byte("theirs"))
	f = blob.NewFaultStore(mem, 1, blob.Fault{Ops: []blob.Op{blob.OpCreateIfAbsent}, Nth: 1})
	if err := blob.WithRetry(f, fast).CreateIfAbsent(ctx, "m2", []byte("mine")); !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("create over another writer's object: %v", err)
	}
	// A lost answer, then a conflict, then a failed read-back: the outcome
	// is unknown, which must not be reported as a conflict (that means
	// someone else won, and a committer would apply its change again).
	f = blob.NewFaultStore(mem, 1,
		blob.Fault{Ops: []blob.Op{blob.OpCreateIfAbsent}, Nth: 1, Action: blob.FailAfter},
		blob.Fault{Ops: []blob.Op{blob.OpReadAll}, Nth: 1, Times: -1})
	if err := blob.WithRetry(f, fast).CreateIfAbsent(ctx, "m3", []byte("mine")); err == nil ||
		errors.Is(err, lancer.ErrConflict) || !errors.Is(err, blob.ErrTransient) {
		t.Fatalf("ambiguous create with a failed read-back: %v; want an unknown outcome, not a conflict", err)
	}
	// Cancelling the context stops the backoff.
	f = blob.NewFaultStore(mem, 1, blob.Fault{})
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := blob.WithRetry(f, &blob.RetryOptions{MaxTries: 100, Backoff: time.Second}).Stat(cctx, "k"); err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("cancelled retry: %v after %v", err, time.Since(start))
	}
}

// TestRetryListResumes: a listing that fails part way goes on after the
// last key it yielded, without repeating or skipping keys.
func TestRetryListResumes(t *testing.T) {
	ctx := context.Background()
	mem := blob.NewMemStore("list")
	var want []string
	for i := range 20 {
		k := fmt.Sprintf("d/%02d", i)
		want = append(want, k)
		_ = mem.Write(ctx, k, nil)
	}
	// breakList fails the listing after yielding 'after' keys, once.
	broken := &breakList{Store: mem, after: 7}
	var got []string
	for info, err := range blob.WithRetry(broken, &blob.RetryOptions{Backoff: time.Microsecond}).List(ctx, "d/") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, info.Key)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("List = %v", got)
	}
}

type breakList struct {
	blob.Store
	after int
	done  bool
}

func (s *breakList) List(ctx context.Context, prefix string) iter.Seq2[blob.ObjectInfo, error] {
	return func(yield func(blob.ObjectInfo, error) bool) {
		n := 0
		for info, err := range s.Store.List(ctx, prefix) {
			if !s.done && n == s.after {
				s.done = true
				yield(blob.ObjectInfo{}, fmt.Errorf("list cut: %w", blob.ErrTransient))
				return
			}
			n++
			if !yield(info, err) {
				return
			}
		}
	}
}

func TestCounting(t *testing.T) {
	ctx := context.Background()
	c := blob.NewCountingStore(blob.NewMemStore("count"))
	_ = c.Write(ctx, "a", []byte("hello"))
	_ = c.CreateIfAbsent(ctx, "b", []byte("xy"))
	_ = c.CreateIfAbsent(ctx, "b", []byte("xy")) // a conflict is a request too
	w, _ := c.NewWriter(ctx, "s")
	_, _ = w.Write([]byte("abc"))
	_, _ = w.Write([]byte("de"))
	_ = w.Close()
	before := c.Snapshot()
	_, _ = c.ReadRange(ctx, "a", 1, 3)
	_, _ = c.ReadAll(ctx, "s")
	_, _ = c.Stat(ctx, "a")
	for range c.List(ctx, "") {
	}
	_ = c.Delete(ctx, "a")
	_, _ = c.ReadAll(ctx, "a") // missing: counted, no bytes
	s := c.Snapshot()
	want := blob.Counts{
		Stat: blob.OpStats{Requests: 1}, ReadRange: blob.OpStats{Requests: 1, Bytes: 3},
		ReadAll: blob.OpStats{Requests: 2, Bytes: 5}, List: blob.OpStats{Requests: 1},
		Write: blob.OpStats{Requests: 1, Bytes: 5}, CreateIfAbsent: blob.OpStats{Requests: 2, Bytes: 4},
		NewWriter: blob.OpStats{Requests: 1, Bytes: 5}, Delete: blob.OpStats{Requests: 1},
	}
	if s != want {
		t.Fatalf("Snapshot = %+v\nwant       %+v", s, want)
	}
	if s.Requests() != 10 || s.ReadRequests() != 5 || s.BytesRead() != 8 || s.BytesWritten() != 14 {
		t.Fatalf("totals: %d requests, %d reads, %d read, %d written", s.Requests(), s.ReadRequests(), s.BytesRead(), s.BytesWritten())
	}
	if d := s.Sub(before); d.Write.Requests != 0 || d.ReadAll.Requests != 2 || d.Requests() != 6 {
		t.Fatalf("Sub = %v", d)
	}
	if str := s.String(); !strings.Contains(str, "ReadAll 2 (5 B)") || !strings.Contains(str, "total 10 requests") {
		t.Fatalf("String = %s", str)
	}
	c.Reset()
	if c.Snapshot() != (blob.Counts{}) {
		t.Fatal("Reset left counts")
	}
}

// TestCountingLog: once started, the log holds every request in order,
// with a ReadRange's range, and Reset empties it.
func TestCountingLog(t *testing.T) {
	ctx := context.Background()
	c := blob.NewCountingStore(blob.NewMemStore("log"))
	_ = c.Write(ctx, "before", []byte("x"))
	if log := c.Log(); len(log) != 0 {
		t.Fatalf("logged %v before StartLog", log)
	}
	c.StartLog()
	_ = c.Write(ctx, "a", []byte("hello"))
	_ = c.CreateIfAbsent(ctx, "b", []byte("xy"))
	w, _ := c.NewWriter(ctx, "s")
	_, _ = w.Write([]byte("abc"))
	_ = w.Close()
	_, _ = c.ReadRange(ctx, "a", 1, 3)
	_, _ = c.ReadAll(ctx, "s")
	_, _ = c.Stat(ctx, "a")
	for range c.List(ctx, "p/") {
	}
	_ = c.Delete(ctx, "a")
	want := []blob.Request{
		{Op: blob.OpWrite, Key: "a"}, {Op: blob.OpCreateIfAbsent, Key: "b"}, {Op: blob.OpNewWriter, Key: "s"},
		{Op: blob.OpReadRange, Key: "a", Offset: 1, Length: 3}, {Op: blob.OpReadAll, Key: "s"},
		{Op: blob.OpStat, Key: "a"}, {Op: blob.OpList, Key: "p/"}, {Op: blob.OpDelete, Key: "a"},
	}
	if got := c.Log(); !slices.Equal(got, want) {
		t.Fatalf("Log = %+v\nwant  %+v", got, want)
	}
	c.Reset()
	if log := c.Log(); len(log) != 0 {
		t.Fatalf("Reset left %v", log)
	}
	_, _ = c.Stat(ctx, "a")
	if log := c.Log(); len(log) != 1 {
		t.Fatalf("after Reset, logged %v, want the one Stat", log)
	}
}

// TestCoalesceRanges checks merging against a direct computation.
func TestCoalesceRanges(t *testing.T) {
	for _, tc := range []struct {
		in       []blob.Range
		gap, cap int64
		want     []blob.Range
	}{
		{nil, 10, 0, nil},
		{[]blob.Range{{0, 5}, {5, 5}}, -1, 0, []blob.Range{{0, 10}}},
		{[]blob.Range{{0, 5}, {6, 5}}, -1, 0, []blob.Range{{0, 5}, {6, 5}}},
		{[]blob.Range{{20, 5}, {0, 5}, {10, 5}}, 5, 0, []blob.Range{{0, 25}}},
		{[]blob.Range{{20, 5}, {0, 5}, {10, 5}}, 4, 0, []blob.Range{{0, 5}, {10, 5}, {20, 5}}},
		{[]blob.Range{{0, 5}, {10, 5}, {20, 5}}, 5, 15, []blob.Range{{0, 15}, {20, 5}}},
		{[]blob.Range{{0, 100}, {10, 5}, {50, 80}}, 0, 20, []blob.Range{{0, 130}}}, // overlaps always merge
		{[]blob.Range{{3, 0}, {7, 2}}, 100, 0, []blob.Range{{7, 2}}},
	} {
		if got := blob.CoalesceRanges(tc.in, tc.gap, tc.cap); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("CoalesceRanges(%v, %d, %d) = %v, want %v", tc.in, tc.gap, tc.cap, got, tc.want)
		}
	}
}

// TestReadRanges reads random range sets and checks every slice, the
// number of requests, and that no slice can overwrite its neighbour.
func TestReadRanges(t *testing.T) {
	ctx := context.Background()
	data := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(11, 12))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	mem := blob.NewMemStore("rr")
	_ = mem.Write(ctx, "f", data)
	for round := range 200 {
		n := rng.IntN(40)
		ranges := make([]blob.Range, n)
		for i := range ranges {
			off := rng.Int64N(int64(len(data)))
			ranges[i] = blob.Range{Offset: off, Length: rng.Int64N(min(int64(len(data))-off, 20000) + 1)}
		}
		opts := &blob.ReadRangesOptions{MaxGap: rng.Int64N(100000) - 1000, MaxCoalesced: rng.Int64N(300000), Parallelism: 1 + rng.IntN(8)}
		if rng.IntN(2) == 0 {
			opts.RoundTripBytes = rng.Int64N(1 << 20)
		}
		c := blob.NewCountingStore(mem)
		got, err := blob.ReadRanges(ctx, c, "f", ranges, opts)
		if err != nil {
			t.Fatal(err)
		}
		gap := opts.MaxGap
		if gap == 0 {
			gap = blob.DefaultCoalesceGap
		}
		maxC := opts.MaxCoalesced
		if maxC == 0 {
			maxC = blob.DefaultMaxCoalesced
		}
		// Trading bytes for rounds only ever merges more.
		want := int64(len(blob.CoalesceRanges(ranges, gap, maxC)))
		if got := c.Snapshot().ReadRange.Requests; got != want && (opts.RoundTripBytes == 0 || got > want || want <= int64(opts.Parallelism)) {
			t.Fatalf("round %d: %d requests, want %d", round, got, want)
		}
		for i, r := range ranges {
			if !bytes.Equal(got[i], data[r.Offset:r.End()]) || int64(cap(got[i])) != r.Length {
				t.Fatalf("round %d: range %d %v: wrong bytes or capacity %d", round, i, r, cap(got[i]))
			}
		}
	}
	// A failed request fails the call; a short one too.
	f := blob.NewFaultStore(mem, 1, blob.Fault{Nth: 2, Permanent: true})
	ranges := []blob.Range{{0, 10}, {500000, 10}, {900000, 10}}
	if _, err := blob.ReadRanges(ctx, f, "f", ranges, &blob.ReadRangesOptions{Parallelism: 2}); !errors.Is(err, blob.ErrInjected) {
		t.Fatalf("failed request: %v", err)
	}
	f = blob.NewFaultStore(mem, 1, blob.Fault{Nth: 3, Action: blob.Truncate})
	if _, err := blob.ReadRanges(ctx, f, "f", ranges, nil); !errors.Is(err, blob.ErrShortRead) || !strings.Contains(err.Error(), `"f"`) {
		t.Fatalf("short request: %v", err)
	}
	if _, err := blob.ReadRanges(ctx, mem, "f", []blob.Range{{-1, 2}}, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Fatalf("negative offset: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := blob.ReadRanges(cctx, mem, "f", ranges, &blob.ReadRangesOptions{MaxGap: -1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
