package structural

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/format/internal/arrays"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

// Dictionary pages (docs/spec/lance-format.md §8.3 steps 5–6, §8.4, §9.8): mini-block pages
// whose chunks hold 32-bit indices into a dictionary stored as one block in
// page buffer 2. The writer builds the page's dictionary from the values it
// holds (first seen first; null slots get index 0), both for Arrow
// dictionary input and for pages it chooses to dictionary-encode.

// dictBuild is a page's dictionary before encoding.
type dictBuild struct {
	indices *fixedVals // 32-bit indices, one per visible value
	items   int
	fixed   *fixedVals // the dictionary, fixed-width
	vars    *varVals   // or variable-width
}

// encodedDict is the dictionary block of a page.
type encodedDict struct {
	encoding *enc21pb.CompressiveEncoding
	items    int
	block    []byte
}

// dictIndexer numbers distinct values in first-seen order.
type dictIndexer struct {
	ids     map[string]uint32
	indices []byte
	b       *dictBuild
}

func newDictIndexer(fixedBits int, large bool, n int) *dictIndexer {
	d := &dictIndexer{ids: map[string]uint32{}, indices: make([]byte, 0, 4*n), b: &dictBuild{}}
	if fixedBits > 0 {
		d.b.fixed = &fixedVals{bits: fixedBits}
	} else {
		d.b.vars = &varVals{large: large, Off: []uint64{0}}
	}
	return d
}

// add appends the index of value v (nil for a null slot: index 0).
func (d *dictIndexer) add(v []byte, null bool) {
	var id uint32
	if !null {
		var ok bool
		if id, ok = d.ids[string(v)]; !ok {
			id = uint32(len(d.ids))
			d.ids[string(v)] = id
			switch {
			case d.b.vars != nil:
				d.b.vars.Data = append(d.b.vars.Data, v...)
				d.b.vars.Off = append(d.b.vars.Off, uint64(len(d.b.vars.Data)))
			case d.b.fixed.bits == 1:
				d.b.fixed.data = appendZeroBits(d.b.fixed.data, d.b.fixed.n, 1)
				if v[0] != 0 {
					d.b.fixed.data[d.b.fixed.n/8] |= 1 << (d.b.fixed.n % 8)
				}
				d.b.fixed.n++
			default:
				d.b.fixed.data = append(d.b.fixed.data, v...)
				d.b.fixed.n++
			}
		}
	}
	d.indices = binary.LittleEndian.AppendUint32(d.indices, id)
}

func (d *dictIndexer) finish() *dictBuild {
	d.b.indices = &fixedVals{bits: 32, n: len(d.indices) / 4, data: d.indices}
	d.b.items = len(d.ids)
	return d.b
}

