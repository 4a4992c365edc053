package branch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/checktest"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

// rowsReader returns rows id in [from, to) with a payload of size bytes.
func rowsReader(from, to int64, size int) array.RecordReader {
	mem := memory.DefaultAllocator
	ib := array.NewInt64Builder(mem)
	defer ib.Release()
	sb := array.NewStringBuilder(mem)
	defer sb.Release()
	for i := from; i < to; i++ {
		ib.Append(i)
		p := fmt.Sprintf("row %d ", i)
		if len(p) < size {
			p += strings.Repeat("x", size-len(p))
		}
		sb.Append(p)
	}
	cols := []arrow.Array{ib.NewArray(), sb.NewArray()}
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "payload", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec := array.NewRecordBatch(schema, cols, to-from)
	for _, c := range cols {
		c.Release()
	}
	r, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		panic(err)
	}
	return r
}

// newDataset writes a dataset of ids [0, n) in a temporary directory, in
// fragments of at most perFile rows, and appends [n, n+10).
func newDataset(t *testing.T, n int64, size, perFile int) (string, blob.Store) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "t.lance")
	root, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanRootWhenDone(t, root)
	r := rowsReader(0, n, size)
	ds, err := dataset.Write(ctx, root, r, &dataset.WriteOptions{MaxRowsPerFile: perFile})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	r = rowsReader(n, n+10, size)
	_, err = ds.Append(ctx, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	return dir, root
}

// ids returns the sorted ids of ds.
func ids(t *testing.T, ds *dataset.Dataset) []int64 {
	t.Helper()
	sc, err := ds.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rec, err := range sc.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
	}
	slices.Sort(out)
	return out
}

