package ftsindex

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// decodePositions reads token t's positions from the shared stream (I9):
// per 128-document block, at the block's byte offset, the block's
// documents' positions as per-document deltas (the first absolute), in
// BitPacker4x groups of 128 values and a varint tail.
func (ix *Index) decodePositions(streamArr, offArr arrow.Array, t uint32, p *partition, pl *posting) error {
	sa, ok1 := streamArr.(*array.LargeBinary)
	oa, ok2 := offArr.(*array.List)
	if !ok1 || !ok2 || sa.IsNull(0) || oa.IsNull(0) {
		return ix.corrupt(p.invName, "position columns are %v, %v", streamArr.DataType(), offArr.DataType())
	}
	offs, ok := oa.ListValues().(*array.Uint32)
	if !ok {
		return ix.corrupt(p.invName, "%s holds %v", colPosBlockOffset, oa.ListValues().DataType())
	}
	s, e := oa.ValueOffsets(0)
	stream := sa.Value(0)
	nblocks := (len(pl.docs) + blockSize - 1) / blockSize
	if int(e-s) != nblocks {
		return ix.corrupt(p.invName, "token %d: %d position blocks for %d posting blocks", t, e-s, nblocks)
	}
	pl.pos = make([][]uint32, len(pl.docs))
	for blk := range nblocks {
		off := int(offs.Value(int(s) + blk))
		if off > len(stream) {
			return ix.corrupt(p.invName, "token %d: position block %d at %d of %d bytes", t, blk, off, len(stream))
		}
		lo, hi := blk*blockSize, min(len(pl.docs), (blk+1)*blockSize)
		total := 0
		for i := lo; i < hi; i++ {
			total += int(pl.freqs[i])
		}
		vals, err := decodeStream(stream[off:], total)
		if err != nil {
			return ix.corrupt(p.invName, "token %d: position block %d: %v", t, blk, err)
		}
		k := 0
		for i := lo; i < hi; i++ {
			f := int(pl.freqs[i])
			ps := make([]uint32, f)
			var cur uint64
			for j := range f {
				cur += uint64(vals[k+j])
				if cur > math.MaxUint32 || (j > 0 && vals[k+j] == 0) {
					return ix.corrupt(p.invName, "token %d: positions of document %d not increasing", t, pl.docs[i])
				}
				ps[j] = uint32(cur)
			}
			k += f
			pl.pos[i] = ps
		}
	}
	return nil
}

// decodeStream reads n values: full groups of 128 BitPacker4x-packed, the
// rest varints.
func decodeStream(b []byte, n int) ([]uint32, error) {
	if n > 8*len(b)+blockSize {
		return nil, errShort
	}
	out := make([]uint32, n)
	i := 0
	for ; i+blockSize <= n; i += blockSize {
		k, err := unpack4x(b, out[i:i+blockSize])
		if err != nil {
			return nil, err
		}
		b = b[k:]
	}
	for ; i < n; i++ {
		v, k := binary.Uvarint(b)
		if k <= 0 || v > math.MaxUint32 {
			return nil, errShort
		}
		out[i] = uint32(v)
		b = b[k:]
	}
	return out, nil
}
