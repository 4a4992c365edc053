package filter_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/dataset/filter"
)

// Parse a filter once, bind it to a schema, and keep the rows of a batch
// where it is TRUE.
func Example() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "cat", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[
		{"id": 1, "price": 12.5, "cat": "a"},
		{"id": 2, "price": 8, "cat": "b"},
		{"id": 3, "price": null, "cat": "a"},
		{"id": 4, "price": 30, "cat": "c"},
		{"id": 5, "price": 11, "cat": "b"}
	]`))
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Release()

	e, err := filter.Parse("price > 10 and cat in ('a','b')")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(e)
	fmt.Println(e.Columns())

	b, err := e.Bind(schema)
	if err != nil {
		log.Fatal(err)
	}
	kept, err := b.Filter(context.Background(), memory.DefaultAllocator, rec)
	if err != nil {
		log.Fatal(err)
	}
	defer kept.Release()
	fmt.Println(kept.Column(0))
	// Output:
	// price > 10 AND cat IN ('a', 'b')
	// [cat price]
	// [1 5]
}

// Errors point at the column of the filter they are about.
func ExampleParse_error() {
	_, err := filter.Parse("price >> 3")
	fmt.Println(err)
	// Output:
	// filter: "price >> 3": unexpected '>' at column 8: lancer: invalid argument
}

// A scalar expression, such as the value of an update's SET, evaluates to
// an array of its type; SQL's NULL propagates.
func ExampleParseExpr() {
	schema := arrow.NewSchema([]arrow.Field{{Name: "price", Type: arrow.PrimitiveTypes.Int32, Nullable: true}}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, schema, strings.NewReader(`[{"price": 10}, {"price": null}, {"price": 7}]`))
	if err != nil {
		log.Fatal(err)
	}
	defer rec.Release()
	e, err := filter.ParseExpr("price * 2 + 1")
	if err != nil {
		log.Fatal(err)
	}
	b, err := e.Bind(schema)
	if err != nil {
		log.Fatal(err)
	}
	out, err := b.Eval(context.Background(), nil, rec)
	if err != nil {
		log.Fatal(err)
	}
	defer out.Release()
	fmt.Println(b.Type(), out)
	// Output:
	// int64 [21 (null) 15]
}

// Bind names the column it cannot find and suggests close ones.
func ExampleExpr_Bind() {
	schema := arrow.NewSchema([]arrow.Field{{Name: "price", Type: arrow.PrimitiveTypes.Float64}}, nil)
	e, err := filter.Parse("pricee > 3")
	if err != nil {
		log.Fatal(err)
	}
	_, err = e.Bind(schema)
	fmt.Println(err)
	// Output:
	// filter: "pricee > 3": no column pricee (did you mean price?) at column 1: lancer: not found
}
