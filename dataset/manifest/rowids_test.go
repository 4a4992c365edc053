package manifest

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/pb/tablepb"
)

func u16s(base uint64, offs ...uint16) *tablepb.EncodedU64Array {
	var b []byte
	for _, o := range offs {
		b = binary.LittleEndian.AppendUint16(b, o)
	}
	return &tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U16Array_{U16Array: &tablepb.EncodedU64Array_U16Array{Base: base, Offsets: b}}}
}

func u32s(base uint64, offs ...uint32) *tablepb.EncodedU64Array {
	var b []byte
	for _, o := range offs {
		b = binary.LittleEndian.AppendUint32(b, o)
	}
	return &tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U32Array_{U32Array: &tablepb.EncodedU64Array_U32Array{Base: base, Offsets: b}}}
}

func u64s(values ...uint64) *tablepb.EncodedU64Array {
	var b []byte
	for _, v := range values {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return &tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U64Array_{U64Array: &tablepb.EncodedU64Array_U64Array{Values: b}}}
}

func segRangeOf(start, end uint64) *tablepb.U64Segment {
	return &tablepb.U64Segment{Segment: &tablepb.U64Segment_Range_{Range: &tablepb.U64Segment_Range{Start: start, End: end}}}
}

func segHoles(start, end uint64, holes *tablepb.EncodedU64Array) *tablepb.U64Segment {
	return &tablepb.U64Segment{Segment: &tablepb.U64Segment_RangeWithHoles_{RangeWithHoles: &tablepb.U64Segment_RangeWithHoles{Start: start, End: end, Holes: holes}}}
}

func segBitmap(start, end uint64, bitmap ...byte) *tablepb.U64Segment {
	return &tablepb.U64Segment{Segment: &tablepb.U64Segment_RangeWithBitmap_{RangeWithBitmap: &tablepb.U64Segment_RangeWithBitmap{Start: start, End: end, Bitmap: bitmap}}}
}

func segSorted(a *tablepb.EncodedU64Array) *tablepb.U64Segment {
	return &tablepb.U64Segment{Segment: &tablepb.U64Segment_SortedArray{SortedArray: a}}
}

func segArrayOf(a *tablepb.EncodedU64Array) *tablepb.U64Segment {
	return &tablepb.U64Segment{Segment: &tablepb.U64Segment_Array{Array: a}}
}

