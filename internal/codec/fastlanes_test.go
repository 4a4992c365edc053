package codec

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/lancerdb/lancer"
)

// referencePack is the spec's §9.4 pseudo-code transcribed literally, one bit
// position at a time, so that the fast Pack/Unpack are checked against an
// independent statement of the layout rather than against themselves.
func referencePack(t, width int, values []uint64) []uint64 {
	lanes := 1024 / t
	out := make([]uint64, lanes*width)
	if width == 0 {
		return out
	}
	order := [8]int{0, 4, 2, 6, 1, 5, 3, 7}
	mask := uint64(1)<<width - 1
	if width == 64 {
		mask = ^uint64(0)
	}
	wordMask := uint64(1)<<t - 1
	if t == 64 {
		wordMask = ^uint64(0)
	}
	for lane := range lanes {
		for row := range t {
			idx := order[row/8]*16 + (row%8)*128 + lane
			bit := row * width
			j, sh := bit/t, bit%t
			v := values[idx] & mask
			out[lanes*j+lane] |= (v << sh) & wordMask
			if sh+width > t {
				out[lanes*(j+1)+lane] |= v >> (t - sh)
			}
		}
	}
	return out
}

func randomBlock(rng *rand.Rand, t, width int) []uint64 {
	values := make([]uint64, 1024)
	for i := range values {
		v := rng.Uint64()
		if width < 64 {
			v &= uint64(1)<<width - 1
		}
		values[i] = v
	}
	return values
}

func toWords[T Word](values []uint64) []T {
	out := make([]T, len(values))
	for i, v := range values {
		out[i] = T(v)
	}
	return out
}

func checkPackAgainstReference[T Word](t *testing.T, rng *rand.Rand) {
	bitsT := wordBits[T]()
	for width := 0; width <= bitsT; width++ {
		values := randomBlock(rng, bitsT, width)
		want := toWords[T](referencePack(bitsT, width, values))
		got := make([]T, PackedWords[T](width))
		if err := Pack(width, toWords[T](values), got); err != nil {
			t.Fatalf("T=%d W=%d: Pack: %v", bitsT, width, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("T=%d W=%d: Pack differs from the spec formula", bitsT, width)
		}
		back := make([]T, 1024)
		if err := Unpack(width, got, back); err != nil {
			t.Fatalf("T=%d W=%d: Unpack: %v", bitsT, width, err)
		}
		if !slices.Equal(back, toWords[T](values)) {
			t.Fatalf("T=%d W=%d: Unpack(Pack(v)) != v", bitsT, width)
		}
	}
}

func TestPackMatchesSpecFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	checkPackAgainstReference[uint8](t, rng)
	checkPackAgainstReference[uint16](t, rng)
	checkPackAgainstReference[uint32](t, rng)
	checkPackAgainstReference[uint64](t, rng)
}

// TestPackHandComputed pins a few words worked out by hand from the layout:
// with T=32 there are 32 lanes; lane l, row r holds value
// FL_ORDER[r/8]*16 + (r%8)*128 + l, and row r sits at bit r·W of the lane.
func TestPackHandComputed(t *testing.T) {
	// W=1, only value 0 set: lane 0, row 0 → word 0, bit 0.
	values := make([]uint32, 1024)
	values[0] = 1
	packed := make([]uint32, 32)
	if err := Pack(1, values, packed); err != nil {
		t.Fatal(err)
	}
	if packed[0] != 1 || slices.ContainsFunc(packed[1:], func(w uint32) bool { return w != 0 }) {
		t.Fatalf("W=1 value 0: got %x", packed)
	}
	// W=1, value 128+5 = row 1 of lane 5 → word 5, bit 1.
	clear(values)
	values[133] = 1
	if err := Pack(1, values, packed); err != nil {
		t.Fatal(err)
	}
	if packed[5] != 2 {
		t.Fatalf("W=1 value 133: word 5 = %#x, want 0x2", packed[5])
	}
	// W=1, value 64 = FL_ORDER[1]*16 → row 8 of lane 0 → word 0, bit 8.
	clear(values)
	values[64] = 1
	if err := Pack(1, values, packed); err != nil {
		t.Fatal(err)
	}
	if packed[0] != 0x100 {
		t.Fatalf("W=1 value 64: word 0 = %#x, want 0x100", packed[0])
	}
	// W=3, value 7 at row 10 of lane 2 (value 4*16+2*128+2 = 322): bit 30,
	// straddling words 2 (bits 30,31) and 32+2 (bit 0).
	clear(values)
	values[322] = 7
	packed3 := make([]uint32, 96)
	if err := Pack(3, values, packed3); err != nil {
		t.Fatal(err)
	}
	if packed3[2] != 0xC0000000 || packed3[34] != 1 {
		t.Fatalf("W=3 straddle: words 2,34 = %#x,%#x want 0xc0000000,0x1", packed3[2], packed3[34])
	}
}

