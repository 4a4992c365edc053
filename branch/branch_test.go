package branch_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/manifesttest"
)

// openDir opens the dataset in the local directory dir at ref (a local
// store holds nothing to close; table.Open is the SDK's way in by URI).
func openDir(ctx context.Context, dir string, ref branch.Ref, opts *dataset.OpenOptions) (*dataset.Dataset, error) {
	root, err := blob.NewLocalStore(dir)
	if err != nil {
		return nil, err
	}
	return branch.Open(ctx, root, ref, opts)
}

func scanAll(t *testing.T, ds *dataset.Dataset, mem memory.Allocator) [][]byte {
	t.Helper()
	sc, err := ds.Scan(&dataset.ScanOptions{WithRowID: true, BatchSize: 7})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	var rows [][]byte
	for rec, err := range sc.Batches(context.Background()) {
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		rows = append(rows, fixturetest.EncodeRows(t, rec)...)
	}
	return rows
}

// TestFixturesRefs checks tags and branches against what real Lance listed.
func TestFixturesRefs(t *testing.T) {
	fixturetest.Each(t, func(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
		ctx := context.Background()
		root, err := blob.NewLocalStore(fx.DatasetPath)
		if err != nil {
			t.Fatal(err)
		}
		tags, err := branch.ListTags(ctx, root)
		if err != nil {
			t.Fatalf("ListTags: %v", err)
		}
		if len(tags) != len(exp.Tags) {
			t.Errorf("%d tags, want %d", len(tags), len(exp.Tags))
		}
		for _, tag := range tags {
			want, ok := exp.Tags[tag.Name]
			if !ok {
				t.Errorf("unexpected tag %q", tag.Name)
				continue
			}
			if tag.Version != want.Version || tag.ManifestSize != want.ManifestSize || tag.Branch != "" {
				t.Errorf("tag %q = version %d size %d branch %q, want version %d size %d on main",
					tag.Name, tag.Version, tag.ManifestSize, tag.Branch, want.Version, want.ManifestSize)
			}
		}
		if exp.Branches.Error != "" {
			return
		}
		branches, err := branch.ListBranches(ctx, root)
		if err != nil {
			t.Fatalf("ListBranches: %v", err)
		}
		if len(branches) != len(exp.Branches.ByName) {
			t.Errorf("%d branches, want %d", len(branches), len(exp.Branches.ByName))
		}
		for _, b := range branches {
			want, ok := exp.Branches.ByName[b.Name]
			if !ok {
				t.Errorf("unexpected branch %q", b.Name)
				continue
			}
			wantParent := ""
			if want.ParentBranch != nil {
				wantParent = *want.ParentBranch
			}
			if b.ParentBranch != wantParent || b.ParentVersion != want.ParentVersion || b.ManifestSize != want.ManifestSize {
				t.Errorf("branch %q = %+v, want %+v", b.Name, b, want)
			}
		}
	})
}

// TestFixturesTagsOpen opens every tag and checks it lands on its version.
func TestFixturesTagsOpen(t *testing.T) {
	fixturetest.Each(t, func(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
		ctx := context.Background()
		for name, want := range exp.Tags {
			ds, err := openDir(ctx, fx.DatasetPath, branch.Ref{Tag: name}, nil)
			if err != nil {
				t.Fatalf("open tag %q: %v", name, err)
			}
			if ds.Version() != want.Version {
				t.Errorf("tag %q opened version %d, want %d", name, ds.Version(), want.Version)
			}
			for _, tt := range exp.TimeTravel {
				if tt.Version != want.Version {
					continue
				}
				n, err := ds.CountRows(ctx)
				if err != nil || int64(n) != tt.NumRows {
					t.Errorf("tag %q: %d rows (%v), want %d", name, n, err, tt.NumRows)
				}
			}
		}
	})
}