func openIDs(t *testing.T, root blob.Store, ref branch.Ref) []int64 {
	t.Helper()
	ds, err := branch.Open(context.Background(), root, ref, nil)
	if err != nil {
		t.Fatalf("open %s: %v", ref, err)
	}
	return ids(t, ds)
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func TestCreateBranchZeroCopy(t *testing.T) {
	ctx := context.Background()
	dir, local := newDataset(t, 20000, 200, 5000) // about 4 MB
	root := blob.NewCountingStore(local)
	root.StartLog()
	main, err := branch.Open(ctx, root, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := branch.CreateBranch(ctx, root, "feat/x", branch.Ref{}, &branch.CreateBranchOptions{Metadata: map[string]string{"who": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, r := range root.Log() {
		if r.Op != blob.OpWrite && r.Op != blob.OpCreateIfAbsent && r.Op != blob.OpNewWriter {
			continue
		}
		written = append(written, r.Key)
		switch key := r.Key; {
		case key == "_refs/branches/feat%2Fx.json",
			strings.HasPrefix(key, "tree/feat/x/_versions/"),
			strings.HasPrefix(key, "tree/feat/x/_transactions/"):
		default:
			t.Errorf("wrote %s", key)
		}
	}
	total := root.Snapshot().BytesWritten()
	if total >= 64<<10 {
		t.Errorf("creating a branch wrote %d bytes", total)
	}
	t.Logf("creating a branch of a %d-row dataset wrote %d bytes: %v", 20010, total, written)

	m := ds.Manifest()
	if ds.Version() != main.Version() || m.Branch != "feat/x" {
		t.Errorf("branch at version %d branch %q, want %d feat/x", ds.Version(), m.Branch, main.Version())
	}
	wantBase := manifest.BasePath{ID: 0, IsDatasetRoot: true, Path: dir}
	if len(m.BasePaths) != 1 || m.BasePaths[0] != wantBase {
		t.Errorf("base paths %+v, want %+v", m.BasePaths, wantBase)
	}
	for _, f := range m.Fragments {
		for _, df := range f.Files {
			if df.BaseID == nil || *df.BaseID != 0 {
				t.Errorf("fragment %d file %s base %v", f.ID, df.Path, df.BaseID)
			}
		}
	}
	if m.ReaderFeatureFlags&manifest.FlagBasePaths == 0 {
		t.Errorf("reader flags %v", m.ReaderFeatureFlags)
	}
	versions, err := ds.Versions(ctx)
	if err != nil || len(versions) != 1 || versions[0].Operation != "Clone" {
		t.Errorf("versions %+v, %v", versions, err)
	}
	if got, want := ids(t, ds), ids(t, main); !slices.Equal(got, want) {
		t.Errorf("branch has %d rows, main %d", len(got), len(want))
	}

	b, err := branch.GetBranch(ctx, root, "feat/x")
	if err != nil {
		t.Fatal(err)
	}
	info, err := main.Store().Stat(ctx, main.ManifestKey())
	if err != nil {
		t.Fatal(err)
	}
	if info.Size <= 0 || b.ParentBranch != "" || b.ParentVersion != main.Version() || b.ManifestSize != info.Size || b.Metadata["who"] != "test" || b.CreatedAt.IsZero() {
		t.Errorf("branch %+v", b)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "_refs", "branches", "feat%2Fx.json"))
	checkKeyOrder(t, raw, "parentBranch", "identifier", "version_mapping", "parentVersion", "createAt", "manifestSize", "metadata")
	if _, err := os.Stat(filepath.Join(dir, "tree", "feat", "x", "_versions")); err != nil {
		t.Errorf("no real directory tree/feat/x: %v", err)
	}
}

// checkKeyOrder checks that the JSON keys appear in raw in this order.
func checkKeyOrder(t *testing.T, raw []byte, keys ...string) {
	t.Helper()
	at := 0
	for _, k := range keys {
		i := strings.Index(string(raw[at:]), `"`+k+`"`)
		if i < 0 {
			t.Errorf("key %q missing or out of order in\n%s", k, raw)
			return
		}
		at += i
	}
	if !json.Valid(raw) || !strings.HasPrefix(string(raw), "{\n  \"") {
		t.Errorf("not pretty-printed JSON:\n%s", raw)
	}
}

// TestBranchWrites writes on a lancer branch: main does not change, new
// files land under tree/<b>/, and the branch of a branch sees its parent.
func TestBranchWrites(t *testing.T) {
	ctx := context.Background()
	dir, root := newDataset(t, 100, 20, 30)
	if _, err := branch.CreateBranch(ctx, root, "b", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	mainBefore := openIDs(t, root, branch.Ref{})
	writeOnBranch(t, root, "b", 1000)
	if got := openIDs(t, root, branch.Ref{}); !slices.Equal(got, mainBefore) {
		t.Errorf("main changed: %d rows", len(got))
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "data"))
	before := len(entries)
	branchData, _ := os.ReadDir(filepath.Join(dir, "tree", "b", "data"))
	if len(branchData) == 0 {
		t.Error("no data files under tree/b/data")
	}
	if entries, _ = os.ReadDir(filepath.Join(dir, "data")); len(entries) != before {
		t.Errorf("main's data/ changed")
	}

	// A branch of the branch: base paths main (0) and b (1, named).
	child, err := branch.CreateBranch(ctx, root, "c", branch.Ref{Branch: "b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	bp := child.Manifest().BasePaths
	if len(bp) != 2 || bp[0].Name != "" || bp[0].Path != dir || bp[1] != (manifest.BasePath{ID: 1, Name: "b", IsDatasetRoot: true, Path: dir + "/tree/b"}) {
		t.Errorf("child base paths %+v", bp)
	}
	if got, want := ids(t, child), openIDs(t, root, branch.Ref{Branch: "b"}); !slices.Equal(got, want) {
		t.Errorf("child %v, parent %v", got, want)
	}
	cb, err := branch.GetBranch(ctx, root, "c")
	if err != nil || cb.ParentBranch != "b" {
		t.Errorf("child %+v %v", cb, err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "_refs", "branches", "c.json"))
	var f struct {
		Identifier struct {
			VersionMapping [][]any `json:"version_mapping"`
		} `json:"identifier"`
	}
	if err := json.Unmarshal(raw, &f); err != nil || len(f.Identifier.VersionMapping) != 2 {
		t.Errorf("child lineage %s (%v)", raw, err)
	}
	writeOnBranch(t, root, "c", 2000)
}

// writeOnBranch appends, deletes, updates and compacts on branch b,
// checking the rows after each, and that fragment ids stay unique.
func writeOnBranch(t *testing.T, root blob.Store, b string, base int64) {
	t.Helper()
	ctx := context.Background()
	ref := branch.Ref{Branch: b}
	ds, err := branch.Open(ctx, root, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := ids(t, ds)
	r := rowsReader(base, base+25, 20)
	ds, err = ds.Append(ctx, r, &dataset.AppendOptions{MaxRowsPerFile: 10})
	r.Release()
	if err != nil {
		t.Fatalf("append on %s: %v", b, err)
	}
	want = append(want, seq(base, base+25)...)
	slices.Sort(want)
	check := func(what string) {
		t.Helper()
		got := openIDs(t, root, ref)
		if !slices.Equal(got, want) {
			t.Errorf("%s on %s: %d rows, want %d", what, b, len(got), len(want))
		}
		d, _ := branch.Open(ctx, root, ref, nil)
		if d.Manifest().Branch != b {
			t.Errorf("%s on %s: manifest branch %q", what, b, d.Manifest().Branch)
		}
	}
	check("append")
	if ds, err = ds.Delete(ctx, "id % 4 = 1", nil); err != nil {
		t.Fatalf("delete on %s: %v", b, err)
	}
	want = slices.DeleteFunc(want, func(id int64) bool { return id%4 == 1 })
	check("delete")
	if ds, _, err = ds.Update(ctx, map[string]string{"payload": "'updated'"}, "id % 4 = 2", nil); err != nil {
		t.Fatalf("update on %s: %v", b, err)
	}
	check("update")
	if ds, _, err = ds.Compact(ctx, &dataset.CompactOptions{TargetRowsPerFragment: 1000}); err != nil {
		t.Fatalf("compact on %s: %v", b, err)
	}
	check("compact")
	seen := map[uint64]bool{}
	for _, f := range ds.Manifest().Fragments {
		if seen[f.ID] {
			t.Errorf("fragment id %d twice", f.ID)
		}
		seen[f.ID] = true
	}
}

// TestFixtureBranchWrites writes on Lance's branch exp of a copied
// fixture (whose base path names where Lance made it, not the copy).
func TestFixtureBranchWrites(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "history.lance")
	if err := os.CopyFS(dir, os.DirFS(fixturetest.DatasetPath(t, "history_v2_2"))); err != nil {
		t.Fatal(err)
	}
	root, err := blob.NewLocalStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := branch.Open(ctx, root, branch.Ref{Branch: "exp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	mainBefore := mustCount(t, mustOpen(t, root, branch.Ref{}))
	// Append the branch's first batch of rows again (the fixture's schema).
	sc, err := exp.Scan(&dataset.ScanOptions{BatchSize: 10})
	if err != nil {
		t.Fatal(err)
	}
	var rec arrow.RecordBatch
	for r, err := range sc.Batches(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		rec = r
		rec.Retain()
		break
	}
	if rec == nil {
		t.Fatal("no rows")
	}
	added := int(rec.NumRows())
	rr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	before := mustCount(t, exp)
	d, err := exp.Append(ctx, rr, nil)
	rr.Release()
	if err != nil {
		t.Fatalf("append on exp: %v", err)
	}
	if n := mustCount(t, d); n != before+added {
		t.Errorf("append: %d rows, want %d", n, before+added)
	}
	before += added
	d, err = d.Delete(ctx, "id % 5 = 0", nil)
	if err != nil {
		t.Fatalf("delete on exp: %v", err)
	}
	afterDelete := mustCount(t, d)
	if afterDelete >= before {
		t.Errorf("delete removed nothing: %d → %d", before, afterDelete)
	}
	if d, _, err = d.Update(ctx, map[string]string{"id": "id + 1000"}, "id % 5 = 1", nil); err != nil {
		t.Fatalf("update on exp: %v", err)
	}
	if d, _, err = d.Compact(ctx, &dataset.CompactOptions{TargetRowsPerFragment: 1000}); err != nil {
		t.Fatalf("compact on exp: %v", err)
	}
	reopened := mustOpen(t, root, branch.Ref{Branch: "exp"})
	if reopened.Version() != d.Version() || mustCount(t, reopened) != afterDelete {
		t.Errorf("exp at %d with %d rows, want %d with %d", reopened.Version(), mustCount(t, reopened), d.Version(), afterDelete)
	}
	if n := mustCount(t, mustOpen(t, root, branch.Ref{})); n != mainBefore {
		t.Errorf("main has %d rows, had %d", n, mainBefore)
	}
	// A lancer branch of Lance's branch.
	child, err := branch.CreateBranch(ctx, root, "exp/child", branch.Ref{Branch: "exp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mustCount(t, child) != afterDelete {
		t.Errorf("child has %d rows, want %d", mustCount(t, child), afterDelete)
	}
}

func mustOpen(t *testing.T, root blob.Store, ref branch.Ref) *dataset.Dataset {
	t.Helper()
	ds, err := branch.Open(context.Background(), root, ref, nil)
	if err != nil {
		t.Fatalf("open %s: %v", ref, err)
	}
	return ds
}

func mustCount(t *testing.T, ds *dataset.Dataset) int {
	t.Helper()
	n, err := ds.CountRows(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func TestCreateBranchErrors(t *testing.T) {
	ctx := context.Background()
	_, root := newDataset(t, 10, 5, 100)
	if _, err := branch.CreateBranch(ctx, root, "b", branch.Ref{}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateTag(ctx, root, "t1", branch.Ref{Version: 1}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		from branch.Ref
		want error
	}{
		{"b", branch.Ref{}, lancer.ErrAlreadyExists},
		{"main", branch.Ref{}, lancer.ErrInvalidArgument},
		{"a..b", branch.Ref{}, lancer.ErrInvalidArgument},
		{"x/", branch.Ref{}, lancer.ErrInvalidArgument},
		{"n1", branch.Ref{Version: 99}, lancer.ErrNotFound},
		{"n2", branch.Ref{Branch: "nope"}, lancer.ErrNotFound},
		{"n3", branch.Ref{Tag: "nope"}, lancer.ErrNotFound},
		{"n4", branch.Ref{Tag: "t1", Version: 1}, lancer.ErrInvalidArgument},
	}
	for _, c := range cases {
		if _, err := branch.CreateBranch(ctx, root, c.name, c.from, nil); !errors.Is(err, c.want) {
			t.Errorf("create %q from %s: %v, want %v", c.name, c.from, err, c.want)
		}
	}
	// From a tag: the tagged version.
	ds, err := branch.CreateBranch(ctx, root, "from-tag", branch.Ref{Tag: "t1"}, nil)
	if err != nil || ds.Version() != 1 || mustCount(t, ds) != 10 {
		t.Fatalf("from tag: %v", err)
	}
	// From a branch version.
	if _, err := branch.CreateBranch(ctx, root, "from-b", branch.Ref{Branch: "b", Version: 2}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCreateBranchConcurrent(t *testing.T) {
	ctx := context.Background()
	for _, sameVersion := range []bool{true, false} {
		_, root := newDataset(t, 10, 5, 100)
		var wins, exists atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				from := branch.Ref{}
				if !sameVersion {
					from.Version = uint64(1 + i%2)
				}
				_, err := branch.CreateBranch(ctx, root, "race", from, nil)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, lancer.ErrAlreadyExists):
					exists.Add(1)
				default:
					t.Errorf("create: %v", err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 || exists.Load() != 7 {
			t.Errorf("same version %v: %d wins, %d already exists", sameVersion, wins.Load(), exists.Load())
		}
		versions, err := dataset.ListVersions(ctx, blob.Sub(root, "tree/race"))
		b, berr := branch.GetBranch(ctx, root, "race")
		if err != nil || berr != nil || len(versions) != 1 || versions[0] != b.ParentVersion {
			t.Errorf("branch race: versions %v (%v), ref %+v (%v)", versions, err, b, berr)
		}
	}
}

func TestTags(t *testing.T) {
	ctx := context.Background()
	dir, root := newDataset(t, 10, 5, 100)
	if _, err := branch.CreateBranch(ctx, root, "b", branch.Ref{Version: 1}, nil); err != nil {
		t.Fatal(err)
	}
	tag, err := branch.CreateTag(ctx, root, "v1", branch.Ref{Version: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := branch.GetTag(ctx, root, "v1")
	if err != nil || got.Version != 1 || got.Branch != "" || got.ManifestSize != tag.ManifestSize || got.ManifestSize == 0 || !got.CreatedAt.Equal(tag.CreatedAt) {
		t.Errorf("tag %+v vs %+v (%v)", got, tag, err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "_refs", "tags", "v1.json"))
	checkKeyOrder(t, raw, "branch", "version", "createdAt", "updatedAt", "manifestSize", "metadata")
	if !strings.Contains(string(raw), `"branch": null`) {
		t.Errorf("main tag file:\n%s", raw)
	}

	if _, err := branch.CreateTag(ctx, root, "latest", branch.Ref{}); err != nil {
		t.Fatal(err)
	}
	if g, _ := branch.GetTag(ctx, root, "latest"); g.Version != 2 {
		t.Errorf("tag of main's latest: %+v", g)
	}
	if _, err := branch.CreateTag(ctx, root, "onb", branch.Ref{Branch: "b"}); err != nil {
		t.Fatal(err)
	}
	if g, _ := branch.GetTag(ctx, root, "onb"); g.Branch != "b" || g.Version != 1 {
		t.Errorf("tag on branch: %+v", g)
	}
	if _, err := branch.CreateTag(ctx, root, "copy", branch.Ref{Tag: "onb"}); err != nil {
		t.Fatal(err)
	}
	if g, _ := branch.GetTag(ctx, root, "copy"); g.Branch != "b" || g.Version != 1 {
		t.Errorf("tag from tag: %+v", g)
	}
	if got := openIDs(t, root, branch.Ref{Tag: "onb"}); len(got) != 10 {
		t.Errorf("tag onb opens %d rows", len(got))
	}

	// Errors.
	for _, c := range []struct {
		name   string
		target branch.Ref
		want   error
	}{
		{"v1", branch.Ref{Version: 2}, lancer.ErrAlreadyExists},
		{"a/b", branch.Ref{}, lancer.ErrInvalidArgument},
		{".x", branch.Ref{}, lancer.ErrInvalidArgument},
		{"n", branch.Ref{Version: 9}, lancer.ErrNotFound},
		{"n", branch.Ref{Branch: "nope"}, lancer.ErrNotFound},
		{"n", branch.Ref{Tag: "nope"}, lancer.ErrNotFound},
		{"n", branch.Ref{Branch: "b", Version: 2}, lancer.ErrNotFound},
	} {
		if _, err := branch.CreateTag(ctx, root, c.name, c.target); !errors.Is(err, c.want) {
			t.Errorf("create tag %q → %s: %v, want %v", c.name, c.target, err, c.want)
		}
	}

	// Move: version and updatedAt change, createdAt stays.
	moved, err := branch.UpdateTag(ctx, root, "v1", branch.Ref{Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := branch.GetTag(ctx, root, "v1")
	if g.Version != 2 || !g.CreatedAt.Equal(tag.CreatedAt) || !g.UpdatedAt.After(g.CreatedAt) || g.ManifestSize != moved.ManifestSize {
		t.Errorf("moved tag %+v, created %v", g, tag.CreatedAt)
	}
	if _, err := branch.UpdateTag(ctx, root, "nope", branch.Ref{Version: 1}); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("move missing tag: %v", err)
	}
	if _, err := branch.UpdateTag(ctx, root, "v1", branch.Ref{Version: 7}); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("move to missing version: %v", err)
	}
	if err := branch.DeleteTag(ctx, root, "v1"); err != nil {
		t.Fatal(err)
	}
	if err := branch.DeleteTag(ctx, root, "v1"); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
	if err := branch.DeleteTag(ctx, root, "a/b"); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("delete bad name: %v", err)
	}
	if _, err := dataset.LatestVersion(ctx, root); err != nil {
		t.Errorf("deleting a tag broke main: %v", err)
	}

	// Concurrent creation of one tag: exactly one wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := branch.CreateTag(ctx, root, "race", branch.Ref{Version: 1})
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, lancer.ErrAlreadyExists) {
				t.Errorf("create tag: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d concurrent tag creations won", wins.Load())
	}
}

func TestParseRef(t *testing.T) {
	for s, want := range map[string]branch.Ref{
		"main":          {},
		"main@3":        {Version: 3},
		"@3":            {Version: 3},
		"exp":           {Branch: "exp"},
		"feature/x@12":  {Branch: "feature/x", Version: 12},
		"tag:v1":        {Tag: "v1"},
		"branch:v1":     {Branch: "v1"},
		"branch:b@2":    {Branch: "b", Version: 2},
		"branch:main@2": {Version: 2},
	} {
		got, err := branch.ParseRef(s)
		if err != nil || got != want {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "@", "b@", "b@0", "b@x", "tag:a/b", "a..b", "tag:", "b@1@2"} {
		if got, err := branch.ParseRef(s); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("ParseRef(%q) = %+v, %v; want ErrInvalidArgument", s, got, err)
		}
	}

	ctx := context.Background()
	_, root := newDataset(t, 10, 5, 100)
	for _, n := range []string{"both", "onlyb"} {
		if _, err := branch.CreateBranch(ctx, root, n, branch.Ref{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"both", "onlyt"} {
		if _, err := branch.CreateTag(ctx, root, n, branch.Ref{Version: 1}); err != nil {
			t.Fatal(err)
		}
	}
	for s, want := range map[string]branch.Ref{
		"onlyb": {Branch: "onlyb"}, "onlyt": {Tag: "onlyt"}, "tag:both": {Tag: "both"},
		"branch:both": {Branch: "both"}, "both@2": {Branch: "both", Version: 2}, "main": {},
	} {
		got, err := branch.ResolveRef(ctx, root, s)
		if err != nil || got != want {
			t.Errorf("ResolveRef(%q) = %+v, %v; want %+v", s, got, err, want)
		}
	}
	if _, err := branch.ResolveRef(ctx, root, "both"); !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), "tag:both") {
		t.Errorf("ambiguous: %v", err)
	}
	if _, err := branch.ResolveRef(ctx, root, "none"); !errors.Is(err, lancer.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
}

// TestRefNameLength creates a tag and a branch of the longest names on
// local disk, whose file names must fit, and refuses one byte more as a
// bad name rather than failing on the file system.
func TestRefNameLength(t *testing.T) {
	ctx := context.Background()
	_, root := newDataset(t, 10, 8, 10)
	longest := strings.Repeat("t", branch.MaxRefNameLength)
	if _, err := branch.CreateTag(ctx, root, longest, branch.Ref{Version: 1}); err != nil {
		t.Fatalf("tag of %d bytes: %v", len(longest), err)
	}
	if _, err := branch.GetTag(ctx, root, longest); err != nil {
		t.Fatalf("get tag of %d bytes: %v", len(longest), err)
	}
	// Each '/' is 3 bytes of the branch's ref file name.
	slashed := strings.Repeat("b/", 50) + strings.Repeat("b", branch.MaxRefNameLength-4*50)
	if _, err := branch.CreateBranch(ctx, root, slashed, branch.Ref{Version: 1}, nil); err != nil {
		t.Fatalf("branch of %d bytes with 50 '/': %v", len(slashed), err)
	}
	huge := strings.Repeat("x", 10000)
	for _, tc := range []struct {
		what string
		err  error
	}{
		{"tag", func() error { _, err := branch.CreateTag(ctx, root, longest+"t", branch.Ref{Version: 1}); return err }()},
		{"tag 10000", func() error { _, err := branch.CreateTag(ctx, root, huge, branch.Ref{Version: 1}); return err }()},
		{"get tag", func() error { _, err := branch.GetTag(ctx, root, huge); return err }()},
		{"delete tag", branch.DeleteTag(ctx, root, huge)},
		{"branch", func() error {
			_, err := branch.CreateBranch(ctx, root, slashed+"b", branch.Ref{Version: 1}, nil)
			return err
		}()},
		{"branch 10000", func() error { _, err := branch.CreateBranch(ctx, root, huge, branch.Ref{Version: 1}, nil); return err }()},
		{"open branch", func() error { _, err := branch.Open(ctx, root, branch.Ref{Branch: huge}, nil); return err }()},
	} {
		// Refs that may exist are read up to an object store's key length.
		limit := "at most 250"
		if tc.what == "get tag" || tc.what == "delete tag" || tc.what == "open branch" {
			limit = "at most 1024"
		}
		if msg := fmt.Sprint(tc.err); !errors.Is(tc.err, lancer.ErrInvalidArgument) || !strings.Contains(msg, limit) {
			t.Errorf("%s: %.300s, want ErrInvalidArgument naming the limit", tc.what, msg)
		}
	}
}

// TestLongStoredTagReadable: a tag longer than lancer creates, which
// another engine wrote on an object store (longer keys than a file system
// allows a file name), can still be read, resolved and deleted.
func TestLongStoredTagReadable(t *testing.T) {
	ctx := context.Background()
	root := blob.NewMemStore(t.Name())
	r := rowsReader(0, 10, 8)
	_, err := dataset.Write(ctx, root, r, nil)
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("t", 300)
	if _, err := branch.CreateTag(ctx, root, name, branch.Ref{Version: 1}); err == nil {
		t.Fatalf("created a tag of %d bytes", len(name))
	}
	w, err := root.NewWriter(ctx, "_refs/tags/"+name+".json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(`{"branch":null,"version":1,"manifestSize":0}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if tag, err := branch.GetTag(ctx, root, name); err != nil || tag.Version != 1 {
		t.Fatalf("get the stored tag: %+v %v", tag, err)
	}
	if ref, err := branch.ResolveRef(ctx, root, name); err != nil || ref.Tag != name {
		t.Fatalf("resolve the stored tag: %+v %v", ref, err)
	}
	if err := branch.DeleteTag(ctx, root, name); err != nil {
		t.Fatalf("delete the stored tag: %v", err)
	}
}

// TestCreateBranchRowIDSource: with stable row ids a branch's next row id
// starts a range the options' RowIDSource picks, above the parent's ids:
// the same source bytes pick the same range (a seeded test repeats), other
// bytes another; a source that runs dry allocates as Lance does, from the
// parent's next id.
func TestCreateBranchRowIDSource(t *testing.T) {
	ctx := context.Background()
	root, err := blob.NewLocalStore(filepath.Join(t.TempDir(), "t.lance"))
	if err != nil {
		t.Fatal(err)
	}
	checktest.CleanRootWhenDone(t, root)
	r := rowsReader(0, 10, 4)
	main, err := dataset.Write(ctx, root, r, &dataset.WriteOptions{EnableStableRowIDs: true})
	r.Release()
	if err != nil {
		t.Fatal(err)
	}
	next := func(name string, src []byte) uint64 {
		t.Helper()
		ds, err := branch.CreateBranch(ctx, root, name, branch.Ref{}, &branch.CreateBranchOptions{RowIDSource: bytes.NewReader(src)})
		if err != nil {
			t.Fatal(err)
		}
		return ds.Manifest().NextRowID
	}
	a, b, c := next("a", []byte{1, 2, 3, 4}), next("b", []byte{1, 2, 3, 4}), next("c", []byte{9, 9, 9, 0})
	if a != b || a == c {
		t.Errorf("next row ids %d, %d (same source bytes) and %d (other bytes): want the first two equal, the third not", a, b, c)
	}
	for _, id := range []uint64{a, c} {
		if id <= main.Manifest().NextRowID || id%(1<<40) != 0 {
			t.Errorf("next row id %d: want the start of a 2^40 range above main's %d", id, main.Manifest().NextRowID)
		}
	}
	if got := next("dry", nil); got != main.Manifest().NextRowID {
		t.Errorf("a dry source: next row id %d, want main's %d (Lance's allocation)", got, main.Manifest().NextRowID)
	}
}
