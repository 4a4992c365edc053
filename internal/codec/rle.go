package codec

import (
	"encoding/binary"
	"slices"
)

// maxRunLength is the longest run one u8 run length can describe; longer runs
// are written as several runs of the same value.
const maxRunLength = 255

// DecodeRLE decodes the mini-block form of RLE and appends exactly n values to
// dst. runValues holds one T-bit value per run, runLengths one u8 count per
// run. The runs may describe more than n values: Lance's chunker cuts a chunk
// at a power-of-two count after its runs were written, and the next chunk
// starts over from its own first value, so the excess is dropped here.
func DecodeRLE[T Word](dst []T, runValues, runLengths []byte, n int) ([]T, error) {
	return decodeRLE(dst, runValues, runLengths, n, true)
}

// DecodeRLEBlock decodes the block form of RLE (Lance 2.2 rep/def levels and
// other blocks): a u64 LE byte length V, V bytes of run values, then the u8
// run lengths. Unlike the mini-block form the runs must describe exactly n
// values.
func DecodeRLEBlock[T Word](dst []T, block []byte, n int) ([]T, error) {
	if len(block) < 8 {
		return dst, corruptf("rle block: %d bytes, too short for the 8-byte header", len(block))
	}
	valuesSize := binary.LittleEndian.Uint64(block)
	if valuesSize > uint64(len(block)-8) {
		return dst, corruptf("rle block: header claims %d bytes of run values but only %d follow",
			valuesSize, len(block)-8)
	}
	values := block[8 : 8+valuesSize]
	lengths := block[8+valuesSize:]
	return decodeRLE(dst, values, lengths, n, false)
}

func decodeRLE[T Word](dst []T, runValues, runLengths []byte, n int, allowExcess bool) ([]T, error) {
	form := "rle block"
	if allowExcess {
		form = "rle"
	}
	if n < 0 {
		return dst, invalidf("%s: negative value count %d", form, n)
	}
	if n == 0 {
		// Lance does not look at the buffers of an empty run list at all.
		return dst, nil
	}
	wordBytes := wordBits[T]() / 8
	if len(runValues)%wordBytes != 0 {
		return dst, corruptf("%s: %d bytes of run values is not a multiple of %d", form, len(runValues), wordBytes)
	}
	runs := len(runValues) / wordBytes
	if runs != len(runLengths) {
		return dst, corruptf("%s: %d run values but %d run lengths", form, runs, len(runLengths))
	}
	// Sum the runs before allocating so that the allocation is bounded by
	// what the input can describe, not by the caller's n alone.
	total := 0
	for _, length := range runLengths {
		total += int(length)
	}
	switch {
	case total < n:
		return dst, corruptf("%s: runs cover %d values, want %d", form, total, n)
	case total > n && !allowExcess:
		return dst, corruptf("%s: runs cover %d values, more than the %d expected", form, total, n)
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	var value [1]T
	pos := 0
	for run, length := range runLengths {
		count := min(int(length), n-pos)
		loadWords(value[:], runValues[run*wordBytes:])
		fill := out[pos : pos+count]
		for i := range fill {
			fill[i] = value[0]
		}
		pos += count
		if pos == n {
			break
		}
	}
	return dst, nil
}

// EncodeRLE run-length encodes values, appending one T-bit value per run to
// runValues and its u8 length to runLengths. Runs longer than 255 are split.
// The runs describe exactly len(values) values.
func EncodeRLE[T Word](runValues, runLengths []byte, values []T) ([]byte, []byte) {
	var run [1]T
	for start := 0; start < len(values); {
		run[0] = values[start]
		end := start + 1
		for end < len(values) && end-start < maxRunLength && values[end] == run[0] {
			end++
		}
		runValues = appendWords(runValues, run[:])
		runLengths = append(runLengths, byte(end-start))
		start = end
	}
	return runValues, runLengths
}

// EncodeRLEBlock appends the block form of RLE for values to dst: a u64 LE
// byte length of the run values, the run values, then the u8 run lengths.
func EncodeRLEBlock[T Word](dst []byte, values []T) []byte {
	runValues, runLengths := EncodeRLE(nil, nil, values)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(runValues)))
	dst = append(dst, runValues...)
	return append(dst, runLengths...)
}

// CountRuns returns the number of maximal runs of equal adjacent values,
// before any splitting at 255. Lance picks RLE for a page when this is below
// half the value count.
func CountRuns[T Word](values []T) int {
	if len(values) == 0 {
		return 0
	}
	runs := 1
	for i := 1; i < len(values); i++ {
		if values[i] != values[i-1] {
			runs++
		}
	}
	return runs
}
