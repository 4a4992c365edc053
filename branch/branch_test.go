package branch_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

func scanAll(t *testing.T, ds *dataset.Dataset, mem memory.Allocator) [][]byte {
	t.Helper()
	sc, err := ds.Scan(context.Background(), &dataset.ScanOptions{WithRowID: true, BatchSize: 7})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer sc.Release()
	var rows [][]byte
	for sc.Next() {
		rows = append(rows, fixturetest.EncodeRows(t, sc.RecordBatch())...)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scan: %v", err)
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
			ds, err := branch.OpenURI(ctx, fx.DatasetPath, branch.Ref{Tag: name}, nil)
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
		ds, err := branch.OpenURI(ctx, fx.DatasetPath, ref, &dataset.OpenOptions{Allocator: mem})
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
			vds, err := branch.OpenURI(ctx, fx.DatasetPath, ref, &dataset.OpenOptions{Allocator: mem})
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
	ds, err := branch.OpenURI(context.Background(), dst, branch.Ref{Branch: "exp"}, nil)
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
		if _, err := branch.OpenURI(ctx, path, c.ref, nil); !errors.Is(err, c.want) {
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
}
