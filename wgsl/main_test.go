package wgsl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
)

// The tests share one Runner. Without any WebGPU adapter they skip with a
// message, except under CI (CI=true), where a missing adapter means a broken
// install (make test installs mesa-vulkan-drivers) and the tests fail.

var (
	testOnce   sync.Once
	testRunner *Runner
	testErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testRunner != nil {
		testRunner.Close()
	}
	os.Exit(code)
}

// testGPU returns the shared runner, or skips (locally) or fails (CI) the test
// when there is no adapter.
func testGPU(t testing.TB) *Runner {
	t.Helper()
	testOnce.Do(func() {
		testRunner, testErr = Open(context.Background(), Options{})
		if testErr == nil {
			fmt.Fprintf(os.Stderr, "wgsl tests: adapter %s; timing by %s\n", testRunner.Info(), testRunner.Info().TimingSource())
		}
	})
	if testErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no WebGPU adapter under CI (is mesa-vulkan-drivers installed?): %v", testErr)
		}
		if errors.Is(testErr, ErrNoAdapter) {
			t.Skipf("no WebGPU adapter here, GPU test not run (install mesa-vulkan-drivers for lavapipe): %v", testErr)
		}
		t.Fatalf("opening the WebGPU device failed: %v", testErr)
	}
	return testRunner
}

// needHardware skips a check that only means something on a real GPU
// (timing targets).
func needHardware(t testing.TB, r *Runner) {
	t.Helper()
	if !r.Info().Hardware {
		t.Skipf("adapter %s is not a hardware GPU: GPU-timing check skipped, not passed", r.Info())
	}
}
