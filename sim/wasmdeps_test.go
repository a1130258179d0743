//go:build !js

package sim

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The WebAssembly build (lab.wasm) carries no HTTP client: sim.LabClient is
// left out of it (build tag), so net/http and crypto/tls do not come along.
func TestWasmBuildHasNoHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	cmd := exec.Command("go", "list", "-deps", "../wasm")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "net/http" || pkg == "crypto/tls" {
			t.Errorf("lab.wasm depends on %s", pkg)
		}
	}
}
