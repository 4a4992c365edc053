package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// explainPlan answers explain_plan/ {"verbose", "query": <query body>}
// with a JSON string: the plan lancer follows for the query (see
// describe). Nothing is read but the manifest.
func (s *Server) explainPlan(w http.ResponseWriter, r *http.Request) error {
	p, verbose, err := s.preparePlan(r)
	if err != nil {
		return err
	}
	return writeJSON(w, p.describe(r.Context(), r.PathValue("id"), verbose))
}

// analyzePlan answers analyze_plan/?distributed_metrics= with the query
// body: the plan, then the query is run and its figures reported (rows
// returned and scanned, fragments read, batches, time). The server is one
// process, so every distributed_metrics mode gets the same report.
func (s *Server) analyzePlan(w http.ResponseWriter, r *http.Request) error {
	p, verbose, err := s.preparePlan(r)
	if err != nil {
		return err
	}
	// A limited scan stops reading once the limit is met: run it with row
	// ids (the rows are not returned) to see how far it read.
	run := p
	reach := p.kind == "scan" && p.k != math.MaxInt && p.k != 0 && !p.ds.Manifest().StableRowIDs()
	if reach && !p.q.WithRowID {
		q := *p.q
		q.WithRowID = true
		cp := *p
		cp.q = &q
		cp.withRowID = true
		run = &cp
	}
	start := time.Now()
	// The result is counted as it is read, never held: a plan of a full
	// scan reads the whole table.
	var (
		returned int64
		nbatches int
		lastID   uint64 // the last _rowid read, for scanReach
		haveID   bool
	)
	_, err = s.runEach(r, run, func(b arrow.RecordBatch) error {
		returned += b.NumRows()
		nbatches++
		if id, ok := lastRowID(b); ok {
			lastID, haveID = id, true
		}
		return nil
	})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	frags := p.fragmentsRead()
	scanned := p.searched()
	how := ""
	if reach && returned == int64(p.k) {
		frags, scanned = p.scanReach(lastID, haveID)
		how = " (whole fragments, up to the one where the limit was met)"
	}
	if p.kind == "search" {
		indexed, flat, _ := p.coverage()
		n := uint64(len(p.vectors))
		scanned = flat * n
		how = fmt.Sprintf(" scored exactly (flat), and %d indexed rows searched through the index", indexed*n)
	}
	s.metrics.query(p.kind, uint64(returned), p.searched())
	var sb strings.Builder
	sb.WriteString(p.describe(r.Context(), r.PathValue("id"), verbose))
	fmt.Fprintf(&sb, "Executed in %s:\n", elapsed.Round(time.Microsecond))
	fmt.Fprintf(&sb, "  rows returned: %d\n", returned)
	fmt.Fprintf(&sb, "  rows scanned: %d%s\n", scanned, how)
	fmt.Fprintf(&sb, "  fragments read: %d of %d\n", len(frags), len(p.ds.Manifest().Fragments))
	fmt.Fprintf(&sb, "  batches returned: %d\n", nbatches)
	return writeJSON(w, sb.String())
}

// scanReach returns the fragments a limited scan read, in order up to the
// one holding the last row returned, and their live rows. Row ids are
// addresses (fragment id << 32 | offset) without stable row ids.
func (p *preparedQuery) scanReach(last uint64, found bool) ([]uint64, uint64) {
	var (
		frags []uint64
		rows  uint64
	)
	for _, f := range p.ds.Manifest().Fragments {
		d, _ := f.NumDeletedRows()
		frags = append(frags, f.ID)
		rows += f.PhysicalRows - min(d, f.PhysicalRows)
		if found && f.ID == last>>32 {
			break
		}
	}
	return frags, rows
}

// lastRowID is the _rowid of b's last row, if b has one.
func lastRowID(b arrow.RecordBatch) (uint64, bool) {
	idx := b.Schema().FieldIndices("_rowid")
	if len(idx) != 1 || b.NumRows() == 0 {
		return 0, false
	}
	ids, ok := b.Column(idx[0]).(*array.Uint64)
	if !ok {
		return 0, false
	}
	return ids.Value(ids.Len() - 1), true
}

