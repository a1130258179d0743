package accum

import (
	"fmt"
	"math"
	"sync"

	"github.com/fp8lab/fp8lab/fp8"
)

// amdInstr is an AMD CDNA v_mfma instruction. Its arithmetic is MMA-Sim's
// (microsoft/MMA-Sim @ c78513835c8b, simulator/amd.py and arithmetic.py),
// which is not a T-FDPA step, so it has code paths of its own:
//
//   - KindFMAChain (f32 and f64 operands, every CDNA): d = fma(a_{k-1},
//     b_{k-1}, … fma(a_0, b_0, c)), each FMA an IEEE fused multiply-add
//     rounded to nearest even in the operand format (signed zeros as IEEE:
//     a result can be −0).
//   - KindPairwise (f16/bf16 on CDNA1 and CDNA2): groups of Group elements
//     (4 for f16 and bf16_1k, 2 for bf16); each group is a pairwise tree in
//     FP32 (leaves fmaf(a, b, +0), nodes fmaf(l, 1, r), all RNE) and its sum
//     is added to the FP32 accumulator with one RNE add. CDNA2 flushes
//     subnormal inputs and c to +0 and every group and accumulator result
//     below 2^-126 to a zero of its sign.
//   - KindAMDFDPA (CDNA3 f16/bf16 groups of 8, xf32 groups of 4 with the
//     operands truncated to TF32, fp8/bf8 groups of 16): per group, the
//     products (exponents E_a + E_b, a zero reading exponent −126) are
//     aligned to their largest exponent and truncated toward zero to 24
//     fraction bits (fp8: even and odd elements separately, then each sum
//     rounded down to 24 bits at their common maximum); the product sum is
//     rounded down to 31 and c to 24 fraction bits below max(e_sum, e_c),
//     added exactly and rounded to FP32 to nearest even. A product of 2^128
//     or more gives ±inf (both signs: NaN).
type amdInstr struct {
	info InstrInfo
	in   fp8.Format // f16, bf16, f32 (xf32 truncates to tf32), e4m3fnuz/e5m2fnuz (a), f64: FormatInvalid
	bin  fp8.Format // b's format (fp8 instructions may mix)
	op   Kind
	arch int  // 1, 2 or 3
	xf32 bool // truncate f32 operands to tf32
	f64  bool
	// tables are the operand tables of the fast path, built on first use
	// (shared per format; about 1.4 MiB each).
	tables func() [2]*amdTable
}

// newAMD builds the v_mfma instruction of info on arch ("cdna1", "cdna2",
// "cdna3").
func newAMD(info InstrInfo, arch string) (*amdInstr, error) {
	n := map[string]int{"cdna1": 1, "cdna2": 2, "cdna3": 3}[arch]
	if n == 0 {
		return nil, fmt.Errorf("%q is not an AMD architecture of the model (cdna1, cdna2, cdna3)", arch)
	}
	m := &amdInstr{info: info, op: info.Kind, arch: n}
	switch {
	case info.A == "f64" || info.B == "f64":
		if info.A != info.B || info.C != "f64" || info.Kind != KindFMAChain {
			return nil, fmt.Errorf("f64 operands are an FP64 FMA chain with f64 c/d")
		}
		m.f64 = true
	default:
		var err error
		if m.in, err = fp8.ParseFormat(info.A); err != nil {
			return nil, err
		}
		if m.bin, err = fp8.ParseFormat(info.B); err != nil {
			return nil, err
		}
		if info.C != "f32" {
			return nil, fmt.Errorf("c/d is %s, want f32", info.C)
		}
	}
	m.xf32 = info.A == "f32" && info.Kind == KindAMDFDPA
	if !m.f64 && m.in.CodeBits() <= 16 {
		m.tables = sync.OnceValue(func() [2]*amdTable { return [2]*amdTable{amdTableFor(m.in), amdTableFor(m.bin)} })
	}
	if info.Kind != KindFMAChain && (info.Group < 1 || info.K%info.Group != 0) {
		return nil, fmt.Errorf("K = %d is not a multiple of a group of %d", info.K, info.Group)
	}
	if info.Kind == KindAMDFDPA && info.Group > 16 || info.Kind == KindPairwise && info.Group > 4 {
		return nil, fmt.Errorf("groups of %d are not modelled for %s (at most 16, pairwise 4)", info.Group, info.Kind)
	}
	if info.K < 1 || info.K > 64 {
		return nil, fmt.Errorf("K = %d is outside 1..64", info.K)
	}
	return m, nil
}

