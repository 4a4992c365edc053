package dataset

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/arrowutil"
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
func Diff(ctx context.Context, from, to *Dataset, opts *DiffOptions) (*Changes, error) {
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
	r := &Changes{from: from, to: to, batch: o.BatchSize}
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

// Changes is a computed diff: which rows were deleted, updated and
// inserted, and the columns reported. Summary and Schema are known at
// once; Batches reads the rows.
type Changes struct {
	from, to                  *Dataset
	columns                   []string
	schema                    *arrow.Schema
	batch                     int
	deletes, updates, inserts []uint64
	summary                   DiffSummary
}

// Summary returns the counts of the diff, known before any batch is read.
func (r *Changes) Summary() DiffSummary { return r.summary }

// Schema returns the schema of the batches.
func (r *Changes) Schema() *arrow.Schema { return r.schema }

// Batches reads the diff's rows under ctx: deletions, then updates, then
// insertions, each by ascending row id. Each batch is valid until the loop
// body returns; Retain it to keep it. An error is yielded once, last. Every
// range over the result reads the rows again.
func (r *Changes) Batches(ctx context.Context) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, phase := range []struct {
			ids    []uint64
			d      *Dataset
			change string
		}{{r.deletes, r.from, ChangeDelete}, {r.updates, r.to, ChangeUpdate}, {r.inserts, r.to, ChangeInsert}} {
			for pos := 0; pos < len(phase.ids); pos += r.batch {
				chunk := phase.ids[pos:min(len(phase.ids), pos+r.batch)]
				rec, err := phase.d.TakeRowIDs(ctx, chunk, &TakeOptions{Columns: r.columns, WithRowID: true})
				if err != nil {
					yield(nil, err)
					return
				}
				out := r.withChange(rec, phase.change)
				rec.Release()
				more := yield(out, nil)
				out.Release()
				if !more {
					return
				}
			}
		}
	}
}

func (r *Changes) withChange(rec arrow.RecordBatch, change string) arrow.RecordBatch {
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

// Reader reads the diff's rows under ctx as an array.RecordReader, for
// APIs that take one. Release it when done.
func (r *Changes) Reader(ctx context.Context) array.RecordReader {
	return arrowutil.ReaderFromIter(r.schema, r.Batches(ctx), &arrowutil.ReaderOptions{Borrowed: true})
}
