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
	"testing"

	"github.com/lancerdb/lancer"
)

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

// TestListTemp: ListTemp yields exactly the temporary files List hides, at
// any depth, through Sub and wrappers, with keys Delete accepts.
func TestListTemp(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, _ := NewLocalStore(dir)
	for _, k := range []string{"a/x.lance", "a/b/y.lance", "top"} {
		if err := s.Write(ctx, k, []byte("obj")); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{tmpPrefix + "1", "a/" + tmpPrefix + "2", "a/b/" + tmpPrefix + "3"} {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(k)), []byte("tmp!"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	keys := func(st Store, prefix string) []string {
		var out []string
		for info, err := range ListTemp(ctx, st, prefix) {
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != 4 || info.ModTime.IsZero() {
				t.Errorf("%s: size %d, time %v", info.Key, info.Size, info.ModTime)
			}
			out = append(out, info.Key)
		}
		return out
	}
	for _, c := range []struct {
		st     Store
		prefix string
		want   []string
	}{
		{s, "", []string{tmpPrefix + "1", "a/" + tmpPrefix + "2", "a/b/" + tmpPrefix + "3"}},
		{s, "a/b/", []string{"a/b/" + tmpPrefix + "3"}},
		{Sub(s, "a"), "", []string{tmpPrefix + "2", "b/" + tmpPrefix + "3"}},
		{NewCountingStore(Sub(s, "a/b")), "", []string{tmpPrefix + "3"}},
		{NewMemStore("m"), "", nil},
	} {
		if got := keys(c.st, c.prefix); !slices.Equal(got, c.want) {
			t.Errorf("%s %q: %v, want %v", c.st.URI(), c.prefix, got, c.want)
		}
	}
	if err := Sub(s, "a").Delete(ctx, "b/"+tmpPrefix+"3"); err != nil {
		t.Fatal(err)
	}
	if got := keys(s, "a/"); !slices.Equal(got, []string{"a/" + tmpPrefix + "2"}) {
		t.Errorf("after delete: %v", got)
	}
}

// TestWriteUnsynced: through a Sub of a local folder, and on a memory
// store, WriteUnsynced creates and replaces a key as Write does, leaving
// no temporary file behind; a bad key is refused.
func TestWriteUnsynced(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	local, err := NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Store{"local sub": Sub(local, "t.lance"), "memory": NewMemStore("mem://hint")} {
		t.Run(name, func(t *testing.T) {
			for _, v := range []string{`{"version":1}`, `{"version":2}`} {
				if err := WriteUnsynced(ctx, s, "_versions/hint.json", []byte(v)); err != nil {
					t.Fatal(err)
				}
				got, err := s.ReadRange(ctx, "_versions/hint.json", 0, int64(len(v)))
				if err != nil || string(got) != v {
					t.Fatalf("read back %q, %v; want %q", got, err, v)
				}
			}
			if err := WriteUnsynced(ctx, s, "../escape", []byte("x")); err == nil {
				t.Error("a key outside the store was written")
			}
		})
	}
	entries, err := os.ReadDir(filepath.Join(dir, "t.lance", "_versions"))
	if err != nil || len(entries) != 1 || entries[0].Name() != "hint.json" {
		t.Errorf("the folder holds %v (%v), want only hint.json", entries, err)
	}
}
