package dataset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/dataset/vecindex"
	"github.com/lancerdb/lancer/vector"
)

// SearchPlan is how Search runs (or ran) a query: the index and segments
// it uses, the partitions it probes, the rows it scores exactly, whether
// it re-ranks and how it filters. Set SearchOptions.Plan to have Search
// fill one in; ExplainSearch returns it without searching. Its String is
// what `lancer search --explain` prints.
type SearchPlan struct {
	// Column is the vector column; Metric the search's distance.
	Column, Metric string
	// K is the number of rows asked for.
	K int
	// Index is the name of the index used, "" when none is (Exact).
	Index string
	// IndexType is its type as Lance lists it ("IvfPq", "IvfHnswSq", ...,
	// see Dataset.IndexTypeName); Lancer says it is one of lancer's own
	// indices, Legacy that it is Lance's legacy IVF_PQ file.
	IndexType string
	Lancer    bool
	Legacy    bool
	// Segments are the uuids of the index segments searched.
	Segments []string
	// Partitions is the IVF partitions of those segments together;
	// PartitionsProbed how many of them the search probes (NProbes per
	// segment, at most its partitions). NProbes is the per-segment count
	// asked for.
	Partitions, PartitionsProbed, NProbes int
	// Ef is the HNSW beam width asked for (0: the default); used only by
	// HNSW indices.
	Ef int
	// IndexedFragments are how many fragments the segments cover;
	// UnindexedFragments the ids of the others, whose RowsScoredExactly
	// rows (physical, deleted ones included) are scored exactly.
	IndexedFragments   int
	UnindexedFragments []uint64
	RowsScoredExactly  uint64
	// RefineFactor is the re-ranking asked for: K×RefineFactor index
	// candidates are re-scored with their exact vectors. Rescore says the
	// index's candidates are re-scored exactly even without it (Lance
	// does so when fragments are unindexed, so that distances compare).
	RefineFactor int
	Rescore      bool
	// Filter is the predicate; FilterMode "none", "prefilter" or
	// "postfilter".
	Filter, FilterMode string
	// FilterIndices are the scalar indices that answer terms of the
	// filter (as Scanner.FilterIndices lists them): its rows are found
	// through them in the fragments they cover.
	FilterIndices []FilterIndex
	// Exact says every row is scored exactly, and ExactReason why:
	// "requested" (SearchOptions.Exact), "no vector index on the column",
	// "no index for metric ..." .
	Exact       bool
	ExactReason string
	// Notes are what else the search decided, e.g. an index not searched
	// because lancer cannot read its kind.
	Notes []string
}

