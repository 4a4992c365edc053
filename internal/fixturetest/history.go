package fixturetest

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// HistoryFields is the schema of the history fixtures, which the write
// tests and the interop tests reuse for the datasets they make: every kind
// of column an operation must carry over (integers, nullable strings,
// floats, fixed-size vectors, booleans, lists with empty and null ones).
var HistoryFields = []arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64},
	{Name: "label", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "value", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "vec", Type: arrow.FixedSizeListOf(4, arrow.PrimitiveTypes.Float32), Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
}

// HistoryValue is the value of column name (one of HistoryFields) in the
// row with key id, as the history fixtures have it: int64, string,
// float64, []float32, bool or []string, nil for null. The values encode as
// JSON the way the interop scripts take them.
func HistoryValue(name string, id int64) any {
	switch name {
	case "id":
		return id
	case "label":
		if id%7 == 3 {
			return nil
		}
		return fmt.Sprintf("row-%d", id)
	case "value":
		if id%11 == 5 {
			return nil
		}
		return float64(id) * 1.5
	case "vec":
		if id%13 == 4 {
			return nil
		}
		return []float32{float32(id), float32(id) + 0.5, -float32(id), 1}
	case "flag":
		if id%3 == 0 {
			return nil
		}
		return id%2 == 0
	case "tags":
		if id%4 == 0 {
			return []string{}
		}
		if id%9 == 1 {
			return nil
		}
		return []string{fmt.Sprintf("g%d", id%3), fmt.Sprintf("h%d", id%5)}
	}
	panic("fixturetest: no history column " + name)
}

// HistoryRow is the history row of key id, by column name.
func HistoryRow(id int64) map[string]any {
	r := map[string]any{}
	for _, f := range HistoryFields {
		r[f.Name] = HistoryValue(f.Name, id)
	}
	return r
}

// BuildRows builds a batch of the given fields from rows (by column name;
// nil or absent = null) holding the Go types HistoryValue returns. The
// caller releases the batch.
func BuildRows(t testing.TB, mem memory.Allocator, fields []arrow.Field, rows []map[string]any) arrow.RecordBatch {
	t.Helper()
	cols := make([]arrow.Array, len(fields))
	for i, f := range fields {
		b := array.NewBuilder(mem, f.Type)
		for _, r := range rows {
			v := r[f.Name]
			if v == nil {
				b.AppendNull()
				continue
			}
			switch bb := b.(type) {
			case *array.Int64Builder:
				bb.Append(v.(int64))
			case *array.StringBuilder:
				bb.Append(v.(string))
			case *array.Float64Builder:
				bb.Append(v.(float64))
			case *array.BooleanBuilder:
				bb.Append(v.(bool))
			case *array.FixedSizeListBuilder:
				bb.Append(true)
				bb.ValueBuilder().(*array.Float32Builder).AppendValues(v.([]float32), nil)
			case *array.ListBuilder:
				bb.Append(true)
				bb.ValueBuilder().(*array.StringBuilder).AppendValues(v.([]string), nil)
			default:
				b.Release()
				for _, c := range cols[:i] {
					c.Release()
				}
				t.Fatalf("fixturetest.BuildRows: column %q of type %s", f.Name, f.Type)
			}
		}
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, int64(len(rows)))
	for _, c := range cols {
		c.Release()
	}
	return rec
}
