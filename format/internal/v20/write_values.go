package v20

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/format/internal/fileio"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/encpb"
)

// Page builders of 2.0 leaf columns. A builder collects the values of one
// page from slices of Arrow arrays and encodes them into the ArrayEncoding
// tree and buffers Lance's default 2.0 writer produces (docs/spec/lance-format.md §7.2); buffer
// indices follow the tree depth-first (validity before values, offsets
// before bytes, indices before items).

// v20Values buffers the values of one page of a leaf column.
type v20Values interface {
	// span returns j in (i, n]: rows [i, j) of arr fit in budget bytes, or
	// j = i+1 if not even one does.
	span(arr arrow.Array, i, n, budget int) int
	// add buffers rows [i, j) of arr.
	add(arr arrow.Array, i, j int) error
	// len is the number of values buffered, size their bytes.
	len() int
	size() int
	// encode appends the page's buffers to bufs and returns the encoding
	// naming them.
	encode(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte, error)
	reset()
}

// newV20Values returns the page builder of a leaf of type dt. autoDict lets
// a utf8 column pick the dictionary encoding when it pays (off for
// dictionary items, as in Lance).
func newV20Values(dt arrow.DataType, autoDict bool) (v20Values, error) {
	switch t := dt.(type) {
	case *arrow.NullType:
		return &v20FixedValues{bits: 0}, nil
	case *arrow.FixedSizeListType:
		items, err := newV20Values(t.Elem(), false)
		if err != nil {
			return nil, err
		}
		if _, ok := items.(v20RowBits); !ok || t.Len() <= 0 {
			return nil, fmt.Errorf("fixed-size list of %s: 2.0 stores only fixed-width items: %w", t.Elem(), lancer.ErrUnsupported)
		}
		return &v20FSLValues{dim: int(t.Len()), items: items}, nil
	case *arrow.DictionaryType:
		return newV20DictValues(t)
	}
	if large, ok := arrays.BinaryType(dt); ok {
		return &v20BinaryValues{large: large, autoDict: autoDict && dt.ID() == arrow.STRING}, nil
	}
	if bits, ok := BitWidth(dt); ok {
		return &v20FixedValues{bits: bits}, nil
	}
	return nil, fmt.Errorf("%s values in a 2.0 file: %w", dt, lancer.ErrUnsupported)
}

// Encoding tree builders.

func v20FlatEnc(bits uint64, buf int) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Flat{Flat: &encpb.Flat{
		BitsPerValue: bits, Buffer: &encpb.Buffer{BufferIndex: uint32(buf)},
	}}}
}

func v20NoNullsEnc(values *encpb.ArrayEncoding) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Nullable{Nullable: &encpb.Nullable{
		Nullability: &encpb.Nullable_NoNulls{NoNulls: &encpb.Nullable_NoNull{Values: values}},
	}}}
}

func v20SomeNullsEnc(validity int, values *encpb.ArrayEncoding) *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Nullable{Nullable: &encpb.Nullable{
		Nullability: &encpb.Nullable_SomeNulls{SomeNulls: &encpb.Nullable_SomeNull{Validity: v20FlatEnc(1, validity), Values: values}},
	}}}
}

func v20AllNullsEnc() *encpb.ArrayEncoding {
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Nullable{Nullable: &encpb.Nullable{
		Nullability: &encpb.Nullable_AllNulls{AllNulls: &encpb.Nullable_AllNull{}},
	}}}
}

// v20Nullable wraps the encoding of values with nulls of n: no_nulls,
// some_nulls (the validity bitmap becomes the next buffer, before the
// values' own) or all_nulls (values is not called: no buffers).
func v20Nullable(bufs [][]byte, n, nulls int, validity []byte, values func([][]byte) (*encpb.ArrayEncoding, [][]byte)) (*encpb.ArrayEncoding, [][]byte) {
	switch {
	case nulls == n:
		return v20AllNullsEnc(), bufs
	case nulls > 0:
		vi := len(bufs)
		enc, bufs := values(append(bufs, validity))
		return v20SomeNullsEnc(vi, enc), bufs
	}
	enc, bufs := values(bufs)
	return v20NoNullsEnc(enc), bufs
}

