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

// roundTripCounts are the value counts the property tests use besides a
// sweep: around block boundaries and the raw/packed tail thresholds.
var roundTripCounts = []int{0, 1, 2, 63, 64, 65, 100, 511, 512, 513, 1000, 1023, 1024, 1025,
	2047, 2048, 2049, 3000, 4096, 4999, 5000}

// randomValues returns n values whose widths vary per 1024-value block (and
// are sometimes all zero), so every block of InlineBitpacking gets its own W.
func randomValues[T Word](rng *rand.Rand, n int) []T {
	t := wordBits[T]()
	values := make([]T, n)
	for start := 0; start < n; start += BlockLen {
		width := rng.IntN(t + 1)
		for i := start; i < min(start+BlockLen, n); i++ {
			v := rng.Uint64()
			if width < 64 {
				v &= 1<<width - 1
			}
			values[i] = T(v)
		}
	}
	return values
}

func checkInlineRoundTrip[T Word](t *testing.T, rng *rand.Rand, n int) {
	values := randomValues[T](rng, n)
	encoded := EncodeInlineBitpacked(nil, values)
	prefix := []T{7} // decoders append; existing contents must survive
	got, err := DecodeInlineBitpacked(prefix, encoded, n)
	if err != nil {
		t.Fatalf("T=%d n=%d: %v", wordBits[T](), n, err)
	}
	if got[0] != 7 || !slices.Equal(got[1:], values) {
		t.Fatalf("T=%d n=%d: round trip differs", wordBits[T](), n)
	}
}

func TestInlineBitpackingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for n := 0; n <= 5000; n += 7 {
		checkInlineRoundTrip[uint8](t, rng, n)
		checkInlineRoundTrip[uint16](t, rng, n)
		checkInlineRoundTrip[uint32](t, rng, n)
		checkInlineRoundTrip[uint64](t, rng, n)
	}
	for _, n := range roundTripCounts {
		checkInlineRoundTrip[uint8](t, rng, n)
		checkInlineRoundTrip[uint16](t, rng, n)
		checkInlineRoundTrip[uint32](t, rng, n)
		checkInlineRoundTrip[uint64](t, rng, n)
	}
}

// TestInlineBitpackingGolden checks one block by hand: values [1, 0, 1] as
// u16 have W = 1, so the block is the width word 1 then 1024/16 = 64 words;
// value 0 is lane 0 row 0 (word 0 bit 0) and value 2 is lane 2 row 0.
func TestInlineBitpackingGolden(t *testing.T) {
	want := make([]byte, 2+128)
	want[0] = 1   // width word
	want[2] = 1   // word 0: value 0
	want[2+4] = 1 // word 2: value 2
	got := EncodeInlineBitpacked(nil, []uint16{1, 0, 1})
	if !bytes.Equal(got, want) {
		t.Fatalf("got % x\nwant % x", got, want)
	}
	// An all-zero block is only its width word.
	if got := EncodeInlineBitpacked(nil, make([]uint32, 1500)); !bytes.Equal(got, make([]byte, 8)) {
		t.Fatalf("zeros: got % x", got)
	}
}

func TestInlineBitpackingCorrupt(t *testing.T) {
	valid := EncodeInlineBitpacked(nil, []uint32{5, 6, 7})
	tooWide := slices.Clone(valid)
	binary.LittleEndian.PutUint32(tooWide, 33)
	for name, tc := range map[string]struct {
		src []byte
		n   int
	}{
		"empty for values":    {nil, 3},
		"width above T":       {tooWide, 3},
		"truncated block":     {valid[:len(valid)-1], 3},
		"trailing bytes":      {append(slices.Clone(valid), 0), 3},
		"second block absent": {valid, 1025},
		"huge n tiny input":   {valid, 1 << 40},
		"largest n":           {valid, math.MaxInt},
	} {
		if _, err := DecodeInlineBitpacked[uint32](nil, tc.src, tc.n); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	// A failed decode hands back dst as it was, even after decoding blocks.
	prefix := []uint32{9}
	got, err := DecodeInlineBitpacked(prefix, append(slices.Clone(valid), 0, 0, 0, 0), 3)
	if err == nil || !slices.Equal(got, prefix) {
		t.Errorf("failed decode returned %v, %v; want the prefix back", got, err)
	}
	if _, err := DecodeInlineBitpacked[uint32](nil, valid, -1); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("negative n: got %v", err)
	}
}

