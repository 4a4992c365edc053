package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// CompressionScheme names a general-purpose compressor. The values are those
// of the lance.encodings21.CompressionScheme protobuf enum, so a page decoder
// can convert the field directly.
type CompressionScheme int32

const (
	CompressionUnspecified CompressionScheme = 0
	CompressionLZ4         CompressionScheme = 1
	CompressionZstd        CompressionScheme = 2
)

func (s CompressionScheme) String() string {
	switch s {
	case CompressionUnspecified:
		return "unspecified"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("CompressionScheme(%d)", int32(s))
}

// zstdMagic starts every zstd frame (RFC 8878 §3.1.1), little-endian on disk
// as 28 B5 2F FD.
const zstdMagic = 0xFD2FB528

// zstdUnusedBit is bit 4 of a frame header descriptor (byte 4 of a frame),
// which zstd writers leave clear (RFC 8878 §3.1.1.1.1 calls it unused; Lance
// calls it reserved). Lance tells a length prefix that happens to start with
// the magic number from a bare frame by it, and so does this package.
const zstdUnusedBit = 0x10

// Decompress undoes Lance's framing of one general-compressed buffer and
// returns the uncompressed bytes, refusing (with ErrCorrupt) any buffer that
// claims or produces more than maxOut bytes, so that the allocation is
// bounded by the caller.
//
//   - zstd: a u64 LE uncompressed length, then one zstd frame. A buffer that
//     starts with the zstd magic and a valid frame descriptor is a bare frame
//     from an older writer. An empty buffer is empty output.
//   - lz4: a u32 LE uncompressed length, then one LZ4 block (not frame).
func Decompress(scheme CompressionScheme, src []byte, maxOut int) ([]byte, error) {
	if maxOut < 0 {
		return nil, invalidf("decompress: negative output bound %d", maxOut)
	}
	switch scheme {
	case CompressionZstd:
		return decompressZstd(src, maxOut)
	case CompressionLZ4:
		return decompressLZ4(src, maxOut)
	}
	return nil, unsupportedf("decompress: compression scheme %v", scheme)
}

// Compress frames src the way Lance writes a general-compressed buffer (see
// Decompress). level is the zstd level of BufferCompression.level: 0 means
// zstd's default (3), and levels map to the nearest of the four speeds the Go
// zstd encoder offers (fastest below 3, default 3–5, better 6–9, best from
// 10). lz4 ignores the level, as Lance does.
func Compress(scheme CompressionScheme, level int, src []byte) ([]byte, error) {
	switch scheme {
	case CompressionZstd:
		out := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(src)/2), uint64(len(src)))
		return zstdEncoder(level).EncodeAll(src, out), nil
	case CompressionLZ4:
		if uint64(len(src)) > 0xFFFFFFFF {
			return nil, invalidf("lz4: %d bytes do not fit the u32 length prefix", len(src))
		}
		out := make([]byte, 4+lz4.CompressBlockBound(len(src)))
		binary.LittleEndian.PutUint32(out, uint32(len(src)))
		// With room for the bound, the block compressor always succeeds.
		c := lz4Compressors.Get().(*lz4.Compressor)
		n, err := c.CompressBlock(src, out[4:])
		lz4Compressors.Put(c)
		if err != nil {
			return nil, fmt.Errorf("lz4: compress %d bytes: %w", len(src), err)
		}
		return out[:4+n], nil
	}
	return nil, unsupportedf("compress: compression scheme %v", scheme)
}

// DecompressFrame decodes one buffer of an Arrow IPC body compressed with
// scheme, which Arrow frames differently from Lance pages: zstd is one bare
// zstd frame and lz4 one LZ4 frame (not a block), each with no length
// prefix of its own (the IPC buffer's u64 length precedes it and is size).
// Output must be exactly size bytes; any other result is ErrCorrupt, and
// nothing beyond size is ever allocated or decoded.
func DecompressFrame(scheme CompressionScheme, src []byte, size int) ([]byte, error) {
	if size < 0 {
		return nil, invalidf("decompress frame: negative size %d", size)
	}
	out := make([]byte, size)
	switch scheme {
	case CompressionZstd:
		got, err := zstdDecoder().DecodeAll(src, out[:0])
		if err != nil || len(got) != size {
			return nil, corruptf("zstd: frame of %d bytes does not decompress to %d: %v", len(src), size, err)
		}
		return got, nil
	case CompressionLZ4:
		r := lz4.NewReader(bytes.NewReader(src))
		if _, err := io.ReadFull(r, out); err != nil {
			return nil, corruptf("lz4: frame of %d bytes does not decompress to %d: %v", len(src), size, err)
		}
		if n, _ := r.Read(make([]byte, 1)); n != 0 {
			return nil, corruptf("lz4: frame decompresses to more than %d bytes", size)
		}
		return out, nil
	}
	return nil, unsupportedf("decompress frame: compression scheme %v", scheme)
}

