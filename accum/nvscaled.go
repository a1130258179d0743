package accum

import (
	"fmt"
	"math"

	"github.com/fp8lab/fp8lab/fp8"
)

// nvInstr is an NVIDIA tensor-core instruction with operands of possibly
// different formats and optional block scales. Its step is the T-FDPA step
// of tensorcore-numerics.md §2 with two generalisations (MMA-Sim's ST-FDPA
// and GST-FDPA, Xie et al. arXiv 2511.10909):
//
//   - ST (Group == 0): every product is a term whose exponent is
//     E_a + E_b + E_sa + E_sb, the exponents of the two scales of its block
//     added (scales are powers of two for ue8m0; a ue4m3 scale also brings
//     its 4-bit significand into the product). c is a term as usual.
//   - GST (Group == 16, FP4 k = 64): the products of each group of 16
//     elements are summed exactly first; the group sum times the two scale
//     significands is one term with exponent E_sa + E_sb.
//
// Terms are aligned to the largest exponent, truncated toward zero to F
// fraction bits below it, summed as integers and converted once by Rho
// (RZ to FP32, or RNE to FP16 for f16 accumulators). An instruction of
// K > L elements is K/L chained steps.
//
// Zero terms: a zero product (a zero operand or a zero scale) and a zero c
// are read with the exponent EZero, as the H200 captures show for Hopper
// (tensorcore-numerics.md §2.4) and the newer MMA-Sim (peichenxie/MMA-Sim
// fdpa.py) uses for every architecture; a GST group is read with EZero when
// all its products are zero or its scale product is zero (a group whose
// nonzero products cancel keeps its scale exponent). A zero sum is +0.
//
// FP4/FP6 operands (e2m1, e2m3, e3m2) are read as the e4m3 values they
// equal (every one is a normal e4m3 number, so a subnormal e2m1 0.5 is
// 1 × 2^-1), as the newer MMA-Sim decodes FP4.
//
// Specials: a NaN operand or scale, inf × 0, or +inf and -inf together give
// the canonical NaN (0x7fffffff, 0x7fff); otherwise an infinite product or
// c gives that infinity; a finite sum of 2^128 or more gives ±inf.
type nvInstr struct {
	info     InstrInfo
	a, b, c  fp8.Format
	scale    fp8.Format // FormatInvalid when unscaled
	fp4Group bool       // GST: a and b are e2m1
	fast     *scaledFast
}

// zeroRule says how a step reads zero terms: the named models use
// zeroFixed; zeroMMASimC785 is the rule of the MMA-Sim that produced the
// peer records (microsoft/MMA-Sim @ c78513835c8b, simulator/arithmetic.py
// extract_significand_exponent: a zero reads exponent -126, so a zero product
// has -126 plus its partner's exponent plus the scale exponents, a zero c
// -126, a GST group always its scale exponents with -126 for a zero ue4m3
// scale).
type zeroRule uint8

const (
	zeroFixed zeroRule = iota
	zeroMMASimC785
)

// stepRules are the rules a step is computed with.
type stepRules struct {
	zero zeroRule
	// fp4Emin0 reads FP4/FP6 subnormals with their own minimum exponent
	// (0 for e2m1: 0.5 = 0.5 × 2^0), as the shim of the peer records did
	// (interpretation I1), instead of as e4m3 values.
	fp4Emin0 bool
}

func isNarrow(f fp8.Format) bool {
	return f == fp8.FormatE2M1 || f == fp8.FormatE2M3 || f == fp8.FormatE3M2
}

