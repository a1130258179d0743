package wasmk

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWasmKernelsBuilt checks that every embedded kernel module of the
// repository (*/wasmk/*.wasm and */*/wasmk/*.wasm) is the build of its
// source: wat2wasm (Debian's wabt) run on each .wat file gives its .wasm
// byte for byte, and no .wasm is without its .wat. Without wat2wasm it
// skips, or fails under CI=true.
func TestWasmKernelsBuilt(t *testing.T) {
	wat2wasm, err := exec.LookPath("wat2wasm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("wat2wasm is missing (CI=true): apt-get install wabt")
		}
		t.Skip("wat2wasm not found (apt-get install wabt); it runs in CI")
	}
	var srcs, mods []string
	for _, dir := range []string{"../../*/wasmk/", "../../*/*/wasmk/"} {
		s, _ := filepath.Glob(dir + "*.wat")
		m, _ := filepath.Glob(dir + "*.wasm")
		srcs, mods = append(srcs, s...), append(mods, m...)
	}
	if len(srcs) == 0 {
		t.Fatal("no kernel sources in */wasmk/ or */*/wasmk/")
	}
	if len(mods) != len(srcs) {
		t.Errorf("%d modules for %d sources: %v, %v", len(mods), len(srcs), mods, srcs)
	}
	for _, src := range srcs {
		mod := strings.TrimSuffix(src, ".wat") + ".wasm"
		want, err := os.ReadFile(mod)
		if err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(t.TempDir(), "k.wasm")
		if out, err := exec.Command(wat2wasm, "--debug-names", src, "-o", tmp).CombinedOutput(); err != nil {
			t.Fatalf("wat2wasm %s: %v\n%s", src, err, out)
		}
		got, err := os.ReadFile(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not the build of %s: run make wasm-kernels", mod, src)
		}
	}
	t.Logf("%d kernel modules are the builds of their sources", len(srcs))
}
