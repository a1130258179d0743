package accum

import (
	"math"
	"sync"

	"github.com/fp8lab/fp8lab/fp8"
)

// The fast paths of amdInstr on operands in their natural width, bit-exact
// with Step (TestAMDFastEqualsReference). They use the float64 observations
// of tableStep: every product of two operands here is exact in float64, and
// truncating p × 2^(24 − e_max) toward zero (or rounding it down) is a
// float64 → int64 conversion (or math.Floor) of an exact value.

// amdTable holds, per code of an 8- or 16-bit format, the exponent MMA-Sim
// reads (−126 for a zero, the minimum normal exponent for a subnormal), the
// exact value, the value as float32, with CDNA2's flush (subnormals and
// zeros to +0), and whether the code is NaN or inf.
type amdTable struct {
	exp     [1 << 16]int32
	val     [1 << 16]float64
	f32     [1 << 16]float32
	flushed [1 << 16]float32
	special [1 << 16]bool
}

var (
	amdTablesMu sync.Mutex
	amdTables   = map[fp8.Format]*amdTable{}
)

func amdTableFor(f fp8.Format) *amdTable {
	amdTablesMu.Lock()
	defer amdTablesMu.Unlock()
	if t, ok := amdTables[f]; ok {
		return t
	}
	t := new(amdTable)
	mask := 1<<f.CodeBits() - 1
	for c := range t.exp {
		code := uint32(c & mask)
		p := f.Decompose(code)
		switch p.Class {
		case fp8.NaN, fp8.Inf:
			t.special[c] = true
			t.f32[c] = float32(f.Value(code))
			t.flushed[c] = t.f32[c]
		case fp8.Zero:
			t.exp[c] = oldZeroExp
		default:
			t.exp[c] = int32(p.E)
			t.val[c] = f.Value(code)
			t.f32[c] = float32(t.val[c])
			if p.M >= 1<<uint(f.FracBits()) {
				t.flushed[c] = t.f32[c]
			}
		}
		if p.Class == fp8.Zero {
			t.f32[c] = float32(f.Value(code)) // keeps the sign of a zero
		}
	}
	amdTables[f] = t
	return t
}

// f32Parts reads a float32 pattern as MMA-Sim does: exponent (−126 for
// zero and subnormals), value; special for NaN/inf.
func f32Parts(x uint32) (e int32, v float64, special bool) {
	ef := int32(x >> 23 & 0xff)
	if ef == 0xff {
		return 0, 0, true
	}
	return max(ef, 1) - 127, float64(math.Float32frombits(x)), false
}

// chainFMA32 is the f32 FMA chain: in hardware (fmaChain32) where the CPU
// has FMA, unless the chain ends in NaN, whose payload the hardware
// propagates differently from FMA32 (a NaN stays NaN through every later
// FMA, so a chain that does not end in NaN never met one); then, and on
// other builds, with fma32.
func chainFMA32(a, b []uint32, c float32) float32 {
	b = b[:len(a)]
	if haveFMAAsm && len(a) > 0 {
		if d := fmaChain32(&a[0], &b[0], len(a), c); d == d {
			return d
		}
	}
	for i, x := range a {
		c = fma32(math.Float32frombits(x), math.Float32frombits(b[i]), c)
	}
	return c
}

// chainFMA64 is the f64 FMA chain.
func chainFMA64(a, b []uint64, c float64) float64 {
	b = b[:len(a)]
	for i, x := range a {
		c = math.FMA(math.Float64frombits(x), math.Float64frombits(b[i]), c)
	}
	return c
}

// pairwiseFast is pairwiseChain on 16-bit codes.
func (m *amdInstr) pairwiseFast(a, b []uint16, c float32) float32 {
	t := m.tables()
	ta, tb := t[0], t[1]
	flush := m.arch == 2
	va, vb := &ta.f32, &tb.f32
	if flush {
		va, vb = &ta.flushed, &tb.flushed
	}
	b = b[:len(a)]
	G, K := m.info.Group, m.info.K
	var p [64]float32
	for g := 0; g < len(a); g += G {
		if flush && g%K == 0 {
			// each instruction flushes its c (to +0)
			c = flushSub(c, false)
		}
		h := min(g+G, len(a))
		for i := g; i < h; i++ {
			// fmaf(a, b, +0): the product rounded once, a zero made +0.
			p[i-g] = va[a[i]]*vb[b[i]] + 0
			if flush {
				p[i-g] = flushSub(p[i-g], true)
			}
		}
		var gs float32
		switch h - g {
		case 2:
			gs = p[0] + p[1]
			if flush {
				gs = flushSub(gs, true)
			}
		case 4:
			l, r := p[0]+p[1], p[2]+p[3]
			if flush {
				l, r = flushSub(l, true), flushSub(r, true)
			}
			gs = l + r
			if flush {
				gs = flushSub(gs, true)
			}
		default:
			gs = pairTree(p[:h-g], flush)
		}
		c += gs
		if flush {
			c = flushSub(c, true)
		}
	}
	return c
}

// pairTree sums leaves as pairwise32 does.
func pairTree(p []float32, flush bool) float32 {
	if len(p) == 1 {
		return p[0]
	}
	h := len(p) / 2
	s := pairTree(p[:h], flush) + pairTree(p[h:], flush)
	if flush {
		s = flushSub(s, true)
	}
	return s
}