// newNV builds an NVIDIA instruction; info.A, B, C, Scale name the formats.
func newNV(info InstrInfo) (*nvInstr, error) {
	m := &nvInstr{info: info}
	var err error
	for _, f := range []struct {
		to   *fp8.Format
		name string
	}{{&m.a, info.A}, {&m.b, info.B}, {&m.c, info.C}, {&m.scale, info.Scale}} {
		if f.name == "" && f.to == &m.scale {
			continue // unscaled: FormatInvalid
		}
		if *f.to, err = fp8.ParseFormat(f.name); err != nil {
			return nil, err
		}
	}
	if info.Group > 0 && (m.a != fp8.FormatE2M1 || m.b != fp8.FormatE2M1 || info.Group != 16) {
		return nil, fmt.Errorf("groups of %d are modelled for e2m1 operands in groups of 16 only", info.Group)
	}
	if (m.scale == fp8.FormatInvalid) != (info.Block == 0) || info.Block < 0 || info.Block > 0 && (info.L%info.Block != 0 || info.Group > 0 && info.Block%info.Group != 0) {
		return nil, fmt.Errorf("scale %q per %d elements does not fit steps of L = %d", info.Scale, info.Block, info.L)
	}
	m.fp4Group = info.Group > 0
	want := fp8.FormatFP32
	if info.Rho == RNEFP16 {
		want = fp8.FormatFP16
	}
	if m.c != want || info.L < 1 || info.L > 64 || info.K%info.L != 0 || info.F < 1 || info.F > 35 ||
		info.Rho < RZFP32 || info.Rho > RNEFP16 || !nvOperand(m.a) || !nvOperand(m.b) {
		return nil, fmt.Errorf("bad parameters %s", info.String())
	}
	if info.Kind == "" {
		info.Kind = KindTFDPA
		if info.Scale != "" {
			info.Kind = KindScaled
		}
		m.info.Kind = info.Kind
	}
	m.fast = newScaledFast(m)
	return m, nil
}

// nvOperand reports whether f is an operand format of the NVIDIA steps.
func nvOperand(f fp8.Format) bool {
	switch f {
	case fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatFP16, fp8.FormatBF16, fp8.FormatTF32, fp8.FormatE2M1, fp8.FormatE2M3, fp8.FormatE3M2:
		return true
	}
	return false
}

func (m *nvInstr) Name() string    { return m.info.Name }
func (m *nvInstr) Info() InstrInfo { return m.info }

// Step runs one instruction: len(a)/L chained steps from c.
func (m *nvInstr) Step(a, b []uint64, sa, sb []uint8, c uint64) uint64 {
	return m.stepWith(a, b, sa, sb, c, stepRules{})
}

// PeerVariants are the rules of the MMA-Sim that produced the peer records
// where they differ from the named model: the zero-term exponent, and for
// FP4 operands on k = 32 instructions the exponent of the subnormal 0.5.
func (m *nvInstr) PeerVariants() []PeerVariant {
	v := []PeerVariant{{Reason: ReasonZeroExponent, Step: func(a, b []uint64, sa, sb []uint8, c uint64) uint64 {
		return m.stepWith(a, b, sa, sb, c, stepRules{zero: zeroMMASimC785})
	}}}
	if !m.fp4Group && (isNarrow(m.a) || isNarrow(m.b)) {
		v = append(v,
			PeerVariant{Reason: ReasonFP4Emin, Step: func(a, b []uint64, sa, sb []uint8, c uint64) uint64 {
				return m.stepWith(a, b, sa, sb, c, stepRules{fp4Emin0: true})
			}},
			PeerVariant{Reason: ReasonZeroExponent + "; " + ReasonFP4Emin, Step: func(a, b []uint64, sa, sb []uint8, c uint64) uint64 {
				return m.stepWith(a, b, sa, sb, c, stepRules{zero: zeroMMASimC785, fp4Emin0: true})
			}})
	}
	return v
}

// The documented reasons why a peer record may differ from a named model.
const (
	ReasonZeroExponent = "zero-term exponent: MMA-Sim c785138 reads a zero as 2^-126 (a zero product: -126 + its partner's and its scales' exponents); the H200 and the newer MMA-Sim read a fixed e_zero"
	ReasonFP4Emin      = "e2m1 subnormal 0.5 read as 0.5 x 2^0 (shim interpretation I1 of the peer records); the newer MMA-Sim reads FP4 as e4m3 values (1 x 2^-1)"
)

// stepWith chains the steps of one instruction under the given rules.
func (m *nvInstr) stepWith(a, b []uint64, sa, sb []uint8, c uint64, r stepRules) uint64 {
	if len(b) != len(a) {
		panic(fmt.Sprintf("accum: %s: %d elements of a, %d of b", m.info.Name, len(a), len(b)))
	}
	L := m.info.L
	for i := 0; i < len(a) || i == 0; i += L {
		j := min(i+L, len(a))
		var xa, xb []uint8
		if m.scale != fp8.FormatInvalid {
			blk := m.info.Block
			n := (j - i + blk - 1) / blk
			xa, xb = sa[i/blk:i/blk+n], sb[i/blk:i/blk+n]
		}
		c = m.one(a[i:j], b[i:j], xa, xb, c, r)
		if j == len(a) {
			break
		}
	}
	return c
}

