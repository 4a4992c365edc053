package vector

import "github.com/RoaringBitmap/roaring/v2/roaring64"

// Filter restricts a search to the vectors whose IDs it contains. A nil
// Filter allows every vector. Implementations must be safe for concurrent
// Contains calls: the parallel searches share one.
type Filter interface {
	Contains(id uint64) bool
}

// FilterFunc adapts a function to a Filter.
type FilterFunc func(id uint64) bool

// Contains returns f(id).
func (f FilterFunc) Contains(id uint64) bool { return f(id) }

// AllowList is a Filter holding an explicit set of IDs in a 64-bit roaring
// bitmap, so it also takes row addresses (fragment<<32 | offset). The
// searches recognize it and walk its IDs instead of testing every row, which
// makes a selective allow-list cost in proportion to its size.
//
// It must not be modified while a search uses it.
type AllowList struct {
	b *roaring64.Bitmap
}

// NewAllowList returns an AllowList of ids.
func NewAllowList(ids ...uint64) *AllowList {
	return &AllowList{b: roaring64.BitmapOf(ids...)}
}

// AllowBitmap returns an AllowList over b, which it keeps (no copy).
func AllowBitmap(b *roaring64.Bitmap) *AllowList {
	if b == nil {
		b = roaring64.New()
	}
	return &AllowList{b: b}
}

// Contains reports whether id is in the list.
func (a *AllowList) Contains(id uint64) bool { return a.b.Contains(id) }

// Len returns how many IDs the list holds.
func (a *AllowList) Len() uint64 { return a.b.GetCardinality() }

// Bitmap returns the underlying bitmap.
func (a *AllowList) Bitmap() *roaring64.Bitmap { return a.b }

// nextIDs fills ids with the next IDs of it below hi, in increasing
// order, and returns how many it wrote.
func nextIDs(it roaring64.IntPeekable64, hi uint64, ids []uint64) int {
	n := 0
	for n < len(ids) && it.HasNext() {
		if it.PeekNext() >= hi {
			break
		}
		ids[n] = it.Next()
		n++
	}
	return n
}

// countIn returns how many IDs of the list are in [lo, hi).
func (a *AllowList) countIn(lo, hi uint64) uint64 {
	if hi <= lo {
		return 0
	}
	c := a.b.Rank(hi - 1)
	if lo > 0 {
		c -= a.b.Rank(lo - 1)
	}
	return c
}

// iter returns an iterator over the list's IDs from lo on.
func (a *AllowList) iter(lo uint64) roaring64.IntPeekable64 {
	it := a.b.Iterator()
	it.AdvanceIfNeeded(lo)
	return it
}