// v20Bits is a growing LSB-first bitmap.
type v20Bits struct {
	b []byte
	n int
}

func (m *v20Bits) grow(k int) {
	if need := int(bitutil.BytesForBits(int64(m.n + k))); need > len(m.b) {
		m.b = append(m.b, make([]byte, need-len(m.b))...)
	}
}

// appendBits appends bits [off, off+k) of src.
func (m *v20Bits) appendBits(src []byte, off, k int) {
	m.grow(k)
	bitutil.CopyBitmap(src, off, k, m.b, m.n)
	m.n += k
}

// appendSame appends k bits of value v.
func (m *v20Bits) appendSame(k int, v bool) {
	m.grow(k)
	bitutil.SetBitsTo(m.b, int64(m.n), int64(k), v)
	m.n += k
}

// appendValidity appends the validity of rows [i, j) of arr and returns
// how many are null.
func (m *v20Bits) appendValidity(arr arrow.Array, i, j int) int {
	k := j - i
	bm := arr.NullBitmapBytes()
	switch {
	case arr.NullN() == 0:
		m.appendSame(k, true)
		return 0
	case bm == nil: // a null-typed array
		m.appendSame(k, false)
		return k
	}
	off := arr.Data().Offset() + i
	m.appendBits(bm, off, k)
	return k - bitutil.CountSetBits(bm, off, k)
}

func (m *v20Bits) get(i int) bool { return bitutil.BitIsSet(m.b, i) }

func (m *v20Bits) bytes() []byte { return m.b[:bitutil.BytesForBits(int64(m.n))] }

func (m *v20Bits) reset() { m.b, m.n = m.b[:0], 0 }

// v20RowBits is implemented by builders whose values all take the same
// number of bits.
type v20RowBits interface {
	rowBits() int
}

// v20FixedSpan is span for rows of rowBits bits (plus a validity bit).
func v20FixedSpan(rowBits, i, n, budget int) int {
	if rowBits == 0 || budget >= math.MaxInt/8 {
		return n
	}
	rows := max(budget, 0) * 8 / (rowBits + 1)
	return min(n, i+max(rows, 1))
}

// v20FixedValues builds a page of fixed-width values (bits 1: booleans, 0:
// the null type, which has no values):
// Nullable{no_nulls|some_nulls|all_nulls}{Flat{bits}}.
type v20FixedValues struct {
	bits     int
	validity v20Bits
	nulls    int
	values   []byte // bits == 1: a bitmap of validity.n bits
}

func (f *v20FixedValues) rowBits() int { return f.bits }

func (f *v20FixedValues) span(_ arrow.Array, i, n, budget int) int {
	return v20FixedSpan(f.bits, i, n, budget)
}

func (f *v20FixedValues) add(arr arrow.Array, i, j int) error {
	start := f.validity.n
	f.nulls += f.validity.appendValidity(arr, i, j)
	if f.bits == 0 {
		return nil
	}
	src, off := arrays.FixedBuffer(arr)
	if f.bits == 1 {
		need := int(bitutil.BytesForBits(int64(start + j - i)))
		f.values = append(f.values, make([]byte, need-len(f.values))...)
		if int(bitutil.BytesForBits(int64(off+j))) <= len(src) {
			bitutil.CopyBitmap(src, off+i, j-i, f.values, start)
		}
		return nil
	}
	w := f.bits / 8
	lo, hi := (off+i)*w, (off+j)*w
	if hi <= len(src) {
		f.values = append(f.values, src[lo:hi]...)
	} else {
		// No values buffer (an all-null array may lack one): zeros.
		f.values = append(f.values, make([]byte, hi-lo)...)
	}
	return nil
}

func (f *v20FixedValues) len() int  { return f.validity.n }
func (f *v20FixedValues) size() int { return len(f.values) + len(f.validity.b) }