func encodeSeq(t *testing.T, segs ...*tablepb.U64Segment) []byte {
	t.Helper()
	b, err := proto.Marshal(&tablepb.RowIdSequence{Segments: segs})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRowIDSequence(t *testing.T) {
	for _, tc := range []struct {
		name string
		segs []*tablepb.U64Segment
		want []uint64
	}{
		{"range", []*tablepb.U64Segment{segRangeOf(10, 14)}, []uint64{10, 11, 12, 13}},
		{"empty range", []*tablepb.U64Segment{segRangeOf(7, 7), segRangeOf(1, 2)}, []uint64{1}},
		{"holes u16", []*tablepb.U64Segment{segHoles(100, 108, u16s(102, 0, 3, 5))}, []uint64{100, 101, 103, 104, 106}},
		{"holes u32 at the ends", []*tablepb.U64Segment{segHoles(0, 6, u32s(0, 0, 5))}, []uint64{1, 2, 3, 4}},
		{"holes u64", []*tablepb.U64Segment{segHoles(50, 53, u64s(51))}, []uint64{50, 52}},
		// Bit i of the range is bitmap[i/8] >> (i%8) & 1: least significant
		// bit first (Lance's code; its proto comment says otherwise).
		{"bitmap LSB first", []*tablepb.U64Segment{segBitmap(10, 20, 0b0000_0101, 0b10)}, []uint64{10, 12, 19}},
		{"bitmap over words", []*tablepb.U64Segment{segBitmap(0, 130,
			0xff, 0, 0, 0, 0, 0, 0, 0x80, 0x01, 0, 0, 0, 0, 0, 0, 0, 0x02, 0xff)},
			[]uint64{0, 1, 2, 3, 4, 5, 6, 7, 63, 64, 129}},
		{"sorted u16", []*tablepb.U64Segment{segSorted(u16s(1000, 0, 7, 65535))}, []uint64{1000, 1007, 66535}},
		{"sorted u32", []*tablepb.U64Segment{segSorted(u32s(1<<40, 1, 1<<31))}, []uint64{1<<40 + 1, 1<<40 + 1<<31}},
		{"sorted u64", []*tablepb.U64Segment{segSorted(u64s(3, 1<<63))}, []uint64{3, 1 << 63}},
		{"unsorted", []*tablepb.U64Segment{segArrayOf(u64s(9, 2, 40))}, []uint64{9, 2, 40}},
		{"unsorted u16", []*tablepb.U64Segment{segArrayOf(u16s(5, 4, 0, 2))}, []uint64{9, 5, 7}},
		{"mixed", []*tablepb.U64Segment{
			segRangeOf(0, 3), segHoles(10, 14, u16s(11, 0)), segBitmap(20, 24, 0b1001),
			segSorted(u32s(30, 0, 5)), segArrayOf(u64s(99, 98)),
		}, []uint64{0, 1, 2, 10, 12, 13, 20, 23, 30, 35, 99, 98}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seq, err := DecodeRowIDSequence(encodeSeq(t, tc.segs...), uint64(len(tc.want)))
			if err != nil {
				t.Fatal(err)
			}
			if seq.Len() != uint64(len(tc.want)) {
				t.Fatalf("len %d, want %d", seq.Len(), len(tc.want))
			}
			for i, want := range tc.want {
				if got := seq.At(uint64(i)); got != want {
					t.Errorf("at(%d) = %d, want %d", i, got, want)
				}
				if got := seq.Offsets(want); !slices.Equal(got, []uint64{uint64(i)}) {
					t.Errorf("offsets(%d) = %v, want [%d]", want, got, i)
				}
			}
			for _, absent := range []uint64{4, 11, 21, 31, 97, 1 << 62} {
				if !slices.Contains(tc.want, absent) {
					if got := seq.Offsets(absent); len(got) != 0 {
						t.Errorf("offsets(%d) = %v for an absent id", absent, got)
					}
				}
			}
		})
	}
}

func TestRowIDSequenceCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		data     []byte
		physical uint64
	}{
		{"not protobuf", []byte{0xff, 0xff}, 1},
		{"too few ids", encodeSeq(t, segRangeOf(0, 3)), 4},
		{"too many ids", encodeSeq(t, segRangeOf(0, 3)), 2},
		{"huge range", encodeSeq(t, segRangeOf(0, 1<<63)), 10},
		{"overflowing total", encodeSeq(t, segRangeOf(0, 1<<63), segRangeOf(0, 1<<63), segRangeOf(0, 2)), 2},
		{"range backwards", encodeSeq(t, segRangeOf(5, 3)), 2},
		{"no segment kind", encodeSeq(t, &tablepb.U64Segment{}), 0},
		{"no array kind", encodeSeq(t, segSorted(&tablepb.EncodedU64Array{})), 0},
		{"odd u16 bytes", encodeSeq(t, segArrayOf(&tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U16Array_{U16Array: &tablepb.EncodedU64Array_U16Array{Offsets: []byte{1}}}})), 0},
		{"u64 bytes not a multiple of 8", encodeSeq(t, segArrayOf(&tablepb.EncodedU64Array{Array: &tablepb.EncodedU64Array_U64Array_{U64Array: &tablepb.EncodedU64Array_U64Array{Values: make([]byte, 9)}}})), 1},
		{"sorted array unsorted", encodeSeq(t, segSorted(u64s(5, 4))), 2},
		{"sorted array repeats", encodeSeq(t, segSorted(u64s(5, 5))), 2},
		{"holes unsorted", encodeSeq(t, segHoles(0, 10, u64s(5, 4))), 8},
		{"hole outside range", encodeSeq(t, segHoles(0, 10, u64s(10))), 9},
		{"holes missing", encodeSeq(t, segHoles(0, 10, nil)), 10},
		{"bitmap too short", encodeSeq(t, segBitmap(0, 17, 0xff, 0xff)), 16},
		{"bitmap huge range", encodeSeq(t, segBitmap(0, 1<<62, 0xff)), 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := DecodeRowIDSequence(tc.data, tc.physical); !errors.Is(err, lancer.ErrCorrupt) {
				t.Errorf("err = %v, want ErrCorrupt", err)
			}
		})
	}
}
