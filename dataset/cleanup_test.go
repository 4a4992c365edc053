package dataset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
)

// storeFiles lists the keys of store.
func storeFiles(t testing.TB, store blob.Store) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for info, err := range store.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		out[info.Key] = true
	}
	return out
}

// checkOnlyReferenced fails if store holds a data, deletion or transaction
// file no version references, or misses one a version references.
func checkOnlyReferenced(t testing.TB, store blob.Store) {
	t.Helper()
	checkReferencedSince(t, store, time.Now().Add(time.Hour))
}

// checkReferencedSince is checkOnlyReferenced for files written before
// since: Cleanup leaves the files written after the oldest version it
// keeps, which might belong to a commit in flight.
func checkReferencedSince(t testing.TB, store blob.Store, since time.Time) {
	t.Helper()
	refs := referencedFiles(t, store)
	files := map[string]bool{}
	for info, err := range store.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		files[info.Key] = true
		if strings.HasPrefix(info.Key, dataDir) || strings.HasPrefix(info.Key, "_deletions/") || strings.HasPrefix(info.Key, manifest.TransactionsDir) {
			if !refs[info.Key] && info.ModTime.Before(since) {
				t.Errorf("%s (written %v) is referenced by no version", info.Key, info.ModTime)
			}
		}
	}
	for key := range refs {
		if !strings.HasPrefix(key, "_indices/") && key != versionHintKey && !files[key] {
			t.Errorf("%s is referenced but missing", key)
		}
	}
}

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore(t.Name())
	d := smallFragments(t, store, mem, format.Version2_2, false, 5, 10)
	var err error
	if d, err = d.Delete(ctx, "id < 3 or id = 44", nil); err != nil {
		t.Fatal(err)
	}
	if d, _, err = d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 100, CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id = 20", nil); err != nil {
		t.Fatal(err)
	}
	latest := contents(scanAll(t, d))
	v2 := contents(scanAll(t, openStore(t, store, 2, mem)))
	filesBefore := storeFiles(t, store)

	// The default keeps a week of versions.
	stats, err := Cleanup(ctx, store, nil)
	if err != nil || stats != (CleanupStats{}) {
		t.Fatalf("default cleanup of fresh versions: %+v, %v", stats, err)
	}

	later := func() time.Time { return time.Now().Add(time.Hour) }
	stats, err = Cleanup(ctx, store, &CleanupOptions{OlderThan: time.Minute, KeepVersions: []uint64{2}, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	versions, err := ListVersions(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{2, d.Version()}; !slices.Equal(versions, want) {
		t.Fatalf("versions %v after cleanup, want %v", versions, want)
	}
	if stats.VersionsRemoved != int(d.Version())-2 || stats.FilesRemoved == 0 || stats.BytesRemoved == 0 {
		t.Errorf("stats %+v", stats)
	}
	// Exactly the files of the retained versions are left.
	checkOnlyReferenced(t, store)
	after := storeFiles(t, store)
	removed := 0
	for key := range filesBefore {
		if !after[key] {
			removed++
		}
	}
	if removed != stats.VersionsRemoved+stats.FilesRemoved {
		t.Errorf("%d files gone, stats say %d", removed, stats.VersionsRemoved+stats.FilesRemoved)
	}
	if got := contents(scanAll(t, openStore(t, store, 0, mem))); !slices.Equal(got, latest) {
		t.Errorf("latest version changed")
	}
	if got := contents(scanAll(t, openStore(t, store, 2, mem))); !slices.Equal(got, v2) {
		t.Errorf("kept version 2 changed")
	}
	if _, err := Open(ctx, store, &OpenOptions{Version: 3}); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("open removed version 3: %v", err)
	}
	// The latest is never removed, and the dataset takes commits.
	if _, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: -1, Now: later}); err != nil {
		t.Fatal(err)
	}
	if versions, _ := ListVersions(ctx, store); !slices.Equal(versions, []uint64{d.Version()}) {
		t.Errorf("versions %v, want only the latest", versions)
	}
	checkOnlyReferenced(t, store)
	if _, err := openStore(t, store, 0, mem).Append(ctx, idRows(t, mem, 900, 2), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
		t.Fatal(err)
	}
}

