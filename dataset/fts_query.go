package dataset

import (
	"context"
	"fmt"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/ftsindex"
)

// FullTextQueryOptions configures FullTextQuery. The zero value is valid.
type FullTextQueryOptions struct {
	// Limit is the number of rows wanted, best first; 0 means every match.
	Limit int
	// Filter is an SQL predicate rows must satisfy. By default it is a
	// prefilter, as LanceDB's: the best Limit rows among those it keeps
	// (the BM25 statistics of indexed rows are unchanged by it; rows of
	// unindexed fragments it drops are not counted). With Postfilter the
	// best Limit rows are found first and then filtered, so fewer may come
	// back.
	Filter     string
	Postfilter bool
}

// FullTextQuery answers a structured full-text query (match with
// operator and fuzziness, phrase with slop, boolean, boost, multi-match;
// ftsindex.FTSQuery) over the dataset's Lance FTS (INVERTED) indices,
// with Lance's rows and _score values:
//
//   - match: BM25 over the index (and Lance's flat scoring of rows in
//     fragments the index does not cover) times the boost; a column left
//     out is the only FTS-indexed column, or all of them as a multi-match;
//   - phrase: the words in order within the slop (positions needed);
//   - multi-match: per row the best of the columns' boosted scores;
//   - boost: the positive query's rows, minus negative_boost times their
//     negative score;
//   - boolean: rows every must query matches (without must, any should
//     query), none of the must_not queries; scores are summed.
//
// Sub-queries of boolean and boost queries are evaluated without a limit,
// as Lance does, and the limit cuts the combined result. Hits come best
// first, equal scores by row id. Queries outside ftsindex's bounds
// (MaxQueryDepth, MaxQueryLeaves, MaxFuzziness, ...) are
// lancer.ErrInvalidArgument before any index is read.
func (d *Dataset) FullTextQuery(ctx context.Context, q *ftsindex.FTSQuery, o *FullTextQueryOptions) ([]FTSHit, error) {
	if o == nil {
		o = &FullTextQueryOptions{}
	}
	if o.Limit < 0 {
		return nil, fmt.Errorf("dataset: full-text query limit %d: %w", o.Limit, lancer.ErrInvalidArgument)
	}
	if err := ftsindex.Check(q); err != nil {
		return nil, err
	}
	q, err := d.fillFTSColumns(q)
	if err != nil {
		return nil, err
	}
	ev := &ftsEval{d: d}
	if o.Filter != "" && !o.Postfilter {
		if ev.mask, err = d.filterRowIDs(ctx, o.Filter); err != nil {
			return nil, err
		}
		ev.filter = o.Filter
	}
	hits, err := ev.eval(ctx, q, o.Limit)
	if err != nil {
		return nil, err
	}
	if o.Filter != "" && o.Postfilter {
		keep, err := d.filterRowIDs(ctx, o.Filter)
		if err != nil {
			return nil, err
		}
		hits = slices.DeleteFunc(hits, func(h FTSHit) bool { return !keep.Contains(h.RowID) })
	}
	return hits, nil
}

// ftsColumns lists the columns with an FTS index, in schema order.
func (d *Dataset) ftsColumns() []string {
	has := map[string]bool{}
	for _, seg := range d.manifest.Indices {
		if seg.Type == "Inverted" && len(seg.Fields) == 1 {
			has[seg.Fields[0]] = true
		}
	}
	var out []string
	for _, f := range d.Schema().Arrow().Fields() {
		if has[f.Name] {
			out = append(out, f.Name)
			delete(has, f.Name)
		}
	}
	for c := range has { // nested columns, in no schema order of their own
		out = append(out, c)
	}
	slices.Sort(out[len(out)-len(has):])
	return out
}

