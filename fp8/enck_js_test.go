//go:build js && wasm && !purego

package fp8

import "testing"

// TestEncodeKernelsLoad: encode.wat's kernels load under node, so that
// TestEncodeScaledRows, run beside it, compares them with the Go loops.
func TestEncodeKernelsLoad(t *testing.T) {
	if _, err := encKernels(); err != nil {
		t.Fatalf("the WebAssembly kernels did not load: %v", err)
	}
}