// TestFixturesBranch reads branch "exp" of the history fixtures: its rows,
// versions and every version's row count and columns. The fixtures record
// their parent at /fixtures/lance, which is not where they are read from, so
// this also proves the recorded root is mapped onto the opened one.
func TestFixturesBranch(t *testing.T) {
	seen := 0
	fixturetest.Each(t, func(t *testing.T, fx fixturetest.Fixture, exp *fixturetest.Expected) {
		if exp.Branch == nil || exp.Branch.Error != "" {
			return
		}
		seen++
		ctx := context.Background()
		mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
		defer mem.AssertSize(t, 0)
		ref := branch.Ref{Branch: exp.Branch.Name}
		ds, err := openDir(ctx, fx.DatasetPath, ref, &dataset.OpenOptions{Allocator: mem})
		if err != nil {
			t.Fatalf("open branch: %v", err)
		}
		if ds.Version() != exp.Branch.CurrentVersion {
			t.Errorf("branch at version %d, want %d", ds.Version(), exp.Branch.CurrentVersion)
		}
		if ds.Manifest().Branch != exp.Branch.Name {
			t.Errorf("manifest branch %q, want %q", ds.Manifest().Branch, exp.Branch.Name)
		}
		fixturetest.CompareRows(t, fx.Name+" branch rows", scanAll(t, ds, mem), exp.Branch.Rows, fixturetest.CompareOptions{})

		versions, err := ds.Versions(ctx)
		if err != nil {
			t.Fatalf("branch versions: %v", err)
		}
		var got, want []uint64
		for _, v := range versions {
			got = append(got, v.Version)
		}
		for _, v := range exp.Branch.Versions {
			want = append(want, v.Version)
		}
		if !slices.Equal(got, want) {
			t.Errorf("branch versions %v, want %v", got, want)
		}
		for _, tt := range exp.Branch.TimeTravel {
			ref.Version = tt.Version
			vds, err := openDir(ctx, fx.DatasetPath, ref, &dataset.OpenOptions{Allocator: mem})
			if err != nil {
				t.Fatalf("open %s: %v", ref, err)
			}
			n, err := vds.CountRows(ctx)
			if err != nil || int64(n) != tt.NumRows {
				t.Errorf("%s: %d rows (%v), want %d", ref, n, err, tt.NumRows)
			}
			var names []string
			for _, f := range vds.Schema().Fields {
				names = append(names, f.Name)
			}
			if !slices.Equal(names, tt.SchemaFields) {
				t.Errorf("%s: columns %v, want %v", ref, names, tt.SchemaFields)
			}
			rows := scanAll(t, vds, mem)
			if int64(len(rows)) != tt.NumRows {
				t.Errorf("%s: scanned %d rows, want %d", ref, len(rows), tt.NumRows)
			}
		}
	})
	if seen == 0 {
		t.Fatal("no fixture has a branch")
	}
}

