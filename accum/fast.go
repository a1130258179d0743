package accum

import (
	"math"
	"sync"

	"github.com/fp8lab/fp8lab/fp8"
)

// tableStep is a T-FDPA step over 8- or 16-bit inputs (e4m3, e5m2, f16,
// bf16) for F <= 30 and an FP32 or e8m13 output (rho RZ-FP32 or RZ-E8M13),
// written for speed. It computes exactly what Params.Step computes, through
// two observations:
//
//   - e_max only needs each input's exponent field Exp(x): a table per
//     format, with sentinels for zero (far below e_zero) and for NaN/inf (far
//     above any exponent) so that one max finds both;
//   - a term truncated toward zero to F fraction bits below e_max is
//     trunc(p × 2^(F − e_max)), and for a product p of two such inputs (at
//     most 22 significant bits) or an FP32 c that scaling is exact in
//     float64, so Go's float64 -> int64 conversion, which truncates toward
//     zero, gives the integer q_t exactly.
//
// The integer sum and the final conversion are those of the reference.
//
// The tables have 2^16 entries whatever the format, so that a uint16 code
// indexes them without a bounds check; for an 8-bit format entry x holds
// code x&0xff, and only the first 256 entries are ever hot in the cache.
type tableStep struct {
	exp *[1 << 16]int32   // Exp(x), expZero for zero, expSpecial for NaN/inf
	val *[1 << 16]float64 // exact value of each code (0 for specials)
	// ent packs both for the assembly step: float64bits(val[x]) |
	// uint32(exp[x]). nil: the pure-Go step (no assembly on this build or
	// CPU, or a table whose values do not leave the low 32 bits free).
	ent   *[1 << 16]uint64
	f     int // F
	fb    int // fraction bits kept by rho: 23 or 13
	ezero int32
}

const (
	expZero    = -1000 // sum with any other exponent stays below -700
	expSpecial = 5000  // sum with anything (even expZero) stays above 1000
)

// newTableStep builds the tables for p. With normalize, inputs are read as
// FP16 would read them (subnormal e4m3/e5m2 codes become normal FP16
// numbers: their exponent is their true exponent), as in the compiler's FP16
// emulation of mma.sync FP8 on sm_90.
func newTableStep(p Params, normalize bool) *tableStep {
	t := inputTablesFor(p.In, normalize)
	s := &tableStep{exp: t.exp, val: t.val, ent: t.ent, f: p.F, fb: 23, ezero: int32(p.EZero)}
	if p.Rho == RZE8M13 {
		s.fb = 13
	}
	return s
}

// inputTables are the exponent and value tables of one input format; they
// depend on the format (and normalize) only, so models reading the same
// format share them (e4m3 feeds three models, f16 four).
type inputTables struct {
	exp *[1 << 16]int32
	val *[1 << 16]float64
	ent *[1 << 16]uint64 // nil without the assembly step
}

type inputTablesKey struct {
	f         fp8.Format
	normalize bool
}

var (
	inputTablesMu    sync.Mutex
	inputTablesCache = map[inputTablesKey]inputTables{}
)

func inputTablesFor(f fp8.Format, normalize bool) inputTables {
	inputTablesMu.Lock()
	defer inputTablesMu.Unlock()
	key := inputTablesKey{f, normalize}
	if t, ok := inputTablesCache[key]; ok {
		return t
	}
	t := inputTables{exp: new([1 << 16]int32), val: new([1 << 16]float64)}
	mask := 1<<f.CodeBits() - 1
	for c := range t.exp {
		d := f.Decompose(uint32(c & mask))
		switch d.Class {
		case fp8.Zero:
			t.exp[c] = expZero
		case fp8.Inf, fp8.NaN:
			t.exp[c] = expSpecial
		default:
			m, e := d.M, d.E
			if normalize {
				for m < 1<<uint(f.FracBits()) {
					m <<= 1
					e--
				}
			}
			t.exp[c] = int32(e)
			t.val[c] = f.Value(uint32(c & mask))
		}
	}
	if haveStepAsm {
		t.ent = packEntries(t.exp, t.val)
	}
	inputTablesCache[key] = t
	return t
}

