//go:build js && wasm && !purego

package pmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCountKernel: magnitudes.wat's kernel loads under node, and
// CountAbsAbove counts with it what the Go loop counts: vectors of the
// magnitude cases (zeros of both signs, subnormals, the largest normals,
// infinities, NaNs) of lengths from the kernel's shortest (256) up,
// thresholds drawn among their own magnitudes and the edges.
func TestCountKernel(t *testing.T) {
	if _, err := countKernel(); err != nil {
		t.Fatalf("the WebAssembly kernel did not load: %v", err)
	}
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{256, 257, 259, 1000, 4099, 1 << 16} {
		for i := range 12 {
			x := magnitudeCases(r, n)
			// Each threshold in each place in turn: an element's own
			// magnitude (a > t and a == t both occur) in every one.
			base := [4]uint32{0, 0x7f800000, uint32(r.Uint32() >> 1), math.Float32bits(x[r.IntN(n)]) &^ (1 << 31)}
			var th [4]uint32
			for k := range th {
				th[k] = base[(k+i)%4]
			}
			if want := countAbsAboveLoop(x, th); CountAbsAbove(x, th) != want {
				t.Fatalf("n %d thresholds %#x: counts %v, the definition %v", n, th, CountAbsAbove(x, th), want)
			}
			got := CountAbsAbove(x, th)
			countKernelOff = true
			want := CountAbsAbove(x, th)
			countKernelOff = false
			if got != want {
				t.Fatalf("n %d thresholds %#x: counts %v, the Go loop's %v", n, th, got, want)
			}
		}
	}
}