func decompressZstd(src []byte, maxOut int) ([]byte, error) {
	if len(src) == 0 {
		return []byte{}, nil
	}
	if isBareZstdFrame(src) {
		return decompressBareZstd(src, maxOut)
	}
	if len(src) < 8 {
		return nil, corruptf("zstd: buffer of %d bytes too short for the 8-byte length prefix", len(src))
	}
	size := binary.LittleEndian.Uint64(src)
	if size > uint64(maxOut) {
		return nil, corruptf("zstd: uncompressed length %d exceeds the limit of %d bytes", size, maxOut)
	}
	out, err := zstdDecoder().DecodeAll(src[8:], make([]byte, 0, size))
	if err != nil {
		return nil, corruptf("zstd: frame of %d bytes (uncompressed length %d): %v", len(src)-8, size, err)
	}
	if uint64(len(out)) != size {
		return nil, corruptf("zstd: frame decompressed to %d bytes, prefix says %d", len(out), size)
	}
	return out, nil
}

// isBareZstdFrame reports whether src is a zstd frame without Lance's length
// prefix, by Lance's own test: the magic number, then a frame header
// descriptor with bit 4 clear.
func isBareZstdFrame(src []byte) bool {
	return len(src) >= 5 && binary.LittleEndian.Uint32(src) == zstdMagic && src[4]&zstdUnusedBit == 0
}

// decompressBareZstd decodes a frame whose uncompressed size is known only
// from its own header, if at all. Without a size the output capacity starts
// small and doubles up to maxOut, so hostile input cannot force a large
// allocation. The decoder reports running out of capacity no differently
// from bad data, so any failure below the bound is retried with more room.
func decompressBareZstd(src []byte, maxOut int) ([]byte, error) {
	var header zstd.Header
	if err := header.Decode(src); err != nil {
		return nil, corruptf("zstd: bare frame header: %v", err)
	}
	limit := min(maxOut, max(4*len(src), 64<<10))
	if header.HasFCS {
		if header.FrameContentSize > uint64(maxOut) {
			return nil, corruptf("zstd: frame content size %d exceeds the limit of %d bytes",
				header.FrameContentSize, maxOut)
		}
		limit = int(header.FrameContentSize)
	}
	for {
		out, err := zstdDecoder().DecodeAll(src, make([]byte, 0, limit))
		if err == nil {
			return out, nil
		}
		if limit >= maxOut {
			return nil, corruptf("zstd: bare frame of %d bytes (limit %d bytes): %v", len(src), limit, err)
		}
		limit = min(maxOut, max(2*limit, 64<<10))
	}
}

func decompressLZ4(src []byte, maxOut int) ([]byte, error) {
	if len(src) < 4 {
		return nil, corruptf("lz4: buffer of %d bytes too short for the 4-byte length prefix", len(src))
	}
	size := binary.LittleEndian.Uint32(src)
	if uint64(size) > uint64(maxOut) {
		return nil, corruptf("lz4: uncompressed length %d exceeds the limit of %d bytes", size, maxOut)
	}
	if size == 0 {
		return []byte{}, nil
	}
	out := make([]byte, size)
	n, err := lz4.UncompressBlock(src[4:], out)
	if err != nil {
		return nil, corruptf("lz4: block of %d bytes (uncompressed length %d): %v", len(src)-4, size, err)
	}
	if n != int(size) {
		return nil, corruptf("lz4: block decompressed to %d bytes, prefix says %d", n, size)
	}
	return out, nil
}

// An lz4.Compressor holds a 128 KiB hash table and is not safe for
// concurrent use, so compressors are pooled.
var lz4Compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// zstd decoders and encoders are expensive to build and safe for concurrent
// DecodeAll/EncodeAll calls, so the package shares them.
var (
	sharedZstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil,
			// Never decode more than the capacity handed to DecodeAll: the
			// capacity is the bound the caller chose.
			zstd.WithDecodeAllCapLimit(true),
			zstd.WithDecoderConcurrency(0),
		)
		if err != nil {
			panic("codec: creating the zstd decoder: " + err.Error()) // static options; cannot fail
		}
		return d
	})
	zstdEncoders [zstd.SpeedBestCompression + 1]struct {
		once sync.Once
		enc  *zstd.Encoder
	}
)

func zstdDecoder() *zstd.Decoder { return sharedZstdDecoder() }

// zstdEncoder returns the shared encoder for a zstd level; level 0 is zstd's
// default level 3, as in Lance.
func zstdEncoder(level int) *zstd.Encoder {
	if level == 0 {
		level = 3
	}
	speed := zstd.EncoderLevelFromZstd(level)
	slot := &zstdEncoders[speed]
	slot.once.Do(func() {
		enc, err := zstd.NewWriter(nil,
			zstd.WithEncoderLevel(speed),
			// An empty input still gets a frame, as the Rust zstd crate
			// writes one; some readers reject zero bytes after the prefix.
			zstd.WithZeroFrames(true),
			zstd.WithEncoderConcurrency(1),
		)
		if err != nil {
			panic("codec: creating the zstd encoder: " + err.Error()) // static options; cannot fail
		}
		slot.enc = enc
	})
	return slot.enc
}
