package structural

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/internal/codec"
	"github.com/lancerdb/lancer/internal/pb/enc21pb"
)

var (
	allValidItem = enc21pb.RepDefLayer_REPDEF_ALL_VALID_ITEM
	nullableItem = enc21pb.RepDefLayer_REPDEF_NULLABLE_ITEM
	nullAndEmpty = enc21pb.RepDefLayer_REPDEF_NULL_AND_EMPTY_LIST
	allValidList = enc21pb.RepDefLayer_REPDEF_ALL_VALID_LIST
)

func flatEnc(bits uint64) *enc21pb.CompressiveEncoding {
	return &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Flat{Flat: &enc21pb.Flat{BitsPerValue: bits}}}
}

// testMiniBlock describes a mini-block page of int32 values for the test
// builder: the items' levels (nil: none), the values of the visible items,
// and how many values go in each chunk.
type testMiniBlock struct {
	rep, def    []uint16
	layers      []enc21pb.RepDefLayer
	values      []int32
	chunkValues int
	large       bool
}

// build writes the page the way Lance lays it out (docs/spec/lance-format.md §8.4): Flat{32}
// values, Flat{16} levels, invisible items after a chunk's last value in
// the next chunk, and a repetition index when there are rep levels.
func (m testMiniBlock) build(t testing.TB) (*enc21pb.MiniBlockLayout, [][]byte) {
	t.Helper()
	lay, err := newRepDefLayout(m.layers)
	if err != nil {
		t.Fatal(err)
	}
	maxVisible := lay.MaxVisible
	numItems := len(m.values)
	if m.rep != nil {
		numItems = len(m.rep)
	} else if m.def != nil {
		numItems = len(m.def)
	}
	var meta, data, repIndex []byte
	item, value := 0, 0
	for value < len(m.values) {
		n := min(m.chunkValues, len(m.values)-value)
		last := value+n == len(m.values)
		// The chunk's levels end with its last value's, or with the page.
		end := item
		for seen := 0; end < numItems && (seen < n || last); end++ {
			if m.def == nil || m.def[end] <= maxVisible {
				seen++
			}
		}
		chunk := binary.LittleEndian.AppendUint16(nil, 0)
		levels := 0
		if m.rep != nil || m.def != nil {
			levels = end - item
		}
		binary.LittleEndian.PutUint16(chunk, uint16(levels))
		var parts [][]byte
		if m.rep != nil {
			parts = append(parts, wordsAsBytes(m.rep[item:end]))
		}
		if m.def != nil {
			parts = append(parts, wordsAsBytes(m.def[item:end]))
		}
		parts = append(parts, wordsAsBytes(toUint32(m.values[value:value+n])))
		for i, p := range parts {
			if i == len(parts)-1 && m.large {
				chunk = binary.LittleEndian.AppendUint32(chunk, uint32(len(p)))
			} else {
				chunk = binary.LittleEndian.AppendUint16(chunk, uint16(len(p)))
			}
		}
		for _, p := range parts {
			chunk = padTo8(chunk, 0xFE)
			chunk = append(chunk, p...)
		}
		chunk = padTo8(chunk, 0)
		log := 0
		if !last {
			for 1<<log < n {
				log++
			}
		}
		word := uint32(len(chunk)/8-1)<<4 | uint32(log)
		if m.large {
			meta = binary.LittleEndian.AppendUint32(meta, word)
		} else {
			meta = binary.LittleEndian.AppendUint16(meta, uint16(word))
		}
		data = append(data, chunk...)
		repIndex = binary.LittleEndian.AppendUint64(repIndex, 0)
		repIndex = binary.LittleEndian.AppendUint64(repIndex, 0)
		item, value = end, value+n
	}
	l := &enc21pb.MiniBlockLayout{
		ValueCompression: flatEnc(32),
		Layers:           m.layers,
		NumBuffers:       1,
		NumItems:         uint64(len(m.values)),
		HasLargeChunk:    m.large,
	}
	bufs := [][]byte{meta, data}
	if m.def != nil {
		l.DefCompression = flatEnc(16)
	}
	if m.rep != nil {
		l.RepCompression = flatEnc(16)
		l.RepetitionIndexDepth = 1
		bufs = append(bufs, repIndex)
	}
	return l, bufs
}

