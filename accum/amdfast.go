package accum

import (
	"math"
	"sync"

	"github.com/fp8lab/fp8lab/fp8"
)

// The fast paths of amdInstr on operands in their natural width, bit-exact
// with Step (TestAMDFastEqualsReference, TestAMDFastTails). Where the CPU
// has them, the f32 FMA chain runs as hardware FMAs (fmaChain32) and the
// c-independent half of the CDNA3 fp8 groups in AVX2 (fdpaPairs8), both in
// amd_amd64.s (TestFMAChainAsm, TestFDPAPairs8). They use the float64 observations
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
	// ent packs exp and val for the FDPA path, as tableStep.ent does:
	// float64bits(val) | uint32(exp), exp expSpecial for NaN/inf (so that
	// an exponent sum of 126 or more sends the group to the reference
	// path). Built for 8- and 16-bit formats, nil when a value has a
	// nonzero bit in its low 32 bits. The Go loop of chainAMD reads it for
	// 8-bit formats only (their 256 hot entries sit in L1; for f16 the one
	// table measured slower there than the three); the assembly kernels
	// read it for both.
	ent *[1 << 16]uint64
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
	if f.CodeBits() <= 16 {
		t.ent = new([1 << 16]uint64)
		for c := range t.ent {
			v, e := math.Float64bits(t.val[c]), t.exp[c]
			if t.special[c] {
				e = expSpecial
			}
			if v&0xffffffff != 0 {
				t.ent = nil
				break
			}
			t.ent[c] = v | uint64(uint32(e))
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

// pairwiseFast is pairwiseChain on 16-bit codes: whole groups of 2 or 4
// unrolled (pairs4), the rest as pairTree sums.
func (m *amdInstr) pairwiseFast(a, b []uint16, c float32) float32 {
	if m.arch == 2 {
		return m.pairwiseFlush(a, b, c)
	}
	t := m.tables()
	va, vb := &t[0].f32, &t[1].f32
	b = b[:len(a)]
	G := m.info.Group
	start := 0
	if G == 2 || G == 4 {
		c, start = pairs4(va, vb, a, b, G, c)
	}
	var p [64]float32
	for g := start; g < len(a); g += G {
		h := min(g+G, len(a))
		for i := g; i < h; i++ {
			// fmaf(a, b, +0): the product rounded once, a zero made +0.
			p[i-g] = va[a[i]]*vb[b[i]] + 0
		}
		c += pairTree(p[:h-g], false)
	}
	return c
}

// pairs4 adds to c the pairwise sums of the whole groups of G (2 or 4) of
// the products va[a[i]]·vb[b[i]], as pairwiseFast does, and returns the
// sum and the number of elements consumed. The leaves are the raw products:
// a tree of them differs from the tree of fmaf(a, b, +0) leaves only in a
// zero sum's sign (−0 where all its zero leaves were −0), so that adding
// +0 to the group sum gives the same bits.
func pairs4(va, vb *[1 << 16]float32, a, b []uint16, G int, c float32) (float32, int) {
	n := len(a) - len(a)%G
	x, y := a[:n], b[:n]
	y = y[:len(x)]
	if G == 2 {
		for i := 1; i < len(x); i += 2 {
			c += va[x[i-1]]*vb[y[i-1]] + va[x[i]]*vb[y[i]] + 0
		}
		return c, n
	}
	for i := 3; i < len(x); i += 4 {
		l := va[x[i-3]]*vb[y[i-3]] + va[x[i-2]]*vb[y[i-2]]
		r := va[x[i-1]]*vb[y[i-1]] + va[x[i]]*vb[y[i]]
		c += l + r + 0
	}
	return c, n
}

// pairwiseFlush is pairwiseFast for CDNA2, which flushes subnormal inputs,
// every node and accumulator result, and each instruction's c: whole
// instructions of groups of 2 or 4 unrolled (flushPairs4), the rest as
// pairTree sums.
func (m *amdInstr) pairwiseFlush(a, b []uint16, c float32) float32 {
	t := m.tables()
	va, vb := &t[0].flushed, &t[1].flushed
	b = b[:len(a)]
	G, K := m.info.Group, m.info.K
	start := 0
	if G == 2 || G == 4 {
		c, start = flushPairs4(va, vb, a, b, G, K, c)
	}
	var p [64]float32
	next := start // the start of the next instruction (no division a group)
	for g := start; g < len(a); g += G {
		if g == next {
			// each instruction flushes its c (to +0)
			c = flushSub(c, false)
			next += K
		}
		h := min(g+G, len(a))
		for i := g; i < h; i++ {
			p[i-g] = flushSub(va[a[i]]*vb[b[i]]+0, true)
		}
		c = flushSub(c+pairTree(p[:h-g], true), true)
	}
	return c
}

// flushPairs4 runs the whole instructions of K elements (groups of G, 2
// or 4) of pairwiseFlush from c, unrolled, and returns the result and the
// number of elements consumed. Each flush is a branch on the exponent
// field, not on the critical path through c when it is predicted (its
// operands are not subnormal).
func flushPairs4(va, vb *[1 << 16]float32, a, b []uint16, G, K int, c float32) (float32, int) {
	b = b[:len(a)]
	n := len(a) - len(a)%K
	for k := 0; k < n; k += K {
		c = flushSub(c, false)
		x, y := a[k:k+K:k+K], b[k:k+K:k+K]
		if G == 2 {
			for len(x) >= 4 && len(y) >= 4 { // two groups an iteration
				p0 := flushSub(va[x[0]]*vb[y[0]]+0, true)
				p1 := flushSub(va[x[1]]*vb[y[1]]+0, true)
				p2 := flushSub(va[x[2]]*vb[y[2]]+0, true)
				p3 := flushSub(va[x[3]]*vb[y[3]]+0, true)
				s0, s1 := flushSub(p0+p1, true), flushSub(p2+p3, true)
				c = flushSub(flushSub(c+s0, true)+s1, true)
				x, y = x[4:], y[4:]
			}
			for len(x) >= 2 && len(y) >= 2 {
				p0 := flushSub(va[x[0]]*vb[y[0]]+0, true)
				p1 := flushSub(va[x[1]]*vb[y[1]]+0, true)
				c = flushSub(c+flushSub(p0+p1, true), true)
				x, y = x[2:], y[2:]
			}
			continue
		}
		for len(x) >= 4 && len(y) >= 4 {
			p0 := flushSub(va[x[0]]*vb[y[0]]+0, true)
			p1 := flushSub(va[x[1]]*vb[y[1]]+0, true)
			p2 := flushSub(va[x[2]]*vb[y[2]]+0, true)
			p3 := flushSub(va[x[3]]*vb[y[3]]+0, true)
			s := flushSub(flushSub(p0+p1, true)+flushSub(p2+p3, true), true)
			c = flushSub(c+s, true)
			x, y = x[4:], y[4:]
		}
	}
	return c, n
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

// fdpaSum is the c-independent half of fdpaGroup for the CDNA3
// instructions, from the product exponents pe (E_a + E_b, a zero operand
// reading −126) and exact products pv: MMA-Sim's fused_sum with F = 24
// over all elements (xf32, f16, bf16) or over the even and odd ones apart
// (fp8, each sum then rounded down at their common maximum), in units of
// 2^(e − 24), and e. ok is false when a product may reach 2^128 (e of 126
// or more: the reference path decides).
func fdpaSum(pe []int32, pv []float64, fp8Pair bool) (s int64, e int32, ok bool) {
	n := len(pe)
	pv = pv[:n]
	if !fp8Pair {
		e = -1 << 20
		for _, x := range pe {
			e = max(e, x)
		}
		if e >= 126 {
			return 0, 0, false
		}
		scale := pow2(24 - e)
		for _, p := range pv {
			s += int64(p * scale)
		}
		return s, e, true
	}
	e0, e1 := int32(-1<<20), int32(-1<<20)
	i := 0
	for ; i+1 < n; i += 2 {
		e0, e1 = max(e0, pe[i]), max(e1, pe[i+1])
	}
	if i < n {
		e0 = max(e0, pe[i])
	}
	if max(e0, e1) >= 126 {
		return 0, 0, false
	}
	sc0, sc1 := pow2(24-e0), pow2(24-max(e1, -900))
	var s0, s1 int64
	for i = 0; i+1 < n; i += 2 {
		s0 += int64(pv[i] * sc0)
		s1 += int64(pv[i+1] * sc1)
	}
	if i < n {
		s0 += int64(pv[i] * sc0)
	}
	e = max(e0, e1)
	return floorShift(s0, int(e0-e)) + floorShift(s1, int(e1-e)), e, true
}

// fdpaCombine is the end of fdpaGroup for a group sum s in units of
// 2^(e − 24) and a finite c (float32 bits cb): s rounded down to 31 and c
// to 24 fraction bits below max(e, e_c) (fp8: c only when within 25 bits
// of it), added exactly and rounded to FP32 to nearest even; in integers
// but for the one conversion.
func fdpaCombine(s int64, e int32, cb uint32, fp8Pair bool) float32 {
	ef := int32(cb >> 23 & 0xff)
	ce := max(ef, 1) - 127 // a zero reads −126, as amdPart reads it
	sc := int64(cb & 0x7fffff)
	if ef != 0 {
		sc |= 1 << 23
	}
	if cb>>31 != 0 {
		sc = -sc
	}
	emax := max(e, ce)
	s31 := floorShift(s, int(7-(emax-e))) // units of 2^(emax−31)
	var c24 int64                         // units of 2^(emax−24)
	if !fp8Pair || ce >= emax-25 {
		c24 = floorShift(sc, int(1-(emax-ce))) // sc has 23 fraction bits
	}
	// |total| < 2^40: exact in float64, and so is the scaling.
	return float32(float64(s31+c24<<7) * pow2(emax-31))
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
	fp8Pair := m.in.CodeBits() == 8
	b = b[:len(a)]
	start := 0 // the whole fp8 groups through the assembly kernel first
	if x, ok := any(a).([]uint8); ok && haveStepAsm && fp8Pair && G == 16 && ta.ent != nil && tb.ent != nil {
		d, start = m.fdpaAsm8(ta, tb, x, any(b).([]uint8), d)
	}
	if x, ok := any(a).([]uint16); ok && haveStepAsm && !fp8Pair && G == 8 && ta.ent != nil && tb.ent != nil {
		d, start = m.fdpaAsm16(ta, tb, x, any(b).([]uint16), d)
	}
	if x, ok := any(a).([]uint32); ok && m.xf32 && G == 4 {
		d, start = m.xf32Groups(x, any(b).([]uint32), d)
	}
	for g := start; g < len(a); g += G {
		h := min(g+G, len(a))
		x, y := a[g:h], b[g:h]
		y = y[:len(x)]
		// The products and their exponents, and whether one is NaN or
		// inf (a field of 0xff): none of it depends on c.
		var special uint32
		if m.xf32 {
			for k := range x {
				xa, xb := uint32(x[k])&^0x1fff, uint32(y[k])&^0x1fff
				fa, fb := int32(xa>>23&0xff), int32(xb>>23&0xff)
				special |= uint32(fa+1) | uint32(fb+1)
				// f32Parts: max(field, 1) − 127, a zero reading −126
				pe[k] = max(fa, 1) + max(fb, 1) - 254
				pv[k] = float64(math.Float32frombits(xa)) * float64(math.Float32frombits(xb))
			}
			special &= 0x100
		} else if ea, eb := ta.ent, tb.ent; fp8Pair && ea != nil && eb != nil {
			// one load an operand; a NaN or inf makes the exponent sum
			// 126 or more, which fdpaSum leaves to the reference
			for k := range x {
				u, v := ea[uint16(x[k])], eb[uint16(y[k])]
				pe[k] = int32(uint32(u)) + int32(uint32(v))
				pv[k] = math.Float64frombits(u&^0xffffffff) * math.Float64frombits(v&^0xffffffff)
			}
		} else {
			for k := range x {
				u, v := uint16(x[k]), uint16(y[k])
				pe[k], pv[k] = ta.exp[u]+tb.exp[v], ta.val[u]*tb.val[v]
				if ta.special[u] || tb.special[v] {
					special = 1
				}
			}
		}
		cb := math.Float32bits(d)
		ok := special == 0 && cb&0x7f800000 != 0x7f800000
		var s int64
		var e int32
		if ok {
			s, e, ok = fdpaSum(pe[:h-g], pv[:h-g], fp8Pair)
		}
		if ok {
			d = fdpaCombine(s, e, cb, fp8Pair)
			continue
		}
		var ref [2][16]uint64
		for k := range x {
			ref[0][k], ref[1][k] = uint64(x[k]), uint64(y[k])
		}
		d = m.fdpaGroup(ref[0][:h-g], ref[1][:h-g], d)
	}
	return uint64(math.Float32bits(d)), true
}

// fdpaAsm8 runs the whole CDNA3 fp8 groups of 16 of a and b from d: their
// sums (fdpaSum) through the assembly kernel fdpaPairs8, the combine with
// c in Go, a group with a NaN or inf operand or c or an exponent sum of
// 126 or more through the reference fdpaGroup. It returns the result and
// the number of elements consumed (the whole groups).
func (m *amdInstr) fdpaAsm8(ta, tb *amdTable, a, b []uint8, d float32) (float32, int) {
	const chunk = 64
	var sums [2 * chunk]float64
	var exps [2 * chunk]int32
	groups := len(a) / 16
	b = b[:len(a)]
	done := 0
	for groups > 0 {
		n := min(groups, chunk)
		fdpaPairs8(ta.ent, tb.ent, &a[done], &b[done], n, &sums[0], &exps[0])
		for g := range n {
			e0, e1 := exps[2*g], exps[2*g+1]
			e := max(e0, e1)
			cb := math.Float32bits(d)
			if e < 126 && cb&0x7f800000 != 0x7f800000 {
				s := floorShift(int64(sums[2*g]), int(e0-e)) + floorShift(int64(sums[2*g+1]), int(e1-e))
				d = fdpaCombine(s, e, cb, true)
				continue
			}
			i := done + 16*g
			var ref [2][16]uint64
			for k := range 16 {
				ref[0][k], ref[1][k] = uint64(a[i+k]), uint64(b[i+k])
			}
			d = m.fdpaGroup(ref[0][:], ref[1][:], d)
		}
		done += 16 * n
		groups -= n
	}
	return d, done
}

// fdpaAsm16 runs the whole CDNA3 f16/bf16 groups of 8 of a and b from d:
// their sums (fdpaSum) through the assembly kernel fdpaSums16, the
// combines with c through combineRun, a group with a NaN or inf operand or
// c or an exponent sum of 126 or more through the reference fdpaGroup. It
// returns the result and the number of elements consumed (the whole
// groups).
func (m *amdInstr) fdpaAsm16(ta, tb *amdTable, a, b []uint16, d float32) (float32, int) {
	const chunk = 64
	var sums [chunk]float64
	var exps [chunk]int32
	n := len(a) &^ 7
	b = b[:len(a)]
	k := cExp(math.Float32bits(d))
	for lo := 0; lo < n; lo += 8 * chunk {
		hi := min(lo+8*chunk, n)
		groups := (hi - lo) / 8
		fdpaSums16(ta.ent, tb.ent, &a[lo], &b[lo], groups, &sums[0], &exps[0])
		d, k = combineGroups(sums[:groups], exps[:groups], d, k, func(g int, d float32) float32 {
			i := lo + 8*g
			var ref [2][8]uint64
			for j := range 8 {
				ref[0][j], ref[1][j] = uint64(a[i+j]), uint64(b[i+j])
			}
			return m.fdpaGroup(ref[0][:], ref[1][:], d)
		})
	}
	return d, n
}

// combineGroups combines the chunk's group sums and exponents with c in
// order (combineRun, k the guess of c's exponent), each group combineRun
// stops at through ref(g, c), the reference path of group g, and returns
// the result and the last guess.
func combineGroups(sums []float64, exps []int32, c float32, k int32, ref func(g int, c float32) float32) (float32, int32) {
	for g := 0; g < len(sums); {
		var done int
		c, k, done = combineRun(sums[g:], exps[g:len(sums)], c, k)
		if g += done; g < len(sums) {
			c = ref(g, c)
			g++
		}
	}
	return c, k
}

// xf32Groups runs the whole xf32 groups of 4 of a and b from d, as the
// loop of chainAMD does, a chunk at a time: the group sums and exponents
// (xf32Sums4 where haveStepAsm, else xf32Sums), then their combines with c in order (combineRun); a group
// with a NaN or inf operand or c, or an exponent sum of 126 or more,
// through the reference fdpaGroup. It returns the result and the number of
// elements consumed.
func (m *amdInstr) xf32Groups(a, b []uint32, d float32) (float32, int) {
	const chunk = 64
	var sums [chunk]float64
	var exps [chunk]int32
	n := len(a) &^ 3
	b = b[:len(a)]
	k := cExp(math.Float32bits(d))
	for lo := 0; lo < n; lo += 4 * chunk {
		hi := min(lo+4*chunk, n)
		groups := (hi - lo) / 4
		if haveStepAsm {
			xf32Sums4(&a[lo], &b[lo], groups, &sums[0], &exps[0])
		} else {
			xf32Sums(a[lo:hi], b[lo:hi], sums[:groups], exps[:groups])
		}
		d, k = combineGroups(sums[:groups], exps[:groups], d, k, func(g int, d float32) float32 {
			x, y := a[lo+4*g:][:4], b[lo+4*g:][:4]
			return m.fdpaGroup([]uint64{uint64(x[0]), uint64(x[1]), uint64(x[2]), uint64(x[3])},
				[]uint64{uint64(y[0]), uint64(y[1]), uint64(y[2]), uint64(y[3])}, d)
		})
	}
	return d, n
}

// xf32Sums is the c-independent half of the xf32 groups of 4 of a and b
// (len(a) = 4·len(sums)): per group, the exponent e of fdpaSum (exps) and
// the sum of its products truncated at 24 bits below 2^e (sums, in units
// of 2^(e − 24), an exact integer); e is expSpecial for a group with a NaN
// or inf operand (its sum meaningless), and sums of groups with e of 126
// or more are meaningless too.
func xf32Sums(a, b []uint32, sums []float64, exps []int32) {
	b = b[:len(a)]
	exps = exps[:len(sums)]
	for g := range sums {
		x, y := a[4*g:4*g+4:4*g+4], b[4*g:4*g+4:4*g+4]
		x0, x1, x2, x3 := x[0]&^0x1fff, x[1]&^0x1fff, x[2]&^0x1fff, x[3]&^0x1fff
		y0, y1, y2, y3 := y[0]&^0x1fff, y[1]&^0x1fff, y[2]&^0x1fff, y[3]&^0x1fff
		// exponent fields, and a field of 0xff (NaN/inf) anywhere
		fa0, fa1, fa2, fa3 := int32(x0>>23&0xff), int32(x1>>23&0xff), int32(x2>>23&0xff), int32(x3>>23&0xff)
		fb0, fb1, fb2, fb3 := int32(y0>>23&0xff), int32(y1>>23&0xff), int32(y2>>23&0xff), int32(y3>>23&0xff)
		special := (fa0+1)|(fa1+1)|(fa2+1)|(fa3+1)|(fb0+1)|(fb1+1)|(fb2+1)|(fb3+1) >= 0x100
		// f32Parts: max(field, 1) − 127 (a zero reads −126), biased by 254
		e := max(max(fa0, 1)+max(fb0, 1), max(fa1, 1)+max(fb1, 1), max(fa2, 1)+max(fb2, 1), max(fa3, 1)+max(fb3, 1)) - 254
		f := func(u uint32) float64 { return float64(math.Float32frombits(u)) }
		sc := pow2(min(24-e, 1000))
		sums[g] = math.Trunc(f(x0)*f(y0)*sc) + math.Trunc(f(x1)*f(y1)*sc) + math.Trunc(f(x2)*f(y2)*sc) + math.Trunc(f(x3)*f(y3)*sc)
		if special {
			e = expSpecial
		}
		exps[g] = e
	}
}

// cExp is the exponent MMA-Sim reads from a float32 c of bits cb:
// max(field, 1) − 127 (a zero or subnormal reads −126).
func cExp(cb uint32) int32 { return max(int32(cb>>23&0xff), 1) - 127 }

// combineRun is fdpaCombine (either kind) for the group sums sums[i]
// (integers below 2^53, in units of 2^(exps[i] − 24)) in order from c,
// up to the first group with an exponent of 126 or more or a c that is
// NaN or inf. It returns the result, a guess of cExp of its bits for the
// next call, and the number of groups combined. k is a guess of cExp of
// c's bits; a wrong guess costs time, not bits. When e <= k and k is
// right, max(e, e_c) is k, c is exact at 24 fraction bits below it, and
// the result is c plus the sum rounded down at 2^(k − 31), rounded to
// FP32: one float64 sum, exact (both terms are multiples of 2^(k − 31)
// below 2^(k + 7)). The check of k is a branch off the path from c to the
// result, so that a chain of groups whose c keeps its exponent waits on an
// add and two conversions a group, not on fdpaCombine.
func combineRun(sums []float64, exps []int32, c float32, k int32) (float32, int32, int) {
	exps = exps[:len(sums)]
	for i, s := range sums {
		e := exps[i]
		cb := math.Float32bits(c)
		if e >= 126 || cb&0x7f800000 == 0x7f800000 {
			return c, k, i
		}
		if e <= k {
			r := float32(math.Floor(s*pow2(e+7-k))*pow2(k-31) + float64(c))
			if cExp(cb) == k {
				c = r
				continue
			}
		}
		c, k = fdpaCombine(int64(s), e, cb, false), cExp(cb)
	}
	return c, k, len(sums)
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
