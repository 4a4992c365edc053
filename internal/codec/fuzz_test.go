package codec

// Fuzz tests: arbitrary input must never panic, must fail only with
// ErrCorrupt (or ErrInvalidArgument for impossible requests), and must not
// allocate beyond what the input or the caller's bound allows. Value counts
// taken from fuzz input are capped at maxFuzzValues, standing in for the
// caller-given expected count of a real page.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/lancerdb/lancer"
)

const maxFuzzValues = 1 << 16

func expectCorruptOrNil(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, lancer.ErrCorrupt) {
		t.Fatalf("error is not ErrCorrupt: %v", err)
	}
}

// FuzzUnpack feeds arbitrary bytes to every bit-packing decoder: Unpack of
// one block, InlineBitpacking and OutOfLineBitpacking, for each word size.
// Whatever decodes must re-encode to something that decodes the same.
func FuzzUnpack(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint8(0), uint16(0))
	f.Add(EncodeInlineBitpacked(nil, []uint32{1, 2, 3, 1000}), uint8(2), uint8(10), uint16(4))
	f.Add(EncodeInlineBitpacked(nil, slices.Repeat([]uint16{5, 9}, 700)), uint8(1), uint8(4), uint16(1400))
	ool, _ := EncodeOutOfLineBitpacked(nil, slices.Repeat([]uint64{1, 3}, 600), 2)
	f.Add(ool, uint8(3), uint8(2), uint16(1200))
	f.Add(make([]byte, 128*7), uint8(0), uint8(7), uint16(1024))
	f.Fuzz(func(t *testing.T, data []byte, wordSize, width uint8, count uint16) {
		n := int(count) % maxFuzzValues
		switch wordSize % 4 {
		case 0:
			fuzzBitpacking[uint8](t, data, int(width), n)
		case 1:
			fuzzBitpacking[uint16](t, data, int(width), n)
		case 2:
			fuzzBitpacking[uint32](t, data, int(width), n)
		case 3:
			fuzzBitpacking[uint64](t, data, int(width), n)
		}
	})
}

func fuzzBitpacking[T Word](t *testing.T, data []byte, width, n int) {
	bitsT := wordBits[T]()
	width %= bitsT + 2 // sometimes one too wide
	words := make([]T, len(data)/(bitsT/8))
	loadWords(words, data)
	var block [BlockLen]T
	err := Unpack(width, words, block[:])
	expectCorruptOrNil(t, err)
	if err == nil {
		packed := make([]T, PackedWords[T](width))
		if err := Pack(width, block[:], packed); err != nil || !slices.Equal(packed, words) {
			t.Fatalf("Pack(Unpack(x)) != x: %v", err)
		}
	}

	values, err := DecodeInlineBitpacked[T](nil, data, n)
	expectCorruptOrNil(t, err)
	if err == nil {
		again, err := DecodeInlineBitpacked[T](nil, EncodeInlineBitpacked(nil, values), n)
		if err != nil || !slices.Equal(again, values) {
			t.Fatalf("inline re-encode differs: %v", err)
		}
	}

	values, err = DecodeOutOfLineBitpacked[T](nil, data, width, n)
	expectCorruptOrNil(t, err)
	if err == nil {
		encoded, err := EncodeOutOfLineBitpacked(nil, values, width)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeOutOfLineBitpacked[T](nil, encoded, width, n)
		if err != nil || !slices.Equal(again, values) {
			t.Fatalf("out-of-line re-encode differs: %v", err)
		}
	}
}

// FuzzRLEDecode splits arbitrary bytes into run values and run lengths (and
// also reads them as a block), for every word size.
func FuzzRLEDecode(f *testing.F) {
	values, lengths := EncodeRLE(nil, nil, []uint32{1, 1, 1, 2, 2, 3, 3, 3, 3})
	f.Add(slices.Concat(values, lengths), uint16(12), uint8(2), uint16(9))
	f.Add(EncodeRLEBlock(nil, slices.Repeat([]uint16{7}, 600)), uint16(0), uint8(1), uint16(600))
	f.Add([]byte{5, 6, 4, 4}, uint16(2), uint8(0), uint16(5))
	f.Add(binary.LittleEndian.AppendUint64(nil, 1<<63), uint16(0), uint8(3), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, split uint16, wordSize uint8, count uint16) {
		n := int(count) % maxFuzzValues
		cut := min(int(split), len(data))
		switch wordSize % 4 {
		case 0:
			fuzzRLE[uint8](t, data, cut, n)
		case 1:
			fuzzRLE[uint16](t, data, cut, n)
		case 2:
			fuzzRLE[uint32](t, data, cut, n)
		case 3:
			fuzzRLE[uint64](t, data, cut, n)
		}
	})
}