// packEntries returns the entry table of the assembly step, or nil if it
// cannot represent the tables: a value whose float64 has a nonzero bit in
// its low 32 (none of an 8- or 16-bit format has more than 11 significant
// bits), or a code 0 that is not zero (the kernels pad with code 0).
func packEntries(exp *[1 << 16]int32, val *[1 << 16]float64) *[1 << 16]uint64 {
	if exp[0] != expZero || val[0] != 0 {
		return nil
	}
	ent := new([1 << 16]uint64)
	if !packTable(ent[:], exp[:], val[:]) {
		return nil
	}
	return ent
}

// packTable fills ent[c] with val[c]'s float64 bits, the exponent exp[c]
// in their low 32 bits, for every code c of ent; false when a value has a
// nonzero bit there.
func packTable(ent []uint64, exp []int32, val []float64) bool {
	for c := range ent {
		v := math.Float64bits(val[c])
		if v&0xffffffff != 0 {
			return false
		}
		ent[c] = v | uint64(uint32(exp[c]))
	}
	return true
}

// fastPathApplies reports whether tableStep computes p exactly.
func fastPathApplies(p Params) bool {
	return p.In.CodeBits() <= 16 && p.F <= 30 && p.L <= 64 && p.EZero <= -126 &&
		(p.Rho == RZFP32 || p.Rho == RZE8M13)
}

// step computes T_FDPA(a, b, c) over len(a) <= 64 pairs. ok is false when an
// input or c is NaN or inf: the caller then takes the reference path. A
// zero sum is +0, as in Params.Step.
func (s *tableStep) step(a, b []uint16, c float32) (float32, bool) {
	if truncForms {
		// WebAssembly, which has no assembly step: step is this one call
		// (the constant condition leaves the else branch out of the
		// inliner's cost, so callers call stepTrunc directly).
		return s.stepTrunc(a, b, c)
	} else {
		if s.ent != nil {
			return s.stepAsm(a, b, c)
		}
		b = b[:len(a)]
		exp := s.exp
		emax := int32(-2000)
		for i, x := range a {
			emax = max(emax, exp[x]+exp[b[i]])
		}
		if emax > 1000 {
			return 0, false
		}
		ce, ok := cExponent(c, s.ezero)
		if !ok {
			return 0, false
		}
		emax = max(emax, ce)
		// A zero product is read with exponent e_zero too; but e_zero (-131 or
		// lower for every model) only matters when every term is below it, and
		// a nonzero FP32 c reads at least -126: so whenever a product is zero
		// and c is not, e_zero cannot be the maximum, and the zero-product
		// sentinel (far below) stands for it exactly.
		// 2^(F - e_max) as float64 bits: F - e_max lies in [-160, 300].
		scale := math.Float64frombits(uint64(1023+int32(s.f)-emax) << 52)
		val := s.val
		sum := int64(float64(c) * scale)
		for i, x := range a {
			sum += int64(val[x] * val[b[i]] * scale)
		}
		return s.round(sum, emax), true
	}
}

