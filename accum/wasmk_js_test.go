//go:build js && wasm && !purego

package accum

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// TestWasmKernelDotRows compares chain.wat's kernel (dotRowsWasm) with the
// Go step it replaces, bit for bit, for every model with a fast step:
// random codes over the whole code space (NaN and inf codes among them),
// accumulators that are zero, negative zero, subnormal, large, inf and
// NaN, and lengths that leave partial steps. It runs under node
// (TestWasmKernels starts it) and fails if the kernel did not load.
func TestWasmKernelDotRows(t *testing.T) {
	if !wasmRowsReady() {
		_, err := wasmDotRows()
		t.Fatalf("the WebAssembly kernel did not load: %v", err)
	}
	r := rand.New(rand.NewPCG(17, 18))
	cs := []float32{math.Float32frombits(1), math.MaxFloat32, 0, float32(math.Copysign(0, -1)), math.Float32frombits(0x807fffff),
		3.5, -1e30, 6e37, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	tested := 0
	for _, m := range Models() {
		tm, ok := m.(*tfdpa)
		if !ok || tm.fast == nil {
			continue
		}
		bits := m.Info().In.CodeBits()
		if bits > 16 {
			continue
		}
		mask := uint16(1<<bits - 1)
		L := tm.info.Step.L
		for _, n := range []int{1, L - 1, L, 2*L + 3, 128, 576, maxRowsA} {
			if n < 1 || n > maxRowsA {
				continue
			}
			const rows = 13
			stride := n + 5
			a := make([]uint16, n)
			b := make([]uint16, rows*stride)
			// Mostly finite codes: a special in 1 of 300 elements leaves
			// most rows' chains whole, so both the kernel's run and its
			// hand-over to Go are exercised.
			code := func() uint16 {
				for {
					x := uint16(r.Uint32()) & mask
					if r.IntN(300) == 0 || !isSpecialCode(m, x) {
						return x
					}
				}
			}
			for i := range a {
				a[i] = code()
			}
			for i := range b {
				b[i] = code()
				if r.IntN(5) == 0 {
					b[i] = 0
				}
			}
			// Rows where c decides the exponent (all zero: subnormal and
			// zero accumulators meet cExponent's cases) and rows that
			// overflow (a and the row all the largest finite code, c the
			// largest float32: roundRZ's infinity).
			top := largestCode(m, mask)
			for i := range b[:stride] {
				b[i] = 0
			}
			if n <= 64 {
				for i := range a {
					a[i] = top
				}
				for i := range b[stride : 2*stride] {
					b[stride+i] = top
				}
			}
			c := make([]float32, rows)
			for i := range c {
				if i < len(cs) {
					c[i] = cs[i]
				} else {
					c[i] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(60)-30)))
				}
			}
			for _, cc := range [][]float32{c, nil} {
				kernelAgainstGo(t, fmt.Sprintf("%s n %d", m.Name(), n), m, a, b, stride, cc, rows, &wasmRowsOff, false)
				tested++
			}
		}
	}
	if tested == 0 {
		t.Fatal("no model has a fast step: nothing compared")
	}
	t.Logf("%d cases, kernel against the Go step: the same bits", tested)
}

// kernelAgainstGo runs DotRows(m, a, b, stride, c, ·) for rows rows with the
// js/wasm kernels, then again with *off set (the Go code), and fails t at the
// first row whose bits differ; with nanAny, two NaNs agree whatever their
// sign and payload (WebAssembly leaves those open for an IEEE operation that
// makes a NaN, and Go's own WebAssembly and amd64 code differ there).
func kernelAgainstGo(t *testing.T, what string, m Model, a, b []uint16, stride int, c []float32, rows int, off *bool, nanAny bool) {
	t.Helper()
	got, want := make([]float32, rows), make([]float32, rows)
	DotRows(m, a, b, stride, c, got)
	*off = true
	DotRows(m, a, b, stride, c, want)
	*off = false
	for row := range got {
		if math.Float32bits(got[row]) != math.Float32bits(want[row]) && !(nanAny && got[row] != got[row] && want[row] != want[row]) {
			t.Fatalf("%s row %d (c %v): kernel %v (%#08x), Go %v (%#08x)", what, row, c != nil,
				got[row], math.Float32bits(got[row]), want[row], math.Float32bits(want[row]))
		}
	}
}