func padTo8(b []byte, pad byte) []byte {
	for len(b)%8 != 0 {
		b = append(b, pad)
	}
	return b
}

func toUint32(v []int32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = uint32(x)
	}
	return out
}

// rowsOf counts the rows of a level stream (items without rep levels are
// rows).
func rowsOf(rep []uint16, items int, maxRep uint16) uint64 {
	if rep == nil {
		return uint64(items)
	}
	n := uint64(0)
	for _, r := range rep {
		if r == maxRep {
			n++
		}
	}
	return n
}

func newTestDecoder(mem memory.Allocator, rows uint64, dt arrow.DataType) *pageDecoder {
	return &pageDecoder{Mem: mem, NumRows: rows, ScanType: dt}
}

func miniBlockPage(l *enc21pb.MiniBlockLayout) *enc21pb.PageLayout {
	return &enc21pb.PageLayout{Layout: &enc21pb.PageLayout_MiniBlockLayout{MiniBlockLayout: l}}
}

func TestMiniBlockRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	values := func(n int) []int32 {
		v := make([]int32, n)
		for i := range v {
			v[i] = rng.Int32()
		}
		return v
	}
	// A list<int32?> page of 300 rows cycling through valid lists, null
	// items, null lists and empty lists, so invisible items land on chunk
	// boundaries.
	var listRep, listDef []uint16
	for row := range 300 {
		switch row % 4 {
		case 0: // [v, null, v]
			listRep = append(listRep, 1, 0, 0)
			listDef = append(listDef, 0, 1, 0)
		case 1: // null
			listRep = append(listRep, 1)
			listDef = append(listDef, 2)
		case 2: // []
			listRep = append(listRep, 1)
			listDef = append(listDef, 3)
		case 3: // [v]
			listRep = append(listRep, 1)
			listDef = append(listDef, 0)
		}
	}
	listValues := countVisible(listDef, 1)
	nullDef := make([]uint16, 1000)
	for i := range nullDef {
		if i%7 == 0 {
			nullDef[i] = 1
		}
	}
	cases := []struct {
		name string
		page testMiniBlock
	}{
		{"no levels", testMiniBlock{layers: []enc21pb.RepDefLayer{allValidItem}, values: values(1000), chunkValues: 256}},
		{"one chunk", testMiniBlock{layers: []enc21pb.RepDefLayer{allValidItem}, values: values(3), chunkValues: 256}},
		{"nulls", testMiniBlock{def: nullDef, layers: []enc21pb.RepDefLayer{nullableItem}, values: values(1000), chunkValues: 128}},
		{"large chunks", testMiniBlock{def: nullDef, layers: []enc21pb.RepDefLayer{nullableItem}, values: values(1000), chunkValues: 512, large: true}},
		{"lists", testMiniBlock{rep: listRep, def: listDef, layers: []enc21pb.RepDefLayer{nullableItem, nullAndEmpty}, values: values(listValues), chunkValues: 16}},
		{"lists in large chunks", testMiniBlock{rep: listRep, def: listDef, layers: []enc21pb.RepDefLayer{nullableItem, nullAndEmpty}, values: values(listValues), chunkValues: 64, large: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			l, bufs := tc.page.build(t)
			lay, err := newRepDefLayout(tc.page.layers)
			if err != nil {
				t.Fatal(err)
			}
			rows := rowsOf(tc.page.rep, len(tc.page.values), lay.MaxRep)
			lp, err := newTestDecoder(mem, rows, arrow.PrimitiveTypes.Int32).Decode(miniBlockPage(l), bufs)
			if err != nil {
				t.Fatal(err)
			}
			defer lp.Release()
			if !slices.Equal(lp.rep, tc.page.rep) || !slices.Equal(lp.def, tc.page.def) {
				t.Errorf("levels differ:\nrep %v\nwant %v\ndef %v\nwant %v", lp.rep, tc.page.rep, lp.def, tc.page.def)
			}
			if got := lp.values.(*array.Int32).Int32Values(); !slices.Equal(got, tc.page.values) {
				t.Errorf("values differ: got %d values, want %d", len(got), len(tc.page.values))
			}
		})
	}
}

