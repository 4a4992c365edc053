package dataset

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// FullTextSearchOptions configures FullTextSearch. The zero value is valid.
type FullTextSearchOptions struct {
	// Column is the indexed text column; "" means the only column with an
	// FTS index.
	Column string
	// Limit is the number of rows wanted, best first; 0 means every match.
	Limit int
	// Operator joins the query's words: ftsindex.Or (default) or And.
	Operator ftsindex.Operator
	// Phrase asks for the words in order (the index must hold positions),
	// each at most Slop words past its place.
	Phrase bool
	Slop   int
}

// FTSHit is one row FullTextSearch found: its row id and Lance's BM25
// score (_score).
type FTSHit = ftsindex.Hit

// FullTextSearch answers a match (or phrase) query over a column's Lance
// FTS (INVERTED) index, with Lance's scores: rows the index covers scored
// with the index's statistics; rows of fragments it does not cover
// tokenized and scored as Lance's flat search does (the index's statistics
// plus theirs); deleted rows never returned. Hits come best first, equal
// scores by row id.
func (d *Dataset) FullTextSearch(ctx context.Context, text string, o *FullTextSearchOptions) ([]FTSHit, error) {
	if o == nil {
		o = &FullTextSearchOptions{}
	}
	if o.Limit < 0 {
		return nil, fmt.Errorf("dataset: full-text search limit %d: %w", o.Limit, lancer.ErrInvalidArgument)
	}
	ev := &ftsEval{d: d}
	return ev.leaf(ctx, o.Column, text, &ftsindex.Query{Operator: o.Operator, Phrase: o.Phrase, Slop: o.Slop, Limit: o.Limit})
}

// ftsSegment finds the FTS index segment on column.
func (d *Dataset) ftsSegment(column string) (manifest.IndexInfo, error) {
	var found []manifest.IndexInfo
	for _, seg := range d.manifest.Indices {
		if seg.Type != "Inverted" || len(seg.Fields) != 1 {
			continue
		}
		if column == "" || seg.Fields[0] == column {
			found = append(found, seg)
		}
	}
	switch {
	case len(found) == 0 && column == "":
		return manifest.IndexInfo{}, fmt.Errorf("dataset: full-text search: no FTS index: %w", lancer.ErrNotFound)
	case len(found) == 0:
		return manifest.IndexInfo{}, fmt.Errorf("dataset: full-text search: no FTS index on column %q: %w", column, lancer.ErrNotFound)
	case len(found) > 1 && column == "" && found[0].Fields[0] != found[1].Fields[0]:
		return manifest.IndexInfo{}, fmt.Errorf("dataset: full-text search: FTS indices on %s and %s: name the column: %w", found[0].Fields[0], found[1].Fields[0], lancer.ErrInvalidArgument)
	case len(found) > 1:
		return manifest.IndexInfo{}, fmt.Errorf("dataset: full-text search: index %s has %d segments: %w", found[0].Name, len(found), lancer.ErrUnsupported)
	}
	return found[0], nil
}

func (d *Dataset) loadFTSIndex(ctx context.Context, seg manifest.IndexInfo) (*ftsindex.Index, error) {
	store, err := d.rootStore(ctx, seg.BaseID, "index "+seg.Name)
	if err != nil {
		return nil, err
	}
	dir := indicesDir + seg.UUID
	loc := manifest.Location(store, dir) + " fts"
	return cached(ctx, d.opts.Cache, cacheIndices, loc, func(ctx context.Context) (*ftsindex.Index, int64, error) {
		ix, err := ftsindex.Open(ctx, store, dir, nil)
		if err != nil {
			return nil, 0, fmt.Errorf("dataset: full-text search: %w", err)
		}
		return ix, 4096 + 64*int64(ix.NumDocs()), nil
	})
}

// ftsFlat tokenizes the live rows of fragments seg does not cover and
// scores them with the index's statistics plus theirs. filter, if not
// empty, is a prefilter: the rows it drops are neither scored nor counted.
func (d *Dataset) ftsFlat(ctx context.Context, seg manifest.IndexInfo, ix *ftsindex.Index, an *ftsindex.Analyzer, q *ftsindex.Query, filter string) ([]FTSHit, error) {
	covered := map[uint64]bool{}
	for _, f := range seg.Fragments {
		covered[uint64(f)] = true
	}
	var rest []uint64
	for _, f := range d.manifest.Fragments {
		if !covered[f.ID] && !ix.DeletedFragments.Contains(uint32(f.ID)) {
			rest = append(rest, f.ID)
		}
	}
	if len(rest) == 0 {
		return nil, nil
	}
	type doc struct {
		row  uint64
		n    uint32
		freq map[string]uint32
		pos  map[string][]uint32
	}
	want := map[string]bool{}
	for _, t := range q.Tokens {
		want[t.Text] = true
	}
	st := ix.Stats(q.Tokens)
	var docs []doc
	s, err := d.withFragments(rest).Scan(&ScanOptions{Columns: []string{seg.Fields[0], "_rowid"}, Filter: filter})
	if err != nil {
		return nil, err
	}
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return nil, err
		}
		rows := rec.Column(int(rec.NumCols()) - 1).(*array.Uint64)
		col := rec.Column(0)
		for i := range int(rec.NumRows()) {
			if col.IsNull(i) {
				continue
			}
			var text string
			switch c := col.(type) {
			case *array.String:
				text = c.Value(i)
			case *array.LargeString:
				text = c.Value(i)
			default:
				return nil, fmt.Errorf("dataset: full-text search of a %v column: %w", col.DataType(), lancer.ErrUnsupported)
			}
			toks, err := an.Tokens(text)
			if err != nil {
				return nil, err
			}
			if len(toks) == 0 {
				continue
			}
			dc := doc{row: rows.Value(i), n: uint32(len(toks))}
			for _, t := range toks {
				if want[t.Text] {
					if dc.freq == nil {
						dc.freq, dc.pos = map[string]uint32{}, map[string][]uint32{}
					}
					dc.freq[t.Text]++
					dc.pos[t.Text] = append(dc.pos[t.Text], uint32(t.Position))
				}
			}
			st.NumDocs++
			st.TotalTokens += uint64(dc.n)
			for t := range dc.freq {
				st.DocFreq[t]++
			}
			if dc.freq != nil {
				docs = append(docs, dc)
			}
		}
	}
	avgdl := st.AvgDocLen()
	var out []FTSHit
	for _, dc := range docs {
		if q.Operator == ftsindex.And || q.Phrase {
			all := true
			for t := range want {
				all = all && dc.freq[t] > 0
			}
			if !all {
				continue
			}
		}
		if q.Phrase {
			pos := make([][]uint32, len(q.Tokens))
			qpos := make([]int, len(q.Tokens))
			for i, t := range q.Tokens {
				pos[i], qpos[i] = dc.pos[t.Text], t.Position
			}
			if !ftsindex.PhraseMatch(pos, qpos, q.Slop) {
				continue
			}
		}
		var score float32
		for _, t := range q.Tokens {
			if f := dc.freq[t.Text]; f > 0 {
				score = score + float32(ftsindex.IDF(st.DocFreq[t.Text], st.NumDocs)*ftsindex.DocWeight(f, dc.n, avgdl))
			}
		}
		out = append(out, FTSHit{RowID: dc.row, Score: score})
	}
	return out, nil
}
