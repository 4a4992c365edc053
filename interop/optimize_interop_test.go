package interop_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/blob"
	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// TestOptimizeInterop: a table of many small appends with a tag and a
// branch, optimized by lancer (branch.Optimize: compaction, then cleanup
// of the versions older than a cut), is read by real Lance 12 with the
// same rows as before the optimize, on main, on the branch, at the tag and
// at every version left.
func TestOptimizeInterop(t *testing.T) {
	node, ref := lanceRef(t)
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable_row_ids=%v", stable), func(t *testing.T) {
			optimizeInterop(t, node, ref, stable)
		})
	}
}

func optimizeInterop(t *testing.T, node, ref string, stable bool) {
	ctx := context.Background()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	uri := filepath.Join(t.TempDir(), "optimize.lance")
	root, err := blob.NewLocalStore(uri)
	if err != nil {
		t.Fatal(err)
	}
	co := dataset.CommitOptions{Allocator: mem}
	write := func(d *dataset.Dataset, from, to int64) *dataset.Dataset {
		r := histReader(t, mem, allRoles, allRoles, from, to)
		defer r.Release()
		if d == nil {
			d, err = dataset.Write(ctx, root, r, &dataset.WriteOptions{EnableStableRowIDs: stable, CommitOptions: co})
		} else {
			d, err = d.Append(ctx, r, &dataset.AppendOptions{CommitOptions: co})
		}
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := write(nil, 0, 5)
	for i := int64(1); i < 12; i++ {
		d = write(d, 10*i, 10*i+5) // versions 2-12
	}
	if d, err = d.Delete(ctx, "id % 7 = 3", &co); err != nil { // version 13
		t.Fatal(err)
	}
	if _, err := branch.CreateTag(ctx, root, "six", branch.Ref{Version: 6}); err != nil {
		t.Fatal(err)
	}
	if _, err := branch.CreateBranch(ctx, root, "exp", branch.Ref{Version: 9}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	split := time.Now()
	time.Sleep(10 * time.Millisecond)
	d = write(d, 200, 205) // version 14
	_ = d

	ids := func(r branch.Ref) []int64 {
		ds, err := branch.Open(ctx, root, r, &dataset.OpenOptions{Allocator: mem})
		if err != nil {
			t.Fatal(err)
		}
		sc, err := ds.Scan(&dataset.ScanOptions{Columns: []string{"id"}})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for rec, err := range sc.Batches(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
		}
		slices.Sort(out)
		return out
	}
	refs := []branch.Ref{{}, {Branch: "exp"}, {Tag: "six"}}
	before := map[string][]int64{}
	for _, r := range refs {
		before[r.String()] = ids(r)
	}

	rep, err := branch.Optimize(ctx, root, &branch.OptimizeOptions{
		Compact: &dataset.CompactOptions{CommitOptions: co},
		Cleanup: &dataset.CleanupOptions{OlderThan: time.Hour, Now: func() time.Time { return split.Add(time.Hour) }},
		Open:    &dataset.OpenOptions{Allocator: mem},
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Compact.FragmentsRemoved != 13 || rep.Compact.FragmentsAdded != 1 || rep.Cleanup.VersionsRemoved != 11 {
		t.Errorf("optimize: %+v, want 13 fragments compacted into 1 and 11 versions removed", rep)
	}
	for _, r := range refs {
		if got := ids(r); !slices.Equal(got, before[r.String()]) {
			t.Errorf("%s: lancer reads %d ids after optimize, %d before", r, len(got), len(before[r.String()]))
		}
	}
	versions, err := dataset.ListVersions(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{6, 9, 14, 15}; !slices.Equal(versions, want) {
		t.Errorf("versions after optimize %v, want %v", versions, want)
	}
	// Real Lance reads main and the branch, and every version left (the
	// tagged one too), as lancer does.
	agreeOnBranches(t, node, ref, uri, root, "", "exp")
	agree(t, node, ref, uri)
}
