package pmath

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// NormFloat64 returns a standard normal variate drawn from r by the
// ziggurat method of Marsaglia and Tsang (J. Stat. Softw. 5(8), 2000) with
// 128 layers: one r.Uint64 per draw in about 97.3 % of the calls (bits
// 0..6 pick the layer, bits 7..63 are a signed 57-bit abscissa), the wedge
// and tail tests through Exp and Log. The tables are built at start-up
// from Exp and Log, so that the same r gives the same variates on every
// platform (math/rand/v2's NormFloat64 calls math.Exp and math.Log, which
// differ between amd64 and wasm).
//
// The wedge test y < Exp(−x²/2) is decided by a cheaper bound when it can
// be (see wedgeBelow); its outcome, and so every variate, is the one the
// exact comparison gives.
func NormFloat64(r *rand.Rand) float64 {
	u := r.Uint64()
	if x, ok := zigRect(u); ok {
		return x
	}
	return zigSlow(u, r)
}

// FillNormal fills dst with standard normal variates from r: dst[j] is,
// bit for bit, the j-th of len(dst) successive NormFloat64(r) calls, and r
// is left where those calls leave it. It is the batch form of NormFloat64,
// for haystacks of millions of variates.
func FillNormal(dst []float64, r *rand.Rand) {
	for j := range dst {
		u := r.Uint64()
		x, ok := zigRect(u)
		if !ok {
			x = zigSlow(u, r)
		}
		dst[j] = x
	}
}

// FillNormalPCG is FillNormal for a generator that is a PCG itself:
// dst[j] is, bit for bit, the j-th of len(dst) successive
// NormFloat64(rand.New(p)) calls, and p is left where those calls leave
// it. It steps p's state in registers instead of calling p.Uint64 through
// rand.Rand's Source interface.
func FillNormalPCG(dst []float64, p *rand.PCG) {
	s := pcgOf(p)
	hi, lo := s.hi, s.lo
	for j := range dst {
		var u uint64
		u, hi, lo = pcgStep(hi, lo)
		x, ok := zigRect(u)
		if !ok {
			s.hi, s.lo = hi, lo
			x = zigSlow(u, &s)
			hi, lo = s.hi, s.lo
		}
		dst[j] = x
	}
	p.Seed(hi, lo)
}

// zigRect returns the variate of the first Uint64 u of a draw and true if
// u falls inside its layer's rectangle; false if the draw goes on to the
// wedge or the tail (zigSlow).
func zigRect(u uint64) (float64, bool) {
	i := u & 127
	hz := int64(u) >> 7 // signed, |hz| < 2^56
	return float64(hz) * zw[i], abs64(hz) < zk[i]
}

// uint64Source is what the ziggurat's rare branches draw from: a
// *rand.Rand, or FillNormalPCG's copy of a PCG's state.
type uint64Source interface{ Uint64() uint64 }

// zigSlow finishes a draw whose first Uint64 u fell outside its layer's
// rectangle: the tail beyond zr, or the wedge test and, when the wedge
// rejects, further draws from r.
func zigSlow(u uint64, r uint64Source) float64 {
	for {
		i := u & 127
		hz := int64(u) >> 7
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
		if wedgeBelow(float64(zf[i]+float64(unit(r)*float64(zf[i-1]-zf[i]))), float64(-0.5*x)*x) {
			return x
		}
		u = r.Uint64()
	}
}

// unit returns a uniform variate in (0, 1): 53 random bits, never 0.
func unit(r uint64Source) float64 {
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

// pcgState is a copy of a rand.PCG's 128-bit state; its Uint64 is
// rand.PCG's, step for step (pcgStep).
type pcgState struct{ hi, lo uint64 }

func (s *pcgState) Uint64() uint64 {
	var u uint64
	u, s.hi, s.lo = pcgStep(s.hi, s.lo)
	return u
}

// pcgOf reads p's state (its MarshalBinary form: "pcg:", hi and lo big
// endian).
func pcgOf(p *rand.PCG) pcgState {
	var buf [20]byte
	b, _ := p.AppendBinary(buf[:0]) // never fails
	be := func(b []byte) uint64 {
		var v uint64
		for _, c := range b {
			v = v<<8 | uint64(c)
		}
		return v
	}
	return pcgState{be(b[4:12]), be(b[12:20])}
}

// pcgStep is math/rand/v2's PCG.Uint64 on the state (hi, lo): the 128-bit
// LCG step state·mul + inc, then the DXSM output of the new state (Go
// 1.22's pcg.go; TestFillNormalPCG checks it against rand.PCG).
func pcgStep(hi, lo uint64) (u, hi2, lo2 uint64) {
	const (
		mulHi    = 2549297995355413924
		mulLo    = 4865540595714422341
		incHi    = 6364136223846793005
		incLo    = 1442695040888963407
		cheapMul = 0xda942042e4dd58b5
	)
	h, l := bits.Mul64(lo, mulLo)
	h += hi*mulLo + lo*mulHi
	l, c := bits.Add64(l, incLo, 0)
	h, _ = bits.Add64(h, incHi, c)
	u = h
	u ^= u >> 32
	u *= cheapMul
	u ^= u >> 48
	u *= l | 1
	return u, h, l
}
