package vector

import (
	"fmt"

	"github.com/lancerdb/lancer"
)

// Metric is a distance between two vectors; smaller is nearer for every
// metric, as in Lance (_distance).
type Metric uint8

const (
	// L2 is the squared Euclidean distance, Lance's "l2" (Lance reports it
	// squared too).
	L2 Metric = iota
	// Cosine is 1 - cos(a, b), Lance's "cosine".
	Cosine
	// Dot is 1 - a·b, Lance's "dot" (lance-linalg's dot_distance, which
	// its flat search reports as _distance): larger products are nearer.
	Dot
)

// String returns the metric's name as Lance spells it.
func (m Metric) String() string {
	switch m {
	case L2:
		return "l2"
	case Cosine:
		return "cosine"
	case Dot:
		return "dot"
	}
	return fmt.Sprintf("metric(%d)", uint8(m))
}

// ParseMetric parses a metric name as Lance accepts it ("l2", "euclidean",
// "cosine", "dot"), case-insensitively.
func ParseMetric(s string) (Metric, error) {
	switch lower(s) {
	case "l2", "euclidean":
		return L2, nil
	case "cosine":
		return Cosine, nil
	case "dot":
		return Dot, nil
	}
	return 0, fmt.Errorf("vector: unknown distance metric %q (want l2, cosine or dot): %w", s, lancer.ErrInvalidArgument)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Func returns the distance function of m. Both vectors have the same
// length; the function does not check it.
func (m Metric) Func() func(a, b []float32) float32 {
	switch m {
	case Cosine:
		return CosineDistance
	case Dot:
		return DotDistance
	}
	return L2Squared
}

// Neighbor is one search result: a vector's id (its position in the input,
// or whatever id the caller gave it) and its distance to the query.
type Neighbor struct {
	ID       uint64
	Distance float32
}

// L2Squared returns the squared Euclidean distance of a and b. It uses
// SIMD where the CPU has it (distance.go); b must be at least as long as a.
func L2Squared(a, b []float32) float32 { return l2(a, b) }

// DotProduct returns a·b.
func DotProduct(a, b []float32) float32 { return dot(a, b) }

// DotDistance returns 1 - a·b, as Lance computes it (in float32, the
// product first).
func DotDistance(a, b []float32) float32 { return 1 - dot(a, b) }

// L2SquaredU8 is the squared L2 distance between two byte codes of equal
// length, Σ (a[i]-b[i])², as an integer wrapping mod 2^32: the distance
// Lance's scalar-quantized indices rank by before scaling. Being integer
// arithmetic, the SIMD kernel's result is bit-identical to the loop's.
func L2SquaredU8(a, b []uint8) uint32 { return l2U8(a, b) }

// CosineDistance returns 1 - a·b / (|a| |b|); 1 when either is zero.
func CosineDistance(a, b []float32) float32 {
	d, na, nb := cosineParts(a, b)
	return cosineFromParts(d, na, nb)
}
