package accum

import (
	"math"
	"math/big"

	"github.com/fp8lab/fp8lab/fp8"
)

// The newer MMA-Sim's AMD arithmetic (peichenxie/MMA-Sim, fdpa.py and
// ftz_mul_add.py), which revised what the peer records' MMA-Sim
// (microsoft/MMA-Sim @ c785138) computes for CDNA1-3 f16/bf16/xf32/fp8.
// It is not a named model (the named models are c785138's, verified on its
// records; see docs/evidence.md): newerStep exists so that the records it
// would change can be counted (TestAMDNewerMMASim). Every operation mirrors
// the float64 tensor arithmetic of the Python code, which is exact here.

// NewerMMASimAMD computes one AMD instruction of m with the newer MMA-Sim's
// algorithm (as implemented here from its source; not verified against any
// output). ok is false when m is not an AMD instruction or its class did not
// change (f32/f64 FMA chains). For counting, not a model.
func NewerMMASimAMD(m Instruction, a, b []uint64, c uint64) (uint64, bool) {
	am, ok := m.(*amdInstr)
	if !ok {
		return 0, false
	}
	return am.newerStep(a, b, c)
}

// newerStep computes one instruction with the newer MMA-Sim's algorithm for
// m's class; ok is false for the f32/f64 FMA chains (unchanged).
func (m *amdInstr) newerStep(a, b []uint64, c uint64) (uint64, bool) {
	cf := math.Float32frombits(uint32(c))
	switch {
	case m.op == KindFMAChain:
		return 0, false
	case m.arch == 1:
		L := m.info.Group // 4 for f16, 2 for bf16: E-FDPA(L_max)
		for i := 0; i < len(a); i += L {
			j := min(i+L, len(a))
			cf = m.eFDPA(a[i:j], b[i:j], cf)
		}
	case m.arch == 2:
		cf = m.ftzMulAdd(a, b, cf)
	default:
		L := 8
		if m.xf32 {
			L = 4
		}
		if m.in.CodeBits() == 8 {
			L = 16
		}
		for i := 0; i < len(a); i += L {
			j := min(i+L, len(a))
			cf = m.trFDPA(a[i:j], b[i:j], cf)
		}
	}
	return uint64(math.Float32bits(cf)), true
}

// eFDPA: the exact sum of the products and c, rounded once to FP32 (RNE);
// NaN/inf as the float64 sum gives them.
func (m *amdInstr) eFDPA(a, b []uint64, c float32) float32 {
	special := float64(c)
	f := new(big.Float).SetPrec(2000).SetFloat64(float64(c))
	for i := range a {
		va, vb := m.in.Value(uint32(a[i])), m.bin.Value(uint32(b[i]))
		p := va * vb // exact for f16/bf16
		special += p
		if !math.IsNaN(p) && !math.IsInf(p, 0) {
			f.Add(f, new(big.Float).SetFloat64(p))
		}
	}
	if math.IsNaN(special) || math.IsInf(special, 0) {
		return float32(special)
	}
	r, _ := f.Float32()
	if r == 0 {
		return 0 // an exact zero sum of float64 values in torch is +0
	}
	return r
}

// ftzMulAdd: MMA_FTZ_MUL_ADD(P): subnormal inputs and c flushed to +0,
// products rounded to FP32 and flushed keeping their sign, then sums of P
// products (pairs, then pairs of pairs) added to c, every add flushed.
func (m *amdInstr) ftzMulAdd(a, b []uint64, c float32) float32 {
	flushIn := func(f fp8.Format, code uint64) float32 {
		p := f.Decompose(uint32(code))
		if p.Class == fp8.Zero || p.Class == fp8.Finite && p.M < 1<<uint(f.FracBits()) {
			return 0
		}
		return float32(f.Value(uint32(code)))
	}
	P := m.info.Group
	c = flushSub(c, false)
	var p [4]float32
	for i := 0; i+P <= len(a); i += P {
		for k := 0; k < P; k++ {
			p[k] = flushSub(flushIn(m.in, a[i+k])*flushIn(m.bin, b[i+k]), true)
		}
		s := flushSub(p[0]+p[1], true)
		if P == 4 {
			s2 := flushSub(p[2]+p[3], true)
			s = flushSub(s+s2, true)
		}
		c = flushSub(c+s, true)
	}
	return c
}

