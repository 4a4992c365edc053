package branch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// files lists the files under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

func TestDeleteBranch(t *testing.T) {
	ctx := context.Background()
	dir, root := newDataset(t, 100, 20, 30)
	mainFiles := files(t, dir)
	mainIDs := openIDs(t, root, branch.Ref{})

	// b gets its own data, then a child c forks from it, and a nested
	// branch b/n lives inside tree/b/.
	if _, err := branch.CreateBranch(ctx, root, "b", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	bds := mustOpen(t, root, branch.Ref{Branch: "b"})
	r := rowsReader(500, 520, 20)
	bds, err := bds.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if bds, err = bds.Delete(ctx, "id = 3 OR id = 505", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateBranch(ctx, root, "c", branch.Ref{Branch: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	// More on b after the fork: only b needs it.
	r = rowsReader(600, 610, 20)
	if _, err = bds.Append(ctx, r, nil); err != nil {
		t.Fatal(err)
	}
	r.Release()
	if _, err := branch.CreateBranch(ctx, root, "b/n", branch.Ref{Branch: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	// And a file only b ever has.
	r = rowsReader(700, 710, 20)
	last, err := mustOpen(t, root, branch.Ref{Branch: "b"}).Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	onlyB := "tree/b/data/" + last.Manifest().Fragments[len(last.Manifest().Fragments)-1].Files[0].Path
	cIDs := openIDs(t, root, branch.Ref{Branch: "c"})
	nIDs := openIDs(t, root, branch.Ref{Branch: "b/n"})
	bFiles := files(t, filepath.Join(dir, "tree", "b"))

	// A tag into b blocks the deletion.
	if _, err := branch.CreateTag(ctx, root, "pin", branch.Ref{Branch: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.DeleteBranch(ctx, root, "b", nil); !errors.Is(err, lancer.ErrConflict) || !strings.Contains(err.Error(), "pin") {
		t.Fatalf("delete of a tagged branch: %v", err)
	}
	if err := branch.DeleteTag(ctx, root, "pin"); err != nil {
		t.Fatal(err)
	}

	dry, err := branch.DeleteBranch(ctx, root, "b", &branch.DiscardOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := files(t, filepath.Join(dir, "tree", "b")); !slices.Equal(got, bFiles) {
		t.Fatalf("dry run removed files")
	}
	if _, err := branch.GetBranch(ctx, root, "b"); err != nil {
		t.Fatalf("dry run removed the ref: %v", err)
	}
	stats, err := branch.DeleteBranch(ctx, root, "b", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stats.Files, dry.Files) || stats.FilesRemoved != len(stats.Files) || stats.BytesRemoved == 0 {
		t.Errorf("stats %+v, dry run %+v", stats, dry)
	}
	if !slices.Contains(stats.Files, onlyB) {
		t.Errorf("%s, which only b had, is not among the removed %v", onlyB, stats.Files)
	}
	if _, err := os.Stat(filepath.Join(dir, onlyB)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s is still there: %v", onlyB, err)
	}
	t.Logf("removed %d files (%d bytes): %v", stats.FilesRemoved, stats.BytesRemoved, stats.Files)

	if _, err := branch.GetBranch(ctx, root, "b"); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("ref still there: %v", err)
	}
	if _, err := branch.DeleteBranch(ctx, root, "b", nil); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	// Main untouched, the child and the nested branch still read.
	if got := files(t, dir); !containsAll(got, mainFiles) {
		t.Errorf("main lost files")
	}
	if got := openIDs(t, root, branch.Ref{}); !slices.Equal(got, mainIDs) {
		t.Errorf("main rows changed")
	}
	if got := openIDs(t, root, branch.Ref{Branch: "c"}); !slices.Equal(got, cIDs) {
		t.Errorf("child rows changed")
	}
	if got := openIDs(t, root, branch.Ref{Branch: "b/n"}); !slices.Equal(got, nIDs) {
		t.Errorf("nested branch rows changed")
	}
	// What is left of tree/b (outside tree/b/n) is exactly what c and b/n
	// read there.
	var need []string
	for _, name := range []string{"c", "b/n"} {
		m := mustOpen(t, root, branch.Ref{Branch: name}).Manifest()
		var id uint32 = 99
		for _, bp := range m.BasePaths {
			if bp.Name == "b" {
				id = bp.ID
			}
		}
		add := func(key string) {
			if !slices.Contains(need, key) {
				need = append(need, key)
			}
		}
		for _, f := range m.Fragments {
			for _, df := range f.Files {
				if df.BaseID != nil && *df.BaseID == id {
					add("data/" + df.Path)
				}
			}
			if f.DeletionFile != nil && f.DeletionFile.BaseID != nil && *f.DeletionFile.BaseID == id {
				add(f.DeletionFile.Key(f.ID))
			}
		}
	}
	var left []string
	for _, f := range files(t, filepath.Join(dir, "tree", "b")) {
		if !strings.HasPrefix(f, "n/") {
			left = append(left, f)
		}
	}
	slices.Sort(need)
	if len(need) == 0 || !slices.Equal(left, need) {
		t.Errorf("left under tree/b: %v, the child needs %v", left, need)
	}

	// Deleting the child and the nested branch leaves nothing of theirs.
	for _, name := range []string{"c", "b/n"} {
		if _, err := branch.DeleteBranch(ctx, root, name, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := files(t, filepath.Join(dir, "tree", "c")); len(got) != 0 {
		t.Errorf("left of c: %v", got)
	}
	if got := files(t, filepath.Join(dir, "tree", "b")); len(got) != 0 {
		t.Errorf("left of b and b/n once nothing reads them: %v", got)
	}
	if bs, _ := branch.ListBranches(ctx, root); len(bs) != 0 {
		t.Errorf("branches left: %+v", bs)
	}
	if _, err := branch.DeleteBranch(ctx, root, "a..b", nil); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("bad name: %v", err)
	}
}

// TestDeleteFixtureBranch discards Lance's branch exp of a copied fixture.
func TestDeleteFixtureBranch(t *testing.T) {
	ctx := context.Background()
	dir, root := copyWithBranchTag(t)
	if _, err := branch.DeleteBranch(ctx, root, "exp", nil); !errors.Is(err, lancer.ErrConflict) {
		t.Fatalf("delete with tag on_exp: %v", err)
	}
	if err := branch.DeleteTag(ctx, root, "on_exp"); err != nil {
		t.Fatal(err)
	}
	mainIDs := openIDs(t, root, branch.Ref{})
	if _, err := branch.DeleteBranch(ctx, root, "exp", nil); err != nil {
		t.Fatal(err)
	}
	if got := files(t, filepath.Join(dir, "tree", "exp")); len(got) != 0 {
		t.Errorf("left: %v", got)
	}
	if got := openIDs(t, root, branch.Ref{}); !slices.Equal(got, mainIDs) {
		t.Errorf("main rows changed")
	}
	if _, err := dataset.Open(ctx, root, nil); err != nil {
		t.Error(err)
	}
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
