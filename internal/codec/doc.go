// Package codec implements the byte-level codecs that Lance 2.1 and 2.2 pages
// are built from: bit-packing, run-length encoding, byte stream split, FSST
// string compression, zstd/lz4 framing and the variable-width layouts, and
// the zstd/lz4 frames of Arrow IPC buffers (deletion files). The
// functions are pure: they take bytes or typed slices and return bytes or
// typed slices, with no I/O, no Arrow and no protobuf. Page decoders and
// writers (which know the CompressiveEncoding tree of a page) combine them.
//
// # Conventions
//
// All integers are little-endian. Fixed-width values are handled as unsigned
// words of 8, 16, 32 or 64 bits (the Word constraint); signed integers and
// floats travel as their bit patterns. Decoders of fixed-width values append
// to a destination slice and return it (pass nil to allocate); encoders
// append bytes to dst; on error a decoder returns dst as it was passed.
// Returned slices may share memory with the input where the function's doc
// says so.
//
// Every decoder treats its input as untrusted: malformed bytes give an error
// wrapping lancer.ErrCorrupt that names the codec and the problem, never a
// panic, and no allocation is larger than what the input can describe or
// than a count or bound the caller passed in. Encoder misuse gives
// lancer.ErrInvalidArgument; an unknown compression scheme gives
// lancer.ErrUnsupported.
//
// # Flat (DecodeFlat, EncodeFlat)
//
// n values of T bits stored raw, back to back: n·T/8 bytes.
//
// # FastLanes bit-packing (Pack, Unpack)
//
// A block of 1024 values of T bits, packed at width W (0 ≤ W ≤ T), occupies
// 1024·W/T words of T bits (128·W bytes). The block is viewed as 1024/T lanes
// of T rows; lane l is a bit stream in which row r starts at bit r·W (so a
// value may straddle two words of its lane), and word j of lane l is stored at
// position (1024/T)·j + l. Row r of lane l holds input value
// FL_ORDER[r/8]·16 + (r%8)·128 + l with FL_ORDER = [0 4 2 6 1 5 3 7]. W = 0
// stores nothing; W = T uses the same layout (values transposed, not copied).
//
// # InlineBitpacking (DecodeInlineBitpacked, EncodeInlineBitpacked)
//
// Values in blocks of 1024, the last one zero-padded; each block is
//
//	[W as one T-bit word][1024·W/T T-bit words, FastLanes-packed]
//
// where W is the bit length of the OR of the block's values. In a mini-block
// page each chunk is one such block.
//
// # OutOfLineBitpacking (DecodeOutOfLineBitpacked, EncodeOutOfLineBitpacked)
//
// One width W (from the encoding) for n values:
//
//	[⌊n/1024⌋ FastLanes blocks of 128·W bytes][tail]
//
// where the tail of r = n mod 1024 values is either one more block holding
// them zero-padded, or the r values raw as T-bit words. The writer packs the
// tail only if W·(1024−r) < (T−W)·r; the reader tells the forms apart by the
// buffer length, choosing raw when both lengths are equal. Raw tail values
// must still fit in W bits.
//
// # RLE (DecodeRLE, DecodeRLEBlock, EncodeRLE, EncodeRLEBlock)
//
// Mini-block form, two buffers: the run values (T bits each) and the run
// lengths (one byte each, 1..255; longer runs repeat the value). Exactly n
// values are decoded; the runs may describe more, and the excess is dropped.
// Block form (2.2 rep/def levels and blocks), one buffer:
//
//	[u64 byte length V of the run values][V bytes of run values][run lengths]
//
// whose runs must describe exactly n values.
//
// # Byte stream split (EncodeByteStreamSplit, DecodeByteStreamSplit)
//
// n values of B bytes become B streams of n bytes: byte j of value i is
// stored at j·n + i, with n the chunk's value count. Lance writes B = 4 or 8.
//
// # General compression (Compress, Decompress)
//
//	zstd: [u64 uncompressed length][one zstd frame]
//	lz4:  [u32 uncompressed length][one LZ4 block (not an LZ4 frame)]
//
// A zstd buffer that begins with the frame magic 28 B5 2F FD and whose next
// byte has bit 0x10 clear is a bare frame from an older writer; an empty zstd
// buffer is empty data. Decompress refuses output beyond a caller bound.
//
// Arrow IPC body buffers (DecompressFrame) carry their u64 length outside
// the codec's bytes: zstd is one bare zstd frame, lz4 one LZ4 frame (not a
// block), and the output must be exactly that length.
//
// # FSST (FSSTTable, ParseFSSTTable, FSSTDecodeAll, FSSTEncodeAll, TrainFSST)
//
// A symbol table is always 2312 bytes:
//
//	[u64 header: "FSST"<<32 | switch<<24 | suffix_lim<<16 | terminator<<8 | n]
//	[n symbols, u64 each, first byte in the low bits, zero above the length]
//	[n symbol lengths, one byte each, 1..8]
//	[zeros up to 2312 bytes]
//
// Compressed data is a sequence of codes: code c < n stands for symbol c;
// code 255 is followed by one literal byte. When the switch (bit 24) is 0 the
// "compressed" values are the original bytes; Lance writes such a table
// (header bytes 00 00 00 00 54 53 53 46) when a page's strings total less than
// 32 KiB. suffix_lim and terminator only help Lance's encoder; decoding
// ignores them. Lance numbers symbols by length: 2-byte symbols that begin a
// longer one (codes below suffix_lim), other 2-byte symbols, lengths 3 to 8,
// then 1-byte symbols; TrainFSST does the same, though no decoder needs it.
//
// # Variable-width values (DecodeBinaryChunk, DecodeVariableBlock)
//
// Mini-block "binary" chunk of n values, offsets of width w = 4 or 8:
//
//	[(n+1) offsets from the chunk start][value bytes][0x48 pad to a multiple of w]
//
// so the first offset is (n+1)·w. Block form (e.g. a dictionary):
//
//	[u32 32][u32 S][(n+1) u32 offsets][bytes]   S = 8 + 4·(n+1)
//	[u64 64][u64 S][(n+1) u64 offsets][bytes]   S = 16 + 8·(n+1)
//
// with offsets relative to the bytes, which start at S. An older block form,
// [u8 w·8][count][S][offsets][bytes] with count and S u32 (32-bit) or u64
// (64-bit), is recognised by a non-zero byte among bytes 1 to 3.
//
// # Constant page scalar (DecodeScalarBuffers, EncodeScalarBuffers)
//
// The value of a 2.2 constant page that is not inline: the Arrow buffers of a
// one-element array without validity,
//
//	[u32 count][u32 length × count][buffers back to back]
//
// with nothing after the last buffer.
package codec
