package filter_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/dataset/filter"
)

// benchBatch is 65,536 rows of an int64, a float64, a string and a list
// column, one value in ten null.
func benchBatch(b *testing.B) arrow.RecordBatch {
	mem := memory.DefaultAllocator
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "cat", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(mem, schema)
	defer bld.Release()
	const n = 1 << 16
	for i := 0; i < n; i++ {
		if i%10 == 9 {
			for c := range bld.Fields() {
				bld.Field(c).AppendNull()
			}
			continue
		}
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.Float64Builder).Append(float64(i%1000) / 1000)
		bld.Field(2).(*array.StringBuilder).Append(fmt.Sprintf("%c-item-%d", 'a'+i%26, i))
		tags := bld.Field(3).(*array.ListBuilder)
		tags.Append(true)
		for k := 0; k < i%5; k++ {
			tags.ValueBuilder().(*array.Int32Builder).Append(int32(i%7 + k))
		}
	}
	return bld.NewRecordBatch()
}

// BenchmarkEval measures predicates alone, BenchmarkFilter adds taking the
// kept rows of every column (Arrow's take, most of the cost for lists and
// strings).
func BenchmarkEval(b *testing.B) { benchmarkPredicates(b, false) }

func BenchmarkFilter(b *testing.B) { benchmarkPredicates(b, true) }

func benchmarkPredicates(b *testing.B, filterRows bool) {
	rec := benchBatch(b)
	defer rec.Release()
	for _, sql := range []string{
		"id > 1000",
		"price BETWEEN 0.1 AND 0.5",
		"cat LIKE 'a%'",
		"cat LIKE '%item-1%2'",
		"id % 7 = 3 AND (price < 0.25 OR cat IN ('b-item-1', 'c-item-2', 'd-item-3'))",
		"array_has(tags, 3)",
		"lower(cat) = 'q-item-16'",
	} {
		e, err := filter.Parse(sql)
		if err != nil {
			b.Fatal(err)
		}
		bound, err := e.Bind(rec.Schema())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(sql, func(b *testing.B) {
			b.SetBytes(rec.NumRows())
			for b.Loop() {
				if filterRows {
					out, err := bound.Filter(context.Background(), memory.DefaultAllocator, rec)
					if err != nil {
						b.Fatal(err)
					}
					out.Release()
					continue
				}
				out, err := bound.Eval(context.Background(), memory.DefaultAllocator, rec)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
		})
	}
}

// BenchmarkInList is the IN list: 10,000 ids looked for in 200,000
// rows, once as integers and once as strings.
func BenchmarkInList(b *testing.B) {
	const rows, ids = 200_000, 10_000
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "key", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer bld.Release()
	for i := range rows {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("k%d", i))
	}
	rec := bld.NewRecordBatch()
	defer rec.Release()
	for _, col := range []string{"id", "key"} {
		var sql strings.Builder
		sql.WriteString(col + " IN (")
		for k := range ids {
			if k > 0 {
				sql.WriteString(", ")
			}
			if col == "id" {
				fmt.Fprintf(&sql, "%d", k*(rows/ids))
			} else {
				fmt.Fprintf(&sql, "'k%d'", k*(rows/ids))
			}
		}
		sql.WriteString(")")
		e, err := filter.Parse(sql.String())
		if err != nil {
			b.Fatal(err)
		}
		bound, err := e.Bind(rec.Schema())
		if err != nil {
			b.Fatal(err)
		}
		b.Run(col, func(b *testing.B) {
			for b.Loop() {
				out, err := bound.Eval(context.Background(), memory.DefaultAllocator, rec)
				if err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
		})
	}
}
