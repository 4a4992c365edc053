package dataset

import (
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/scalarindex"
)

// FilterIndex describes one scalar index a filtered scan uses: the index
// finds the candidate rows of the fragments it covers for one term of the
// filter (Scanner.FilterIndices).
type FilterIndex struct {
	// Name and Type name the index ("id_idx", "BTREE").
	Name, Type string
	// Column is the indexed column, Term the filter term it answers
	// ("id >= 990").
	Column, Term string
	// Fragments are the ids of the fragments its segments cover; the
	// others are filtered by reading them.
	Fragments []uint32
}

// String describes the use in one line, as lancer's --explain prints it.
func (f FilterIndex) String() string {
	return fmt.Sprintf("index %s (%s) on %s answers %s in fragments %v", f.Name, f.Type, f.Column, f.Term, f.Fragments)
}

// indexPlan is the scalar-index part of a filtered scan: the terms of the
// filter that indices answer (filter.IndexExpr pruned to them) and the
// index segments answering each.
//
// A scan reads the candidate rows it yields (the rows of the covered
// fragments the indices name) and still evaluates the whole filter on
// them, so the result is the scan's without indices whatever the indices
// say about rows they do not cover; rows of fragments no index covers are
// read and filtered as without indices.
type indexPlan struct {
	expr  *filter.IndexExpr
	segs  map[*filter.IndexTerm]indexSegments
	stats []FilterIndex
}

// indexSegments are the segments of one index that answer one term.
type indexSegments struct {
	kind scalarindex.Kind
	segs []manifest.IndexInfo
}

// planIndex returns the plan for expr's predicate, nil when no scalar
// index answers any part of it.
func (d *Dataset) planIndex(expr *filter.Expr) *indexPlan {
	if len(d.manifest.Indices) == 0 {
		return nil
	}
	x := expr.IndexExpr(d.manifest.Schema.Arrow())
	if x == nil {
		return nil
	}
	p := &indexPlan{segs: map[*filter.IndexTerm]indexSegments{}}
	p.expr = p.prune(d, x)
	if p.expr == nil {
		return nil
	}
	return p
}

// prune keeps the terms of x some index answers: an AND drops the others,
// an OR is dropped whole unless every term stays.
func (p *indexPlan) prune(d *Dataset, x *filter.IndexExpr) *filter.IndexExpr {
	if t := x.Term; t != nil {
		segs, ok := d.indexFor(t)
		if !ok {
			return nil
		}
		p.segs[t] = segs
		var frags []uint32
		for _, s := range segs.segs {
			frags = append(frags, s.Fragments...)
		}
		slices.Sort(frags)
		p.stats = append(p.stats, FilterIndex{Name: segs.segs[0].Name, Type: segs.kind.String(), Column: t.Column, Term: t.SQL, Fragments: slices.Compact(frags)})
		return x
	}
	out := &filter.IndexExpr{Or: x.Or}
	for _, c := range x.Terms {
		k := p.prune(d, c)
		if k == nil {
			if x.Or {
				return nil
			}
			continue
		}
		out.Terms = append(out.Terms, k)
	}
	switch len(out.Terms) {
	case 0:
		return nil
	case 1:
		return out.Terms[0]
	}
	return out
}

// indexFor returns the segments of the first scalar index on t's column
// whose kind answers t's op, and whether there is one.
func (d *Dataset) indexFor(t *filter.IndexTerm) (indexSegments, bool) {
	f := d.manifest.Schema.Field(t.Column)
	if f == nil {
		return indexSegments{}, false
	}
	var out indexSegments
	for _, seg := range d.manifest.Indices {
		kind, ok := scalarindex.KindOf(seg.TypeURL)
		if !ok || len(seg.FieldIDs) != 1 || seg.FieldIDs[0] != f.ID || len(seg.Fragments) == 0 {
			continue
		}
		list := t.Op == filter.IndexHasAny || t.Op == filter.IndexHasAll
		if list != (kind == scalarindex.LabelList) {
			continue
		}
		if len(out.segs) > 0 && seg.Name != out.segs[0].Name {
			continue
		}
		out.kind = kind
		out.segs = append(out.segs, seg)
	}
	return out, len(out.segs) > 0
}

// loadScalarIndex returns seg's opened index, from the cache or opened.
func (d *Dataset) loadScalarIndex(ctx context.Context, seg manifest.IndexInfo, kind scalarindex.Kind) (scalarindex.Index, error) {
	store, err := d.rootStore(ctx, seg.BaseID, "index "+seg.Name)
	if err != nil {
		return nil, err
	}
	dir := indicesDir + seg.UUID
	loc := manifest.Location(store, dir) + " scalar"
	return cached(ctx, d.opts.Cache, cacheIndices, loc, func(ctx context.Context) (scalarindex.Index, int64, error) {
		ix, err := scalarindex.Open(ctx, store, dir, kind, &scalarindex.OpenOptions{Allocator: d.opts.Allocator})
		if err != nil {
			return nil, 0, fmt.Errorf("dataset: index %s: %w", seg.Name, err)
		}
		return ix, ix.ResidentBytes(), nil
	})
}