func fuzzRLE[T Word](t *testing.T, data []byte, cut, n int) {
	values, err := DecodeRLE[T](nil, data[:cut], data[cut:], n)
	expectCorruptOrNil(t, err)
	if err == nil {
		if len(values) != n {
			t.Fatalf("decoded %d values, want %d", len(values), n)
		}
		runValues, runLengths := EncodeRLE(nil, nil, values)
		again, err := DecodeRLE[T](nil, runValues, runLengths, n)
		if err != nil || !slices.Equal(again, values) {
			t.Fatalf("re-encode differs: %v", err)
		}
	}
	values, err = DecodeRLEBlock[T](nil, data, n)
	expectCorruptOrNil(t, err)
	if err == nil && len(values) != n {
		t.Fatalf("block decoded %d values, want %d", len(values), n)
	}
}

// FuzzDecompress feeds arbitrary buffers to both general decompressors with
// a fixed output bound, and round-trips the input through both compressors.
func FuzzDecompress(f *testing.F) {
	z, _ := Compress(CompressionZstd, 0, []byte("hello hello hello hello"))
	l, _ := Compress(CompressionLZ4, 0, []byte("hello hello hello hello"))
	f.Add(z, uint8(2))
	f.Add(l, uint8(1))
	f.Add(helloZstdFrame, uint8(2))
	f.Add(append([]byte{5, 0, 0, 0, 0, 0, 0, 0}, helloZstdFrame...), uint8(2))
	f.Add([]byte{5, 0, 0, 0, 0x50, 'h', 'e', 'l', 'l', 'o'}, uint8(1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x1f}, uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, scheme uint8) {
		const bound = 1 << 20
		s := CompressionScheme(scheme%2 + 1)
		out, err := Decompress(s, data, bound)
		expectCorruptOrNil(t, err)
		if len(out) > bound {
			t.Fatalf("%v produced %d bytes past the %d bound", s, len(out), bound)
		}
		packed, err := Compress(s, int(scheme%20), data)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decompress(s, packed, len(data))
		if err != nil || !bytes.Equal(back, data) {
			t.Fatalf("%v round trip failed: %v", s, err)
		}
	})
}

// FuzzVariableBlock feeds arbitrary bytes to the variable-width parsers: the
// block form, the mini-block binary chunk (both offset widths) and the 2.2
// scalar value buffer. Whatever parses must re-encode and parse the same.
func FuzzVariableBlock(f *testing.F) {
	f.Add(cat(le32(32, 24, 0, 1, 3, 3), []byte("abc")), uint16(3))
	f.Add(cat(le64(64, 48, 0, 1, 3, 3), []byte("abc")), uint16(3))
	f.Add(cat([]byte{32}, le32(3, 25, 0, 1, 3, 3), []byte("abc")), uint16(3))
	f.Add(binaryChunk32, uint16(3))
	f.Add([]byte{2, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, count uint16) {
		n := int(count) % maxFuzzValues
		block, err := DecodeVariableBlock(data)
		expectCorruptOrNil(t, err)
		if err == nil {
			encoded, err := EncodeVariableBlock(nil, block.Offsets, block.Data)
			if err != nil {
				t.Fatal(err)
			}
			again, err := DecodeVariableBlock(encoded)
			if err != nil || !slices.Equal(again.Offsets, block.Offsets) || !bytes.Equal(again.Data, block.Data) {
				t.Fatalf("variable block re-encode differs: %v", err)
			}
		}
		fuzzBinaryChunk[uint32](t, data, n)
		fuzzBinaryChunk[uint64](t, data, n)
		buffers, err := DecodeScalarBuffers(data)
		expectCorruptOrNil(t, err)
		if err == nil {
			encoded, err := EncodeScalarBuffers(nil, buffers)
			if err != nil || !bytes.Equal(encoded, data) {
				t.Fatalf("scalar buffer re-encode differs: %v", err)
			}
		}
	})
}