// TestCleanupUnreadableManifest checks that nothing is removed when a
// manifest cannot be read.
func TestCleanupUnreadableManifest(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore(t.Name())
	smallFragments(t, store, mem, format.Version2_2, false, 3, 5)
	if err := store.Write(ctx, manifest.Key(manifest.ManifestNamingV2, 2), []byte("not a manifest")); err != nil {
		t.Fatal(err)
	}
	expectViolations(store, "D1")
	before := storeFiles(t, store)
	_, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: -1, DeleteUnverified: true})
	if !errors.Is(err, lancer.ErrCorrupt) || !strings.Contains(err.Error(), manifest.Key(manifest.ManifestNamingV2, 2)) {
		t.Fatalf("cleanup with a corrupt manifest: %v", err)
	}
	if after := storeFiles(t, store); len(after) != len(before) {
		t.Errorf("%d files before, %d after a failed cleanup", len(before), len(after))
	}
}

// TestCleanupCrashedCommit checks that the files of a commit that died
// before publishing its manifest are removed once unverified files may go,
// and kept while they may belong to a commit in flight.
func TestCleanupCrashedCommit(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore(t.Name())
	d := smallFragments(t, store, mem, format.Version2_2, false, 2, 5)

	// Find the mutation that creates the manifest, and die there.
	counting := &faultStore{Store: blob.NewMemStore("count")}
	dc := smallFragments(t, counting.Store, mem, format.Version2_2, false, 2, 5)
	dc = &Dataset{store: counting, opts: dc.opts, manifest: dc.manifest, manifestKey: dc.manifestKey, bases: dc.bases}
	if _, err := dc.Append(ctx, idRows(t, mem, 100, 3), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
		t.Fatal(err)
	}
	failAt := slices.IndexFunc(counting.log, func(s string) bool { return strings.HasPrefix(s, "create "+manifest.VersionsDir) }) + 1
	if failAt == 0 {
		t.Fatalf("no manifest creation in %v", counting.log)
	}
	faulty := &faultStore{Store: store, failAt: failAt, crash: true}
	dead := &Dataset{store: faulty, opts: d.opts, manifest: d.manifest, manifestKey: d.manifestKey, bases: d.bases}
	if _, err := dead.Append(ctx, idRows(t, mem, 100, 3), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}}); !errors.Is(err, errInjected) {
		t.Fatalf("crashed append: %v", err)
	}
	garbage := map[string]bool{}
	refs := referencedFiles(t, store)
	for key := range storeFiles(t, store) {
		if !refs[key] {
			garbage[key] = true
		}
	}
	if len(garbage) < 2 {
		t.Fatalf("the crashed commit left %v, want its data and transaction files", garbage)
	}
	time.Sleep(2 * time.Millisecond)
	if _, err := d.Append(ctx, idRows(t, mem, 200, 3), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
		t.Fatal(err)
	}
	want := contents(scanAll(t, openStore(t, store, 0, mem)))
	// A file of a commit still in flight, written after the latest version.
	time.Sleep(2 * time.Millisecond)
	inFlight := dataDir + "in-flight.lance"
	if err := store.Write(ctx, inFlight, []byte("not yet committed")); err != nil {
		t.Fatal(err)
	}

	// Young unreferenced files may be a commit in flight: kept.
	if _, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: -1}); err != nil {
		t.Fatal(err)
	}
	for key := range garbage {
		if !storeFiles(t, store)[key] {
			t.Errorf("young unreferenced %s removed", key)
		}
	}
	// A week later they are garbage.
	stats, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: -1, Now: func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if stats.FilesRemoved < len(garbage) {
		t.Errorf("stats %+v, want at least %d files", stats, len(garbage))
	}
	// Whatever its age, a file written after every retained version may
	// belong to a commit in flight, even with DeleteUnverified.
	if _, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: -1, DeleteUnverified: true,
		Now: func() time.Time { return time.Now().Add(8 * 24 * time.Hour) }}); err != nil {
		t.Fatal(err)
	}
	if !storeFiles(t, store)[inFlight] {
		t.Errorf("the in-flight %s was removed", inFlight)
	}
	if err := store.Delete(ctx, inFlight); err != nil {
		t.Fatal(err)
	}
	checkOnlyReferenced(t, store)
	if got := contents(scanAll(t, openStore(t, store, 0, mem))); !slices.Equal(got, want) {
		t.Errorf("latest version changed")
	}
}