// String renders the plan, one fact a line.
func (p *SearchPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "vector search on %s: k=%d metric=%s\n", p.Column, p.K, p.Metric)
	if p.Exact {
		fmt.Fprintf(&b, "  index: none, exact search of every row (%s)\n", p.ExactReason)
		fmt.Fprintf(&b, "  rows scored exactly: %d in %d fragments\n", p.RowsScoredExactly, len(p.UnindexedFragments))
	} else {
		kind := "Lance"
		switch {
		case p.Lancer:
			kind = "lancer"
		case p.Legacy:
			kind = "Lance legacy file v0.1"
		}
		fmt.Fprintf(&b, "  index: %s (%s, %s)\n", p.Index, p.IndexType, kind)
		fmt.Fprintf(&b, "  segments: %d [%s] covering %d fragments\n", len(p.Segments), strings.Join(p.Segments, " "), p.IndexedFragments)
		if p.Partitions > 0 {
			fmt.Fprintf(&b, "  partitions probed: %d of %d (nprobes=%d per segment)\n", p.PartitionsProbed, p.Partitions, p.NProbes)
		}
		if strings.Contains(p.IndexType, "Hnsw") {
			ef := "default"
			if p.Ef > 0 {
				ef = fmt.Sprint(p.Ef)
			}
			fmt.Fprintf(&b, "  ef: %s\n", ef)
		}
		frags := make([]string, len(p.UnindexedFragments))
		for i, f := range p.UnindexedFragments {
			frags[i] = fmt.Sprint(f)
		}
		fmt.Fprintf(&b, "  unindexed fragments: %d [%s], %d rows scored exactly\n", len(p.UnindexedFragments), strings.Join(frags, " "), p.RowsScoredExactly)
		switch {
		case p.RefineFactor > 0:
			fmt.Fprintf(&b, "  refine: %d×%d candidates re-ranked by their exact vectors\n", p.K, p.RefineFactor)
		case p.Rescore:
			fmt.Fprintf(&b, "  refine: none; the index's candidates re-scored exactly to merge with the unindexed rows\n")
		default:
			fmt.Fprintf(&b, "  refine: none (distances are the index's)\n")
		}
	}
	if p.FilterMode == "none" || p.FilterMode == "" {
		fmt.Fprintf(&b, "  filter: none\n")
	} else {
		fmt.Fprintf(&b, "  filter: %s %q\n", p.FilterMode, p.Filter)
		for _, u := range p.FilterIndices {
			fmt.Fprintf(&b, "  filter %s\n", u)
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

// searchPlan describes the search SearchRowIDs is about to run with o:
// lancer's index segments segs, else Lance's lance, else an exact search.
func (d *Dataset) searchPlan(ctx context.Context, field int32, column string, o SearchOptions, metric vector.Metric, segs []manifest.IndexInfo, lance []lanceIndex) SearchPlan {
	p := SearchPlan{Column: column, Metric: metric.String(), K: o.K, NProbes: o.NProbes, Ef: o.Ef,
		RefineFactor: o.RefineFactor, Filter: o.Filter, FilterMode: "none"}
	if o.Filter != "" {
		// Planning the filter's scan reads no data.
		if s, err := d.Scan(&ScanOptions{Columns: []string{}, Filter: o.Filter}); err == nil {
			p.FilterIndices = s.FilterIndices()
		}
		p.FilterMode = "prefilter"
		if o.Postfilter {
			p.FilterMode = "postfilter"
		}
	}
	covered := map[uint64]bool{}
	addSegment := func(seg manifest.IndexInfo, parts int) {
		p.Segments = append(p.Segments, seg.UUID)
		for _, f := range seg.Fragments {
			covered[uint64(f)] = true
		}
		p.Partitions += parts
		probed := parts
		if o.NProbes > 0 && o.NProbes < parts {
			probed = o.NProbes
		}
		p.PartitionsProbed += probed
	}
	switch {
	case len(segs) > 0:
		p.Index, p.IndexType, p.Lancer = segs[0].Name, d.IndexTypeName(ctx, segs[0]), true
		for _, seg := range segs {
			parts := 0
			if det, err := seg.VectorDetails(); err == nil && det != nil {
				parts = int(det.Partitions)
			}
			addSegment(seg, parts)
		}
	case len(lance) > 0:
		ix := lance[0].ix
		p.Index, p.IndexType, p.Legacy = lance[0].seg.Name, vecindex.LanceTypeName(ix.Type), ix.Legacy
		for _, l := range lance {
			addSegment(l.seg, l.ix.Partitions())
		}
	default:
		p.Exact = true
		p.ExactReason = d.exactReason(ctx, field, o, &p)
	}
	p.IndexedFragments = len(covered)
	for _, f := range d.manifest.Fragments {
		if !covered[f.ID] {
			p.UnindexedFragments = append(p.UnindexedFragments, f.ID)
			p.RowsScoredExactly += f.PhysicalRows
		}
	}
	if p.Exact {
		p.RefineFactor = 0
	} else {
		p.Rescore = p.RefineFactor == 0 && len(lance) > 0 && len(p.UnindexedFragments) > 0
	}
	return p
}

// exactReason says why a search uses no index, and notes on p the
// indices of the column it leaves aside.
func (d *Dataset) exactReason(ctx context.Context, field int32, o SearchOptions, p *SearchPlan) string {
	var seen []string
	for _, ix := range d.manifest.Indices {
		if len(ix.FieldIDs) != 1 || ix.FieldIDs[0] != field || slices.Contains(seen, ix.Name) {
			continue
		}
		lancerIx := ix.TypeURL == manifest.VectorIndexTypeURL
		if !lancerIx && !isLanceVectorIndex(ix, field) {
			continue
		}
		seen = append(seen, ix.Name)
		typ := d.IndexTypeName(ctx, ix)
		switch {
		case !lancerIx && o.Exact:
			if _, err := d.loadLanceIndex(ctx, ix); errors.Is(err, lancer.ErrUnsupported) {
				p.Notes = append(p.Notes, fmt.Sprintf("index %s (%s) is of a kind lancer cannot search: not used, the search is exact because it was asked to be", ix.Name, typ))
				continue
			}
			p.Notes = append(p.Notes, fmt.Sprintf("index %s (%s) not used: exact search asked for", ix.Name, typ))
		case o.Exact:
			p.Notes = append(p.Notes, fmt.Sprintf("index %s (%s) not used: exact search asked for", ix.Name, typ))
		default:
			p.Notes = append(p.Notes, fmt.Sprintf("index %s (%s) not used: built for another metric or not covering any fragment", ix.Name, typ))
		}
	}
	switch {
	case o.Exact:
		return "requested"
	case len(seen) > 0:
		return "no index on the column for metric " + p.Metric
	}
	return "no vector index on the column"
}
