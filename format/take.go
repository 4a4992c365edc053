package format

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// takeRows returns the rows of src in the order of rows, where index maps a
// row number to its position in src. When rows is already src's order, src
// itself is returned (retained).
func takeRows(mem memory.Allocator, src arrow.Array, rows []uint64, index map[uint64]int) (arrow.Array, error) {
	identity := len(rows) == src.Len()
	for i, row := range rows {
		if !identity {
			break
		}
		identity = index[row] == i
	}
	if identity {
		src.Retain()
		return src, nil
	}
	b := array.NewInt64Builder(mem)
	defer b.Release()
	b.Reserve(len(rows))
	for _, row := range rows {
		b.UnsafeAppend(int64(index[row]))
	}
	idx := b.NewArray()
	defer idx.Release()
	ctx := compute.WithAllocator(context.Background(), mem)
	return compute.TakeArray(ctx, src, idx)
}
