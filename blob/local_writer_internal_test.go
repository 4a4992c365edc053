package blob

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestLocalWriterBackground: a local object written in pieces of any size
// through the background writer reads back whole; Abort leaves nothing;
// a failed write under it fails the object, names its key and leaves no
// file; no goroutine outlives its writer.
func TestLocalWriterBackground(t *testing.T) {
	ctx := context.Background()
	goroutines := runtime.NumGoroutine()
	dir := t.TempDir()
	s, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{0, 1, smallChunk - 1, smallChunk, localChunk + 3, 5*localChunk + 17} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		w, err := s.NewWriter(ctx, "obj")
		if err != nil {
			t.Fatal(err)
		}
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(3*smallChunk))
			if rng.IntN(10) == 0 {
				n = min(len(rest), 1+rng.IntN(2*localChunk))
			}
			if k, err := w.Write(rest[:n]); err != nil || k != n {
				t.Fatalf("size %d: wrote %d of %d: %v", size, k, n, err)
			}
			rest = rest[n:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadAll(ctx, "obj")
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: read back %d bytes (%v)", size, len(got), err)
		}
	}
	// Abort after some chunks went out: no object, no temporary file.
	w, err := s.NewWriter(ctx, "aborted")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, 3*localChunk)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	// A write that fails under the writer (its file closed here, as a
	// full disk would fail it) fails Close, which names the key.
	w, err = s.NewWriter(ctx, "failed")
	if err != nil {
		t.Fatal(err)
	}
	w.(*localWriter).f.Close()
	_, werr := w.Write(make([]byte, 2*localChunk))
	cerr := w.Close()
	if cerr == nil || !strings.Contains(cerr.Error(), `"failed"`) {
		t.Fatalf("close after a failed write: %v (write: %v)", cerr, werr)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "obj" {
			t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines, %d before", runtime.NumGoroutine(), goroutines)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
