package branch_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/branch"
	"github.com/lancerdb/lancer/dataset"
)

// changes reads a diff as "change id" strings, sorted.
func changes(t *testing.T, r *dataset.Changes) []string {
	t.Helper()
	var out []string
	for rec, err := range r.Batches(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if rec.Schema().Field(0).Name != dataset.ChangeColumn || rec.Schema().Field(1).Name != "_rowid" {
			t.Fatalf("diff schema %v", rec.Schema())
		}
		ch := rec.Column(0).(*array.String)
		ids := rec.Column(2).(*array.Int64)
		for i := range int(rec.NumRows()) {
			out = append(out, fmt.Sprintf("%s %d", ch.Value(i), ids.Value(i)))
		}
	}
	slices.Sort(out)
	return out
}

func TestDiff(t *testing.T) {
	ctx := context.Background()
	for _, stable := range []bool{false, true} {
		t.Run(fmt.Sprintf("stable=%v", stable), func(t *testing.T) {
			root, main := newFamily(t, stable, span(0, 20))
			exp := main.branch("exp")
			exp.add(100, 101)
			exp.del("id = 3 OR id = 4", 3, 4)
			exp.set(7, "new")
			r, err := branch.Diff(ctx, root, branch.Ref{}, branch.Ref{Branch: "exp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := r.Summary()
			got := changes(t, r)
			want := []string{"delete 3", "delete 4", "insert 100", "insert 101", "update 7"}
			if !stable {
				// An update is a deletion and an insertion.
				want = []string{"delete 3", "delete 4", "delete 7", "insert 100", "insert 101", "insert 7"}
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("diff main..exp: %v, want %v", got, want)
			}
			if s.Inserted+s.Deleted+s.Updated != uint64(len(want)) {
				t.Fatalf("summary %+v", s)
			}
			// Compaction changes no rows (with stable row ids).
			if _, _, err := exp.open().Compact(ctx, nil); err != nil {
				t.Fatal(err)
			}
			if stable {
				r, err := branch.Diff(ctx, root, branch.Ref{}, branch.Ref{Branch: "exp"}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if got := changes(t, r); !slices.Equal(got, want) {
					t.Fatalf("after compaction: %v, want %v", got, want)
				}
			}
			// A version against itself: nothing.
			r, err = branch.Diff(ctx, root, branch.Ref{Version: 1}, branch.Ref{Version: 1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := changes(t, r); len(got) != 0 {
				t.Fatalf("diff of a version with itself: %v", got)
			}
		})
	}
}

func TestLog(t *testing.T) {
	ctx := context.Background()
	root, main := newFamily(t, true, span(0, 10))
	exp := main.branch("exp")
	exp.add(11)
	main.add(12)
	merge(t, root, "exp", "", "")
	log, err := branch.Log(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range log {
		s := c.String()
		for _, p := range c.Parents {
			s += " <- " + p.String()
		}
		lines = append(lines, s)
	}
	want := []string{
		"main@3 Merge <- main@2 <- exp@2",
		"main@2 Append <- main@1",
		"exp@2 Append <- exp@1",
		"exp@1 Clone <- main@1",
		"main@1 Overwrite",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("log:\n%v\nwant\n%v", lines, want)
	}
}
