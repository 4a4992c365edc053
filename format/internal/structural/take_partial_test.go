package structural

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/fixturetest"
	"github.com/lancerdb/lancer/internal/formattest"
)

// TestTakePartialMatchesScan takes random sets of rows from every 2.1+
// data file of the fixtures (multi-page, wide, string and nested columns
// among them) and checks them against a full read: with the default
// takeWholeFraction, and with it raised so that every page whose layout
// has a partial read (fixed and indexed full-zip, mini-block chunks) is
// read partially. format's TestTakeMatchesScan takes through the public
// Cursor with the default only.
func TestTakePartialMatchesScan(t *testing.T) {
	defer func(f float64) { takeWholeFraction = f }(takeWholeFraction)
	root := fixturetest.Dir(t)
	files := structuralDataFiles(t, "lance/*.lance/data/*.lance", "encodings/*.lance/data/*.lance")
	tested := 0
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			r := openFixtureFile(t, path, mem)
			if r.st == nil || !r.f.Version.Structural() {
				t.Skip("not a 2.1+ file")
			}
			tested++
			for _, frac := range []float64{0.75, 1e9} {
				takeWholeFraction = frac
				checkTakeRows(t, r, mem, fmt.Sprintf("fraction %g", frac))
			}
		})
	}
	if tested == 0 {
		t.Fatal("no 2.1+ fixture files")
	}
}

// checkTakeRows takes the distinct ascending rows of formattest's row sets
// with the cursor's own TakeRows, in batches of at most 64 MiB of reads as
// format's Take cuts them, and compares them with a full read.
func checkTakeRows(t *testing.T, r *fixtureFile, mem memory.Allocator, what string) {
	t.Helper()
	ctx := context.Background()
	cols := defaultColumns(r.f.Schema)
	proj := fileio.Projection{Fields: r.f.Schema.Fields, Column: func(id int32) (int, bool) {
		c, ok := cols[id]
		return c, ok
	}}
	names := make([]string, len(proj.Fields))
	for i, f := range proj.Fields {
		names[i] = f.Name
	}
	n := r.f.NumRows
	if n == 0 {
		return
	}
	c, err := NewCursor(r.st, proj)
	if err != nil {
		t.Fatal(err)
	}
	full, err := c.ReadRange(ctx, 0, n)
	c.Release()
	if err != nil {
		t.Fatal(err)
	}
	defer fileio.ReleaseAll(full)
	for _, rows := range formattest.TakeRowSets(n, uint64(len(full))) {
		rows = slices.Compact(slices.Sorted(slices.Values(rows)))
		c, err := NewCursor(r.st, proj)
		if err != nil {
			t.Fatal(err)
		}
		taker := c.(fileio.RowTaker)
		pieces := make([][]arrow.Array, len(proj.Fields))
		for rest := rows; len(rest) > 0; {
			k := taker.TakeBatch(rest, 64<<20)
			arrs, err := taker.TakeRows(ctx, rest[:k])
			if err != nil {
				t.Fatalf("%s, take of %d rows: %v", what, len(rows), err)
			}
			for i, a := range arrs {
				pieces[i] = append(pieces[i], a)
			}
			rest = rest[k:]
		}
		c.Release()
		got := make([]arrow.Array, len(pieces))
		for i, ps := range pieces {
			if got[i], err = array.Concatenate(ps, mem); err != nil {
				t.Fatal(err)
			}
			fileio.ReleaseAll(ps)
		}
		formattest.CompareTake(t, fmt.Sprintf("%s, take of %d rows", what, len(rows)), names, mem, full, got, rows)
		fileio.ReleaseAll(got)
	}
}
