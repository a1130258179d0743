package accum

import (
	"math"

	"github.com/fp8lab/fp8lab/fp8"
)

// scaledFast computes nvInstr steps with FP32 output (RZ-FP32) for speed,
// exactly as nvInstr.one does with the named model's rules (zeroFixed,
// FP4/FP6 read as e4m3 values). It uses the observation of tableStep (a
// term truncated toward zero to F bits below e_max is
// int64(value × 2^(F − e_max)), exact in float64 for every term here) with
// the scale exponents folded into that power of two:
//
//   - ST (8-bit operands, ue8m0 scales or none): the products of a block
//     share the factor 2^(E_sa + E_sb);
//   - GST (FP4, groups of 16): a group sum is an integer number of quarters
//     from a 256-entry product table, times the scale significands;
//   - TF32: exponents come from the float32 bits.
//
// Any NaN or inf (operand, scale or c) leaves the fast path: the caller
// takes the reference path, which also handles f16 outputs.
//
// Where the CPU has AVX2 (haveStepAsm), whole chains of ST steps (one
// scale pair a step, or none) and of TF32 steps run in the assembly
// kernels of scaled_amd64.s (chainAsm8, chainAsm32), which compute what
// the steps above compute and stop before a step that holds a NaN, inf or
// zero scale (TestScaledAsmEqualsGo, FuzzScaledAsm); the GST step and
// partial steps stay in Go.
type scaledFast struct {
	F, ezero int32
	kind     int // fastST, fastGST or fastTF32
	// ST: per operand code, the exponent (expZero for zero, expSpecial for
	// NaN/inf) and exact value.
	expA, expB *[256]int32
	valA, valB *[256]float64
	// scales: exponent and significand (as float64: 1 for ue8m0) per code;
	// sExp[c] = expSpecial for NaN, sZero[c] for a zero scale.
	scaled bool
	sExp   [256]int32
	sSig   [256]float64
	sZero  [256]bool
	// GST: product of two e2m1 codes (a<<4 | b) in quarters, and whether
	// both are nonzero.
	prod4 [256]int32
	nz    [256]uint8
	block int
	// The assembly chains (nil, false: the Go steps only; no AVX2 on this
	// build or CPU, or a model they do not serve). entA and entB pack the
	// ST tables as tableStep.ent does: float64bits(val[x]) | uint32(exp[x]).
	// stExp is the scale exponent per code, expSpecial for a NaN or zero
	// scale (the kernel stops there and the Go step reads it).
	entA, entB *[256]uint64
	stExp      [256]int32
	asmTF32    bool
	l          int // L, the length of the kernels' steps
}

const (
	fastST = iota + 1
	fastGST
	fastTF32
)

type codeTable struct {
	exp [256]int32
	val [256]float64
}

func newCodeTable(f fp8.Format) *codeTable {
	t := new(codeTable)
	for c := range 256 {
		p := decode(f, uint64(c), isNarrow(f))
		switch p.class {
		case fp8.Zero:
			t.exp[c] = expZero
		case fp8.Inf, fp8.NaN:
			t.exp[c] = expSpecial
		default:
			t.exp[c] = int32(p.e)
			t.val[c] = f.Value(uint32(c))
		}
	}
	return t
}

func newScaledFast(m *nvInstr) *scaledFast {
	in := m.info
	if in.Rho != RZFP32 {
		return nil
	}
	s := &scaledFast{F: int32(in.F), ezero: int32(in.EZero), block: in.Block, scaled: m.scale != fp8.FormatInvalid}
	if s.scaled {
		for c := range 256 {
			p := decode(m.scale, uint64(c), false)
			switch p.class {
			case fp8.NaN, fp8.Inf:
				s.sExp[c] = expSpecial
			case fp8.Zero:
				s.sZero[c] = true
			default:
				s.sExp[c] = int32(p.e)
				s.sSig[c] = math.Ldexp(float64(p.m), -p.frac)
			}
		}
	}
	switch {
	case m.fp4Group:
		s.kind = fastGST
		for c := range 256 {
			pa, pb := decode(fp8.FormatE2M1, uint64(c>>4), false), decode(fp8.FormatE2M1, uint64(c&15), false)
			if pa.class == fp8.Zero || pb.class == fp8.Zero {
				continue
			}
			v := int32(pa.m*pb.m) << uint(pa.e+pb.e)
			if pa.neg != pb.neg {
				v = -v
			}
			s.prod4[c], s.nz[c] = v, 1
		}
	case m.a == fp8.FormatTF32 && m.b == fp8.FormatTF32 && !s.scaled:
		s.kind = fastTF32
	case m.a.CodeBits() <= 8 && m.b.CodeBits() <= 8 && (!s.scaled || m.scale == fp8.FormatUE8M0):
		s.kind = fastST
		ta, tb := newCodeTable(m.a), newCodeTable(m.b)
		s.expA, s.valA, s.expB, s.valB = &ta.exp, &ta.val, &tb.exp, &tb.val
	default:
		return nil
	}
	if haveStepAsm {
		s.enableAsm(m)
	}
	return s
}

