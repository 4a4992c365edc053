package scalarindex

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
)

// RowSet is a set of 64-bit row ids or row addresses, kept as Lance's
// RowIdTreeMap keeps them: by the high 32 bits (the fragment id of an
// address), a 32-bit Roaring bitmap of the low 32 bits each. A nil
// *RowSet is the empty set. RowSets are not safe for concurrent change.
type RowSet struct {
	parts map[uint32]*roaring.Bitmap
	// full holds the high halves with every low half (Lance's "full
	// fragment"), kept apart so that a few bytes cannot claim 2^32 values
	// in memory; they have no entry in parts.
	full map[uint32]bool
}

// NewRowSet returns an empty set.
func NewRowSet() *RowSet {
	return &RowSet{parts: map[uint32]*roaring.Bitmap{}, full: map[uint32]bool{}}
}

// Add adds one value.
func (s *RowSet) Add(v uint64) {
	hi := uint32(v >> 32)
	if s.full[hi] {
		return
	}
	bm := s.parts[hi]
	if bm == nil {
		bm = roaring.New()
		s.parts[hi] = bm
	}
	bm.Add(uint32(v))
}

// Contains reports whether v is in the set.
func (s *RowSet) Contains(v uint64) bool {
	if s == nil {
		return false
	}
	hi := uint32(v >> 32)
	if s.full[hi] {
		return true
	}
	bm := s.parts[hi]
	return bm != nil && bm.Contains(uint32(v))
}

// Part returns the low 32 bits of the values whose high 32 bits are hi
// (the row offsets of fragment hi, for addresses): full reports that every
// low half is in the set (bm is then nil); otherwise bm is nil when there
// are none. The caller must not change bm.
func (s *RowSet) Part(hi uint32) (bm *roaring.Bitmap, full bool) {
	if s == nil {
		return nil, false
	}
	return s.parts[hi], s.full[hi]
}

// His returns the high halves present, ascending.
func (s *RowSet) His() []uint32 {
	if s == nil {
		return nil
	}
	his := slices.Collect(maps.Keys(s.parts))
	for hi := range s.full {
		his = append(his, hi)
	}
	slices.Sort(his)
	return his
}

// DropHi removes the values whose high 32 bits are hi.
func (s *RowSet) DropHi(hi uint32) {
	delete(s.parts, hi)
	delete(s.full, hi)
}

// Len returns the number of values.
func (s *RowSet) Len() uint64 {
	if s == nil {
		return 0
	}
	n := uint64(len(s.full)) << 32
	for _, bm := range s.parts {
		n += bm.GetCardinality()
	}
	return n
}

// Or adds every value of o to s.
func (s *RowSet) Or(o *RowSet) {
	if o == nil {
		return
	}
	for hi := range o.full {
		s.full[hi] = true
		delete(s.parts, hi)
	}
	for hi, bm := range o.parts {
		switch mine := s.parts[hi]; {
		case s.full[hi]:
		case mine != nil:
			mine.Or(bm)
		default:
			s.parts[hi] = bm.Clone()
		}
	}
}

// And keeps in s only the values also in o (nil: none).
func (s *RowSet) And(o *RowSet) {
	for hi := range s.full {
		other, full := o.Part(hi)
		switch {
		case full:
		case other != nil:
			delete(s.full, hi)
			s.parts[hi] = other.Clone()
		default:
			delete(s.full, hi)
		}
	}
	for hi, bm := range s.parts {
		other, full := o.Part(hi)
		if full {
			continue
		}
		if other == nil {
			delete(s.parts, hi)
			continue
		}
		bm.And(other)
		if bm.IsEmpty() {
			delete(s.parts, hi)
		}
	}
}

// Clone returns a copy.
func (s *RowSet) Clone() *RowSet {
	out := NewRowSet()
	out.Or(s)
	return out
}

// maxRowSetEntries bounds the high halves one serialized set may name:
// a fragment id each for row addresses, which no dataset has so many of.
const maxRowSetEntries = 1 << 20

// DecodeRowSet decodes a RowIdTreeMap as Lance serializes it (invariant 6
// of the package doc): a u32 count, then per entry a u32 high half and a
// u32 byte length, 0 meaning every low half (a whole fragment), else that
// many bytes of portable Roaring bitmap. All little-endian. Malformed
// bytes are an error wrapping lancer.ErrCorrupt; the bitmaps' sizes are
// bounded by the input's length.
func DecodeRowSet(data []byte) (*RowSet, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("row set of %d bytes: no entry count: %w", len(data), lancer.ErrCorrupt)
	}
	n := binary.LittleEndian.Uint32(data)
	rest := data[4:]
	if n > maxRowSetEntries || uint64(n)*8 > uint64(len(rest)) {
		return nil, fmt.Errorf("row set: %d entries do not fit %d bytes: %w", n, len(rest), lancer.ErrCorrupt)
	}
	s := NewRowSet()
	for i := uint32(0); i < n; i++ {
		if len(rest) < 8 {
			return nil, fmt.Errorf("row set: entry %d of %d cut short: %w", i, n, lancer.ErrCorrupt)
		}
		hi := binary.LittleEndian.Uint32(rest)
		size := binary.LittleEndian.Uint32(rest[4:])
		rest = rest[8:]
		if _, dup := s.parts[hi]; dup || s.full[hi] {
			return nil, fmt.Errorf("row set: entry %d repeats high half %d: %w", i, hi, lancer.ErrCorrupt)
		}
		if size == 0 {
			s.full[hi] = true
			continue
		}
		if uint64(size) > uint64(len(rest)) {
			return nil, fmt.Errorf("row set: entry %d: bitmap of %d bytes overruns the %d left: %w", i, size, len(rest), lancer.ErrCorrupt)
		}
		bm, err := manifest.DecodeRoaring(rest[:size])
		if err != nil {
			return nil, fmt.Errorf("row set: entry %d: %w", i, err)
		}
		rest = rest[size:]
		if !bm.IsEmpty() {
			s.parts[hi] = bm
		}
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("row set: %d trailing bytes after %d entries: %w", len(rest), n, lancer.ErrCorrupt)
	}
	return s, nil
}

// Encode serializes the set as DecodeRowSet reads it.
func (s *RowSet) Encode() ([]byte, error) {
	his := s.His()
	out := binary.LittleEndian.AppendUint32(nil, uint32(len(his)))
	for _, hi := range his {
		if s.full[hi] {
			out = binary.LittleEndian.AppendUint32(out, hi)
			out = binary.LittleEndian.AppendUint32(out, 0)
			continue
		}
		bm := s.parts[hi]
		bm.RunOptimize()
		b, err := bm.ToBytes()
		if err != nil {
			return nil, err
		}
		out = binary.LittleEndian.AppendUint32(out, hi)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out, nil
}
