package server_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
)

// brokenOnPurpose holds the data folders of tests that damage a table on
// purpose: checkTablesWhenDone then expects violations rather than none.
var brokenOnPurpose sync.Map

// checkTablesWhenDone checks, when the test ends, the latest version of
// every line of every table under dir (branch.Check), and fails the test on
// a violation: whatever a client sends, the server must leave valid
// datasets. A test that failed already is left alone.
func checkTablesWhenDone(t *testing.T, dir string) {
	t.Helper()
	t.Cleanup(func() {
		_, broken := brokenOnPurpose.LoadAndDelete(dir)
		if t.Failed() {
			return
		}
		found := 0
		for _, root := range tableRoots(t, dir) {
			store, err := blob.NewLocalStore(root)
			if err != nil {
				t.Fatal(err)
			}
			r, err := branch.Check(context.Background(), store, nil)
			if errors.Is(err, lancer.ErrNotFound) {
				continue // a create that never committed: not a table
			}
			if err != nil {
				t.Errorf("check %s: %v", root, err)
				continue
			}
			found += len(r.Violations)
			for _, v := range r.Violations {
				if !broken {
					t.Errorf("check %s: %s", root, v)
				}
			}
		}
		if broken && found == 0 {
			t.Errorf("the test damaged a table under %s, but Check finds nothing wrong", dir)
		}
	})
}

// tableRoots returns the dataset roots under dir: the folders holding a
// _versions/ folder, not looking inside them (a branch is part of its
// table's family).
func tableRoots(t *testing.T, dir string) []string {
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
