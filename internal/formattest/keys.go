package formattest

import "github.com/apache/arrow-go/v18/arrow"

// The Arrow field metadata keys the data asks the writer with, spelled as
// Lance spells them (format's tests check that the writer reads the same).
const (
	// MetaCompression asks for a compression scheme ("zstd", "lz4", "fsst").
	MetaCompression = "lance-encoding:compression"
	// MetaCompressionLevel is the scheme's level.
	MetaCompressionLevel = "lance-encoding:compression-level"
	// MetaBlobInlineThreshold and MetaBlobDedicatedThreshold are the blob
	// v2 sizes up to which a blob is stored inline, and from which in a
	// file of its own.
	MetaBlobInlineThreshold    = "lance-encoding:blob-inline-size-threshold"
	MetaBlobDedicatedThreshold = "lance-encoding:blob-dedicated-size-threshold"
)

// releaseAll releases every array of arrs.
func releaseAll(arrs []arrow.Array) {
	for _, a := range arrs {
		a.Release()
	}
}