// arrowDictionaryPage builds the dictionary of a page of Arrow dictionary
// arrays.
func arrowDictionaryPage(pg *writePage) (*dictBuild, error) {
	dt := pg.spec.dt.(*arrow.DictionaryType)
	bitsPer := fixedBits(dt.ValueType)
	large, _ := arrays.BinaryType(dt.ValueType)
	d := newDictIndexer(bitsPer, large, pg.values)
	at := 0
	var one [1]byte
	for _, p := range pg.pieces {
		da, ok := p.Src.(*array.Dictionary)
		if !ok {
			return nil, fmt.Errorf("dictionary field holds a %s array: %w", p.Src.DataType(), lancer.ErrInvalidArgument)
		}
		dict := da.Dictionary()
		// value returns dictionary value k, false when the array's buffers
		// do not hold it.
		var value func(k int) ([]byte, bool)
		switch {
		case bitsPer == 1:
			buf, off := arrays.FixedBuffer(dict)
			value = func(k int) ([]byte, bool) {
				one[0] = 0
				if buf != nil {
					if (off+k)/8 >= len(buf) {
						return nil, false
					}
					if bitSet(buf, off+k) {
						one[0] = 1
					}
				}
				return one[:], true
			}
		case bitsPer > 0:
			buf, off := arrays.FixedBuffer(dict)
			w := bitsPer / 8
			value = func(k int) ([]byte, bool) {
				if (off+k+1)*w > len(buf) {
					return nil, false
				}
				return buf[(off+k)*w : (off+k+1)*w], true
			}
		default:
			offs, data := varOffsets(dict), varData(dict)
			value = func(k int) ([]byte, bool) {
				if offs == nil {
					return nil, true // no offsets buffer: every value is empty, as gatherVar takes it
				}
				start, end := offs(k), offs(k+1)
				if start < 0 || end < start || end > int64(len(data)) {
					return nil, false
				}
				return data[start:end], true
			}
		}
		for _, rg := range p.Ranges {
			for i := rg.Start; i < rg.End; i++ {
				if pg.nulls != nil && pg.nulls[at] {
					d.add(nil, true)
				} else {
					k := da.GetValueIndex(i)
					if k < 0 || k >= dict.Len() {
						return nil, fmt.Errorf("dictionary index %d outside %d values: %w", k, dict.Len(), lancer.ErrInvalidArgument)
					}
					v, ok := value(k)
					if !ok {
						return nil, fmt.Errorf("%s dictionary value %d outside the array's buffers: %w", dict.DataType(), k, lancer.ErrInvalidArgument)
					}
					d.add(v, false)
				}
				at++
			}
		}
	}
	return d.finish(), nil
}

// dictSizeRatio returns the dictionary size ratio a page must beat.
func dictSizeRatio(pg *writePage) float64 {
	if s, ok := pg.meta[metaDictSizeRatio]; ok {
		if r, err := strconv.ParseFloat(s, 64); err == nil && r > 0 && r <= 1 {
			return r
		}
	}
	return 0.8
}

// dictMinValues: smaller pages are never dictionary-encoded.
const dictMinValues = 100

// autoDictionaryVar dictionary-encodes variable-width values when Lance's
// estimate says it pays: card·avg + card·w + n·w < ratio · (data + n·w),
// w the offset width.
func autoDictionaryVar(pg *writePage, vals *varVals) *dictBuild {
	n := vals.Len()
	if n < dictMinValues || pg.compression() == "none" {
		return nil
	}
	if _, _, general, _ := userCompression(pg); general && !pg.v22 {
		// The values would be compressed, a 2.1 dictionary would not.
		return nil
	}
	w := 4
	if vals.large {
		w = 8
	}
	// Lance estimates the dictionary's bytes as card·avg from a
	// cardinality sketch; the exact distinct bytes avoid its misses (many
	// short repeats, long unique values).
	budget := dictSizeRatio(pg)*float64(len(vals.Data)+n*w) - float64(n*w)
	if budget <= 0 {
		return nil
	}
	// A prefix that spends its share of the budget already means mostly
	// distinct values: give up before hashing them all. The page is
	// indexed on the way; the values are copied only once it pays.
	const probe = 4096
	set := newVarSet(vals, min(n, probe))
	indices := make([]byte, 4*n)
	dictBytes := 0
	for i := range n {
		if i == probe && float64(dictBytes) >= budget*probe/float64(n) {
			return nil
		}
		if pg.nulls != nil && pg.nulls[i] {
			continue // index 0
		}
		id, added := set.Add(i)
		if added {
			dictBytes += len(vals.Value(i)) + w
			if float64(dictBytes) >= budget {
				return nil
			}
		}
		binary.LittleEndian.PutUint32(indices[4*i:], id)
	}
	firsts := set.Firsts
	if len(firsts) == 0 {
		return nil
	}
	dict := &varVals{large: vals.large, Off: make([]uint64, 1, len(firsts)+1), Data: make([]byte, 0, dictBytes-len(firsts)*w)}
	for _, i := range firsts {
		dict.Data = append(dict.Data, vals.Value(i)...)
		dict.Off = append(dict.Off, uint64(len(dict.Data)))
	}
	return &dictBuild{
		indices: &fixedVals{bits: 32, n: n, data: indices},
		items:   len(firsts),
		vars:    dict,
	}
}

