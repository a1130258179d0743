//go:build !js

package pmath

import (
	"testing"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs, in the js/wasm build under node, the tests of the
// functions that run there as kernels: the normal generator
// (wasmk/normal.wat: TestNormalKernel, it loads and gives the Go loop's
// variates; TestFillNormalMatches, against NormFloat64 draw by draw;
// TestNormalsPCG, the parallel generator built on it), PairsToF32
// (normal.wat's pairs: TestPairsToF32, specials and negative scales),
// PairsToF32Heads (normal.wat's heads: TestPairsToF32Heads), Exps
// (exp.wat's blocks: TestExpsEqualsExp, against Exp),
// AliasPCG (normal.wat's alias: TestAliasPCG, against rand.Rand's draws) and
// CountAbsAbove
// (wasmk/magnitudes.wat: TestCountKernel, against the Go loop and the
// definition; TestCountAbsAbove).
func TestWasmKernels(t *testing.T) {
	wasmtest.RunTests(t, "TestNormalKernel", "TestFillNormalMatches", "TestNormalsPCG", "TestCountKernel", "TestCountAbsAbove", "TestCountAbsAboveRows", "TestPairsToF32", "TestPairsToF32Heads", "TestAliasPCG", "TestExpsEqualsExp")
}
