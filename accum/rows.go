package accum

import (
	"math"
	"runtime"
)

// DotRows computes len(out) dot products of one vector a against rows of
// b: out[r] = m.Dot(a, b[r·stride : r·stride+len(a)], c[r]) (c nil: every
// chain starts from +0), bit for bit. It is the inner loop of attention's
// two GEMMs (one query against many keys; one row of P against many
// columns of V) and, for the T-FDPA models with a fast path, reads a's
// exponent and value tables once for all rows instead of once per row.
// It panics if b is too short for the rows (a programming error).
func DotRows(m Model, a, b []uint16, stride int, c, out []float32) {
	if len(out) > 0 {
		_ = b[(len(out)-1)*stride+len(a)-1]
	}
	if dotRowsKernel(m, a, b, stride, c, out) {
		return // a js/wasm kernel for the model's whole rows: the same bits
	}
	t, ok := m.(*tfdpa)
	if !ok || t.fast == nil || len(a) > maxRowsA {
		for r := range out {
			var cr float32
			if c != nil {
				cr = c[r]
			}
			out[r] = m.Dot(a, b[r*stride:][:len(a)], cr)
		}
		return
	}
	t.dotRows(a, b, stride, c, out)
}

// DotRowsMulti is DotRows for several accumulators at once: for each j,
// outs[j][r] = m.Dot(a, row r of b, cs[j][r]) (cs[j] nil: from +0), bit
// for bit. The chains share a and the rows, so the fast path computes each
// step's products and their largest exponent once and only the alignment,
// truncation and rounding per accumulator (attention's P·V with several
// promotion schemes fed by the same P). Where the assembly chain kernel
// runs (dotRowsAsm), each accumulator takes it instead: one chain per
// accumulator there is faster than the shared products with a Go step per
// accumulator (BenchmarkDotRows: 2xDotRows against DotRowsMulti2).
func DotRowsMulti(m Model, a, b []uint16, stride int, cs, outs [][]float32) {
	t, ok := m.(*tfdpa)
	if !ok || t.fast == nil || len(a) > maxRowsA || len(outs) < 2 || t.info.Step.L > 64 ||
		(t.fast.ent != nil && t.info.Step.L&3 == 0 || wasmRowsReady()) && !multiGoOnly {
		for j := range outs {
			var c []float32
			if cs != nil {
				c = cs[j]
			}
			DotRows(m, a, b, stride, c, outs[j])
		}
		return
	}
	rows := len(outs[0])
	if rows > 0 {
		_ = b[(rows-1)*stride+len(a)-1]
	}
	s := t.fast
	var expA [maxRowsA]int32
	var valA [maxRowsA]float64
	for i, x := range a {
		expA[i], valA[i] = s.exp[x], s.val[x]
	}
	L := t.info.Step.L
	n := len(a)
	var cr [8]float32
	if len(outs) > len(cr) {
		for j := range outs {
			var c []float32
			if cs != nil {
				c = cs[j]
			}
			DotRows(m, a, b, stride, c, outs[j])
		}
		return
	}
	var prod [64]float64
	for r := 0; r < rows; r++ {
		for j := range outs {
			cr[j] = 0
			if cs != nil && cs[j] != nil {
				cr[j] = cs[j][r]
			}
		}
		row := b[r*stride:][:n]
		for i := 0; i < n; i += L {
			k := min(i+L, n)
			emaxP := s.products(expA[i:k], valA[i:k], row[i:k], prod[:k-i])
			for j := range outs {
				d, ok := float32(0), false
				if emaxP <= 1000 {
					d, ok = s.finish(emaxP, prod[:k-i], cr[j])
				}
				if !ok {
					d = t.refStep(a[i:k], row[i:k], cr[j])
				}
				cr[j] = d
			}
		}
		for j := range outs {
			outs[j][r] = cr[j]
		}
	}
}

// multiGoOnly makes DotRowsMulti take its shared-products Go path even
// where the assembly chain runs (for the tests that check that path).
var multiGoOnly = false

// products computes the largest product exponent (sentinels included) of
// one step and the exact products valA[i]·val[b[i]].
func (s *tableStep) products(expA []int32, valA []float64, b []uint16, p []float64) int32 {
	n := len(expA)
	b, valA, p = b[:n], valA[:n], p[:n]
	exp, val := s.exp, s.val
	e0, e1 := int32(-2000), int32(-2000)
	i := 0
	for ; i+2 <= n; i += 2 {
		x0, x1 := b[i], b[i+1]
		e0 = max(e0, expA[i]+exp[x0])
		e1 = max(e1, expA[i+1]+exp[x1])
		p[i] = valA[i] * val[x0]
		p[i+1] = valA[i+1] * val[x1]
	}
	for ; i < n; i++ {
		e0 = max(e0, expA[i]+exp[b[i]])
		p[i] = valA[i] * val[b[i]]
	}
	return max(e0, e1)
}

