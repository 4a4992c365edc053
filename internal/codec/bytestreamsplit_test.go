package codec

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/lancerdb/lancer"
)

func TestByteStreamSplitGolden(t *testing.T) {
	src := []byte{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08}
	want := []byte{0x01, 0x05, 0x02, 0x06, 0x03, 0x07, 0x04, 0x08}
	got, err := EncodeByteStreamSplit(nil, src, 4)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("split: % x, %v", got, err)
	}
	back, err := DecodeByteStreamSplit([]byte{0xAA}, want, 4)
	if err != nil || !bytes.Equal(back, append([]byte{0xAA}, src...)) {
		t.Fatalf("unsplit: % x, %v", back, err)
	}
}

func TestByteStreamSplitRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, width := range []int{2, 4, 8} {
		for _, n := range roundTripCounts {
			src := make([]byte, n*width)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			split, err := EncodeByteStreamSplit(nil, src, width)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeByteStreamSplit(nil, split, width)
			if err != nil || !bytes.Equal(back, src) {
				t.Fatalf("width %d n %d: round trip differs (%v)", width, n, err)
			}
		}
	}
}

func TestByteStreamSplitErrors(t *testing.T) {
	if _, err := DecodeByteStreamSplit(nil, make([]byte, 7), 4); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("ragged: %v", err)
	}
	if _, err := DecodeByteStreamSplit(nil, make([]byte, 8), 0); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("width 0: %v", err)
	}
	if _, err := EncodeByteStreamSplit(nil, make([]byte, 7), 4); !errors.Is(err, lancer.ErrInvalidArgument) {
		t.Errorf("encode ragged: %v", err)
	}
}
