package dataset

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
)

// Row changes a Diff reports in its ChangeColumn.
const (
	ChangeInsert = "insert"
	ChangeDelete = "delete"
	ChangeUpdate = "update"
)

// ChangeColumn is the first column of a diff: ChangeInsert, ChangeDelete
// or ChangeUpdate.
const ChangeColumn = "_change"

// DiffOptions configures Diff. A nil pointer means the defaults.
type DiffOptions struct {
	// Columns are the data columns of the rows reported. Default nil: the
	// top-level columns both versions have.
	Columns []string
	// BatchSize is the number of rows per batch. Default 8192.
	BatchSize int
}

// DiffSummary counts a diff's changes.
type DiffSummary struct {
	Inserted, Deleted, Updated uint64
	// ColumnsAdded and ColumnsDropped are the top-level columns only the
	// newer, or only the older, version has.
	ColumnsAdded, ColumnsDropped []string
}

// Diff compares two versions of one family of datasets (a dataset and its
// shallow clones: versions, branches) and streams the rows that differ:
// deleted ones as they were in from, inserted and updated ones as they are
// in to. Each batch has ChangeColumn, "_rowid" (the stable row id, or the
// row's address in the version it is read from), then the columns.
//
// With stable row ids a row whose id is in both versions but whose copy
// moved to another fragment with a new last-updated version is an update;
// one moved by compaction is unchanged. Without them rows are matched by
// the data file and offset they live at, so an update shows as a deletion
// and an insertion, and a compaction as deletions and insertions of the
// same values.
func Diff(ctx context.Context, from, to *Dataset, opts *DiffOptions) (*DiffReader, error) {
	var o DiffOptions
	if opts != nil {
		o = *opts
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 8192
	}
	if from.manifest.StableRowIDs() != to.manifest.StableRowIDs() {
		return nil, fmt.Errorf("dataset: diff of versions %d and %d: only one has stable row ids: %w", from.Version(), to.Version(), lancer.ErrUnsupported)
	}
	m := &merger{base: from, ours: to, theirs: to, stable: from.manifest.StableRowIDs(), report: &MergeReport{}}
	if err := m.load(ctx); err != nil {
		return nil, err
	}
	if m.stable {
		for key, bf := range m.sides[0].frags {
			if f, ok := m.sides[1].frags[key]; ok && !slices.Equal(f.ids, bf.ids) {
				return nil, fmt.Errorf("dataset: diff: fragment %d holds other row ids in version %d than in version %d: %w",
					f.frag.ID, to.Version(), from.Version(), lancer.ErrUnsupported)
			}
		}
	}
	r := &DiffReader{ctx: ctx, from: from, to: to, batch: o.BatchSize}
	r.refs.Store(1)
	addr := func(side int, id uint64) uint64 {
		if m.stable {
			return id
		}
		at := m.live[side][id]
		return m.sides[side].frags[at.key].frag.ID<<32 | uint64(at.offset)
	}
	for id, at := range m.live[0] {
		now, ok := m.live[1][id]
		switch {
		case !ok:
			r.deletes = append(r.deletes, addr(0, id))
		case now.key != at.key && !(m.stable && now.updated == at.updated):
			r.updates = append(r.updates, addr(1, id))
		}
	}
	for id := range m.live[1] {
		if _, ok := m.live[0][id]; !ok {
			r.inserts = append(r.inserts, addr(1, id))
		}
	}
	slices.Sort(r.deletes)
	slices.Sort(r.updates)
	slices.Sort(r.inserts)
	r.summary = DiffSummary{Inserted: uint64(len(r.inserts)), Deleted: uint64(len(r.deletes)), Updated: uint64(len(r.updates))}
	for _, f := range to.manifest.Schema.Fields {
		if from.manifest.Schema.Field(f.Name) == nil {
			r.summary.ColumnsAdded = append(r.summary.ColumnsAdded, f.Name)
		}
	}
	for _, f := range from.manifest.Schema.Fields {
		if to.manifest.Schema.Field(f.Name) == nil {
			r.summary.ColumnsDropped = append(r.summary.ColumnsDropped, f.Name)
		}
	}
	r.columns = o.Columns
	if r.columns == nil {
		r.columns = commonColumns(from, to)
	}
	// The output schema: the take of no rows gives the column types.
	empty, err := to.TakeRowIDs(ctx, nil, &TakeOptions{Columns: r.columns, WithRowID: true})
	if err != nil {
		return nil, err
	}
	defer empty.Release()
	r.schema = diffSchema(empty.Schema())
	return r, nil
}

