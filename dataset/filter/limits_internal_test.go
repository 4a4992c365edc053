package filter

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestBudgetScalesWithBatch: a batch of large values may build
// BatchCopies times its size, so that lower(text) works on documents; a
// small one MaxBatchBytes.
func TestBudgetScalesWithBatch(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "text", Type: arrow.BinaryTypes.String}}, nil)
	for _, tc := range []struct {
		value     int // bytes of the batch's one value
		wantLimit func(size int64) int64
	}{
		{1 << 10, func(int64) int64 { return MaxBatchBytes }},
		{70 << 20, func(size int64) int64 { return BatchCopies * size }},
	} {
		bld := array.NewStringBuilder(memory.DefaultAllocator)
		bld.Append(strings.Repeat("x", tc.value))
		arr := bld.NewArray()
		bld.Release()
		rec := array.NewRecordBatch(schema, []arrow.Array{arr}, 1)
		arr.Release()
		size := bufferBytes(rec.Column(0).Data())
		if size < int64(tc.value) {
			t.Errorf("bufferBytes %d for a value of %d bytes", size, tc.value)
		}
		if got, want := newBudget(rec, memory.DefaultAllocator).limit, tc.wantLimit(size); got != want {
			t.Errorf("value of %d bytes: limit %d, want %d", tc.value, got, want)
		}
		rec.Release()
	}
}

// TestSaturating: sizes computed before building saturate rather than
// wrap, so a huge product still compares as huge.
func TestSaturating(t *testing.T) {
	const max = int64(^uint64(0) >> 1)
	for _, tc := range []struct{ a, b, mul, add int64 }{
		{3, 4, 12, 7},
		{1 << 40, 1 << 30, max, 1<<40 + 1<<30},
		{max, 2, max, max},
		{max - 1, 1, max - 1, max},
	} {
		if got := satMul(tc.a, tc.b); got != tc.mul {
			t.Errorf("satMul(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.mul)
		}
		if got := satAdd(tc.a, tc.b); got != tc.add {
			t.Errorf("satAdd(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.add)
		}
	}
}