// fillFTSColumns gives the query's leaves without a column one, as
// Lance's fill_fts_query_column: the only FTS-indexed column; with
// several, a match becomes a multi-match over all of them and a phrase is
// an error.
func (d *Dataset) fillFTSColumns(q *ftsindex.FTSQuery) (*ftsindex.FTSQuery, error) {
	var cols []string
	colsOnce := false
	indexed := func() ([]string, error) {
		if !colsOnce {
			cols, colsOnce = d.ftsColumns(), true
		}
		if len(cols) == 0 {
			return nil, fmt.Errorf("dataset: full-text search needs an FTS (INVERTED) index on at least one column: %w", lancer.ErrNotFound)
		}
		return cols, nil
	}
	var fill func(q *ftsindex.FTSQuery) (*ftsindex.FTSQuery, error)
	fill = func(q *ftsindex.FTSQuery) (*ftsindex.FTSQuery, error) {
		out := *q
		switch {
		case q.Match != nil && q.Match.Column == "":
			cs, err := indexed()
			if err != nil {
				return nil, err
			}
			if len(cs) == 1 {
				m := *q.Match
				m.Column = cs[0]
				out.Match = &m
			} else {
				out.Match, out.MultiMatch = nil, &ftsindex.MultiMatchQuery{Query: q.Match.Terms, Columns: cs}
			}
		case q.Phrase != nil && q.Phrase.Column == "":
			cs, err := indexed()
			if err != nil {
				return nil, err
			}
			if len(cs) > 1 {
				return nil, fmt.Errorf("dataset: a phrase query on a table with FTS indices on %v must name its column: %w", cs, lancer.ErrInvalidArgument)
			}
			p := *q.Phrase
			p.Column = cs[0]
			out.Phrase = &p
		case q.Boost != nil:
			pos, err := fill(q.Boost.Positive)
			if err != nil {
				return nil, err
			}
			neg, err := fill(q.Boost.Negative)
			if err != nil {
				return nil, err
			}
			out.Boost = &ftsindex.BoostQuery{Positive: pos, Negative: neg, NegativeBoost: q.Boost.NegativeBoost}
		case q.Boolean != nil:
			b := &ftsindex.BooleanQuery{}
			for _, part := range []struct {
				in  []ftsindex.FTSQuery
				out *[]ftsindex.FTSQuery
			}{{q.Boolean.Should, &b.Should}, {q.Boolean.Must, &b.Must}, {q.Boolean.MustNot, &b.MustNot}} {
				for i := range part.in {
					f, err := fill(&part.in[i])
					if err != nil {
						return nil, err
					}
					*part.out = append(*part.out, *f)
				}
			}
			out.Boolean = b
		}
		return &out, nil
	}
	return fill(q)
}

// ftsEval evaluates one query tree on one version.
type ftsEval struct {
	d *Dataset
	// mask and filter are the prefilter, nil and "" for none.
	mask   *roaring64.Bitmap
	filter string
}

func (ev *ftsEval) eval(ctx context.Context, q *ftsindex.FTSQuery, limit int) ([]FTSHit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch {
	case q.Match != nil:
		m := q.Match
		hits, err := ev.leaf(ctx, m.Column, m.Terms, &ftsindex.Query{
			Operator: m.Operator, Fuzzy: m.Fuzziness != 0, Fuzziness: m.Fuzziness,
			MaxExpansions: m.MaxExpansions, PrefixLength: m.PrefixLength, Limit: limit,
		})
		if err != nil {
			return nil, err
		}
		if b := m.EffectiveBoost(); b != 1 {
			for i := range hits {
				hits[i].Score *= b
			}
		}
		return hits, nil
	case q.Phrase != nil:
		return ev.leaf(ctx, q.Phrase.Column, q.Phrase.Terms, &ftsindex.Query{Phrase: true, Slop: q.Phrase.Slop, Limit: limit})
	case q.MultiMatch != nil:
		mm := q.MultiMatch
		best := map[uint64]float32{}
		for i, c := range mm.Columns {
			m := &ftsindex.MatchQuery{Column: c, Terms: mm.Query, Operator: mm.Operator, Boost: 1}
			if mm.Boosts != nil {
				m.Boost = mm.Boosts[i]
			}
			hits, err := ev.eval(ctx, &ftsindex.FTSQuery{Match: m}, limit)
			if err != nil {
				return nil, err
			}
			for _, h := range hits {
				if s, ok := best[h.RowID]; !ok || h.Score > s {
					best[h.RowID] = h.Score
				}
			}
		}
		return topHits(best, limit), nil
	case q.Boost != nil:
		pos, err := ev.eval(ctx, q.Boost.Positive, 0)
		if err != nil {
			return nil, err
		}
		neg, err := ev.eval(ctx, q.Boost.Negative, 0)
		if err != nil {
			return nil, err
		}
		scores := make(map[uint64]float32, len(pos))
		for _, h := range pos {
			scores[h.RowID] = h.Score
		}
		nb := q.Boost.EffectiveNegativeBoost()
		for _, h := range neg {
			if s, ok := scores[h.RowID]; ok {
				scores[h.RowID] = s - nb*h.Score
			}
		}
		return topHits(scores, limit), nil
	default:
		b := q.Boolean
		var scores map[uint64]float32
		for i := range b.Must {
			hits, err := ev.eval(ctx, &b.Must[i], 0)
			if err != nil {
				return nil, err
			}
			next := make(map[uint64]float32, len(hits))
			for _, h := range hits {
				if scores == nil {
					next[h.RowID] = h.Score
				} else if s, ok := scores[h.RowID]; ok {
					next[h.RowID] = s + h.Score
				}
			}
			scores = next
		}
		hasMust := scores != nil
		if scores == nil {
			scores = map[uint64]float32{}
		}
		for i := range b.Should {
			hits, err := ev.eval(ctx, &b.Should[i], 0)
			if err != nil {
				return nil, err
			}
			for _, h := range hits {
				if s, ok := scores[h.RowID]; ok {
					scores[h.RowID] = s + h.Score
				} else if !hasMust {
					scores[h.RowID] = h.Score
				}
			}
		}
		for i := range b.MustNot {
			hits, err := ev.eval(ctx, &b.MustNot[i], 0)
			if err != nil {
				return nil, err
			}
			for _, h := range hits {
				delete(scores, h.RowID)
			}
		}
		return topHits(scores, limit), nil
	}
}

