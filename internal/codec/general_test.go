package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/lancerdb/lancer"
	"github.com/pierrec/lz4/v4"
)

// helloZstdFrame is a zstd frame built by hand from RFC 8878: magic, a frame
// header descriptor with Single_Segment set (so a 1-byte content size, 5),
// then one raw last block of 5 bytes (header 1 | 5<<3 = 0x29).
var helloZstdFrame = []byte{0x28, 0xB5, 0x2F, 0xFD, 0x20, 0x05, 0x29, 0x00, 0x00, 'h', 'e', 'l', 'l', 'o'}

func TestDecompressGolden(t *testing.T) {
	prefixed := append([]byte{5, 0, 0, 0, 0, 0, 0, 0}, helloZstdFrame...)
	for name, tc := range map[string]struct {
		scheme CompressionScheme
		src    []byte
		want   string
	}{
		"zstd with u64 length": {CompressionZstd, prefixed, "hello"},
		"zstd bare frame":      {CompressionZstd, helloZstdFrame, "hello"},
		"zstd empty buffer":    {CompressionZstd, nil, ""},
		// An LZ4 block of literals only: token 0x50 (5 literals, no match).
		"lz4 with u32 length": {CompressionLZ4, []byte{5, 0, 0, 0, 0x50, 'h', 'e', 'l', 'l', 'o'}, "hello"},
		"lz4 empty":           {CompressionLZ4, []byte{0, 0, 0, 0, 0}, ""},
	} {
		got, err := Decompress(tc.scheme, tc.src, 100)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %q, %v; want %q", name, got, err, tc.want)
		}
	}
}

func TestCompressFraming(t *testing.T) {
	src := bytes.Repeat([]byte("lancer "), 1000)
	z, err := Compress(CompressionZstd, 0, src)
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint64(z) != uint64(len(src)) || !bytes.Equal(z[8:12], []byte{0x28, 0xB5, 0x2F, 0xFD}) {
		t.Fatalf("zstd framing: % x", z[:12])
	}
	l, err := Compress(CompressionLZ4, 0, src)
	if err != nil {
		t.Fatal(err)
	}
	if binary.LittleEndian.Uint32(l) != uint32(len(src)) {
		t.Fatalf("lz4 framing: % x", l[:4])
	}
	// Empty input still gets a zstd frame after the prefix.
	empty, err := Compress(CompressionZstd, 0, nil)
	if err != nil || len(empty) <= 8 || binary.LittleEndian.Uint64(empty) != 0 {
		t.Fatalf("empty zstd: % x, %v", empty, err)
	}
}

func TestCompressRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, scheme := range []CompressionScheme{CompressionZstd, CompressionLZ4} {
		for _, level := range []int{0, 1, 3, 9, 19} {
			for _, size := range []int{0, 1, 13, 100, 4096, 100_000, 1 << 20} {
				src := make([]byte, size)
				for i := range src {
					src[i] = byte(rng.IntN(4)) // compressible but not trivial
				}
				packed, err := Compress(scheme, level, src)
				if err != nil {
					t.Fatal(err)
				}
				got, err := Decompress(scheme, packed, size)
				if err != nil || !bytes.Equal(got, src) {
					t.Fatalf("%v level %d size %d: round trip failed: %v", scheme, level, size, err)
				}
			}
		}
	}
}