func checkOutOfLineRoundTrip[T Word](t *testing.T, rng *rand.Rand) {
	bitsT := wordBits[T]()
	for width := 0; width <= bitsT; width++ {
		for _, n := range roundTripCounts {
			values := make([]T, n)
			for i := range values {
				v := rng.Uint64()
				if width < 64 {
					v &= 1<<width - 1
				}
				values[i] = T(v)
			}
			encoded, err := EncodeOutOfLineBitpacked(nil, values, width)
			if err != nil {
				t.Fatalf("T=%d W=%d n=%d: %v", bitsT, width, n, err)
			}
			// The size tells which tail form the writer chose.
			whole, r := n/BlockLen, n%BlockLen
			size := whole * 128 * width
			if r > 0 {
				if width*(BlockLen-r) < (bitsT-width)*r {
					size += 128 * width
				} else {
					size += r * bitsT / 8
				}
			}
			if len(encoded) != size {
				t.Fatalf("T=%d W=%d n=%d: %d bytes, want %d", bitsT, width, n, len(encoded), size)
			}
			got, err := DecodeOutOfLineBitpacked[T](nil, encoded, width, n)
			if err != nil {
				t.Fatalf("T=%d W=%d n=%d: decode: %v", bitsT, width, n, err)
			}
			if !slices.Equal(got, values) {
				t.Fatalf("T=%d W=%d n=%d: round trip differs", bitsT, width, n)
			}
		}
	}
}

func TestOutOfLineBitpackingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	checkOutOfLineRoundTrip[uint8](t, rng)
	checkOutOfLineRoundTrip[uint16](t, rng)
	checkOutOfLineRoundTrip[uint32](t, rng)
	checkOutOfLineRoundTrip[uint64](t, rng)
}

// TestOutOfLineTieIsRaw: with T=16, W=1 and 64 leftover values both tail
// forms take 128 bytes; Lance writes (and reads) the raw form.
func TestOutOfLineTieIsRaw(t *testing.T) {
	values := make([]uint16, 64)
	for i := range values {
		values[i] = uint16(i % 2)
	}
	encoded, err := EncodeOutOfLineBitpacked(nil, values, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := appendWords(nil, values)
	if !bytes.Equal(encoded, want) {
		t.Fatalf("tie not written raw: % x", encoded[:8])
	}
	got, err := DecodeOutOfLineBitpacked[uint16](nil, encoded, 1, 64)
	if err != nil || !slices.Equal(got, values) {
		t.Fatalf("decode tie: %v, %v", got, err)
	}
}

func TestOutOfLineCorrupt(t *testing.T) {
	values := make([]uint32, 1500)
	for i := range values {
		values[i] = uint32(i)
	}
	encoded, err := EncodeOutOfLineBitpacked(nil, values, 11)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		src      []byte
		width, n int
	}{
		"short":         {encoded[:len(encoded)-4], 11, 1500},
		"long":          {append(slices.Clone(encoded), 0, 0, 0, 0), 11, 1500},
		"width too big": {encoded, 40, 1500},
		"wrong n":       {encoded, 11, 1},
	} {
		if _, err := DecodeOutOfLineBitpacked[uint32](nil, tc.src, tc.width, tc.n); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := DecodeOutOfLineBitpacked[uint32](nil, nil, 0, math.MaxInt); err == nil {
		t.Errorf("largest n: no error")
	}
	if _, err := EncodeOutOfLineBitpacked(nil, values, 5); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("values wider than width: got %v", err)
	}
}

func TestFlat(t *testing.T) {
	src := []byte{1, 0, 2, 0, 0xff, 0xff}
	got, err := DecodeFlat([]uint16{7}, src, 3)
	if err != nil || !slices.Equal(got, []uint16{7, 1, 2, 0xffff}) {
		t.Fatalf("DecodeFlat: %v %v", got, err)
	}
	if back := EncodeFlat(nil, got[1:]); !bytes.Equal(back, src) {
		t.Fatalf("EncodeFlat: % x", back)
	}
	for _, n := range []int{2, 4, 1 << 40} {
		if _, err := DecodeFlat[uint16](nil, src, n); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("n=%d: got %v, want ErrCorrupt", n, err)
		}
	}
	if _, err := DecodeFlat[uint32](nil, src, 1); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("ragged: got %v", err)
	}
}
