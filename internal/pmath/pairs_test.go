package pmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// pairsRef is PairsToF32's loop, element by element.
func pairsRef(a, b []float32, z []float64, as, bs, bm float64) {
	for i := range len(z) / 2 {
		a[i] = float32(as * z[2*i])
		b[i] = float32(bm + float64(bs*z[2*i+1]))
	}
}

// TestPairsToF32: the vector path gives the loop's bits for normals,
// values at float32's rounding boundaries (ties included), subnormals,
// overflow to ±Inf, NaN and −0, at every length up to 37 pairs (the
// tails); shuffling the lanes or fusing the multiply-add fails it.
func TestPairsToF32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1e-40, -1e-45, 3.4e38, 1e39,
		1 + 0x1p-24, 1 + 0x1p-24 + 0x1p-52, 1 + 3*0x1p-24, math.SmallestNonzeroFloat64}
	scales := [][3]float64{{1, 1, 0.5}, {0.37, 2.5, -1.25}, {1e-30, 1e30, 0}, {-3, 0.1, 100}}
	for n := 0; n <= 37; n++ {
		for _, sc := range scales {
			z := make([]float64, 2*n)
			for i := range z {
				switch r.IntN(4) {
				case 0:
					z[i] = specials[r.IntN(len(specials))]
				default:
					z[i] = r.NormFloat64()
				}
			}
			a, b := make([]float32, n), make([]float32, n)
			wa, wb := make([]float32, n), make([]float32, n)
			PairsToF32(a, b, z, sc[0], sc[1], sc[2])
			pairsRef(wa, wb, z, sc[0], sc[1], sc[2])
			for i := range n {
				if math.Float32bits(a[i]) != math.Float32bits(wa[i]) && !(a[i] != a[i] && wa[i] != wa[i]) {
					t.Fatalf("n %d scales %v: a[%d] = %v, want %v (z %v)", n, sc, i, a[i], wa[i], z[2*i])
				}
				if math.Float32bits(b[i]) != math.Float32bits(wb[i]) && !(b[i] != b[i] && wb[i] != wb[i]) {
					t.Fatalf("n %d scales %v: b[%d] = %v, want %v (z %v)", n, sc, i, b[i], wb[i], z[2*i+1])
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("an odd number of values did not panic")
		}
	}()
	PairsToF32(make([]float32, 2), make([]float32, 2), make([]float64, 3), 1, 1, 0)
}

// FuzzPairsToF32: any eight values and scales, the loop's bits.
func FuzzPairsToF32(f *testing.F) {
	f.Add(0.5, -1.0, 2.0, 1e30, 3.0, 4.0, 5.0, 6.0, 1.0, 1.0, 0.5)
	f.Fuzz(func(t *testing.T, z0, z1, z2, z3, z4, z5, z6, z7, as, bs, bm float64) {
		z := []float64{z0, z1, z2, z3, z4, z5, z6, z7}
		a, b, wa, wb := make([]float32, 4), make([]float32, 4), make([]float32, 4), make([]float32, 4)
		PairsToF32(a, b, z, as, bs, bm)
		pairsRef(wa, wb, z, as, bs, bm)
		for i := range 4 {
			if (math.Float32bits(a[i]) != math.Float32bits(wa[i]) && !(a[i] != a[i] && wa[i] != wa[i])) ||
				(math.Float32bits(b[i]) != math.Float32bits(wb[i]) && !(b[i] != b[i] && wb[i] != wb[i])) {
				t.Fatalf("pair %d: %v %v, want %v %v", i, a[i], b[i], wa[i], wb[i])
			}
		}
	})
}

// TestPairsToF32Heads: PairsToF32Heads gives the definition's bits (each
// pair's head from i/d, wrapping after the last magnitude) for normals,
// float32 rounding boundaries, subnormals, overflow, NaN and −0, with
// magnitudes of both signs and far from 1, head widths from 1 to 128 and
// lengths that end inside a head (in the js/wasm build through
// normal.wat's heads: TestWasmKernels runs it there).
func TestPairsToF32Heads(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 9))
	specials := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1e-40, -1e-45, 3.4e38, 1e39,
		1 + 0x1p-24, 1 + 0x1p-24 + 0x1p-52, 1 + 3*0x1p-24, math.SmallestNonzeroFloat64}
	magSets := [][]float64{{1}, {0.37, -2.5, 1e-30, 1e30}, {3, 0.1, 100, 7, 1e-3, 2, 0.5, 9}}
	for _, d := range []int{1, 3, 128} {
		for _, mags := range magSets {
			for _, n := range []int{0, 1, d - 1, d, 2*d + 1, len(mags)*d*3 + 2} {
				if n < 0 {
					continue
				}
				for _, bm := range []float64{0, -1.25, 0.5} {
					z := make([]float64, 2*n)
					for i := range z {
						if r.IntN(4) == 0 {
							z[i] = specials[r.IntN(len(specials))]
						} else {
							z[i] = r.NormFloat64()
						}
					}
					a, b := make([]float32, n), make([]float32, n)
					PairsToF32Heads(a, b, z, mags, d, bm)
					for i := range n {
						m := mags[(i/d)%len(mags)]
						wa, wb := float32(m*z[2*i]), float32(m*(bm+z[2*i+1]))
						if math.Float32bits(a[i]) != math.Float32bits(wa) && !(a[i] != a[i] && wa != wa) {
							t.Fatalf("d %d mags %v n %d: a[%d] = %v, want %v (z %v)", d, mags, n, i, a[i], wa, z[2*i])
						}
						if math.Float32bits(b[i]) != math.Float32bits(wb) && !(b[i] != b[i] && wb != wb) {
							t.Fatalf("d %d mags %v n %d bm %v: b[%d] = %v, want %v (z %v)", d, mags, n, bm, i, b[i], wb, z[2*i+1])
						}
					}
				}
			}
		}
	}
}
