package dataset

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

// MergeInsertOptions configures MergeInsert. At least one of the three
// actions must be chosen.
type MergeInsertOptions struct {
	// On are the key columns (top-level columns of the dataset) whose
	// values match a source row with target rows. Required. A null in a
	// key never matches.
	On []string
	// WhenMatchedUpdateAll replaces every target row that matches a source
	// row with the source row (it keeps its stable row id).
	WhenMatchedUpdateAll bool
	// WhenMatchedCondition restricts WhenMatchedUpdateAll to the matches
	// for which this SQL predicate is true. It names the target row's
	// columns as target.col and the source row's as source.col, as
	// LanceDB's when_matched_update_all(where=...): "source.ts >
	// target.ts". "" updates every match.
	WhenMatchedCondition string
	// WhenNotMatchedInsertAll inserts the source rows that match no target
	// row.
	WhenNotMatchedInsertAll bool
	// WhenNotMatchedBySourceDelete deletes the target rows that match no
	// source row.
	WhenNotMatchedBySourceDelete bool
	// WhenNotMatchedBySourceCondition restricts that delete to the rows
	// for which this SQL predicate over the target's columns (named
	// plainly: "region = 'eu'") is true. "" deletes them all.
	WhenNotMatchedBySourceCondition string
	// NoScalarIndex reads every target row, as if no scalar index covered
	// a key column. Default false: a BTREE or BITMAP index on a key
	// column finds the target rows a source row may match (see
	// MergeInsertStats.KeyIndex); the result is the same either way.
	NoScalarIndex bool
	// CommitOptions configure the commit (retries, transaction
	// properties) and the Allocator of the source rows held in memory,
	// the arrays computed from them and the dataset's rows read.
	CommitOptions
}

// MergeInsertStats reports what a MergeInsert did.
type MergeInsertStats struct {
	// RowsInserted counts the source rows inserted, RowsUpdated the target
	// rows replaced, and RowsDeleted the target rows deleted for matching
	// no source row.
	RowsInserted, RowsUpdated, RowsDeleted uint64
	// KeyIndex names the scalar index (a BTREE or BITMAP on a key column)
	// that found the target rows a source key may match, so that only
	// those rows of the fragments it covers were read; "" when every
	// target row was read.
	KeyIndex string
}

// MergeInsert merges the rows of source into the dataset by the key
// columns opts.On, as Lance's merge_insert (LanceDB's mergeInsert) does,
// and returns the new version: matched target rows are replaced by their
// source row (WhenMatchedUpdateAll, optionally only where
// WhenMatchedCondition holds), unmatched source rows are inserted
// (WhenNotMatchedInsertAll), and target rows no source row matches are
// deleted (WhenNotMatchedBySourceDelete, optionally only where
// WhenNotMatchedBySourceCondition holds). Like Lance it commits one Update
// transaction: replaced and deleted rows are removed with deletion files,
// and the new values and inserted rows are written as new fragments,
// replaced rows keeping their stable row ids. Even a merge that changes
// nothing commits a version, as in Lance.
//
// The source must have the dataset's columns, each with its type, in any
// order; a missing or extra column is an error wrapping
// lancer.ErrInvalidArgument. The source is read into memory (its rows are
// matched by a hash join against a scan of the dataset), so it must fit
// there; the dataset is streamed. A target row matched by several source
// rows is an error wrapping lancer.ErrInvalidArgument ("ambiguous merge
// insert"), as in Lance; a source row may match several target rows.
//
// Blob columns take their written types in the source (large_binary for a
// legacy blob, struct<data, uri> for blob v2), and merged rows are written
// with the source's blobs; the target's blobs are never read.
//
// The merge is rebased over concurrent commits as Update is, and computed
// again on the latest version after a retryable conflict, as long as
// opts.Retries allow.
func (d *Dataset) MergeInsert(ctx context.Context, source array.RecordReader, opts *MergeInsertOptions) (*Dataset, MergeInsertStats, error) {
	var o MergeInsertOptions
	if opts != nil {
		o = *opts
	}
	d = d.using(&o.CommitOptions)
	o.Allocator = d.opts.Allocator
	m, err := d.parseMerge(&o)
	if err != nil {
		return nil, MergeInsertStats{}, err
	}
	src, err := readSource(ctx, o.Allocator, d, source)
	if err != nil {
		return nil, MergeInsertStats{}, err
	}
	defer src.Release()
	m.src = src
	return reexecute(ctx, d, &o.CommitOptions, func(cur *Dataset, co *CommitOptions) (*Dataset, MergeInsertStats, error) {
		return cur.mergeInsert(ctx, m, co)
	})
}

