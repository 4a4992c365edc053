package bench

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestSameValues: what lies under a null struct does not count; a value a
// reader sees does.
func TestSameValues(t *testing.T) {
	typ := arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int32, Nullable: true})
	build := func(hidden int32, visible int32) arrow.Array {
		b := array.NewStructBuilder(memory.DefaultAllocator, typ)
		defer b.Release()
		x := b.FieldBuilder(0).(*array.Int32Builder)
		b.Append(true)
		x.Append(visible)
		b.AppendNull()
		x.Append(hidden) // under a null struct: invisible
		return b.NewArray()
	}
	a, b, c := build(1, 7), build(2, 7), build(1, 8)
	defer a.Release()
	defer b.Release()
	defer c.Release()
	if err := sameValues(a, b); err != nil {
		t.Errorf("values under a null struct counted: %v", err)
	}
	if err := sameValues(a, c); err == nil || !strings.Contains(err.Error(), "row 0") {
		t.Errorf("a visible difference in row 0: got %v", err)
	}
}
