package importer

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/arrowutil"
)

func openParquet(ctx context.Context, src Source, o Options) (array.RecordReader, error) {
	pf, err := file.NewParquetReader(src, file.WithReadProps(nil))
	if err != nil {
		return nil, fmt.Errorf("importer: %s is not a Parquet file: %v: %w", o.Name, err, lancer.ErrInvalidArgument)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(o.BatchSize)}, o.Allocator)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("importer: %s: %v: %w", o.Name, err, lancer.ErrInvalidArgument)
	}
	if pf.NumRows() == 0 {
		schema, err := fr.Schema()
		if err != nil {
			pf.Close()
			return nil, fmt.Errorf("importer: %s: %v: %w", o.Name, err, lancer.ErrInvalidArgument)
		}
		return conform(ctx, emptyReader(schema), pf.Close, o)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("importer: %s: %v: %w", o.Name, err, lancer.ErrInvalidArgument)
	}
	return conform(ctx, rr, pf.Close, o)
}

func emptyReader(schema *arrow.Schema) array.RecordReader {
	rr, _ := array.NewRecordReader(schema, nil)
	return rr
}

// arrowFileMagic starts (and ends) an Arrow IPC file; a stream has none.
const arrowFileMagic = "ARROW1"

func openArrow(ctx context.Context, src Source, o Options) (array.RecordReader, error) {
	var magic [len(arrowFileMagic)]byte
	n, _ := src.ReadAt(magic[:], 0)
	if string(magic[:n]) == arrowFileMagic {
		fr, err := ipc.NewFileReader(src, ipc.WithAllocator(o.Allocator))
		if err != nil {
			return nil, fmt.Errorf("importer: %s is not a readable Arrow IPC file: %v: %w", o.Name, err, lancer.ErrInvalidArgument)
		}
		r := &ipcFileReader{f: fr}
		r.refs.Add(1)
		return conform(ctx, r, fr.Close, o)
	}
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("importer: rewind %s: %w", o.Name, err)
	}
	sr, err := ipc.NewReader(src, ipc.WithAllocator(o.Allocator))
	if err != nil {
		return nil, fmt.Errorf("importer: %s is not an Arrow IPC file or stream: %v: %w", o.Name, err, lancer.ErrInvalidArgument)
	}
	return conform(ctx, sr, nil, o)
}

// ipcFileReader reads the batches of an Arrow IPC file in order.
type ipcFileReader struct {
	f    *ipc.FileReader
	i    int
	rec  arrow.RecordBatch
	err  error
	refs atomic.Int64
}

func (r *ipcFileReader) Schema() *arrow.Schema { return r.f.Schema() }

func (r *ipcFileReader) Next() bool {
	if r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
	if r.err != nil || r.i >= r.f.NumRecords() {
		return false
	}
	r.rec, r.err = r.f.RecordBatchAt(r.i)
	r.i++
	return r.err == nil
}

func (r *ipcFileReader) RecordBatch() arrow.RecordBatch { return r.rec }

// Record is RecordBatch, for array.RecordReader.
//
// Deprecated: use RecordBatch.
func (r *ipcFileReader) Record() arrow.RecordBatch { return r.rec }
func (r *ipcFileReader) Err() error                { return r.err }
func (r *ipcFileReader) Retain()                   { r.refs.Add(1) }
func (r *ipcFileReader) Release() {
	if r.refs.Add(-1) == 0 && r.rec != nil {
		r.rec.Release()
		r.rec = nil
	}
}

