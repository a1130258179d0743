package experiments

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/cputime"
)

// TestScalesClampedCountsAsTheCast: scalesClamped, which asks the cast only
// about magnitudes below the smallest code, counts what asking the cast
// about every element counts, on values around every edge (the smallest
// code, half of it, the largest finite value) and on random magnitudes.
func TestScalesClampedCountsAsTheCast(t *testing.T) {
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2} {
		minv, maxv := float32(f.Value(1)), fp8.MaxFinite(f)
		var x []float32
		for _, e := range []float32{minv, minv / 2, minv * 1.5, minv / 4, maxv, maxv * 1.03, 0} {
			for _, y := range []float32{e, math.Nextafter32(e, 0), math.Nextafter32(e, 1e30)} {
				x = append(x, y, -y)
			}
		}
		x = append(x, float32(math.NaN()), float32(math.Inf(1)))
		r := rand.New(rand.NewPCG(1, 2))
		for range 4096 {
			x = append(x, float32(math.Ldexp(r.Float64()-0.5, r.IntN(60)-40)))
		}
		for _, scales := range [][]float32{{1}, {0.5, 3}, {1e-3, 7}, {0.3}, {1.7e-5, 2.9e4}} {
			x := slices.Clone(x)
			// The same edges as quotients: e·s and its neighbours.
			for _, sc := range scales {
				for _, e := range []float32{minv, minv / 2, minv * 1.5, maxv, maxv * 1.03} {
					y := e * sc
					for _, z := range []float32{y, math.Nextafter32(y, 0), math.Nextafter32(y, 1e30), math.Nextafter32(math.Nextafter32(y, 0), 0)} {
						x = append(x, z, -z)
					}
				}
			}
			x = x[:len(x)/len(scales)*len(scales)]
			shape := fp8.Shape{Tokens: len(x) / len(scales), Heads: len(scales), Dim: 1}
			sat, under := scalesClamped(x, shape, scales, f)
			var wantSat, wantUnder float64
			for i := range shape.Len() {
				y := x[i] / scales[i%len(scales)]
				switch {
				case math.Abs(float64(y)) > float64(maxv):
					wantSat++
				case y != 0 && f.Encode(y, fp8.SatFinite)&0x7f == 0:
					wantUnder++
				}
			}
			if sat != wantSat || under != wantUnder || wantUnder == 0 || wantSat == 0 {
				t.Errorf("%v scales %v: %v saturated, %v flushed; the cast: %v, %v", f, scales, sat, under, wantSat, wantUnder)
			}
		}
	}
}

// FuzzScalesClamped: for any element and scale (NaN, ±∞, 0, subnormal,
// negative scales included) scalesClamped counts what the cast x/s says.
func FuzzScalesClamped(f *testing.F) {
	for _, c := range [][2]float32{{1, 1}, {448, 1}, {448.1, 1}, {1e-3, 1}, {0.0009765625, 0.5}, {-3e-9, 1e-6}, {1, 0}, {2, -1}, {float32(math.Inf(1)), 3}} {
		f.Add(c[0], c[1], false)
	}
	f.Fuzz(func(t *testing.T, x, s float32, e5m2 bool) {
		ft := fp8.FormatE4M3
		if e5m2 {
			ft = fp8.FormatE5M2
		}
		sat, under := scalesClamped([]float32{x}, fp8.Shape{Tokens: 1, Heads: 1, Dim: 1}, []float32{s}, ft)
		var wantSat, wantUnder float64
		y := x / s
		switch {
		case math.Abs(float64(y)) > float64(fp8.MaxFinite(ft)):
			wantSat = 1
		case y != 0 && ft.Encode(y, fp8.SatFinite)&0x7f == 0:
			wantUnder = 1
		}
		if sat != wantSat || under != wantUnder {
			t.Errorf("%v: x %v (%#x), s %v: saturated %v, flushed %v; the cast: %v, %v", ft, x, math.Float32bits(x), s, sat, under, wantSat, wantUnder)
		}
	})
}

// BenchmarkScalesClamped counts the clamped elements of a default scales
// cache (4096 tokens, 8 KV heads, head_dim 128) for per-head scales, on
// one core (cpu-ms/op).
func BenchmarkScalesClamped(b *testing.B) {
	shape := fp8.Shape{Tokens: 4096, Heads: 8, Dim: 128}
	r := rand.New(rand.NewPCG(3, 4))
	x := make([]float32, shape.Len())
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	scales := []float32{0.01, 0.02, 0.5, 1, 2, 3, 0.007, 1e-4}
	cpu := cputime.Start() // one goroutine: cpu-ms/op is its thread's time
	for b.Loop() {
		scalesClamped(x, shape, scales, fp8.FormatE4M3)
	}
	cpu.Report(b, 0)
}