// part is a decoded operand, scale or c: value (-1)^neg × m × 2^(e − frac).
type part struct {
	class fp8.Class
	neg   bool
	m     uint64
	e     int
	frac  int
}

func decode(f fp8.Format, code uint64, widen bool) part {
	d := decodeFrac(f, f.FracBits(), code)
	if widen && d.class == fp8.Finite {
		return normalize(d)
	}
	return d
}

// decodeFrac is decode without widening for a format of frac fraction bits
// (f.FracBits(), looked up once per step rather than once per operand).
func decodeFrac(f fp8.Format, frac int, code uint64) part {
	return fromParts(f.Decompose(uint32(code)), frac)
}

// fromParts is the part of a decomposed code of frac fraction bits.
func fromParts(p fp8.Parts, frac int) part {
	return part{class: p.Class, neg: p.Neg, m: p.M, e: p.E, frac: frac}
}

// normalize shifts a subnormal's significand up to its leading bit.
func normalize(d part) part {
	for d.m < 1<<uint(d.frac) {
		d.m <<= 1
		d.e--
	}
	return d
}

// oldZeroExp is the exponent MMA-Sim c785138 gives a zero.
const oldZeroExp = -126

type fterm struct {
	neg  bool
	m    uint64
	e    int
	frac int
}

// terms collects the terms of one step and the specials among its inputs.
type terms struct {
	t                   [68]fterm // L <= 64 products and c
	n                   int
	nan, posInf, negInf bool
}

func (s *terms) add(t fterm) { s.t[s.n] = t; s.n++ }

func (s *terms) inf(neg bool) {
	if neg {
		s.negInf = true
	} else {
		s.posInf = true
	}
}

// zeroExp is the exponent of a zero operand or scale under MMA-Sim
// c785138's rule (oldZeroExp), or x's own exponent.
func zeroExp(x part) int {
	if x.class == fp8.Zero {
		return oldZeroExp
	}
	return x.e
}

// one computes one step over len(a) <= L elements: the reference step of
// every T-FDPA row (Params.Step runs it too).
func (m *nvInstr) one(a, b []uint64, sa, sb []uint8, c uint64, r stepRules) uint64 {
	return oneStep(m, a, b, sa, sb, c, r)
}

// oneStep is nvInstr.one for codes of any width (Params.Step's are 32-bit).
func oneStep[T Code](m *nvInstr, a, b []T, sa, sb []uint8, c uint64, r stepRules) uint64 {
	var s terms
	if m.fp4Group {
		groupTerms(m, &s, a, b, sa, sb, r)
	} else {
		productTerms(m, &s, a, b, sa, sb, r)
	}
	m.cTerm(&s, c, r)
	out := m.c
	switch {
	case s.nan || (s.posInf && s.negInf):
		if out == fp8.FormatFP16 {
			return uint64(NaN16)
		}
		return uint64(NaN32)
	case s.posInf:
		return uint64(out.Encode(float32(math.Inf(1)), fp8.NoSat))
	case s.negInf:
		return uint64(out.Encode(float32(math.Inf(-1)), fp8.NoSat))
	}
	return uint64(sumTerms(s.t[:s.n], m.info.F, m.info.Rho))
}

// groupTerms adds the GST terms of FP4 k = 64: each group of Group
// products summed exactly, times its two scales, is one term.
func groupTerms[T Code](m *nvInstr, s *terms, a, b []T, sa, sb []uint8, r stepRules) {
	G := m.info.Group
	for g := 0; g < len(a); g += G {
		h := min(g+G, len(a))
		var s4 int64 // the exact group sum in units of 1/4
		allZero := true
		for i := g; i < h; i++ {
			pa, pb := decodeFrac(fp8.FormatE2M1, 1, uint64(a[i])), decodeFrac(fp8.FormatE2M1, 1, uint64(b[i]))
			if pa.class == fp8.Zero || pb.class == fp8.Zero {
				continue
			}
			allZero = false
			v := int64(pa.m*pb.m) << uint(pa.e+pb.e)
			if pa.neg != pb.neg {
				v = -v
			}
			s4 += v
		}
		blk := g / m.info.Block
		s0, s1 := decode(m.scale, uint64(sa[blk]), false), decode(m.scale, uint64(sb[blk]), false)
		if s0.class == fp8.NaN || s1.class == fp8.NaN {
			s.nan = true
			continue
		}
		scaleZero := s0.class == fp8.Zero || s1.class == fp8.Zero
		t := fterm{neg: s4 < 0, frac: 2 + s0.frac + s1.frac}
		if !scaleZero {
			t.m = uint64(abs64(s4)) * s0.m * s1.m
		}
		switch {
		case r.zero == zeroMMASimC785:
			t.e = zeroExp(s0) + zeroExp(s1)
		case allZero || scaleZero:
			t.e = m.info.EZero
		default:
			t.e = s0.e + s1.e
		}
		s.add(t)
	}
}

