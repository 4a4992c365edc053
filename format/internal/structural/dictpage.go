package structural

import (
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Dictionary pages (docs/spec/lance-format.md §8.4, §9.8): a mini-block page whose chunks hold
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
	if dt, ok := d.ScanType.(*arrow.DictionaryType); ok {
		return dictionaryArray(d.Mem, dt, dict, keys, valid, nullOutOfRange)
	}
	gathered, err := gatherBlock(dict, keys)
	if err != nil {
		return nil, err
	}
	return toArrow(d.Mem, gathered, d.ScanType)
}

// dictionaryKeys reads the indices as ints, checking each valid one against
// the dictionary size; out-of-range indices of null slots become -1 (no
// entry: the dictionary may even be empty) and are reported.
func dictionaryKeys(idx *fixedBlock, size int, valid []bool) (keys []int, nullOutOfRange bool, err error) {
	width := idx.bits / 8
	keys = make([]int, idx.n)
	for i := range keys {
		k := getLE(idx.data[i*width:], width)
		if k >= uint64(size) {
			if valid != nil && !valid[i] {
				keys[i], nullOutOfRange = -1, true
				continue
			}
			return nil, false, pageCorruptf("value %d has dictionary index %d, the dictionary has %d items", i, k, size)
		}
		keys[i] = int(k)
	}
	return keys, nullOutOfRange, nil
}

// gatherBlock materialises dictionary entries keys[i] as a block; a key of
// -1 (a null slot) gets a zero or empty value. The output may be far larger
// than the page (that is what the dictionary saved), so it is bounded like
// decompressed data.
func gatherBlock(dict valueBlock, keys []int) (valueBlock, error) {
	switch b := dict.(type) {
	case *fixedBlock:
		out := &fixedBlock{bits: b.bits}
		if b.bits == 1 {
			for _, k := range keys {
				var bit [1]byte
				if k >= 0 && bitSet(b.data, k) {
					bit[0] = 1
				}
				out.appendValues(bit[:], 1)
			}
			return out, nil
		}
		w := b.bits / 8
		if len(keys)*w > fileio.MaxDecompressedBytes {
			return nil, pageUnsupportedf("%d dictionary values of %d bytes are too large to materialise", len(keys), w)
		}
		out.data = make([]byte, len(keys)*w)
		for i, k := range keys {
			if k >= 0 {
				copy(out.data[i*w:], b.data[k*w:(k+1)*w])
			}
		}
		out.n = len(keys)
		return out, nil
	case *varBlock:
		value := func(k int) []byte {
			if k < 0 {
				return nil
			}
			return b.value(k)
		}
		total := 0
		for _, k := range keys {
			if total += len(value(k)); total > fileio.MaxDecompressedBytes {
				return nil, pageUnsupportedf("%d dictionary values of more than %d bytes are too large to materialise", len(keys), total)
			}
		}
		out := newVarBlock(b.large, len(keys))
		out.data = make([]byte, 0, total)
		for _, k := range keys {
			if err := out.add(value(k)); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *nullBlock:
		return &nullBlock{n: len(keys)}, nil
	}
	return nil, pageUnsupportedf("dictionary of %T values", dict)
}

// plainDictionary makes dictionary entries and keys of the values of a
// page that is not dictionary-encoded: every value is its own entry, or,
// when the index type cannot number that many, each distinct value is one
// (in first-seen order), as a cast of the values to the dictionary type
// would make them.
func plainDictionary(dt *arrow.DictionaryType, b valueBlock) (valueBlock, []int, error) {
	n := b.length()
	most, err := maxDictionaryItems(dt)
	if err != nil {
		return nil, nil, err
	}
	keys := make([]int, n)
	if n <= most {
		for i := range keys {
			keys[i] = i
		}
		return b, keys, nil
	}
	var value func(i int) []byte
	switch b := b.(type) {
	case *fixedBlock:
		if b.bits%8 != 0 {
			return nil, nil, pageUnsupportedf("%d values of %d bits as a dictionary of %s", n, b.bits, dt)
		}
		w := b.bits / 8
		value = func(i int) []byte { return b.data[i*w : (i+1)*w] }
	case *varBlock:
		value = b.value
	default:
		return nil, nil, pageUnsupportedf("%T values as a dictionary of %s", b, dt)
	}
	index := map[string]int{}
	var firsts []int // the first value of each entry
	for i := range keys {
		k, ok := index[string(value(i))]
		if !ok {
			if k = len(firsts); k == most {
				return nil, nil, pageUnsupportedf("more than %d distinct values for dictionary indices of %s", most, dt.IndexType)
			}
			index[string(value(i))] = k
			firsts = append(firsts, i)
		}
		keys[i] = k
	}
	entries, err := gatherBlock(b, firsts)
	return entries, keys, err
}

// maxDictionaryItems returns how many entries the index type of dt can
// number.
func maxDictionaryItems(dt *arrow.DictionaryType) (int, error) {
	it, ok := dt.IndexType.(arrow.FixedWidthDataType)
	if !ok || !arrow.IsInteger(dt.IndexType.ID()) {
		return 0, pageUnsupportedf("dictionary index type %s", dt.IndexType)
	}
	if width := it.BitWidth(); width < 64 {
		return 1 << (width - 1), nil
	}
	return math.MaxInt, nil
}

// dictionaryArray builds an Arrow dictionary array of type dt from the
// dictionary block and keys. When null slots had out-of-range indices the
// indices get a validity bitmap (from valid), so no reader trusts them.
func dictionaryArray(mem memory.Allocator, dt *arrow.DictionaryType, dict valueBlock, keys []int, valid []bool, nullOutOfRange bool) (arrow.Array, error) {
	most, err := maxDictionaryItems(dt)
	if err != nil {
		return nil, err
	}
	if n := dict.length(); n > most {
		return nil, pageCorruptf("dictionary of %d items does not fit indices of %s", n, dt.IndexType)
	}
	values, err := toArrow(mem, dict, dt.ValueType)
	if err != nil {
		return nil, pageWrapf(err, "dictionary")
	}
	defer values.Release()
	width := dt.IndexType.(arrow.FixedWidthDataType).BitWidth() / 8
	raw := make([]byte, len(keys)*width)
	for i, k := range keys {
		putLE(raw[i*width:], width, uint64(max(k, 0)))
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
	indices, err := arrays.FixedWidthArray(dt.IndexType, len(keys), raw, validity)
	if err != nil {
		return nil, pageCorruptf("dictionary indices: %v", err)
	}
	defer indices.Release()
	return array.NewDictionaryArray(dt, indices, values), nil
}