// conform passes the batches of a columnar file on, cast to
// Options.Schema's types where they differ, and names the file in errors.
// It takes over in's reference; close, if not nil, is called on the
// returned reader's final Release. ctx, which the casts need and
// array.RecordReader's Next does not take, lives in the batches' closure.
func conform(ctx context.Context, in array.RecordReader, close func() error, o Options) (array.RecordReader, error) {
	cleanup := func() {
		in.Release()
		if close != nil {
			_ = close()
		}
	}
	schema := withoutFieldIDs(in.Schema())
	cast := make([]bool, schema.NumFields()) // cast[i]: column i needs a cast to schema's type
	if o.Schema != nil {
		index := fieldIndex(o.Schema)
		fields := schema.Fields()
		for i, f := range fields {
			j, ok := index[f.Name]
			if !ok {
				cleanup()
				return nil, fmt.Errorf("importer: %s, column %q: no such column in the schema: %w", o.Name, f.Name, lancer.ErrInvalidArgument)
			}
			want := o.Schema.Field(j)
			if !arrow.TypeEqual(f.Type, want.Type) {
				if !compute.CanCast(f.Type, want.Type) {
					cleanup()
					return nil, fmt.Errorf("importer: %s, column %q: cannot convert %s to the schema's %s: %w",
						o.Name, f.Name, f.Type, want.Type, lancer.ErrInvalidArgument)
				}
				cast[i] = true
			}
			fields[i] = want
		}
		md := schema.Metadata()
		schema = arrow.NewSchema(fields, &md)
	}
	ctx = compute.WithAllocator(ctx, o.Allocator)
	batches := func(yield func(arrow.RecordBatch, error) bool) {
		for in.Next() {
			rec, err := conformBatch(ctx, in.RecordBatch(), schema, cast, o.Name)
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(rec, nil) {
				return
			}
		}
		if err := in.Err(); err != nil && err != io.EOF {
			yield(nil, fmt.Errorf("importer: read %s: %v: %w", o.Name, err, lancer.ErrInvalidArgument))
		}
	}
	return arrowutil.ReaderFromIter(schema, batches, &arrowutil.ReaderOptions{Cleanup: cleanup}), nil
}

// conformBatch returns in with the columns cast[i] marks cast to schema's
// types; the result is the caller's to release.
func conformBatch(ctx context.Context, in arrow.RecordBatch, schema *arrow.Schema, cast []bool, name string) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, in.NumCols())
	for i, col := range in.Columns() {
		if !cast[i] {
			col.Retain()
			cols[i] = col
			continue
		}
		f := schema.Field(i)
		out, err := compute.CastArray(ctx, col, compute.SafeCastOptions(f.Type))
		if err != nil {
			for _, a := range cols[:i] {
				a.Release()
			}
			return nil, fmt.Errorf("importer: %s, column %q: cannot convert %s to %s: %v: %w",
				name, f.Name, col.DataType(), f.Type, err, lancer.ErrInvalidArgument)
		}
		cols[i] = out
	}
	rec := array.NewRecordBatch(schema, cols, in.NumRows())
	for _, a := range cols {
		a.Release()
	}
	return rec, nil
}

// parquetFieldID is the field metadata key pqarrow labels every field with
// (-1 when the Parquet file has no field ids).
const parquetFieldID = "PARQUET:field_id"

// withoutFieldIDs drops the Parquet field ids from the schema's fields, at
// every depth: they mean nothing to a Lance dataset, and a dataset would
// keep them as field metadata.
func withoutFieldIDs(s *arrow.Schema) *arrow.Schema {
	fields := s.Fields()
	for i, f := range fields {
		fields[i] = withoutFieldID(f)
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}

func withoutFieldID(f arrow.Field) arrow.Field {
	if i := f.Metadata.FindKey(parquetFieldID); i >= 0 {
		keys, vals := slices.Delete(slices.Clone(f.Metadata.Keys()), i, i+1), slices.Delete(slices.Clone(f.Metadata.Values()), i, i+1)
		f.Metadata = arrow.NewMetadata(keys, vals)
	}
	switch dt := f.Type.(type) {
	case *arrow.StructType:
		fields := dt.Fields()
		for i := range fields {
			fields[i] = withoutFieldID(fields[i])
		}
		f.Type = arrow.StructOf(fields...)
	case *arrow.MapType:
		m := arrow.MapOfFields(withoutFieldID(dt.KeyField()), withoutFieldID(dt.ItemField()))
		m.KeysSorted = dt.KeysSorted
		f.Type = m
	case *arrow.ListType:
		f.Type = arrow.ListOfField(withoutFieldID(dt.ElemField()))
	case *arrow.LargeListType:
		f.Type = arrow.LargeListOfField(withoutFieldID(dt.ElemField()))
	case *arrow.FixedSizeListType:
		f.Type = arrow.FixedSizeListOfField(dt.Len(), withoutFieldID(dt.ElemField()))
	}
	return f
}