func TestDecompressConcurrent(t *testing.T) {
	src := bytes.Repeat([]byte("concurrent "), 5000)
	packed, err := Compress(CompressionZstd, 0, src)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if got, err := Decompress(CompressionZstd, packed, len(src)); err != nil || !bytes.Equal(got, src) {
					t.Error("concurrent decompress failed:", err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDecompressBounds(t *testing.T) {
	src := bytes.Repeat([]byte{1}, 10_000)
	z, _ := Compress(CompressionZstd, 0, src)
	l, _ := Compress(CompressionLZ4, 0, src)
	bare := zstdBare(t, src)
	for name, tc := range map[string]struct {
		scheme CompressionScheme
		src    []byte
	}{
		"zstd prefix over bound": {CompressionZstd, z},
		"lz4 prefix over bound":  {CompressionLZ4, l},
		"bare zstd over bound":   {CompressionZstd, bare},
		"zstd huge prefix":       {CompressionZstd, append(binary.LittleEndian.AppendUint64(nil, 1<<62), z[8:]...)},
	} {
		if _, err := Decompress(tc.scheme, tc.src, 9_999); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
}

// zstdBare compresses src into a frame without Lance's length prefix, and
// without the content size in its header, as an old writer might.
func zstdBare(t *testing.T, src []byte) []byte {
	enc, err := zstd.NewWriter(nil, zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var buf bytes.Buffer
	enc.Reset(&buf)
	if _, err := enc.Write(src); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestDecompressFrameWithoutContentSize covers frames whose header does not
// state their size (what a streaming encoder writes), bare and behind Lance's
// prefix, across zstd's 128 KiB block boundary.
func TestDecompressFrameWithoutContentSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, size := range []int{1, 131072, 131073, 1<<20 + 7} {
		src := make([]byte, size)
		for i := range src {
			src[i] = byte(rng.IntN(3))
		}
		bare := zstdBare(t, src)
		var header zstd.Header
		if err := header.Decode(bare); err != nil || header.HasFCS {
			t.Fatalf("test frame should have no content size: %v", err)
		}
		got, err := Decompress(CompressionZstd, bare, size)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("bare, %d bytes: %v", size, err)
		}
		prefixed := append(binary.LittleEndian.AppendUint64(nil, uint64(size)), bare...)
		got, err = Decompress(CompressionZstd, prefixed, size)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("prefixed, %d bytes: %v", size, err)
		}
	}
}

func TestDecompressCorrupt(t *testing.T) {
	z, _ := Compress(CompressionZstd, 0, []byte("some bytes to compress, some bytes to compress"))
	l, _ := Compress(CompressionLZ4, 0, []byte("some bytes to compress, some bytes to compress"))
	wrongLength := append(binary.LittleEndian.AppendUint64(nil, 3), z[8:]...)
	for name, tc := range map[string]struct {
		scheme CompressionScheme
		src    []byte
	}{
		"zstd short":          {CompressionZstd, []byte{1, 2, 3}},
		"zstd truncated":      {CompressionZstd, z[:len(z)-3]},
		"zstd garbage":        {CompressionZstd, append(binary.LittleEndian.AppendUint64(nil, 10), 1, 2, 3, 4)},
		"zstd length differs": {CompressionZstd, wrongLength},
		"zstd bare garbage":   {CompressionZstd, []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0xFF}},
		"lz4 short":           {CompressionLZ4, []byte{1, 0}},
		"lz4 empty":           {CompressionLZ4, nil},
		"lz4 truncated":       {CompressionLZ4, l[:len(l)-5]},
		"lz4 length differs":  {CompressionLZ4, append([]byte{100, 0, 0, 0}, l[4:]...)},
	} {
		if _, err := Decompress(tc.scheme, tc.src, 1000); !errors.Is(err, lancer.ErrCorrupt) {
			t.Errorf("%s: got %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := Decompress(CompressionUnspecified, z, 1000); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("unspecified scheme: %v", err)
	}
	if _, err := Compress(CompressionScheme(9), 0, nil); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("unknown scheme: %v", err)
	}
}

func BenchmarkDecompressZstd(b *testing.B) {
	src := bytes.Repeat([]byte("benchmark data for zstd "), 4000)
	packed, _ := Compress(CompressionZstd, 0, src)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if _, err := Decompress(CompressionZstd, packed, len(src)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecompressFrame covers the Arrow IPC framing (a bare zstd frame, an
// LZ4 frame) and its exact-size rule: a frame that yields fewer or more
// bytes than its IPC length prefix says is corrupt.
func TestDecompressFrame(t *testing.T) {
	want := bytes.Repeat([]byte("lance ipc "), 100)
	zstdFrame := zstdEncoder(3).EncodeAll(want, nil)
	var lz4Frame bytes.Buffer
	w := lz4.NewWriter(&lz4Frame)
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		scheme CompressionScheme
		src    []byte
	}{
		"zstd": {CompressionZstd, zstdFrame},
		"lz4":  {CompressionLZ4, lz4Frame.Bytes()},
	} {
		got, err := DecompressFrame(tc.scheme, tc.src, len(want))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: got %d bytes, %v; want the %d bytes encoded", name, len(got), err, len(want))
		}
		for _, size := range []int{len(want) - 1, len(want) + 1, 0} {
			if _, err := DecompressFrame(tc.scheme, tc.src, size); !errors.Is(err, lancer.ErrCorrupt) {
				t.Errorf("%s with size %d of %d: got %v, want ErrCorrupt", name, size, len(want), err)
			}
		}
	}
	if _, err := DecompressFrame(CompressionUnspecified, zstdFrame, len(want)); !errors.Is(err, lancer.ErrUnsupported) {
		t.Errorf("unspecified scheme: got %v, want ErrUnsupported", err)
	}
}
