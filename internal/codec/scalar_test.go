package codec

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lancerdb/lancer"
)

func TestScalarBuffersGolden(t *testing.T) {
	// The empty string from the spec: two buffers, offsets [0, 0] as two
	// i32 (8 bytes) and no value bytes.
	emptyString := []byte{
		0x02, 0, 0, 0, 0x08, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
	}
	buffers, err := DecodeScalarBuffers(emptyString)
	if err != nil || len(buffers) != 2 || !bytes.Equal(buffers[0], make([]byte, 8)) || len(buffers[1]) != 0 {
		t.Fatalf("decode: %q %v", buffers, err)
	}
	again, err := EncodeScalarBuffers(nil, buffers)
	if err != nil || !bytes.Equal(again, emptyString) {
		t.Fatalf("encode: % x %v", again, err)
	}
	one, err := EncodeScalarBuffers(nil, [][]byte{[]byte("abc")})
	if err != nil || !bytes.Equal(one, []byte{1, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c'}) {
		t.Fatalf("one buffer: % x %v", one, err)
	}
}

func TestScalarBuffersCorrupt(t *testing.T) {
	for name, src := range map[string][]byte{
		"empty":          nil,
		"count too big":  {0xFF, 0xFF, 0xFF, 0xFF, 1, 0, 0, 0},
		"buffer overrun": {1, 0, 0, 0, 9, 0, 0, 0, 'a'},
		"trailing bytes": {1, 0, 0, 0, 1, 0, 0, 0, 'a', 'b'},
		"lengths cut":    {2, 0, 0, 0, 1, 0, 0},
	} {
		if _, err := DecodeScalarBuffers(src); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}
