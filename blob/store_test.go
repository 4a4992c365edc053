package blob

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lancerdb/lancer"
)

// conformance runs the Store contract against one implementation.
func conformance(t *testing.T, s Store) {
	ctx := context.Background()

	t.Run("missing", func(t *testing.T) {
		if _, err := s.Stat(ctx, "nope"); !errors.Is(err, lancer.ErrNotFound) {
			t.Fatalf("Stat missing: %v", err)
		}
		if _, err := s.ReadAll(ctx, "nope/x"); !errors.Is(err, lancer.ErrNotFound) {
			t.Fatalf("ReadAll missing: %v", err)
		}
		if err := s.Delete(ctx, "nope"); err != nil {
			t.Fatalf("Delete missing: %v", err)
		}
	})

	t.Run("write read range", func(t *testing.T) {
		if err := s.Write(ctx, "d/a.bin", []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
		got, err := s.ReadRange(ctx, "d/a.bin", 3, 4)
		if err != nil || string(got) != "3456" {
			t.Fatalf("ReadRange = %q, %v", got, err)
		}
		if got, err := s.ReadRange(ctx, "d/a.bin", 10, 0); err != nil || len(got) != 0 {
			t.Fatalf("empty range at end = %q, %v", got, err)
		}
		for _, r := range [][2]int64{{8, 3}, {-1, 2}, {11, 0}, {0, -1}} {
			if _, err := s.ReadRange(ctx, "d/a.bin", r[0], r[1]); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("ReadRange(%d, %d) err = %v, want ErrInvalidArgument", r[0], r[1], err)
			}
		}
		info, err := s.Stat(ctx, "d/a.bin")
		if err != nil || info.Size != 10 || info.Key != "d/a.bin" {
			t.Fatalf("Stat = %+v, %v", info, err)
		}
		if err := s.Write(ctx, "d/a.bin", []byte("xy")); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.ReadAll(ctx, "d/a.bin"); string(got) != "xy" {
			t.Fatalf("after overwrite: %q", got)
		}
	})

	t.Run("bad keys", func(t *testing.T) {
		for _, k := range []string{"", "/abs", "a/../b", "a//b", "dir/", "./x"} {
			if err := s.Write(ctx, k, nil); !errors.Is(err, lancer.ErrInvalidArgument) {
				t.Errorf("Write(%q) err = %v", k, err)
			}
		}
	})

	t.Run("create if absent", func(t *testing.T) {
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
		// Concurrent creators: exactly one wins.
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.CreateIfAbsent(ctx, "v/race", []byte(strconv.Itoa(i)))
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, lancer.ErrConflict):
					t.Errorf("creator %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d creators won, want 1", wins.Load())
		}
	})

	t.Run("list order and prefix", func(t *testing.T) {
		for _, k := range []string{"l/a.b", "l/a/c", "l/a/b/d", "l/b", "l/ab", "m/x"} {
			if err := s.Write(ctx, k, []byte(k)); err != nil {
				t.Fatal(err)
			}
		}
		var keys []string
		for info, err := range s.List(ctx, "l/") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, info.Key)
		}
		want := fmt.Sprint([]string{"l/a.b", "l/a/b/d", "l/a/c", "l/ab", "l/b"})
		if fmt.Sprint(keys) != want {
			t.Fatalf("List(l/) = %v, want %v", keys, want)
		}
		keys = nil
		for info, err := range s.List(ctx, "l/a") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, info.Key)
		}
		want = fmt.Sprint([]string{"l/a.b", "l/a/b/d", "l/a/c", "l/ab"})
		if fmt.Sprint(keys) != want {
			t.Fatalf("List(l/a) = %v, want %v", keys, want)
		}
		n := 0
		for range s.List(ctx, "l/") {
			n++
			break
		}
		if n != 1 {
			t.Fatal("List did not stop when the consumer broke out")
		}
		for range s.List(ctx, "nothing/") {
			t.Fatal("List of an absent prefix yielded")
		}
	})

	t.Run("streaming writer", func(t *testing.T) {
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
		for info := range s.List(ctx, "w/") {
			t.Fatalf("List shows %q before Close", info.Key)
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

		w, err = s.NewWriter(ctx, "w/aborted")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte("junk"))
		if err := w.Abort(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Stat(ctx, "w/aborted"); !errors.Is(err, lancer.ErrNotFound) {
			t.Fatalf("aborted object exists: %v", err)
		}
		var keys []string
		for info, err := range s.List(ctx, "w/") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, info.Key)
		}
		if fmt.Sprint(keys) != "[w/obj]" {
			t.Fatalf("List after abort = %v (leftovers?)", keys)
		}
	})

	t.Run("sub", func(t *testing.T) {
		sub := Sub(s, "tree/exp")
		if err := sub.Write(ctx, "data/f", []byte("x")); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadAll(ctx, "tree/exp/data/f"); err != nil || string(got) != "x" {
			t.Fatalf("parent read = %q, %v", got, err)
		}
		var keys []string
		for info, err := range sub.List(ctx, "data/") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, info.Key)
		}
		if fmt.Sprint(keys) != "[data/f]" {
			t.Fatalf("sub List = %v", keys)
		}
		if _, err := sub.Stat(ctx, "../x"); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Fatalf("sub escape: %v", err)
		}
	})
}

