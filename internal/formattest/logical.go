package formattest

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/schema"
)

// LogicalRecord turns rec, every row of a file of schema sch as a reader
// returns them, into the rows as the writer takes them: legacy blob columns
// (top-level) become the bytes their descriptors point at. at and read are
// format.BlobDescriptorAt and the file's Reader.ReadBlob (passed in, since
// format's own tests cannot import a package that imports format); other
// columns are kept as they are. rec stays the caller's.
func LogicalRecord[D any](t testing.TB, rec arrow.RecordBatch, sch *schema.Schema, mem memory.Allocator,
	at func(arrow.Array, int) (D, bool, error), read func(context.Context, D) ([]byte, error)) arrow.RecordBatch {
	t.Helper()
	cols := make([]arrow.Array, len(sch.Fields))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, f := range sch.Fields {
		if f.Blob != schema.BlobLegacy {
			cols[i] = rec.Column(i)
			cols[i].Retain()
			continue
		}
		b := array.NewBinaryBuilder(mem, f.Type.(arrow.BinaryDataType))
		desc := rec.Column(i)
		for row := range desc.Len() {
			d, ok, err := at(desc, row)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				b.AppendNull()
				continue
			}
			v, err := read(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			b.Append(v)
		}
		cols[i] = b.NewArray()
		b.Release()
	}
	return array.NewRecordBatch(sch.LogicalArrow(), cols, rec.NumRows())
}
