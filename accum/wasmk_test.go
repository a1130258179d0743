//go:build !js

package accum

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/internal/wasmtest"
)

// TestWasmKernels runs this package's tests of its WebAssembly kernels
// (wasmk_js_test.go) and TestDotRowsEqualsDot in the js/wasm build under
// node: the kernel against the Go step it replaces, and DotRows against
// Dot, bit for bit.
func TestWasmKernels(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the js/wasm test binary")
	}
	node := wasmtest.Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	times, out, err := wasmtest.Run(ctx, node, t.TempDir(), "^(TestWasmKernelDotRows|TestDotRowsEqualsDot)$")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"TestWasmKernelDotRows", "TestDotRowsEqualsDot"} {
		if !strings.Contains(string(out), "--- PASS: "+name) {
			t.Fatalf("%s did not pass under node:\n%s", name, out)
		}
	}
	t.Logf("build %v, run %v\n%s", times.Build.Round(time.Millisecond), times.Run.Round(time.Millisecond), out)
}

// TestWasmKernelsBuilt checks that every embedded kernel module is the
// build of its source: wat2wasm (Debian's wabt) run on each .wat file gives
// its .wasm byte for byte. Without wat2wasm it skips, or fails under CI=true.
func TestWasmKernelsBuilt(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("wat2wasm is missing (CI=true): apt-get install wabt")
		}
		t.Skip("wat2wasm not found (apt-get install wabt); it runs in CI")
	}
	srcs, err := filepath.Glob("wasmk/*.wat")
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no kernel sources in wasmk/: %v", err)
	}
	for _, src := range srcs {
		want, err := os.ReadFile(strings.TrimSuffix(src, ".wat") + ".wasm")
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(t.TempDir(), "k.wasm")
		if out, err := exec.Command(wat2wasm, src, "-o", tmp).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", src, err, out)
		}
		got, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not the build of %s: run make wasm-kernels", strings.TrimSuffix(src, ".wat")+".wasm", src)
		}
	}
}
