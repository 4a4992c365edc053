package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/lancerdb/lancer"
)

// handTable builds a serialized table with the given symbols, in the layout
// of §9.7, independently of FSSTTable.Bytes.
func handTable(compressed bool, symbols ...string) []byte {
	b := make([]byte, FSSTTableSize)
	header := uint64(0x46535354)<<32 | uint64(len(symbols))
	if compressed {
		header |= 1 << 24
	}
	binary.LittleEndian.PutUint64(b, header)
	for i, s := range symbols {
		copy(b[8+8*i:], s)
		b[8+8*len(symbols)+i] = byte(len(s))
	}
	return b
}

func TestFSSTPlainTableGolden(t *testing.T) {
	b := NewPlainFSSTTable().Bytes()
	if len(b) != 2312 {
		t.Fatalf("table is %d bytes", len(b))
	}
	if want := []byte{0, 0, 0, 0, 0x54, 0x53, 0x53, 0x46}; !bytes.Equal(b[:8], want) {
		t.Fatalf("header % x, want % x", b[:8], want)
	}
	if slices.ContainsFunc(b[8:], func(x byte) bool { return x != 0 }) {
		t.Fatal("plain table not zero-filled")
	}
	table, err := ParseFSSTTable(b)
	if err != nil || table.Compressed() {
		t.Fatalf("parse plain: %v", err)
	}
	// With the switch off, "compressed" data is the data.
	offsets, data, err := FSSTDecodeAll(table, []uint32{3, 5, 9}, []byte("xxxabcdefghi"))
	if err != nil || !slices.Equal(offsets, []uint32{0, 2, 6}) || string(data) != "abcdef" {
		t.Fatalf("plain decode: %v %q %v", offsets, data, err)
	}
}