// coverage splits the live rows a vector search looks at into those of
// fragments its index segments cover and those scored exactly.
func (p *preparedQuery) coverage() (indexed, flat uint64, flatFrags int) {
	_, covered, _, _ := p.searchIndex()
	for _, f := range p.ds.Manifest().Fragments {
		d, _ := f.NumDeletedRows()
		n := f.PhysicalRows - min(d, f.PhysicalRows)
		if covered[uint32(f.ID)] {
			indexed += n
		} else {
			flatFrags++
			flat += n
		}
	}
	return indexed, flat, flatFrags
}

// searchIndex picks the index segments a vector search uses, as
// dataset.Search does: lancer's indices on the column with the search's
// metric (or the first index's metric when none is asked), none with
// bypass_vector_index. It returns them, the fragments they cover, the
// metric, and why no index is used when none is.
func (p *preparedQuery) searchIndex() (used []manifest.IndexInfo, covered map[uint32]bool, metric, why string) {
	covered = map[uint32]bool{}
	column, err := vectorColumn(p.ds.Schema(), p.q.VectorColumn, len(p.vectors[0]))
	if err != nil {
		return nil, covered, p.q.DistanceType, err.Error()
	}
	metric = p.q.DistanceType
	for _, ix := range p.ds.Indices() {
		det, ok := lancerDetails(ix)
		if !ok || len(ix.Fields) != 1 || ix.Fields[0] != column {
			continue
		}
		if metric == "" {
			metric = det.Metric
		}
		if !strings.EqualFold(det.Metric, metric) {
			why = fmt.Sprintf("index %s is for metric %s", ix.Name, det.Metric)
			continue
		}
		if len(ix.Fragments) > 0 {
			used = append(used, ix)
			for _, f := range ix.Fragments {
				covered[f] = true
			}
		}
	}
	if metric == "" {
		metric = "l2"
	}
	if p.q.BypassVectorIndex {
		return nil, map[uint32]bool{}, metric, "bypass_vector_index"
	}
	if len(used) == 0 && why == "" {
		why = "no vector index on the column"
	}
	return used, covered, metric, why
}

// preparePlan decodes the body of explain_plan ({"verbose", "query"}) or
// analyze_plan (the query body itself; the wrapped form is accepted too)
// and prepares the query.
func (s *Server) preparePlan(r *http.Request) (*preparedQuery, bool, error) {
	name, err := tableName(r)
	if err != nil {
		return nil, false, err
	}
	var raw map[string]json.RawMessage
	if err := decodeJSON(r, &raw); err != nil {
		return nil, false, err
	}
	var verbose bool
	if v, ok := raw["verbose"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &verbose); err != nil {
			return nil, false, invalidf("verbose must be true or false")
		}
	}
	body := raw
	// The query body has no "query" key of its own (full-text queries go
	// in full_text_query), so an object there is the wrapped form.
	if inner, ok := raw["query"]; ok && bytes.HasPrefix(bytes.TrimSpace(inner), []byte("{")) {
		body = nil
		if err := json.Unmarshal(inner, &body); err != nil {
			return nil, false, invalidf("query: %v", err)
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, false, err
	}
	var q queryBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&q); err != nil {
		return nil, false, invalidf("malformed query: %v", err)
	}
	p, err := s.prepareQuery(r, name, &q)
	if err != nil {
		return nil, false, err
	}
	// The plan of a query whose filter cannot run is the error running
	// it would give, as in Lance: planning the scan binds the filter to
	// the schema and reads nothing.
	if q.Filter != "" && p.kind != "take" {
		if _, err := p.ds.Scan(&dataset.ScanOptions{Filter: q.Filter}); err != nil {
			// A name the filter gets wrong is the request's fault (a 400,
			// as a query answers it), not a missing table.
			return nil, false, invalidf("%v", err)
		}
	}
	return p, verbose, nil
}

