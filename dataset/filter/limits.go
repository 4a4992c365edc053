package filter

import (
	"math"
	"math/bits"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
)

// Bounds on the memory one evaluation may build. A filter is small (at
// most MaxLength bytes, nested at most maxDepth deep), but its functions
// multiply: three nested replace(s, 'r', '<10,000 r's>') in a 30 KB filter
// would build a terabyte. So every place that builds strings, binaries or
// lists (replace, ||, lower, upper, trim, substr, regexp_match, coalesce,
// casts, array_has's needles, list literals and struct values built per
// row, decoding a dictionary, spreading a constant over a batch's rows)
// checks the bytes it is about to make, before it
// makes them where their size can grow beyond its input's, and fails with
// an error wrapping lancer.ErrInvalidArgument that names the function and
// the limit.
//
// What one batch may hold is a peak, not a sum: the evaluation allocates
// through a counting allocator (budget.alloc), so the bytes of a child's
// result are credited back when the evaluator releases it, wherever that
// is (an OR of six lower(s) LIKE … terms holds one lower(s) at a time).
// Arrow's compute functions allocate through it too, since the context
// carries it. What is built on the Go heap instead (compiled per-row
// patterns) is counted as built and stays counted for the batch.
const (
	// MaxValueBytes bounds one value a function builds: a string, a
	// binary, or the items of one list. lower, upper, trim and substr,
	// whose results are about as long as their arguments, may build a
	// value as long as those arguments instead: only growth past them is
	// refused.
	MaxValueBytes = 16 << 20
	// MaxBatchBytes bounds the bytes that evaluating an expression on one
	// batch holds at once: everything it has allocated and not yet
	// released (values, offsets and bitmaps alike), plus what it is about
	// to build, plus what it built on the Go heap. The batch itself, which
	// the caller allocated, does not count, nor does spreading the final
	// constant of a value expression (see Bound.Eval).
	MaxBatchBytes = 256 << 20
	// MaxSpreadBytes bounds a value expression whose result is a
	// constant (SET note = '<text>', an added column's default) spread
	// over a batch's rows: not counted against MaxBatchBytes, since the
	// caller asked for those bytes and stores them anyway, but bounded all
	// the same, since a 1 MiB literal (the parser's MaxLength) over 8192
	// rows would be 8 GiB from one request. 1 GiB takes a 128 KiB constant
	// over 8192 rows.
	MaxSpreadBytes = 1 << 30
	// BatchCopies lets a batch holding more than MaxBatchBytes/BatchCopies
	// hold BatchCopies times its own size instead, so that lower(text) or
	// text || '.' works on a batch of large documents.
	BatchCopies = 4
)

// budget bounds what one evaluation holds (see the limits above).
type budget struct {
	limit int64
	// heap is the bytes built on the Go heap, outside alloc, counted as
	// built: compiled patterns.
	heap int64
	// alloc is the evaluation's allocator: what it holds live is what
	// the evaluation holds.
	alloc countingAllocator
}

// newBudget is the budget of evaluating an expression on rec, allocating
// from mem.
func newBudget(rec arrow.RecordBatch, mem memory.Allocator) *budget {
	limit := int64(MaxBatchBytes)
	var size int64
	for _, col := range rec.Columns() {
		size = satAdd(size, bufferBytes(col.Data()))
	}
	if size > limit/BatchCopies {
		limit = satMul(size, BatchCopies)
	}
	return &budget{limit: limit, alloc: countingAllocator{mem: mem}}
}

// countingAllocator passes allocations on to mem and counts the bytes
// allocated and not yet freed, as memory.CheckedAllocator does. Arrow
// compute may allocate from several goroutines, hence the atomic.
type countingAllocator struct {
	mem  memory.Allocator
	live atomic.Int64
}

func (a *countingAllocator) Allocate(size int) []byte {
	a.live.Add(int64(size))
	return a.mem.Allocate(size)
}

func (a *countingAllocator) Reallocate(size int, b []byte) []byte {
	a.live.Add(int64(size - len(b)))
	return a.mem.Reallocate(size, b)
}

func (a *countingAllocator) Free(b []byte) {
	a.live.Add(-int64(len(b)))
	a.mem.Free(b)
}

// bufferBytes is the size of the buffers an array's data holds, its
// children's and dictionary's included.
func bufferBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n = satAdd(n, int64(b.Len()))
		}
	}
	for _, c := range d.Children() {
		n = satAdd(n, bufferBytes(c))
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		n = satAdd(n, bufferBytes(dict))
	}
	return n
}

// value checks one value of n bytes that fn is about to build from
// mem, whose arguments are from bytes long (0 if its size is not bounded
// by them).
func (b *budget) value(s site, fn string, n, from int64) error {
	if err := checkValue(s, fn, n, from); err != nil {
		return err
	}
	return b.bytes(s, fn, n)
}