// isSpecialCode reports whether code x of m's input format is a NaN or an
// infinity (the fast step's exponent table marks them expSpecial).
func isSpecialCode(m Model, x uint16) bool {
	return m.(*tfdpa).fast.exp[x] == expSpecial
}

// largestCode returns the code of m's input format with the largest finite
// positive value.
func largestCode(m Model, mask uint16) uint16 {
	s := m.(*tfdpa).fast
	best := uint16(0)
	for x := uint32(0); x <= uint32(mask); x++ {
		if s.exp[x] != expSpecial && s.val[x] > s.val[best] {
			best = uint16(x)
		}
	}
	return best
}

// TestWasmKernelDot: Model.Dot of a long vector through the kernel, a
// chunk of maxRowsA at a time (dotWasm), equals the Go steps' chain bit for
// bit for every model with a fast step: lengths around the kernel's
// shortest and the chunk size, specials in 1 of 2000 elements, several
// accumulators.
func TestWasmKernelDot(t *testing.T) {
	if !wasmRowsReady() {
		t.Fatal("the WebAssembly kernel did not load")
	}
	r := rand.New(rand.NewPCG(19, 20))
	tested := 0
	for _, m := range Models() {
		tm, ok := m.(*tfdpa)
		if !ok || tm.fast == nil || m.Info().In.CodeBits() > 16 {
			continue
		}
		mask := uint16(1<<m.Info().In.CodeBits() - 1)
		for _, n := range []int{256, 1000, maxRowsA, maxRowsA + 1, 3*maxRowsA + 7, 1 << 16} {
			a, b := make([]uint16, n), make([]uint16, n)
			for i := range a {
				for a[i] = uint16(r.Uint32()) & mask; isSpecialCode(m, a[i]) && r.IntN(2000) != 0; a[i] = uint16(r.Uint32()) & mask {
				}
				for b[i] = uint16(r.Uint32()) & mask; isSpecialCode(m, b[i]) && r.IntN(2000) != 0; b[i] = uint16(r.Uint32()) & mask {
				}
			}
			for _, c := range []float32{0, 1.5, -3e9} {
				got := m.Dot(a, b, c)
				wasmRowsOff = true
				want := m.Dot(a, b, c)
				wasmRowsOff = false
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%s n %d c %g: kernel %08x, Go steps %08x", m.Name(), n, c, math.Float32bits(got), math.Float32bits(want))
				}
				tested++
			}
		}
	}
	t.Logf("%d dot products, kernel against the Go steps: the same bits", tested)
}