// restriction maps the fragments an index plan restricts to their
// candidate row offsets; a fragment it does not name is unrestricted.
type restriction map[uint64]*roaring.Bitmap

// candidates runs the plan: the candidate rows of each fragment the
// indices cover. ok is false when an index turns out unable to answer a
// term it was planned for (a value type it does not search): the scan then
// reads every fragment.
func (p *indexPlan) candidates(ctx context.Context, d *Dataset) (restriction, bool, error) {
	return p.eval(ctx, d, p.expr)
}

func (p *indexPlan) eval(ctx context.Context, d *Dataset, x *filter.IndexExpr) (restriction, bool, error) {
	if t := x.Term; t != nil {
		return p.evalTerm(ctx, d, t)
	}
	var out restriction
	first := true
	for _, c := range x.Terms {
		r, ok, err := p.eval(ctx, d, c)
		if err != nil {
			return nil, false, err
		}
		switch {
		case !ok && x.Or:
			return nil, false, nil
		case !ok:
			continue // an AND holds without this term's restriction
		case first:
			out, first = r, false
		case x.Or:
			// OR: only a fragment both restrict stays restricted, to the
			// rows either allows.
			for f, mine := range out {
				if bm, ok := r[f]; ok {
					mine.Or(bm)
				} else {
					delete(out, f)
				}
			}
		default:
			// AND: a fragment either restricts is restricted to the rows
			// both allow.
			for f, bm := range r {
				if mine, ok := out[f]; ok {
					mine.And(bm)
				} else {
					out[f] = bm
				}
			}
		}
	}
	if first {
		return nil, false, nil
	}
	return out, true, nil
}

// evalTerm searches the segments answering t and maps the row ids they
// return to the row offsets of the fragments they cover.
func (p *indexPlan) evalTerm(ctx context.Context, d *Dataset, t *filter.IndexTerm) (restriction, bool, error) {
	choice := p.segs[t]
	out := restriction{}
	for _, seg := range choice.segs {
		ix, err := d.loadScalarIndex(ctx, seg, choice.kind)
		if err != nil {
			return nil, false, err
		}
		if !ix.Supports(t) {
			return nil, false, nil
		}
		rows, err := ix.Search(ctx, t)
		if err != nil {
			return nil, false, fmt.Errorf("dataset: scan: index %s: %w", seg.Name, err)
		}
		// Addresses that predate a deferred compaction's rewrite are
		// translated (docs/spec/fragment-reuse.md §3).
		rows = d.indexRowSet(rows)
		for _, id := range seg.Fragments {
			f := d.fragment(uint64(id))
			if f == nil {
				continue
			}
			bm, err := d.candidateOffsets(ctx, f, rows)
			if err != nil {
				return nil, false, err
			}
			if mine, ok := out[f.ID]; ok {
				mine.Or(bm)
			} else {
				out[f.ID] = bm
			}
		}
	}
	return out, true, nil
}

// fragment returns the version's fragment of that id, nil if none.
func (d *Dataset) fragment(id uint64) *manifest.Fragment {
	i, ok := slices.BinarySearchFunc(d.manifest.Fragments, id, func(f *manifest.Fragment, id uint64) int {
		switch {
		case f.ID < id:
			return -1
		case f.ID > id:
			return 1
		}
		return 0
	})
	if ok {
		return d.manifest.Fragments[i]
	}
	for _, f := range d.manifest.Fragments { // ids out of order
		if f.ID == id {
			return f
		}
	}
	return nil
}

// candidateOffsets returns the offsets of fragment f whose row id (or
// address) is in rows.
func (d *Dataset) candidateOffsets(ctx context.Context, f *manifest.Fragment, rows *scalarindex.RowSet) (*roaring.Bitmap, error) {
	physical, err := d.physicalRows(ctx, f)
	if err != nil {
		return nil, err
	}
	if !d.manifest.StableRowIDs() {
		bm := roaring.New()
		if f.ID <= 0xFFFFFFFF {
			switch part, full := rows.Part(uint32(f.ID)); {
			case full:
				bm.AddRange(0, physical)
			case part != nil:
				bm.Or(part)
				bm.RemoveRange(physical, 1<<32)
			}
		}
		return bm, nil
	}
	seq, err := d.rowIDs(ctx, f, physical)
	if err != nil {
		return nil, err
	}
	bm := roaring.New()
	for off := uint64(0); off < physical; off++ {
		if rows.Contains(seq.At(off)) {
			bm.Add(uint32(off))
		}
	}
	return bm, nil
}

// FilterIndices lists the scalar indices the scan's filter uses, in the
// order of the filter's terms; none without a filter, or when no index
// answers a term of it.
func (s *Scanner) FilterIndices() []FilterIndex {
	if s.filter == nil || s.filter.index == nil {
		return nil
	}
	return slices.Clone(s.filter.index.stats)
}
