// Package wasmtest runs a package's own test binary as WebAssembly
// (GOOS=js GOARCH=wasm) under Node.js, for the tests that compare what the
// WebAssembly build computes (the lab in the browser) with what the native
// build does (the lab on the server), bit for bit.
//
// The binary is run as Go's go_js_wasm_exec runs it: node with a larger
// stack, and Go's own lib/wasm/wasm_exec_node.js, which gives the program
// node's file system and the process environment.
package wasmtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Node returns the path of node. Without one it skips t, saying why, or
// fails it when $CI is "true" (the check must run there).
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err == nil {
		return node
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("node is missing (CI=true): the WebAssembly side runs under Node.js (apt-get install nodejs)")
	}
	t.Skip("node not found: the WebAssembly side runs under Node.js (apt-get install nodejs); it runs in CI")
	return ""
}

// Times are the durations of Run's two steps.
type Times struct{ Build, Run time.Duration }

// Run builds the test binary of the package in the working directory (a
// package's own, under go test) for js/wasm into dir, and runs the tests
// matching the regular expression run in it under node, with env
// ("NAME=value") added to the environment. It returns the output of the
// run; an error says which step failed, with its output.
func Run(ctx context.Context, node, dir, run string, env ...string) (Times, []byte, error) {
	var times Times
	goroot, err := exec.CommandContext(ctx, "go", "env", "GOROOT").Output()
	if err != nil {
		return times, nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	t0 := time.Now()
	bin := filepath.Join(dir, "test.wasm")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		return times, out, fmt.Errorf("building the js/wasm test binary: %w\n%s", err, out)
	}
	times.Build = time.Since(t0)
	t0 = time.Now()
	cmd := exec.CommandContext(ctx, node, "--stack-size=8192",
		filepath.Join(strings.TrimSpace(string(goroot)), "lib", "wasm", "wasm_exec_node.js"),
		bin, "-test.run="+run, "-test.v")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	times.Run = time.Since(t0)
	if err != nil {
		return times, out, fmt.Errorf("the js/wasm test binary under node: %w\n%s", err, out)
	}
	return times, out, nil
}

// RunTests runs the tests named in the package's own js/wasm test binary
// under node (Node, then Run, within ten minutes) and fails t unless each
// of them passed there; it skips t with -short. It is how a package checks
// its WebAssembly kernels (package internal/wasmk) against its Go code in
// the build that runs them.
func RunTests(t *testing.T, names ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the js/wasm test binary")
	}
	node := Node(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	times, out, err := Run(ctx, node, t.TempDir(), "^("+strings.Join(names, "|")+")$")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") {
			t.Fatalf("%s did not pass under node:\n%s", name, out)
		}
	}
	t.Logf("build %v, run %v", times.Build.Round(time.Millisecond), times.Run.Round(time.Millisecond))
}

// BrowserRuns are the runs of BENCHMARKS.md's "The browser against one
// native core" (issue 17, item 4): the three experiments it times, at
// sizes that take seconds on one native core, with the same parameters in
// every build (wasm's BenchmarkBrowserRuns under node, lab's
// TestBrowserSpeed in Chromium).
var BrowserRuns = []struct {
	Name   string
	Params map[string]string
}{
	{"contraction", map[string]string{"K": "1024,4096,16384,65536,262144", "trials": "32", "captures": "off"}},
	{"needle", map[string]string{"contexts": "4096,16384,65536", "trials": "16", "haystacks": "4"}},
	{"scales", map[string]string{"tokens": "4096", "outlier": "1,100,10000", "trials": "2"}},
}