// varSet numbers the distinct values of a varVals in first-seen order,
// without copying them.
type varSet struct {
	vals   *varVals
	Firsts []int // the first value of each id
	// Short values are keyed by their bytes (strings that view vals.data,
	// which outlives the set). Long ones, 1–8 KiB images say, by a
	// fingerprint, so that distinct ones are told apart without hashing
	// them whole; equal fingerprints are compared in full, and values
	// whose fingerprint is taken by another value go to short.
	short map[string]uint32
	long  map[varFingerprint]uint32
}

// varFingerprintMin: values longer than this are keyed by fingerprint.
const varFingerprintMin = 64

// varFingerprint is a long value's length and 8 bytes from each of its
// start, middle and end.
type varFingerprint struct {
	n               int
	head, mid, tail uint64
}

// newVarSet returns an empty set with room for about hint values.
func newVarSet(vals *varVals, hint int) *varSet {
	s := &varSet{vals: vals}
	if n := vals.Len(); n > 0 && len(vals.Data)/n > varFingerprintMin {
		s.long = make(map[varFingerprint]uint32, hint)
	} else {
		s.short = make(map[string]uint32, hint)
	}
	return s
}

// Add returns the id of value i and whether i is its first occurrence.
func (s *varSet) Add(i int) (uint32, bool) {
	v := s.vals.Value(i)
	if len(v) > varFingerprintMin {
		fp := varFingerprint{
			n:    len(v),
			head: binary.LittleEndian.Uint64(v),
			mid:  binary.LittleEndian.Uint64(v[len(v)/2:]),
			tail: binary.LittleEndian.Uint64(v[len(v)-8:]),
		}
		if s.long == nil {
			s.long = make(map[varFingerprint]uint32)
		}
		id, ok := s.long[fp]
		if !ok {
			id = s.next(i)
			s.long[fp] = id
			return id, true
		}
		if bytes.Equal(s.vals.Value(s.Firsts[id]), v) {
			return id, false
		}
	}
	key := unsafe.String(unsafe.SliceData(v), len(v))
	if s.short == nil {
		s.short = make(map[string]uint32)
	}
	if id, ok := s.short[key]; ok {
		return id, false
	}
	id := s.next(i)
	s.short[key] = id
	return id, true
}

func (s *varSet) next(i int) uint32 {
	s.Firsts = append(s.Firsts, i)
	return uint32(len(s.Firsts) - 1)
}

// autoDictionaryFixed dictionary-encodes 128-bit values (Lance's estimate
// 16·card + 4·n < ratio · 16·n) and, in 2.2, 64-bit values whose
// dictionary form is clearly smaller than their best plain form.
func autoDictionaryFixed(pg *writePage, vals *fixedVals) *dictBuild {
	n := vals.n
	if n < dictMinValues || pg.compression() == "none" || pg.compression() == "zstd" || pg.compression() == "lz4" {
		return nil
	}
	ratio := dictSizeRatio(pg)
	var maxCard int
	switch {
	case vals.bits == 128:
		maxCard = int((ratio*16*float64(n) - 4*float64(n)) / 16)
	case vals.bits == 64 && pg.v22:
		maxCard = n / 4
	default:
		return nil
	}
	if maxCard <= 0 {
		return nil
	}
	w := vals.bits / 8
	seen := map[string]struct{}{}
	for i := range n {
		if pg.nulls != nil && pg.nulls[i] {
			continue
		}
		v := vals.data[i*w : (i+1)*w]
		if _, ok := seen[string(v)]; !ok {
			if len(seen) >= maxCard {
				return nil
			}
			seen[string(v)] = struct{}{}
		}
	}
	if len(seen) == 0 {
		return nil
	}
	if vals.bits == 64 {
		// Indices bit-packed plus the dictionary against the values'
		// own best mini-block form.
		words, err := codec.DecodeFlat[uint64](nil, vals.data[:n*8], n)
		if err != nil {
			return nil
		}
		runs := min(codec.CountRuns(words)+n/255, n)
		plain := min(n*8, bitpackEstimate(words), runs*9)
		idxWidth := bits.Len(uint(len(seen) - 1))
		dict := 8*len(seen) + min((n+1023)/1024*(4+128*idxWidth), runs*5)
		if dict >= plain {
			return nil
		}
	}
	d := newDictIndexer(vals.bits, false, n)
	for i := range n {
		d.add(vals.data[i*w:(i+1)*w], pg.nulls != nil && pg.nulls[i])
	}
	return d.finish()
}