func (m *amdInstr) Name() string    { return m.info.Name }
func (m *amdInstr) Info() InstrInfo { return m.info }

// Step computes one instruction (sa and sb are ignored: v_mfma has no
// block scales).
func (m *amdInstr) Step(a, b []uint64, _, _ []uint8, c uint64) uint64 {
	if len(b) != len(a) {
		panic(fmt.Sprintf("accum: %s: %d elements of a, %d of b", m.info.Name, len(a), len(b)))
	}
	switch m.op {
	case KindFMAChain:
		if m.f64 {
			s := math.Float64frombits(c)
			for i := range a {
				s = math.FMA(math.Float64frombits(a[i]), math.Float64frombits(b[i]), s)
			}
			return math.Float64bits(s)
		}
		s := math.Float32frombits(uint32(c))
		for i := range a {
			s = FMA32(math.Float32frombits(uint32(a[i])), math.Float32frombits(uint32(b[i])), s)
		}
		return uint64(math.Float32bits(s))
	case KindPairwise:
		return uint64(math.Float32bits(m.pairwiseChain(a, b, math.Float32frombits(uint32(c)))))
	}
	return uint64(math.Float32bits(m.fdpaChain(a, b, math.Float32frombits(uint32(c)))))
}

// flushSub flushes |x| < 2^-126 to a zero; keepSign keeps x's sign
// (MMA-Sim's x *= 0.0), otherwise the zero is +0.
func flushSub(x float32, keepSign bool) float32 {
	if math.Float32bits(x)&0x7f800000 == 0 { // |x| < 2^-126 (zero or subnormal)
		if keepSign {
			return x * 0
		}
		return 0
	}
	return x
}

func (m *amdInstr) value(f fp8.Format, code uint64) float32 {
	v := float32(f.Value(uint32(code)))
	if m.arch == 2 {
		// CDNA2 flushes zeros and subnormal operands of their format to +0.
		if p := f.Decompose(uint32(code)); p.Class == fp8.Zero || p.Class == fp8.Finite && p.M < 1<<uint(f.FracBits()) {
			return 0
		}
	}
	return v
}

func (m *amdInstr) pairwiseChain(a, b []uint64, c float32) float32 {
	flush := m.arch == 2
	if flush {
		c = flushSub(c, false)
	}
	var va, vb [64]float32
	G := m.info.Group
	sum := c
	for g := 0; g < len(a); g += G {
		h := min(g+G, len(a))
		for i := g; i < h; i++ {
			va[i-g], vb[i-g] = m.value(m.in, a[i]), m.value(m.bin, b[i])
		}
		gs := pairwise32(va[:h-g], vb[:h-g], flush)
		sum = sum + gs
		if flush {
			sum = flushSub(sum, true)
		}
	}
	return sum
}

// pairwise32 is MMA-Sim's pairwise_dot: leaves fmaf(a, b, +0), nodes
// fmaf(l, 1, r) = l + r, with an optional flush of each node result.
func pairwise32(a, b []float32, flush bool) float32 {
	var s float32
	if len(a) == 1 {
		s = FMA32(a[0], b[0], 0)
	} else {
		h := len(a) / 2
		l := pairwise32(a[:h], b[:h], flush)
		r := pairwise32(a[h:], b[h:], flush)
		s = l + r
	}
	if flush {
		s = flushSub(s, true)
	}
	return s
}

// amdPart is an operand read as MMA-Sim's extract_significand_exponent reads
// it: integer significand m with frac fraction bits and exponent e (the
// format's minimum normal exponent for subnormals, −126 for a zero).
func amdPart(f fp8.Format, code uint64) (neg bool, mant uint64, e, frac int, zero bool) {
	p := f.Decompose(uint32(code))
	if p.Class != fp8.Finite {
		return p.Neg, 0, oldZeroExp, f.FracBits(), true
	}
	return p.Neg, p.M, p.E, f.FracBits(), false
}

