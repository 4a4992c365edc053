package blob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lancerdb/lancer"
)

// fsLog records traceFS's steps for one test.
type fsLog struct {
	mu    sync.Mutex
	steps []string // "op path"
}

func recordFS(t *testing.T) *fsLog {
	t.Helper()
	l := &fsLog{}
	traceFS = func(op, path string) {
		l.mu.Lock()
		l.steps = append(l.steps, op+" "+path)
		l.mu.Unlock()
	}
	t.Cleanup(func() { traceFS = nil })
	return l
}

// index returns the position of the first step op path at or after from,
// or -1.
func (l *fsLog) index(from int, op, path string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.steps); i++ {
		if l.steps[i] == op+" "+path {
			return i
		}
	}
	return -1
}

func (l *fsLog) has(prefix string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.steps, func(s string) bool { return strings.HasPrefix(s, prefix) })
}

// TestCreateIfAbsentAfterOrder: objects written unsynced are published
// without an fsync, and CreateIfAbsentAfter links its key only after
// every named file, its folder and the folders above it were synced, and
// syncs the key's folder after the link (blob D1, D2). A second create of
// the key conflicts and leaves no temporary file; a named file that is
// missing fails the create before anything is linked.
func TestCreateIfAbsentAfterOrder(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := NewLocalStore(root)
	if err != nil {
		t.Fatal(err)
	}
	log := recordFS(t)
	// Through a Sub, as a branch's dataset is addressed.
	sub := Sub(s, "t.lance")
	w, err := NewWriterUnsynced(ctx, sub, "data/a.lance")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("rows")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := WriteUnsynced(ctx, sub, "_transactions/0-x.txn", []byte("txn")); err != nil {
		t.Fatal(err)
	}
	if log.has("fsync ") {
		t.Fatalf("unsynced writes synced: %v", log.steps)
	}
	data := filepath.Join(root, "t.lance", "data", "a.lance")
	txn := filepath.Join(root, "t.lance", "_transactions", "0-x.txn")
	man := filepath.Join(root, "t.lance", "_versions", "1.manifest")
	if err := CreateIfAbsentAfter(ctx, sub, "_versions/1.manifest", []byte("m1"), []string{"data/a.lance", "_transactions/0-x.txn"}); err != nil {
		t.Fatal(err)
	}
	link := log.index(0, "link", man)
	if link < 0 {
		t.Fatalf("no link of the manifest: %v", log.steps)
	}
	for _, p := range []string{data, txn, filepath.Dir(data), filepath.Dir(txn), filepath.Join(root, "t.lance"), root} {
		if i := log.index(0, "fsync", p); i < 0 || i > link {
			t.Errorf("%s synced at step %d, the manifest linked at %d: %v", p, i, link, log.steps)
		}
	}
	// The manifest's own bytes: its temporary file is synced before the
	// link (the only fsync of a .lancer-tmp- file in _versions/).
	tmpSynced := slices.IndexFunc(log.steps[:link], func(s string) bool {
		return strings.HasPrefix(s, "fsync "+filepath.Join(filepath.Dir(man), tmpPrefix))
	})
	if tmpSynced < 0 {
		t.Errorf("the manifest's temporary file was not synced before the link: %v", log.steps)
	}
	if i := log.index(link, "fsync", filepath.Dir(man)); i < 0 {
		t.Errorf("_versions/ not synced after the link: %v", log.steps)
	}
	if got, err := sub.ReadAll(ctx, "_versions/1.manifest"); err != nil || string(got) != "m1" {
		t.Fatalf("manifest reads %q, %v", got, err)
	}

	// A second create of the key conflicts, leaving the first one's bytes.
	err = CreateIfAbsentAfter(ctx, sub, "_versions/1.manifest", []byte("m2"), []string{"data/a.lance"})
	if !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("second create: %v, want a conflict", err)
	}
	// A missing named file: nothing is linked.
	err = CreateIfAbsentAfter(ctx, sub, "_versions/2.manifest", []byte("m2"), []string{"data/gone.lance"})
	if !errors.Is(err, lancer.ErrNotFound) {
		t.Fatalf("create after a missing file: %v, want not found", err)
	}
	if _, err := os.Stat(filepath.Join(root, "t.lance", "_versions", "2.manifest")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("2.manifest exists after a failed sync: %v", err)
	}
	entries, err := os.ReadDir(filepath.Dir(man))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			t.Errorf("temporary file %s left in _versions/", e.Name())
		}
	}
}

