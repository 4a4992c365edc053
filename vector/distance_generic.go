package vector

// Pure-Go kernels: 8-way unrolled with four independent accumulators, so
// the loop is not serialized on one floating-point add. They are the
// fallback off amd64 (or without AVX2/FMA) and the reference the SIMD
// kernels are tested against. Each takes slices of equal length (b may be
// longer; only len(a) elements are read).

func dotGeneric(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += aa[0]*bb[0] + aa[4]*bb[4]
		s1 += aa[1]*bb[1] + aa[5]*bb[5]
		s2 += aa[2]*bb[2] + aa[6]*bb[6]
		s3 += aa[3]*bb[3] + aa[7]*bb[7]
	}
	for ; i < n; i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func l2Generic(a, b []float32) float32 {
	n := len(a)
	b = b[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		d0, d1, d2, d3 := aa[0]-bb[0], aa[1]-bb[1], aa[2]-bb[2], aa[3]-bb[3]
		d4, d5, d6, d7 := aa[4]-bb[4], aa[5]-bb[5], aa[6]-bb[6], aa[7]-bb[7]
		s0 += d0*d0 + d4*d4
		s1 += d1*d1 + d5*d5
		s2 += d2*d2 + d6*d6
		s3 += d3*d3 + d7*d7
	}
	for ; i < n; i++ {
		d := a[i] - b[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// cosineGeneric returns a·b, |a|² and |b|². Six accumulators: more spill
// out of the sixteen float registers.
func cosineGeneric(a, b []float32) (dot, na, nb float32) {
	n := len(a)
	b = b[:n]
	var d0, d1, a0, a1, b0, b1 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		aa, bb := a[i:i+4:i+4], b[i:i+4:i+4]
		d0 += aa[0]*bb[0] + aa[2]*bb[2]
		d1 += aa[1]*bb[1] + aa[3]*bb[3]
		a0 += aa[0]*aa[0] + aa[2]*aa[2]
		a1 += aa[1]*aa[1] + aa[3]*aa[3]
		b0 += bb[0]*bb[0] + bb[2]*bb[2]
		b1 += bb[1]*bb[1] + bb[3]*bb[3]
	}
	for ; i < n; i++ {
		d0 += a[i] * b[i]
		a0 += a[i] * a[i]
		b0 += b[i] * b[i]
	}
	return d0 + d1, a0 + a1, b0 + b1
}

// sq8L2Generic returns Σ (step[i]*code[i] - qm[i])², qm being the query
// minus the per-dimension minimum.
func sq8L2Generic(qm, step []float32, code []uint8) float32 {
	n := len(qm)
	step, code = step[:n], code[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		d0 := step[i]*float32(code[i]) - qm[i]
		d1 := step[i+1]*float32(code[i+1]) - qm[i+1]
		d2 := step[i+2]*float32(code[i+2]) - qm[i+2]
		d3 := step[i+3]*float32(code[i+3]) - qm[i+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; i < n; i++ {
		d := step[i]*float32(code[i]) - qm[i]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// sq8DotGeneric returns Σ w[i]*code[i].
func sq8DotGeneric(w []float32, code []uint8) float32 {
	n := len(w)
	code = code[:n]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += w[i] * float32(code[i])
		s1 += w[i+1] * float32(code[i+1])
		s2 += w[i+2] * float32(code[i+2])
		s3 += w[i+3] * float32(code[i+3])
	}
	for ; i < n; i++ {
		s0 += w[i] * float32(code[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// sq8CosineGeneric decodes x = lo + step*code and returns q·x and |x|².
func sq8CosineGeneric(q, lo, step []float32, code []uint8) (dot, nx float32) {
	n := len(q)
	lo, step, code = lo[:n], step[:n], code[:n]
	var d0, d1, n0, n1 float32
	i := 0
	for ; i+2 <= n; i += 2 {
		x0 := lo[i] + step[i]*float32(code[i])
		x1 := lo[i+1] + step[i+1]*float32(code[i+1])
		d0 += q[i] * x0
		d1 += q[i+1] * x1
		n0 += x0 * x0
		n1 += x1 * x1
	}
	for ; i < n; i++ {
		x := lo[i] + step[i]*float32(code[i])
		d0 += q[i] * x
		n0 += x * x
	}
	return d0 + d1, n0 + n1
}

// halvesGeneric converts IEEE 754 binary16 values to float32.
func halvesGeneric(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = HalfToFloat32(h)
	}
}

// l2U8Generic is Σ (a-b)² over bytes, wrapping mod 2^32.
func l2U8Generic(a, b []uint8) uint32 {
	b = b[:len(a)]
	var s uint32
	for i, x := range a {
		d := int32(x) - int32(b[i])
		s += uint32(d * d)
	}
	return s
}
