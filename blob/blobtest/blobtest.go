// Package blobtest is a conformance suite for blob.Store implementations.
// Every backend (local disk, memory, gocloud buckets over S3 and others) runs
// the same tests:
//
//	func TestMyStore(t *testing.T) {
//		blobtest.Run(t, func(t *testing.T) blob.Store { return newMyStore(t) })
//	}
//
// newStore is called once per subtest and must return an empty store.
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
)

// Options tunes Run for backends with known limits.
type Options struct {
	// Racers is how many goroutines race to create one key (default 8).
	Racers int
}

// Run tests the blob.Store contract on stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store) {
	RunWithOptions(t, newStore, Options{})
}

// RunWithOptions is Run with options.
func RunWithOptions(t *testing.T, newStore func(t *testing.T) blob.Store, opts Options) {
	if opts.Racers <= 0 {
		opts.Racers = 8
	}
	ctx := context.Background()

	t.Run("Missing", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Stat(ctx, "nope"); !errors.Is(err, lancer.ErrNotFound) {
			t.Errorf("Stat missing: %v", err)
		}
		if _, err := s.ReadAll(ctx, "nope/x"); !errors.Is(err, lancer.ErrNotFound) {
			t.Errorf("ReadAll missing: %v", err)
		}
		if _, err := s.ReadRange(ctx, "nope/x", 0, 1); !errors.Is(err, lancer.ErrNotFound) {
			t.Errorf("ReadRange missing: %v", err)
		}
		if err := s.Delete(ctx, "nope"); err != nil {
			t.Errorf("Delete missing: %v", err)
		}
	})

	t.Run("BadKeys", func(t *testing.T) {
		s := newStore(t)
		for _, k := range []string{"", "/abs", "a/../b", "a//b", "dir/", "./x", "a/./b"} {
			if err := s.Write(ctx, k, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("Write(%q) err = %v", k, err)
			}
			if err := s.CreateIfAbsent(ctx, k, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("CreateIfAbsent(%q) err = %v", k, err)
			}
			if _, err := s.ReadAll(ctx, k); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("ReadAll(%q) err = %v", k, err)
			}
		}
	})

	t.Run("WriteReadRange", func(t *testing.T) {
		s := newStore(t)
		if err := s.Write(ctx, "d/a.bin", []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadAll(ctx, "d/a.bin"); err != nil || string(got) != "0123456789" {
			t.Fatalf("ReadAll = %q, %v", got, err)
		}
		for _, r := range []struct {
			off, n int64
			want   string
		}{{3, 4, "3456"}, {0, 10, "0123456789"}, {9, 1, "9"}, {0, 1, "0"}, {10, 0, ""}, {4, 0, ""}} {
			got, err := s.ReadRange(ctx, "d/a.bin", r.off, r.n)
			if err != nil || string(got) != r.want || int64(len(got)) != r.n {
				t.Errorf("ReadRange(%d, %d) = %q, %v; want %q", r.off, r.n, got, err, r.want)
			}
		}
		for _, r := range [][2]int64{{8, 3}, {-1, 2}, {11, 0}, {0, -1}, {10, 1}, {20, 5}, {0, 11}} {
			if got, err := s.ReadRange(ctx, "d/a.bin", r[0], r[1]); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("ReadRange(%d, %d) = %q, %v; want ErrInvalidArgument", r[0], r[1], got, err)
			}
		}
		// An empty object.
		if err := s.Write(ctx, "d/empty", nil); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadAll(ctx, "d/empty"); err != nil || len(got) != 0 {
			t.Errorf("ReadAll(empty) = %q, %v", got, err)
		}
		if got, err := s.ReadRange(ctx, "d/empty", 0, 0); err != nil || len(got) != 0 {
			t.Errorf("ReadRange(empty, 0, 0) = %q, %v", got, err)
		}
		if _, err := s.ReadRange(ctx, "d/empty", 0, 1); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("ReadRange(empty, 0, 1): %v", err)
		}
	})

	t.Run("LargeObject", func(t *testing.T) {
		s := newStore(t)
		data := make([]byte, 3<<20+17)
		for i := range data {
			data[i] = byte(i*7 + i>>11)
		}
		if err := s.Write(ctx, "big", data); err != nil {
			t.Fatal(err)
		}
		for _, r := range [][2]int64{{0, 1}, {1 << 20, 1 << 20}, {int64(len(data)) - 5, 5}, {123457, 65536}} {
			got, err := s.ReadRange(ctx, "big", r[0], r[1])
			if err != nil || !bytes.Equal(got, data[r[0]:r[0]+r[1]]) {
				t.Errorf("ReadRange(%d, %d): %d bytes, %v", r[0], r[1], len(got), err)
			}
		}
		// Ranges past the end, small and large: a store must refuse them
		// before it sizes a buffer by the asked length.
		for _, r := range [][2]int64{{int64(len(data)) - 5, 6}, {int64(len(data)) - 5, 2 << 20}, {0, 1 << 62}, {1 << 40, 1}} {
			if got, err := s.ReadRange(ctx, "big", r[0], r[1]); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("ReadRange(%d, %d) = %d bytes, %v; want ErrInvalidArgument", r[0], r[1], len(got), err)
			}
		}
		if got, err := s.ReadAll(ctx, "big"); err != nil || !bytes.Equal(got, data) {
			t.Errorf("ReadAll big: %d bytes, %v", len(got), err)
		}
	})

	t.Run("Stat", func(t *testing.T) {
		s := newStore(t)
		before := time.Now().Add(-time.Hour)
		if err := s.Write(ctx, "s/x", []byte("hello")); err != nil {
			t.Fatal(err)
		}
		info, err := s.Stat(ctx, "s/x")
		if err != nil || info.Size != 5 || info.Key != "s/x" {
			t.Fatalf("Stat = %+v, %v", info, err)
		}
		if info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(time.Hour)) {
			t.Errorf("Stat ModTime = %v, not about now", info.ModTime)
		}
		// A "directory" is no object.
		if _, err := s.Stat(ctx, "s"); !errors.Is(err, lancer.ErrNotFound) {
			t.Errorf("Stat of a prefix: %v", err)
		}
	})

	t.Run("Overwrite", func(t *testing.T) {
		s := newStore(t)
		if err := s.Write(ctx, "o/k", []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, "o/k", []byte("xy")); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadAll(ctx, "o/k"); err != nil || string(got) != "xy" {
			t.Fatalf("after overwrite: %q, %v", got, err)
		}
		if info, err := s.Stat(ctx, "o/k"); err != nil || info.Size != 2 {
			t.Fatalf("Stat after overwrite: %+v, %v", info, err)
		}
		if _, err := s.ReadRange(ctx, "o/k", 5, 2); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Fatalf("range of the old size after overwrite: %v", err)
		}
		// Write also replaces an object made by CreateIfAbsent.
		if err := s.CreateIfAbsent(ctx, "o/c", []byte("first")); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, "o/c", []byte("second")); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ReadAll(ctx, "o/c"); string(got) != "second" {
			t.Fatalf("Write over a created object: %q", got)
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := newStore(t)
		for _, k := range []string{"del/a", "del/b"} {
			if err := s.Write(ctx, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Delete(ctx, "del/a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx, "del/a"); !errors.Is(err, lancer.ErrNotFound) {
			t.Errorf("Stat after Delete: %v", err)
		}
		if _, err := s.ReadAll(ctx, "del/a"); !errors.Is(err, lancer.ErrNotFound) {
			t.Errorf("ReadAll after Delete: %v", err)
		}
		if err := s.Delete(ctx, "del/a"); err != nil {
			t.Errorf("second Delete: %v", err)
		}
		if got := keys(t, s, "del/"); !slices.Equal(got, []string{"del/b"}) {
			t.Errorf("List after Delete = %q", got)
		}
		// A deleted key can be created again.
		if err := s.CreateIfAbsent(ctx, "del/a", []byte("again")); err != nil {
			t.Errorf("CreateIfAbsent after Delete: %v", err)
		}
	})

	t.Run("CreateIfAbsent", func(t *testing.T) {
		s := newStore(t)
		if err := s.CreateIfAbsent(ctx, "v/1", []byte("first")); err != nil {
			t.Fatal(err)
		}
		err := s.CreateIfAbsent(ctx, "v/1", []byte("second"))
		if !errors.Is(err, lancer.ErrConflict) {
			t.Fatalf("second create err = %v, want ErrConflict", err)
		}
		if got, _ := s.ReadAll(ctx, "v/1"); string(got) != "first" {
			t.Fatalf("loser overwrote the object: %q", got)
		}
		// Over an object made by Write.
		if err := s.Write(ctx, "v/2", []byte("w")); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateIfAbsent(ctx, "v/2", []byte("c")); !errors.Is(err, lancer.ErrConflict) {
			t.Fatalf("create over a written object: %v", err)
		}
	})

	t.Run("CreateIfAbsentRace", func(t *testing.T) {
		s := newStore(t)
		for round := range 3 {
			key := "race/" + strconv.Itoa(round)
			var wins atomic.Int32
			winner := make(chan string, opts.Racers)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range opts.Racers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					body := fmt.Sprintf("creator %d", i)
					err := s.CreateIfAbsent(ctx, key, []byte(body))
					switch {
					case err == nil:
						wins.Add(1)
						winner <- body
					case !errors.Is(err, lancer.ErrConflict):
						t.Errorf("creator %d: %v", i, err)
					}
				}()
			}
			close(start)
			wg.Wait()
			if n := wins.Load(); n != 1 {
				t.Fatalf("round %d: %d of %d creators won, want exactly 1", round, n, opts.Racers)
			}
			if got, err := s.ReadAll(ctx, key); err != nil || string(got) != <-winner {
				t.Fatalf("round %d: object holds %q (%v), not the winner's bytes", round, got, err)
			}
		}
	})

	t.Run("List", func(t *testing.T) {
		s := newStore(t)
		all := []string{"l/a.b", "l/a/c", "l/a/b/d", "l/b", "l/ab", "m/x", "top"}
		for _, k := range all {
			if err := s.Write(ctx, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		for _, tc := range []struct {
			prefix string
			want   []string
		}{
			{"l/", []string{"l/a.b", "l/a/b/d", "l/a/c", "l/ab", "l/b"}},
			{"l/a", []string{"l/a.b", "l/a/b/d", "l/a/c", "l/ab"}},
			{"l/a/", []string{"l/a/b/d", "l/a/c"}},
			{"l/a/b/d", []string{"l/a/b/d"}},
			{"", []string{"l/a.b", "l/a/b/d", "l/a/c", "l/ab", "l/b", "m/x", "top"}},
			{"nothing/", nil},
			{"l/z", nil},
		} {
			if got := keys(t, s, tc.prefix); !slices.Equal(got, tc.want) {
				t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
			}
		}
		for info, err := range s.List(ctx, "l/a/") {
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != int64(len(info.Key)) {
				t.Errorf("List gives %s of %d bytes, want %d", info.Key, info.Size, len(info.Key))
			}
		}
		n := 0
		for range s.List(ctx, "l/") {
			n++
			break
		}
		if n != 1 {
			t.Fatal("List did not stop when the consumer broke out")
		}
	})

	t.Run("StreamingWriter", func(t *testing.T) {
		s := newStore(t)
		w, err := s.NewWriter(ctx, "w/obj")
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{"hello, ", "stream"} {
			if _, err := w.Write([]byte(part)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Stat(ctx, "w/obj"); !errors.Is(err, lancer.ErrNotFound) {
			t.Fatalf("object visible before Close: %v", err)
		}
		if got := keys(t, s, "w/"); len(got) != 0 {
			t.Fatalf("List shows %q before Close", got)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadAll(ctx, "w/obj"); err != nil || string(got) != "hello, stream" {
			t.Fatalf("after Close: %q, %v", got, err)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort after Close: %v", err)
		}
		if _, err := w.Write([]byte("x")); !errors.Is(err, lancer.ErrClosed) {
			t.Fatalf("Write after Close: %v", err)
		}
		if err := w.Close(); !errors.Is(err, lancer.ErrClosed) {
			t.Fatalf("second Close: %v", err)
		}

		// A writer replaces an existing object.
		w, err = s.NewWriter(ctx, "w/obj")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("v2")); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ReadAll(ctx, "w/obj"); string(got) != "hello, stream" {
			t.Fatalf("old object changed before Close: %q", got)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ReadAll(ctx, "w/obj"); string(got) != "v2" {
			t.Fatalf("after replacing Close: %q", got)
		}

		w, err = s.NewWriter(ctx, "w/aborted")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte("junk"))
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("second Abort: %v", err)
		}
		if _, err := s.Stat(ctx, "w/aborted"); !errors.Is(err, lancer.ErrNotFound) {
			t.Fatalf("aborted object exists: %v", err)
		}
		if got := keys(t, s, "w/"); !slices.Equal(got, []string{"w/obj"}) {
			t.Fatalf("List after abort = %q (leftovers?)", got)
		}
	})

	t.Run("Sub", func(t *testing.T) {
		s := newStore(t)
		sub := blob.Sub(s, "tree/exp")
		if err := sub.Write(ctx, "data/f", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadAll(ctx, "tree/exp/data/f"); err != nil || string(got) != "x" {
			t.Fatalf("parent read = %q, %v", got, err)
		}
		if got := keys(t, sub, "data/"); !slices.Equal(got, []string{"data/f"}) {
			t.Fatalf("sub List = %q", got)
		}
		if _, err := sub.Stat(ctx, "../x"); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Fatalf("sub escape: %v", err)
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		s := newStore(t)
		if err := s.Write(ctx, "k", []byte("v")); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Stat(cctx, "k"); !errors.Is(err, context.Canceled) {
			t.Errorf("Stat: %v", err)
		}
		if _, err := s.ReadRange(cctx, "k", 0, 1); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadRange: %v", err)
		}
		if _, err := s.ReadAll(cctx, "k"); !errors.Is(err, context.Canceled) {
			t.Errorf("ReadAll: %v", err)
		}
	})

	t.Run("URI", func(t *testing.T) {
		if u := newStore(t).URI(); u == "" {
			t.Error("empty URI")
		}
	})
}

// keys lists prefix in s and fails the test on an error.
func keys(t *testing.T, s blob.Store, prefix string) []string {
	t.Helper()
	var out []string
	for info, err := range s.List(context.Background(), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		out = append(out, info.Key)
	}
	return out
}

// ClosingStore stands for a store that holds resources (a cloud store): it
// counts its Closes and, once closed, refuses reads, so a read through a
// store closed while in use fails the test.
type ClosingStore struct {
	blob.Store
	closes atomic.Int32
}

// Close counts the close.
func (s *ClosingStore) Close() error {
	s.closes.Add(1)
	return nil
}

// Closes returns how many times Close was called.
func (s *ClosingStore) Closes() int32 { return s.closes.Load() }

// ReadRange reads through the wrapped store until the first Close.
func (s *ClosingStore) ReadRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if s.closes.Load() > 0 {
		return nil, errors.New("blobtest: read of a closed store")
	}
	return s.Store.ReadRange(ctx, key, off, n)
}
