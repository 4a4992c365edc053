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

func TestRLEGolden(t *testing.T) {
	// Lance's own example: [1,1,1,2,2,3,3,3,3] as int32 → values 1,2,3 and
	// lengths 3,2,4.
	values, lengths := EncodeRLE(nil, nil, []uint32{1, 1, 1, 2, 2, 3, 3, 3, 3})
	if want := []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}; !bytes.Equal(values, want) {
		t.Fatalf("values % x", values)
	}
	if want := []byte{3, 2, 4}; !bytes.Equal(lengths, want) {
		t.Fatalf("lengths %v", lengths)
	}
	// Runs longer than 255 are split: 1000×42 then 300×100.
	long := append(slices.Repeat([]uint32{42}, 1000), slices.Repeat([]uint32{100}, 300)...)
	_, lengths = EncodeRLE(nil, nil, long)
	if want := []byte{255, 255, 255, 235, 255, 45}; !bytes.Equal(lengths, want) {
		t.Fatalf("split lengths %v", lengths)
	}
	// Block form (§10): u64 byte length of the values, values, lengths.
	block := EncodeRLEBlock(nil, []uint16{7, 7, 9})
	want := []byte{4, 0, 0, 0, 0, 0, 0, 0, 7, 0, 9, 0, 2, 1}
	if !bytes.Equal(block, want) {
		t.Fatalf("block % x, want % x", block, want)
	}
	got, err := DecodeRLEBlock[uint16](nil, want, 3)
	if err != nil || !slices.Equal(got, []uint16{7, 7, 9}) {
		t.Fatalf("decode block: %v %v", got, err)
	}
}

func TestRLEMiniBlockStopsAtN(t *testing.T) {
	// The runs cover 8 values; the chunk holds 5.
	values := []byte{5, 6}
	lengths := []byte{4, 4}
	got, err := DecodeRLE[uint8](nil, values, lengths, 5)
	if err != nil || !slices.Equal(got, []uint8{5, 5, 5, 5, 6}) {
		t.Fatalf("got %v, %v", got, err)
	}
	// The block form must match exactly.
	block := append(binary.LittleEndian.AppendUint64(nil, 2), 5, 6, 4, 4)
	if _, err := DecodeRLEBlock[uint8](nil, block, 5); !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("block with excess runs: %v", err)
	}
	// Zero-length runs (never written by Lance) are skipped.
	got, err = DecodeRLE[uint8](nil, []byte{1, 2, 3}, []byte{1, 0, 1}, 2)
	if err != nil || !slices.Equal(got, []uint8{1, 3}) {
		t.Fatalf("zero run: %v %v", got, err)
	}
	// n == 0 needs no buffers.
	if got, err := DecodeRLE[uint64](nil, nil, nil, 0); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
}

func TestRLECorrupt(t *testing.T) {
	for name, tc := range map[string]struct {
		values, lengths []byte
		n               int
	}{
		"empty buffers":        {nil, nil, 1},
		"partial value":        {[]byte{1, 0, 0}, []byte{1}, 1},
		"count mismatch":       {[]byte{1, 0, 0, 0, 2, 0, 0, 0}, []byte{1}, 1},
		"runs too short":       {[]byte{1, 0, 0, 0}, []byte{3}, 4},
		"huge n small buffers": {[]byte{1, 0, 0, 0}, []byte{255}, 1 << 40},
	} {
		if _, err := DecodeRLE[uint32](nil, tc.values, tc.lengths, tc.n); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	for name, block := range map[string][]byte{
		"no header":         {1, 2, 3},
		"values overrun":    binary.LittleEndian.AppendUint64(nil, 100),
		"huge values size":  binary.LittleEndian.AppendUint64(nil, 1<<63),
		"lengths too short": append(binary.LittleEndian.AppendUint64(nil, 4), 1, 0, 0, 0, 1),
	} {
		if _, err := DecodeRLEBlock[uint32](nil, block, 2); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("block %s: got %v, want ErrCorrupt", name, err)
		}
	}
}

func checkRLERoundTrip[T Word](t *testing.T, rng *rand.Rand, n int) {
	values := make([]T, 0, n)
	for len(values) < n {
		run := 1 + rng.IntN(20)
		if rng.IntN(10) == 0 {
			run = 200 + rng.IntN(400) // past the 255 limit of one run
		}
		v := T(rng.Uint64())
		for range min(run, n-len(values)) {
			values = append(values, v)
		}
	}
	runValues, runLengths := EncodeRLE(nil, nil, values)
	got, err := DecodeRLE[T](nil, runValues, runLengths, n)
	if err != nil || !slices.Equal(got, values) {
		t.Fatalf("T=%d n=%d: mini-block round trip: %v", wordBits[T](), n, err)
	}
	got, err = DecodeRLEBlock[T](nil, EncodeRLEBlock(nil, values), n)
	if err != nil || !slices.Equal(got, values) {
		t.Fatalf("T=%d n=%d: block round trip: %v", wordBits[T](), n, err)
	}
	if runs := CountRuns(values); n > 0 && (runs < 1 || runs > len(runLengths)) {
		t.Fatalf("CountRuns = %d with %d stored runs", runs, len(runLengths))
	}
}

func TestRLERoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range append(roundTripCounts, 255, 256, 510, 4096) {
		checkRLERoundTrip[uint8](t, rng, n)
		checkRLERoundTrip[uint16](t, rng, n)
		checkRLERoundTrip[uint32](t, rng, n)
		checkRLERoundTrip[uint64](t, rng, n)
	}
}

func TestCountRuns(t *testing.T) {
	if got := CountRuns([]uint8{}); got != 0 {
		t.Errorf("empty: %d", got)
	}
	if got := CountRuns([]uint8{1, 1, 2, 1, 1, 1}); got != 3 {
		t.Errorf("got %d, want 3", got)
	}
}

func TestRLELargestCount(t *testing.T) {
	if _, err := DecodeRLE[uint16](nil, []byte{1, 0}, []byte{3}, math.MaxInt); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("mini-block: %v", err)
	}
	if _, err := DecodeRLEBlock[uint16](nil, EncodeRLEBlock(nil, []uint16{1}), math.MaxInt); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("block: %v", err)
	}
	if _, err := DecodeFlat[uint64](nil, nil, math.MaxInt); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("flat: %v", err)
	}
}
