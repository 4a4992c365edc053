package dataset

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/filter"
)

// scanFilter is the filter of a filtered scan. The scanner then reads a
// wider projection (the output columns plus the columns the filter needs),
// and each batch read is filtered, cut to the output columns, and only then
// counted against Offset and Limit, as Lance applies them after the filter.
type scanFilter struct {
	bound *filter.Bound
	// out is the output schema; outIdx[i] is the read column holding output
	// column i (a struct read with more members than the output asks for
	// is pruned to the output's type).
	out    *arrow.Schema
	outIdx []int

	toSkip    uint64 // matching rows of Offset not yet skipped
	remaining uint64 // matching rows Limit still allows
	limited   bool

	// probe, when set, reads only the columns the filter names, and
	// probeBound is the filter bound to it: a batch is read whole only when
	// the probe finds a match in it, so a selective filter over a range
	// (time, id) does not read the other columns (vectors, blobs) of the
	// batches it rejects. (Taking only the matching rows of a batch with
	// scattered matches measured no faster than reading it whole.)
	probe      *projection
	probeBound *filter.Bound

	// index, when set, is the part of the filter scalar indices answer:
	// in the fragments they cover only its candidate rows are read (and
	// filtered), see indexPlan.
	index *indexPlan
}

// planScanFilter parses predicate and returns the projection to read for
// the output projection out, with the filter bound to it. The read
// projection holds the output's columns first, in order, then the
// top-level columns only the filter names; the virtual columns follow if
// either needs them.
func (d *Dataset) planScanFilter(predicate string, columns []string, out *projection, o ScanOptions) (*projection, *scanFilter, error) {
	expr, err := filter.Parse(predicate)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: scan: %w", err)
	}
	named, withRowID, withRowAddr := d.namedColumns(expr.Columns())
	readCols := columns
	switch {
	case columns != nil:
		readCols = append(slices.Clip(columns), named...)
	case slices.ContainsFunc(named, isLineageColumn):
		// Every column, and the lineage columns the filter names.
		for _, f := range d.manifest.Schema.Fields {
			readCols = append(readCols, f.Name)
		}
		readCols = append(readCols, named...)
	}
	read, err := d.project(readCols, out.withRowID || withRowID, out.withRowAddr || withRowAddr)
	if err != nil {
		return nil, nil, err
	}
	bound, err := expr.Bind(read.arrow)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: scan: %w", err)
	}
	sf := &scanFilter{
		bound:     bound,
		out:       out.arrow,
		toSkip:    uint64(o.Offset),
		remaining: uint64(o.Limit),
		limited:   o.Limit > 0,
	}
	if !o.NoScalarIndex {
		sf.index = d.planIndex(expr)
	}
	if probe, err := d.project(named, withRowID, withRowAddr); err == nil && probe.arrow.NumFields() < read.arrow.NumFields() {
		if pb, err := expr.Bind(probe.arrow); err == nil {
			sf.probe, sf.probeBound = probe, pb
		}
	}
	// The output's schema fields are the first ones read, in the same
	// order (Project keeps the order in which top-level fields are first
	// named); the virtual columns are found by name.
	nFields := len(out.schema.Fields)
	for i, f := range out.arrow.Fields() {
		idx := i
		if i >= nFields {
			idx = read.arrow.FieldIndices(f.Name)[0]
		}
		if rf := read.arrow.Field(idx); rf.Name != f.Name {
			return nil, nil, fmt.Errorf("dataset: scan: filtered read column %d is %q, want %q: %w", idx, rf.Name, f.Name, lancer.ErrCorrupt)
		}
		sf.outIdx = append(sf.outIdx, idx)
	}
	return read, sf, nil
}