// frexpNorm is frexp_and_normalize: x = s × 2^e with 1 <= |s| < 2, or
// e = emin and |s| < 1 for |x| < 2^emin (e = emin for zero).
func frexpNorm(x float64, emin int) (float64, int) {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x, emin
	}
	s, e := math.Frexp(x)
	s, e = s*2, e-1
	if e < emin {
		s = math.Ldexp(s, e-emin)
		e = emin
	}
	return s, e
}

// trFDPA: TR-FDPA (F = 24, F2 = 31, RNE-FP32); for fp8 (8-bit operands)
// GTR-FDPA, the even and odd products summed apart first.
func (m *amdInstr) trFDPA(a, b []uint64, c float32) float32 {
	const F, F2 = 24, 31
	type term struct {
		s float64
		e int
	}
	ts := make([]term, len(a))
	for i := range a {
		ca, cb := a[i], b[i]
		if m.xf32 {
			ca &^= 0x1fff
			cb &^= 0x1fff
		}
		sa, ea := frexpNorm(m.in.Value(uint32(ca)), m.in.Emin())
		sb, eb := frexpNorm(m.bin.Value(uint32(cb)), m.bin.Emin())
		t := term{sa * sb, ea + eb}
		// TR's overflow step (GTR has none: fp8 products are small)
		if m.in.CodeBits() != 8 && ((math.Abs(t.s) >= 2 && t.e+1 >= 128) || t.e >= 128) {
			t.s *= math.Inf(1)
		}
		if t.s == 0 {
			t.e = -999
		}
		ts[i] = t
	}
	tfs := func(sel func(i int) bool) (float64, int) {
		emax := math.MinInt
		for i, t := range ts {
			if sel(i) {
				emax = max(emax, t.e)
			}
		}
		if emax == math.MinInt {
			return 0, -999
		}
		var sum float64
		for i, t := range ts {
			if sel(i) {
				sum += math.Trunc(t.s*math.Ldexp(1, t.e-emax+F)) * math.Ldexp(1, -F)
			}
		}
		return sum, emax
	}
	var sDot float64
	var eDot int
	gtr := m.in.CodeBits() == 8
	if gtr {
		se, ee := tfs(func(i int) bool { return i%2 == 0 })
		so, eo := tfs(func(i int) bool { return i%2 == 1 })
		eDot = max(ee, eo)
		sDot = math.Floor(se*math.Ldexp(1, ee-eDot+F))*math.Ldexp(1, -F) + math.Floor(so*math.Ldexp(1, eo-eDot+F))*math.Ldexp(1, -F)
	} else {
		sDot, eDot = tfs(func(int) bool { return true })
	}
	sc, ec := frexpNorm(float64(c), -126)
	emax := max(eDot, ec)
	sDot = math.Floor(sDot*math.Ldexp(1, eDot-emax+F2+1)) * math.Ldexp(1, -(F2+1))
	sc = math.Floor(sc*math.Ldexp(1, ec-emax+F)) * math.Ldexp(1, -F)
	if gtr && ec < emax-F-1 {
		sc = 0
	}
	sum, e := frexpNorm((sDot+sc)*math.Ldexp(1, emax), -126)
	sum = math.Floor(sum*math.Ldexp(1, F2)) * math.Ldexp(1, -F2)
	r := float32(sum * math.Ldexp(1, e))
	if r != r {
		return math.Float32frombits(NaN32)
	}
	return r
}