func (f *v20FixedValues) encode(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte, error) {
	enc, bufs := v20Nullable(bufs, f.validity.n, f.nulls, f.validity.bytes(), func(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte) {
		return v20FlatEnc(uint64(f.bits), len(bufs)), append(bufs, f.values)
	})
	return enc, bufs, nil
}

func (f *v20FixedValues) reset() {
	f.validity.reset()
	f.nulls, f.values = 0, f.values[:0]
}

// v20FSLValues builds a page of fixed-size lists of fixed-width items:
// Nullable{…}{FixedSizeList{dim, items: Nullable{…}{Flat}}}, the lists'
// validity (if any nulls) first, then the items' validity and values.
type v20FSLValues struct {
	dim      int
	validity v20Bits
	nulls    int
	items    v20Values
}

func (f *v20FSLValues) rowBits() int { return f.dim * (f.items.(v20RowBits).rowBits() + 1) }

func (f *v20FSLValues) span(_ arrow.Array, i, n, budget int) int {
	return v20FixedSpan(f.rowBits(), i, n, budget)
}

func (f *v20FSLValues) add(arr arrow.Array, i, j int) error {
	fsl, ok := arr.(*array.FixedSizeList)
	if !ok {
		return fmt.Errorf("fixed-size list column got a %s array: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	off := arr.Data().Offset()
	items := fsl.ListValues()
	if (off+j)*f.dim > items.Len() {
		return fmt.Errorf("fixed-size lists need %d items, the array has %d: %w", (off+j)*f.dim, items.Len(), lancer.ErrInvalidArgument)
	}
	f.nulls += f.validity.appendValidity(arr, i, j)
	return f.items.add(items, (off+i)*f.dim, (off+j)*f.dim)
}

func (f *v20FSLValues) len() int  { return f.validity.n }
func (f *v20FSLValues) size() int { return len(f.validity.b) + f.items.size() }

func (f *v20FSLValues) encode(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte, error) {
	var err error
	enc, bufs := v20Nullable(bufs, f.validity.n, f.nulls, f.validity.bytes(), func(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte) {
		var items *encpb.ArrayEncoding
		items, bufs, err = f.items.encode(bufs)
		return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_FixedSizeList{FixedSizeList: &encpb.FixedSizeList{
			Dimension: uint32(f.dim), Items: items,
		}}}, bufs
	})
	return enc, bufs, err
}

func (f *v20FSLValues) reset() {
	f.validity.reset()
	f.nulls = 0
	f.items.reset()
}

// v20BinaryReader reads the values of a utf8/binary array.
type v20BinaryReader struct {
	arr   array.BinaryLike
	bytes []byte
	base  int64
	init  bool
}

// value returns the bytes of row i, which must be valid.
func (r *v20BinaryReader) value(i int) ([]byte, error) {
	if !r.init {
		r.bytes, r.base, r.init = r.arr.ValueBytes(), r.arr.ValueOffset64(0), true
	}
	start := r.arr.ValueOffset64(i) - r.base
	end := start + int64(r.arr.ValueLen(i))
	if start < 0 || end < start || end > int64(len(r.bytes)) {
		return nil, fmt.Errorf("value %d at bytes %d..%d of %d: %w", i, start, end, len(r.bytes), lancer.ErrInvalidArgument)
	}
	return r.bytes[start:end], nil
}

// v20DictThreshold is the cardinality below which a utf8 page of at least
// as many rows is dictionary encoded (Lance's default
// LANCE_DICT_ENCODING_THRESHOLD).
const v20DictThreshold = 100

// v20BinaryValues builds a page of utf8/binary values:
// Binary{indices: Nullable{no_nulls{Flat{64}}}, bytes: Flat{8},
// null_adjustment}. The indices are the values' cumulative end offsets; a
// null row (which takes no bytes) stores its end plus null_adjustment,
// the page's byte count plus one. With autoDict, a page of at least 100
// rows with fewer than 100 distinct strings becomes
// Dictionary{indices: u8 (1-based, 0 = null), items: Binary} instead.
type v20BinaryValues struct {
	large    bool
	autoDict bool
	// compression, if set, compresses the bytes buffer (zstd or lz4, at
	// level); fsst compresses the values with FSST instead.
	compression *encpb.Compression
	fsst        bool
	validity    v20Bits
	nulls       int
	ends        []uint64
	data        []byte
}

func (b *v20BinaryValues) span(arr arrow.Array, i, n, budget int) int {
	bin, ok := arr.(array.BinaryLike)
	if !ok {
		return i + 1 // add reports the wrong type
	}
	cost, j := 0, i
	for ; j < n; j++ {
		c := 8
		if arr.IsValid(j) {
			c += bin.ValueLen(j)
		}
		if cost+c > budget && j > i {
			break
		}
		cost += c
	}
	return j
}

func (b *v20BinaryValues) add(arr arrow.Array, i, j int) error {
	bin, ok := arr.(array.BinaryLike)
	if !ok {
		return fmt.Errorf("binary column got a %s array: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	r := v20BinaryReader{arr: bin}
	b.nulls += b.validity.appendValidity(arr, i, j)
	for k := i; k < j; k++ {
		if arr.IsValid(k) {
			v, err := r.value(k)
			if err != nil {
				return err
			}
			b.data = append(b.data, v...)
		}
		b.ends = append(b.ends, uint64(len(b.data)))
	}
	return nil
}

func (b *v20BinaryValues) len() int  { return len(b.ends) }
func (b *v20BinaryValues) size() int { return 8*len(b.ends) + len(b.data) }

func (b *v20BinaryValues) encode(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte, error) {
	if b.autoDict && len(b.ends) >= v20DictThreshold {
		if enc, out, ok := b.dictionary(bufs); ok {
			return enc, out, nil
		}
	}
	null := func(i int) bool { return b.nulls > 0 && !b.validity.get(i) }
	if b.fsst {
		return b.encodeFSST(bufs, null)
	}
	if b.compression != nil {
		scheme := codec.CompressionZstd
		if b.compression.GetScheme() == "lz4" {
			scheme = codec.CompressionLZ4
		}
		compressed, err := codec.Compress(scheme, int(b.compression.GetLevel()), b.data)
		if err != nil {
			return nil, nil, err
		}
		enc, bufs := v20BinaryEncode(bufs, b.ends, compressed, null, b.compression)
		return enc, bufs, nil
	}
	enc, bufs := v20BinaryEncode(bufs, b.ends, b.data, null, nil)
	return enc, bufs, nil
}

// encodeFSST compresses the page's values with an FSST symbol table
// trained on them: Fsst{binary: Binary of the compressed values,
// symbol_table}.
func (b *v20BinaryValues) encodeFSST(bufs [][]byte, null func(int) bool) (*encpb.ArrayEncoding, [][]byte, error) {
	offsets := make([]uint64, len(b.ends)+1)
	copy(offsets[1:], b.ends)
	table, ends, data, err := codec.FSSTEncodeAll(offsets, b.data)
	if err != nil {
		return nil, nil, err
	}
	inner, bufs := v20BinaryEncode(bufs, ends[1:], data, null, nil)
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Fsst{Fsst: &encpb.Fsst{
		Binary: inner, SymbolTable: table.Bytes(),
	}}}, bufs, nil
}

// compressAs applies a field's lance-encoding:compression request (and
// lance-encoding:compression-level) as Lance's 2.0 writer does: zstd or
// lz4 compress the bytes buffer of Binary pages, fsst compresses utf8 and
// binary (not large) values; anything else is ignored. A page that picks
// the dictionary encoding is not compressed.
func (b *v20BinaryValues) compressAs(md map[string]string) {
	scheme := md[fileio.MetaCompression]
	switch {
	case scheme == "fsst" && !b.large:
		b.fsst = true
	case scheme == "zstd" || scheme == "lz4":
		b.compression = &encpb.Compression{Scheme: scheme}
		if level, err := strconv.ParseInt(md[fileio.MetaCompressionLevel], 10, 32); err == nil {
			l := int32(level)
			b.compression.Level = &l
		}
	}
}

// v20BinaryEncode encodes values ending at ends (cumulative byte offsets)
// with their bytes data (compressed as compression says, if not nil), the
// rows for which null says so null.
func v20BinaryEncode(bufs [][]byte, ends []uint64, data []byte, null func(int) bool, compression *encpb.Compression) (*encpb.ArrayEncoding, [][]byte) {
	// One more than the last end, so that a null row's index (its end plus
	// the adjustment) is past every valid one.
	adjustment := uint64(1)
	if len(ends) > 0 {
		adjustment = ends[len(ends)-1] + 1
	}
	indices := make([]byte, 0, 8*len(ends))
	for i, end := range ends {
		if null(i) {
			end += adjustment
		}
		indices = binary.LittleEndian.AppendUint64(indices, end)
	}
	ii := len(bufs)
	bufs = append(bufs, indices, data)
	bytes := v20FlatEnc(8, ii+1)
	bytes.GetFlat().Compression = compression
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Binary{Binary: &encpb.Binary{
		Indices:        v20NoNullsEnc(v20FlatEnc(64, ii)),
		Bytes:          bytes,
		NullAdjustment: adjustment,
	}}}, bufs
}

// dictionary encodes the page as an automatic dictionary if it has fewer
// than v20DictThreshold distinct strings. The items are the distinct
// strings in first-seen order (one null item if there are none).
func (b *v20BinaryValues) dictionary(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte, bool) {
	seen := make(map[string]int, v20DictThreshold)
	indices := make([]byte, len(b.ends))
	var itemEnds []uint64
	var itemData []byte
	var prev uint64
	for i, end := range b.ends {
		start := prev
		prev = end
		if b.nulls > 0 && !b.validity.get(i) {
			continue // index 0: null
		}
		v := b.data[start:end]
		idx, ok := seen[string(v)]
		if !ok {
			if len(seen)+1 >= v20DictThreshold {
				return nil, nil, false
			}
			idx = len(seen) + 1
			seen[string(v)] = idx
			itemData = append(itemData, v...)
			itemEnds = append(itemEnds, uint64(len(itemData)))
		}
		indices[i] = byte(idx)
	}
	nullItem := func(int) bool { return false }
	if len(itemEnds) == 0 {
		itemEnds = []uint64{0}
		nullItem = func(int) bool { return true }
	}
	ii := len(bufs)
	items, bufs := v20BinaryEncode(append(bufs, indices), itemEnds, itemData, nullItem, nil)
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Dictionary{Dictionary: &encpb.Dictionary{
		Indices:            v20NoNullsEnc(v20FlatEnc(8, ii)),
		Items:              items,
		NumDictionaryItems: uint32(len(itemEnds)),
	}}}, bufs, true
}