// enableAsm sets up the assembly chains where they compute m's steps: ST
// steps of L = K elements, a multiple of 4, with one scale pair a step (or
// none); TF32 steps of a multiple of 4.
func (s *scaledFast) enableAsm(m *nvInstr) {
	in := m.info
	s.l = in.L
	if in.L%4 != 0 || in.L > 64 {
		return
	}
	switch s.kind {
	case fastTF32:
		s.asmTF32 = true
	case fastST:
		if in.K != in.L || s.scaled && in.Block != in.L {
			return
		}
		entA, entB := packEntries8(s.expA, s.valA), packEntries8(s.expB, s.valB)
		if entA == nil || entB == nil {
			return
		}
		for c := range 256 {
			s.stExp[c] = s.sExp[c]
			if s.sZero[c] {
				s.stExp[c] = expSpecial
			}
		}
		s.entA, s.entB = entA, entB
	}
}

// packEntries8 is packEntries for a 256-code table: nil when a value has
// a nonzero bit in the low 32 bits of its float64.
func packEntries8(exp *[256]int32, val *[256]float64) *[256]uint64 {
	ent := new([256]uint64)
	if !packTable(ent[:], exp[:], val[:]) {
		return nil
	}
	return ent
}

// chainAsm8 runs whole ST steps of s.l elements over a and b from c through
// chainST8, as repeated stST calls would, and returns the result and how
// far it got: the start of the first step that holds a NaN or inf operand,
// a NaN or zero scale or follows a NaN or inf c (not run; the caller runs
// it), or of the partial step at the end. a[0] is element at of the chain,
// whose scales are sa[at/L], sb[at/L] (when scaled). s.entA must be set.
func (s *scaledFast) chainAsm8(a, b, sa, sb []uint8, at int, c float32) (float32, int) {
	L := s.l
	steps := len(a) / L
	b = b[:len(a)]
	var es [256]int32 // the scale exponents of up to 256 steps at a time
	done := 0
	for steps > 0 {
		n := min(steps, len(es))
		if s.scaled {
			blk := (at + done) / L
			x, y := sa[blk:blk+n], sb[blk:blk+n]
			y = y[:len(x)]
			for k, cx := range x {
				es[k] = s.stExp[cx] + s.stExp[y[k]]
			}
		}
		d, got := chainST8(s.entA, s.entB, &a[done], &b[done], &es[0], n, L, s.F, 23, s.ezero, c)
		c = d
		done += got
		if got < n*L {
			break
		}
		steps -= n
	}
	return c, done
}

// chainAsm32 is chainAsm8 for TF32 steps through chainTF32 (s.asmTF32).
func (s *scaledFast) chainAsm32(a, b []uint32, c float32) (float32, int) {
	L := s.l
	steps := len(a) / L
	if steps == 0 {
		return c, 0
	}
	b = b[:len(a)]
	return chainTF32(&a[0], &b[0], steps, L, s.F, 23, s.ezero, c)
}

// cTerm returns c's exponent as a term (ok false for NaN/inf c); zero c
// reads e_zero.
func (s *scaledFast) cTerm(c float32) (int32, bool) { return cExponent(c, s.ezero) }

// finish converts the integer sum in units of 2^(E − F) to FP32,
// truncating toward zero (RZ-FP32; a magnitude of 2^128 or more is ±inf, as
// roundRZ gives it). |sum| < 2^53 for every step here, so sum × 2^(E − F)
// is exact in float64; float32() rounds it to nearest, and a result that
// rounded away from zero is moved one float32 ulp back toward zero.
func (s *scaledFast) finish(sum int64, E int32) float32 {
	if sum == 0 {
		return 0
	}
	x := float64(sum) * pow2(E-s.F)
	if x >= 0x1p128 || x <= -0x1p128 {
		return float32(x) // ±inf
	}
	f := float32(x)
	if math.Abs(float64(f)) > math.Abs(x) {
		f = math.Float32frombits(math.Float32bits(f) - 1)
	}
	return f
}

func pow2(e int32) float64 { return math.Float64frombits(uint64(1023+e) << 52) }

// stST is one ST step over len(a) <= 64 8-bit codes with one scale pair
// (sa, sb ignored when unscaled).
func (s *scaledFast) stST(a, b []uint8, sa, sb uint8, c float32) (float32, bool) {
	b = b[:len(a)]
	expA, expB := s.expA, s.expB
	emax := int32(-2000)
	for i, x := range a {
		emax = max(emax, expA[x]+expB[b[i]])
	}
	var es int32
	zeroScale := false
	if s.scaled {
		if s.sExp[sa] == expSpecial || s.sExp[sb] == expSpecial {
			return 0, false
		}
		es = s.sExp[sa] + s.sExp[sb]
		zeroScale = s.sZero[sa] || s.sZero[sb]
	}
	if emax > 1000 {
		return 0, false
	}
	E, ok := s.cTerm(c)
	if !ok {
		return 0, false
	}
	if emax > -500 && !zeroScale {
		E = max(E, emax+es)
	}
	if E < s.ezero && (zeroScale || hasZero(expA, expB, a, b)) {
		E = s.ezero // a zero product (only looked for when it can matter)
	}
	sum := int64(float64(c) * pow2(s.F-E))
	if !zeroScale {
		scale := pow2(s.F - E + es)
		valA, valB := s.valA, s.valB
		for i, x := range a {
			sum += int64(valA[x] * valB[b[i]] * scale)
		}
	}
	return s.finish(sum, E), true
}

