package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lancerdb/lancer"
)

func le32(values ...uint32) []byte {
	var b []byte
	for _, v := range values {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func le64(values ...uint64) []byte {
	var b []byte
	for _, v := range values {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func cat(parts ...[]byte) []byte { return slices.Concat(parts...) }

// Values "a", "bc", "" in a 32-bit binary chunk: four offsets from the chunk
// start (16, 17, 19, 19), the bytes "abc", then one 0x48 to reach 20 bytes.
var binaryChunk32 = cat(le32(16, 17, 19, 19), []byte("abc"), []byte{0x48})

func TestBinaryChunkGolden(t *testing.T) {
	got, err := EncodeBinaryChunk(nil, []uint32{0, 1, 3, 3}, []byte("abc"))
	if err != nil || !bytes.Equal(got, binaryChunk32) {
		t.Fatalf("encode: % x, %v", got, err)
	}
	offsets, data, err := DecodeBinaryChunk[uint32](binaryChunk32, 3)
	if err != nil || !slices.Equal(offsets, []uint32{0, 1, 3, 3}) || string(data) != "abc" {
		t.Fatalf("decode: %v %q %v", offsets, data, err)
	}
	// 64-bit: offsets 32, 33, 35, 35, then "abc" and five pad bytes.
	chunk64 := cat(le64(32, 33, 35, 35), []byte("abc"), bytes.Repeat([]byte{0x48}, 5))
	got, err = EncodeBinaryChunk(nil, []uint64{10, 11, 13, 13}, []byte("0123456789abc"))
	if err != nil || !bytes.Equal(got, chunk64) {
		t.Fatalf("encode 64: % x, %v", got, err)
	}
	offsets64, data, err := DecodeBinaryChunk[uint64](chunk64, 3)
	if err != nil || !slices.Equal(offsets64, []uint64{0, 1, 3, 3}) || string(data) != "abc" {
		t.Fatalf("decode 64: %v %q %v", offsets64, data, err)
	}
	// Zero values: the single offset points just past itself.
	empty, err := EncodeBinaryChunk(nil, []uint32{0}, nil)
	if err != nil || !bytes.Equal(empty, le32(4)) {
		t.Fatalf("empty chunk: % x %v", empty, err)
	}
}

func TestBinaryChunkCorrupt(t *testing.T) {
	for name, tc := range map[string]struct {
		chunk []byte
		n     int
	}{
		"too short for offsets":   {binaryChunk32[:8], 3},
		"bytes overlap offsets":   {cat(le32(4, 17, 19, 19), []byte("abcd")), 3},
		"last offset past end":    {cat(le32(16, 17, 19, 40), []byte("abcd")), 3},
		"offsets go backwards":    {cat(le32(16, 18, 17, 19), []byte("abcd")), 3},
		"huge n":                  {binaryChunk32, 1 << 40},
		"largest n":               {binaryChunk32, math.MaxInt},
		"n larger than the chunk": {binaryChunk32, 5},
	} {
		if _, _, err := DecodeBinaryChunk[uint32](tc.chunk, tc.n); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := EncodeBinaryChunk(nil, []uint32{2, 1}, []byte("abc")); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("encode backwards offsets: %v", err)
	}
}

func TestVariableBlockGolden(t *testing.T) {
	block32 := cat(le32(32, 24, 0, 1, 3, 3), []byte("abc"))
	block64 := cat(le64(64, 48, 0, 1, 3, 3), []byte("abc"))
	// The older form: offset width byte, value count, then S (here 9 + 16).
	old32 := cat([]byte{32}, le32(3, 25, 0, 1, 3, 3), []byte("abc"))
	old64 := cat([]byte{64}, le64(3, 49, 0, 1, 3, 3), []byte("abc"))
	for name, tc := range map[string]struct {
		src  []byte
		bits int
	}{
		"32": {block32, 32}, "64": {block64, 64}, "old 32": {old32, 32}, "old 64": {old64, 64},
	} {
		block, err := DecodeVariableBlock(tc.src)
		if err != nil || block.BitsPerOffset != tc.bits || block.Len() != 3 ||
			!slices.Equal(block.Offsets, []uint64{0, 1, 3, 3}) || string(block.Data) != "abc" {
			t.Errorf("%s: %+v %v", name, block, err)
		}
	}
	got, err := EncodeVariableBlock(nil, []uint32{0, 1, 3, 3}, []byte("abc"))
	if err != nil || !bytes.Equal(got, block32) {
		t.Errorf("encode 32: % x %v", got, err)
	}
	got, err = EncodeVariableBlock(nil, []uint64{5, 6, 8, 8}, []byte("xxxxxabc"))
	if err != nil || !bytes.Equal(got, block64) {
		t.Errorf("encode 64: % x %v", got, err)
	}
}

func TestVariableBlockCorrupt(t *testing.T) {
	for name, src := range map[string][]byte{
		"short":               {32, 0, 0},
		"unknown width":       cat(le32(16, 12, 0), []byte("x")),
		"S before offsets":    cat(le32(32, 4, 0, 1), []byte("a")),
		"S past end":          cat(le32(32, 100, 0, 1), []byte("a")),
		"S splits an offset":  cat(le32(32, 14, 0, 1), []byte("ab")),
		"no offsets":          cat(le32(32, 8)),
		"offset past bytes":   cat(le32(32, 16, 0, 9), []byte("a")),
		"offsets backwards":   cat(le32(32, 20, 0, 2, 1), []byte("ab")),
		"old count disagrees": cat([]byte{32}, le32(7, 17, 0, 1), []byte("a")),
		"old unknown width":   cat([]byte{16}, le32(1, 17, 0, 1), []byte("a")),
		"old 64 truncated":    {64, 1, 0, 0, 0, 0, 0, 0, 0},
		"64 header truncated": le64(64),
		"64 huge S":           cat(le64(64, 1<<63, 0)),
		"first offset > last": cat(le32(32, 16, 2, 1), []byte("ab")),
	} {
		if _, err := DecodeVariableBlock(src); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

func TestVariableRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	for _, n := range []int{0, 1, 2, 7, 100, 1000} {
		offsets := []uint32{0}
		var data []byte
		for range n {
			value := make([]byte, rng.IntN(20))
			for i := range value {
				value[i] = byte(rng.Uint32())
			}
			data = append(data, value...)
			offsets = append(offsets, uint32(len(data)))
		}
		chunk, err := EncodeBinaryChunk(nil, offsets, data)
		if err != nil {
			t.Fatal(err)
		}
		gotOffsets, gotData, err := DecodeBinaryChunk[uint32](chunk, n)
		if err != nil || !slices.Equal(gotOffsets, offsets) || !bytes.Equal(gotData, data) {
			t.Fatalf("binary chunk n=%d: %v", n, err)
		}
		block, err := EncodeVariableBlock(nil, offsets, data)
		if err != nil {
			t.Fatal(err)
		}
		decoded, err := DecodeVariableBlock(block)
		if err != nil || decoded.Len() != n || !bytes.Equal(decoded.Data, data) {
			t.Fatalf("variable block n=%d: %v", n, err)
		}
	}
}