func TestFSSTDecodeGolden(t *testing.T) {
	raw := handTable(true, "ab", "xyz", "q", "12345678")
	table, err := ParseFSSTTable(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := table.Bytes(); !bytes.Equal(got, raw) {
		t.Fatal("Bytes differs from the hand-built table")
	}
	// Codes: 0 "ab", escape 'Z', 1 "xyz", 2 "q", 3 "12345678", escape 0xFF.
	compressed := []byte{0, 255, 'Z', 1, 2, 3, 255, 0xFF}
	want := "abZxyzq12345678\xff"
	got, err := table.AppendDecoded([]byte(">"), compressed)
	if err != nil || string(got) != ">"+want {
		t.Fatalf("AppendDecoded: %q %v", got, err)
	}
	offsets, data, err := FSSTDecodeAll(table, []uint64{0, 1, 3, 8}, compressed)
	if err != nil || !slices.Equal(offsets, []uint64{0, 2, 3, 16}) || string(data) != want {
		t.Fatalf("FSSTDecodeAll: %v %q %v", offsets, data, err)
	}
}

func TestFSSTTableCorrupt(t *testing.T) {
	badMagic := handTable(true, "ab")
	badMagic[7] = 'X'
	zeroLen := handTable(true, "ab", "c")
	zeroLen[8+16+1] = 0
	longLen := handTable(true, "ab")
	longLen[8+8] = 9
	for name, b := range map[string][]byte{
		"short":        handTable(true)[:100],
		"long":         append(handTable(true), 0),
		"bad magic":    badMagic,
		"zero length":  zeroLen,
		"length nine":  longLen,
		"empty buffer": nil,
	} {
		if _, err := ParseFSSTTable(b); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

func TestFSSTDecodeCorrupt(t *testing.T) {
	table, err := ParseFSSTTable(handTable(true, "ab"))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		offsets []uint32
		data    []byte
	}{
		"dangling escape":        {[]uint32{0, 2}, []byte{0, 255}},
		"escape across values":   {[]uint32{0, 1, 2}, []byte{255, 'a'}},
		"unknown code":           {[]uint32{0, 1}, []byte{7}},
		"offset past data":       {[]uint32{0, 5}, []byte{0}},
		"offsets going backward": {[]uint32{0, 2, 1, 2}, []byte{0, 0}},
	} {
		if _, _, err := FSSTDecodeAll(table, tc.offsets, tc.data); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := table.AppendDecoded(nil, []byte{0, 255}); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("AppendDecoded dangling escape: %v", err)
	}
}

// sampleStrings returns strings shaped like real column data: e-mail
// addresses, paths and words, with some random bytes.
func sampleStrings(rng *rand.Rand, n int) ([]uint32, []byte) {
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"}
	offsets := []uint32{0}
	var data []byte
	for i := range n {
		s := fmt.Sprintf("user-%d@example.com/path/%d/%s %s", rng.IntN(100000), i,
			words[rng.IntN(len(words))], words[rng.IntN(len(words))])
		if rng.IntN(10) == 0 {
			s += string([]byte{byte(rng.Uint32()), 0xFF, byte(rng.Uint32())})
		}
		data = append(data, s...)
		offsets = append(offsets, uint32(len(data)))
	}
	return offsets, data
}

func TestFSSTEncodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	offsets, data := sampleStrings(rng, 5000)
	table, compressedOffsets, compressed, err := FSSTEncodeAll(offsets, data)
	if err != nil {
		t.Fatal(err)
	}
	if !table.Compressed() || table.NumSymbols() == 0 || table.NumSymbols() > 255 {
		t.Fatalf("table: compressed=%v, %d symbols", table.Compressed(), table.NumSymbols())
	}
	if ratio := float64(len(compressed)) / float64(len(data)); ratio > 0.6 {
		t.Errorf("compression ratio %.2f, expected well below 0.6 for this data", ratio)
	}
	// Through the serialized form, as Lance would read it.
	parsed, err := ParseFSSTTable(table.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	gotOffsets, got, err := FSSTDecodeAll(parsed, compressedOffsets, compressed)
	if err != nil || !slices.Equal(gotOffsets, offsets) || !bytes.Equal(got, data) {
		t.Fatalf("round trip differs: %v", err)
	}
	// Single-value API.
	for i := 1; i < len(offsets); i += 97 {
		value := data[offsets[i-1]:offsets[i]]
		back, err := parsed.AppendDecoded(nil, parsed.AppendEncoded(nil, value))
		if err != nil || !bytes.Equal(back, value) {
			t.Fatalf("value %d: %q, %v", i, back, err)
		}
	}
}

func TestFSSTEncodeSmallInputIsPlain(t *testing.T) {
	offsets := []uint64{0, 5, 11}
	data := []byte("hello world")
	table, outOffsets, out, err := FSSTEncodeAll(offsets, data)
	if err != nil {
		t.Fatal(err)
	}
	if table.Compressed() || !bytes.Equal(table.Bytes()[:8], []byte{0, 0, 0, 0, 0x54, 0x53, 0x53, 0x46}) {
		t.Fatalf("small input: header % x", table.Bytes()[:8])
	}
	if !slices.Equal(outOffsets, offsets) || !bytes.Equal(out, data) {
		t.Fatalf("small input changed: %v %q", outOffsets, out)
	}
}

func TestFSSTTrainEdgeCases(t *testing.T) {
	if table := TrainFSST(nil); table.Compressed() {
		t.Error("empty sample should give a plain table")
	}
	// Every byte value, a long value and empty values: symbols stay valid.
	var all []byte
	for i := range 256 {
		all = append(all, byte(i))
	}
	sample := [][]byte{all, bytes.Repeat([]byte("abcdefghij"), 1000), {}, {0xFF, 0xFF}}
	table := TrainFSST(sample)
	parsed, err := ParseFSSTTable(table.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, value := range sample {
		back, err := parsed.AppendDecoded(nil, table.AppendEncoded(nil, value))
		if err != nil || !bytes.Equal(back, value) {
			t.Fatalf("round trip of %d bytes: %v", len(value), err)
		}
	}
}

func BenchmarkFSSTDecodeAll(b *testing.B) {
	rng := rand.New(rand.NewPCG(63, 64))
	offsets, data := sampleStrings(rng, 20000)
	table, compressedOffsets, compressed, err := FSSTEncodeAll(offsets, data)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := FSSTDecodeAll(table, compressedOffsets, compressed); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFSSTEncodeAll(b *testing.B) {
	rng := rand.New(rand.NewPCG(65, 66))
	offsets, data := sampleStrings(rng, 20000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, _, err := FSSTEncodeAll(offsets, data); err != nil {
			b.Fatal(err)
		}
	}
}

// textColumn returns n values of a text column: captions of 20–200
// characters of words, or small JSON objects.
func textColumn(kind string, n int) ([]uint32, []byte) {
	rng := rand.New(rand.NewPCG(67, 68))
	words := strings.Fields("a an the of in on with at by from over under near small large red blue " +
		"green old new bright dark quiet busy city street river mountain forest beach house garden dog " +
		"cat bird child woman man car boat train bridge tower market crowd light shadow morning evening")
	offsets := []uint32{0}
	var data []byte
	for i := range n {
		var s string
		switch kind {
		case "caption":
			var b strings.Builder
			size := 20 + rng.IntN(181)
			for b.Len() < size {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[rng.IntN(len(words))])
			}
			s = b.String()[:size]
		case "json":
			s = fmt.Sprintf(`{"id":%d,"name":"%s %s","tags":["%s","%s"],"score":%.3f,"active":%v}`, i,
				words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))],
				words[rng.IntN(len(words))], rng.Float64(), rng.IntN(2) == 0)
		}
		data = append(data, s...)
		offsets = append(offsets, uint32(len(data)))
	}
	return offsets, data
}

// TestFSSTTrainQuality pins how well training compresses typical text, so
// that a change to the trainer that loses compression shows. The limits
// are the ratios reached when they were set, plus 2%.
func TestFSSTTrainQuality(t *testing.T) {
	for _, tc := range []struct {
		kind  string
		limit float64
	}{
		{"caption", 0.210}, // 0.221 with the trainer before
		{"json", 0.261},    // 0.264
	} {
		offsets, data := textColumn(tc.kind, 5000)
		_, _, compressed, err := FSSTEncodeAll(offsets, data)
		if err != nil {
			t.Fatal(err)
		}
		ratio := float64(len(compressed)) / float64(len(data))
		t.Logf("%s: %d bytes compress to %d (%.4f)", tc.kind, len(data), len(compressed), ratio)
		if ratio > tc.limit {
			t.Errorf("%s: compressed to %.4f of the input, want at most %.4f", tc.kind, ratio, tc.limit)
		}
	}
}

// BenchmarkTrainFSST times the training of one table on a page's sample
// (16 KiB of captions), which every mini-block text page pays: a large
// part of a small append's CPU.
func BenchmarkTrainFSST(b *testing.B) {
	offsets, data := textColumn("caption", 10000)
	sample := fsstSample(offsets, data)
	for b.Loop() {
		TrainFSST(sample)
	}
}
