package codec

import (
	"encoding/binary"
	"math"
	"sync"
)

const (
	// FSSTTableSize is the size of a serialized Lance FSST symbol table (the
	// Fsst.symbol_table field): an 8-byte header plus room for 255 symbols of
	// 8 bytes and their 255 lengths, zero-filled.
	FSSTTableSize = 8 + 256*8 + 256

	// FSSTMinInputSize is the smallest input Lance compresses with FSST.
	// Smaller inputs get a table with the compression switch off and are
	// stored as they are.
	FSSTMinInputSize = 32 * 1024

	fsstMagic      = 0x46535354 // "FSST", the high 32 bits of the header
	fsstSwitchBit  = 24
	fsstEscape     = 255 // code 255: the next byte is a literal
	fsstMaxSymbols = 255 // codes 0..254; 255 is the escape
	fsstMaxSymLen  = 8
)

// FSSTTable is an FSST symbol table. Codes 0..n-1 stand for symbols of 1 to
// 8 bytes; code 255 escapes one literal byte. A table whose compression
// switch is off (Lance's choice for inputs under 32 KiB) has no symbols and
// its "compressed" strings are the original bytes.
//
// A table is safe for concurrent use once built.
type FSSTTable struct {
	compressed bool
	// suffixLim and terminator are hints for FSST encoders and are carried
	// through unchanged; decoding does not use them.
	suffixLim  uint8
	terminator uint8
	n          int
	symbols    [256]uint64 // first byte in the low bits, zero above the length
	lens       [256]uint8  // 0 for codes that are not symbols

	matcherOnce sync.Once
	matcher     *fsstMatcher
}

// NewPlainFSSTTable returns a table with the compression switch off, the one
// Lance writes for inputs below FSSTMinInputSize. Its header bytes are
// 00 00 00 00 54 53 53 46.
func NewPlainFSSTTable() *FSSTTable { return &FSSTTable{} }

// ParseFSSTTable parses a serialized symbol table:
//
//	u64 LE header = "FSST"<<32 | switch<<24 | suffix_lim<<16 | terminator<<8 | n
//	n × u64 LE symbol (first byte in the low bits)
//	n × u8 symbol length (1..8)
//	zero fill to 2312 bytes
func ParseFSSTTable(b []byte) (*FSSTTable, error) {
	if len(b) != FSSTTableSize {
		return nil, corruptf("fsst: symbol table of %d bytes, want %d", len(b), FSSTTableSize)
	}
	header := binary.LittleEndian.Uint64(b)
	if header>>32 != fsstMagic {
		return nil, corruptf("fsst: symbol table header %#016x lacks the FSST magic", header)
	}
	t := &FSSTTable{
		compressed: header>>fsstSwitchBit&1 != 0,
		suffixLim:  uint8(header >> 16),
		terminator: uint8(header >> 8),
		n:          int(uint8(header)),
	}
	lens := b[8+8*t.n:]
	for code := range t.n {
		length := lens[code]
		if length < 1 || length > fsstMaxSymLen {
			return nil, corruptf("fsst: symbol %d has length %d, want 1..8", code, length)
		}
		t.lens[code] = length
		t.symbols[code] = binary.LittleEndian.Uint64(b[8+8*code:]) & symbolMask(int(length))
	}
	return t, nil
}

// symbolMask keeps the low length bytes of a symbol word.
func symbolMask(length int) uint64 {
	if length >= 8 {
		return math.MaxUint64
	}
	return 1<<(8*length) - 1
}

// Compressed reports whether the table's compression switch is on, i.e.
// whether data coded with it must be decoded at all.
func (t *FSSTTable) Compressed() bool { return t.compressed }

// NumSymbols returns the number of symbols (codes 0..NumSymbols-1).
func (t *FSSTTable) NumSymbols() int { return t.n }

// Symbol returns the bytes code stands for, or nil if code is not a symbol.
func (t *FSSTTable) Symbol(code int) []byte {
	if code < 0 || code >= t.n {
		return nil
	}
	var word [8]byte
	binary.LittleEndian.PutUint64(word[:], t.symbols[code])
	return word[:t.lens[code]]
}

