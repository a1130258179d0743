//go:build !js

package pmath

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs, in the js/wasm build under node, the tests of the
// functions that run there as kernels: the normal generator
// (wasmk/normal.wat: TestNormalKernel, it loads and gives the Go loop's
// variates; TestFillNormalMatches, against NormFloat64 draw by draw;
// TestNormalsPCG, the parallel generator built on it), PairsToF32
// (normal.wat's pairs: TestPairsToF32, specials and negative scales) and
// CountAbsAbove
// (wasmk/magnitudes.wat: TestCountKernel, against the Go loop and the
// definition; TestCountAbsAbove).
func TestWasmKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the js/wasm test binary")
	}
	node := wasmtest.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	names := []string{"TestNormalKernel", "TestFillNormalMatches", "TestNormalsPCG", "TestCountKernel", "TestCountAbsAbove", "TestPairsToF32"}
	times, out, err := wasmtest.Run(ctx, node, t.TempDir(), "^("+strings.Join(names, "|")+")$")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Fatalf("%s did not pass under node:\n%s", name, out)
		}
	}
	t.Logf("build %v, run %v", times.Build.Round(time.Millisecond), times.Run.Round(time.Millisecond))
}