func (b *v20BinaryValues) reset() {
	b.validity.reset()
	b.nulls, b.ends, b.data = 0, b.ends[:0], b.data[:0]
}

// v20DictValues builds a page of an Arrow dictionary column:
// Dictionary{indices: Nullable{no_nulls{Flat{key bits}}}, items: (the
// value type's encoding), num_dictionary_items}. As in Lance, nulls live in
// the items: a null row's index points at a null item. The page's items
// are the distinct values its rows use, in first-use order, so dictionaries
// of several batches merge and unused entries are dropped. A column whose
// distinct values outgrow its index type is refused.
type v20DictValues struct {
	keyBits  int
	maxItems uint64 // the index type's largest value + 1
	indices  []byte // little-endian, keyBits each
	n        int
	items    v20Values
	seen     map[string]uint64
	nullItem int64 // index of the null item, -1 for none
	// remap caches, for the dictionary of the last array added, the item
	// of each of its entries (-1: not yet added).
	remapOf arrow.ArrayData
	remap   []int64
	// The distinct values (and whether a null) of the whole column.
	indexType  arrow.DataType
	fileValues map[string]struct{}
	fileNull   bool
}

func newV20DictValues(t *arrow.DictionaryType) (v20Values, error) {
	keyBits, ok := BitWidth(t.IndexType)
	if !ok || !arrow.IsInteger(t.IndexType.ID()) {
		return nil, fmt.Errorf("dictionary index type %s: %w", t.IndexType, lancer.ErrUnsupported)
	}
	items, err := newV20Values(t.ValueType, false)
	if err != nil {
		return nil, fmt.Errorf("dictionary values: %w", err)
	}
	switch items.(type) {
	case *v20FixedValues, *v20BinaryValues:
	default:
		return nil, fmt.Errorf("dictionary of %s values: %w", t.ValueType, lancer.ErrUnsupported)
	}
	maxItems := uint64(math.MaxUint64)
	if keyBits < 64 {
		maxItems = 1 << keyBits
	}
	if arrow.IsSignedInteger(t.IndexType.ID()) {
		maxItems = uint64(1) << (keyBits - 1)
	}
	return &v20DictValues{
		keyBits: keyBits, maxItems: maxItems, items: items, seen: map[string]uint64{}, nullItem: -1,
		indexType: t.IndexType, fileValues: map[string]struct{}{},
	}, nil
}

