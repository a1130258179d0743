//go:build !js

package fp8

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs, in the js/wasm build under node, the tests of
// EncodeScaledRows and Calibrate, whose loops run there as the kernels of
// wasmk/encode.wat: TestEncodeKernelsLoad (they load),
// TestEncodeScaledRows (against EncodeScaled row by row, every format) and
// TestCalibrateAmax (Calibrate's largest magnitudes, through maxrows,
// against the per-element definition).
func TestWasmKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the js/wasm test binary")
	}
	node := wasmtest.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	names := []string{"TestEncodeKernelsLoad", "TestEncodeScaledRows", "TestCalibrateAmax"}
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
