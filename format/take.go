package format

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/internal/structural"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

// takeReadAhead bounds the page bytes one take batch fetches: Take cuts
// the wanted rows into batches whose reads fit it (takeBatch), so a take
// over a large file never holds all its pages' raw bytes at once.
const takeReadAhead = 64 << 20

// Take returns one array per projected field holding the given rows, in the
// given order (which need not be sorted; duplicates are allowed). Only the
// pages holding those rows are read; in 2.1+ files only the parts of those
// pages the rows need (internal/structural/take_pages.go).
func (c *Cursor) Take(ctx context.Context, rows []uint64) ([]arrow.Array, error) {
	for _, row := range rows {
		if row >= c.r.f.NumRows {
			return nil, fmt.Errorf("format: %s: row %d outside the file's %d rows: %w",
				c.r.f.Key, row, c.r.f.NumRows, lancer.ErrInvalidArgument)
		}
	}
	if len(rows) == 0 {
		return c.ReadRange(ctx, 0, 0)
	}
	// Read the distinct rows in ascending order, then put them back in the
	// requested order.
	sorted := slices.Clone(rows)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	pieces := make([][]arrow.Array, len(c.proj.Fields))
	defer func() {
		for _, ps := range pieces {
			fileio.ReleaseAll(ps)
		}
	}()
	if taker, ok := c.impl.(fileio.RowTaker); ok {
		// Batches of rows whose reads fit the read-ahead budget, each read
		// and decoded only as far as its rows need.
		for rest := sorted; len(rest) > 0; {
			n := taker.TakeBatch(rest, takeReadAhead)
			arrs, err := taker.TakeRows(ctx, rest[:n])
			if err != nil {
				return nil, err
			}
			for i, a := range arrs {
				pieces[i] = append(pieces[i], a)
			}
			rest = rest[n:]
		}
		return c.reorder(ctx, rows, sorted, pieces)
	}
	// Other cursors read each run of consecutive rows with one ReadRange.
	for _, rn := range structural.RowRuns(sorted) {
		arrs, err := c.ReadRange(ctx, rn.First, rn.Last+1)
		if err != nil {
			return nil, err
		}
		for i, a := range arrs {
			pieces[i] = append(pieces[i], a)
		}
	}
	return c.reorder(ctx, rows, sorted, pieces)
}

// reorder joins the arrays of each field in pieces, which hold rows sorted
// (the distinct rows, ascending), and puts them in the order of rows.
func (c *Cursor) reorder(ctx context.Context, rows, sorted []uint64, pieces [][]arrow.Array) ([]arrow.Array, error) {
	// Unless rows are sorted and distinct already, indices gives the
	// position of each requested row in the concatenation of the runs.
	var indices []int64
	if !slices.Equal(rows, sorted) {
		position := make(map[uint64]int64, len(sorted))
		for i, row := range sorted {
			position[row] = int64(i)
		}
		indices = make([]int64, len(rows))
		for i, row := range rows {
			indices[i] = position[row]
		}
	}
	out := make([]arrow.Array, len(c.proj.Fields))
	for i := range c.proj.Fields {
		a, err := arrowutil.ConcatTake(ctx, c.r.f.Mem, pieces[i], indices)
		if err != nil {
			fileio.ReleaseAll(out)
			return nil, fmt.Errorf("format: %s: take: %w", c.r.f.Key, err)
		}
		out[i] = a
	}
	return out, nil
}
