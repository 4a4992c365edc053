//go:build !amd64 || purego

package vector

// Off amd64 (or with the purego tag) every kernel is the pure-Go one.

var (
	useAVX2 = false
	useF16C = false
)

func simdName() string { return "generic" }

func dot(a, b []float32) float32                     { return dotGeneric(a, b) }
func l2(a, b []float32) float32                      { return l2Generic(a, b) }
func cosineParts(a, b []float32) (d, na, nb float32) { return cosineGeneric(a, b) }
func halves(dst []float32, src []uint16)             { halvesGeneric(dst, src) }
func sq8L2(qm, step []float32, code []uint8) float32 { return sq8L2Generic(qm, step, code) }
func sq8Dot(w []float32, code []uint8) float32       { return sq8DotGeneric(w, code) }
func sq8Cosine(q, lo, step []float32, code []uint8) (d, nx float32) {
	return sq8CosineGeneric(q, lo, step, code)
}

func halfDistance(Metric, []float32, []uint16) (float32, bool) { return 0, false }

func prefetchRow([]float32) {}

func l2U8(a, b []uint8) uint32 { return l2U8Generic(a, b) }
