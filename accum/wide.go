package accum

import (
	"math"

	"github.com/fp8lab/fp8lab/fp8"
)

// Wide is a tensor-core model that also reads 32-bit input codes: tf32
// operands are float32 bit patterns, which []uint16 cannot hold. A code of
// a tf32 model is read as the tensor cores read a float32 register for a
// TF32 MMA: the 13 low fraction bits are ignored (truncation; see
// fp8.TF32FromFloat32). For 8- and 16-bit formats the code is in the low
// bits, as for Step and Dot.
type Wide interface {
	Stepper
	// Step32 is Step with 32-bit codes.
	Step32(a, b []uint32, c float32) float32
	// Dot32 is Dot with 32-bit codes: a chain of L-element steps over the
	// whole of a.
	Dot32(a, b []uint32, c float32) float32
}

// code32 is the 32-bit code a model of format f reads for the 16-bit code x
// of Step and Dot: x itself, or for a 32-bit format (tf32) the float32
// pattern x<<16, a bf16 value that tf32 holds exactly.
func code32(f fp8.Format, x uint16) uint32 {
	if f.CodeBits() == 32 {
		return uint32(x) << 16
	}
	return uint32(x)
}

// Step32 runs one instruction (K/L chained steps from c) on 32-bit codes
// (len(a) <= K; missing elements are +0).
func (m *tfdpa) Step32(a, b []uint32, c float32) float32 {
	L := m.info.Step.L
	for i := 0; i < m.info.K; i += L {
		lo, hi := min(i, len(a)), min(i+L, len(a))
		c = m.step32(a[lo:hi], b[lo:hi], c)
	}
	return c
}

// Dot32 chains steps of L elements over the whole of a (32-bit codes).
func (m *tfdpa) Dot32(a, b []uint32, c float32) float32 {
	L := m.info.Step.L
	b = b[:len(a)]
	for i := 0; i < len(a); i += L {
		if m.wide != nil {
			// Fast steps up to the first with a NaN or inf, if any.
			var stop int
			c, stop = m.wide.chain(a[i:], b[i:], c, L)
			if i += stop; i >= len(a) {
				break
			}
		}
		j := min(i+L, len(a))
		c = m.refStep32(a[i:j], b[i:j], c)
	}
	return c
}

func (m *tfdpa) step32(a, b []uint32, c float32) float32 {
	if m.wide != nil {
		if d, ok := m.wide.step(a, b, c); ok {
			return d
		}
	}
	return m.refStep32(a, b, c)
}

// widePathApplies reports whether wideStep computes p exactly.
func widePathApplies(p Params) bool {
	return p.In == fp8.FormatTF32 && p.F <= 30 && p.L <= 64 && p.EZero >= -300 && p.EZero <= 300 &&
		(p.Rho == RZFP32 || p.Rho == RZE8M13)
}

// roundingFracBits is the number of fraction bits an RZ conversion keeps.
func roundingFracBits(r Rounding) int {
	if r == RZE8M13 {
		return 13
	}
	return 23
}

// wideStep is the T-FDPA step over tf32 codes for F <= 30 and an RZ-FP32 or
// RZ-E8M13 output, written for speed; it computes exactly what Params.Step
// computes. As in tableStep, a term truncated toward zero to F fraction bits
// below e_max is trunc(t × 2^(F − e_max)) and for a product of two tf32
// values (at most 22 significant bits, exponent at least -272) or an FP32 c
// the scaling is exact in float64 (|e_zero| <= 300 keeps F − e_max in
// [-254, 330]), so the
// float64 -> int64 conversion gives the integer term. Unlike tableStep, a
// zero product is read with exponent e_zero here: tf32 products reach
// 2^-272, far below any e_zero, so e_zero can decide e_max.
type wideStep struct {
	f     int
	fb    int
	ezero int32
}

const tf32Mask = 0xffffe000 // the bits of a float32 a TF32 MMA reads

// tf32Exp is the exponent a step reads for each exponent field: -126 for
// subnormals (field 0; a zero is told apart by its fraction), expSpecial
// for inf and NaN.
var tf32Exp = func() (t [256]int32) {
	for e := range t {
		t[e] = int32(max(e, 1)) - 127
	}
	t[255] = expSpecial
	return
}()

// chain runs steps of L elements over a and b from c, as step does, and
// returns the result and how far it got: len(a), or the start of the
// first step that holds a NaN or inf (not run; the caller runs it on the
// reference path).
//
// Where the CPU has AVX2 and L is a multiple of 4, the whole steps run in
// scaledFast's TF32 kernel (chainTF32, scaled_amd64.s), which computes the
// same step (TestDot32MatchesReference, TestWideChainAsmEqualsGo); the
// partial step at the end stays here.
func (s *wideStep) chain(a, b []uint32, c float32, L int) (float32, int) {
	b = b[:len(a)]
	if haveStepAsm && !wideGoOnly && L%4 == 0 && L <= 64 && len(a) >= L {
		steps := len(a) / L
		d, done := chainTF32(&a[0], &b[0], steps, L, int32(s.f), int32(s.fb), s.ezero, c)
		if done < steps*L || done == len(a) {
			return d, done
		}
		d, rest := s.chainGo(a[done:], b[done:], d, L)
		return d, done + rest
	}
	return s.chainGo(a, b, c, L)
}

