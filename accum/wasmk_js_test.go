//go:build js && wasm && !purego

package accum

import (
	"math"
	"math/rand/v2"
	"testing"
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
				got, want := make([]float32, rows), make([]float32, rows)
				DotRows(m, a, b, stride, cc, got)
				wasmRowsOff = true
				DotRows(m, a, b, stride, cc, want)
				wasmRowsOff = false
				for row := range got {
					if math.Float32bits(got[row]) != math.Float32bits(want[row]) {
						t.Fatalf("%s n %d row %d (c %v): kernel %08x, Go step %08x", m.Name(), n, row, cc != nil,
							math.Float32bits(got[row]), math.Float32bits(want[row]))
					}
				}
				tested++
			}
		}
	}
	if tested == 0 {
		t.Fatal("no model has a fast step: nothing compared")
	}
	t.Logf("%d cases, kernel against the Go step: the same bits", tested)
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
