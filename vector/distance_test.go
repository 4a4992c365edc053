package vector

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var testDims = []int{1, 2, 3, 7, 8, 15, 16, 17, 31, 32, 33, 127, 128, 129, 768, 1000}

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// Scalar references in float64, with the sum of absolute terms that bounds
// the rounding error of any summation order.
func refDot(a, b []float32) (s, abs float64) {
	for i := range a {
		p := float64(a[i]) * float64(b[i])
		s += p
		abs += math.Abs(p)
	}
	return s, abs
}

func refL2(a, b []float32) (s, abs float64) {
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return s, s
}

func refCosine(a, b []float32) (s, abs float64) {
	d, dabs := refDot(a, b)
	na, _ := refDot(a, a)
	nb, _ := refDot(b, b)
	if na == 0 || nb == 0 {
		return 1, 0
	}
	n := math.Sqrt(na * nb)
	return 1 - d/n, dabs / n
}

// close reports whether got is within float32 summation error of want, whose
// absolute terms sum to abs.
func closeTo(got float32, want, abs float64) bool {
	return math.Abs(float64(got)-want) <= 2e-5*abs+1e-6
}

// forEachKernelSet runs fn with the SIMD kernels (when the CPU has them) and
// with the pure-Go ones.
func forEachKernelSet(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	saved, savedF16 := useAVX2, useF16C
	defer func() { useAVX2, useF16C = saved, savedF16 }()
	if saved {
		t.Run("simd", fn)
	}
	useAVX2, useF16C = false, false
	t.Run("generic", fn)
}

func TestKernelsMatchReference(t *testing.T) {
	forEachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, dim := range testDims {
			for trial := range 20 {
				// Offsets make the slices start unaligned.
				a := randVec(r, dim+1)[trial%2:][:dim]
				b := randVec(r, dim+3)[3:]
				if trial == 0 {
					b = append([]float32(nil), a...) // identical: l2 0, cosine 0
				}
				check := func(name string, got float32, want, abs float64) {
					t.Helper()
					if !closeTo(got, want, abs) {
						t.Fatalf("dim %d trial %d: %s = %v, reference %v", dim, trial, name, got, want)
					}
				}
				want, abs := refL2(a, b)
				check("L2Squared", L2Squared(a, b), want, abs)
				want, abs = refDot(a, b)
				check("DotProduct", DotProduct(a, b), want, abs)
				check("DotDistance", DotDistance(a, b), 1-want, abs+1)
				want, abs = refCosine(a, b)
				check("CosineDistance", CosineDistance(a, b), want, abs)
			}
		}
	})
}

// TestDotIsLances pins Dot to Lance's dot distance, 1 − a·b
// (lance-linalg's dot_distance, what Lance's flat search reports as
// _distance), on products that are exact in float32, through every path
// to a distance: the single and batch kernels, SIMD and Go, and the
// binary16 ones. A larger product is nearer.
func TestDotIsLances(t *testing.T) {
	forEachKernelSet(t, func(t *testing.T) {
		q := []float32{1, 2, 0.5, -1}
		rows := [][]float32{{3, 4, 2, 1}, {0.5, 0, 0, 0}, {0, 0, 0, 0}, {-1, -1, 0, 0}}
		want := []float32{1 - 11, 1 - 0.5, 1, 1 + 3}
		var packed []float32
		var halves []uint16
		for _, r := range rows {
			packed = append(packed, r...)
			for _, x := range r {
				halves = append(halves, Float32ToHalf(x)) // exact: small values
			}
		}
		for i, r := range rows {
			if got := DotDistance(q, r); got != want[i] {
				t.Errorf("DotDistance row %d = %v, want %v", i, got, want[i])
			}
			if got := Dot.Func()(q, r); got != want[i] {
				t.Errorf("Dot.Func row %d = %v, want %v", i, got, want[i])
			}
			if got := HalfDistance(Dot, q, halves[i*4:(i+1)*4]); got != want[i] {
				t.Errorf("HalfDistance row %d = %v, want %v", i, got, want[i])
			}
		}
		for i, got := range Distances(Dot, q, packed, 4, nil) {
			if got != want[i] {
				t.Errorf("Distances row %d = %v, want %v", i, got, want[i])
			}
		}
		for i, got := range DistancesHalf(Dot, q, halves, 4, nil) {
			if got != want[i] {
				t.Errorf("DistancesHalf row %d = %v, want %v", i, got, want[i])
			}
		}
	})
}

func TestCosineZero(t *testing.T) {
	z := make([]float32, 17)
	v := randVec(rand.New(rand.NewPCG(3, 4)), 17)
	if d := CosineDistance(z, v); d != 1 {
		t.Fatalf("cosine with zero vector = %v, want 1", d)
	}
}

func TestKernelsPanicOnShortB(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	L2Squared(make([]float32, 16), make([]float32, 15))
}

