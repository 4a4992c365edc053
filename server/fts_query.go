package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
)

// ScoreColumn is the BM25 score column of a full-text search's rows.
const ScoreColumn = "_score"

// ftsTakeChunk is how many rows of a full-text result are taken and
// written out at a time.
const ftsTakeChunk = 4096

// parseFullTextQuery reads full_text_query (docs/spec/lancedb-remote-
// protocol.md §6.4): the structured form {"query": {"match": {...}}} that
// the client sends to a server of phalanx-version 0.3.0 and later, or
// the legacy {"columns": [...], "query": "text"}. The query is checked
// against ftsindex's bounds (depth, leaves, fuzziness, text size).
func parseFullTextQuery(raw json.RawMessage) (*ftsindex.FTSQuery, error) {
	var body struct {
		Query   json.RawMessage `json:"query"`
		Columns []string        `json:"columns"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, invalidf("full_text_query: %v", err)
	}
	if isNull(body.Query) {
		return nil, invalidf("full_text_query: no query")
	}
	var q *ftsindex.FTSQuery
	if bytes.HasPrefix(bytes.TrimSpace(body.Query), []byte("{")) {
		var err error
		if q, err = ftsindex.ParseQuery(body.Query); err != nil {
			return nil, invalidf("full_text_query: %s", strings.TrimPrefix(err.Error(), "ftsindex: "))
		}
		return q, nil
	}
	var text string
	if err := json.Unmarshal(body.Query, &text); err != nil {
		return nil, invalidf("full_text_query.query must be a string or a structured query")
	}
	switch len(body.Columns) {
	case 0:
		q = &ftsindex.FTSQuery{Match: &ftsindex.MatchQuery{Terms: text}}
	case 1:
		q = &ftsindex.FTSQuery{Match: &ftsindex.MatchQuery{Terms: text, Column: body.Columns[0]}}
	default:
		q = &ftsindex.FTSQuery{MultiMatch: &ftsindex.MultiMatchQuery{Query: text, Columns: body.Columns}}
	}
	if err := ftsindex.Check(q); err != nil {
		return nil, invalidf("full_text_query: %s", strings.TrimPrefix(err.Error(), "ftsindex: "))
	}
	return q, nil
}

// checkFTS applies limits.go to a full-text search: k (0 is LanceDB's
// default 10; i64 max, no limit, is every match) and k + offset at most
// maxSearchK otherwise.
func (p *preparedQuery) checkFTS() error {
	if len(p.vectors) > 0 {
		return invalidf("a query with both a vector and full_text_query: the client sends a hybrid search as two queries")
	}
	if p.order != nil {
		return unsupportedf("order_by on a full-text search is not supported")
	}
	if p.k == 0 {
		p.k = 10
	}
	if p.k == math.MaxInt {
		return nil
	}
	if window := uint64(p.k) + uint64(p.offset); window > maxSearchK {
		return invalidf("k + offset is %d, at most %d for a full-text search", window, maxSearchK)
	}
	return nil
}

// ftsSearch answers a full-text query: the matching rows best first, with
// the selected columns (all by default), then _score, then _rowid when
// asked, as embedded LanceDB returns them; handed to emit ftsTakeChunk
// rows at a time.
func (s *Server) ftsSearch(r *http.Request, p *preparedQuery, emit func(arrow.RecordBatch) error) (*arrow.Schema, error) {
	ctx := r.Context()
	o := &dataset.FullTextQueryOptions{Filter: p.q.Filter, Postfilter: p.q.Prefilter != nil && !*p.q.Prefilter}
	if p.k != math.MaxInt {
		o.Limit = p.k + p.offset
	}
	hits, err := p.ds.FullTextQuery(ctx, p.fts, o)
	if err != nil {
		return nil, ftsError(err)
	}
	hits = hits[min(p.offset, len(hits)):]
	cols, scoreAt := p.columns, -1
	if cols != nil {
		cols = nil
		for _, c := range p.columns {
			if c == ScoreColumn {
				scoreAt = len(cols)
				continue
			}
			cols = append(cols, c)
		}
	}
	var schema *arrow.Schema
	for first := true; first || len(hits) > 0; first = false {
		chunk := hits[:min(ftsTakeChunk, len(hits))]
		hits = hits[len(chunk):]
		ids := make([]uint64, len(chunk))
		for i, h := range chunk {
			ids[i] = h.RowID
		}
		b, err := p.ds.TakeRowIDs(ctx, ids, &dataset.TakeOptions{Columns: cols})
		if err != nil {
			return nil, err
		}
		b = withScores(b, chunk, scoreAt, p.withRowID)
		schema = b.Schema()
		if err := emit(b); err != nil {
			return nil, err
		}
	}
	return schema, nil
}

// ftsError makes the dataset's full-text errors the client's: a query it
// cannot answer (no FTS index on the column, no positions for a phrase)
// is a 400.
func ftsError(err error) error {
	switch {
	case errors.Is(err, lancer.ErrInvalidArgument), errors.Is(err, lancer.ErrNotFound):
		return invalidf("full-text search: %s", strings.TrimPrefix(err.Error(), "dataset: "))
	case errors.Is(err, lancer.ErrUnsupported):
		return unsupportedf("full-text search: %s", strings.TrimPrefix(err.Error(), "dataset: "))
	}
	return err
}

// withScores adds the hits' _score (at position at, or after the columns
// when at < 0) and, with rowID, their _rowid last.
func withScores(b arrow.RecordBatch, hits []dataset.FTSHit, at int, rowID bool) arrow.RecordBatch {
	sb := array.NewFloat32Builder(memory.DefaultAllocator)
	defer sb.Release()
	ib := array.NewUint64Builder(memory.DefaultAllocator)
	defer ib.Release()
	for _, h := range hits {
		sb.Append(h.Score)
		ib.Append(h.RowID)
	}
	scores, ids := sb.NewArray(), ib.NewArray()
	defer scores.Release()
	defer ids.Release()
	fields := slices.Clone(b.Schema().Fields())
	cols := slices.Clone(b.Columns())
	if at < 0 || at > len(fields) {
		at = len(fields)
	}
	fields = slices.Insert(fields, at, arrow.Field{Name: ScoreColumn, Type: arrow.PrimitiveTypes.Float32, Nullable: true})
	cols = slices.Insert(cols, at, scores)
	if rowID {
		fields = append(fields, arrow.Field{Name: "_rowid", Type: arrow.PrimitiveTypes.Uint64, Nullable: true})
		cols = append(cols, ids)
	}
	md := b.Schema().Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, int64(len(hits)))
	b.Release()
	return out
}

// describeFTS is describe for a full-text search.
func (p *preparedQuery) describeFTS(ctx context.Context, sb *strings.Builder, table string, line func(string, ...any), cols string) {
	m := p.ds.Manifest()
	q, _ := json.Marshal(p.fts)
	limit := "none"
	if p.k != math.MaxInt {
		limit = fmt.Sprint(p.k)
	}
	fmt.Fprintf(sb, "FullTextSearch table %q version %d: limit %s, offset %d\n", table, m.Version, limit, p.offset)
	line("query: %s", q)
	for _, c := range p.fts.Columns() {
		idx := "no FTS index"
		for _, seg := range m.Indices {
			if seg.Type == "Inverted" && len(seg.Fields) == 1 && seg.Fields[0] == c {
				idx = fmt.Sprintf("FTS index %s covering %d of %d fragments (the rest scored flat)", seg.Name, len(seg.Fragments), len(m.Fragments))
			}
		}
		line("column %s: %s", c, idx)
	}
	line("columns: %s + _score", cols)
	switch {
	case p.q.Filter == "":
		line("filter: none")
	case p.q.Prefilter != nil && !*p.q.Prefilter:
		line("filter: %s (postfilter: applied to the best rows found)", p.q.Filter)
	default:
		line("filter: %s (prefilter: only matching rows are scored)", p.q.Filter)
	}
	_ = ctx
}
