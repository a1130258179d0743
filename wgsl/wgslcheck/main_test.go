package wgslcheck

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fp8lab/fp8lab/accum/golden"
	"github.com/fp8lab/fp8lab/wgsl"
)

// The tests share one Runner, as package wgsl's do: without any WebGPU
// adapter they skip with a message, except under CI (CI=true), where a
// missing adapter means a broken install and the tests fail.

var (
	testOnce   sync.Once
	testRunner *wgsl.Runner
	testErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testRunner != nil {
		testRunner.Close()
	}
	os.Exit(code)
}

func testGPU(t testing.TB) *wgsl.Runner {
	t.Helper()
	testOnce.Do(func() { testRunner, testErr = wgsl.Open(context.Background(), wgsl.Options{}) })
	if testErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no WebGPU adapter under CI (is mesa-vulkan-drivers installed?): %v", testErr)
		}
		if errors.Is(testErr, wgsl.ErrNoAdapter) {
			t.Skipf("no WebGPU adapter here, GPU test not run (install mesa-vulkan-drivers for lavapipe): %v", testErr)
		}
		t.Fatalf("opening the WebGPU device failed: %v", testErr)
	}
	return testRunner
}

// capturesDir is the folder of the H200 capture files: $FP8LAB_CAPTURES, or
// ../shared/golden/h200 beside the repository.
func capturesDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FP8LAB_CAPTURES")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "golden", "h200")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("H200 capture folder %s not found (%v): set FP8LAB_CAPTURES; golden checks not run", dir, err)
	}
	return dir
}

func readCaptures(t *testing.T) []*golden.File {
	t.Helper()
	files, err := golden.ReadDir(capturesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return files
}
