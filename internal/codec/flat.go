package codec

import "slices"

// DecodeFlat appends the n little-endian T-bit values stored back to back in
// src (a Flat{T} buffer of 8, 16, 32 or 64 bits per value) to dst. src must
// hold exactly n values.
func DecodeFlat[T Word](dst []T, src []byte, n int) ([]T, error) {
	wordBytes := wordBits[T]() / 8
	if n < 0 {
		return dst, invalidf("flat: negative value count %d", n)
	}
	if len(src)%wordBytes != 0 || len(src)/wordBytes != n {
		return dst, corruptf("flat: %d bytes do not hold exactly %d %d-bit values", len(src), n, 8*wordBytes)
	}
	start := len(dst)
	out := slices.Grow(dst, n)[:start+n]
	loadWords(out[start:], src)
	return out, nil
}

// EncodeFlat appends values to dst as little-endian T-bit words.
func EncodeFlat[T Word](dst []byte, values []T) []byte {
	return appendWords(dst, values)
}
