// Package checktest runs lancer's checker (dataset.Check, branch.Check) on
// what a test wrote and fails the test on any violation: whatever a test
// makes through lancer must satisfy the numbered invariants of packages
// dataset and branch. It is for tests only.
//
// Package dataset's own internal tests cannot import it (it imports
// dataset); they keep their in-package checkWhenDone.
package checktest

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// allVersions is what the checks here check by default: every version of
// every line, so that an intermediate version a test wrote is not missed.
var allVersions = &dataset.CheckOptions{AllVersions: true}

// Clean checks every version of the one dataset in store (dataset.Check,
// no refs or branches) and fails t on each violation or on an error.
func Clean(t testing.TB, ctx context.Context, store blob.Store) {
	t.Helper()
	r, err := dataset.Check(ctx, store, allVersions)
	if err != nil {
		t.Errorf("check %s: %v", store.URI(), err)
		return
	}
	for _, v := range r.Violations {
		t.Errorf("check %s: %s", store.URI(), v)
	}
}

// CleanRoot checks the dataset family at root (branch.Check: its refs, and
// every version of every line) and fails t on each violation or on an
// error.
func CleanRoot(t testing.TB, ctx context.Context, root blob.Store) {
	t.Helper()
	found, err := checkRoot(ctx, root)
	report(t, root.URI(), nil, found, err)
}

// CleanURI opens the root at uri (blob.Open) and checks it as CleanRoot
// does.
func CleanURI(t testing.TB, ctx context.Context, uri string) {
	t.Helper()
	root, err := blob.Open(ctx, uri)
	if err != nil {
		t.Fatalf("check %s: %v", uri, err)
	}
	if c, ok := root.(io.Closer); ok {
		defer c.Close()
	}
	CleanRoot(t, ctx, root)
}

// CleanRootWhenDone checks root as CleanRoot does when the test ends (a
// t.Cleanup). A test that failed already is left alone; one that broke the
// family on purpose says so with ExpectViolations(root, ...).
func CleanRootWhenDone(t testing.TB, root blob.Store) {
	t.Helper()
	t.Cleanup(func() {
		want, _ := expected.LoadAndDelete(root)
		if t.Failed() {
			return
		}
		// t's own context is cancelled before its cleanups run.
		found, err := checkRoot(context.Background(), root)
		report(t, root.URI(), want, found, err)
	})
}

// CleanTreeWhenDone checks, when the test ends, every dataset family on
// local disk under dir: each folder holding a _versions/ folder (not
// looking inside it: a branch is part of its family's root), at the
// latest version of each line only, as a server leaves many tables of
// many versions behind. A folder whose dataset never committed (no
// manifest) is skipped. A test that broke a table under dir on purpose
// says so with ExpectViolations(dir, ...).
func CleanTreeWhenDone(t testing.TB, dir string) {
	t.Helper()
	t.Cleanup(func() {
		want, _ := expected.LoadAndDelete(dir)
		if t.Failed() {
			return
		}
		var found []branch.Violation
		var errs []error
		for _, root := range familyRoots(t, dir) {
			store, err := blob.NewLocalStore(root)
			if err != nil {
				t.Fatal(err)
			}
			r, err := branch.Check(context.Background(), store, nil)
			if errors.Is(err, lancer.ErrNotFound) {
				continue // a create that never committed: not a table
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			found = append(found, r.Violations...)
		}
		report(t, dir, want, found, errors.Join(errs...))
	})
}

// expected holds, by what a pending WhenDone check checks (a root store or
// a tree's directory), the invariants a test broke on purpose.
var expected sync.Map

// ExpectViolations tells the pending CleanRootWhenDone (target a
// blob.Store) or CleanTreeWhenDone (target a directory) check that the
// test broke what it checks on purpose: the check then expects to find
// exactly the given invariants (each at least once), or, with none given,
// at least one violation of any invariant, instead of none.
func ExpectViolations(target any, invariants ...string) {
	expected.Store(target, slices.Compact(slices.Sorted(slices.Values(invariants))))
}

// checkRoot runs branch.Check on every version for report.
func checkRoot(ctx context.Context, root blob.Store) ([]branch.Violation, error) {
	r, err := branch.Check(ctx, root, allVersions)
	if err != nil {
		return nil, err
	}
	return r.Violations, nil
}

// report fails t on err, and on found unless want (what ExpectViolations
// stored, nil when nothing was) matches it.
func report(t testing.TB, what string, want any, found []branch.Violation, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("check %s: %v", what, err)
		return
	}
	if want == nil {
		for _, v := range found {
			t.Errorf("check %s: %s", what, v)
		}
		return
	}
	var got []string
	for _, v := range found {
		got = append(got, v.Invariant)
	}
	got = slices.Compact(slices.Sorted(slices.Values(got)))
	switch w := want.([]string); {
	case len(w) == 0 && len(got) == 0:
		t.Errorf("check %s: the test broke it on purpose, but Check finds nothing wrong", what)
	case len(w) > 0 && !slices.Equal(got, w):
		t.Errorf("check %s: found %v, want %v (broken on purpose); violations:", what, got, w)
		for _, v := range found {
			t.Log(v)
		}
	}
}

// familyRoots returns the dataset roots under dir: the folders holding a
// _versions/ folder, not looking inside them.
func familyRoots(t testing.TB, dir string) []string {
	var roots []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case os.IsNotExist(err):
			return nil // a table dropped while the walk ran
		case err != nil:
			return err
		case !d.IsDir():
			return nil
		}
		if info, err := os.Stat(filepath.Join(path, "_versions")); err == nil && info.IsDir() {
			roots = append(roots, path)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list the tables under %s: %v", dir, err)
	}
	return roots
}
