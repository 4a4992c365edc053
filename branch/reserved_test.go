package branch_test

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// appendRows appends ids [from, to) to branch b.
func appendRows(t *testing.T, root blob.Store, b string, from, to int64) {
	t.Helper()
	r := rowsReader(from, to, 20)
	defer r.Release()
	if _, err := mustOpen(t, root, branch.Ref{Branch: b}).Append(context.Background(), r, nil); err != nil {
		t.Fatal(err)
	}
}

// legacyNested makes branch parent/seg as an older lancer would have made
// it before seg was refused: a branch of parent with rows and a deletion
// of its own, whose root tree/parent/seg/ lies inside parent's own folder
// seg. (It is made as parent/legacy and moved there, files and ref.) It
// returns the keys of the nested branch's files, relative to dir.
func legacyNested(t *testing.T, dir string, root blob.Store, parent, seg string) []string {
	t.Helper()
	ctx := context.Background()
	tmp := parent + "/legacy"
	if _, err := branch.CreateBranch(ctx, root, tmp, branch.Ref{Branch: parent}, nil); err != nil {
		t.Fatal(err)
	}
	appendRows(t, root, tmp, 900, 930)
	if _, err := mustOpen(t, root, branch.Ref{Branch: tmp}).Delete(ctx, "id = 901", nil); err != nil {
		t.Fatal(err)
	}
	from := filepath.Join(dir, "tree", filepath.FromSlash(tmp))
	to := filepath.Join(dir, "tree", filepath.FromSlash(parent), seg)
	var moved []string
	for _, f := range files(t, from) {
		dst := filepath.Join(to, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(from, filepath.FromSlash(f)), dst); err != nil {
			t.Fatal(err)
		}
		moved = append(moved, "tree/"+parent+"/"+seg+"/"+f)
	}
	if err := os.RemoveAll(from); err != nil {
		t.Fatal(err)
	}
	refs := filepath.Join(dir, "_refs", "branches")
	esc := strings.ReplaceAll(parent, "/", "%2F") + "%2F"
	if err := os.Rename(filepath.Join(refs, esc+"legacy.json"), filepath.Join(refs, esc+seg+".json")); err != nil {
		t.Fatal(err)
	}
	return moved
}