// describe is the plan text: one line naming the operation and the
// version read, then indented lines for what it reads and how.
func (p *preparedQuery) describe(ctx context.Context, table string, verbose bool) string {
	var sb strings.Builder
	m := p.ds.Manifest()
	live := liveRows(p.ds)
	line := func(format string, args ...any) {
		sb.WriteString("  ")
		fmt.Fprintf(&sb, format, args...)
		sb.WriteByte('\n')
	}
	cols := "all columns"
	if p.columns != nil {
		cols = strings.Join(p.columns, ", ")
		if p.aliases != nil {
			var parts []string
			for i, c := range p.columns {
				parts = append(parts, p.aliases[i]+" = "+c)
			}
			cols = strings.Join(parts, ", ")
		}
	}
	if p.q.WithRowID {
		cols += " + _rowid"
	}
	switch p.kind {
	case "take":
		frags := p.fragmentsRead()
		fmt.Fprintf(&sb, "Take table %q version %d: %d rows by offset from %d of %d fragments\n",
			table, m.Version, len(p.offsets), len(frags), len(m.Fragments))
		line("offsets: %s", joinUints(p.offsets))
		line("columns: %s", cols)
	case "scan":
		fmt.Fprintf(&sb, "Scan table %q version %d: %d fragments, %d live rows\n", table, m.Version, len(m.Fragments), live)
		line("columns: %s", cols)
		if p.q.Filter != "" {
			line("filter: %s (pushed down: evaluated on each batch as the fragments are read)", p.q.Filter)
		} else {
			line("filter: none")
		}
		limit := "none"
		if p.k != math.MaxInt && p.k != 0 {
			limit = fmt.Sprint(p.k)
		}
		line("offset: %d, limit: %s", p.offset, limit)
	case "fts":
		p.describeFTS(ctx, &sb, table, line, cols)
	default:
		p.describeSearch(ctx, &sb, table, line, cols)
	}
	if verbose {
		sb.WriteString("  fragments:\n")
		for _, f := range m.Fragments {
			d, _ := f.NumDeletedRows()
			fmt.Fprintf(&sb, "    fragment %d: %d rows, %d deleted, %d data files\n", f.ID, f.PhysicalRows, d, len(f.Files))
		}
	}
	return sb.String()
}

// describeSearch is describe for a vector search: the index segments used
// (and their parameters), the fragments scored exactly, and where the
// filter applies.
func (p *preparedQuery) describeSearch(ctx context.Context, sb *strings.Builder, table string, line func(string, ...any), cols string) {
	m := p.ds.Manifest()
	column, err := vectorColumn(p.ds.Schema(), p.q.VectorColumn, len(p.vectors[0]))
	if err != nil {
		column = "?"
	}
	k := p.k // checkSearch made 0 LanceDB's 10
	fmt.Fprintf(sb, "VectorSearch table %q version %d: column %s, %d query vector(s) of %d dimensions, k=%d, offset %d\n",
		table, m.Version, column, len(p.vectors), len(p.vectors[0]), k, p.offset)
	used, _, metric, why := p.searchIndex()
	var lance *dataset.SearchPlan
	if len(used) == 0 {
		if lance = p.lancePlan(ctx, column); lance != nil {
			metric = lance.Metric
		}
	}
	line("metric: %s", metric)
	nprobes, ef, refine := p.nprobes, p.ef, p.refine
	if nprobes == 0 {
		nprobes = 20
	}
	switch {
	case len(used) == 0 && lance != nil:
		// A vector index Lance built: the SDK's plan (dataset.SearchPlan).
		kind := "Lance"
		if lance.Legacy {
			kind = "Lance legacy file v0.1"
		}
		line("index: %s (%s, %s), %d segment(s), nprobes=%d, %d of %d partitions probed", lance.Index, lance.IndexType, kind,
			len(lance.Segments), nprobes, lance.PartitionsProbed, lance.Partitions)
		line("indexed: %d of %d fragments searched through the index", lance.IndexedFragments, len(m.Fragments))
		line("unindexed: %d fragments (%d rows) scored exactly (flat)", len(lance.UnindexedFragments), lance.RowsScoredExactly)
		switch {
		case refine > 0:
			line("refine: refine_factor=%d: the %d best candidates are re-ranked by their exact vectors", refine, (k+p.offset)*refine)
		case lance.Rescore:
			line("refine: none: the index's candidates are re-scored exactly to merge with the unindexed rows")
		default:
			line("refine: none: distances from the index are those of its quantized vectors")
		}
	case len(used) == 0:
		line("index: none (%s): every live row is scored exactly (flat)", why)
	default:
		names := map[string]bool{}
		for _, ix := range used {
			if !names[ix.Name] {
				names[ix.Name] = true
				line("index: %s (%s), %d segment(s), nprobes=%d%s", ix.Name, indexTypeName(ix), countSegments(used, ix.Name), nprobes, efText(ix, ef))
			}
		}
		indexed, flat, flatFrags := p.coverage()
		line("indexed: %d of %d fragments (%d rows) searched through the index", len(m.Fragments)-flatFrags, len(m.Fragments), indexed)
		line("unindexed: %d fragments (%d rows) scored exactly (flat)", flatFrags, flat)
		if refine > 0 {
			line("refine: refine_factor=%d: the %d best candidates are re-ranked by their exact vectors", refine, (k+p.offset)*refine)
		} else {
			line("refine: none: distances from the index are those of its quantized vectors")
		}
	}
	switch {
	case p.q.Filter == "":
		line("filter: none")
	case p.q.Prefilter != nil && !*p.q.Prefilter:
		line("filter: %s (postfilter: applied to the k nearest rows; fewer than k may remain)", p.q.Filter)
	default:
		line("filter: %s (prefilter: the matching rows are found first, and only they are searched)", p.q.Filter)
	}
	if p.q.LowerBound != nil || p.q.UpperBound != nil {
		lo, hi := "-inf", "+inf"
		if p.q.LowerBound != nil {
			lo = fmt.Sprint(*p.q.LowerBound)
		}
		if p.q.UpperBound != nil {
			hi = fmt.Sprint(*p.q.UpperBound)
		}
		line("distance range: [%s, %s)", lo, hi)
	}
	line("columns: %s + %s", cols, dataset.DistanceColumn)
}