// fdpaGroupFast is fdpaGroup for the CDNA3 instructions from the product
// exponents pe (E_a + E_b, a zero operand reading −126) and exact products
// pv. ok is false when the group needs the reference path (a product of
// 2^128 or more, or a NaN/inf c).
func (m *amdInstr) fdpaGroupFast(pe []int32, pv []float64, c float32) (float32, bool) {
	ce, cv, sp := f32Parts(math.Float32bits(c))
	if sp {
		return 0, false
	}
	var s int64
	var e int32
	fp8Pair := m.in.CodeBits() == 8
	if fp8Pair {
		s0, e0, ok0 := truncSum(pe, pv, 0)
		s1, e1, ok1 := truncSum(pe, pv, 1)
		if !ok0 || !ok1 {
			return 0, false
		}
		e = max(e0, e1)
		s = floorShift(s0, int(e0-e)) + floorShift(s1, int(e1-e))
	} else {
		var ok bool
		if s, e, ok = truncSum(pe, pv, -1); !ok {
			return 0, false
		}
	}
	emax := max(e, ce)
	s31 := floorShift(s, int(7-(emax-e)))
	var c24 int64
	if !fp8Pair || ce >= emax-25 {
		c24 = int64(math.Floor(cv * pow2(24-emax)))
	}
	return float32(float64(s31+c24<<7) * pow2(emax-31)), true
}

// truncSum is MMA-Sim's fused_sum with F = 24 over the products of all
// elements (parity -1) or of the even (0) or odd (1) ones: the sum in units
// of 2^(e_max − 24) and e_max; ok is false for a product of 2^128 or more.
func truncSum(pe []int32, pv []float64, parity int) (int64, int32, bool) {
	start, step := 0, 1
	if parity >= 0 {
		start, step = parity, 2
	}
	n := len(pe)
	pv = pv[:n]
	emax := int32(-1 << 20)
	for i := start; i < n; i += step {
		emax = max(emax, pe[i])
	}
	scale := pow2(24 - emax)
	var s int64
	for i := start; i < n; i += step {
		p := pv[i]
		if p >= 0x1p128 || p <= -0x1p128 {
			return 0, 0, false
		}
		s += int64(p * scale)
	}
	return s, emax, true
}

// chainAMD runs the K loop of an AMD instruction on codes of their natural
// width (nil when the width is not the instruction's).
func chainAMD[T Code](m *amdInstr, a, b []T, c uint64) (uint64, bool) {
	switch m.op {
	case KindFMAChain:
		if m.f64 {
			x, ok1 := any(a).([]uint64)
			y, ok2 := any(b).([]uint64)
			if !ok1 || !ok2 {
				return 0, false
			}
			return math.Float64bits(chainFMA64(x, y, math.Float64frombits(c))), true
		}
		x, ok1 := any(a).([]uint32)
		y, ok2 := any(b).([]uint32)
		if !ok1 || !ok2 {
			return 0, false
		}
		return uint64(math.Float32bits(chainFMA32(x, y, math.Float32frombits(uint32(c))))), true
	case KindPairwise:
		x, ok1 := any(a).([]uint16)
		y, ok2 := any(b).([]uint16)
		if !ok1 || !ok2 {
			return 0, false
		}
		return uint64(math.Float32bits(m.pairwiseFast(x, y, math.Float32frombits(uint32(c))))), true
	}
	G := m.info.Group
	var pe [16]int32   // product exponents (a zero operand reads −126)
	var pv [16]float64 // exact products
	d := math.Float32frombits(uint32(c))
	var ta, tb *amdTable
	if !m.xf32 {
		t := m.tables()
		ta, tb = t[0], t[1]
	}
	b = b[:len(a)]
	for g := 0; g < len(a); g += G {
		h := min(g+G, len(a))
		special := false
		x, y := a[g:h], b[g:h]
		y = y[:len(x)]
		if m.xf32 {
			for k := range x {
				ea, va, s1 := f32Parts(uint32(x[k]) &^ 0x1fff)
				eb, vb, s2 := f32Parts(uint32(y[k]) &^ 0x1fff)
				if va == 0 {
					ea = oldZeroExp
				}
				if vb == 0 {
					eb = oldZeroExp
				}
				pe[k], pv[k] = ea+eb, va*vb
				special = special || s1 || s2
			}
		} else {
			for k := range x {
				u, v := uint16(x[k]), uint16(y[k])
				pe[k], pv[k] = ta.exp[u]+tb.exp[v], ta.val[u]*tb.val[v]
				special = special || ta.special[u] || tb.special[v]
			}
		}
		r, ok := float32(0), false
		if !special {
			r, ok = m.fdpaGroupFast(pe[:h-g], pv[:h-g], d)
		}
		if !ok {
			var ref [2][16]uint64
			for k := range x {
				ref[0][k], ref[1][k] = uint64(x[k]), uint64(y[k])
			}
			r = m.fdpaGroup(ref[0][:h-g], ref[1][:h-g], d)
		}
		d = r
	}
	return uint64(math.Float32bits(d)), true
}

// fma32 is FMA32 (a*b + c rounded once to float32, nearest even), fast:
// the float64 sum r of the exact product and c, rounded to float32, is
// correctly rounded unless r is exactly halfway between two float32 numbers
// (double rounding needs a tie after the first rounding) or lies in the
// float32 subnormal range; those rare cases take FMA32. Bit-exact with
// FMA32 (TestFMA32Fast).
func fma32(a, b, c float32) float32 {
	r := float64(a)*float64(b) + float64(c) // the product is exact: 24+24 bits
	rb := math.Float64bits(r)
	if rb&(1<<29-1) != 1<<28 && rb&0x7fffffffffffffff >= 0x3810000000000000 {
		return float32(r)
	}
	return FMA32(a, b, c)
}