// TestNestedBranchInParentFolder: branch feature/<seg>, whose root
// tree/feature/<seg>/ lies inside one of feature's own folders (made
// before such names were refused), and its parent feature each survive
// the deletion of the other and a gc of both with every row. Deleting
// feature/_versions once removed feature's manifests (tree/feature/
// _versions/N.manifest are under tree/feature/_versions/), deleting
// feature/data feature's data files, and a gc of feature took the nested
// branch's data, deletion, transaction and index-folder-shaped files for
// feature's garbage.
func TestNestedBranchInParentFolder(t *testing.T) {
	ctx := context.Background()
	for _, seg := range []string{"_versions", "data", "_indices", "_deletions", "_transactions"} {
		for _, action := range []string{"delete nested", "delete parent", "gc"} {
			t.Run(seg+"/"+action, func(t *testing.T) {
				dir, root := newDataset(t, 100, 20, 30)
				if _, err := branch.CreateBranch(ctx, root, "feature", branch.Ref{}, nil); err != nil {
					t.Fatal(err)
				}
				appendRows(t, root, "feature", 500, 530)
				if _, err := mustOpen(t, root, branch.Ref{Branch: "feature"}).Delete(ctx, "id = 3 OR id = 501", nil); err != nil {
					t.Fatal(err)
				}
				nested := "feature/" + seg
				nestedFiles := legacyNested(t, dir, root, "feature", seg)
				appendRows(t, root, "feature", 600, 630) // feature's latest is the newest
				var featureFiles []string
				for _, f := range files(t, filepath.Join(dir, "tree", "feature")) {
					if k := "tree/feature/" + f; !slices.Contains(nestedFiles, k) {
						featureFiles = append(featureFiles, k)
					}
				}
				featureIDs := openIDs(t, root, branch.Ref{Branch: "feature"})
				nestedIDs := openIDs(t, root, branch.Ref{Branch: nested})
				if !slices.Contains(nestedIDs, 929) || slices.Contains(nestedIDs, 901) || !slices.Contains(featureIDs, 629) {
					t.Fatalf("set-up: feature %v, %s %v", featureIDs, nested, nestedIDs)
				}

				switch action {
				case "delete nested":
					if _, err := branch.DeleteBranch(ctx, root, nested, nil); err != nil {
						t.Fatal(err)
					}
					if got := openIDs(t, root, branch.Ref{Branch: "feature"}); !slices.Equal(got, featureIDs) {
						t.Errorf("feature rows changed")
					}
					have := files(t, dir)
					for _, f := range featureFiles {
						if !slices.Contains(have, f) {
							t.Errorf("feature's %s is gone", f)
						}
					}
					for _, f := range nestedFiles {
						if strings.Contains(f, "/"+seg+"/_versions/") && slices.Contains(have, f) {
							t.Errorf("the deleted branch's manifest %s is left", f)
						}
					}
				case "delete parent":
					if _, err := branch.DeleteBranch(ctx, root, "feature", nil); err != nil {
						t.Fatal(err)
					}
					if got := openIDs(t, root, branch.Ref{Branch: nested}); !slices.Equal(got, nestedIDs) {
						t.Errorf("%s rows changed", nested)
					}
					have := files(t, dir)
					for _, f := range nestedFiles {
						if !slices.Contains(have, f) {
							t.Errorf("%s's %s is gone", nested, f)
						}
					}
					for _, f := range featureFiles {
						if strings.HasPrefix(f, "tree/feature/_versions/") && strings.Count(f, "/") == 3 && slices.Contains(have, f) {
							t.Errorf("the deleted branch's %s is left", f)
						}
					}
				case "gc":
					// A month later: the nested branch's files are older
					// than the unverified age, as the CLI's gc sees them.
					month := time.Now().Add(-30 * 24 * time.Hour)
					for _, f := range nestedFiles {
						if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(f)), month, month); err != nil {
							t.Fatal(err)
						}
					}
					stats, err := branch.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1})
					if err != nil {
						t.Fatal(err)
					}
					if stats.VersionsRemoved == 0 {
						t.Errorf("gc removed nothing: %+v", stats)
					}
					if got := openIDs(t, root, branch.Ref{Branch: "feature"}); !slices.Equal(got, featureIDs) {
						t.Errorf("feature rows changed")
					}
					if got := openIDs(t, root, branch.Ref{Branch: nested}); !slices.Equal(got, nestedIDs) {
						t.Errorf("%s rows changed", nested)
					}
					// Scanning read every file the latest versions name;
					// the nested branch's latest transaction is its own too.
					m := mustOpen(t, root, branch.Ref{Branch: nested}).Manifest()
					txn := "tree/" + nested + "/_transactions/" + m.TransactionFile
					if have := files(t, dir); m.TransactionFile == "" || !slices.Contains(have, txn) {
						t.Errorf("%s's latest transaction %s is gone", nested, txn)
					}
				}
			})
		}
	}
}

// TestCreateBranchRefusesReservedSegment: the name is refused before
// anything is written.
func TestCreateBranchRefusesReservedSegment(t *testing.T) {
	ctx := context.Background()
	dir, root := newDataset(t, 10, 20, 30)
	if _, err := branch.CreateBranch(ctx, root, "feature", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	before := files(t, dir)
	_, err := branch.CreateBranch(ctx, root, "feature/_versions", branch.Ref{Branch: "feature"}, nil)
	if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), `"_versions"`) {
		t.Fatalf("create feature/_versions: %v", err)
	}
	if got := files(t, dir); !slices.Equal(got, before) {
		t.Errorf("files written: %v", got)
	}
}