// productTerms adds one term per product (ST: with its block's two scale
// exponents when the row is scaled).
func productTerms[T Code](m *nvInstr, s *terms, a, b []T, sa, sb []uint8, r stepRules) {
	wa, wb := isNarrow(m.a) && !r.fp4Emin0, isNarrow(m.b) && !r.fp4Emin0
	scaled := m.scale != fp8.FormatInvalid
	fa, fb, fs := m.a.FracBits(), m.b.FracBits(), m.scale.FracBits()
	for i := range a {
		pa, pb := fromParts(m.a.Decompose(uint32(a[i])), fa), fromParts(m.b.Decompose(uint32(b[i])), fb)
		if wa && pa.class == fp8.Finite {
			pa = normalize(pa)
		}
		if wb && pb.class == fp8.Finite {
			pb = normalize(pb)
		}
		t := fterm{neg: pa.neg != pb.neg, m: pa.m * pb.m, e: pa.e + pb.e, frac: pa.frac + pb.frac}
		zero := pa.class == fp8.Zero || pb.class == fp8.Zero
		var s0, s1 part
		if scaled {
			blk := i / m.info.Block
			s0, s1 = decodeFrac(m.scale, fs, uint64(sa[blk])), decodeFrac(m.scale, fs, uint64(sb[blk]))
			if s0.class == fp8.NaN || s1.class == fp8.NaN {
				s.nan = true
				continue
			}
			if s0.class == fp8.Zero || s1.class == fp8.Zero {
				if pa.class == fp8.Inf || pb.class == fp8.Inf {
					s.nan = true
					continue
				}
				zero = true
			}
			t.m *= s0.m * s1.m
			t.frac += s0.frac + s1.frac
			t.e += s0.e + s1.e
		}
		switch {
		case pa.class == fp8.NaN || pb.class == fp8.NaN:
			s.nan = true
			continue
		case pa.class == fp8.Inf || pb.class == fp8.Inf:
			if zero {
				s.nan = true
			} else {
				s.inf(t.neg)
			}
			continue
		case zero:
			t.m = 0
			t.e = m.info.EZero
			if r.zero == zeroMMASimC785 {
				t.e = zeroExp(pa) + zeroExp(pb)
				if scaled {
					t.e += zeroExp(s0) + zeroExp(s1)
				}
			}
		}
		s.add(t)
	}
}

// cTerm adds c: a term, a special, or a zero read with e_zero.
func (m *nvInstr) cTerm(s *terms, c uint64, r stepRules) {
	pc := decode(m.c, c, false)
	switch pc.class {
	case fp8.NaN:
		s.nan = true
	case fp8.Inf:
		s.inf(pc.neg)
	case fp8.Zero:
		e := m.info.EZero
		if r.zero == zeroMMASimC785 {
			e = oldZeroExp
		}
		s.add(fterm{e: e})
	default:
		s.add(fterm{neg: pc.neg, m: pc.m, e: pc.e, frac: pc.frac})
	}
}

// sumTerms aligns the terms to the largest exponent, truncates each toward
// zero to F fraction bits below it, sums them as integers and converts the
// sum with rho (+0 for a zero sum).
func sumTerms(terms []fterm, F int, rho Rounding) uint32 {
	emax := math.MinInt
	for _, t := range terms {
		emax = max(emax, t.e)
	}
	var s int64
	for _, t := range terms {
		q := int64(shiftTrunc(t.m, F-t.frac-(emax-t.e)))
		if t.neg {
			q = -q
		}
		s += q
	}
	if s == 0 {
		return 0
	}
	return round(rho, s, emax-F)
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