// TestWasmKernelBaselines compares baseline.wat's kernel (DotRows of a
// baseline) with the Go loops of baseline.Dot, bit for bit: every kernel
// baseline (fp32, fp32.fma, fp64, kahan, pairwise), the code tables of
// e4m3, e5m2, fp16 and bf16 and a table of random float32 values (with
// subnormals, infinities and NaNs, whose products are not exact in
// float32, so that FMA32's rounding to odd and every rounding of the
// chains are exercised), accumulators from zero and negative zero to inf
// and NaN, and lengths that take each written-out subtree of pairwise.
func TestWasmKernelBaselines(t *testing.T) {
	if _, err := wasmBaselineRows(); err != nil {
		t.Fatalf("the WebAssembly kernel did not load: %v", err)
	}
	r := rand.New(rand.NewPCG(21, 22))
	random := new([1 << 16]float32)
	for i := range random {
		switch r.IntN(40) {
		case 0:
			random[i] = float32(math.Inf(1 - 2*r.IntN(2)))
		case 1:
			random[i] = float32(math.NaN())
		case 2:
			random[i] = math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
		default:
			random[i] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(80)-40)))
		}
	}
	tables := map[string]*[1 << 16]float32{"random": random}
	formats := map[string]fp8.Format{}
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatFP16, fp8.FormatBF16} {
		tables[f.String()], formats[f.String()] = float32Values(f), f
	}
	cs := []float32{0, float32(math.Copysign(0, -1)), math.Float32frombits(1), 3.5, -1e30, 6e37, math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	// FMA32's rounding to odd decides only where the float64 sum lands on
	// a float32 midpoint or next to one: products 2^6 ± a little
	// (2^6·(1+2^-12) times 1-2^-12+2^-24 is 2^6 + 2^-30; 2^6·(1+2^-15)
	// times 1-2^-15 is 2^6 - 2^-24) onto c = 2^30 and 2^30 + 2^7 in both
	// signs round to the midpoint in float64, and to the float32 on the
	// side of the exact sum only when the float64 is moved off it toward
	// the error; 2^6·(1+1984·2^-23) times 1-3967·2^-24 onto 2^30 rounds to
	// an odd float64 next to the midpoint, which moved (the parity test
	// left out) would land on it; 2^15·(1+2^-23) times 2^15·(1-2^-24) onto
	// c = 2^-17 + 2^-40 is the first case with the product the larger term
	// (TwoSum's error from c's side).
	mids := new([1 << 16]float32)
	mids[1], mids[2] = 0x1p6*(1+0x1p-12), 1-0x1p-12+0x1p-24
	mids[3], mids[4] = 0x1p6*(1+0x1p-15), 1-0x1p-15
	mids[5], mids[6] = -mids[1], -mids[3]
	mids[7], mids[8] = 0x1p6*(1+1984*0x1p-23), 1-3967*0x1p-24
	mids[9], mids[10] = 0x1p15*(1+0x1p-23), 0x1p15*(1-0x1p-24) // 2^30 + 2^6 - 2^-17, onto c = 2^-17 + 2^-40
	// twice rounds the float64 sum to float32; always moves it toward the
	// error whatever its parity.
	twice := func(a, b, c float32) float32 { return float32(float64(a)*float64(b) + float64(c)) }
	always := func(a, b, c float32) float32 {
		p, s := float64(a)*float64(b), float64(c)
		r := p + s
		bv := r - p
		if e := (p - (r - bv)) + (s - bv); e != 0 {
			r = math.Nextafter(r, math.Copysign(math.Inf(1), e))
		}
		return float32(r)
	}
	for _, tc := range []struct {
		a, b          uint16
		c             float32
		twice, always bool // FMA32 differs from twice's, always's result
	}{{1, 2, 0x1p30, true, false}, {1, 2, 0x1p30 + 0x1p7, false, false}, {3, 4, 0x1p30, false, false},
		{3, 4, 0x1p30 + 0x1p7, true, false}, {5, 2, -0x1p30, true, false}, {6, 4, -(0x1p30 + 0x1p7), true, false},
		{7, 8, 0x1p30, false, true}, {9, 10, 0x1p-17 + 0x1p-40, true, false}} {
		m := &baseline{kind: baseFMA, val: mids}
		x, y := mids[tc.a], mids[tc.b]
		got := make([]float32, 1)
		DotRows(m, []uint16{tc.a}, []uint16{tc.b}, 1, []float32{tc.c}, got)
		if w := FMA32(x, y, tc.c); got[0] != w {
			t.Fatalf("FMA32(%v, %v, %v): kernel %v, Go %v", x, y, tc.c, got[0], w)
		}
		if (got[0] != twice(x, y, tc.c)) != tc.twice || (got[0] != always(x, y, tc.c)) != tc.always {
			t.Fatalf("FMA32(%v, %v, %v) = %v, rounded twice %v, moved always %v: the case is not what it was made to be",
				x, y, tc.c, got[0], twice(x, y, tc.c), always(x, y, tc.c))
		}
	}
	for name, val := range tables {
		for kind := baseFP32; kind < baseExact; kind++ {
			m := &baseline{kind: kind, val: val}
			for _, n := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 100, 1023, 4096} {
				const rows = 7
				stride := n + 3
				a, b := make([]uint16, n), make([]uint16, rows*stride)
				for i := range a {
					a[i] = uint16(r.Uint32())
				}
				for i := range b {
					b[i] = uint16(r.Uint32())
				}
				if f, ok := formats[name]; ok { // the format's codes, finite but for 1 in 500
					bits := f.CodeBits()
					for _, x := range [][]uint16{a, b} {
						for i := range x {
							x[i] &= uint16(1<<bits - 1)
							if v := float64(val[x[i]]); (math.IsInf(v, 0) || math.IsNaN(v)) && r.IntN(500) != 0 {
								x[i] &^= 1 << (bits - 2) // the top exponent bit off: finite
							}
						}
					}
				}
				c := make([]float32, rows)
				for i := range c {
					c[i] = cs[r.IntN(len(cs))]
				}
				for _, cc := range [][]float32{nil, c} {
					kernelAgainstGo(t, fmt.Sprintf("%s %s n %d", name, baselineNames[kind], n), m, a, b, stride, cc, rows, &wasmBaselineOff, true)
				}
			}
		}
	}
}