func (d *v20DictValues) span(_ arrow.Array, i, n, budget int) int {
	return v20FixedSpan(d.keyBits, i, n, budget)
}

func (d *v20DictValues) add(arr arrow.Array, i, j int) error {
	dict, ok := arr.(*array.Dictionary)
	if !ok {
		return fmt.Errorf("dictionary column got a %s array: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	values := dict.Dictionary()
	if d.remapOf != dict.Data().Dictionary() {
		d.remapOf = dict.Data().Dictionary()
		d.remap = make([]int64, values.Len())
		for k := range d.remap {
			d.remap[k] = -1
		}
	}
	for k := i; k < j; k++ {
		entry := -1
		if dict.IsValid(k) {
			entry = dict.GetValueIndex(k)
			if entry < 0 || entry >= values.Len() {
				return fmt.Errorf("dictionary index %d of row %d, past its %d values: %w", entry, k, values.Len(), lancer.ErrInvalidArgument)
			}
			if values.IsNull(entry) {
				entry = -1
			}
		}
		var item int64
		switch {
		case entry < 0 && d.nullItem >= 0:
			item = d.nullItem
		case entry >= 0 && d.remap[entry] >= 0:
			item = d.remap[entry]
		default:
			// A new item: a null one, or a value this page may have seen
			// in another dictionary.
			var key string
			if entry >= 0 {
				key = v20ValueKey(values, entry)
				if it, ok := d.seen[key]; ok {
					d.remap[entry] = int64(it)
					d.appendIndex(it)
					continue
				}
			}
			if err := d.count(key, entry < 0); err != nil {
				return err
			}
			next := uint64(d.items.len())
			if err := d.addItem(values, entry); err != nil {
				return err
			}
			item = int64(next)
			if entry < 0 {
				d.nullItem = item
			} else {
				d.remap[entry] = item
				d.seen[key] = next
			}
		}
		d.appendIndex(uint64(item))
	}
	return nil
}

func (d *v20DictValues) appendIndex(item uint64) {
	d.indices = v20AppendWord(d.indices, item, d.keyBits/8)
	d.n++
}

// count records a value (or the null) the file's dictionary column holds
// and checks that all of them still fit the index type: readers join the
// dictionaries of the pages a batch spans and fail when the result
// outgrows it (Lance's), or fills it (arrow-go's unifier, which lancer's
// reader uses, refuses 128 items for int8 indices).
func (d *v20DictValues) count(key string, null bool) error {
	if null {
		d.fileNull = true
	} else {
		d.fileValues[key] = struct{}{}
	}
	n := uint64(len(d.fileValues))
	if d.fileNull {
		n++
	}
	if n >= d.maxItems {
		return fmt.Errorf("%d distinct dictionary values (null included) do not fit %s indices: %w", n, d.indexType, lancer.ErrUnsupported)
	}
	return nil
}

// addItem appends entry of values to the items, or a null item for -1.
func (d *v20DictValues) addItem(values arrow.Array, entry int) error {
	if entry >= 0 {
		return d.items.add(values, entry, entry+1)
	}
	switch it := d.items.(type) {
	case *v20BinaryValues:
		it.validity.appendSame(1, false)
		it.nulls++
		it.ends = append(it.ends, uint64(len(it.data)))
	case *v20FixedValues:
		it.validity.appendSame(1, false)
		it.nulls++
		if it.bits == 1 {
			it.values = append(it.values, make([]byte, int(bitutil.BytesForBits(int64(it.validity.n)))-len(it.values))...)
		} else {
			it.values = append(it.values, make([]byte, it.bits/8)...)
		}
	}
	return nil
}

func (d *v20DictValues) len() int  { return d.n }
func (d *v20DictValues) size() int { return len(d.indices) + d.items.size() }

func (d *v20DictValues) encode(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte, error) {
	ii := len(bufs)
	items, bufs, err := d.items.encode(append(bufs, d.indices))
	if err != nil {
		return nil, nil, err
	}
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_Dictionary{Dictionary: &encpb.Dictionary{
		Indices:            v20NoNullsEnc(v20FlatEnc(uint64(d.keyBits), ii)),
		Items:              items,
		NumDictionaryItems: uint32(d.items.len()),
	}}}, bufs, nil
}

func (d *v20DictValues) reset() {
	d.indices, d.n = d.indices[:0], 0
	d.items.reset()
	clear(d.seen)
	d.nullItem = -1
	d.remapOf, d.remap = nil, nil
}

// v20ValueKey identifies value i (valid) of a dictionary's values.
func v20ValueKey(arr arrow.Array, i int) string {
	if bin, ok := arr.(array.BinaryLike); ok {
		r := v20BinaryReader{arr: bin}
		v, _ := r.value(i)
		return string(v)
	}
	if b, ok := arr.(*array.Boolean); ok {
		if b.Value(i) {
			return "\x01"
		}
		return "\x00"
	}
	bits, _ := BitWidth(arr.DataType())
	w := bits / 8
	if src, off := arrays.FixedBuffer(arr); (off+i+1)*w <= len(src) {
		return string(src[(off+i)*w : (off+i+1)*w])
	}
	return ""
}

// v20PackedValues builds a page of a packed struct: its members' values
// row-major in one buffer, PackedStruct{inner: [member encodings], buffer}.
// Members are fixed-width values or fixed-size lists of them; the struct
// and its members cannot be null.
type v20PackedValues struct {
	field   *schema.Field
	members []v20PackedPart
	width   int // bytes per row
	rows    int
	data    []byte
}

// v20PackedPart is one member of a packed struct: its byte width and
// encoding.
type v20PackedPart struct {
	width int
	enc   *encpb.ArrayEncoding
}

func newV20PackedValues(f *schema.Field, t *arrow.StructType) (*v20PackedValues, error) {
	p := &v20PackedValues{field: f}
	for _, m := range t.Fields() {
		pm, err := v20PackedPartOf(m.Type)
		if err != nil {
			return nil, fmt.Errorf("packed struct field %q, member %q: %w", f.Name, m.Name, err)
		}
		p.members = append(p.members, pm)
		p.width += pm.width
	}
	return p, nil
}

// v20PackedPartOf returns the width and encoding of a packed member of
// type dt: Nullable{no_nulls{Flat}} or, for a fixed-size list,
// Nullable{no_nulls{FixedSizeList{dim, items}}}, all naming buffer 0.
func v20PackedPartOf(dt arrow.DataType) (v20PackedPart, error) {
	if fsl, ok := dt.(*arrow.FixedSizeListType); ok {
		items, err := v20PackedPartOf(fsl.Elem())
		if err != nil || fsl.Len() <= 0 || items.width > math.MaxInt32/int(fsl.Len()) {
			return v20PackedPart{}, fmt.Errorf("%s cannot be packed: %w", dt, lancer.ErrUnsupported)
		}
		enc := &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_FixedSizeList{FixedSizeList: &encpb.FixedSizeList{
			Dimension: uint32(fsl.Len()), Items: items.enc,
		}}}
		return v20PackedPart{width: items.width * int(fsl.Len()), enc: v20NoNullsEnc(enc)}, nil
	}
	bits, ok := BitWidth(dt)
	if !ok || bits%8 != 0 {
		return v20PackedPart{}, fmt.Errorf("%s cannot be packed: %w", dt, lancer.ErrUnsupported)
	}
	return v20PackedPart{width: bits / 8, enc: v20NoNullsEnc(v20FlatEnc(uint64(bits), 0))}, nil
}

