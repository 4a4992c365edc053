package branch_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// refStates scans every ref of the dataset at root: each tag, each
// branch's latest version and main's latest, by a readable name.
func refStates(t *testing.T, root blob.Store, mem memory.Allocator) map[string][][]byte {
	t.Helper()
	ctx := context.Background()
	out := map[string][][]byte{}
	scan := func(name string, ref branch.Ref) {
		ds, err := branch.Open(ctx, root, ref, &dataset.OpenOptions{Allocator: mem})
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		out[name] = scanAll(t, ds, mem)
	}
	scan("main", branch.Ref{})
	tags, err := branch.ListTags(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		scan("tag "+tag.Name, branch.Ref{Tag: tag.Name})
	}
	branches, err := branch.ListBranches(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range branches {
		scan("branch "+b.Name, branch.Ref{Branch: b.Name})
	}
	return out
}

// copyWithBranchTag copies the fixture history_v2_2 (main, tags, branch exp)
// and adds a tag on the branch's first version.
func copyWithBranchTag(t *testing.T) (string, blob.Store) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "history.lance")
	if err := os.CopyFS(dir, os.DirFS(fixturetest.DatasetPath(t, "history_v2_2"))); err != nil {
		t.Fatal(err)
	}
	root, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanRootWhenDone(t, root)
	versions, err := dataset.ListVersions(context.Background(), blob.Sub(root, "tree/exp"))
	if err != nil || len(versions) < 2 {
		t.Fatalf("branch exp versions %v: %v", versions, err)
	}
	tag := fmt.Sprintf(`{"branch":"exp","version":%d,"manifestSize":0,"metadata":{}}`, versions[0])
	if err := os.WriteFile(filepath.Join(dir, "_refs", "tags", "on_exp.json"), []byte(tag), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, root
}

func TestCleanupKeepsRefs(t *testing.T) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	_, root := copyWithBranchTag(t)
	before := refStates(t, root, mem)
	mainVersions, _ := dataset.ListVersions(ctx, root)
	expVersions, _ := dataset.ListVersions(ctx, blob.Sub(root, "tree/exp"))

	later := time.Now().Add(time.Hour)
	stats, err := branch.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1, Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("removed %+v", stats)
	if stats.VersionsRemoved == 0 || stats.FilesRemoved == 0 {
		t.Errorf("nothing removed: %+v", stats)
	}
	after := refStates(t, root, mem)
	if len(after) != len(before) {
		t.Fatalf("%d refs before, %d after", len(before), len(after))
	}
	for name, rows := range before {
		fixturetest.CompareRows(t, name+" after cleanup", after[name], rows, fixturetest.CompareOptions{})
	}
	// Main keeps its tagged versions and latest; the branch its tagged
	// version and latest.
	tags, _ := branch.ListTags(ctx, root)
	want := map[string][]uint64{"": {mainVersions[len(mainVersions)-1]}, "exp": {expVersions[len(expVersions)-1]}}
	for _, tag := range tags {
		want[tag.Branch] = append(want[tag.Branch], tag.Version)
	}
	for b, w := range want {
		store := blob.Store(root)
		if b != "" {
			store = blob.Sub(root, "tree/"+b)
		}
		got, err := dataset.ListVersions(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(w)
		if w = slices.Compact(w); !slices.Equal(got, w) {
			t.Errorf("branch %q: versions %v after cleanup, want %v", b, got, w)
		}
	}
	// A second cleanup finds nothing more.
	if stats, err := branch.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1, Now: func() time.Time { return later }}); err != nil ||
		stats != (dataset.CleanupStats{}) {
		t.Errorf("second cleanup: %+v, %v", stats, err)
	}
}

// readBranch scans the latest version of branch name to the end.
func readBranch(ctx context.Context, root blob.Store, name string) error {
	ds, err := branch.Open(ctx, root, branch.Ref{Branch: name}, nil)
	if err != nil {
		return err
	}
	sc, err := ds.Scan(nil)
	if err != nil {
		return err
	}
	for _, e := range sc.Batches(ctx) {
		if e != nil {
			err = e
		}
	}
	return err
}

// listSizes lists the keys of store with their sizes.
func listSizes(t *testing.T, store blob.Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for info, err := range store.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		out[info.Key] = info.Size
	}
	return out
}

// TestCleanupMainAloneBreaksBranch shows why dataset.Cleanup refuses a root
// holding branches: cleaning main as a lone dataset removes files the branch
// still reads. The obvious call deletes nothing and names the safe one;
// told that the branches keep nothing, it breaks the branch.
func TestCleanupMainAloneBreaksBranch(t *testing.T) {
	ctx := context.Background()
	_, root := copyWithBranchTag(t)
	later := time.Now().Add(time.Hour)
	before := listSizes(t, root)
	_, err := dataset.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1, Now: func() time.Time { return later }})
	if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), "branch.Cleanup") {
		t.Fatalf("dataset.Cleanup of a root with a branch: %v; want a refusal naming branch.Cleanup (lancer.ErrInvalidArgument)", err)
	}
	if after := listSizes(t, root); !maps.Equal(after, before) {
		t.Fatalf("a refused cleanup changed the files: %d before, %d after", len(before), len(after))
	}
	if err := readBranch(ctx, root, "exp"); err != nil {
		t.Fatalf("the branch no longer reads after a refused cleanup: %v", err)
	}

	// What the refusal prevents: the same cleanup with nothing kept for
	// the branch.
	keepNothing := func(string) bool { return false }
	if _, err := dataset.Cleanup(ctx, root, &dataset.CleanupOptions{OlderThan: -1, Now: func() time.Time { return later }, RefFiles: keepNothing}); err != nil {
		t.Fatal(err)
	}
	if err := readBranch(ctx, root, "exp"); err == nil {
		t.Fatal("the branch still reads after main was cleaned alone: the test no longer shows anything")
	}
	checktest.ExpectViolations(root, "B1", "D4")
	r, err := branch.Check(ctx, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, v := range r.Violations {
		found[v.Invariant] = true
	}
	if !found["D4"] || !found["B1"] {
		t.Errorf("Check found %v; want the branch's missing files (D4) and the dangling tags (B1)", r.Violations)
	}
}