// TestUnsyncedViewKeyOnly: the Unsynced view defers the sync of its one
// key and writes every other key as the store does (synced), so that the
// blob sidecars a data file writer adds stay durable on their own.
func TestUnsyncedViewKeyOnly(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	s, err := NewLocalStore(root)
	if err != nil {
		t.Fatal(err)
	}
	log := recordFS(t)
	v := Unsynced(s, "data/a.lance")
	for _, key := range []string{"data/a.lance", "data/a/1.blob"} {
		w, err := v.NewWriter(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(key)); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if log.has("fsync " + filepath.Join(root, "data", tmpPrefix)) {
		// The data file's temporary name is in data/; the sidecar's in data/a/.
		t.Errorf("the view's own key was synced: %v", log.steps)
	}
	if !log.has("fsync " + filepath.Join(root, "data", "a", tmpPrefix)) {
		t.Errorf("the sidecar was not synced: %v", log.steps)
	}
	// Stores that do not defer syncs are returned as they are.
	m := NewMemStore("unsynced-view")
	if Unsynced(m, "k") != Store(m) {
		t.Error("Unsynced wrapped a store that does not defer syncs")
	}
}

// TestCreateIfAbsentAfterSyncsNewRoot: a store whose root (and a folder
// above it) did not exist when it was made has their names synced into
// the folder that did, before the first manifest is linked; later
// commits sync only up to the root. Without it a crash right after a
// dataset's first commit could lose the dataset's folder.
func TestCreateIfAbsentAfterSyncsNewRoot(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	root := filepath.Join(parent, "new", "t.lance")
	s, err := NewLocalStore(root)
	if err != nil {
		t.Fatal(err)
	}
	log := recordFS(t)
	if err := WriteUnsynced(ctx, s, "data/a.lance", []byte("rows")); err != nil {
		t.Fatal(err)
	}
	if err := CreateIfAbsentAfter(ctx, s, "_versions/1.manifest", []byte("m1"), []string{"data/a.lance"}); err != nil {
		t.Fatal(err)
	}
	link := log.index(0, "link", filepath.Join(root, "_versions", "1.manifest"))
	if link < 0 {
		t.Fatalf("no link: %v", log.steps)
	}
	for _, p := range []string{root, filepath.Dir(root), parent} {
		if i := log.index(0, "fsync", p); i < 0 || i > link {
			t.Errorf("%s synced at step %d, the manifest linked at %d: %v", p, i, link, log.steps)
		}
	}
	from := len(log.steps)
	if err := WriteUnsynced(ctx, s, "data/b.lance", []byte("rows")); err != nil {
		t.Fatal(err)
	}
	if err := CreateIfAbsentAfter(ctx, s, "_versions/2.manifest", []byte("m2"), []string{"data/b.lance"}); err != nil {
		t.Fatal(err)
	}
	if i := log.index(from, "fsync", root); i < 0 {
		t.Errorf("the root was not synced on the second commit: %v", log.steps[from:])
	}
	for _, p := range []string{filepath.Dir(root), parent} {
		if i := log.index(from, "fsync", p); i >= 0 {
			t.Errorf("%s synced again on the second commit: %v", p, log.steps[from:])
		}
	}
}

// TestSharesSyncs: a store shares its syncs with itself and with Subs of
// it at one prefix however they were made; not with another prefix, a
// wrapper, or another store.
func TestSharesSyncs(t *testing.T) {
	local, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewLocalStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	type wrapper struct{ Store }
	for _, tc := range []struct {
		name string
		a, b Store
		want bool
	}{
		{"itself", local, local, true},
		{"two Subs at one prefix", Sub(local, "t.lance"), Sub(local, "t.lance"), true},
		{"a Sub of a Sub", Sub(Sub(local, "t.lance"), "tree/b"), Sub(local, "t.lance/tree/b"), true},
		{"other prefixes", Sub(local, "t.lance"), Sub(local, "u.lance"), false},
		{"a Sub and its parent", Sub(local, "t.lance"), local, false},
		{"a wrapper", wrapper{local}, local, false},
		{"Subs of other stores", Sub(local, "t.lance"), Sub(other, "t.lance"), false},
		{"Subs of a wrapper and of what it wraps", Sub(wrapper{local}, "t.lance"), Sub(local, "t.lance"), false},
	} {
		if got := SharesSyncs(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: SharesSyncs = %v, want %v", tc.name, got, tc.want)
		}
		if got := SharesSyncs(tc.b, tc.a); got != tc.want {
			t.Errorf("%s, swapped: SharesSyncs = %v, want %v", tc.name, got, tc.want)
		}
	}
}