// mergeSpec is a parsed MergeInsert.
type mergeSpec struct {
	o          *MergeInsertOptions
	matchedIf  *filter.Expr // nil: every match
	deleteIf   *filter.Expr // nil: every unmatched target row
	src        arrow.RecordBatch
	srcKeys    map[string][]int32 // source rows by key (null keys left out)
	srcKeyCols []int
}

func (d *Dataset) parseMerge(o *MergeInsertOptions) (*mergeSpec, error) {
	if len(o.On) == 0 {
		return nil, fmt.Errorf("dataset: merge insert: no key columns (On): %w", lancer.ErrInvalidArgument)
	}
	seen := map[string]bool{}
	for _, k := range o.On {
		if d.manifest.Schema.Field(k) == nil {
			return nil, fmt.Errorf("dataset: merge insert: key column %q: the dataset has no such column: %w", k, lancer.ErrNotFound)
		}
		if seen[k] {
			return nil, fmt.Errorf("dataset: merge insert: key column %q named twice: %w", k, lancer.ErrInvalidArgument)
		}
		seen[k] = true
	}
	if !o.WhenMatchedUpdateAll && !o.WhenNotMatchedInsertAll && !o.WhenNotMatchedBySourceDelete {
		return nil, fmt.Errorf("dataset: merge insert: no action chosen (update, insert or delete): %w", lancer.ErrInvalidArgument)
	}
	m := &mergeSpec{o: o}
	if c := strings.TrimSpace(o.WhenMatchedCondition); c != "" {
		if !o.WhenMatchedUpdateAll {
			return nil, fmt.Errorf("dataset: merge insert: WhenMatchedCondition without WhenMatchedUpdateAll: %w", lancer.ErrInvalidArgument)
		}
		e, err := filter.Parse(c)
		if err != nil {
			return nil, fmt.Errorf("dataset: merge insert: when matched: %w", err)
		}
		m.matchedIf = e
	}
	if c := strings.TrimSpace(o.WhenNotMatchedBySourceCondition); c != "" {
		if !o.WhenNotMatchedBySourceDelete {
			return nil, fmt.Errorf("dataset: merge insert: WhenNotMatchedBySourceCondition without WhenNotMatchedBySourceDelete: %w", lancer.ErrInvalidArgument)
		}
		e, err := filter.Parse(c)
		if err != nil {
			return nil, fmt.Errorf("dataset: merge insert: when not matched by source: %w", err)
		}
		m.deleteIf = e
	}
	return m, nil
}

// dataSchema is the Arrow schema of the dataset's columns, in order.
func (d *Dataset) dataSchema() *arrow.Schema {
	fields := make([]arrow.Field, len(d.manifest.Schema.Fields))
	for i, f := range d.manifest.Schema.Fields {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: f.Nullable}
	}
	return arrow.NewSchema(fields, nil)
}

