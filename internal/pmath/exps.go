package pmath

import "math"

// expBlock is the number of elements the vector path takes at a time
// (four AVX2 vectors of four lanes, in flight together).
const expBlock = 16

// Fast-path domain of the batch exp: for 2^-54 ≤ |x| ≤ 708, Exp takes none
// of its special branches, k = Floor(x·log2e + 0.5) lies in [−1021, 1021]
// and e^r in [½, 2), so Ldexp(e^r, k) is normal and exactly e^r with k
// added to its exponent field.
const (
	expFastMin = 0x1p-54
	expFastMax = 708
)

// Exps sets dst[i] = Exp(x[i]) for every element of x: the same bits as
// Exp, element by element (the same reduction, the same 13 divisions in
// the same order, the same scaling by 2^k), with several elements computed
// side by side so that the divider pipelines (AVX2 on amd64 where the CPU
// has it, a WebAssembly SIMD kernel in the js/wasm build, four interleaved
// scalar chains elsewhere and with the purego build tag). An element with
// |x| < 2^-54 or |x| > 708, or NaN, goes through Exp itself. dst and x may
// be the same slice; otherwise they must not overlap. Exps panics if
// len(dst) < len(x) (a programming error).
func Exps(dst, x []float64) {
	dst = dst[:len(x)]
	i := 0
	for {
		if haveExpAsm && len(x)-i >= expBlock {
			i += expBlock * expBlocks(&dst[i], &x[i], (len(x)-i)/expBlock)
		} else if len(x)-i >= expBlock {
			i += expBlock * expBlocksWasm(dst[i:], x[i:]) // the js/wasm kernel; 0 elsewhere
		}
		if len(x)-i < expBlock {
			break
		}
		// A block the vector path left (an element outside its domain,
		// or no vector path): four lanes at a time.
		exps4(dst[i:i+expBlock], x[i:i+expBlock])
		i += expBlock
	}
	exps4(dst[i:], x[i:])
}

// exps4 is Exps in pure Go: four elements at a time, each Exp's
// operations written out on four independent chains, an element outside
// the fast-path domain (or the last len(x) mod 4) through Exp.
func exps4(dst, x []float64) {
	dst = dst[:len(x)]
	i := 0
	for ; i+4 <= len(x); i += 4 {
		x0, x1, x2, x3 := x[i], x[i+1], x[i+2], x[i+3]
		if !expFast(x0) || !expFast(x1) || !expFast(x2) || !expFast(x3) {
			dst[i], dst[i+1], dst[i+2], dst[i+3] = Exp(x0), Exp(x1), Exp(x2), Exp(x3)
			continue
		}
		k0 := math.Floor(float64(x0*log2e) + 0.5)
		k1 := math.Floor(float64(x1*log2e) + 0.5)
		k2 := math.Floor(float64(x2*log2e) + 0.5)
		k3 := math.Floor(float64(x3*log2e) + 0.5)
		r0 := float64(x0-float64(k0*lnHi)) - float64(k0*lnLo)
		r1 := float64(x1-float64(k1*lnHi)) - float64(k1*lnLo)
		r2 := float64(x2-float64(k2*lnHi)) - float64(k2*lnLo)
		r3 := float64(x3-float64(k3*lnHi)) - float64(k3*lnLo)
		// Exp's first step is 1 + (r·1)/13; r·1 is r.
		s0, s1, s2, s3 := 1+r0/13, 1+r1/13, 1+r2/13, 1+r3/13
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 12)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 11)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 10)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 9)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 8)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 7)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 6)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 5)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 4)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 3)
		s0, s1, s2, s3 = expStep(r0, r1, r2, r3, s0, s1, s2, s3, 2)
		// d = 1: (r·s)/1 is r·s.
		s0, s1, s2, s3 = 1+float64(r0*s0), 1+float64(r1*s1), 1+float64(r2*s2), 1+float64(r3*s3)
		dst[i], dst[i+1], dst[i+2], dst[i+3] = scaleNormal(s0, k0), scaleNormal(s1, k1), scaleNormal(s2, k2), scaleNormal(s3, k3)
	}
	for ; i < len(x); i++ {
		dst[i] = Exp(x[i])
	}
}

// expStep is one step s = 1 + (r·s)/d of Exp's Horner loop on four
// chains. A d that is a power of two may be compiled as a product by 1/d:
// the same bits (both are the one rounding of the same real number).
func expStep(r0, r1, r2, r3, s0, s1, s2, s3, d float64) (float64, float64, float64, float64) {
	return 1 + float64(float64(r0*s0)/d), 1 + float64(float64(r1*s1)/d), 1 + float64(float64(r2*s2)/d), 1 + float64(float64(r3*s3)/d)
}

// expFast reports whether x is in the batch exp's fast-path domain
// (false for NaN).
func expFast(x float64) bool {
	a := math.Abs(x)
	return a >= expFastMin && a <= expFastMax
}

// scaleNormal returns Ldexp(s, k) for an integer k and an s whose result is
// normal: k added to s's exponent field.
func scaleNormal(s, k float64) float64 {
	return math.Float64frombits(math.Float64bits(s) + uint64(int64(k))<<52)
}