// TestMiniBlockCorrupt damages a valid page in ways a broken file could and
// checks that each is reported as corruption (never a panic).
func TestMiniBlockCorrupt(t *testing.T) {
	def := make([]uint16, 600)
	for i := range def {
		def[i] = uint16(i % 2)
	}
	base := testMiniBlock{def: def, layers: []enc21pb.RepDefLayer{nullableItem}, values: make([]int32, 600), chunkValues: 256}
	cases := []struct {
		name   string
		damage func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte
	}{
		{"truncated chunk buffer", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			bufs[1] = bufs[1][:len(bufs[1])-8]
			return bufs
		}},
		{"extra chunk bytes", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			bufs[1] = append(bufs[1], make([]byte, 8)...)
			return bufs
		}},
		{"chunk word past the buffer", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			binary.LittleEndian.PutUint16(bufs[0], 0xFFF8)
			return bufs
		}},
		{"odd chunk metadata", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			bufs[0] = bufs[0][:len(bufs[0])-1]
			return bufs
		}},
		{"no chunks", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			bufs[0] = nil
			return bufs
		}},
		{"missing buffer", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			return bufs[:1]
		}},
		{"extra buffer", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			return append(bufs, nil)
		}},
		{"absurd item count", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			l.NumItems = 1 << 40
			return bufs
		}},
		{"item count too small", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			l.NumItems = 100
			return bufs
		}},
		{"level count disagrees with def bytes", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			binary.LittleEndian.PutUint16(bufs[1], 255) // chunk 0 has 256 levels
			return bufs
		}},
		{"def buffer past the chunk", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			binary.LittleEndian.PutUint16(bufs[1][2:], 0xFFFF)
			return bufs
		}},
		{"value buffer too short", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			binary.LittleEndian.PutUint16(bufs[1][4:], 4)
			return bufs
		}},
		{"visible items disagree with values", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			l.Layers = []enc21pb.RepDefLayer{allValidItem, nullAndEmpty} // def 1 now hides items
			return bufs
		}},
		{"def level beyond the layers", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			binary.LittleEndian.PutUint16(bufs[1][8+2:], 9)
			return bufs
		}},
		{"buffer count disagrees with encoding", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			l.NumBuffers = 2
			return bufs
		}},
		{"unknown layer", func(l *enc21pb.MiniBlockLayout, bufs [][]byte) [][]byte {
			l.Layers = []enc21pb.RepDefLayer{99}
			return bufs
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, bufs := base.build(t)
			bufs = tc.damage(l, bufs)
			lp, err := newTestDecoder(memory.NewGoAllocator(), 600, arrow.PrimitiveTypes.Int32).Decode(miniBlockPage(l), bufs)
			if !errors.Is(err, lancer.ErrCorrupt) {
				lp.Release()
				t.Fatalf("got %v, want an error wrapping ErrCorrupt", err)
			}
		})
	}
}

// TestMiniBlockWrongType checks that values of the wrong width for the field
// are refused, not reinterpreted.
func TestMiniBlockWrongType(t *testing.T) {
	l, bufs := testMiniBlock{layers: []enc21pb.RepDefLayer{allValidItem}, values: make([]int32, 10), chunkValues: 8}.build(t)
	for _, dt := range []arrow.DataType{arrow.PrimitiveTypes.Int64, arrow.BinaryTypes.String, arrow.FixedWidthTypes.Boolean} {
		_, err := newTestDecoder(memory.NewGoAllocator(), 10, dt).Decode(miniBlockPage(l), bufs)
		if !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", dt, err)
		}
	}
}

