package vector

import "math"

// Distance kernels. L2Squared, DotProduct, DotDistance and CosineDistance
// (vector.go) and the batch functions below dispatch to AVX2+FMA assembly
// on amd64 CPUs that have it (distance_amd64.s) and to 8-way unrolled Go
// elsewhere (distance_generic.go); build with -tags purego to force the
// latter. The SIMD kernels add in a different order than a sequential
// loop, so results differ from it in the last bits, never by more than
// float32 rounding of the sum.

// Kernels reports which kernel set the package uses: "avx2+fma" or
// "generic".
func Kernels() string { return simdName() }

// cosineFromParts turns a·b, |a|² and |b|² into 1 - cos(a, b); 1 when either
// vector is zero. Every cosine path goes through it, so a distance does not
// depend on which function computed it.
func cosineFromParts(d, na, nb float32) float32 {
	if na == 0 || nb == 0 {
		return 1
	}
	return 1 - d/float32(math.Sqrt(float64(na)*float64(nb)))
}

// Distances writes the distance m between query and each of the dim-long
// vectors packed in vectors (row i is vectors[i*dim:(i+1)*dim]) to out,
// growing it if it is too short, and returns out[:len(vectors)/dim]. It is
// the hot loop of exact search. len(query) must be dim.
func Distances(m Metric, query, vectors []float32, dim int, out []float32) []float32 {
	n := checkPacked(len(vectors), dim, len(query))
	out = grow(out, n)
	switch m {
	case Cosine:
		for i := range out {
			d, na, nb := cosineParts(query, vectors[i*dim:(i+1)*dim])
			out[i] = cosineFromParts(d, na, nb)
		}
	case Dot:
		for i := range out {
			out[i] = 1 - dot(query, vectors[i*dim:(i+1)*dim])
		}
	default:
		for i := range out {
			out[i] = l2(query, vectors[i*dim:(i+1)*dim])
		}
	}
	return out
}

func checkPacked(n, dim, qdim int) int {
	if dim <= 0 || n%dim != 0 || qdim != dim {
		panic("vector: vectors are not whole rows of the query's dimension")
	}
	return n / dim
}

func grow(out []float32, n int) []float32 {
	if cap(out) < n {
		return make([]float32, n)
	}
	return out[:n]
}

// HalfToFloat32 converts an IEEE 754 binary16 value (as its bits) to
// float32, exactly: subnormals, infinities and NaNs included.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0: // normal
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0: // ±0
		return math.Float32frombits(sign)
	}
	// Subnormal: value man * 2^-24, exact in float32.
	f := float32(man) * (1.0 / (1 << 24))
	if sign != 0 {
		f = -f
	}
	return f
}

// Float32ToHalf converts f to IEEE 754 binary16 bits, rounding to nearest
// even; too large values become ±Inf, NaN stays NaN.
func Float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		if e < -10 {
			return sign
		}
		// Subnormal half: shift the implicit-one mantissa right.
		man |= 0x800000
		shift := uint32(14 - e)
		h := man >> shift
		rem := man & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to Inf: still correct
	}
	return sign | uint16(h)
}

// HalvesToFloat32 converts the binary16 values src to float32 in dst,
// growing it if it is too short, and returns dst[:len(src)]. It uses the
// F16C instructions on amd64 when the CPU has them.
func HalvesToFloat32(dst []float32, src []uint16) []float32 {
	dst = grow(dst, len(src))
	halves(dst, src)
	return dst
}

// halfBlock is how many halves the half-precision distances convert at a
// time, on the stack.
const halfBlock = 256

// HalfDistance returns the distance m between a float32 query and a vector
// stored as binary16 bits, as if v were first converted to float32.
// len(v) must be len(query).
func HalfDistance(m Metric, query []float32, v []uint16) float32 {
	if len(v) != len(query) {
		panic("vector: query and vector lengths differ")
	}
	if d, ok := halfDistance(m, query, v); ok {
		return d
	}
	return halfDistanceBlocks(m, query, v)
}

// halfDistanceBlocks converts v a block at a time and runs the float32
// kernels on the blocks.
func halfDistanceBlocks(m Metric, query []float32, v []uint16) float32 {
	var buf [halfBlock]float32
	var s, na, nb float32
	for off := 0; off < len(v); off += halfBlock {
		end := min(off+halfBlock, len(v))
		x := buf[:end-off]
		halves(x, v[off:end])
		q := query[off:end]
		switch m {
		case Cosine:
			d, a, b := cosineParts(q, x)
			s, na, nb = s+d, na+a, nb+b
		case Dot:
			s += dot(q, x)
		default:
			s += l2(q, x)
		}
	}
	switch m {
	case Cosine:
		return cosineFromParts(s, na, nb)
	case Dot:
		return 1 - s
	}
	return s
}

// DistancesHalf is Distances for vectors stored as binary16 bits.
func DistancesHalf(m Metric, query []float32, vectors []uint16, dim int, out []float32) []float32 {
	n := checkPacked(len(vectors), dim, len(query))
	out = grow(out, n)
	for i := range out {
		out[i] = HalfDistance(m, query, vectors[i*dim:(i+1)*dim])
	}
	return out
}
