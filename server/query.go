package server

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/dataset"
	"github.com/lancerdb/lancer/dataset/ftsindex"
	"github.com/lancerdb/lancer/format/schema"
)

// queryBody is the body of query/ (docs/spec/lancedb-remote-protocol.md §6.4). Numbers are json.Number,
// since k is i64 max when there is no limit.
type queryBody struct {
	versionBody
	Vector            json.RawMessage `json:"vector"`
	K                 json.Number     `json:"k"`
	Offset            json.Number     `json:"offset"`
	Filter            string          `json:"filter"`
	Columns           json.RawMessage `json:"columns"`
	Prefilter         *bool           `json:"prefilter"`
	NProbes           json.Number     `json:"nprobes"`
	Ef                json.Number     `json:"ef"`
	RefineFactor      json.Number     `json:"refine_factor"`
	LowerBound        *float64        `json:"lower_bound"`
	UpperBound        *float64        `json:"upper_bound"`
	UseLSM            *bool           `json:"use_lsm"`
	DistanceType      string          `json:"distance_type"`
	VectorColumn      string          `json:"vector_column"`
	WithRowID         bool            `json:"with_row_id"`
	BypassVectorIndex bool            `json:"bypass_vector_index"`
	FastSearch        bool            `json:"fast_search"`
	FullTextQuery     json.RawMessage `json:"full_text_query"`
	OrderBy           json.RawMessage `json:"order_by"`
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// vectors decodes the "vector" field: [] (no search), [f, ...] (one query)
// or [[f, ...], ...] (a batch).
func (q *queryBody) vectors() ([][]float32, error) {
	if isNull(q.Vector) {
		return nil, nil
	}
	var one []float32
	if err := json.Unmarshal(q.Vector, &one); err == nil {
		if len(one) == 0 {
			return nil, nil
		}
		return [][]float32{one}, nil
	}
	var many [][]float32
	if err := json.Unmarshal(q.Vector, &many); err != nil {
		return nil, invalidf("vector must be an array of numbers or of arrays of numbers")
	}
	return many, nil
}

// columns decodes "columns": a list of names, or an object of alias →
// expression where each expression is a plain column name.
func (q *queryBody) columns() (names, aliases []string, err error) {
	if isNull(q.Columns) {
		return nil, nil, nil
	}
	if err := json.Unmarshal(q.Columns, &names); err == nil {
		return names, nil, nil
	}
	var obj map[string]string
	if err := json.Unmarshal(q.Columns, &obj); err != nil {
		return nil, nil, invalidf("columns must be a list of names or an object of alias to column")
	}
	// Keep the client's order: decode the object again as tokens.
	dec := json.NewDecoder(bytes.NewReader(q.Columns))
	if _, err := dec.Token(); err != nil {
		return nil, nil, invalidf("columns: %v", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, invalidf("columns: %v", err)
		}
		alias := tok.(string)
		var expr string
		if err := dec.Decode(&expr); err != nil {
			return nil, nil, invalidf("columns: %v", err)
		}
		aliases = append(aliases, alias)
		names = append(names, expr)
	}
	return names, aliases, nil
}

// preparedQuery is a query/ body checked and bound to the version it
// reads: what query, explain_plan and analyze_plan share.
type preparedQuery struct {
	q                *queryBody
	ds               *dataset.Dataset
	vectors          [][]float32
	columns, aliases []string
	k, offset        int
	kind             string // "take", "scan", "search" or "fts"
	// fts is the full-text query of an "fts" query.
	fts     *ftsindex.FTSQuery
	offsets []uint64 // of a take
	// proj is the select's projection when it has expressions (columns
	// are then the columns it reads, aliases nil), else nil.
	proj *projection
	// order is the query's order_by, nil for none.
	order []orderKey
	// withRowID: the query reads _rowid (asked for, or named by an
	// expression of the select).
	withRowID bool
	// Of a search, checked against limits.go: nprobes and ef (0: the
	// defaults) and refine_factor (0: none).
	nprobes, ef, refine int
}

// prepareQuery checks a query body and opens the version it reads.
func (s *Server) prepareQuery(r *http.Request, name string, q *queryBody) (*preparedQuery, error) {
	p := &preparedQuery{q: q}
	if q.UseLSM != nil && *q.UseLSM {
		return nil, errNoLSM
	}
	var err error
	if !isNull(q.FullTextQuery) {
		if p.fts, err = parseFullTextQuery(q.FullTextQuery); err != nil {
			return nil, err
		}
	}
	if p.order, err = q.orderKeys(); err != nil {
		return nil, err
	}
	if p.vectors, err = q.vectors(); err != nil {
		return nil, err
	}
	if p.columns, p.aliases, err = q.columns(); err != nil {
		return nil, err
	}
	if p.k, err = nonNegative("k", q.K, 0); err != nil {
		return nil, err
	}
	if p.offset, err = nonNegative("offset", q.Offset, 0); err != nil {
		return nil, err
	}
	if p.ds, err = s.open(r.Context(), name, q.version(), q.Branch); err != nil {
		return nil, err
	}
	p.withRowID = q.WithRowID
	var sortBy []string
	for _, k := range p.order {
		sortBy = append(sortBy, k.Column)
	}
	if p.proj, err = newProjection(p.ds.Schema(), p.columns, p.aliases, sortBy); err != nil {
		return nil, err
	}
	if p.proj != nil {
		p.columns, p.aliases = p.proj.read, nil
		p.withRowID = p.withRowID || p.proj.rowID
	}
	switch offsets, ok := rowOffsets(q.Filter); {
	case p.fts != nil:
		p.kind = "fts"
		if err := p.checkFTS(); err != nil {
			return nil, err
		}
	case ok && len(p.vectors) == 0:
		p.kind, p.offsets = "take", offsets
	case len(p.vectors) == 0:
		p.kind = "scan"
	default:
		p.kind = "search"
		if err := p.checkSearch(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// checkDimensions refuses a batch whose query vectors are not all as
// long as the searched column's vectors before any result is sent: the
// search answers each query vector in turn, and a late error could only
// cut the stream. Lance words it the same way.
func (p *preparedQuery) checkDimensions() error {
	column, err := vectorColumn(p.ds.Schema(), p.q.VectorColumn, len(p.vectors[0]))
	if err != nil {
		return err
	}
	f, ok := p.ds.Schema().Arrow().FieldsByName(column)
	if !ok {
		return nil // the search names the missing column
	}
	fsl, ok := f[0].Type.(*arrow.FixedSizeListType)
	if !ok {
		return nil // the search refuses a column that holds no vectors
	}
	dim := int(fsl.Len())
	for i, v := range p.vectors {
		if len(v) != dim {
			return invalidf("query vector at index %d has dimension %d, expected %d", i, len(v), dim)
		}
	}
	return nil
}

// checkSearch applies limits.go to a search: k (0 is LanceDB's default
// 10) and offset, the query vectors, nprobes, ef and refine_factor.
func (p *preparedQuery) checkSearch() error {
	q := p.q
	if p.k == 0 {
		p.k = 10
	}
	if p.k == math.MaxInt {
		return invalidf("vector search needs a limit: k + offset at most %d", maxSearchK)
	}
	// Each at most MaxInt: the sum cannot wrap in a uint64.
	if window := uint64(p.k) + uint64(p.offset); window > maxSearchK {
		return invalidf("k + offset is %d, at most %d for a vector search", window, maxSearchK)
	}
	window := p.k + p.offset
	if n := len(p.vectors); n > maxQueryVectors {
		return invalidf("vector holds %d query vectors, at most %d", n, maxQueryVectors)
	} else if n*window > maxSearchRows {
		return invalidf("%d query vectors × (k + offset) %d is %d rows, at most %d", n, window, n*window, maxSearchRows)
	}
	if err := p.checkDimensions(); err != nil {
		return err
	}
	var err error
	if p.nprobes, err = clampParam("nprobes", q.NProbes.String(), 0, maxNProbes); err != nil {
		return err
	}
	if p.ef, err = clampParam("ef", q.Ef.String(), 0, maxEf); err != nil {
		return err
	}
	if p.refine, err = intParam("refine_factor", q.RefineFactor.String(), 0, maxRefineCandidates); err != nil {
		return err
	}
	if c := window * p.refine; c > maxRefineCandidates {
		return invalidf("(k + offset) %d × refine_factor %d is %d candidates, at most %d", window, p.refine, c, maxRefineCandidates)
	}
	return nil
}

// runEach runs a prepared query and hands its result to emit a batch at
// a time, in order, so that query/ writes each batch out before the next
// is read: a scan batch by batch as the scanner reads them, a take
// takeChunkBytes at a time, a search a query vector at a time. A batch is
// released once emit returns. It returns the result's schema (for an
// empty result, which emits nothing).
func (s *Server) runEach(r *http.Request, p *preparedQuery, emit func(arrow.RecordBatch) error) (*arrow.Schema, error) {
	var schema *arrow.Schema
	each := func(b arrow.RecordBatch) error {
		if p.proj != nil {
			var err error
			if b, err = p.proj.apply(r.Context(), b, p.q.WithRowID); err != nil {
				return err
			}
		} else if p.aliases != nil {
			var out []arrow.RecordBatch
			_, out = renameColumns(b.Schema(), []arrow.RecordBatch{b}, p.columns, p.aliases)
			b = out[0]
		}
		defer b.Release()
		schema = b.Schema()
		return emit(b)
	}
	final := each
	k, offset := p.k, p.offset
	var srt *sorter
	if p.order != nil {
		// The rows are sorted before the offset and limit of a scan
		// apply; a search's or a take's rows are sorted as found.
		srt = &sorter{keys: p.order, window: math.MaxInt}
		defer srt.release()
		if p.kind == "scan" {
			if k != math.MaxInt && k <= math.MaxInt-offset {
				srt.window = k + offset
			}
			k, offset = math.MaxInt, 0
		}
		each = func(b arrow.RecordBatch) error {
			defer b.Release()
			return srt.add(r.Context(), b)
		}
	}
	var err error
	var sc *arrow.Schema
	switch p.kind {
	case "take":
		err = s.take(r, p.ds, p.offsets, p.columns, p.withRowID, each)
	case "scan":
		sc, err = s.scan(r, p.ds, p.q, p.columns, p.withRowID, k, offset, each)
	case "fts":
		sc, err = s.ftsSearch(r, p, each)
	default:
		err = s.search(r, p, each)
	}
	if err == nil && srt != nil {
		err = srt.emit(r.Context(), p.kind == "scan", p.offset, p.k, final)
	}
	if err == nil && schema == nil && sc != nil {
		schema = sc
		switch {
		case p.proj != nil:
			schema, err = p.proj.applySchema(r.Context(), sc, p.q.WithRowID)
		case p.aliases != nil:
			schema, _ = renameColumns(sc, nil, p.columns, p.aliases)
		}
	}
	if err != nil {
		return nil, inTable(err)
	}
	return schema, nil
}

// searched is how many rows a prepared query looks at: the rows taken, or
// every live row once per query vector.
func (p *preparedQuery) searched() uint64 {
	if p.kind == "take" {
		return uint64(len(p.offsets))
	}
	return liveRows(p.ds) * uint64(max(1, len(p.vectors)))
}

// query answers query/: a filtered scan, or a vector search (one query or
// a batch, then with an Int32 query_index column first), as an Arrow IPC
// file written as the result is read (see resultWriter), so that no
// result is held whole in memory.
func (s *Server) query(w http.ResponseWriter, r *http.Request) error {
	name, err := tableName(r)
	if err != nil {
		return err
	}
	var q queryBody
	if err := decodeJSON(r, &q); err != nil {
		return err
	}
	p, err := s.prepareQuery(r, name, &q)
	if err != nil {
		return err
	}
	out := &resultWriter{w: w, version: p.ds.Manifest().Version}
	schema, err := s.runEach(r, p, out.write)
	if err == nil {
		err = out.close(schema)
	}
	s.metrics.query(p.kind, uint64(out.rows), p.searched())
	return err
}

// scan runs a plain query: filter, columns, offset and limit, handing
// each batch the scanner reads to emit. It returns the scan's schema.
func (s *Server) scan(r *http.Request, ds *dataset.Dataset, q *queryBody, columns []string, withRowID bool, k, offset int, emit func(arrow.RecordBatch) error) (*arrow.Schema, error) {
	opts := &dataset.ScanOptions{Columns: columns, Filter: q.Filter, Offset: int64(offset), WithRowID: withRowID}
	if k != math.MaxInt {
		// 0 (never sent by the client) is no limit too.
		opts.Limit = int64(k)
	}
	sc, err := ds.Scan(opts)
	if err != nil {
		return nil, err
	}
	for b, err := range sc.Batches(r.Context()) {
		if err != nil {
			return nil, err
		}
		b.Retain()
		if err := emit(b); err != nil {
			return nil, err
		}
	}
	return sc.Schema(), nil
}

// rowOffsetsFilter is the filter takeOffsets sends.
var rowOffsetsFilter = regexp.MustCompile(`^\s*_rowoffset\s+IN\s*\(([0-9,\s]*)\)\s*$`)

// rowOffsets recognizes the filter of takeOffsets, "_rowoffset IN (0, 1)",
// and returns its offsets.
func rowOffsets(filter string) ([]uint64, bool) {
	m := rowOffsetsFilter.FindStringSubmatch(filter)
	if m == nil {
		return nil, false
	}
	var out []uint64
	for _, f := range strings.Split(m[1], ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}

// MaxTakeRows bounds the rows one takeOffsets query (a _rowoffset IN
// (...) filter) may ask for, duplicates included: a few bytes of filter
// per row would otherwise ask for any number of rows (an offset repeated
// 400,000 times in 0.8 MB). A larger take is a 400: the official client
// sends one takeOffsets call as one query, so its caller must split it.
const MaxTakeRows = 1 << 16

// takeChunkBytes is about how much of a take's result is read at once:
// the rows are taken and written out a chunk at a time, the first chunk
// of takeFirstChunk rows, the next ones as many rows as fit in
// takeChunkBytes at the size per row seen so far.
const (
	takeChunkBytes = 4 << 20
	takeFirstChunk = 64
)

// take answers takeOffsets: the rows at the given positions, in order,
// handed to emit a chunk at a time. A _rowoffset column asked for is the
// position.
func (s *Server) take(r *http.Request, ds *dataset.Dataset, offsets []uint64, columns []string, withRowID bool, emit func(arrow.RecordBatch) error) error {
	if len(offsets) > MaxTakeRows {
		return invalidf("a take of %d rows is more than the %d one query may ask for: take fewer offsets at a time", len(offsets), MaxTakeRows)
	}
	var cols []string
	wantOffset := -1
	for i, c := range columns {
		if c == "_rowoffset" {
			wantOffset = i
			continue
		}
		cols = append(cols, c)
	}
	if columns != nil && cols == nil {
		return unsupportedf("selecting only _rowoffset is not supported")
	}
	// An offset past the last row takes nothing, as in Lance (its take
	// answers the rows that exist), rather than failing the whole take.
	if live := liveRows(ds); slices.ContainsFunc(offsets, func(o uint64) bool { return o >= live }) {
		offsets = slices.DeleteFunc(slices.Clone(offsets), func(o uint64) bool { return o >= live })
	}
	n := takeFirstChunk
	for first := true; first || len(offsets) > 0; first = false {
		chunk := offsets[:min(n, len(offsets))]
		offsets = offsets[len(chunk):]
		b, err := ds.Take(r.Context(), chunk, &dataset.TakeOptions{Columns: cols, WithRowID: withRowID})
		if err != nil {
			return err
		}
		if rows := len(chunk); rows > 0 {
			perRow := max(1, recordBytes(b)/int64(rows))
			n = int(max(1, min(int64(MaxTakeRows), takeChunkBytes/perRow)))
		}
		if wantOffset >= 0 {
			b = withRowOffsets(b, chunk, wantOffset)
		}
		if err := emit(b); err != nil {
			return err
		}
	}
	return nil
}

// withRowOffsets inserts the _rowoffset column, the take's offsets, at
// position at of b.
func withRowOffsets(b arrow.RecordBatch, offsets []uint64, at int) arrow.RecordBatch {
	bld := array.NewUint64Builder(memory.DefaultAllocator)
	defer bld.Release()
	bld.AppendValues(offsets, nil)
	off := bld.NewArray()
	defer off.Release()
	fields := slices.Insert(b.Schema().Fields(), at, arrow.Field{Name: "_rowoffset", Type: arrow.PrimitiveTypes.Uint64})
	arrs := slices.Insert(slices.Clone(b.Columns()), at, arrow.Array(off))
	md := b.Schema().Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fields, &md), arrs, b.NumRows())
	b.Release()
	return out
}

// recordBytes is the size of a batch's buffers.
func recordBytes(b arrow.RecordBatch) int64 {
	var n int64
	for _, c := range b.Columns() {
		n += int64(c.Data().SizeInBytes())
	}
	return n
}

// search runs a vector query per query vector, nearest first, with
// _distance last, and for a batch the query_index column first, and hands
// each query vector's result to emit (which releases it) before ranking
// the next.
func (s *Server) search(r *http.Request, p *preparedQuery, emit func(arrow.RecordBatch) error) error {
	ds, q, vectors, offset := p.ds, p.q, p.vectors, p.offset
	column, err := vectorColumn(ds.Schema(), q.VectorColumn, len(vectors[0]))
	if err != nil {
		return err
	}
	opts := &dataset.SearchOptions{
		K:            p.k + offset, // checkSearch bounded the sum
		NProbes:      p.nprobes,
		Ef:           p.ef,
		RefineFactor: p.refine,
		Metric:       q.DistanceType,
		Filter:       q.Filter,
		Columns:      p.columns,
		WithRowID:    p.withRowID,
		Exact:        q.BypassVectorIndex,
		FastSearch:   q.FastSearch,
		Postfilter:   q.Prefilter != nil && !*q.Prefilter,
	}
	if opts.Metric == "hamming" {
		return unsupportedf("distance type hamming is not supported")
	}
	for i, v := range vectors {
		res, err := ds.Search(r.Context(), column, v, opts)
		if err != nil {
			return err
		}
		res = cutResult(res, offset, q.LowerBound, q.UpperBound)
		res = rowIDAfterDistance(res)
		if len(vectors) > 1 {
			res = withQueryIndex(res, int32(i))
		}
		if err := emit(res); err != nil {
			return err
		}
	}
	return nil
}

// vectorColumn picks the column to search: the one named, else the only
// fixed-size-list column of floats, else the only one of the query's
// dimension.
func vectorColumn(s *schema.Schema, named string, dim int) (string, error) {
	if named != "" {
		return named, nil
	}
	var all, ofDim []string
	for _, f := range s.Arrow().Fields() {
		fsl, ok := f.Type.(*arrow.FixedSizeListType)
		if !ok {
			continue
		}
		switch fsl.Elem().ID() {
		case arrow.FLOAT16, arrow.FLOAT32, arrow.FLOAT64:
		default:
			continue
		}
		all = append(all, f.Name)
		if int(fsl.Len()) == dim {
			ofDim = append(ofDim, f.Name)
		}
	}
	switch {
	case len(all) == 1:
		return all[0], nil
	case len(ofDim) == 1:
		return ofDim[0], nil
	case len(all) == 0:
		return "", invalidf("the table has no vector column (fixed-size list of floats) to search")
	}
	return "", invalidf("the table has several vector columns %v: name one with column()", all)
}

// cutResult drops the first offset rows and the rows whose distance is
// outside [lower, upper).
func cutResult(b arrow.RecordBatch, offset int, lower, upper *float64) arrow.RecordBatch {
	n := int(b.NumRows())
	start := min(offset, n)
	end := n
	if lower != nil || upper != nil {
		idx := b.Schema().FieldIndices(dataset.DistanceColumn)
		if len(idx) == 1 {
			dist := b.Column(idx[0]).(*array.Float32)
			// Rows are nearest first: keep the run inside the bounds.
			for start < end && lower != nil && float64(dist.Value(start)) < *lower {
				start++
			}
			cut := start
			for cut < end && (upper == nil || float64(dist.Value(cut)) < *upper) {
				cut++
			}
			end = cut
		}
	}
	if start == 0 && end == n {
		return b
	}
	out := b.NewSlice(int64(start), int64(end))
	b.Release()
	return out
}

// rowIDAfterDistance moves a _rowid column that comes before _distance to
// the end, where embedded LanceDB has it ([columns, _distance, _rowid]):
// the client's hybrid search concatenates a vector result with a
// full-text one ([columns, _score, _rowid]) column by column.
func rowIDAfterDistance(b arrow.RecordBatch) arrow.RecordBatch {
	s := b.Schema()
	ri, di := s.FieldIndices("_rowid"), s.FieldIndices(dataset.DistanceColumn)
	if len(ri) != 1 || len(di) != 1 || ri[0] > di[0] {
		return b
	}
	fields := slices.Delete(slices.Clone(s.Fields()), ri[0], ri[0]+1)
	cols := slices.Delete(slices.Clone(b.Columns()), ri[0], ri[0]+1)
	fields = append(fields, s.Field(ri[0]))
	cols = append(cols, b.Column(ri[0]))
	md := s.Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, b.NumRows())
	b.Release()
	return out
}

// withQueryIndex puts an Int32 query_index column holding i first.
func withQueryIndex(b arrow.RecordBatch, i int32) arrow.RecordBatch {
	bld := array.NewInt32Builder(memory.DefaultAllocator)
	defer bld.Release()
	for range b.NumRows() {
		bld.Append(i)
	}
	qi := bld.NewArray()
	defer qi.Release()
	fields := append([]arrow.Field{{Name: "query_index", Type: arrow.PrimitiveTypes.Int32}}, b.Schema().Fields()...)
	cols := append([]arrow.Array{qi}, b.Columns()...)
	md := b.Schema().Metadata()
	out := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, b.NumRows())
	b.Release()
	return out
}

// renameColumns gives the selected columns the client's aliases.
func renameColumns(schema *arrow.Schema, batches []arrow.RecordBatch, columns, aliases []string) (*arrow.Schema, []arrow.RecordBatch) {
	rename := make(map[string]string, len(columns))
	for i, c := range columns {
		rename[c] = aliases[i]
	}
	fields := schema.Fields()
	for i := range fields {
		if a, ok := rename[fields[i].Name]; ok {
			fields[i].Name = a
		}
	}
	md := schema.Metadata()
	out := arrow.NewSchema(fields, &md)
	for i, b := range batches {
		nb := array.NewRecordBatch(out, b.Columns(), b.NumRows())
		b.Release()
		batches[i] = nb
	}
	return out, batches
}

// liveRows is the number of rows of a version that are not deleted, from
// its manifest.
func liveRows(ds *dataset.Dataset) uint64 {
	var n uint64
	for _, f := range ds.Manifest().Fragments {
		d, _ := f.NumDeletedRows()
		if d <= f.PhysicalRows {
			n += f.PhysicalRows - d
		}
	}
	return n
}
