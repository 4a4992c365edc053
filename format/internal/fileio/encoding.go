package fileio

// Encoding knobs and bounds the 2.0 and 2.1+ generations share.

// Field metadata keys that steer the writers (Lance's names).
const (
	// MetaCompression asks for general compression ("zstd", "lz4"), FSST
	// ("fsst") or none ("none").
	MetaCompression = "lance-encoding:compression"
	// MetaCompressionLevel is the zstd level of metaCompression.
	MetaCompressionLevel = "lance-encoding:compression-level"
)

// Limits on general-purpose decompression, which can expand input by large
// factors: zstd reaches about 2^15 with RLE blocks. A buffer may claim at
// most that much output (and at least a floor, so that tiny buffers of
// repeated values still decode).
const (
	MaxDecompressedBytes  = 1 << 30
	minDecompressionLimit = 1 << 20
	maxCompressionRatio   = 1 << 15
)

// DecompressLimit returns the most output a compressed buffer of n bytes may
// claim.
func DecompressLimit(n int) int {
	return min(MaxDecompressedBytes, max(minDecompressionLimit, n*maxCompressionRatio))
}