// TestDecodeLevelsWrapped checks the 2.2 rule for chunks of more than 65535
// levels: the u16 num_levels is the count modulo 2^16 and the level block
// tells the rest.
func TestDecodeLevelsWrapped(t *testing.T) {
	const n = 70_000
	levels := make([]uint16, n)
	for i := range levels {
		levels[i] = uint16(i / 1000 % 3)
	}
	ool, err := codec.EncodeOutOfLineBitpacked[uint16](nil, levels, 2)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		enc  *enc21pb.CompressiveEncoding
		buf  []byte
	}{
		{"flat", flatEnc(16), wordsAsBytes(levels)},
		{"rle", &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Rle{Rle: &enc21pb.Rle{
			Values: flatEnc(16), RunLengths: flatEnc(8)}}}, codec.EncodeRLEBlock[uint16](nil, levels)},
		{"inline bit-packing", &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_InlineBitpacking{
			InlineBitpacking: &enc21pb.InlineBitpacking{UncompressedBitsPerValue: 16}}}, codec.EncodeInlineBitpacked[uint16](nil, levels)},
		{"out-of-line bit-packing", &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_OutOfLineBitpacking{
			OutOfLineBitpacking: &enc21pb.OutOfLineBitpacking{UncompressedBitsPerValue: 16, Values: flatEnc(2)}}}, ool},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeLevels(tc.enc, tc.buf, n%(1<<16), true)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, levels) {
				t.Fatalf("got %d levels, want %d", len(got), n)
			}
			// Without the 2.2 rule the count must be exact.
			if _, err := decodeLevels(tc.enc, tc.buf, n%(1<<16), false); !errors.Is(err, lancer.ErrCorrupt) {
				t.Errorf("unwrapped count: got %v, want ErrCorrupt", err)
			}
		})
	}
}

