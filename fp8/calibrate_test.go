package fp8

import (
	"math"
	"math/rand/v2"
	"testing"
)

// calibrateLoop is Calibrate as a float comparison per element (NaNs
// fail it), the definition the bits' form must equal.
func calibrateLoop(x []float32, shape Shape, g Granularity, f Format) []float32 {
	amax := make([]float32, shape.NumScales(g))
	i := 0
	for t := 0; t < shape.Tokens; t++ {
		for h := 0; h < shape.Heads; h++ {
			k := ScaleIndex(g, t, h)
			for range shape.Dim {
				if a := float32(math.Abs(float64(x[i]))); a > amax[k] {
					amax[k] = a
				}
				i++
			}
		}
	}
	for k, a := range amax {
		amax[k] = AmaxScale(a, f)
	}
	return amax
}

// TestCalibrateAmax: every granularity, shapes whose rows are and are not
// multiples of the kernels' eight lanes, values with NaNs, infinities,
// subnormals and signed zeros: the scales of the per-element definition,
// bit for bit.
func TestCalibrateAmax(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	specials := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(1),
		math.Float32frombits(0x80000001), float32(math.Copysign(0, -1)), 448, -449, math.Float32frombits(0x7f800001), math.Float32frombits(0xff800002)}
	for _, sh := range []Shape{{1, 1, 1}, {3, 2, 5}, {4, 3, 8}, {7, 4, 16}, {5, 8, 128}, {2, 1, 67}} {
		for _, g := range []Granularity{PerTensor, PerHead, PerToken} {
			for _, f := range []Format{FormatE4M3, FormatE5M2} {
				for rep := range 8 {
					x := make([]float32, sh.Len())
					for i := range x {
						x[i] = float32(math.Ldexp(r.NormFloat64(), r.IntN(40)-20))
						if rep > 0 && r.IntN(8) == 0 {
							x[i] = specials[r.IntN(len(specials))]
						}
					}
					got, err := Calibrate(x, sh, g, f)
					if err != nil {
						t.Fatal(err)
					}
					want := calibrateLoop(x, sh, g, f)
					for k := range want {
						if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
							t.Fatalf("%v %v %v rep %d: scale %d is %g, want %g", sh, g, f, rep, k, got[k], want[k])
						}
					}
				}
			}
		}
	}
}

// BenchmarkCalibrate: a default scales cache (4096 tokens, 8 KV heads,
// head_dim 128) per tensor and per head.
func BenchmarkCalibrate(b *testing.B) {
	sh := Shape{Tokens: 4096, Heads: 8, Dim: 128}
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, sh.Len())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, g := range []Granularity{PerTensor, PerHead} {
		b.Run(g.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				Calibrate(x, sh, g, FormatE4M3)
			}
		})
	}
}
