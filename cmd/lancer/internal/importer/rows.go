package importer

import (
	"io"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// rowReader turns a source of rows (JSON lines, CSV) into record batches.
type rowReader struct {
	schema *arrow.Schema
	rb     *array.RecordBuilder
	batch  int
	// row appends the next row to rb; io.EOF after the last.
	row  func(rb *array.RecordBuilder) error
	rec  arrow.RecordBatch
	err  error
	done bool
	refs atomic.Int64
}

var _ array.RecordReader = (*rowReader)(nil)

func newRowReader(o Options, schema *arrow.Schema, row func(rb *array.RecordBuilder) error) *rowReader {
	r := &rowReader{schema: schema, rb: array.NewRecordBuilder(o.Allocator, schema), batch: o.BatchSize, row: row}
	r.refs.Add(1)
	return r
}

func (r *rowReader) Schema() *arrow.Schema { return r.schema }

func (r *rowReader) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.done {
		return false
	}
	n := 0
	for n < r.batch {
		if err := r.row(r.rb); err != nil {
			r.done = true
			if err != io.EOF {
				r.err = err
				return false
			}
			break
		}
		n++
	}
	if n == 0 {
		return false
	}
	r.rec = r.rb.NewRecordBatch()
	return true
}

func (r *rowReader) RecordBatch() arrow.RecordBatch { return r.rec }

// Record is RecordBatch, for array.RecordReader.
//
// Deprecated: use RecordBatch.
func (r *rowReader) Record() arrow.RecordBatch { return r.rec }

func (r *rowReader) Err() error { return r.err }

func (r *rowReader) Retain() { r.refs.Add(1) }

func (r *rowReader) Release() {
	if r.refs.Add(-1) != 0 {
		return
	}
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	r.rb.Release()
}