func TestParseChunkMetadata(t *testing.T) {
	words := func(w ...uint16) []byte {
		var b []byte
		for _, x := range w {
			b = binary.LittleEndian.AppendUint16(b, x)
		}
		return b
	}
	cases := []struct {
		name    string
		meta    []byte
		dataLen int
		values  uint64
		want    []miniChunk
		corrupt bool
	}{
		// 0x0a10: (0xa1+1)·8 = 1296 bytes, last chunk (Lance 8 example, docs/spec/lance-format.md §8.4).
		{"spec example", words(0x0a10), 1296, 300, []miniChunk{{Offset: 0, Size: 1296, Values: 300}}, false},
		{"two chunks", words(0x001a, 0x0010), 32, 1500, []miniChunk{{Offset: 0, Size: 16, Values: 1024}, {Offset: 16, Size: 16, Values: 476}}, false},
		{"last chunk log matches", words(0x001a, 0x0018), 32, 1280, []miniChunk{{Offset: 0, Size: 16, Values: 1024}, {Offset: 16, Size: 16, Values: 256}}, false},
		{"last chunk log disagrees", words(0x001a, 0x0018), 32, 1300, nil, true},
		{"chunks hold more than the page", words(0x001a, 0x0010), 32, 1000, nil, true},
		{"chunk past the buffer", words(0x0010), 8, 1, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseChunkMetadata(tc.meta, tc.dataLen, tc.values, false)
			if tc.corrupt {
				if !errors.Is(err, lancer.ErrCorrupt) {
					t.Fatalf("got %v, want ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// singleChunkPage builds a mini-block page of one chunk without levels
// holding n values in the given value buffers.
func singleChunkPage(enc *enc21pb.CompressiveEncoding, n int, bufs ...[]byte) (*enc21pb.PageLayout, [][]byte) {
	chunk := binary.LittleEndian.AppendUint16(nil, 0)
	for _, b := range bufs {
		chunk = binary.LittleEndian.AppendUint16(chunk, uint16(len(b)))
	}
	for _, b := range bufs {
		chunk = padTo8(chunk, 0xFE)
		chunk = append(chunk, b...)
	}
	chunk = padTo8(chunk, 0)
	meta := binary.LittleEndian.AppendUint16(nil, uint16(len(chunk)/8-1)<<4)
	return miniBlockPage(&enc21pb.MiniBlockLayout{
		ValueCompression: enc, Layers: []enc21pb.RepDefLayer{allValidItem},
		NumBuffers: uint64(len(bufs)), NumItems: uint64(n),
	}), [][]byte{meta, chunk}
}

// TestMiniBlockValueEncodings decodes one chunk in each fixed-width value
// encoding, floats bit-packed and run-length encoded as their raw bits.
func TestMiniBlockValueEncodings(t *testing.T) {
	floats := make([]float32, 1000)
	for i := range floats {
		floats[i] = float32(i%7) * 0.5
	}
	bits := make([]uint32, len(floats))
	for i, f := range floats {
		bits[i] = math.Float32bits(f)
	}
	runValues, runLengths := codec.EncodeRLE[uint32](nil, nil, bits)
	split, err := codec.EncodeByteStreamSplit(nil, wordsAsBytes(bits), 4)
	if err != nil {
		t.Fatal(err)
	}
	zstdSplit, err := codec.Compress(codec.CompressionZstd, 0, split)
	if err != nil {
		t.Fatal(err)
	}
	inline := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_InlineBitpacking{
		InlineBitpacking: &enc21pb.InlineBitpacking{UncompressedBitsPerValue: 32}}}
	rle := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_Rle{Rle: &enc21pb.Rle{Values: flatEnc(32), RunLengths: flatEnc(8)}}}
	bss := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_ByteStreamSplit{ByteStreamSplit: &enc21pb.ByteStreamSplit{Values: flatEnc(32)}}}
	zstdBSS := &enc21pb.CompressiveEncoding{Compression: &enc21pb.CompressiveEncoding_General{General: &enc21pb.General{
		Compression: &enc21pb.BufferCompression{Scheme: enc21pb.CompressionScheme_COMPRESSION_ALGORITHM_ZSTD}, Values: bss}}}
	cases := []struct {
		name string
		enc  *enc21pb.CompressiveEncoding
		bufs [][]byte
	}{
		{"flat", flatEnc(32), [][]byte{wordsAsBytes(bits)}},
		{"inline bit-packing", inline, [][]byte{codec.EncodeInlineBitpacked[uint32](nil, bits)}},
		{"rle", rle, [][]byte{runValues, runLengths}},
		{"byte stream split", bss, [][]byte{split}},
		{"zstd byte stream split", zstdBSS, [][]byte{zstdSplit}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			defer mem.AssertSize(t, 0)
			page, bufs := singleChunkPage(tc.enc, len(floats), tc.bufs...)
			lp, err := newTestDecoder(mem, uint64(len(floats)), arrow.PrimitiveTypes.Float32).Decode(page, bufs)
			if err != nil {
				t.Fatal(err)
			}
			defer lp.Release()
			if got := lp.values.(*array.Float32).Float32Values(); !slices.Equal(got, floats) {
				t.Errorf("values differ")
			}
		})
	}
}

// TestMiniBlockBools decodes bools (Flat{1}) across chunks whose values do
// not end on a byte boundary in the page.
func TestMiniBlockBools(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	want := make([]bool, 13)
	for i := range want {
		want[i] = i%3 == 0
	}
	pack := func(v []bool) []byte {
		b := make([]byte, bytesForBits(len(v)))
		for i, x := range v {
			if x {
				b[i/8] |= 1 << (i % 8)
			}
		}
		return b
	}
	chunk1, chunk2 := pack(want[:4]), pack(want[4:])
	// Two chunks: 4 values, then the last 9.
	build := func(vals []byte) []byte {
		c := binary.LittleEndian.AppendUint16(nil, 0)
		c = binary.LittleEndian.AppendUint16(c, uint16(len(vals)))
		c = padTo8(c, 0xFE)
		return padTo8(append(c, vals...), 0)
	}
	c1, c2 := build(chunk1), build(chunk2)
	meta := binary.LittleEndian.AppendUint16(nil, uint16(len(c1)/8-1)<<4|2)
	meta = binary.LittleEndian.AppendUint16(meta, uint16(len(c2)/8-1)<<4)
	page := miniBlockPage(&enc21pb.MiniBlockLayout{ValueCompression: flatEnc(1), Layers: []enc21pb.RepDefLayer{allValidItem},
		NumBuffers: 1, NumItems: uint64(len(want))})
	lp, err := newTestDecoder(mem, uint64(len(want)), arrow.FixedWidthTypes.Boolean).Decode(page, [][]byte{meta, append(c1, c2...)})
	if err != nil {
		t.Fatal(err)
	}
	defer lp.Release()
	b := lp.values.(*array.Boolean)
	for i, w := range want {
		if b.Value(i) != w {
			t.Errorf("value %d = %t, want %t", i, b.Value(i), w)
		}
	}
}