func TestUnpackRejectsBadInput(t *testing.T) {
	out := make([]uint32, 1024)
	if err := Unpack(7, make([]uint32, 10), out); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("short packed: got %v", err)
	}
	if err := Unpack(33, make([]uint32, 33*32), out); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("width 33: got %v", err)
	}
	if err := Unpack(-1, nil, out); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("width -1: got %v", err)
	}
	if err := Unpack(1, make([]uint32, 32), out[:10]); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Fatalf("short out: got %v", err)
	}
	if err := Pack(9, make([]uint8, 1024), make([]uint8, 9*128)); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Fatalf("pack width 9 of u8: got %v", err)
	}
}

func TestBitWidth(t *testing.T) {
	for _, tc := range []struct {
		values []uint16
		want   int
	}{
		{nil, 0},
		{[]uint16{0, 0}, 0},
		{[]uint16{1}, 1},
		{[]uint16{4, 3}, 3},
		{[]uint16{0xffff}, 16},
	} {
		if got := BitWidth(tc.values); got != tc.want {
			t.Errorf("BitWidth(%v) = %d, want %d", tc.values, got, tc.want)
		}
	}
}

func BenchmarkUnpack32(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, width := range []int{1, 3, 8, 12, 17, 25, 32} {
		b.Run(fmt.Sprintf("W=%d", width), func(b *testing.B) {
			values := toWords[uint32](randomBlock(rng, 32, width))
			packed := make([]uint32, PackedWords[uint32](width))
			if err := Pack(width, values, packed); err != nil {
				b.Fatal(err)
			}
			out := make([]uint32, 1024)
			b.SetBytes(4 * 1024)
			for b.Loop() {
				if err := Unpack(width, packed, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPack32(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, width := range []int{3, 17} {
		b.Run(fmt.Sprintf("W=%d", width), func(b *testing.B) {
			values := toWords[uint32](randomBlock(rng, 32, width))
			packed := make([]uint32, PackedWords[uint32](width))
			b.SetBytes(4 * 1024)
			for b.Loop() {
				if err := Pack(width, values, packed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeInlineBitpacked32(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	values := make([]uint32, 64*1024)
	for i := range values {
		values[i] = uint32(rng.IntN(1 << 12))
	}
	src := EncodeInlineBitpacked(nil, values)
	dst := make([]uint32, 0, len(values))
	b.SetBytes(int64(4 * len(values)))
	for b.Loop() {
		var err error
		if dst, err = DecodeInlineBitpacked(dst[:0], src, len(values)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPortableWordConversion runs the byte-order-independent conversions
// (used on big-endian hosts) and checks them against the copy fast path.
func TestPortableWordConversion(t *testing.T) {
	src := make([]byte, 64)
	for i := range src {
		src[i] = byte(i*37 + 1)
	}
	// convert loads src as words of each size and writes them back,
	// describing the loaded values and the bytes written.
	convert := func() string {
		w8, w16, w32, w64 := make([]uint8, 64), make([]uint16, 32), make([]uint32, 16), make([]uint64, 8)
		loadWords(w8, src)
		loadWords(w16, src)
		loadWords(w32, src)
		loadWords(w64, src)
		return fmt.Sprint(w8, w16, w32, w64,
			appendWords(nil, w8), appendWords(nil, w16), appendWords(nil, w32), appendWords(nil, w64))
	}
	fast := convert()
	littleEndianHost = false
	defer func() { littleEndianHost = true }()
	if portable := convert(); portable != fast {
		t.Errorf("portable conversion differs:\n%s\n%s", portable, fast)
	}
	var w [1]uint16
	loadWords(w[:], []byte{1, 2})
	if w[0] != 0x0201 {
		t.Errorf("portable uint16 load = %#x, want 0x201", w[0])
	}
}
