package pmath

import (
	"math"
	"math/bits"
	"math/rand/v2"
)

// NormFloat64 returns a standard normal variate drawn from r by the
// ziggurat method of Marsaglia and Tsang (J. Stat. Softw. 5(8), 2000) with
// 128 layers: one r.Uint64 per draw in 97.2 % of the calls (bits
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

// FillNormal fills dst with standard normal variates from src: dst[j] is,
// bit for bit, the j-th of len(dst) successive NormFloat64(rand.New(src))
// calls, and src is left where those calls leave it (a *rand.Rand is a
// Source too: FillNormal(dst, r) draws what NormFloat64(r) would). It is
// the batch form of NormFloat64, for haystacks of millions of variates;
// when src is a *rand.PCG (sim.TrialSource's generators) it draws as
// FillNormalPCG does, from the PCG's state itself.
func FillNormal(dst []float64, src rand.Source) {
	if p, ok := src.(*rand.PCG); ok && p != nil {
		FillNormalPCG(dst, p)
		return
	}
	r, ok := src.(*rand.Rand)
	if !ok {
		r = rand.New(src)
	}
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
// it. It steps p's state in registers, two states at a time (pcgJump2),
// instead of calling p.Uint64 through rand.Rand's Source interface.
func FillNormalPCG(dst []float64, p *rand.PCG) {
	if fillNormalWasm(dst, p) {
		return // the WebAssembly kernel (js/wasm only): the same variates
	}
	cur := pcgOf(p)
	hi, lo := cur.hi, cur.lo // the state of the last Uint64 drawn
	if len(dst) >= 2 {
		// a and b are the next two states, advanced two steps at a time:
		// two independent chains of multiplications instead of one.
		ahi, alo := pcgNext(hi, lo)
		bhi, blo := pcgNext(ahi, alo)
		for len(dst) >= 2 {
			ua, ub := pcgOut(ahi, alo), pcgOut(bhi, blo)
			xa, oka := zigRect(ua)
			xb, okb := zigRect(ub)
			if oka && okb {
				dst[0], dst[1] = xa, xb
				dst = dst[2:]
				hi, lo = bhi, blo
				ahi, alo = pcgJump2(ahi, alo)
				bhi, blo = pcgJump2(bhi, blo)
				continue
			}
			// A draw goes on past its rectangle: finish it one state at a
			// time from where it started, then restart the pair.
			u := ua
			cur = pcgState{ahi, alo}
			if oka {
				dst[0] = xa
				dst = dst[1:]
				u, cur = ub, pcgState{bhi, blo}
			}
			dst[0] = zigSlow(u, &cur)
			dst = dst[1:]
			hi, lo = cur.hi, cur.lo
			ahi, alo = pcgNext(hi, lo)
			bhi, blo = pcgNext(ahi, alo)
		}
	}
	cur = pcgState{hi, lo}
	for j := range dst {
		u := cur.Uint64()
		x, ok := zigRect(u)
		if !ok {
			x = zigSlow(u, &cur)
		}
		dst[j] = x
	}
	p.Seed(cur.hi, cur.lo)
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
// rand.PCG's, step for step.
type pcgState struct{ hi, lo uint64 }

func (s *pcgState) Uint64() uint64 {
	s.hi, s.lo = pcgNext(s.hi, s.lo)
	return pcgOut(s.hi, s.lo)
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

// math/rand/v2's PCG (Go 1.22's pcg.go; TestFillNormalMatches checks these
// against rand.PCG): the state (hi, lo) steps as state·mul + inc mod
// 2^128, and Uint64 returns the DXSM output of the new state.
const (
	pcgMulHi = 2549297995355413924
	pcgMulLo = 4865540595714422341
	pcgIncHi = 6364136223846793005
	pcgIncLo = 1442695040888963407
	// Two steps at once: state·mul² + (mul·inc + inc) mod 2^128.
	pcgMul2Hi = 1710491942223705148
	pcgMul2Lo = 5953435361322512025
	pcgInc2Hi = 5220163216168088568
	pcgInc2Lo = 12402783752613479834
)

// pcgAffine returns state·(mHi, mLo) + (cHi, cLo) mod 2^128.
func pcgAffine(hi, lo, mHi, mLo, cHi, cLo uint64) (uint64, uint64) {
	h, l := bits.Mul64(lo, mLo)
	h += hi*mLo + lo*mHi
	l, c := bits.Add64(l, cLo, 0)
	h, _ = bits.Add64(h, cHi, c)
	return h, l
}

// pcgNext is one PCG step, pcgJump2 two.
func pcgNext(hi, lo uint64) (uint64, uint64) {
	return pcgAffine(hi, lo, pcgMulHi, pcgMulLo, pcgIncHi, pcgIncLo)
}

func pcgJump2(hi, lo uint64) (uint64, uint64) {
	return pcgAffine(hi, lo, pcgMul2Hi, pcgMul2Lo, pcgInc2Hi, pcgInc2Lo)
}

// pcgOut is PCG's DXSM output ("double xorshift multiply") of a state.
func pcgOut(hi, lo uint64) uint64 {
	const cheapMul = 0xda942042e4dd58b5
	hi ^= hi >> 32
	hi *= cheapMul
	hi ^= hi >> 48
	hi *= lo | 1
	return hi
}