// readSource reads all of source into one batch of the dataset's columns,
// in the dataset's order, checking that it has exactly those columns with
// their types.
func readSource(ctx context.Context, mem memory.Allocator, d *Dataset, source array.RecordReader) (arrow.RecordBatch, error) {
	if source == nil {
		return nil, fmt.Errorf("dataset: merge insert: no source: %w", lancer.ErrInvalidArgument)
	}
	want := d.dataSchema()
	ss := source.Schema()
	order := make([]int, want.NumFields())
	for i, f := range want.Fields() {
		idx := ss.FieldIndices(f.Name)
		switch {
		case len(idx) == 0:
			return nil, fmt.Errorf("dataset: merge insert: the source lacks column %q: %w", f.Name, lancer.ErrInvalidArgument)
		case len(idx) > 1:
			return nil, fmt.Errorf("dataset: merge insert: the source has column %q twice: %w", f.Name, lancer.ErrInvalidArgument)
		case !arrow.TypeEqual(ss.Field(idx[0]).Type, f.Type):
			return nil, fmt.Errorf("dataset: merge insert: source column %q is %s, the dataset's is %s: %w",
				f.Name, ss.Field(idx[0]).Type, f.Type, lancer.ErrInvalidArgument)
		}
		order[i] = idx[0]
	}
	for _, f := range ss.Fields() {
		if !want.HasField(f.Name) {
			return nil, fmt.Errorf("dataset: merge insert: the dataset has no column %q, which the source has: %w", f.Name, lancer.ErrInvalidArgument)
		}
	}
	pieces := make([][]arrow.Array, len(order))
	var batches []arrow.RecordBatch
	defer func() {
		for _, b := range batches {
			b.Release()
		}
	}()
	var rows int64
	for source.Next() {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rec := source.RecordBatch()
		if rec.NumRows() == 0 {
			continue
		}
		rec.Retain()
		batches = append(batches, rec)
		for i, c := range order {
			pieces[i] = append(pieces[i], rec.Column(c))
		}
		rows += rec.NumRows()
	}
	if err := source.Err(); err != nil {
		return nil, fmt.Errorf("dataset: merge insert: reading the source: %w", err)
	}
	if rows > math.MaxInt32 {
		return nil, fmt.Errorf("dataset: merge insert: a source of %d rows: %w", rows, lancer.ErrUnsupported)
	}
	cols := make([]arrow.Array, len(order))
	defer releaseArrays(cols)
	for i := range order {
		var err error
		if len(pieces[i]) == 0 {
			cols[i] = array.MakeArrayOfNull(mem, want.Field(i).Type, 0)
			continue
		}
		if cols[i], err = arrowutil.ConcatTake(ctx, mem, pieces[i], nil); err != nil {
			return nil, fmt.Errorf("dataset: merge insert: source column %q: %w", want.Field(i).Name, err)
		}
	}
	return array.NewRecordBatch(want, cols, rows), nil
}

// indexSource builds the hash table of the source rows by key.
func (m *mergeSpec) indexSource() {
	m.srcKeyCols = m.srcKeyCols[:0]
	for _, k := range m.o.On {
		m.srcKeyCols = append(m.srcKeyCols, m.src.Schema().FieldIndices(k)[0])
	}
	m.srcKeys = map[string][]int32{}
	keyCols := columnsOf(m.src, m.srcKeyCols)
	var buf []byte
	for i := range int(m.src.NumRows()) {
		var ok bool
		if buf, ok = appendKey(buf[:0], keyCols, i); ok {
			m.srcKeys[string(buf)] = append(m.srcKeys[string(buf)], int32(i))
		}
	}
}

func columnsOf(rec arrow.RecordBatch, idx []int) []arrow.Array {
	out := make([]arrow.Array, len(idx))
	for i, c := range idx {
		out[i] = rec.Column(c)
	}
	return out
}

// appendKey appends the join key of row i (its key columns' values, each
// length-prefixed) to b; false when a key is null, which matches nothing.
// Floats are keyed by value, with -0 as 0 and every NaN alike, as
// DataFusion's join compares them.
func appendKey(b []byte, cols []arrow.Array, i int) ([]byte, bool) {
	for _, c := range cols {
		if c.IsNull(i) {
			return b, false
		}
		var v []byte
		switch a := c.(type) {
		case *array.String:
			v = []byte(a.Value(i))
		case *array.LargeString:
			v = []byte(a.Value(i))
		case *array.Binary:
			v = a.Value(i)
		case *array.LargeBinary:
			v = a.Value(i)
		case *array.FixedSizeBinary:
			v = a.Value(i)
		case *array.Float32:
			x := a.Value(i)
			switch {
			case x == 0:
				x = 0
			case x != x:
				x = float32(math.NaN())
			}
			v = binary.LittleEndian.AppendUint32(nil, math.Float32bits(x))
		case *array.Float64:
			x := a.Value(i)
			switch {
			case x == 0:
				x = 0
			case x != x:
				x = math.NaN()
			}
			v = binary.LittleEndian.AppendUint64(nil, math.Float64bits(x))
		default:
			if fw, ok := c.DataType().(arrow.FixedWidthDataType); ok && fw.BitWidth() >= 8 && len(c.Data().Buffers()) > 1 {
				w := fw.BitWidth() / 8
				raw := c.Data().Buffers()[1].Bytes()
				off := (c.Data().Offset() + i) * w
				v = raw[off : off+w]
			} else {
				v = []byte(c.ValueStr(i))
			}
		}
		b = binary.AppendUvarint(b, uint64(len(v)))
		b = append(b, v...)
	}
	return b, true
}

