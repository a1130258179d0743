package pmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// axpyValue draws a float64 of any magnitude, now and then a special
// (±0, ±Inf, NaN, subnormal, near overflow).
func axpyValue(r *rand.Rand) float64 {
	switch r.IntN(24) {
	case 0:
		return math.Inf(1 - 2*r.IntN(2))
	case 1:
		return math.NaN()
	case 2:
		return math.Copysign(0, r.Float64()-0.5)
	case 3:
		return math.Ldexp(r.Float64()-0.5, -1060) // subnormal
	case 4:
		return math.Ldexp(r.Float64()-0.5, 1023)
	}
	return math.Ldexp(r.NormFloat64(), r.IntN(80)-40)
}

// TestAxpyEqualsScalar checks AxpyF32x4 and AxpyF64x4 (AVX2 where the CPU
// has it) against four scalar passes o[i] += w[k]·v_k[i], bit for bit (NaN
// as NaN), on every length to 37 and random weights and values with
// specials, products that overflow and sums that cancel.
func TestAxpyEqualsScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for n := 0; n <= 37; n++ {
		for trial := 0; trial < 200; trial++ {
			var w [4]float64
			for k := range w {
				w[k] = axpyValue(r)
			}
			o := make([]float64, n)
			v64 := make([][]float64, 4)
			v32 := make([][]float32, 4)
			for k := range v64 {
				v64[k], v32[k] = make([]float64, n), make([]float32, n)
				for i := range n {
					v64[k][i] = axpyValue(r)
					v32[k][i] = float32(axpyValue(r))
				}
			}
			for i := range o {
				o[i] = axpyValue(r)
			}
			want64, want32 := append([]float64(nil), o...), append([]float64(nil), o...)
			for k := range 4 {
				for i := range n {
					want64[i] += w[k] * v64[k][i]
					want32[i] += w[k] * float64(v32[k][i])
				}
			}
			got64, got32 := append([]float64(nil), o...), append([]float64(nil), o...)
			AxpyF64x4(got64, &w, v64[0], v64[1], v64[2], v64[3])
			AxpyF32x4(got32, &w, v32[0], v32[1], v32[2], v32[3])
			for i := range n {
				if !sameBits(got64[i], want64[i]) || !sameBits(got32[i], want32[i]) {
					t.Fatalf("n %d, element %d: float64 rows %v, want %v; float32 rows %v, want %v", n, i, got64[i], want64[i], got32[i], want32[i])
				}
			}
		}
	}
}

// BenchmarkAxpyF32x4 is one key block of exact attention's P·V at
// head_dim 128: four float32 value rows added into 128 outputs.
func BenchmarkAxpyF32x4(b *testing.B) {
	o := make([]float64, 128)
	v := make([]float32, 4*128)
	w := [4]float64{0.1, 0.2, 0.3, 0.4}
	for b.Loop() {
		AxpyF32x4(o, &w, v[:128], v[128:256], v[256:384], v[384:])
	}
}

// TestDotsEqualsScalar checks DotsF32x8 and DotsF64x8 (AVX2 where the CPU
// has it) against eight scalar dot products in order, bit for bit (NaN as
// NaN), on every length to 37 with specials, overflow and cancellation.
func TestDotsEqualsScalar(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for n := 0; n <= 37; n++ {
		for trial := 0; trial < 100; trial++ {
			q := make([]float64, n)
			for i := range q {
				q[i] = axpyValue(r)
			}
			var k64 [8][]float64
			var k32 [8][]float32
			var want64, want32 [8]float64
			for i := range k64 {
				k64[i], k32[i] = make([]float64, n+r.IntN(3)), make([]float32, n+r.IntN(3))
				for x := range k64[i] {
					k64[i][x] = axpyValue(r)
				}
				for x := range k32[i] {
					k32[i][x] = float32(axpyValue(r))
				}
				for x, qx := range q {
					want64[i] += qx * k64[i][x]
					want32[i] += qx * float64(k32[i][x])
				}
			}
			var got64, got32 [8]float64
			DotsF64x8(&got64, q, &k64)
			DotsF32x8(&got32, q, &k32)
			for i := range got64 {
				if !sameBits(got64[i], want64[i]) || !sameBits(got32[i], want32[i]) {
					t.Fatalf("n %d, key %d: float64 rows %v, want %v; float32 rows %v, want %v", n, i, got64[i], want64[i], got32[i], want32[i])
				}
			}
		}
	}
}