// ageFile sets the modification time of dir/key to age ago.
func ageFile(t *testing.T, dir, key string, age time.Duration) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("half an object"), 0o644); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestTempFilesOfKilledWriters: the temporary files a killed LocalStore
// writer leaves (.lancer-tmp-*), which List never shows, are removed by gc
// on main and branches and by DeleteBranch once old enough, and counted;
// fresh ones (a live writer's) stay.
func TestTempFilesOfKilledWriters(t *testing.T) {
	ctx := context.Background()
	dir, root := newDataset(t, 10, 20, 30)
	if _, err := branch.CreateBranch(ctx, root, "b", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateBranch(ctx, root, "gone", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	const tmp = ".lancer-tmp-0123456789abcdef"
	old := []string{
		"_versions/" + tmp, "data/" + tmp, "_refs/tags/" + tmp,
		"tree/b/_versions/" + tmp, "tree/b/data/" + tmp,
	}
	fresh := []string{"_versions/" + tmp + "f", "tree/b/data/" + tmp + "f"}
	for _, k := range old {
		ageFile(t, dir, k, 2*time.Hour)
	}
	for _, k := range fresh {
		ageFile(t, dir, k, time.Minute)
	}
	ageFile(t, dir, "tree/gone/data/"+tmp, 2*time.Hour)

	// DeleteBranch removes the branch's old temporary file with it.
	stats, err := branch.DeleteBranch(ctx, root, "gone", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(stats.Files, "tree/gone/data/"+tmp) {
		t.Errorf("delete removed %v, not the temporary file", stats.Files)
	}
	if got := files(t, filepath.Join(dir, "tree", "gone")); len(got) != 0 {
		t.Errorf("left of gone: %v", got)
	}

	// Younger than the cutoff (7 days by default): kept.
	s, err := branch.Cleanup(ctx, root, nil)
	if err != nil || s.TempFilesRemoved != 0 {
		t.Fatalf("default cleanup: %+v, %v", s, err)
	}
	// Older than the cutoff: counted by a dry run, removed by a cleanup.
	for _, dry := range []bool{true, false} {
		s, err := branch.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1, DryRun: dry})
		if err != nil {
			t.Fatal(err)
		}
		if s.TempFilesRemoved != len(old) || s.FilesRemoved < len(old) {
			t.Errorf("dry run %v: %+v, want %d temporary files", dry, s, len(old))
		}
		have := files(t, dir)
		for _, k := range old {
			switch there := slices.Contains(have, k); {
			case dry && !there:
				t.Errorf("the dry run removed %s", k)
			case !dry && there:
				t.Errorf("%s was not removed", k)
			}
		}
		for _, k := range fresh {
			if !slices.Contains(have, k) {
				t.Errorf("dry run %v: the fresh %s is gone", dry, k)
			}
		}
	}
	if got := openIDs(t, root, branch.Ref{Branch: "b"}); !slices.Equal(got, seq(0, 20)) {
		t.Errorf("b: %v", got)
	}
}

// TestTempFilesOfLiveWriters: a live writer's temporary file survives gc
// and DeleteBranch however long ago it was last written (a writer fed by a
// slow stream holds its pages in memory), and the writer then publishes
// its object; a killed writer's old file next to it goes.
func TestTempFilesOfLiveWriters(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock: only age guards a live writer's file")
	}
	ctx := context.Background()
	dir, root := newDataset(t, 10, 20, 30)
	for _, b := range []string{"b", "gone"} {
		if _, err := branch.CreateBranch(ctx, root, b, branch.Ref{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"data/live.lance", "tree/b/data/live.lance", "tree/gone/data/live.lance"}
	var writers []blob.ObjectWriter
	for _, k := range keys {
		w, err := root.NewWriter(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		if _, err := w.Write([]byte("the first pages")); err != nil {
			t.Fatal(err)
		}
		writers = append(writers, w)
		// Its temporary file (the only one there yet), last written two
		// days ago.
		live, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(path.Dir(k)), ".lancer-tmp-*"))
		if err != nil || len(live) != 1 {
			t.Fatalf("%s: the writer's temporary file: %v, %v", k, live, err)
		}
		at := time.Now().Add(-48 * time.Hour)
		if err := os.Chtimes(live[0], at, at); err != nil {
			t.Fatal(err)
		}
	}
	const killed = ".lancer-tmp-killed"
	for _, k := range []string{"data/" + killed, "tree/b/data/" + killed, "tree/gone/data/" + killed} {
		ageFile(t, dir, k, 48*time.Hour)
	}

	stats, err := branch.DeleteBranch(ctx, root, "gone", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(stats.Files, "tree/gone/data/"+killed) {
		t.Errorf("delete removed %v, not the killed writer's file", stats.Files)
	}
	s, err := branch.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1})
	if err != nil {
		t.Fatal(err)
	}
	if s.TempFilesRemoved != 2 {
		t.Errorf("gc removed %d temporary files, want the 2 killed writers'", s.TempFilesRemoved)
	}
	for i, w := range writers {
		if err := w.Close(); err != nil {
			t.Errorf("%s: the live writer: %v", keys[i], err)
		} else if _, err := root.Stat(ctx, keys[i]); err != nil {
			t.Errorf("%s: the live writer's object: %v", keys[i], err)
		}
	}
}