func fuzzBinaryChunk[O Offset](t *testing.T, data []byte, n int) {
	offsets, values, err := DecodeBinaryChunk[O](data, n)
	expectCorruptOrNil(t, err)
	if err != nil {
		return
	}
	chunk, err := EncodeBinaryChunk(nil, offsets, values)
	if err != nil {
		t.Fatal(err)
	}
	again, againValues, err := DecodeBinaryChunk[O](chunk, n)
	if err != nil || !slices.Equal(again, offsets) || !bytes.Equal(againValues, values) {
		t.Fatalf("binary chunk re-encode differs: %v", err)
	}
}

// FuzzFSSTDecode builds a symbol table from fuzz bytes (so that it usually
// parses) and decodes arbitrary code bytes split into values at arbitrary
// offsets. It also parses the raw bytes as a table, and round-trips the data
// through a table trained on it.
func FuzzFSSTDecode(f *testing.F) {
	f.Add([]byte("abxyzq"), []byte{2, 3, 1}, []byte{0, 255, 'Z', 1, 2}, []byte{1, 3})
	f.Add([]byte{}, []byte{}, []byte{255}, []byte{})
	f.Add([]byte("12345678"), []byte{8, 0}, []byte{0, 0, 7}, []byte{2})
	f.Fuzz(func(t *testing.T, symbolBytes, symbolLens, codes, cuts []byte) {
		// A table from the fuzz bytes: lengths as given (possibly invalid),
		// symbols taken in turn from symbolBytes.
		table := make([]byte, FSSTTableSize)
		nSymbols := min(len(symbolLens), fsstMaxSymbols)
		binary.LittleEndian.PutUint64(table, uint64(fsstMagic)<<32|1<<fsstSwitchBit|uint64(nSymbols))
		for i := range nSymbols {
			copy(table[8+8*i:8+8*i+8], symbolBytes[min(len(symbolBytes), 8*i):])
			table[8+8*nSymbols+i] = symbolLens[i]
		}
		parsed, err := ParseFSSTTable(table)
		expectCorruptOrNil(t, err)
		if err == nil {
			offsets := []uint32{0}
			for _, c := range cuts {
				offsets = append(offsets, min(uint32(c), uint32(len(codes))))
			}
			offsets = append(offsets, uint32(len(codes)))
			outOffsets, out, err := FSSTDecodeAll(parsed, offsets, codes)
			expectCorruptOrNil(t, err)
			if err == nil && (len(outOffsets) != len(offsets) || int(outOffsets[len(outOffsets)-1]) != len(out) ||
				len(out) > 8*len(codes)) {
				t.Fatalf("inconsistent output: %d offsets, last %d, %d bytes", len(outOffsets), outOffsets[len(outOffsets)-1], len(out))
			}
			if _, err := parsed.AppendDecoded(nil, codes); err != nil {
				expectCorruptOrNil(t, err)
			}
			// Anything the table encodes must decode back.
			back, err := parsed.AppendDecoded(nil, parsed.AppendEncoded(nil, codes))
			if err != nil || !bytes.Equal(back, codes) {
				t.Fatalf("encode/decode with a fuzzed table: %v", err)
			}
		}
		raw := make([]byte, FSSTTableSize)
		copy(raw, codes)
		_, err = ParseFSSTTable(raw)
		expectCorruptOrNil(t, err)

		trained := TrainFSST([][]byte{codes, symbolBytes})
		reparsed, err := ParseFSSTTable(trained.Bytes())
		if err != nil {
			t.Fatalf("trained table does not parse: %v", err)
		}
		back, err := reparsed.AppendDecoded(nil, trained.AppendEncoded(nil, codes))
		if err != nil || !bytes.Equal(back, codes) {
			t.Fatalf("trained round trip: %v", err)
		}
	})
}
