//go:build !js

package attention

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs, in the js/wasm build under node, the tests of the
// exact reference read from the codes, whose float64 loops run there as
// the kernels of wasmk/ref.wat: TestRefKernelsLoad (they load, and give
// the Go loops' bits) and TestReferenceCodesBits and
// TestReferencePatchedBits (the reference against Reference on the
// dequantized cache, bit for bit, through every case those cover), and
// TestSetTokensBlocks (the cache's store through fp8's kernels).
func TestWasmKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the js/wasm test binary")
	}
	node := wasmtest.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	names := []string{"TestRefKernelsLoad", "TestReferenceCodesBits", "TestReferencePatchedBits", "TestSetTokensBlocks"}
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
