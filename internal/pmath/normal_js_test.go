//go:build js && wasm && !purego

package pmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNormalKernel: normal.wat's kernel loads under node, and
// FillNormalPCG gives the Go loop's variates and leaves the PCG where the
// Go loop does, bit for bit: lengths from 1 to 2^20 (every draw's path:
// the rectangle, the wedge, the tail the kernel hands back), and again
// with a wedge margin so wide that most wedge tests are undecided, so that
// the kernel's hand-over of an undecided wedge runs too (it never does
// with the real margin: TestWedgeExact).
func TestNormalKernel(t *testing.T) {
	if _, err := normalKernels(); err != nil {
		t.Fatalf("the WebAssembly kernels did not load: %v", err)
	}
	margin := normalConsts[3]
	defer func() { normalConsts[3] = margin }()
	for _, m := range []float64{margin, 0.25} {
		normalConsts[3] = m
		for seed, n := range []int{1, 2, 37, 4096, 1 << 20} {
			pk, pg := rand.NewPCG(uint64(seed), 99), rand.NewPCG(uint64(seed), 99)
			got, want := make([]float64, n), make([]float64, n)
			FillNormalPCG(got, pk)
			normalKernelOff = true
			FillNormalPCG(want, pg)
			normalKernelOff = false
			for i := range got {
				if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
					t.Fatalf("margin %g, n %d: variate %d is %v, the Go loop's %v", m, n, i, got[i], want[i])
				}
			}
			if a, b := pk.Uint64(), pg.Uint64(); a != b {
				t.Fatalf("margin %g, n %d: the PCG is left elsewhere (next Uint64 %#x, the Go loop's %#x)", m, n, a, b)
			}
		}
	}
}