// lancePlan is the SDK's plan of the search when it goes through a vector
// index Lance built (one lancer's searchIndex does not see); nil
// otherwise, or when the plan cannot be made (the search itself reports
// why). It reads the index segments' front matter.
func (p *preparedQuery) lancePlan(ctx context.Context, column string) *dataset.SearchPlan {
	if p.q.BypassVectorIndex {
		return nil
	}
	o := &dataset.SearchOptions{K: max(p.k+p.offset, 1), Metric: p.q.DistanceType, NProbes: p.nprobes, Ef: p.ef, RefineFactor: p.refine}
	plan, err := p.ds.ExplainSearch(ctx, column, p.vectors[0], o)
	if err != nil || plan.Exact || plan.Lancer {
		return nil
	}
	return plan
}

func countSegments(segs []manifest.IndexInfo, name string) int {
	n := 0
	for _, s := range segs {
		if s.Name == name {
			n++
		}
	}
	return n
}

// efText names the HNSW beam width of an HNSW index.
func efText(ix manifest.IndexInfo, ef int) string {
	if !strings.Contains(indexTypeName(ix), "HNSW") {
		return ""
	}
	if ef == 0 {
		return ", ef=default"
	}
	return fmt.Sprintf(", ef=%d", ef)
}

// fragmentsRead returns the ids of the fragments a query reads: those
// holding the offsets of a take, else every fragment with live rows.
func (p *preparedQuery) fragmentsRead() []uint64 {
	var out []uint64
	frags := p.ds.Manifest().Fragments
	if p.kind != "take" {
		for _, f := range frags {
			if d, _ := f.NumDeletedRows(); d < f.PhysicalRows {
				out = append(out, f.ID)
			}
		}
		return out
	}
	// An offset counts live rows in fragment order.
	for _, o := range p.offsets {
		var start uint64
		for _, f := range frags {
			d, _ := f.NumDeletedRows()
			n := f.PhysicalRows - min(d, f.PhysicalRows)
			if o < start+n {
				if !slices.Contains(out, f.ID) {
					out = append(out, f.ID)
				}
				break
			}
			start += n
		}
	}
	return out
}

func joinUints(v []uint64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ", ") + "]"
}