// stepTrunc is step's pure-Go path in the form of stepPreparedTrunc (the
// WebAssembly build's): chunks of eight, one running maximum, terms
// truncated by math.Trunc and summed exactly in float64. The same result,
// bit for bit.
func (s *tableStep) stepTrunc(a, b []uint16, c float32) (float32, bool) {
	n := len(a)
	b = b[:n]
	exp, val := s.exp, s.val
	_, _ = exp[0], val[0] // one nil check here, none in the loops
	emax := -2000
	i := 0
	for ; i+8 <= n; i += 8 {
		aa, bb := (*[8]uint16)(a[i:]), (*[8]uint16)(b[i:])
		emax = max(emax,
			int(exp[aa[0]])+int(exp[bb[0]]), int(exp[aa[1]])+int(exp[bb[1]]),
			int(exp[aa[2]])+int(exp[bb[2]]), int(exp[aa[3]])+int(exp[bb[3]]),
			int(exp[aa[4]])+int(exp[bb[4]]), int(exp[aa[5]])+int(exp[bb[5]]),
			int(exp[aa[6]])+int(exp[bb[6]]), int(exp[aa[7]])+int(exp[bb[7]]))
	}
	for ; i < n; i++ {
		emax = max(emax, int(exp[a[i]])+int(exp[b[i]]))
	}
	if emax > 1000 {
		return 0, false
	}
	ce, ok := cExponent(c, s.ezero)
	if !ok {
		return 0, false
	}
	emax = max(emax, int(ce))
	scale := math.Float64frombits(uint64(1023+s.f-emax) << 52)
	var s0, s1 float64
	i = 0
	for ; i+8 <= n; i += 8 {
		aa, bb := (*[8]uint16)(a[i:]), (*[8]uint16)(b[i:])
		s0 += math.Trunc(val[aa[0]]*val[bb[0]]*scale) + math.Trunc(val[aa[2]]*val[bb[2]]*scale) +
			math.Trunc(val[aa[4]]*val[bb[4]]*scale) + math.Trunc(val[aa[6]]*val[bb[6]]*scale)
		s1 += math.Trunc(val[aa[1]]*val[bb[1]]*scale) + math.Trunc(val[aa[3]]*val[bb[3]]*scale) +
			math.Trunc(val[aa[5]]*val[bb[5]]*scale) + math.Trunc(val[aa[7]]*val[bb[7]]*scale)
	}
	for ; i < n; i++ {
		s0 += math.Trunc(val[a[i]] * val[b[i]] * scale)
	}
	sum := int64(float64(c)*scale) + int64(s0+s1)
	return s.round(sum, int32(emax)), true
}

// round converts the integer sum in units of 2^(emax − F) with rho: +0 for
// a zero sum, as in Params.Step.
func (s *tableStep) round(sum int64, emax int32) float32 {
	if sum == 0 {
		return 0
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
	return math.Float32frombits(v)
}

// stepAsm is step through the assembly kernel stepGG (s.ent != nil): the
// same result. A step whose length is not a multiple of 4 is padded with
// code 0 (+0, the missing elements of a step), which changes neither e_max
// (its sentinel is the initial maximum) nor the sum.
func (s *tableStep) stepAsm(a, b []uint16, c float32) (float32, bool) {
	ce, ok := cExponent(c, s.ezero)
	if !ok {
		return 0, false
	}
	n := len(a)
	b = b[:n]
	var sum float64
	var emax int32
	if n&3 == 0 && n > 0 {
		sum, emax = stepGG(s.ent, &a[0], &b[0], n, ce, int32(s.f), float64(c))
	} else {
		var pa, pb [64]uint16 // n <= L <= 64
		copy(pa[:], a)
		copy(pb[:], b)
		sum, emax = stepGG(s.ent, &pa[0], &pb[0], (n+3)&^3, ce, int32(s.f), float64(c))
	}
	if emax > 1000 {
		return 0, false
	}
	return s.round(int64(sum), emax), true
}

// cExponent is the exponent at which an FP32 accumulator c enters a step:
// its own (a subnormal reads -126), e_zero for a zero c (§2.4); ok is false
// for NaN and inf, which the reference path handles.
func cExponent(c float32, ezero int32) (e int32, ok bool) {
	cb := math.Float32bits(c)
	switch cexp := int32(cb >> 23 & 0xff); {
	case cexp == 0xff:
		return 0, false
	case cb&0x7fffffff == 0:
		return ezero, true
	case cexp == 0:
		return -126, true
	default:
		return cexp - 127, true
	}
}

// chain runs whole steps of l elements over a and b from c through the
// assembly kernel, as repeated step calls would, and returns the result
// and how far it got: the start of the first step that holds a NaN or inf
// (not run; the caller runs it), or of the partial step at the end. It
// does nothing (0) without the assembly step or when l is not a multiple
// of 4.
func (s *tableStep) chain(a, b []uint16, c float32, l int) (float32, int) {
	steps := len(a) / l
	if s.ent == nil || l&3 != 0 || steps == 0 {
		return c, 0
	}
	b = b[:len(a)]
	return chainGG(s.ent, &a[0], &b[0], steps, l, int32(s.f), int32(s.fb), s.ezero, c)
}