// Bytes serializes the table in the 2312-byte layout ParseFSSTTable reads.
func (t *FSSTTable) Bytes() []byte {
	b := make([]byte, FSSTTableSize)
	header := uint64(fsstMagic)<<32 | uint64(t.suffixLim)<<16 | uint64(t.terminator)<<8 | uint64(t.n)
	if t.compressed {
		header |= 1 << fsstSwitchBit
	}
	binary.LittleEndian.PutUint64(b, header)
	for code := range t.n {
		binary.LittleEndian.PutUint64(b[8+8*code:], t.symbols[code])
		b[8+8*t.n+code] = t.lens[code]
	}
	return b
}

// AppendDecoded decodes one FSST-compressed value and appends it to dst.
func (t *FSSTTable) AppendDecoded(dst, src []byte) ([]byte, error) {
	if !t.compressed {
		return append(dst, src...), nil
	}
	start := len(dst)
	buf := growSlack(dst, maxDecodedLen(len(src)))
	end, err := t.decodeValue(buf, start, src, 0)
	if err != nil {
		return dst, err
	}
	return buf[:end], nil
}

// maxDecodedLen bounds the room decodeValue may touch for n code bytes: each
// code yields at most 8 bytes, and the last symbol store writes a whole
// 8-byte word.
func maxDecodedLen(n int) int { return 8*n + 8 }

// FSSTDecodeAll decodes a whole run of FSST-compressed values at once, the
// way a page is decoded: value i is data[offsets[i]:offsets[i+1]]. It returns
// the offsets of the decoded values (starting at 0) and the decoded bytes.
// With the table's switch off, the data is returned as it is: the output then
// aliases data.
func FSSTDecodeAll[O Offset](t *FSSTTable, offsets []O, data []byte) ([]O, []byte, error) {
	if len(offsets) == 0 {
		return []O{}, []byte{}, nil
	}
	first, last := uint64(offsets[0]), uint64(offsets[len(offsets)-1])
	if first > last || last > uint64(len(data)) {
		return nil, nil, corruptf("fsst: compressed values span [%d, %d) of %d bytes", first, last, len(data))
	}
	if err := checkNonDecreasing("fsst", offsets); err != nil {
		return nil, nil, err
	}
	out := make([]O, len(offsets))
	if !t.compressed {
		for i, off := range offsets {
			out[i] = off - offsets[0]
		}
		return out, data[first:last], nil
	}
	// Start with room for a typical ratio and grow as needed: before each
	// value there is always room for its worst case, so the decode loop
	// needs no capacity checks.
	buf := make([]byte, 3*(last-first)+64)
	pos := 0
	for i := 1; i < len(offsets); i++ {
		value := data[offsets[i-1]:offsets[i]]
		if need := pos + maxDecodedLen(len(value)); need > len(buf) {
			grown := make([]byte, max(need, 2*len(buf)))
			copy(grown, buf[:pos])
			buf = grown
		}
		var err error
		if pos, err = t.decodeValue(buf, pos, value, i-1); err != nil {
			return nil, nil, err
		}
		if offsetBytes[O]() == 4 && pos > math.MaxUint32 {
			return nil, nil, corruptf("fsst: %d decoded bytes do not fit 32-bit offsets", pos)
		}
		out[i] = O(pos)
	}
	return out, buf[:pos], nil
}

// decodeValue decodes the compressed value src into dst at pos and returns
// the position after it. dst must have maxDecodedLen(len(src)) bytes of room
// after pos. index numbers the value for error messages.
func (t *FSSTTable) decodeValue(dst []byte, pos int, src []byte, index int) (int, error) {
	symbols, lens := &t.symbols, &t.lens
	for i := 0; i < len(src); i++ {
		code := src[i]
		if code == fsstEscape {
			i++
			if i == len(src) {
				return pos, corruptf("fsst: value %d ends with an escape code and no literal byte", index)
			}
			dst[pos] = src[i]
			pos++
			continue
		}
		length := lens[code]
		if length == 0 {
			return pos, corruptf("fsst: value %d uses code %d but the table has %d symbols", index, code, t.n)
		}
		// Store all 8 bytes of the symbol word and advance by its length:
		// one store instead of a byte loop; the excess is overwritten by
		// the next symbol or lies past the end.
		binary.LittleEndian.PutUint64(dst[pos:], symbols[code])
		pos += int(length)
	}
	return pos, nil
}

// growSlack returns dst with at least extra bytes of length past len(dst);
// their contents are unspecified.
func growSlack(dst []byte, extra int) []byte {
	need := len(dst) + extra
	if cap(dst) >= need {
		return dst[:need]
	}
	grown := make([]byte, need, max(need, 2*cap(dst)))
	copy(grown, dst)
	return grown
}