// truncGroup is MMA-Sim's fused_sum with F = 24 over products of a and b:
// the integer sum in units of 2^(e_max − 24) and e_max. inf is +1 or −1 when
// a product is ±2^128 or more (0 otherwise; both signs give nan).
func (m *amdInstr) truncGroup(a, b []uint64, step int) (s int64, emax int, pinf, ninf bool) {
	type prod struct {
		neg  bool
		m    uint64
		e    int
		frac int
	}
	var ps [16]prod
	n := 0
	emax = math.MinInt
	fa, fb := m.in, m.bin
	for i := 0; i < len(a); i += step {
		ca, cb := a[i], b[i]
		if m.xf32 {
			ca &^= 0x1fff
			cb &^= 0x1fff
		}
		na, ma, ea, xa, _ := amdPart(fa, ca)
		nb, mb, eb, xb, _ := amdPart(fb, cb)
		p := prod{neg: na != nb, m: ma * mb, e: ea + eb, frac: xa + xb}
		if p.m != 0 && bitsLen(p.m)-1-p.frac+p.e >= 128 {
			if p.neg {
				ninf = true
			} else {
				pinf = true
			}
			continue
		}
		ps[n] = p
		n++
		emax = max(emax, p.e)
	}
	for _, p := range ps[:n] {
		q := int64(shiftTrunc(p.m, 24-p.frac-(emax-p.e)))
		if p.neg {
			q = -q
		}
		s += q
	}
	return
}

func bitsLen(x uint64) int {
	n := 0
	for x != 0 {
		x >>= 1
		n++
	}
	return n
}

// floorShift returns floor(s × 2^k) for k of either sign.
func floorShift(s int64, k int) int64 {
	if k >= 0 {
		return s << uint(k)
	}
	if k <= -63 {
		if s < 0 {
			return -1
		}
		return 0
	}
	return s >> uint(-k) // arithmetic shift: floor
}

func (m *amdInstr) fdpaChain(a, b []uint64, c float32) float32 {
	G := m.info.Group
	for g := 0; g < len(a) || g == 0; g += G {
		h := min(g+G, len(a))
		c = m.fdpaGroup(a[g:h], b[g:h], c)
		if h == len(a) {
			break
		}
	}
	return c
}

// fdpaGroup is MMA-Sim c785138's amd_fused_dot_rd_add with F = 24 followed
// by the RNE conversion to FP32.
func (m *amdInstr) fdpaGroup(a, b []uint64, c float32) float32 {
	// NaN and inf operands or c: MMA-Sim returns the float64 sum.
	exact := float64(c)
	for i := range a {
		ca, cb := a[i], b[i]
		if m.xf32 {
			ca &^= 0x1fff
			cb &^= 0x1fff
		}
		exact += m.in.Value(uint32(ca)) * m.bin.Value(uint32(cb))
	}
	if math.IsNaN(exact) || math.IsInf(exact, 0) {
		return float32(exact)
	}
	var s int64 // units of 2^(e − 24)
	var e int
	var pinf, ninf bool
	fp8Pair := m.in.CodeBits() == 8
	if fp8Pair {
		s0, e0, pi0, ni0 := m.truncGroup(a, b, 2)
		s1, e1, pi1, ni1 := m.truncGroup(a[min(1, len(a)):], b[min(1, len(b)):], 2)
		pinf, ninf = pi0 || pi1, ni0 || ni1
		e = max(e0, e1)
		s = floorShift(s0, e0-e) + floorShift(s1, e1-e)
	} else {
		s, e, pinf, ninf = m.truncGroup(a, b, 1)
	}
	switch {
	case pinf && ninf:
		return float32(math.NaN())
	case pinf:
		return float32(math.Inf(1))
	case ninf:
		return float32(math.Inf(-1))
	}
	// c as (significand with 23 fraction bits, exponent), zero reading −126.
	cn, cm, ce, _, _ := amdPart(fp8.FormatFP32, uint64(math.Float32bits(c)))
	sc := int64(cm)
	if cn {
		sc = -sc
	}
	emax := max(e, ce)
	// s is in units of 2^(e-24): round down to 31 fraction bits below emax.
	s31 := floorShift(s, 7-(emax-e)) // units of 2^(emax-31)
	var c24 int64                    // units of 2^(emax-24)
	if !fp8Pair || ce >= emax-25 {
		c24 = floorShift(sc, 1-(emax-ce)) // sc has 23 fraction bits
	}
	total := s31 + c24<<7 // units of 2^(emax-31)
	return float32(math.Ldexp(float64(total), emax-31))
}