func TestDistancesMatchSingle(t *testing.T) {
	forEachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, dim := range testDims {
			const n = 9
			vs := randVec(r, n*dim)
			q := randVec(r, dim)
			for _, m := range []Metric{L2, Cosine, Dot} {
				out := Distances(m, q, vs, dim, nil)
				if len(out) != n {
					t.Fatalf("len %d", len(out))
				}
				fn := m.Func()
				for i, d := range out {
					if want := fn(q, vs[i*dim:(i+1)*dim]); d != want {
						t.Fatalf("dim %d %v row %d: batch %v, single %v", dim, m, i, d, want)
					}
				}
			}
		}
	})
}

func TestHalfToFloat32Exhaustive(t *testing.T) {
	for h := range 1 << 16 {
		f := HalfToFloat32(uint16(h))
		if f != f {
			if exp := h >> 10 & 0x1f; exp != 0x1f || h&0x3ff == 0 {
				t.Fatalf("%#04x: NaN", h)
			}
			continue
		}
		if back := Float32ToHalf(f); back != uint16(h) {
			t.Fatalf("%#04x -> %v -> %#04x", h, f, back)
		}
	}
	for _, c := range []struct {
		h uint16
		f float32
	}{
		{0x3c00, 1}, {0xc000, -2}, {0x7bff, 65504}, {0x0001, 1.0 / (1 << 24)},
		{0x0400, 1.0 / (1 << 14)}, {0x3555, 0.333251953125}, {0x7c00, float32(math.Inf(1))},
	} {
		if got := HalfToFloat32(c.h); got != c.f {
			t.Errorf("HalfToFloat32(%#04x) = %v, want %v", c.h, got, c.f)
		}
	}
}

func TestFloat32ToHalfRounding(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{65519, 0x7bff}, {65520, 0x7c00}, {1e10, 0x7c00}, {-1e10, 0xfc00},
		{1.0 / (1 << 25), 0}, {1.5 / (1 << 25), 1}, {3.0 / (1 << 25), 2},
		{1 + 1.0/(1<<11), 0x3c00}, {1 + 3.0/(1<<11), 0x3c02}, {1e-10, 0},
	} {
		if got := Float32ToHalf(c.f); got != c.h {
			t.Errorf("Float32ToHalf(%v) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	// Random values: the result is a nearest half.
	r := rand.New(rand.NewPCG(7, 8))
	for range 100000 {
		f := float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(40)-28)))
		h := Float32ToHalf(f)
		got := float64(HalfToFloat32(h))
		if math.IsInf(got, 0) {
			continue
		}
		err := math.Abs(got - float64(f))
		for _, nb := range []uint16{h - 1, h + 1} {
			x := float64(HalfToFloat32(nb))
			if nb&0x7c00 != 0x7c00 && math.Abs(x-float64(f)) < err {
				t.Fatalf("Float32ToHalf(%v) = %v, but %v is nearer", f, got, x)
			}
		}
	}
}

func TestHalvesToFloat32(t *testing.T) {
	src := make([]uint16, 1<<16+5)
	for i := range src {
		src[i] = uint16(i * 40503)
	}
	forEachKernelSet(t, func(t *testing.T) {
		for _, n := range []int{0, 1, 7, 8, 9, 100, len(src)} {
			dst := HalvesToFloat32(nil, src[:n])
			for i, f := range dst {
				want := HalfToFloat32(src[i])
				if f != want && !(f != f && want != want) {
					t.Fatalf("n %d: %#04x -> %v, want %v", n, src[i], f, want)
				}
			}
		}
	})
}

func TestHalfDistance(t *testing.T) {
	forEachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(9, 10))
		for _, dim := range append(testDims, 300, 513) {
			const n = 4
			q := randVec(r, dim)
			hv := make([]uint16, n*dim)
			for i := range hv {
				hv[i] = Float32ToHalf(float32(r.NormFloat64()))
			}
			fv := HalvesToFloat32(nil, hv)
			for _, m := range []Metric{L2, Cosine, Dot} {
				out := DistancesHalf(m, q, hv, dim, nil)
				for i, got := range out {
					row := fv[i*dim : (i+1)*dim]
					var want, abs float64
					switch m {
					case L2:
						want, abs = refL2(q, row)
					case Dot:
						want, abs = refDot(q, row)
						want, abs = 1-want, abs+1
					default:
						want, abs = refCosine(q, row)
					}
					if !closeTo(got, want, abs) {
						t.Fatalf("dim %d %v row %d: %v, reference %v", dim, m, i, got, want)
					}
				}
			}
		}
	})
}

