package manifest

import (
	"testing"

	"github.com/lancerdb/lancer/blob"
)

// TestOwnKey: the keys of a dataset's own layout, and not those of a
// dataset root nested in one of its folders (branch p/data of branch p,
// at tree/p/data/, whose files read data/<root entry>/... from p).
func TestOwnKey(t *testing.T) {
	for key, want := range map[string]bool{
		"_versions/18446744073709551614.manifest": true,
		"_versions/latest_version_hint.json":      true,
		"_versions/.lancer-tmp-01":                true,
		"_transactions/1-x.txn":                   true,
		"_deletions/0-1-2.arrow":                  true,
		"data/x.lance":                            true,
		"data/x/01.blob":                          true,
		"_indices/6e51a605/index.idx":             true,
		"_indices/6e51a605/part/0.lance":          true,

		"_versions/_versions/1.manifest":     false, // branch p/_versions
		"_versions/data/x.lance":             false,
		"data/data/x.lance":                  false, // branch p/data
		"data/_versions/1.manifest":          false,
		"data/_deletions/0-1-2.arrow":        false,
		"data/x/_latest.manifest":            false,
		"_indices/_versions/1.manifest":      false, // branch p/_indices
		"_indices/data/x.lance":              false,
		"_deletions/_transactions/1-x.txn":   false,
		"_transactions/_versions/1.manifest": false,
		"_versions/x/1.manifest":             false, // a branch p/_versions/x
		"data/a/b/c.lance":                   false,
		"_indices/6e51a605":                  false,
		"tree/b/_versions/1.manifest":        false, // branches
		"_refs/tags/t.json":                  false,
		"x.lance":                            false,
		"lancer-demo.json":                   false,
	} {
		if got := OwnKey(key); got != want {
			t.Errorf("OwnKey(%q) = %v, want %v", key, got, want)
		}
	}
}

// TestRootPath: a local root is recorded as its absolute directory, any
// other store as its URI.
func TestRootPath(t *testing.T) {
	dir := t.TempDir()
	local, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := RootPath(local); got != local.Root() {
		t.Errorf("RootPath(local) = %q, want %q", got, local.Root())
	}
	if got := RootPath(blob.NewMemStore("x")); got != "mem://x" {
		t.Errorf("RootPath(mem) = %q", got)
	}
}
