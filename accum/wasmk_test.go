//go:build !js

package accum

import (
	"testing"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs this package's tests of its WebAssembly kernels
// (wasmk_js_test.go: DotRows and a long Dot through the kernel) and
// TestDotRowsEqualsDot in the js/wasm build under node: the kernel against
// the Go step it replaces, and DotRows against Dot, bit for bit.
func TestWasmKernels(t *testing.T) {
	wasmtest.RunTests(t, "TestWasmKernelDotRows", "TestWasmKernelDot", "TestDotRowsEqualsDot", "TestWasmKernelBaselines", "TestWasmKernelEmuRows")
}
