package accum

import (
	"math"

	"github.com/fp8lab/fp8lab/fp8"
)

// fp8Step is a T-FDPA step over 8-bit inputs for F <= 25 and an FP32 or
// e8m13 output (rho RZ-FP32 or RZ-E8M13), written for speed. It computes
// exactly what Params.Step computes, through two observations:
//
//   - e_max only needs each input's exponent field Exp(x): a 256-entry table
//     per operand, with sentinels for zero (far below e_zero) and for NaN/inf
//     (far above any exponent) so that one max finds both;
//   - a term truncated toward zero to F fraction bits below e_max is
//     trunc(p × 2^(F − e_max)), and for FP8 products p (at most 8
//     significant bits) and an FP32 c that scaling is exact in float64, so
//     Go's float64 -> int64 conversion, which truncates toward zero, gives
//     the integer q_t exactly.
//
// The integer sum and the final conversion are those of the reference.
type fp8Step struct {
	exp   [256]int32   // Exp(x), expZero for zero, expSpecial for NaN/inf
	val   [256]float64 // exact value of each code (0 for specials)
	f     int          // F
	fb    int          // fraction bits kept by rho: 23 or 13
	ezero int32
}

const (
	expZero    = -1000 // sum with any other exponent stays below e_zero
	expSpecial = 5000  // sum with anything (even expZero) stays above 1000
)

// newFP8Step builds the tables for p. With normalize, inputs are read as
// FP16 would read them (subnormal e4m3/e5m2 codes become normal FP16
// numbers: their exponent is their true exponent), as in the compiler's FP16
// emulation of mma.sync FP8 on sm_90.
func newFP8Step(p Params, normalize bool) *fp8Step {
	s := &fp8Step{f: p.F, fb: 23, ezero: int32(p.EZero)}
	if p.Rho == RZE8M13 {
		s.fb = 13
	}
	for c := 0; c < 256; c++ {
		d := p.In.Decompose(uint32(c))
		switch d.Class {
		case fp8.Zero:
			s.exp[c] = expZero
		case fp8.Inf, fp8.NaN:
			s.exp[c] = expSpecial
		default:
			m, e := d.M, d.E
			if normalize {
				for m < 1<<uint(p.In.FracBits()) {
					m <<= 1
					e--
				}
			}
			s.exp[c] = int32(e)
			s.val[c] = p.In.Value(uint32(c))
		}
	}
	return s
}

// step computes T_FDPA(a, b, c) over len(a) <= 64 pairs. ok is false when an
// input or c is NaN or inf, or the sum is an exact zero (whose sign needs
// every term's sign): the caller then takes the reference path.
func (s *fp8Step) step(a, b []uint16, c float32) (float32, bool) {
	b = b[:len(a)]
	emax := int32(-2000)
	for i, x := range a {
		emax = max(emax, s.exp[x&0xff]+s.exp[b[i]&0xff])
	}
	if emax > 1000 {
		return 0, false
	}
	cb := math.Float32bits(c)
	var ec int32
	switch cexp := int32(cb >> 23 & 0xff); {
	case cexp == 0xff:
		return 0, false
	case cb&0x7fffffff == 0:
		ec = s.ezero
	case cexp == 0:
		ec = -126
	default:
		ec = cexp - 127
	}
	emax = max(emax, ec, s.ezero)
	// 2^(F - e_max) as float64 bits: F - e_max lies in [-160, 160].
	scale := math.Float64frombits(uint64(1023+int32(s.f)-emax) << 52)
	sum := int64(float64(c) * scale)
	for i, x := range a {
		sum += int64(s.val[x&0xff] * s.val[b[i]&0xff] * scale)
	}
	if sum == 0 {
		return 0, false
	}
	neg := sum < 0
	mag := uint64(sum)
	if neg {
		mag = uint64(-sum)
	}
	v := roundRZ(mag, int(emax)-s.f, s.fb)
	if neg {
		v |= 0x80000000
	}
	return math.Float32frombits(v), true
}
