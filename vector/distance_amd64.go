//go:build !purego

package vector

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels; useF16C the assembly half
// conversion. Tests turn them off to check the pure-Go paths.
var (
	useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	useF16C = useAVX2 && cpuid1ECX()&(1<<29) != 0
)

// Assembly kernels (distance_amd64.s). n is a multiple of 8.

//go:noescape
func dotAVX2(a, b *float32, n int) float32

//go:noescape
func l2AVX2(a, b *float32, n int) float32

//go:noescape
func cosineAVX2(a, b *float32, n int) (dot, na, nb float32)

//go:noescape
func halvesF16C(dst *float32, src *uint16, n int)

//go:noescape
func sq8L2AVX2(qm, step *float32, code *uint8, n int) float32

//go:noescape
func sq8DotAVX2(w *float32, code *uint8, n int) float32

//go:noescape
func sq8CosineAVX2(q, lo, step *float32, code *uint8, n int) (dot, nx float32)

//go:noescape
func dotHalfAVX2(a *float32, b *uint16, n int) float32

//go:noescape
func l2HalfAVX2(a *float32, b *uint16, n int) float32

//go:noescape
func cosineHalfAVX2(a *float32, b *uint16, n int) (dot, na, nb float32)

//go:noescape
func l2U8AVX2(a, b *uint8, n int) uint32

func cpuid1ECX() uint32

//go:noescape
func prefetch(p *float32, n int)

// prefetchRow asks the CPU to start loading v, for a search that visits
// rows out of order (an allow-list walk): the hardware prefetcher only
// follows sequential streams.
func prefetchRow(v []float32) {
	if len(v) > 0 {
		prefetch(&v[0], len(v))
	}
}

func simdName() string {
	if useAVX2 {
		return "avx2+fma"
	}
	return "generic"
}

func dot(a, b []float32) float32 {
	n := len(a)
	if !useAVX2 || n < 8 {
		return dotGeneric(a, b)
	}
	b = b[:n]
	n8 := n &^ 7
	s := dotAVX2(&a[0], &b[0], n8)
	for i := n8; i < n; i++ {
		s += a[i] * b[i]
	}
	return s
}

func l2(a, b []float32) float32 {
	n := len(a)
	if !useAVX2 || n < 8 {
		return l2Generic(a, b)
	}
	b = b[:n]
	n8 := n &^ 7
	s := l2AVX2(&a[0], &b[0], n8)
	for i := n8; i < n; i++ {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}

func cosineParts(a, b []float32) (d, na, nb float32) {
	n := len(a)
	if !useAVX2 || n < 8 {
		return cosineGeneric(a, b)
	}
	b = b[:n]
	n8 := n &^ 7
	d, na, nb = cosineAVX2(&a[0], &b[0], n8)
	for i := n8; i < n; i++ {
		d += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	return d, na, nb
}

func halves(dst []float32, src []uint16) {
	n := len(src)
	if !useF16C || n < 8 {
		halvesGeneric(dst, src)
		return
	}
	dst = dst[:n]
	n8 := n &^ 7
	halvesF16C(&dst[0], &src[0], n8)
	halvesGeneric(dst[n8:], src[n8:])
}

func sq8L2(qm, step []float32, code []uint8) float32 {
	n := len(qm)
	if !useAVX2 || n < 8 {
		return sq8L2Generic(qm, step, code)
	}
	step, code = step[:n], code[:n]
	n8 := n &^ 7
	s := sq8L2AVX2(&qm[0], &step[0], &code[0], n8)
	for i := n8; i < n; i++ {
		d := step[i]*float32(code[i]) - qm[i]
		s += d * d
	}
	return s
}

func sq8Dot(w []float32, code []uint8) float32 {
	n := len(w)
	if !useAVX2 || n < 8 {
		return sq8DotGeneric(w, code)
	}
	code = code[:n]
	n8 := n &^ 7
	s := sq8DotAVX2(&w[0], &code[0], n8)
	for i := n8; i < n; i++ {
		s += w[i] * float32(code[i])
	}
	return s
}

func sq8Cosine(q, lo, step []float32, code []uint8) (d, nx float32) {
	n := len(q)
	if !useAVX2 || n < 8 {
		return sq8CosineGeneric(q, lo, step, code)
	}
	lo, step, code = lo[:n], step[:n], code[:n]
	n8 := n &^ 7
	d, nx = sq8CosineAVX2(&q[0], &lo[0], &step[0], &code[0], n8)
	for i := n8; i < n; i++ {
		x := lo[i] + step[i]*float32(code[i])
		d += q[i] * x
		nx += x * x
	}
	return d, nx
}

// halfDistance computes the distance m with the F16C kernels; ok is false
// when the CPU lacks them (or the vector is too short to bother).
func halfDistance(m Metric, a []float32, b []uint16) (d float32, ok bool) {
	n := len(a)
	if !useF16C || n < 8 {
		return 0, false
	}
	b = b[:n]
	n8 := n &^ 7
	var tail [8]float32
	t := tail[:n-n8]
	halvesGeneric(t, b[n8:])
	switch m {
	case Cosine:
		s, na, nb := cosineHalfAVX2(&a[0], &b[0], n8)
		for i, x := range t {
			y := a[n8+i]
			s, na, nb = s+x*y, na+y*y, nb+x*x
		}
		return cosineFromParts(s, na, nb), true
	case Dot:
		s := dotHalfAVX2(&a[0], &b[0], n8)
		for i, x := range t {
			s += a[n8+i] * x
		}
		return 1 - s, true
	}
	s := l2HalfAVX2(&a[0], &b[0], n8)
	for i, x := range t {
		e := a[n8+i] - x
		s += e * e
	}
	return s, true
}

func l2U8(a, b []uint8) uint32 {
	n := len(a)
	if !useAVX2 || n < 16 {
		return l2U8Generic(a, b)
	}
	b = b[:n]
	n16 := n &^ 15
	s := l2U8AVX2(&a[0], &b[0], n16)
	return s + l2U8Generic(a[n16:], b[n16:])
}
