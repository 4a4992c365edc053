package table_test

import (
	"context"
	"slices"
	"testing"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/table"
)

// TestOptimize: Optimize on a branch's handle compacts that branch (not
// main) and extends its index over the compacted rows, advances the handle, and a dry run
// leaves it where it was.
func TestOptimize(t *testing.T) {
	ctx := context.Background()
	_, tb := create(t, span(0, 10)...)
	if err := tb.CreateIndex(ctx, "vec", &dataset.CreateIndexOptions{Type: dataset.IndexIVFFlat, Partitions: 1}); err != nil {
		t.Fatal(err)
	}
	exp, err := tb.CreateBranch(ctx, "exp", table.Ref{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range int64(5) {
		r := rows(span(100+10*i, 110+10*i)...)
		err := exp.Append(ctx, r, nil)
		r.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	want := ids(t, exp)
	at := exp.Version()
	dry, err := exp.Optimize(ctx, &table.OptimizeOptions{DryRun: true, Branch: "ignored"})
	if err != nil || exp.Version() != at || dry.Branch != "exp" || dry.Compact.FragmentsRemoved != 5 ||
		len(dry.Indices) != 1 || dry.Indices[0].Fragments != 5 {
		t.Fatalf("dry run: %+v, %v; handle at %d (was %d)", dry, err, exp.Version(), at)
	}
	rep, err := exp.Optimize(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Compact.FragmentsRemoved != 5 || rep.Compact.FragmentsAdded != 1 || exp.Version() != rep.Version || rep.Version <= at {
		t.Errorf("optimize: %+v; handle at %d", rep, exp.Version())
	}
	if got := ids(t, exp); !slices.Equal(got, want) {
		t.Errorf("exp after optimize: %d ids, want %d", len(got), len(want))
	}
	// The appends were never indexed: the index gets a segment over
	// the fragment they were compacted into.
	if len(rep.Indices) != 1 || rep.Indices[0] != (table.IndexUpdate{Name: "vec_idx", Fragments: 1}) {
		t.Errorf("indices updated: %+v, want vec_idx over 1 fragment", rep.Indices)
	}
	if n := len(exp.Dataset().Manifest().Fragments); n != 2 {
		t.Errorf("exp has %d fragments, want 2 (main's indexed one and the compacted appends)", n)
	}
	if got := ids(t, tb); !slices.Equal(got, span(0, 10)) {
		t.Errorf("main changed: %v", got)
	}
}