// TestBranchOfMovedDataset copies a dataset with a branch to a new place
// and reads the branch there.
func TestBranchOfMovedDataset(t *testing.T) {
	src := fixturetest.DatasetPath(t, "history_v2_2")
	exp := fixturetest.LoadExpected(t, "history_v2_2")
	dst := filepath.Join(t.TempDir(), "elsewhere", "copy.lance")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ds, err := openDir(context.Background(), dst, branch.Ref{Branch: "exp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fixturetest.CompareRows(t, "moved branch rows", scanAll(t, ds, memory.DefaultAllocator), exp.Branch.Rows, fixturetest.CompareOptions{})
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	path := fixturetest.DatasetPath(t, "history_v2_2")
	cases := []struct {
		ref  branch.Ref
		want error
	}{
		{branch.Ref{Branch: "nope"}, lancer.ErrNotFound},
		{branch.Ref{Tag: "nope"}, lancer.ErrNotFound},
		{branch.Ref{Tag: "final", Version: 2}, lancer.ErrInvalidArgument},
		{branch.Ref{Branch: "../x"}, lancer.ErrInvalidArgument},
		{branch.Ref{Version: 999}, lancer.ErrNotFound},
		{branch.Ref{Branch: "exp", Version: 2}, lancer.ErrNotFound}, // the branch starts at version 4
	}
	for _, c := range cases {
		if _, err := openDir(ctx, path, c.ref, nil); !errors.Is(err, c.want) {
			t.Errorf("open %s: err %v, want %v", c.ref, err, c.want)
		}
	}
}

func TestNameRules(t *testing.T) {
	for _, ok := range []string{"v1", "release-1.0", "a_b", "größe"} {
		if err := branch.CheckTagName(ok); err != nil {
			t.Errorf("tag %q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".x", "x.", "a..b", "x.lock", "a/b", "a b", "a€"} {
		if err := branch.CheckTagName(bad); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("tag %q accepted (%v)", bad, err)
		}
	}
	for _, ok := range []string{"exp", "feature/x", "a/b/c"} {
		if err := branch.CheckBranchName(ok); err != nil {
			t.Errorf("branch %q rejected: %v", ok, err)
		}
	}
	for _, bad := range []string{"main", "/x", "x/", "a//b", "a/../b", "a\\b", "x.lock"} {
		if err := branch.CheckBranchName(bad); !errors.Is(err, lancer.ErrInvalidArgument) {
			t.Errorf("branch %q accepted (%v)", bad, err)
		}
	}
	// A segment named like a dataset root's entry: the branch's folder
	// would lie inside its parent's own (tree/feature/_versions/).
	for _, c := range []struct{ name, seg string }{
		{"feature/_versions", "_versions"}, {"a/data", "data"}, {"_indices", "_indices"},
		{"a/_deletions/b", "_deletions"}, {"a/_transactions", "_transactions"},
		{"a/_refs", "_refs"}, {"x/tree", "tree"}, {"a/_blobs", "_blobs"},
		{"a/_mem_wal", "_mem_wal"}, {"a/_latest.manifest", "_latest.manifest"},
		// The same folders on a case-insensitive file system.
		{"feature/_Versions", "_Versions"}, {"a/DATA", "DATA"},
	} {
		err := branch.CheckBranchName(c.name)
		if !errors.Is(err, lancer.ErrInvalidArgument) || !strings.Contains(err.Error(), fmt.Sprintf("segment %q", c.seg)) {
			t.Errorf("branch %q: %v, want an invalid argument naming segment %q", c.name, err, c.seg)
		}
	}
}

// TestMainLineBasePathOpensRecorded opens, as the main line, a dataset whose
// manifests reach another dataset through an unnamed base path, as a shallow
// clone of a version does. That base path is not the opened root: its files
// are read where the manifest says.
func TestMainLineBasePathOpensRecorded(t *testing.T) {
	src := fixturetest.DatasetPath(t, "history_v2_2")
	exp := fixturetest.LoadExpected(t, "history_v2_2")
	dir := t.TempDir()
	source := filepath.Join(dir, "source.lance")
	clone := filepath.Join(dir, "clone.lance")
	if err := os.CopyFS(source, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	// Branch exp's root is a shallow clone of main@4 plus its own commits.
	if err := os.CopyFS(clone, os.DirFS(filepath.Join(src, "tree", "exp"))); err != nil {
		t.Fatal(err)
	}
	manifests, err := filepath.Glob(filepath.Join(clone, "_versions", "*.manifest"))
	if err != nil || len(manifests) == 0 {
		t.Fatalf("manifests of the clone: %v, %v", manifests, err)
	}
	for _, path := range manifests {
		manifesttest.Edit(t, path, func(m *manifest.Manifest) {
			for i, bp := range m.BasePaths {
				if bp.Name != "" {
					t.Fatalf("base path %v has a name", bp)
				}
				m.BasePaths[i].Path = source
			}
		})
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	ds, err := openDir(context.Background(), clone, branch.Ref{}, &dataset.OpenOptions{Allocator: mem})
	if err != nil {
		t.Fatal(err)
	}
	fixturetest.CompareRows(t, "shallow clone rows", scanAll(t, ds, mem), exp.Branch.Rows, fixturetest.CompareOptions{})
}

// TestTagWithoutVersion: a tag file must name a version. Version 0 is no
// version (they start at 1), and must not open the latest one.
func TestTagWithoutVersion(t *testing.T) {
	ctx := context.Background()
	root := blob.NewMemStore(t.Name())
	for name, body := range map[string]string{
		"zero":    `{"branch": null, "version": 0, "manifestSize": 10}`,
		"missing": `{"branch": null, "manifestSize": 10}`,
	} {
		if err := root.Write(ctx, "_refs/tags/"+name+".json", []byte(body)); err != nil {
			t.Fatal(err)
		}
		if tag, err := branch.GetTag(ctx, root, name); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("GetTag(%s) = %+v, %v; want ErrCorrupt", name, tag, err)
		}
		if _, err := branch.Open(ctx, root, branch.Ref{Tag: name}, nil); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("Open(tag %s): %v, want ErrCorrupt", name, err)
		}
	}
}