// mergeInsert runs m once on d's version.
func (d *Dataset) mergeInsert(ctx context.Context, m *mergeSpec, opts *CommitOptions) (*Dataset, MergeInsertStats, error) {
	var stats MergeInsertStats
	// Merged rows come from the source, which holds blob columns' bytes:
	// target blobs are never read.
	if m.srcKeys == nil {
		m.indexSource()
	}
	// A scalar index on a key column finds the target rows that may match
	// a source row; the others are read only when unmatched target rows
	// are to be deleted.
	var narrow ScanOptions
	if !m.o.WhenNotMatchedBySourceDelete && !m.o.NoScalarIndex {
		narrow.keys = d.mergeKeyPlan(m)
		if narrow.keys != nil {
			stats.KeyIndex = narrow.keys.stats[0].Name
		}
	}
	s, outSchema, _, idCol, addrCol, err := d.rewriteScan(ctx, "merge insert", narrow)
	if err != nil {
		return nil, stats, err
	}
	if !sameColumns(outSchema, m.src.Schema()) {
		// A concurrent commit changed the schema since the source was read.
		return nil, stats, fmt.Errorf("dataset: merge insert: the dataset's columns changed to %s: %w", outSchema, lancer.ErrConflict)
	}
	mem := m.o.Allocator
	sch := s.Schema()
	var matchedIf, deleteIf *filter.Bound
	// The target's blob columns hold their descriptors.
	targetFields := sch.Fields()[:outSchema.NumFields()]
	pairSchema := arrow.NewSchema([]arrow.Field{
		{Name: "target", Type: arrow.StructOf(targetFields...), Nullable: true},
		{Name: "source", Type: arrow.StructOf(outSchema.Fields()...), Nullable: true},
	}, nil)
	if m.matchedIf != nil {
		if matchedIf, err = m.matchedIf.Bind(pairSchema); err != nil {
			return nil, stats, fmt.Errorf("dataset: merge insert: when matched: %w", err)
		}
	}
	if m.deleteIf != nil {
		if deleteIf, err = m.deleteIf.Bind(sch); err != nil {
			return nil, stats, fmt.Errorf("dataset: merge insert: when not matched by source: %w", err)
		}
	}
	keyCols := make([]int, len(m.o.On))
	for i, k := range m.o.On {
		keyCols[i] = sch.FieldIndices(k)[0]
	}

	w := newRewritten(d)
	matchedSrc := make([]bool, m.src.NumRows())
	var updates []int64 // source rows replacing target rows, in write order
	var buf []byte
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return nil, stats, err
		}
		keys := columnsOf(rec, keyCols)
		addrs := rec.Column(addrCol).(*array.Uint64)
		var ids *array.Uint64
		if idCol >= 0 {
			ids = rec.Column(idCol).(*array.Uint64)
		}
		var (
			pairT, pairS []int64 // candidate updates: target row, source row
			unmatched    []int   // target rows no source row matches
		)
		for i := range int(rec.NumRows()) {
			var ok bool
			buf, ok = appendKey(buf[:0], keys, i)
			var match []int32
			if ok {
				match = m.srcKeys[string(buf)]
			}
			if len(match) == 0 {
				unmatched = append(unmatched, i)
				continue
			}
			for _, j := range match {
				matchedSrc[j] = true
			}
			if !m.o.WhenMatchedUpdateAll {
				continue
			}
			if len(match) > 1 {
				return nil, stats, fmt.Errorf("dataset: merge insert: ambiguous merge insert: multiple source rows (%d) match the same target row on (%s): %w",
					len(match), describeKey(m.o.On, keys, i), lancer.ErrInvalidArgument)
			}
			pairT = append(pairT, int64(i))
			pairS = append(pairS, int64(match[0]))
		}
		if matchedIf != nil && len(pairT) > 0 {
			keep, err := m.evalPairs(ctx, mem, matchedIf, pairSchema, targetFields, rec, pairT, pairS)
			if err != nil {
				return nil, stats, err
			}
			pairT, pairS = filterPairs(keep, pairT, pairS)
		}
		for k, i := range pairT {
			var id uint64
			if ids != nil {
				id = ids.Value(int(i))
			}
			if err := w.add(ctx, addrs.Value(int(i)), id); err != nil {
				return nil, stats, err
			}
			updates = append(updates, pairS[k])
		}
		if m.o.WhenNotMatchedBySourceDelete && len(unmatched) > 0 {
			if deleteIf != nil {
				if unmatched, err = selectRows(ctx, mem, deleteIf, rec, unmatched); err != nil {
					return nil, stats, err
				}
			}
			for _, i := range unmatched {
				w.remove(addrs.Value(i))
			}
			stats.RowsDeleted += uint64(len(unmatched))
		}
	}
	stats.RowsUpdated = uint64(len(updates))
	rows := updates
	if m.o.WhenNotMatchedInsertAll {
		for j, matched := range matchedSrc {
			if !matched {
				rows = append(rows, int64(j))
			}
		}
	}
	stats.RowsInserted = uint64(len(rows) - len(updates))

	frags, err := d.writeRows(ctx, outSchema, func(yield func(arrow.RecordBatch, error) bool) {
		const chunk = 8192
		for start := 0; start < len(rows); start += chunk {
			part, err := takeBatchRows(ctx, mem, m.src, outSchema, rows[start:min(start+chunk, len(rows))])
			if !yield(part, err) || err != nil {
				return
			}
		}
	})
	if err != nil {
		return nil, stats, fmt.Errorf("dataset: merge insert: %w", err)
	}
	// Lance records every field of the schema, nested ones included.
	var preserve []uint32
	d.manifest.Schema.Walk(func(f *schema.Field) { preserve = append(preserve, uint32(f.ID)) })
	slices.Sort(preserve)
	op, err := w.finish(ctx, frags, preserve, "")
	if err != nil {
		removeFragments(ctx, d, frags)
		return nil, stats, err
	}
	out, err := d.commit(ctx, op, opts)
	if err != nil {
		return nil, MergeInsertStats{}, err
	}
	return out, stats, nil
}

