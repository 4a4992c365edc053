package dataset_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

func TestClone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := blob.NewLocalStore(filepath.Join(dir, "src.lance"))
	if err != nil {
		t.Fatal(err)
	}
	r := goods([]int64{1, 2, 3}, []string{"a", "b", "c"}, []float64{1, 2, 3})
	d, err := dataset.Write(ctx, src, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if d, err = d.Delete(ctx, "id = 2", nil); err != nil {
		t.Fatal(err)
	}

	dst, _ := blob.NewLocalStore(filepath.Join(dir, "dst.lance"))
	c, err := dataset.Clone(ctx, d, dst, &dataset.CloneOptions{BaseName: "v2", Branch: "b"})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest()
	if c.Version() != d.Version() || m.Branch != "b" || len(m.BasePaths) != 1 ||
		m.BasePaths[0] != (manifest.BasePath{ID: 0, Name: "v2", IsDatasetRoot: true, Path: src.Root()}) {
		t.Errorf("clone: version %d branch %q bases %+v", c.Version(), m.Branch, m.BasePaths)
	}
	for _, f := range m.Fragments {
		if *f.Files[0].BaseID != 0 || (f.DeletionFile != nil && *f.DeletionFile.BaseID != 0) {
			t.Errorf("fragment %d does not point at the source", f.ID)
		}
	}
	for _, ds := range []*dataset.Dataset{c, mustOpenStore(t, dst)} {
		if n, err := ds.CountRows(ctx); err != nil || n != 2 {
			t.Errorf("clone has %d rows (%v)", n, err)
		}
		if got := scanGoods(t, ds); len(got) != 2 {
			t.Errorf("clone scans %v", got)
		}
	}
	vs, err := c.Versions(ctx)
	if err != nil || len(vs) != 1 || vs[0].Operation != "Clone" {
		t.Errorf("versions %+v %v", vs, err)
	}

	// A clone of the clone gets the next base id; the old one stays.
	dst2, _ := blob.NewLocalStore(filepath.Join(dir, "dst2.lance"))
	c2, err := dataset.Clone(ctx, c, dst2, nil)
	if err != nil {
		t.Fatal(err)
	}
	bp := c2.Manifest().BasePaths
	if len(bp) != 2 || bp[1].ID != 1 || bp[1].Path != dst.Root() || bp[1].Name != "" || c2.Manifest().Branch != "" {
		t.Errorf("second clone bases %+v", bp)
	}
	if n, err := c2.CountRows(ctx); err != nil || n != 2 {
		t.Errorf("second clone %d rows %v", n, err)
	}
	// Writes on the clone land in it.
	r = goods([]int64{9}, []string{"z"}, []float64{9})
	c2, err = c2.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := c2.CountRows(ctx); n != 3 {
		t.Errorf("after append: %d rows", n)
	}
	if n, _ := d.CountRows(ctx); n != 2 {
		t.Errorf("source changed: %d rows", n)
	}

	// Into a dataset: refused, also concurrently (one wins).
	if _, err := dataset.Clone(ctx, d, dst, nil); !errors.Is(err, lancer.ErrAlreadyExists) {
		t.Errorf("clone into a dataset: %v", err)
	}
	race := blob.NewMemStore("race")
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := dataset.Clone(ctx, d, race, nil)
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, lancer.ErrAlreadyExists) {
				t.Errorf("clone: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d concurrent clones won", wins.Load())
	}
}

func mustOpenStore(t *testing.T, s blob.Store) *dataset.Dataset {
	t.Helper()
	d, err := dataset.Open(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func scanGoods(t *testing.T, d *dataset.Dataset) []int64 {
	t.Helper()
	s, err := d.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rec, err := range s.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(rec.NumRows()) {
			out = append(out, rec.Column(0).(interface{ Value(int) int64 }).Value(i))
		}
	}
	return out
}