func TestMemStore(t *testing.T) { conformance(t, NewMemStore("t")) }

func TestLocalStore(t *testing.T) {
	s, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	conformance(t, s)
}

func TestLocalStoreHidesTempFiles(t *testing.T) {
	dir := t.TempDir()
	s, _ := NewLocalStore(dir)
	if err := os.WriteFile(filepath.Join(dir, tmpPrefix+"abc"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for info := range s.List(context.Background(), "") {
		t.Fatalf("listed temp file %q", info.Key)
	}
}

// TestLocalStoreFollowsLinks: List sees linked files and directories as
// Stat and ReadRange do (and as Lance's local store does), skips dangling
// links, and does not loop on a link to an enclosing directory.
func TestLocalStoreFollowsLinks(t *testing.T) {
	ctx := context.Background()
	blobs, dir := t.TempDir(), t.TempDir()
	write := func(path, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	write(filepath.Join(blobs, "m1"), "manifest one")
	write(filepath.Join(blobs, "d", "f.lance"), "data")
	write(filepath.Join(dir, "_versions", "2.manifest"), "plain")
	link(filepath.Join(blobs, "m1"), filepath.Join(dir, "_versions", "1.manifest"))
	link(filepath.Join(blobs, "d"), filepath.Join(dir, "data"))
	link(filepath.Join(blobs, "missing"), filepath.Join(dir, "_versions", "3.manifest"))
	link(dir, filepath.Join(dir, "data2", "loop"))
	s, _ := NewLocalStore(dir)
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"_versions/", []string{"_versions/1.manifest", "_versions/2.manifest"}},
		{"", []string{"_versions/1.manifest", "_versions/2.manifest", "data/f.lance"}},
		{"data/", []string{"data/f.lance"}},
	} {
		var keys []string
		for info, err := range s.List(ctx, tc.prefix) {
			if err != nil {
				t.Fatalf("List(%q): %v", tc.prefix, err)
			}
			keys = append(keys, info.Key)
			if st, err := s.Stat(ctx, info.Key); err != nil || st.Size != info.Size {
				t.Errorf("List(%q) gives %s of %d bytes; Stat: %+v, %v", tc.prefix, info.Key, info.Size, st, err)
			}
		}
		if !slices.Equal(keys, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, keys, tc.want)
		}
	}
}