// mergeKeyPlan returns the index plan of the merge's key lookup: the rows
// whose value in a key column (the first one a BTREE or BITMAP index
// covers) is one of the source's keys, which every target row a source
// row matches is among (a match needs every key equal; NULLs match
// nothing, floats compare as appendKey and the indices do, -0 as 0 and
// NaN as NaN). nil when no index covers a key column.
func (d *Dataset) mergeKeyPlan(m *mergeSpec) *indexPlan {
	if len(d.manifest.Indices) == 0 || len(m.srcKeys) == 0 {
		return nil
	}
	for k, name := range m.o.On {
		col := m.src.Column(m.srcKeyCols[k])
		t := &filter.IndexTerm{Column: name, Op: filter.IndexEq}
		seen := map[string]bool{}
		var buf []byte
		for i := range col.Len() {
			var ok bool
			if buf, ok = appendKey(buf[:0], []arrow.Array{col}, i); !ok || seen[string(buf)] {
				continue
			}
			seen[string(buf)] = true
			v, err := goScalar(col, i)
			if err != nil {
				return nil
			}
			t.Values = append(t.Values, v)
		}
		t.SQL = fmt.Sprintf("%s IN (%d keys of the source)", name, len(t.Values))
		x := &filter.IndexExpr{Term: t}
		p := &indexPlan{segs: map[*filter.IndexTerm]indexSegments{}}
		if p.expr = p.prune(d, x); p.expr != nil {
			return p
		}
	}
	return nil
}

// sameColumns reports whether a and b have the same column names and
// types, in order (metadata aside).
func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		if a.Field(i).Name != b.Field(i).Name || !arrow.TypeEqual(a.Field(i).Type, b.Field(i).Type) {
			return false
		}
	}
	return true
}

// describeKey prints row i's key as Lance's ambiguity error does.
func describeKey(names []string, cols []arrow.Array, i int) string {
	parts := make([]string, len(names))
	for k, n := range names {
		parts[k] = n + " = " + cols[k].ValueStr(i)
	}
	return strings.Join(parts, ", ")
}

