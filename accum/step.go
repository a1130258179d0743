package accum

import (
	"fmt"
	"math/bits"

	"github.com/fp8lab/fp8lab/fp8"
)

// Rounding is the final conversion of a T-FDPA step (rho).
type Rounding uint8

// The conversions of tensorcore-numerics.md §2.
const (
	// RZFP32 truncates toward zero to FP32 (23 fraction bits; subnormal
	// quantum 2^-149); |result| >= 2^128 gives ±inf.
	RZFP32 Rounding = iota + 1
	// RZE8M13 truncates toward zero to 13 fraction bits with the FP32
	// exponent range (quantum 2^(max(e,-126)-13)); the result is an FP32
	// bit pattern whose 10 low fraction bits are zero.
	RZE8M13
	// RNEFP16 rounds to nearest even to FP16 in one step (no double
	// rounding through FP32), overflowing to ±inf.
	RNEFP16
)

// String returns RZ-FP32, RZ-E8M13 or RNE-FP16.
func (r Rounding) String() string {
	switch r {
	case RZFP32:
		return "RZ-FP32"
	case RZE8M13:
		return "RZ-E8M13"
	case RNEFP16:
		return "RNE-FP16"
	}
	return fmt.Sprintf("Rounding(%d)", r)
}

// Params are the parameters of one T-FDPA step: L products of inputs in
// format In, F fraction bits kept below the largest exponent, the final
// conversion Rho and the exponent EZero read for a zero term.
type Params struct {
	L     int
	F     int
	Rho   Rounding
	EZero int
	In    fp8.Format
}

// Validate checks that the parameters are in the range this implementation
// computes exactly: 1 <= L <= 64, 1 <= F <= 35, a known Rho and input format.
func (p Params) Validate() error {
	switch {
	case p.L < 1 || p.L > 64:
		return fmt.Errorf("L = %d is outside 1..64", p.L)
	case p.F < 1 || p.F > 35:
		return fmt.Errorf("F = %d is outside 1..35", p.F)
	case p.Rho < RZFP32 || p.Rho > RNEFP16:
		return fmt.Errorf("unknown final conversion %v", p.Rho)
	case p.In < fp8.FormatE4M3 || p.In > fp8.FormatTF32:
		return fmt.Errorf("input format %v is not a tensor-core input (e4m3, e5m2, f16, bf16, tf32)", p.In)
	}
	return nil
}

// OutFormat is the accumulator format: FP16 for RNE-FP16, FP32 otherwise.
func (p Params) OutFormat() fp8.Format {
	if p.Rho == RNEFP16 {
		return fp8.FormatFP16
	}
	return fp8.FormatFP32
}

// Canonical NaN patterns of the tensor cores (MMA-Sim, §2.3).
const (
	NaN32 uint32 = 0x7fffffff
	NaN16 uint32 = 0x7fff
)

// Step computes d = T_FDPA(a, b, c) exactly as §2 of tensorcore-numerics.md
// describes it. a and b hold codes of p.In (len(a) == len(b) <= p.L; missing
// elements are +0); c and the result are bit patterns of p.OutFormat().
//
// Specials (§2.3): any NaN input, inf×0, or +inf and -inf together give the
// canonical NaN (0x7fffffff, or 0x7fff for FP16 output); otherwise an
// infinite product or c gives that infinity. Products never overflow. A sum
// of zero is +0, whatever the signs of the terms, even when every product
// is -0 and c = -0: the terms are summed as integers, which have no -0
// (H200 captures wgmma_*_signed_zero.tsv; MMA-Sim and Khattak & Mikaitis
// give +0 for every architecture, see docs/evidence.md).
//
// Step is the reference step, written for clarity, and the one step of
// every T-FDPA row: it runs the step of the table's instructions (nvInstr)
// with a = b = p.In, no scales and the fixed e_zero rule. The named models
// use faster paths that tests check against it.
//
// Step panics if len(a) != len(b) or len(a) > p.L, as for an index out of
// range: a programming error (the models cut their inputs into steps; the
// inputs of a user are checked where they are read). p must be valid
// (Validate); any code value is accepted.
func (p Params) Step(a, b []uint32, c uint32) uint32 {
	if len(a) != len(b) || len(a) > p.L || p.L > 64 {
		panic(fmt.Sprintf("accum: Step with %d and %d elements for L = %d", len(a), len(b), p.L))
	}
	m := nvInstr{info: InstrInfo{L: p.L, F: p.F, Rho: p.Rho, EZero: p.EZero}, a: p.In, b: p.In, c: p.OutFormat()}
	return uint32(oneStep(&m, a, b, nil, nil, uint64(c), stepRules{}))
}

// shiftTrunc returns trunc(m × 2^s) for s of either sign.
func shiftTrunc(m uint64, s int) uint64 {
	if s >= 0 {
		return m << uint(s)
	}
	if s <= -64 {
		return 0
	}
	return m >> uint(-s)
}

// round converts s × 2^sx (s != 0) with the final conversion r and returns
// the bit pattern of the output format.
func round(r Rounding, s int64, sx int) uint32 {
	neg := s < 0
	mag := uint64(s)
	if neg {
		mag = uint64(-s)
	}
	var v uint32
	switch r {
	case RZFP32:
		v = roundRZ(mag, sx, 23)
	case RZE8M13:
		v = roundRZ(mag, sx, 13)
	case RNEFP16:
		v = roundRNE16(mag, sx)
		if neg {
			v |= 0x8000
		}
		return v
	}
	if neg {
		v |= 0x80000000
	}
	return v
}

// roundRZ truncates mag × 2^sx (mag > 0) to fb fraction bits in the FP32
// exponent range and returns the FP32 magnitude bits.
func roundRZ(mag uint64, sx int, fb int) uint32 {
	e := bits.Len64(mag) - 1 + sx
	if e >= 128 {
		return 0x7f800000
	}
	qe := max(e, -126) - fb
	mag = shiftTrunc(mag, sx-qe)
	if e >= -126 {
		return uint32(e+127)<<23 | uint32(mag-1<<uint(fb))<<uint(23-fb)
	}
	return uint32(mag) << uint(23-fb)
}

// roundRNE16 rounds mag × 2^sx (mag > 0) to nearest even FP16 and returns
// the FP16 magnitude bits (0x7c00 on overflow).
func roundRNE16(mag uint64, sx int) uint32 {
	e := bits.Len64(mag) - 1 + sx
	if e > 16 {
		return 0x7c00
	}
	te := max(e, -14)
	qe := te - 10
	r := qe - sx
	var q uint64
	switch {
	case r <= 0:
		q = mag << uint(-r)
	case r > 64:
		q = 0
	default:
		q = mag >> uint(r)
		var rem, half uint64
		if r == 64 {
			rem, half = mag, 1<<63
		} else {
			rem, half = mag&(1<<uint(r)-1), 1<<uint(r-1)
		}
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
	}
	code := uint64(te+14)<<10 + q
	if code >= 0x7c00 {
		return 0x7c00
	}
	return uint32(code)
}
