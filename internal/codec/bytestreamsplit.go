package codec

import "slices"

// EncodeByteStreamSplit appends the byte-stream-split form of src to dst.
// src holds n values of width bytes each, little-endian; the output holds the
// first byte of every value, then the second byte of every value, and so on,
// so byte j of value i lands at j·n + i. Lance writes it for 32- and 64-bit
// values (width 4 and 8); any width works.
func EncodeByteStreamSplit(dst, src []byte, width int) ([]byte, error) {
	if width <= 0 {
		return dst, invalidf("byte stream split: width %d", width)
	}
	if len(src)%width != 0 {
		return dst, invalidf("byte stream split: %d bytes is not a whole number of %d-byte values", len(src), width)
	}
	n := len(src) / width
	start := len(dst)
	dst = slices.Grow(dst, len(src))[:start+len(src)]
	out := dst[start:]
	for j := range width {
		stream := out[j*n : (j+1)*n]
		for i := range stream {
			stream[i] = src[i*width+j]
		}
	}
	return dst, nil
}

// DecodeByteStreamSplit reverses EncodeByteStreamSplit: src holds width
// streams of n bytes each (n = len(src)/width, the chunk's value count), and
// the n interleaved values are appended to dst.
func DecodeByteStreamSplit(dst, src []byte, width int) ([]byte, error) {
	if width <= 0 {
		return dst, corruptf("byte stream split: width %d", width)
	}
	if len(src)%width != 0 {
		return dst, corruptf("byte stream split: %d bytes is not a whole number of %d-byte values", len(src), width)
	}
	n := len(src) / width
	start := len(dst)
	dst = slices.Grow(dst, len(src))[:start+len(src)]
	out := dst[start:]
	for j := range width {
		stream := src[j*n : (j+1)*n]
		for i, b := range stream {
			out[i*width+j] = b
		}
	}
	return dst, nil
}