// takeBatchRows returns the given rows of rec as a batch of schema.
func takeBatchRows(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch, schema *arrow.Schema, rows []int64) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer releaseArrays(cols)
	for c := range cols {
		var err error
		if cols[c], err = arrowutil.ConcatTake(ctx, mem, []arrow.Array{rec.Column(c)}, rows); err != nil {
			return nil, fmt.Errorf("column %q: %w", schema.Field(c).Name, err)
		}
	}
	return array.NewRecordBatch(schema, cols, int64(len(rows))), nil
}

// evalPairs evaluates the when-matched condition on candidate updates:
// target row pairT[k] of rec with source row pairS[k].
func (m *mergeSpec) evalPairs(ctx context.Context, mem memory.Allocator, cond *filter.Bound, pairSchema *arrow.Schema,
	targetFields []arrow.Field, rec arrow.RecordBatch, pairT, pairS []int64) (*array.Boolean, error) {
	n := int(m.src.NumCols())
	structOf := func(from arrow.RecordBatch, fields []arrow.Field, rows []int64) (arrow.Array, error) {
		cols := make([]arrow.Array, n)
		defer releaseArrays(cols)
		for c := range n {
			var err error
			if cols[c], err = arrowutil.ConcatTake(ctx, mem, []arrow.Array{from.Column(c)}, rows); err != nil {
				return nil, fmt.Errorf("dataset: merge insert: column %q: %w", m.src.Schema().Field(c).Name, err)
			}
		}
		return array.NewStructArrayWithFields(cols, fields)
	}
	t, err := structOf(rec, targetFields, pairT)
	if err != nil {
		return nil, err
	}
	defer t.Release()
	s, err := structOf(m.src, m.src.Schema().Fields(), pairS)
	if err != nil {
		return nil, err
	}
	defer s.Release()
	pairs := array.NewRecordBatch(pairSchema, []arrow.Array{t, s}, int64(len(pairT)))
	defer pairs.Release()
	mask, err := cond.Eval(ctx, mem, pairs)
	if err != nil {
		return nil, fmt.Errorf("dataset: merge insert: when matched: %w", err)
	}
	return mask.(*array.Boolean), nil
}

// filterPairs keeps the pairs whose condition is TRUE (keep is released).
func filterPairs(keep *array.Boolean, pairT, pairS []int64) ([]int64, []int64) {
	defer keep.Release()
	var t, s []int64
	for k := range pairT {
		if keep.IsValid(k) && keep.Value(k) {
			t = append(t, pairT[k])
			s = append(s, pairS[k])
		}
	}
	return t, s
}

// selectRows returns the rows of rec among rows for which cond is TRUE.
func selectRows(ctx context.Context, mem memory.Allocator, cond *filter.Bound, rec arrow.RecordBatch, rows []int) ([]int, error) {
	mask, err := cond.Eval(ctx, mem, rec)
	if err != nil {
		return nil, fmt.Errorf("dataset: merge insert: when not matched by source: %w", err)
	}
	defer mask.Release()
	keep := mask.(*array.Boolean)
	out := rows[:0]
	for _, i := range rows {
		if keep.IsValid(i) && keep.Value(i) {
			out = append(out, i)
		}
	}
	return out, nil
}

// goScalar returns value i of col as a scalar that holds no Arrow buffer
// (a binary value is copied to the Go heap), so that it needs no release.
func goScalar(col arrow.Array, i int) (scalar.Scalar, error) {
	v, err := scalar.GetScalar(col, i)
	if err != nil {
		return nil, err
	}
	bs, ok := v.(scalar.BinaryScalar)
	if !ok {
		return v, nil
	}
	data := bytes.Clone(bs.Data())
	bs.Release()
	switch col.DataType().ID() {
	case arrow.STRING:
		return scalar.NewStringScalar(string(data)), nil
	case arrow.LARGE_STRING:
		return scalar.NewLargeStringScalar(string(data)), nil
	case arrow.LARGE_BINARY:
		return scalar.NewLargeBinaryScalar(memory.NewBufferBytes(data)), nil
	}
	return scalar.NewBinaryScalar(memory.NewBufferBytes(data), col.DataType()), nil
}