// hasZero reports whether some product of a and b has a zero operand.
func hasZero(expA, expB *[256]int32, a, b []uint8) bool {
	b = b[:len(a)]
	for i, x := range a {
		if expA[x]+expB[b[i]] < -500 {
			return true
		}
	}
	return false
}

// stGST is one GST step over len(a) <= 64 FP4 codes (one per byte, low
// nibble) with len(a)/block scale pairs.
func (s *scaledFast) stGST(a, b []uint8, sa, sb []uint8, c float32) (float32, bool) {
	b = b[:len(a)]
	E, ok := s.cTerm(c)
	if !ok {
		return 0, false
	}
	var gs [4]int64
	var ge [4]int32
	var gsig [4]float64
	var gnz [4]bool
	ng := 0
	prod, nzt := &s.prod4, &s.nz
	for g := 0; g < len(a); g += 16 {
		h := min(g+16, len(a))
		var sum int32
		var nz bool
		if h-g == 16 {
			sum, nz = groupSum16(prod, (*[16]uint8)(a[g:h]), (*[16]uint8)(b[g:h]))
		} else {
			var nzb uint8
			x, y := a[g:h], b[g:h]
			y = y[:len(x)]
			for i, ca := range x {
				k := ca<<4 | y[i]&15
				sum += prod[k]
				nzb |= nzt[k]
			}
			nz = nzb != 0
		}
		blk := g / s.block
		c0, c1 := sa[blk], sb[blk]
		if s.sExp[c0] == expSpecial || s.sExp[c1] == expSpecial {
			return 0, false
		}
		if !nz || s.sZero[c0] || s.sZero[c1] {
			E = max(E, s.ezero)
			gnz[ng] = false
		} else {
			ge[ng] = s.sExp[c0] + s.sExp[c1]
			gsig[ng] = s.sSig[c0] * s.sSig[c1]
			E = max(E, ge[ng])
			gnz[ng] = true
		}
		gs[ng] = int64(sum)
		ng++
	}
	total := int64(float64(c) * pow2(s.F-E))
	for g := 0; g < ng; g++ {
		if gnz[g] {
			// value = sum/4 × sig × 2^ge: exact in float64 (≤ 21 bits).
			total += int64(float64(gs[g]) * gsig[g] * pow2(s.F-E+ge[g]-2))
		}
	}
	return s.finish(total, E), true
}

// groupSum16 is a GST group of 16 FP4 products: their sum in quarters
// from prod (s.prod4) and whether one of them is nonzero. A product of two
// nonzero e2m1 values is never zero (prod4 holds at least one quarter for
// it; TestGSTProductTable), so the OR of the products stands in for the nz
// table. Two running sums keep the adds off one dependency chain.
func groupSum16(prod *[256]int32, x, y *[16]uint8) (int32, bool) {
	var s0, s1, o0, o1 int32
	for i := 0; i < 16; i += 2 {
		p := prod[x[i]<<4|y[i]&15]
		q := prod[x[i+1]<<4|y[i+1]&15]
		s0 += p
		s1 += q
		o0 |= p
		o1 |= q
	}
	return s0 + s1, o0|o1 != 0
}

// stTF32 is one TF32 step over len(a) <= 64 float32 bit patterns (the low
// 13 bits ignored).
func (s *scaledFast) stTF32(a, b []uint32, c float32) (float32, bool) {
	b = b[:len(a)]
	emax := int32(-2000)
	zero := false
	for i, x := range a {
		x &^= 0x1fff
		y := b[i] &^ 0x1fff
		ex, ey := int32(x>>23&0xff), int32(y>>23&0xff)
		if ex == 0xff || ey == 0xff {
			return 0, false
		}
		if x&0x7fffffff == 0 || y&0x7fffffff == 0 {
			zero = true
			continue
		}
		emax = max(emax, max(ex, 1)+max(ey, 1)-254)
	}
	E, ok := s.cTerm(c)
	if !ok {
		return 0, false
	}
	if zero {
		E = max(E, s.ezero)
	}
	E = max(E, emax)
	scale := pow2(s.F - E)
	sum := int64(float64(c) * scale)
	for i, x := range a {
		sum += int64(float64(math.Float32frombits(x&^0x1fff)) * float64(math.Float32frombits(b[i]&^0x1fff)) * scale)
	}
	return s.finish(sum, E), true
}