// finish is the rest of tableStep.step given the products' largest
// exponent emaxP (no special among them) and the products p: the same
// operations in the same order. (A math.Trunc form as stepPreparedTrunc's
// was no faster in WebAssembly: BENCHMARKS.md.)
func (s *tableStep) finish(emaxP int32, p []float64, c float32) (float32, bool) {
	emax := emaxP
	ce, ok := cExponent(c, s.ezero)
	if !ok {
		return 0, false
	}
	emax = max(emax, ce)
	scale := math.Float64frombits(uint64(1023+int32(s.f)-emax) << 52)
	var s0, s1, s2, s3 int64
	i := 0
	n := len(p)
	for ; i+4 <= n; i += 4 {
		s0 += int64(p[i] * scale)
		s1 += int64(p[i+1] * scale)
		s2 += int64(p[i+2] * scale)
		s3 += int64(p[i+3] * scale)
	}
	for ; i < n; i++ {
		s0 += int64(p[i] * scale)
	}
	sum := int64(float64(c)*scale) + (s0 + s1) + (s2 + s3)
	if sum == 0 {
		return 0, true
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

// maxRowsA bounds the vectors dotRows prepares on the stack.
const maxRowsA = 1024

func (m *tfdpa) dotRows(a, b []uint16, stride int, c, out []float32) {
	s := m.fast
	if s.ent != nil && m.info.Step.L&3 == 0 {
		m.dotRowsAsm(a, b, stride, c, out)
		return
	}
	if m.dotRowsWasm(a, b, stride, c, out) {
		return
	}
	var expA [maxRowsA]int32
	var valA [maxRowsA]float64
	for i, x := range a {
		expA[i], valA[i] = s.exp[x], s.val[x]
	}
	L := m.info.Step.L
	n := len(a)
	for r := range out {
		var cr float32
		if c != nil {
			cr = c[r]
		}
		row := b[r*stride:][:n]
		for i := 0; i < n; i += L {
			j := min(i+L, n)
			d, ok := s.stepPrepared(expA[i:j], valA[i:j], row[i:j], cr)
			if !ok {
				d = m.refStep(a[i:j], row[i:j], cr)
			}
			cr = d
		}
		out[r] = cr
	}
}

// stepPrepared is tableStep.step with a's exponents and values looked up
// beforehand: the same result, bit for bit, in the form that is fastest on
// the build's architecture (stepPreparedTrunc in WebAssembly,
// stepPreparedInt elsewhere; BenchmarkStepForms times both).
func (s *tableStep) stepPrepared(expA []int32, valA []float64, b []uint16, c float32) (float32, bool) {
	if truncForms {
		return s.stepPreparedTrunc(expA, valA, b, c)
	}
	return s.stepPreparedInt(expA, valA, b, c)
}

// truncForms selects the pure-Go steps written for the WebAssembly build
// (the *Trunc forms), where Go's code generation and V8 make a different
// form fastest than natively on amd64 (the native build measured;
// BENCHMARKS.md, "The pure-Go step in WebAssembly"). Both forms compile
// everywhere and tests compare them.
const truncForms = runtime.GOARCH == "wasm"

// stepPreparedInt is stepPrepared in the form fastest natively: the same
// operations as tableStep.step in the same order.
func (s *tableStep) stepPreparedInt(expA []int32, valA []float64, b []uint16, c float32) (float32, bool) {
	n := len(expA)
	b = b[:n]
	valA = valA[:n]
	exp := s.exp
	// Four independent running maxima (and sums below) instead of one:
	// the same result, without a loop-carried chain of compare-and-moves.
	e0, e1, e2, e3 := int32(-2000), int32(-2000), int32(-2000), int32(-2000)
	i := 0
	for ; i+4 <= n; i += 4 {
		e0 = max(e0, expA[i]+exp[b[i]])
		e1 = max(e1, expA[i+1]+exp[b[i+1]])
		e2 = max(e2, expA[i+2]+exp[b[i+2]])
		e3 = max(e3, expA[i+3]+exp[b[i+3]])
	}
	for ; i < n; i++ {
		e0 = max(e0, expA[i]+exp[b[i]])
	}
	emax := max(max(e0, e1), max(e2, e3))
	if emax > 1000 {
		return 0, false
	}
	ce, ok := cExponent(c, s.ezero)
	if !ok {
		return 0, false
	}
	emax = max(emax, ce)
	scale := math.Float64frombits(uint64(1023+int32(s.f)-emax) << 52)
	val := s.val
	var s0, s1, s2, s3 int64
	i = 0
	for ; i+4 <= n; i += 4 {
		s0 += int64(valA[i] * val[b[i]] * scale)
		s1 += int64(valA[i+1] * val[b[i+1]] * scale)
		s2 += int64(valA[i+2] * val[b[i+2]] * scale)
		s3 += int64(valA[i+3] * val[b[i+3]] * scale)
	}
	for ; i < n; i++ {
		s0 += int64(valA[i] * val[b[i]] * scale)
	}
	sum := int64(float64(c)*scale) + (s0 + s1) + (s2 + s3) // integers: any order is exact
	if sum == 0 {
		return 0, true
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

// stepPreparedTrunc is stepPreparedInt in the form the WebAssembly build
// runs fastest (BenchmarkStepForms: about 0.7 of stepPreparedInt's time
// under node, 1.3 of it natively): chunks of eight elements through array
// pointers (one bounds check per chunk instead of one per element), one
// running maximum (fewer live values for V8 to spill), and each term
// truncated by math.Trunc (one f64.trunc) and summed in float64 instead of
// converted to int64 one by one (a saturating conversion, several
// instructions in V8). The result is the same bit for bit: every term
// trunc(p·2^(F−emax)) is an integer of magnitude below 2^(F+2) <= 2^32
// (|p| < 4·2^emax), and at most 64 of them sum to below 2^38 in magnitude,
// so every float64 partial sum is exact and equals the integer sum.
func (s *tableStep) stepPreparedTrunc(expA []int32, valA []float64, b []uint16, c float32) (float32, bool) {
	n := len(expA)
	b = b[:n]
	valA = valA[:n]
	exp, val := s.exp, s.val
	_, _ = exp[0], val[0] // one nil check here, none in the loops
	emax := -2000
	i := 0
	for ; i+8 <= n; i += 8 {
		ea, bb := (*[8]int32)(expA[i:]), (*[8]uint16)(b[i:])
		emax = max(emax,
			int(ea[0])+int(exp[bb[0]]), int(ea[1])+int(exp[bb[1]]),
			int(ea[2])+int(exp[bb[2]]), int(ea[3])+int(exp[bb[3]]),
			int(ea[4])+int(exp[bb[4]]), int(ea[5])+int(exp[bb[5]]),
			int(ea[6])+int(exp[bb[6]]), int(ea[7])+int(exp[bb[7]]))
	}
	for ; i < n; i++ {
		emax = max(emax, int(expA[i])+int(exp[b[i]]))
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
		va, bb := (*[8]float64)(valA[i:]), (*[8]uint16)(b[i:])
		s0 += math.Trunc(va[0]*val[bb[0]]*scale) + math.Trunc(va[2]*val[bb[2]]*scale) +
			math.Trunc(va[4]*val[bb[4]]*scale) + math.Trunc(va[6]*val[bb[6]]*scale)
		s1 += math.Trunc(va[1]*val[bb[1]]*scale) + math.Trunc(va[3]*val[bb[3]]*scale) +
			math.Trunc(va[5]*val[bb[5]]*scale) + math.Trunc(va[7]*val[bb[7]]*scale)
	}
	for ; i < n; i++ {
		s0 += math.Trunc(valA[i] * val[b[i]] * scale)
	}
	sum := int64(float64(c)*scale) + int64(s0+s1)
	return s.round(sum, int32(emax)), true
}

// dotRowsAsm is dotRows through the assembly chain kernel chainLG, with
// a's entries looked up once for all rows: whole steps in one call per row
// up to the first special, which (like the partial step at the end) takes
// tableStep.step or the reference path. The same result, bit for bit.
func (m *tfdpa) dotRowsAsm(a, b []uint16, stride int, c, out []float32) {
	s := m.fast
	var entA [maxRowsA]uint64
	for i, x := range a {
		entA[i] = s.ent[x]
	}
	L := m.info.Step.L
	n := len(a)
	f, fb := int32(s.f), int32(s.fb)
	for r := range out {
		var cr float32
		if c != nil {
			cr = c[r]
		}
		row := b[r*stride:][:n]
		for i := 0; i < n; {
			if steps := (n - i) / L; steps > 0 {
				var done int
				cr, done = chainLG(s.ent, &entA[i], &row[i], steps, L, f, fb, s.ezero, cr)
				if i += done; i >= n {
					break
				}
			}
			cr, i = m.goStep(a, row, i, cr)
		}
		out[r] = cr
	}
}

// goStep runs the step of a and row that starts at element i (a partial
// one at the end of a) with the Go step, or the reference step where that
// refuses (a NaN or inf), from c, and returns the chain's value and where
// the next step starts: the assembly and WebAssembly kernels' hand-over.
func (m *tfdpa) goStep(a, row []uint16, i int, c float32) (float32, int) {
	j := min(i+m.info.Step.L, len(a))
	d, ok := m.fast.step(a[i:j], row[i:j], c)
	if !ok {
		d = m.refStep(a[i:j], row[i:j], c)
	}
	return d, j
}