func TestSQ8KernelsMatchGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, dim := range testDims {
		q, lo, step := randVec(r, dim), randVec(r, dim), randVec(r, dim)
		code := make([]uint8, dim)
		for i := range code {
			code[i] = uint8(r.IntN(256))
		}
		want, abs := 0.0, 0.0
		wd, wdabs, wn := 0.0, 0.0, 0.0
		wdot, wdotabs := 0.0, 0.0
		for i := range dim {
			x := float64(lo[i]) + float64(step[i])*float64(code[i])
			d := float64(step[i])*float64(code[i]) - float64(q[i])
			want += d * d
			wd += float64(q[i]) * x
			wdabs += math.Abs(float64(q[i]) * x)
			wn += x * x
			p := float64(q[i]) * float64(code[i])
			wdot += p
			wdotabs += math.Abs(p)
		}
		abs = want
		forEachKernelSet(t, func(t *testing.T) {
			if got := sq8L2(q, step, code); !closeTo(got, want, abs) {
				t.Fatalf("dim %d: sq8L2 %v, reference %v", dim, got, want)
			}
			if got := sq8Dot(q, code); !closeTo(got, wdot, wdotabs) {
				t.Fatalf("dim %d: sq8Dot %v, reference %v", dim, got, wdot)
			}
			d, n := sq8Cosine(q, lo, step, code)
			if !closeTo(d, wd, wdabs) || !closeTo(n, wn, wn) {
				t.Fatalf("dim %d: sq8Cosine %v %v, reference %v %v", dim, d, n, wd, wn)
			}
		})
	}
}

// Benchmarks: go test -run XXX -bench Kernel ./vector

func scalarL2(a, b []float32) float32 {
	var s float32
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return s
}

func scalarDot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func scalarCosine(a, b []float32) float32 {
	var d, na, nb float32
	for i := range a {
		d += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	return cosineFromParts(d, na, nb)
}

var sink float32

func BenchmarkKernel(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, dim := range []int{128, 768} {
		x, y := randVec(r, dim), randVec(r, dim)
		hy := make([]uint16, dim)
		for i, f := range y {
			hy[i] = Float32ToHalf(f)
		}
		kernels := []struct {
			name string
			fn   func(a, b []float32) float32
		}{
			{"l2/scalar", scalarL2},
			{"l2/generic", l2Generic},
			{"l2/" + Kernels(), L2Squared},
			{"dot/scalar", scalarDot},
			{"dot/generic", dotGeneric},
			{"dot/" + Kernels(), DotProduct},
			{"cosine/scalar", scalarCosine},
			{"cosine/generic", func(a, b []float32) float32 { return cosineFromParts(cosineGeneric(a, b)) }},
			{"cosine/" + Kernels(), CosineDistance},
			{"l2-half/" + Kernels(), func(a, _ []float32) float32 { return HalfDistance(L2, a, hy) }},
		}
		for _, k := range kernels {
			b.Run(fmt.Sprintf("d=%d/%s", dim, k.name), func(b *testing.B) {
				var s float32
				for b.Loop() {
					s += k.fn(x, y)
				}
				sink = s
			})
		}
	}
}

func BenchmarkDistances(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, dim := range []int{128, 768} {
		const n = 1024
		vs, q := randVec(r, n*dim), randVec(r, dim)
		out := make([]float32, n)
		for _, m := range []Metric{L2, Dot, Cosine} {
			b.Run(fmt.Sprintf("d=%d/%v", dim, m), func(b *testing.B) {
				b.SetBytes(int64(n * dim * 4))
				for b.Loop() {
					Distances(m, q, vs, dim, out)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/vector")
			})
		}
	}
}

// TestL2SquaredU8 checks the byte kernel against a uint64 reference at
// lengths around every block boundary, on unaligned slices and on the
// extremes (0 against 255: the largest square), with both kernel sets.
func TestL2SquaredU8(t *testing.T) {
	forEachKernelSet(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 6))
		for _, n := range []int{0, 1, 7, 15, 16, 17, 31, 32, 33, 48, 63, 64, 100, 128, 129, 768, 1536, 4099} {
			for trial := range 6 {
				a := make([]uint8, n+1)[trial%2:][:n]
				b := make([]uint8, n+3)[3:]
				for i := range n {
					switch trial {
					case 0:
						a[i], b[i] = 0, 255
					case 1:
						a[i], b[i] = 255, 0
					default:
						a[i], b[i] = uint8(r.IntN(256)), uint8(r.IntN(256))
					}
				}
				var want uint64
				for i := range n {
					d := int64(a[i]) - int64(b[i])
					want += uint64(d * d)
				}
				if got := L2SquaredU8(a, b); got != uint32(want) {
					t.Fatalf("n %d trial %d: L2SquaredU8 = %d, want %d", n, trial, got, uint32(want))
				}
			}
		}
		// Past 2^32 the sum wraps as the Go loop's does (66,051 bytes of
		// 255 against 0 are 4,294,966,275 + 65,025).
		n := 66_052
		a, b := make([]uint8, n), make([]uint8, n)
		for i := range a {
			a[i] = 255
		}
		if got, want := L2SquaredU8(a, b), uint32(uint64(n)*65025); got != want {
			t.Fatalf("wrapping sum: %d, want %d", got, want)
		}
	})
}
