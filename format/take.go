package format

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

// Take returns one array per projected field holding the given rows, in the
// given order (which need not be sorted; duplicates are allowed). Only the
// pages holding those rows are read.
func (c *Cursor) Take(ctx context.Context, rows []uint64) ([]arrow.Array, error) {
	for _, row := range rows {
		if row >= c.r.numRows {
			return nil, fmt.Errorf("format: %s: row %d outside the file's %d rows: %w",
				c.r.key, row, c.r.numRows, lancer.ErrInvalidArgument)
		}
	}
	if len(rows) == 0 {
		return c.ReadRange(ctx, 0, 0)
	}
	// Read each run of consecutive sorted rows with one ReadRange, then
	// put the rows back in the requested order.
	sorted := slices.Clone(rows)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var runs []rowRun
	for _, row := range sorted {
		if n := len(runs); n > 0 && runs[n-1].end == row {
			runs[n-1].end++
			continue
		}
		runs = append(runs, rowRun{row, row + 1})
	}
	pieces := make([][]arrow.Array, len(c.proj.Fields))
	defer func() {
		for _, ps := range pieces {
			releaseAll(ps)
		}
	}()
	// Cursors that can fetch the pages of many runs in one coalesced batch
	// do (a few requests instead of one per page); the runs then decode
	// from those bytes.
	planner, _ := c.impl.(runPlanner)
	rctx, ahead := ctx, 0
	for i, rn := range runs {
		if planner != nil && i == ahead {
			n := 0
			var err error
			if rctx, n, err = planner.readAhead(ctx, runs[i:], takeReadAhead); err != nil {
				return nil, err
			}
			ahead = i + n
		}
		arrs, err := c.ReadRange(rctx, rn.start, rn.end)
		if err != nil {
			return nil, err
		}
		for i, a := range arrs {
			pieces[i] = append(pieces[i], a)
		}
	}
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
		a, err := arrowutil.ConcatTake(ctx, c.r.mem, pieces[i], indices)
		if err != nil {
			releaseAll(out)
			return nil, fmt.Errorf("format: %s: take: %w", c.r.key, err)
		}
		out[i] = a
	}
	return out, nil
}