// TestCleanupModel runs random commits and cleanups (fixed seed) and checks
// after each cleanup that exactly the retained versions are left, that they
// read as when committed, and that no other file is left.
func TestCleanupModel(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	rng := rand.New(rand.NewPCG(7, 11))
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprint("stable=", stable), func(t *testing.T) {
			store := blob.NewMemStore(t.Name())
			d := smallFragments(t, store, mem, format.Version2_1, stable, 3, 8)
			snaps := map[uint64][]string{}
			stamps := map[uint64]time.Time{}
			record := func(d *Dataset) {
				snaps[d.Version()] = contents(scanAll(t, d))
				stamps[d.Version()] = d.Timestamp()
			}
			for v := uint64(1); v <= d.Version(); v++ {
				record(openStore(t, store, v, mem))
			}
			next := 1000
			for step := range 40 {
				var err error
				switch k := rng.IntN(10); {
				case k < 4:
					d, err = d.Append(ctx, idRows(t, mem, next, 1+rng.IntN(6)), &AppendOptions{CommitOptions: CommitOptions{Allocator: mem}})
					next += 10
				case k < 6:
					d, err = d.Delete(ctx, fmt.Sprintf("id %% %d = %d", 3+rng.IntN(5), rng.IntN(3)), nil)
				case k < 8:
					d, _, err = d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 10 + rng.IntN(20), CommitOptions: CommitOptions{Allocator: mem}})
				default:
					// Cleanup at a random version's timestamp, keeping a
					// random other version.
					var live []uint64
					for v := range snaps {
						live = append(live, v)
					}
					slices.Sort(live)
					cut := live[rng.IntN(len(live))]
					keep := live[rng.IntN(len(live))]
					now := stamps[cut].Add(time.Hour)
					if _, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: time.Hour, KeepVersions: []uint64{keep},
						Now: func() time.Time { return now }}); err != nil {
						t.Fatalf("step %d: cleanup: %v", step, err)
					}
					for _, v := range live {
						if v < cut && v != keep && v != d.Version() {
							delete(snaps, v)
						}
					}
					versions, err := ListVersions(ctx, store)
					if err != nil {
						t.Fatal(err)
					}
					var want []uint64
					for v := range snaps {
						want = append(want, v)
					}
					slices.Sort(want)
					if !slices.Equal(versions, want) {
						t.Fatalf("step %d: versions %v after cleanup at %d keeping %d, want %v", step, versions, cut, keep, want)
					}
					for _, v := range versions {
						if got := contents(scanAll(t, openStore(t, store, v, mem))); !slices.Equal(got, snaps[v]) {
							t.Fatalf("step %d: version %d changed by cleanup", step, v)
						}
					}
					checkOnlyReferenced(t, store)
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				record(d)
			}
		})
	}
}

// TestCleanupBlobSidecars: the blob v2 sidecars of a data file that only
// removed versions reference go with it; those of retained files stay.
func TestCleanupBlobSidecars(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("cleanup-sidecars")
	d, vals := newBlobDataset(t, mem, store, blobCases[3], 18)
	sidecars := func() map[string]bool {
		out := map[string]bool{}
		for key := range storeFiles(t, store) {
			if strings.HasSuffix(key, ".blob") {
				out[key] = true
			}
		}
		return out
	}
	old := sidecars()
	if len(old) == 0 {
		t.Fatal("the blob v2 dataset has no sidecar files")
	}
	if _, _, err := d.Compact(ctx, &CompactOptions{TargetRowsPerFragment: 100, CommitOptions: CommitOptions{Allocator: mem}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: time.Nanosecond, DeleteUnverified: true}); err != nil {
		t.Fatal(err)
	}
	now := sidecars()
	for key := range old {
		if now[key] {
			t.Errorf("%s: the sidecar of a compacted-away file survived cleanup", key)
		}
	}
	if len(now) == 0 {
		t.Error("cleanup removed the sidecars of the compacted file")
	}
	checkBlobs(t, openStore(t, store, 0, mem), vals)
}