// topHits orders scored rows best first (equal scores by row id) and cuts
// them to limit (0: all).
func topHits(scores map[uint64]float32, limit int) []FTSHit {
	out := make([]FTSHit, 0, len(scores))
	for id, s := range scores {
		out = append(out, FTSHit{RowID: id, Score: s})
	}
	ftsindex.SortHits(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// leaf runs one match or phrase query (q without its tokens) on column:
// the index's rows and the flat-scored rows of fragments it does not
// cover, best limit of them.
func (ev *ftsEval) leaf(ctx context.Context, column, text string, q *ftsindex.Query) ([]FTSHit, error) {
	d := ev.d
	seg, err := d.ftsSegment(column)
	if err != nil {
		return nil, err
	}
	ix, err := d.loadFTSIndex(ctx, seg)
	if err != nil {
		return nil, err
	}
	if q.Phrase && !ix.HasPositions() {
		return nil, fmt.Errorf("dataset: a phrase query on %s needs an FTS index built with positions (index %s has none): %w", column, seg.Name, lancer.ErrInvalidArgument)
	}
	an, err := ix.Analyzer()
	if err != nil {
		return nil, fmt.Errorf("dataset: full-text search on %s (index %s): %w", column, seg.Name, err)
	}
	if q.Fuzzy {
		// Lance splits a fuzzy query's words with the plain simple
		// tokenizer (no lower-casing) and expands them in the index.
		q.Tokens = ftsindex.FuzzyTokens(text)
		if len(q.Tokens) == 0 {
			return nil, fmt.Errorf("ftsindex: query text %q has no words: %w", text, lancer.ErrInvalidArgument)
		}
	} else if q.Tokens, err = an.QueryTokens(text); err != nil {
		return nil, err
	}
	if err := ftsindex.CheckQuery(q); err != nil {
		return nil, err
	}
	if err := d.ftsTranslatable(seg, ix); err != nil {
		return nil, err
	}
	live, err := d.lanceLiveRows(ctx, seg)
	if err != nil {
		return nil, err
	}
	allow := live.Contains
	if ev.mask != nil {
		allow = func(id uint64) bool { return live.Contains(id) && ev.mask.Contains(id) }
	}
	hits, err := ix.Search(ctx, q, allow)
	if err != nil {
		return nil, fmt.Errorf("dataset: full-text search: %w", err)
	}
	flat, err := d.ftsFlat(ctx, seg, ix, an, q, ev.filter)
	if err != nil {
		return nil, err
	}
	hits = append(hits, flat...)
	ftsindex.SortHits(hits)
	if q.Limit > 0 && len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	return hits, nil
}
