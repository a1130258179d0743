package pmath

import (
	"math"
	"math/rand/v2"
)

// NormFloat64 returns a standard normal variate drawn from r by the
// ziggurat method of Marsaglia and Tsang (J. Stat. Softw. 5(8), 2000) with
// 128 layers: one r.Uint64 per draw in about 98.8 % of the calls (bits
// 0..6 pick the layer, bits 7..63 are a signed 57-bit abscissa), the wedge
// and tail tests through Exp and Log. The tables are built at start-up
// from Exp and Log, so that the same r gives the same variates on every
// platform (math/rand/v2's NormFloat64 calls math.Exp and math.Log, which
// differ between amd64 and wasm).
func NormFloat64(r *rand.Rand) float64 {
	for {
		u := r.Uint64()
		i := u & 127
		hz := int64(u) >> 7 // signed, |hz| < 2^56
		x := float64(hz) * zw[i]
		if abs64(hz) < zk[i] {
			return x // inside the layer's rectangle
		}
		if i == 0 { // the tail beyond zr
			for {
				a := float64(-Log(unit(r))) / zr
				b := -Log(unit(r))
				if float64(b+b) >= float64(a*a) {
					if hz > 0 {
						return zr + a
					}
					return -zr - a
				}
			}
		}
		// The wedge between the layer's rectangle and the curve.
		if float64(zf[i]+float64(unit(r)*float64(zf[i-1]-zf[i]))) < Exp(float64(-0.5*x)*x) {
			return x
		}
	}
}

// unit returns a uniform variate in (0, 1): 53 random bits, never 0.
func unit(r *rand.Rand) float64 {
	return (float64(r.Uint64()>>11) + 0.5) * 0x1p-53
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// The ziggurat's constants (Marsaglia and Tsang, 128 layers): zr is the
// start of the tail, zv the area of each layer.
const (
	zr = 3.442619855899
	zv = 9.91256303526217e-3
)

// zk[i] is the layer's rectangle bound (in units of 2^-56 of its width),
// zw[i] the width per unit, zf[i] the density at the layer's edge.
var zk [128]int64
var zw, zf [128]float64

func init() {
	const m = 0x1p56
	dn, tn := zr, zr
	q := zv / Exp(float64(-0.5*dn)*dn)
	zk[0] = int64(dn / q * m)
	zk[1] = 0
	zw[0] = q / m
	zw[127] = dn / m
	zf[0] = 1
	zf[127] = Exp(float64(-0.5*dn) * dn)
	for i := 126; i >= 1; i-- {
		dn = math.Sqrt(-2 * Log(float64(zv/dn)+Exp(float64(-0.5*dn)*dn)))
		zk[i+1] = int64(dn / tn * m)
		tn = dn
		zf[i] = Exp(float64(-0.5*dn) * dn)
		zw[i] = dn / m
	}
}