// checkValue refuses a value of n bytes past MaxValueBytes that grows
// past its arguments' from bytes.
func checkValue(s site, fn string, n, from int64) error {
	if n > max(MaxValueBytes, from) {
		return s.fail(nil, "%s would build a value of %d bytes, more than the %s a function may build (filter.MaxValueBytes)",
			fn, n, formatBytes(MaxValueBytes))
	}
	return nil
}

// bytes checks that fn may allocate n more bytes, of any number of
// values, from the evaluation's allocator: they are counted as live once
// allocated, and credited back when released. n 0 checks what Arrow built
// before its size could be known, already live.
func (b *budget) bytes(s site, fn string, n int64) error {
	if n > b.limit-b.alloc.live.Load()-b.heap {
		which := "filter.MaxBatchBytes"
		if b.limit != MaxBatchBytes {
			which = "filter.BatchCopies times the batch's size"
		}
		return s.fail(nil, "%s would take the values the expression builds for one batch past %s (%s)",
			fn, formatBytes(b.limit), which)
	}
	return nil
}

// heapBytes checks and counts n bytes fn is about to build on the Go heap,
// which stay counted for the rest of the evaluation.
func (b *budget) heapBytes(s site, fn string, n int64) error {
	if err := b.bytes(s, fn, n); err != nil {
		return err
	}
	b.heap += n
	return nil
}

// formatBytes writes a limit in MiB when it is a whole number of them.
func formatBytes(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// satMul is a×b for non-negative a and b, or MaxInt64 when that overflows:
// sizes computed before building are compared with a limit, never used to
// allocate, so saturating keeps them correct.
func satMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// satAdd is a+b for non-negative a and b, saturating like satMul.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// valueBytes is the bytes of values an array holds (see the limits above):
// the bytes of its strings and binaries, of its lists' items, of its
// structs' fields. A dictionary counts its values as decoded.
func valueBytes(arr arrow.Array) int64 {
	switch a := arr.(type) {
	case array.BinaryLike:
		if a.Len() == 0 {
			return 0
		}
		return int64(a.ValueOffset64(a.Len()-1)+int64(a.ValueLen(a.Len()-1))) - a.ValueOffset64(0)
	case *array.FixedSizeBinary:
		return int64(a.Len()) * int64(a.DataType().(*arrow.FixedSizeBinaryType).ByteWidth)
	case array.ListLike:
		if a.Len() == 0 {
			return 0
		}
		first, _ := a.ValueOffsets(0)
		_, last := a.ValueOffsets(a.Len() - 1)
		items := array.NewSlice(a.ListValues(), first, last)
		defer items.Release()
		return itemBytes(items)
	case *array.Struct:
		var n int64
		for i := 0; i < a.NumField(); i++ {
			n = satAdd(n, valueBytes(a.Field(i)))
		}
		return n
	case *array.Dictionary:
		// Each entry's size once, then one per row that refers to it.
		dict := a.Dictionary()
		sizes := make([]int64, dict.Len())
		for j := range sizes {
			entry := array.NewSlice(dict, int64(j), int64(j)+1)
			sizes[j] = itemBytes(entry)
			entry.Release()
		}
		var n int64
		for i := 0; i < a.Len(); i++ {
			if a.IsValid(i) {
				n = satAdd(n, sizes[a.GetValueIndex(i)])
			}
		}
		return n
	}
	return 0
}

// itemBytes is the bytes of a list's items: their values, or their width
// when they are fixed-width.
func itemBytes(items arrow.Array) int64 {
	if fw, ok := items.DataType().(arrow.FixedWidthDataType); ok {
		return satMul(int64(items.Len()), int64(max(fw.BitWidth()/8, 1)))
	}
	return valueBytes(items)
}

// datumBytes is valueBytes of an array datum, scalarBytes of a scalar.
func datumBytes(d compute.Datum) int64 {
	switch d := d.(type) {
	case *compute.ArrayDatum:
		arr := d.MakeArray()
		defer arr.Release()
		return valueBytes(arr)
	case *compute.ScalarDatum:
		return scalarBytes(d.Value)
	}
	return 0
}

// scalarBytes is the bytes of values a scalar holds, as valueBytes counts
// them.
func scalarBytes(s scalar.Scalar) int64 {
	if !s.IsValid() {
		return 0
	}
	switch s := s.(type) {
	case scalar.BinaryScalar:
		return int64(len(s.Data()))
	case scalar.ListScalar:
		return itemBytes(s.GetList())
	case *scalar.Struct:
		var n int64
		for _, f := range s.Value {
			n = satAdd(n, scalarBytes(f))
		}
		return n
	}
	return 0
}
