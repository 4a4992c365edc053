package fixturetest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lancerdb/lancer/blob"
)

// DataFiles returns the data files (data/*.lance) of the main line of the
// fixture dataset name. It fails the test when there are none.
func DataFiles(t testing.TB, name string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(DatasetPath(t, name), "data", "*.lance"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no data files (%v)", name, err)
	}
	return files
}

// LocalFile returns a local store over the folder of the file at path and
// the file's key in it, which is how a test opens a fixture file by path.
func LocalFile(t testing.TB, path string) (blob.Store, string) {
	t.Helper()
	store, err := blob.NewLocalStore(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	return store, filepath.Base(path)
}

// Files returns the bytes of every file under the fixtures root whose name
// ends in suffix (".manifest", ".txn"), by path. It fails the test when
// there are none.
func Files(t testing.TB, suffix string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(Dir(t), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !strings.HasSuffix(path, suffix) {
			return err
		}
		b, err := os.ReadFile(path)
		out[path] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("fixturetest: no %s files", suffix)
	}
	return out
}

// MemStore writes files (key → bytes) into a fresh MemStore named after
// the test: a dataset, or a single file, laid out in memory.
func MemStore(t testing.TB, files map[string][]byte) *blob.MemStore {
	t.Helper()
	s := blob.NewMemStore(t.Name())
	for k, v := range files {
		if err := s.Write(context.Background(), k, v); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// DataFile is one data file of the fixtures.
type DataFile struct {
	Fixture string // "types_v2_2", or "encodings/strs_2_2"
	Dir     string // the data directory
	Name    string // file name in Dir
}

// StructuralFiles lists every 2.1+ data file of the fixtures: those of the
// lance/ fixtures of storage version 2.1 and later, and of every encodings/
// dataset, branch trees (tree/<branch>/data) included.
func StructuralFiles(t testing.TB) []DataFile {
	t.Helper()
	root := Dir(t)
	var out []DataFile
	filesOf := func(fixture, dataset string) {
		for _, pattern := range []string{"data/*.lance", "tree/*/data/*.lance"} {
			files, err := filepath.Glob(filepath.Join(dataset, pattern))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				out = append(out, DataFile{Fixture: fixture, Dir: filepath.Dir(f), Name: filepath.Base(f)})
			}
		}
	}
	for _, fx := range LoadManifest(t).Fixtures {
		if !strings.HasPrefix(fx.StorageVersion, "2.") || fx.StorageVersion == "2.0" {
			continue
		}
		filesOf(fx.Name, filepath.Join(root, "lance", fx.DatasetDir))
	}
	encs, err := filepath.Glob(filepath.Join(root, "encodings", "*.lance"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range encs {
		filesOf("encodings/"+strings.TrimSuffix(filepath.Base(d), ".lance"), d)
	}
	if len(out) == 0 {
		t.Fatal("fixturetest: no 2.1+ data files")
	}
	return out
}
