//go:build !js

package attention

import (
	"testing"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs, in the js/wasm build under node, the tests of the
// exact reference read from the codes, whose float64 loops run there as
// the kernels of wasmk/ref.wat: TestRefKernelsLoad (they load, and give
// the Go loops' bits), TestRefKernelF32 (ReferenceF32's float32 keys), and
// TestReferenceCodesBits and
// TestReferencePatchedBits (the reference against Reference on the
// dequantized cache, bit for bit, through every case those cover), and
// TestSetTokensBlocks (the cache's store through fp8's kernels).
func TestWasmKernels(t *testing.T) {
	wasmtest.RunTests(t, "TestRefKernelsLoad", "TestRefKernelF32", "TestReferenceCodesBits", "TestReferencePatchedBits", "TestSetTokensBlocks")
}