// wideGoOnly makes wideStep.chain take its Go loop even where the kernel
// runs (for the tests that compare the two).
var wideGoOnly = false

// chainGo is chain's Go loop.
func (s *wideStep) chainGo(a, b []uint32, c float32, L int) (float32, int) {
	b = b[:len(a)]
	ezero, f := s.ezero, int32(s.f)
	keep := ^uint32(0) << uint(23-s.fb) // the fraction bits rho keeps
	for i := 0; i < len(a); i += L {
		x := a[i:min(i+L, len(a))]
		y := b[i : i+len(x)]
		emax := int32(-2000)
		for k, xa := range x {
			xb := y[k]
			e := tf32Exp[xa>>23&0xff] + tf32Exp[xb>>23&0xff]
			if (xa&0x7fffe000 == 0 || xb&0x7fffe000 == 0) && e < 1000 {
				e = ezero // a zero product (inf × 0 keeps the sentinel)
			}
			emax = max(emax, e)
		}
		cb := math.Float32bits(c)
		ce := tf32Exp[cb>>23&0xff]
		if cb&0x7fffffff == 0 {
			ce = ezero
		}
		emax = max(emax, ce)
		if emax > 1000 {
			return c, i
		}
		scale := math.Float64frombits(uint64(1023+f-emax) << 52)
		sum := int64(float64(c) * scale)
		for k, xa := range x {
			sum += int64(float64(math.Float32frombits(xa&tf32Mask)) * float64(math.Float32frombits(y[k]&tf32Mask)) * scale)
		}
		// rzFloat32, its normal case written out (inlined).
		v := float64(sum) * math.Float64frombits(uint64(1023+emax-f)<<52)
		vb := math.Float64bits(v)
		if e := int32(vb>>52&0x7ff) - 1023; e >= -126 && e < 128 {
			c = math.Float32frombits(uint32(vb>>32)&0x80000000 | uint32(e+127)<<23 | uint32(vb>>29)&0x7fffff&keep)
		} else {
			c = rzFloat32(sum, emax-f, s.fb)
		}
	}
	return c, len(a)
}

// step computes T_FDPA(a, b, c) over len(a) <= 64 pairs of tf32 codes. ok is
// false when an input or c is NaN or inf: the caller then takes the
// reference path. A zero sum is +0.
func (s *wideStep) step(a, b []uint32, c float32) (float32, bool) {
	b = b[:len(a)]
	emax := int32(-2000)
	for i, x := range a {
		y := b[i]
		ex, ey := int32(x>>23&0xff), int32(y>>23&0xff)
		if ex == 0xff || ey == 0xff {
			return 0, false
		}
		if x&0x7fffe000 == 0 || y&0x7fffe000 == 0 {
			emax = max(emax, s.ezero)
			continue
		}
		// Exponent fields: a subnormal (field 0) reads as -126.
		emax = max(emax, max(ex, 1)+max(ey, 1)-254)
	}
	ce, ok := cExponent(c, s.ezero)
	if !ok {
		return 0, false
	}
	emax = max(emax, ce)
	scale := math.Float64frombits(uint64(1023+int32(s.f)-emax) << 52)
	sum := int64(float64(c) * scale)
	for i, x := range a {
		va := float64(math.Float32frombits(x & tf32Mask))
		vb := float64(math.Float32frombits(b[i] & tf32Mask))
		sum += int64(va * vb * scale)
	}
	return rzFloat32(sum, emax-int32(s.f), s.fb), true
}

// rzFloat32 truncates sum × 2^sx toward zero to fb (23 or 13) fraction
// bits in the FP32 range, as roundRZ does, through float64: |sum| < 2^53
// and -400 < sx < 300, so v = sum × 2^sx is exact in float64; for a normal
// result the truncation is a mask of v's significand, for a subnormal one
// the float64 -> int64 conversion of v × 2^(126+fb) (exact, truncating);
// |v| >= 2^128 gives ±inf. A zero sum is +0.
func rzFloat32(sum int64, sx int32, fb int) float32 {
	if sum == 0 {
		return 0
	}
	v := float64(sum) * math.Float64frombits(uint64(1023+sx)<<52)
	b := math.Float64bits(v)
	sign := uint32(b>>32) & 0x80000000
	e := int32(b>>52&0x7ff) - 1023
	switch {
	case e >= 128:
		return math.Float32frombits(sign | 0x7f800000)
	case e >= -126:
		m := uint32(b>>29) & 0x7fffff // the 23 high fraction bits: truncation
		m &^= 1<<uint(23-fb) - 1
		return math.Float32frombits(sign | uint32(e+127)<<23 | m)
	}
	q := uint32(int64(math.Abs(v) * math.Float64frombits(uint64(1023+126+fb)<<52)))
	return math.Float32frombits(sign | q<<uint(23-fb))
}