// TestCleanupTempFiles: Cleanup removes a killed writer's temporary file
// but not a live writer's, however long ago that writer last wrote (one
// fed by a slow stream holds its pages in memory); the live writer then
// publishes its object.
func TestCleanupTempFiles(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock: only age guards a live writer's file")
	}
	ctx := context.Background()
	mem := checkedAlloc(t)
	dir := t.TempDir()
	store, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	smallFragments(t, store, mem, format.Version2_2, false, 2, 10)
	w, err := store.NewWriter(ctx, "data/live.lance")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if _, err := w.Write([]byte("the first pages")); err != nil {
		t.Fatal(err)
	}
	live, err := filepath.Glob(filepath.Join(dir, "data", ".lancer-tmp-*"))
	if err != nil || len(live) != 1 {
		t.Fatalf("the writer's temporary file: %v, %v", live, err)
	}
	killed := filepath.Join(dir, "data", ".lancer-tmp-killed")
	if err := os.WriteFile(killed, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range []string{live[0], killed} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: -1})
	if err != nil {
		t.Fatal(err)
	}
	if stats.TempFilesRemoved != 1 {
		t.Errorf("removed %d temporary files, want the killed writer's", stats.TempFilesRemoved)
	}
	if _, err := os.Stat(killed); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the killed writer's file: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("the live writer: %v", err)
	}
	if _, err := store.Stat(ctx, "data/live.lance"); err != nil {
		t.Errorf("the live writer's object: %v", err)
	}
}

// TestCleanupRefusesBranches checks that Cleanup removes nothing from a
// root that holds a branch (a branch root under tree/ or a ref under
// _refs/branches/) unless told what the branches keep: it cannot see
// that a branch's manifests reference this root's files.
func TestCleanupRefusesBranches(t *testing.T) {
	ctx := context.Background()
	for _, branchFile := range []string{"tree/exp/_versions/1.manifest", "_refs/branches/exp.json", "_refs/tags/v1.json"} {
		t.Run(branchFile, func(t *testing.T) {
			mem := checkedAlloc(t)
			store := blob.NewMemStore(t.Name())
			smallFragments(t, store, mem, format.Version2_2, false, 3, 5)
			if err := store.Write(ctx, branchFile, []byte("{}")); err != nil {
				t.Fatal(err)
			}
			before := storeFiles(t, store)
			opts := &CleanupOptions{OlderThan: -1, DeleteUnverified: true}
			_, err := Cleanup(ctx, store, opts)
			if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), "branch.Cleanup") || !strings.Contains(err.Error(), branchFile) {
				t.Fatalf("cleanup of a root with a branch: %v; want a refusal naming %s and branch.Cleanup", err, branchFile)
			}
			if after := storeFiles(t, store); !maps.Equal(after, before) {
				t.Fatalf("a refused cleanup changed the files: %d before, %d after", len(before), len(after))
			}
			// Told what the refs keep (here nothing), it cleans.
			opts.RefFiles = func(string) bool { return false }
			stats, err := Cleanup(ctx, store, opts)
			if err != nil || stats.VersionsRemoved == 0 {
				t.Fatalf("cleanup with RefFiles: %+v, %v", stats, err)
			}
			if !storeFiles(t, store)[branchFile] {
				t.Errorf("cleanup removed the branch's %s", branchFile)
			}
		})
	}
}

// TestCleanupKeepsNewerWritersFolders: folders a newer Lance writer owns
// at the dataset root (the MemWAL's _mem_wal/, the legacy _blobs/) are never
// garbage-collected, however old their files and though no manifest names
// them.
func TestCleanupKeepsNewerWritersFolders(t *testing.T) {
	ctx := context.Background()
	mem := checkedAlloc(t)
	store := blob.NewMemStore("memwal")
	smallFragments(t, store, mem, format.Version2_2, false, 3, 10)
	kept := []string{"_mem_wal/shard-0/wal/00000001.arrow", "_mem_wal/shard-0/manifest/1.binpb", "_blobs/data/x.lance"}
	for _, k := range kept {
		if err := store.Write(ctx, k, []byte("a newer writer's")); err != nil {
			t.Fatal(err)
		}
	}
	stats, err := Cleanup(ctx, store, &CleanupOptions{OlderThan: -1, DeleteUnverified: true})
	if err != nil {
		t.Fatal(err)
	}
	if stats.VersionsRemoved != 2 {
		t.Fatalf("cleanup removed %+v, want the two old versions (so that it did run)", stats)
	}
	for _, k := range kept {
		if _, err := store.Stat(ctx, k); err != nil {
			t.Errorf("%s: %v, want it kept", k, err)
		}
	}
}