// encodeDictionary encodes a page's dictionary as one block: Variable or
// Flat; in 2.2, wrapped in zstd when larger than 32 KiB and that shrinks
// it.
func encodeDictionary(pg *writePage, d *dictBuild) (*encodedDict, error) {
	out := &encodedDict{items: d.items}
	switch {
	case d.vars != nil:
		var err error
		if d.vars.large {
			out.block, err = codec.EncodeVariableBlock(nil, d.vars.Off, d.vars.Data)
			out.encoding = &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Variable{Variable: &enc21pb.Variable{Offsets: flatEncoding(64)}}}
		} else {
			narrow := make([]uint32, len(d.vars.Off))
			for i, o := range d.vars.Off {
				narrow[i] = uint32(o)
			}
			out.block, err = codec.EncodeVariableBlock(nil, narrow, d.vars.Data)
			out.encoding = &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Variable{Variable: &enc21pb.Variable{Offsets: flatEncoding(32)}}}
		}
		if err != nil {
			return nil, err
		}
	default:
		out.block = d.fixed.data
		out.encoding = flatEncoding(d.fixed.bits)
	}
	if pg.v22 && len(out.block) > generalBlockMin {
		c, err := codec.Compress(codec.CompressionZstd, 0, out.block)
		if err != nil {
			return nil, err
		}
		if len(c) < len(out.block) {
			out.block = c
			out.encoding = generalEncoding(codec.CompressionZstd, nil, out.encoding)
		}
	}
	return out, nil
}

// encodeDictPage encodes a dictionary page.
func encodeDictPage(pg *writePage, d *dictBuild) ([][]byte, *enc21pb.PageLayout, error) {
	ed, err := encodeDictionary(pg, d)
	if err != nil {
		return nil, nil, err
	}
	enc, err := newFixedMini(pg, d.indices)
	if err != nil {
		return nil, nil, err
	}
	return encodeMiniBlock(pg, enc, ed)
}

// tooLarge reports a mini-block failure that another layout avoids.
func tooLarge(err error) bool { return errors.Is(err, errChunkTooLarge) }

// materializeVar returns the values the dictionary and indices stand for.
func (d *dictBuild) materializeVar() *varVals {
	out := &varVals{large: d.vars.large, Off: make([]uint64, 1, d.indices.n+1)}
	for i := range d.indices.n {
		k := int(getLE(d.indices.data[4*i:], 4))
		if d.items > 0 {
			out.Data = append(out.Data, d.vars.Value(k)...)
		}
		out.Off = append(out.Off, uint64(len(out.Data)))
	}
	return out
}

// materializeFixed returns the values the dictionary and indices stand for.
func (d *dictBuild) materializeFixed() *fixedVals {
	out := &fixedVals{bits: d.fixed.bits}
	for i := range d.indices.n {
		k := int(getLE(d.indices.data[4*i:], 4))
		if out.bits == 1 {
			out.data = appendZeroBits(out.data, out.n, 1)
			if d.items > 0 && bitSet(d.fixed.data, k) {
				out.data[out.n/8] |= 1 << (out.n % 8)
			}
		} else {
			w := out.bits / 8
			if d.items > 0 {
				out.data = append(out.data, d.fixed.data[k*w:(k+1)*w]...)
			} else {
				out.data = append(out.data, make([]byte, w)...)
			}
		}
		out.n++
	}
	return out
}