// TestWasmKernelEmuRows compares chain.wat's emurows (DotRows of the
// emulated mma.sync with an FP32 accumulator) with the Go steps it
// replaces, bit for bit: random codes with a NaN or inf in 1 of 300
// elements (the instruction holding one goes to Step), all-zero rows,
// rows of the largest code against a of the largest code (the largest
// terms; with c near float32's largest the accumulator's add overflows),
// accumulators from zero to NaN, and lengths that leave a partial
// instruction. A NaN result is any NaN (the accumulator's add is IEEE's,
// whose NaN sign WebAssembly leaves open). Two of the kernel's branches
// cannot be reached with these formats and are not exercised: a lo step
// cannot overflow (16 products of 8-bit codes), and c = +0's exponent
// ezero is below every nonzero product's.
func TestWasmKernelEmuRows(t *testing.T) {
	if !wasmRowsReady() {
		_, err := wasmDotRows()
		t.Fatalf("the WebAssembly kernel did not load: %v", err)
	}
	r := rand.New(rand.NewPCG(23, 24))
	cs := []float32{0, float32(math.Copysign(0, -1)), math.Float32frombits(1), math.MaxFloat32, 3.5, -1e30, 6e37,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	tested := 0
	for _, m := range Models() {
		em, ok := m.(*mmaSyncEmu)
		if !ok || em.fast == nil || em.ref.Rho == RNEFP16 {
			continue
		}
		s := em.fast
		special := func(x uint16) bool { return s.exp[x] == expSpecial }
		top := uint16(0)
		for x := range uint16(256) {
			if !special(x) && s.val[x] > s.val[top] {
				top = x
			}
		}
		for _, n := range []int{31, 32, 33, 64, 101, 512, maxRowsA} {
			const rows = 13
			stride := n + 7
			code := func() uint16 {
				for {
					x := uint16(r.Uint32()) & 0xff
					if r.IntN(300) == 0 || !special(x) {
						return x
					}
				}
			}
			a, b := make([]uint16, n), make([]uint16, rows*stride)
			for i := range a {
				a[i] = code()
			}
			for i := range b {
				b[i] = code()
				if r.IntN(5) == 0 {
					b[i] = 0
				}
			}
			for i := range b[:stride] {
				b[i] = 0
			}
			top2 := make([]uint16, n) // a's largest codes against row 1's
			for i := range top2 {
				top2[i] = top
				b[stride+i] = top
			}
			c := make([]float32, rows)
			for i := range c {
				c[i] = cs[r.IntN(len(cs))]
			}
			for _, aa := range [][]uint16{a, top2} {
				for _, cc := range [][]float32{c, nil} {
					kernelAgainstGo(t, fmt.Sprintf("%s n %d", m.Name(), n), m, aa, b, stride, cc, rows, &wasmRowsOff, true)
					tested++
				}
			}
		}
	}
	if tested == 0 {
		t.Fatal("no emulated mma.sync with an FP32 accumulator: nothing compared")
	}
	t.Logf("%d cases, kernel against the Go steps: the same bits", tested)
}