func (p *v20PackedValues) rowBits() int { return 8 * p.width }

func (p *v20PackedValues) span(_ arrow.Array, i, n, budget int) int {
	return min(n, i+max(1, max(budget, 0)/max(p.width, 1)))
}

func (p *v20PackedValues) add(arr arrow.Array, i, j int) error {
	st, ok := arr.(*array.Struct)
	if !ok {
		return fmt.Errorf("packed struct column got a %s array: %w", arr.DataType(), lancer.ErrInvalidArgument)
	}
	if v20AnyNull(st, i, j) {
		return fmt.Errorf("packed struct field %q has nulls in rows %d..%d; 2.0 packed structs cannot store them: %w", p.field.Name, i, j, lancer.ErrUnsupported)
	}
	cols := make([][]byte, len(p.members))
	for m := range p.members {
		cols[m] = v20AppendRows(nil, st.Field(m), i, j)
	}
	for r := range j - i {
		for m, pm := range p.members {
			p.data = append(p.data, cols[m][r*pm.width:(r+1)*pm.width]...)
		}
	}
	p.rows += j - i
	return nil
}

// v20AnyNull reports whether rows [i, j) of arr, or the values inside them
// (struct members, fixed-size list items), hold a null.
func v20AnyNull(arr arrow.Array, i, j int) bool {
	if arr.NullN() > 0 {
		if arr.NullBitmapBytes() == nil {
			return true
		}
		if bitutil.CountSetBits(arr.NullBitmapBytes(), arr.Data().Offset()+i, j-i) < j-i {
			return true
		}
	}
	switch a := arr.(type) {
	case *array.Struct:
		for m := range a.NumField() {
			if v20AnyNull(a.Field(m), i, j) {
				return true
			}
		}
	case *array.FixedSizeList:
		dim := int(a.DataType().(*arrow.FixedSizeListType).Len())
		off := a.Data().Offset()
		return v20AnyNull(a.ListValues(), (off+i)*dim, (off+j)*dim)
	}
	return false
}

