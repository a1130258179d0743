//go:build !js

package fp8

import (
	"testing"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs, in the js/wasm build under node, the tests of
// EncodeScaledRows and Calibrate, whose loops run there as the kernels of
// wasmk/encode.wat: TestEncodeKernelsLoad (they load),
// TestEncodeScaledRows (against EncodeScaled row by row, every format) and
// TestCalibrateAmax (Calibrate's largest magnitudes, through maxrows,
// against the per-element definition).
func TestWasmKernels(t *testing.T) {
	wasmtest.RunTests(t, "TestEncodeKernelsLoad", "TestEncodeScaledRows", "TestCalibrateAmax")
}
