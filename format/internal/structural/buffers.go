package structural

import (
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
)

// bitmapBuilder builds an Arrow validity bitmap from the allocator. It
// stays unmaterialized while every slot is valid, so all-valid layers cost
// a counter. Slot i lands at bit shift+i, which lets a bitmap line up with
// a values array that starts at an offset into its buffers.
type bitmapBuilder struct {
	mem   memory.Allocator
	Buf   *memory.Buffer // nil while all slots are valid
	Bits  []byte         // buf's full capacity; bytes past zeroed are garbage
	Shift int
	n     int // slots appended
	nulls int
}

// Reset prepares an empty builder whose slot 0 is bit shift.
func (b *bitmapBuilder) Reset(mem memory.Allocator, shift int) {
	b.release()
	*b = bitmapBuilder{mem: mem, Shift: shift}
}

func (b *bitmapBuilder) len() int { return b.n }

// materialize allocates the bitmap, with every slot so far valid, and room
// for extra more slots.
func (b *bitmapBuilder) materialize(extra int) {
	b.Buf = memory.NewResizableBuffer(b.mem)
	b.Bits = nil
	b.grow(extra)
	bitutil.SetBitsTo(b.Bits, int64(b.Shift), int64(b.n), true)
}

// grow makes room for extra more slots; new bytes are zero.
func (b *bitmapBuilder) grow(extra int) {
	need := int(bitutil.BytesForBits(int64(b.Shift + b.n + extra)))
	if need <= len(b.Bits) {
		return
	}
	old := len(b.Bits)
	b.Buf.Reserve(max(need, 2*old))
	b.Bits = b.Buf.Buf()
	clear(b.Bits[old:])
}

// append adds one slot.
func (b *bitmapBuilder) append(valid bool) {
	if b.Buf == nil {
		if valid {
			b.n++
			return
		}
		b.materialize(64)
	} else if (b.Shift+b.n)>>3 >= len(b.Bits) {
		b.grow(64)
	}
	if valid {
		i := b.Shift + b.n
		b.Bits[i>>3] |= 1 << (i & 7)
	} else {
		b.nulls++
	}
	b.n++
}

// appendValid adds n valid slots.
func (b *bitmapBuilder) appendValid(n int) {
	if b.Buf != nil {
		b.grow(n)
		bitutil.SetBitsTo(b.Bits, int64(b.Shift+b.n), int64(n), true)
	}
	b.n += n
}

// appendDefs adds a slot for every def level <= limit, valid when it is
// <= base.
func (b *bitmapBuilder) appendDefs(def []uint16, base, limit uint16) {
	i := 0
	if b.Buf == nil {
		// Valid slots need no bitmap until the first null.
		for ; i < len(def); i++ {
			d := def[i]
			if d > limit {
				continue
			}
			if d > base {
				break
			}
			b.n++
		}
		if i == len(def) {
			return
		}
		b.materialize(len(def) - i)
	} else {
		b.grow(len(def))
	}
	bits, pos, nulls := b.Bits, b.Shift+b.n, 0
	for _, d := range def[i:] {
		if d > limit {
			continue
		}
		if d <= base {
			bits[pos>>3] |= 1 << (pos & 7)
		} else {
			nulls++
		}
		pos++
	}
	b.nulls += nulls
	b.n = pos - b.Shift
}

// finish hands over the bitmap (nil when every slot is valid) and its null
// count, and resets the builder.
func (b *bitmapBuilder) finish() (*memory.Buffer, int) {
	buf, nulls := b.Buf, b.nulls
	if buf != nil {
		buf.ResizeNoShrink(int(bitutil.BytesForBits(int64(b.Shift + b.n))))
	}
	*b = bitmapBuilder{mem: b.mem, Shift: b.Shift}
	return buf, nulls
}

func (b *bitmapBuilder) release() {
	if b.Buf != nil {
		b.Buf.Release()
	}
	*b = bitmapBuilder{mem: b.mem, Shift: b.Shift}
}

// offsetBuilder builds Arrow list offsets, int32 or (wide) int64, from the
// allocator.
type offsetBuilder struct {
	mem      memory.Allocator
	Wide     bool
	buf      *memory.Buffer
	Narrow   []int32 // views of buf's capacity
	WideVals []int64
	N        int
	overflow bool // an offset did not fit int32
}

func (o *offsetBuilder) Reset(mem memory.Allocator, wide bool) {
	o.release()
	*o = offsetBuilder{mem: mem, Wide: wide}
}

// reserve makes room for n more offsets.
func (o *offsetBuilder) reserve(n int) {
	if c := len(o.Narrow) + len(o.WideVals); o.N+n > c {
		o.grow(max(o.N+n, 2*c, 64))
	}
}

func (o *offsetBuilder) append(v int64) {
	o.reserve(1)
	if o.Wide {
		o.WideVals[o.N] = v
	} else {
		if v > math.MaxInt32 {
			o.overflow = true
		}
		o.Narrow[o.N] = int32(v)
	}
	o.N++
}

func (o *offsetBuilder) grow(capacity int) {
	if o.buf == nil {
		o.buf = memory.NewResizableBuffer(o.mem)
	}
	width := 4
	if o.Wide {
		width = 8
	}
	o.buf.Reserve(capacity * width)
	if o.Wide {
		o.WideVals = arrow.Int64Traits.CastFromBytes(o.buf.Buf())
	} else {
		o.Narrow = arrow.Int32Traits.CastFromBytes(o.buf.Buf())
	}
}

// finish appends the final offset end and hands over the buffer (n+1
// offsets for n lists), resetting the builder.
func (o *offsetBuilder) finish(end int64) (*memory.Buffer, error) {
	o.append(end)
	if o.overflow {
		o.release()
		return nil, fmt.Errorf("a list batch of %d items needs 64-bit offsets, its type has 32: %w", end, lancer.ErrUnsupported)
	}
	width := 4
	if o.Wide {
		width = 8
	}
	buf := o.buf
	buf.ResizeNoShrink(o.N * width)
	*o = offsetBuilder{mem: o.mem, Wide: o.Wide}
	return buf, nil
}

func (o *offsetBuilder) release() {
	if o.buf != nil {
		o.buf.Release()
	}
	*o = offsetBuilder{mem: o.mem, Wide: o.Wide}
}

// withValidity returns arr with its top-level validity replaced by validity
// (nil: all valid; bit arr.Data().Offset()+i is slot i) holding nulls nulls.
// It takes over the caller's reference to validity and to arr.
func withValidity(arr arrow.Array, validity *memory.Buffer, nulls int) arrow.Array {
	data := arr.Data()
	if arr.DataType().ID() == arrow.NULL {
		if validity != nil {
			validity.Release()
		}
		return arr
	}
	if validity == nil && data.NullN() == 0 {
		return arr
	}
	if validity != nil && nulls == 0 {
		validity.Release()
		validity = nil
		if data.NullN() == 0 {
			return arr
		}
	}
	bufs := make([]*memory.Buffer, len(data.Buffers()))
	copy(bufs, data.Buffers())
	bufs[0] = validity
	var nd *array.Data
	if data.DataType().ID() == arrow.DICTIONARY {
		nd = array.NewDataWithDictionary(data.DataType(), data.Len(), bufs, nulls, data.Offset(), data.Dictionary().(*array.Data))
	} else {
		nd = array.NewData(data.DataType(), data.Len(), bufs, data.Children(), nulls, data.Offset())
	}
	if validity != nil {
		validity.Release() // nd holds its own reference
	}
	out := array.MakeFromData(nd)
	nd.Release()
	arr.Release()
	return out
}
