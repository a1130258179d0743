//go:build !js

package accum

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs this package's tests of its WebAssembly kernels
// (wasmk_js_test.go: DotRows and a long Dot through the kernel) and
// TestDotRowsEqualsDot in the js/wasm build under node: the kernel against
// the Go step it replaces, and DotRows against Dot, bit for bit.
func TestWasmKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the js/wasm test binary")
	}
	node := wasmtest.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	times, out, err := wasmtest.Run(ctx, node, t.TempDir(), "^(TestWasmKernelDotRows|TestWasmKernelDot|TestDotRowsEqualsDot)$")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TestWasmKernelDotRows", "TestWasmKernelDot", "TestDotRowsEqualsDot"} {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Fatalf("%s did not pass under node:\n%s", name, out)
		}
	}
	t.Logf("build %v, run %v\n%s", times.Build.Round(time.Millisecond), times.Run.Round(time.Millisecond), out)
}
