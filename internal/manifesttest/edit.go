// Package manifesttest edits the manifests of fixture copies for tests. It
// is apart from fixturetest because it reads manifests with
// dataset/manifest, whose own tests use fixturetest.
package manifesttest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// Edit edits the manifest file at path (a dataset root's
// _versions/<name>) in place, as tests do to a copy of a fixture (to point
// its base paths at the copy, say): the file is read, edit changes the
// manifest, and the file is written again with the same index segments and
// transaction.
func Edit(t testing.TB, path string, edit func(m *manifest.Manifest)) {
	t.Helper()
	dir, name := filepath.Split(path)
	store, err := blob.NewLocalStore(filepath.Dir(filepath.Clean(dir)))
	if err != nil {
		t.Fatal(err)
	}
	EditAt(t, store, manifest.VersionsDir+name, edit)
}

// EditAt rewrites the manifest at key in store with edit applied, keeping
// its transaction.
func EditAt(t testing.TB, store blob.Store, key string, edit func(m *manifest.Manifest)) {
	t.Helper()
	ctx := context.Background()
	c, err := manifest.ReadFile(ctx, store, key, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest.Clone()
	edit(m)
	var txn []byte
	if c.Transaction != nil {
		if txn, err = manifest.EncodeTransaction(c.Transaction); err != nil {
			t.Fatal(err)
		}
	}
	file, err := manifest.EncodeFile(m, txn)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Write(ctx, key, file); err != nil {
		t.Fatal(err)
	}
}