// TestLocalCreateIfAbsentAcrossProcesses runs several processes that race to
// create the same keys; every key must have exactly one winner. This is the
// property gocloud's fileblob lacks and commits depend on.
func TestLocalCreateIfAbsentAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("LANCER_BLOB_RACE_DIR"); dir != "" {
		s, _ := NewLocalStore(dir)
		wins := 0
		for i := range 300 {
			if err := s.CreateIfAbsent(context.Background(), "k/"+strconv.Itoa(i), []byte(os.Getenv("LANCER_BLOB_RACE_ID"))); err == nil {
				wins++
			} else if !errors.Is(err, lancer.ErrConflict) {
				fmt.Println("ERR", err)
			}
		}
		fmt.Println("WINS", wins)
		return
	}
	dir := t.TempDir()
	const procs = 4
	outs := make([][]byte, procs)
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestLocalCreateIfAbsentAcrossProcesses$")
			cmd.Env = append(os.Environ(), "LANCER_BLOB_RACE_DIR="+dir, "LANCER_BLOB_RACE_ID="+strconv.Itoa(p))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("process %d: %v\n%s", p, err, out)
			}
			outs[p] = out
		}()
	}
	wg.Wait()
	total := 0
	for _, out := range outs {
		var w int
		for line := range bytesLines(out) {
			if _, err := fmt.Sscanf(line, "WINS %d", &w); err == nil {
				total += w
			}
			if len(line) > 3 && line[:3] == "ERR" {
				t.Errorf("child error: %s", line)
			}
		}
	}
	if total != 300 {
		t.Fatalf("%d wins across processes for 300 keys, want exactly 300", total)
	}
}

func bytesLines(b []byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i, c := range b {
			if c == '\n' {
				if !yield(string(b[start:i])) {
					return
				}
				start = i + 1
			}
		}
		if start < len(b) {
			yield(string(b[start:]))
		}
	}
}

func TestOpen(t *testing.T) {
	ctx := context.Background()
	a, err := Open(ctx, "mem://shared")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Open(ctx, "mem://shared")
	_ = a.Write(ctx, "k", []byte("v"))
	if got, err := b.ReadAll(ctx, "k"); err != nil || string(got) != "v" {
		t.Fatalf("mem stores with one name do not share: %q %v", got, err)
	}
	dir := t.TempDir()
	l, err := Open(ctx, "file://"+dir)
	if err != nil || l.(*LocalStore).Root() != dir {
		t.Fatalf("file URI: %v %v", l, err)
	}
	if _, err := Open(ctx, "s3x://b/p"); !errors.Is(err, lancer.ErrUnsupported) {
		t.Fatalf("unknown scheme: %v", err)
	}
}

func TestFSStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, _ := NewLocalStore(dir)
	for _, k := range []string{"l/a.b", "l/a/c", "l/b", "m/x"} {
		if err := l.Write(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	s := NewFSStore(os.DirFS(dir), "embed://t")
	var keys []string
	for info, err := range s.List(ctx, "l/") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, info.Key)
	}
	if fmt.Sprint(keys) != "[l/a.b l/a/c l/b]" {
		t.Fatalf("List = %v", keys)
	}
	if b, err := s.ReadRange(ctx, "l/a/c", 2, 1); err != nil || string(b) != "a" {
		t.Fatalf("ReadRange = %q %v", b, err)
	}
	if err := s.Write(ctx, "x", nil); !errors.Is(err, lancer.ErrUnsupported) {
		t.Fatalf("Write on read-only store: %v", err)
	}
	if _, err := s.Stat(ctx, "nope"); !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("Stat missing: %v", err)
	}
}

// TestCancelledContext: every read honours a cancelled context.
func TestCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	local, _ := NewLocalStore(dir)
	mem := NewMemStore("cancel")
	for _, s := range []Store{local, mem, NewFSStore(os.DirFS(dir), "fs://t")} {
		if _, err := s.Stat(ctx, "k"); !errors.Is(err, context.Canceled) {
			t.Errorf("%s Stat: %v", s.URI(), err)
		}
		if _, err := s.ReadRange(ctx, "k", 0, 1); !errors.Is(err, context.Canceled) {
			t.Errorf("%s ReadRange: %v", s.URI(), err)
		}
		if _, err := s.ReadAll(ctx, "k"); !errors.Is(err, context.Canceled) {
			t.Errorf("%s ReadAll: %v", s.URI(), err)
		}
	}
}