// v20AppendRows appends the bytes of rows [i, j) of a fixed-width array or
// a fixed-size list of them.
func v20AppendRows(dst []byte, arr arrow.Array, i, j int) []byte {
	d := arr.Data()
	if fsl, ok := arr.(*array.FixedSizeList); ok {
		dim := int(fsl.DataType().(*arrow.FixedSizeListType).Len())
		return v20AppendRows(dst, fsl.ListValues(), (d.Offset()+i)*dim, (d.Offset()+j)*dim)
	}
	bits, _ := BitWidth(arr.DataType())
	w := bits / 8
	src, off := arrays.FixedBuffer(arr)
	lo, hi := (off+i)*w, (off+j)*w
	if hi <= len(src) {
		return append(dst, src[lo:hi]...)
	}
	return append(dst, make([]byte, hi-lo)...)
}

func (p *v20PackedValues) len() int  { return p.rows }
func (p *v20PackedValues) size() int { return len(p.data) }

func (p *v20PackedValues) encode(bufs [][]byte) (*encpb.ArrayEncoding, [][]byte, error) {
	inner := make([]*encpb.ArrayEncoding, len(p.members))
	for m, pm := range p.members {
		inner[m] = pm.enc
	}
	return &encpb.ArrayEncoding{ArrayEncoding: &encpb.ArrayEncoding_PackedStruct{PackedStruct: &encpb.PackedStruct{
		Inner: inner, Buffer: &encpb.Buffer{BufferIndex: uint32(len(bufs))},
	}}}, append(bufs, p.data), nil
}

func (p *v20PackedValues) reset() { p.rows, p.data = 0, p.data[:0] }
