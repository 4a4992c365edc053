package branch_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// historyWithRefs writes a table of many small fragments and versions:
// version 1 (ids 0-9) and appends of 10 rows up to version 20, a tag on
// version 5 and a branch from main@10, then, after split, 5 more appends
// (versions 21-25). Versions 1-20 are older than split, the rest younger.
func historyWithRefs(t *testing.T) (root blob.Store, split time.Time) {
	t.Helper()
	ctx := context.Background()
	_, root = newDataset(t, 10, 20, 10) // versions 1 (0-9) and 2 (10-19)
	appendN := func(n int) {
		for range n {
			ds, err := dataset.Open(ctx, root, nil)
			if err != nil {
				t.Fatal(err)
			}
			from := int64(ds.Version()) * 10
			r := rowsReader(from, from+10, 20)
			_, err = ds.Append(ctx, r, nil)
			r.Release()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(18)
	if _, err := branch.CreateTag(ctx, root, "v5", branch.Ref{Version: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateBranch(ctx, root, "exp", branch.Ref{Version: 10}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // manifests record their time in milliseconds or finer
	split = time.Now()
	time.Sleep(10 * time.Millisecond)
	appendN(5)
	return root, split
}

// TestOptimize: a table of 25 one-fragment versions is compacted into one
// fragment, the versions older than the retention go but the tagged one
// and the one the branch was made from, and every ref reads what it read.
// A dry run first says the same and writes nothing.
func TestOptimize(t *testing.T) {
	ctx := context.Background()
	root, split := historyWithRefs(t)
	before := refStates(t, root, nil)
	mainIDs := openIDs(t, root, branch.Ref{})
	opts := func(dry bool) *branch.OptimizeOptions {
		return &branch.OptimizeOptions{
			DryRun: dry,
			// The retention cuts at split: versions 1-20 are older.
			Cleanup: &dataset.CleanupOptions{OlderThan: time.Hour, Now: func() time.Time { return split.Add(time.Hour) }},
		}
	}

	listing := listSizes(t, root)
	dry, err := branch.Optimize(ctx, root, opts(true))
	if err != nil {
		t.Fatal(err)
	}
	if after := listSizes(t, root); !maps.Equal(listing, after) {
		t.Fatalf("the dry run changed the store: %d keys before, %d after", len(listing), len(after))
	}
	want := dataset.CompactStats{FragmentsRemoved: 25, FragmentsAdded: 1, FilesRemoved: 25}
	if dry.Compact != want || dry.Cleanup.VersionsRemoved != 18 || dry.Version != 25 || dry.Versions != 25 {
		t.Errorf("dry run: %+v, want compaction %+v, 18 versions removed, at version 25 of 25", dry, want)
	}

	rep, err := branch.Optimize(ctx, root, opts(false))
	if err != nil {
		t.Fatal(err)
	}
	want.FilesAdded = 1
	if rep.Compact != want || rep.Cleanup.VersionsRemoved != 18 || rep.Version != 26 || rep.Versions != 8 || len(rep.Indices) != 0 {
		t.Errorf("optimize: %+v, want compaction %+v, 18 versions removed, at version 26 of 8", rep, want)
	}
	versions, err := dataset.ListVersions(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{5, 10, 21, 22, 23, 24, 25, 26}; !slices.Equal(versions, want) {
		t.Errorf("versions after optimize %v, want %v (tagged, the branch's base, younger ones)", versions, want)
	}
	ds, err := branch.Open(ctx, root, branch.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ds.Manifest().Fragments); n != 1 {
		t.Errorf("%d fragments after optimize, want 1", n)
	}
	if got := ids(t, ds); !slices.Equal(got, mainIDs) {
		t.Errorf("main after optimize has %d rows, want %d", len(got), len(mainIDs))
	}
	after := refStates(t, root, nil)
	delete(before, "main")
	delete(after, "main")
	for name, rows := range before {
		if !slices.EqualFunc(rows, after[name], slices.Equal) {
			t.Errorf("%s reads other rows after optimize", name)
		}
	}

	// Nothing left to do: no new version, nothing removed.
	again, err := branch.Optimize(ctx, root, opts(false))
	if err != nil || again.Version != 26 || again.Compact != (dataset.CompactStats{}) || again.Cleanup.VersionsRemoved != 0 {
		t.Errorf("optimize again: %+v, %v", again, err)
	}
}

// TestOptimizeSkips: each step can be turned off; with all off nothing
// changes.
func TestOptimizeSkips(t *testing.T) {
	ctx := context.Background()
	root, split := historyWithRefs(t)
	cl := &dataset.CleanupOptions{OlderThan: time.Hour, Now: func() time.Time { return split.Add(time.Hour) }}
	listing := listSizes(t, root)
	rep, err := branch.Optimize(ctx, root, &branch.OptimizeOptions{SkipCompact: true, SkipIndex: true, SkipCleanup: true, Cleanup: cl})
	if err != nil || rep.Version != 25 || rep.Versions != 25 || !maps.Equal(listing, listSizes(t, root)) {
		t.Fatalf("optimize with every step off: %+v, %v", rep, err)
	}
	rep, err = branch.Optimize(ctx, root, &branch.OptimizeOptions{SkipCompact: true, Cleanup: cl})
	if err != nil || rep.Compact != (dataset.CompactStats{}) || rep.Cleanup.VersionsRemoved != 18 || rep.Version != 25 {
		t.Fatalf("cleanup only: %+v, %v", rep, err)
	}
	rep, err = branch.Optimize(ctx, root, &branch.OptimizeOptions{SkipCleanup: true, Branch: "exp"})
	if err != nil || rep.Compact.FragmentsRemoved != 10 || rep.Cleanup.VersionsRemoved != 0 || rep.Branch != "exp" {
		t.Fatalf("compact exp only: %+v, %v", rep, err)
	}
	if got := openIDs(t, root, branch.Ref{Branch: "exp"}); !slices.Equal(got, seq(0, 100)) {
		t.Errorf("exp after its compaction: %d ids", len(got))
	}
}
