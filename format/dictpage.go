package format

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Dictionary pages (spec §8.4, §9.8): a mini-block page whose chunks hold
// 0-based indices into a dictionary stored in page buffer 2 as one block
// (Variable, Flat{w}, or General around either). Indices are as wide as the
// value encoding says (Lance 12 writes 32-bit indices for every dictionary
// seen); null slots still carry an index, which means nothing.

// dictionaryValues turns a dictionary page's indices into the page's values:
// a dictionary array when the leaf is an Arrow dictionary, else the
// dictionary entries themselves. def and maxVisible tell null slots (whose
// indices may point anywhere) from valid ones.
func (d *pageDecoder) dictionaryValues(l *enc21pb.MiniBlockLayout, buf []byte, indices valueBlock, def []uint16, maxVisible uint16) (arrow.Array, error) {
	idx, ok := indices.(*fixedBlock)
	if !ok || (idx.bits != 8 && idx.bits != 16 && idx.bits != 32 && idx.bits != 64) {
		return nil, pageCorruptf("dictionary indices stored as %T, not 8- to 64-bit integers", indices)
	}
	numItems := l.GetNumDictionaryItems()
	if numItems > maxPageItems {
		return nil, pageCorruptf("dictionary of %d items", numItems)
	}
	dict, err := decodeBlock(l.GetDictionary(), buf, int(numItems))
	if err != nil {
		return nil, pageWrapf(err, "dictionary")
	}
	// valid[i] reports whether visible item i is a valid value; nil: all are.
	var valid []bool
	if def != nil {
		valid = make([]bool, 0, idx.n)
		for _, lv := range def {
			if lv <= maxVisible {
				valid = append(valid, lv == 0)
			}
		}
	}
	keys, nullOutOfRange, err := dictionaryKeys(idx, dict.length(), valid)
	if err != nil {
		return nil, err
	}
	if dt, ok := d.scanType.(*arrow.DictionaryType); ok {
		return dictionaryArray(d, dt, dict, keys, valid, nullOutOfRange)
	}
	gathered, err := gatherBlock(dict, keys)
	if err != nil {
		return nil, err
	}
	return toArrow(d.mem, gathered, d.scanType)
}

// dictionaryKeys reads the indices as ints, checking each valid one against
// the dictionary size; out-of-range indices of null slots become 0 and are
// reported.
func dictionaryKeys(idx *fixedBlock, size int, valid []bool) (keys []int, nullOutOfRange bool, err error) {
	width := idx.bits / 8
	keys = make([]int, idx.n)
	for i := range keys {
		k := getLE(idx.data[i*width:], width)
		if k >= uint64(size) {
			if valid != nil && !valid[i] {
				keys[i], nullOutOfRange = 0, true
				continue
			}
			return nil, false, pageCorruptf("value %d has dictionary index %d, the dictionary has %d items", i, k, size)
		}
		keys[i] = int(k)
	}
	return keys, nullOutOfRange, nil
}

// gatherBlock materialises dictionary entries keys[i] as a block. The
// output may be far larger than the page (that is what the dictionary
// saved), so it is bounded like decompressed data.
func gatherBlock(dict valueBlock, keys []int) (valueBlock, error) {
	switch b := dict.(type) {
	case *fixedBlock:
		out := &fixedBlock{bits: b.bits}
		if b.bits == 1 {
			for _, k := range keys {
				var bit [1]byte
				if bitSet(b.data, k) {
					bit[0] = 1
				}
				out.appendValues(bit[:], 1)
			}
			return out, nil
		}
		w := b.bits / 8
		if len(keys)*w > maxDecompressedBytes {
			return nil, pageUnsupportedf("%d dictionary values of %d bytes are too large to materialise", len(keys), w)
		}
		out.data = make([]byte, 0, len(keys)*w)
		for _, k := range keys {
			out.data = append(out.data, b.data[k*w:(k+1)*w]...)
		}
		out.n = len(keys)
		return out, nil
	case *varBlock:
		total := 0
		for _, k := range keys {
			if total += len(b.value(k)); total > maxDecompressedBytes {
				return nil, pageUnsupportedf("%d dictionary values of more than %d bytes are too large to materialise", len(keys), total)
			}
		}
		out := newVarBlock(b.large, len(keys))
		out.data = make([]byte, 0, total)
		for _, k := range keys {
			if err := out.add(b.value(k)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *nullBlock:
		return &nullBlock{n: len(keys)}, nil
	}
	return nil, pageUnsupportedf("dictionary of %T values", dict)
}

// dictionaryArray builds an Arrow dictionary array of type dt from the
// dictionary block and keys. When null slots had out-of-range indices the
// indices get a validity bitmap (from valid), so no reader trusts them.
func dictionaryArray(d *pageDecoder, dt *arrow.DictionaryType, dict valueBlock, keys []int, valid []bool, nullOutOfRange bool) (arrow.Array, error) {
	values, err := toArrow(d.mem, dict, dt.ValueType)
	if err != nil {
		return nil, pageWrapf(err, "dictionary")
	}
	defer values.Release()
	it, ok := dt.IndexType.(arrow.FixedWidthDataType)
	if !ok || !arrow.IsInteger(dt.IndexType.ID()) {
		return nil, pageUnsupportedf("dictionary index type %s", dt.IndexType)
	}
	width := it.BitWidth() / 8
	if width < 8 && uint64(values.Len()) > 1<<(8*width-1) {
		return nil, pageCorruptf("dictionary of %d items does not fit indices of %s", values.Len(), dt.IndexType)
	}
	raw := make([]byte, len(keys)*width)
	for i, k := range keys {
		putLE(raw[i*width:], width, uint64(k))
	}
	var validity []byte
	if nullOutOfRange {
		validity = make([]byte, bytesForBits(len(keys)))
		for i, v := range valid {
			if v {
				validity[i/8] |= 1 << (i % 8)
			}
		}
	}
	indices, err := fixedWidthArray(dt.IndexType, len(keys), raw, validity)
	if err != nil {
		return nil, pageCorruptf("dictionary indices: %v", err)
	}
	defer indices.Release()
	return array.NewDictionaryArray(dt, indices, values), nil
}
