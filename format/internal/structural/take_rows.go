package structural

import (
	"context"
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/fileio"
)

// TakeBatch implements rowTaker. It counts, for each page a row falls in,
// the bytes a partial read of its rows may fetch: a row's share of the page,
// but at least a mini-block chunk's worth, and never more than the page.
func (c *cursor) TakeBatch(rows []uint64, budget uint64) int {
	if c.pageBytes == nil {
		return len(rows)
	}
	const perRow = 32 << 10 // about a 2.1 mini-block chunk
	type cur struct {
		p     int
		bytes uint64 // of the rows counted in page p
	}
	at := make([]cur, len(c.Leaves))
	for i := range at {
		at[i].p = -1
	}
	var done uint64 // bytes of the pages left behind
	for n, row := range rows {
		var open uint64
		for i, l := range c.Leaves {
			p := sort.Search(len(l.pageEnds), func(j int) bool { return l.pageEnds[j] > row })
			if p >= len(l.pageEnds) {
				continue
			}
			whole := c.pageBytes(fileio.PageID{Col: l.col, Page: p})
			if at[i].p != p {
				done += at[i].bytes
				at[i] = cur{p: p}
			}
			first := uint64(0)
			if p > 0 {
				first = l.pageEnds[p-1]
			}
			share := max(whole/max(l.pageEnds[p]-first, 1), perRow)
			at[i].bytes = min(whole, at[i].bytes+share)
			open += at[i].bytes
		}
		if n > 0 && done+open > budget {
			return n
		}
	}
	return len(rows)
}

// TakeRows implements rowTaker: the rows' parts of the pages are read and
// decoded (Reader.takePages), then unravelled and assembled as a read of a
// range is, one piece per run of rows that lie next to each other in what
// was decoded.
func (c *cursor) TakeRows(ctx context.Context, rows []uint64) ([]arrow.Array, error) {
	defer c.endRead()
	// One request per page of a leaf the rows fall in, unless the page is
	// cached already.
	type pageRows struct {
		l    *leafColumn
		p    int
		rows []uint64 // relative to the page
		cp   *cachedPage
		req  *takeRequest
	}
	var (
		groups []*pageRows
		reqs   []*takeRequest
	)
	// What was decoded for the take goes when it is assembled: the arrays
	// keep the buffers they share with it.
	defer func() {
		for _, q := range reqs {
			q.lp.Release()
		}
	}()
	byLeaf := make([][]*pageRows, len(c.Leaves))
	for i, l := range c.Leaves {
		var g *pageRows
		for _, row := range rows {
			if g == nil || row >= l.pageEnds[g.p] {
				p := sort.Search(len(l.pageEnds), func(j int) bool { return l.pageEnds[j] > row })
				g = &pageRows{l: l, p: p}
				if cp, ok := l.Cache[p]; ok {
					g.cp = cp
				} else {
					g.req = &takeRequest{col: l.col, page: p, leaf: l.field}
					reqs = append(reqs, g.req)
				}
				groups = append(groups, g)
				byLeaf[i] = append(byLeaf[i], g)
			}
			first := uint64(0)
			if g.p > 0 {
				first = l.pageEnds[g.p-1]
			}
			g.rows = append(g.rows, row-first)
		}
	}
	for _, g := range groups {
		if g.req != nil {
			g.req.rows = g.rows
		}
	}
	if c.takePages != nil {
		if err := c.takePages(ctx, reqs); err != nil {
			return nil, err
		}
	} else {
		for _, q := range reqs {
			lp, err := c.decode(ctx, q.col, q.page, q.leaf)
			if err != nil {
				return nil, err
			}
			q.lp = lp
		}
	}
	for _, g := range groups {
		if g.req == nil {
			continue
		}
		q := g.req
		numRows := q.numRows
		if q.segs == nil {
			first := uint64(0)
			if g.p > 0 {
				first = g.l.pageEnds[g.p-1]
			}
			numRows = g.l.pageEnds[g.p] - first
		}
		levels, err := c.checkRows(g.l, q.lp, numRows)
		if err != nil {
			return nil, fmt.Errorf("format: %s: column %d (field %q) page %d: %w", c.key, g.l.col, g.l.field.Name, g.p, err)
		}
		g.cp = &cachedPage{page: q.lp, levels: levels}
	}
	for i, l := range c.Leaves {
		var pieces []piece
		for _, g := range byLeaf[i] {
			var segs []rowSeg
			if g.req != nil {
				segs = g.req.segs
			}
			// Rows next to each other in what was decoded make one piece.
			s, lo, hi := 0, uint64(0), uint64(0)
			for j, row := range g.rows {
				at := row
				if segs != nil {
					for s < len(segs) && row >= segs[s].End {
						s++
					}
					if s == len(segs) || row < segs[s].Start {
						return nil, fmt.Errorf("format: %s: column %d (field %q) page %d: row %d was not decoded: %w",
							c.key, l.col, l.field.Name, g.p, row, lancer.ErrCorrupt)
					}
					at = segs[s].at + row - segs[s].Start
				}
				if j > 0 && at == hi {
					hi++
					continue
				}
				if j > 0 {
					pieces = append(pieces, newPiece(g.cp, g.p, lo, hi))
				}
				lo, hi = at, at+1
			}
			if len(g.rows) > 0 {
				pieces = append(pieces, newPiece(g.cp, g.p, lo, hi))
			}
		}
		if err := c.unravelPieces(l, pieces); err != nil {
			return nil, err
		}
	}
	out := make([]arrow.Array, 0, len(c.fields))
	for _, n := range c.fields {
		a, err := c.assemble(n, len(rows))
		if err != nil {
			fileio.ReleaseAll(out)
			return nil, fmt.Errorf("format: %s: field %q (id %d): %w", c.key, n.field.Name, n.field.ID, err)
		}
		out = append(out, a)
	}
	return out, nil
}