// diffSchema puts ChangeColumn and _rowid first.
func diffSchema(take *arrow.Schema) *arrow.Schema {
	fields := []arrow.Field{{Name: ChangeColumn, Type: arrow.BinaryTypes.String}}
	n := take.NumFields()
	fields = append(fields, take.Field(n-1)) // _rowid
	for i := range n - 1 {
		fields = append(fields, take.Field(i))
	}
	return arrow.NewSchema(fields, nil)
}

// DiffReader streams a diff's rows: deletions, then updates, then
// insertions, each by ascending row id. It implements array.RecordReader;
// release it when done.
type DiffReader struct {
	ctx                       context.Context
	from, to                  *Dataset
	columns                   []string
	schema                    *arrow.Schema
	batch                     int
	deletes, updates, inserts []uint64
	phase, pos                int
	cur                       arrow.RecordBatch
	err                       error
	refs                      atomic.Int64
	summary                   DiffSummary
}

// Summary returns the counts of the diff, known before any batch is read.
func (r *DiffReader) Summary() DiffSummary { return r.summary }

// Schema returns the schema of the batches.
func (r *DiffReader) Schema() *arrow.Schema { return r.schema }

// Next reads the next batch; false at the end or on error (see Err).
func (r *DiffReader) Next() bool {
	if r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
	if r.err != nil {
		return false
	}
	for r.phase < 3 {
		ids, d, change := r.deletes, r.from, ChangeDelete
		switch r.phase {
		case 1:
			ids, d, change = r.updates, r.to, ChangeUpdate
		case 2:
			ids, d, change = r.inserts, r.to, ChangeInsert
		}
		if r.pos >= len(ids) {
			r.phase, r.pos = r.phase+1, 0
			continue
		}
		end := min(len(ids), r.pos+r.batch)
		chunk := ids[r.pos:end]
		r.pos = end
		rec, err := d.TakeRowIDs(r.ctx, chunk, &TakeOptions{Columns: r.columns, WithRowID: true})
		if err != nil {
			r.err = err
			return false
		}
		r.cur = r.withChange(rec, change)
		rec.Release()
		return true
	}
	return false
}

func (r *DiffReader) withChange(rec arrow.RecordBatch, change string) arrow.RecordBatch {
	b := array.NewStringBuilder(r.from.opts.Allocator)
	defer b.Release()
	for range rec.NumRows() {
		b.Append(change)
	}
	ch := b.NewArray()
	defer ch.Release()
	n := int(rec.NumCols())
	cols := []arrow.Array{ch, rec.Column(n - 1)}
	cols = append(cols, rec.Columns()[:n-1]...)
	return array.NewRecordBatch(r.schema, cols, rec.NumRows())
}

// RecordBatch returns the current batch, valid until the next call to Next.
func (r *DiffReader) RecordBatch() arrow.RecordBatch { return r.cur }

// Record is RecordBatch (array.RecordReader).
func (r *DiffReader) Record() arrow.RecordBatch { return r.cur }

// Err returns the error that stopped Next.
func (r *DiffReader) Err() error { return r.err }

// Retain adds a reference.
func (r *DiffReader) Retain() { r.refs.Add(1) }

// Release drops a reference; the last one frees the current batch.
func (r *DiffReader) Release() {
	if r.refs.Add(-1) == 0 && r.cur != nil {
		r.cur.Release()
		r.cur = nil
	}
}

var _ array.RecordReader = (*DiffReader)(nil)