// matches reports whether any row of physical rows [start, end) of the
// fragment (read through pr, the probe's reader, with read) passes the
// filter.
func (sf *scanFilter) matches(ctx context.Context, mem memory.Allocator, pr *fragmentReader, read rangeReader, start, end uint64) (bool, error) {
	runs, live := pr.liveRuns(start, end)
	if live == 0 {
		return false, nil
	}
	rec, err := pr.readLiveWith(ctx, mem, read, start, end, runs, live)
	if err != nil {
		return false, err
	}
	kept, err := sf.probeBound.Filter(ctx, mem, rec)
	rec.Release()
	if err != nil {
		return false, fmt.Errorf("dataset: scan: %w", err)
	}
	n := kept.NumRows()
	kept.Release()
	return n > 0, nil
}

// exhausted reports that Limit is reached.
func (sf *scanFilter) exhausted() bool { return sf.limited && sf.remaining == 0 }

// apply filters a batch read, takes the output columns, and applies
// Offset and Limit. It releases rec and returns nil when no row is left.
func (sf *scanFilter) apply(ctx context.Context, mem memory.Allocator, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	kept, err := sf.bound.Filter(ctx, mem, rec)
	rec.Release()
	if err != nil {
		return nil, fmt.Errorf("dataset: scan: %w", err)
	}
	defer kept.Release()
	n := uint64(kept.NumRows())
	lo := min(sf.toSkip, n)
	sf.toSkip -= lo
	hi := n
	if sf.limited {
		hi = min(n, lo+sf.remaining)
		sf.remaining -= hi - lo
	}
	if hi == lo {
		return nil, nil
	}
	cols := make([]arrow.Array, len(sf.outIdx))
	defer releaseArrays(cols)
	for i, idx := range sf.outIdx {
		c := kept.Column(idx)
		if lo != 0 || hi != n {
			c = array.NewSlice(c, int64(lo), int64(hi))
		} else {
			c.Retain()
		}
		if want := sf.out.Field(i).Type; !arrow.TypeEqual(c.DataType(), want) {
			pruned := pruneArray(c, want)
			c.Release()
			c = pruned
		}
		cols[i] = c
	}
	return array.NewRecordBatch(sf.out, cols, int64(hi-lo)), nil
}

// pruneArray returns a struct array cut down to the members of want (a
// struct type whose members, recursively, are a subset of a's): the filter
// may need members of a struct the output projects only in part.
func pruneArray(a arrow.Array, want arrow.DataType) arrow.Array {
	d := pruneData(a.Data(), want)
	defer d.Release()
	return array.MakeFromData(d)
}

func pruneData(d arrow.ArrayData, want arrow.DataType) arrow.ArrayData {
	st, ok := want.(*arrow.StructType)
	have, ok2 := d.DataType().(*arrow.StructType)
	if arrow.TypeEqual(d.DataType(), want) || !ok || !ok2 {
		d.Retain()
		return d
	}
	children := make([]arrow.ArrayData, st.NumFields())
	for i, f := range st.Fields() {
		j, _ := have.FieldIdx(f.Name)
		children[i] = pruneData(d.Children()[j], f.Type)
	}
	// Struct children are indexed with the parent's offset, so the raw
	// children go with the parent's validity buffer and offset.
	out := array.NewData(want, d.Len(), d.Buffers()[:1], children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	return out
}

// Count returns the number of live rows for which the SQL predicate is
// true (Lance's count_rows with a filter). An empty predicate counts every
// row from metadata alone, as CountRows; otherwise only the columns the
// predicate names are read. A malformed predicate fails as Scan's Filter
// does.
func (d *Dataset) Count(ctx context.Context, predicate string) (uint64, error) {
	if predicate == "" {
		return d.CountRows(ctx)
	}
	s, err := d.Scan(&ScanOptions{Columns: []string{}, Filter: predicate})
	if err != nil {
		return 0, err
	}
	var n uint64
	for rec, err := range s.Batches(ctx) {
		if err != nil {
			return 0, err
		}
		n += uint64(rec.NumRows())
	}
	return n, nil
}
