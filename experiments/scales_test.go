package experiments

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
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
		for _, scales := range [][]float32{{1}, {0.5, 3}, {1e-3, 7}} {
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
