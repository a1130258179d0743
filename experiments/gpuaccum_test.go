package experiments

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

var (
	gpuTestOnce   sync.Once
	gpuTestRunner *wgsl.Runner
	gpuTestErr    error
)

// gpuTestGPU returns a shared runner; without an adapter the test skips,
// except under CI (CI=true), where it fails: make test installs lavapipe.
func gpuTestGPU(t *testing.T) *wgsl.Runner {
	t.Helper()
	gpuTestOnce.Do(func() { gpuTestRunner, gpuTestErr = wgsl.Open(context.Background(), wgsl.Options{}) })
	if gpuTestErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no WebGPU adapter under CI (is mesa-vulkan-drivers installed?): %v", gpuTestErr)
		}
		if errors.Is(gpuTestErr, wgsl.ErrNoAdapter) {
			t.Skipf("no WebGPU adapter here, GPU experiment not run: %v", gpuTestErr)
		}
		t.Fatal(gpuTestErr)
	}
	return gpuTestRunner
}

func gpuRun(t *testing.T, e sim.Experiment, args map[string]string) *sim.Recorder {
	t.Helper()
	vals, err := sim.ParseValues(e.Params(), args)
	if err != nil {
		t.Fatal(err)
	}
	rec := &sim.Recorder{}
	if _, err := sim.Execute(context.Background(), e, vals, 1, rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestGPUAccum(t *testing.T) {
	r := gpuTestGPU(t)
	rec := gpuRun(t, GPUAccum{Runner: r}, map[string]string{"K": "32,1000,4096", "trials": "8"})
	s := rec.SummaryValues()
	for _, n := range rec.Notes() {
		t.Log(n)
	}
	if s["wgsl_compared"] != 3*8*4 || s["wgsl_mismatches"] != 0 {
		t.Errorf("WGSL against Go: %v mismatches of %v", s["wgsl_mismatches"], s["wgsl_compared"])
	}
	// e4m3 products are exact in f32: the sequential loop equals fp32 and
	// fp32.fma whatever the driver does.
	if s["seq_eq_fp32"] != 1 || s["seq_eq_fp32.fma"] != 1 || s["pairwise_eq_pairwise"] != 1 {
		t.Errorf("GPU f32 against Go baselines: %v", s)
	}
	if s["fused"] == 1 && s["fp32in_seq_eq_fused"] != 1 || s["fused"] == 0 && s["fp32in_seq_eq_unfused"] != 1 {
		t.Errorf("FMA probe and FP32-input chains disagree: %v", s)
	}
	series := map[string]int{}
	for _, p := range rec.Points() {
		series[p.Series]++
	}
	for _, want := range []string{"sm90.wgmma never", "sm90.wgmma every128", "sm90.mma.sync", "sm100.tcgen05", "gpu f32 sequential", "gpu f32 pairwise", "go fp32"} {
		if series[want] == 0 {
			t.Errorf("no points in series %q (have %v)", want, series)
		}
	}
	if series["gpu f32 pairwise"] != 2 { // K = 1000 is not a power of two
		t.Errorf("pairwise points: %d, want 2", series["gpu f32 pairwise"])
	}
}

func TestDecodeBW(t *testing.T) {
	r := gpuTestGPU(t)
	rec := gpuRun(t, DecodeBW{Runner: r}, map[string]string{"contexts": "512,2048", "reps": "2"})
	s := rec.SummaryValues()
	for _, n := range rec.Notes() {
		t.Log(n)
	}
	if want := 2 * (2 + decodeBWFitPoints); len(rec.Points()) != want { // 2 formats × (2 contexts measured, the fitted line)
		t.Errorf("%d points, want %d", len(rec.Points()), want)
	}
	for _, p := range rec.Points() {
		if strings.HasSuffix(p.Series, decodeBWFit) {
			kv := strings.TrimSuffix(p.Series, decodeBWFit)
			if want := s[kv+"_intercept_ms"] + s[kv+"_slope_ns"]*1e-6*p.X; math.Abs(p.Y-want) > 1e-9*math.Abs(want) {
				t.Errorf("%s at %v: %v, the summary's line gives %v", p.Series, p.X, p.Y, want)
			}
		}
	}
	for _, k := range []string{"fp16_slope_ns", "e4m3_slope_ns", "slope_ratio", "fp16_bw_gbs", "e4m3_bw_gbs", "batch"} {
		if _, ok := s[k]; !ok {
			t.Errorf("summary lacks %s: %v", k, s)
		}
	}
	if s["fp16_bw_gbs"] <= 0 || s["e4m3_bw_gbs"] <= 0 {
		t.Errorf("bandwidths not positive: %v", s)
	}
}

// TestDecodeBWTargets checks the speed targets of issue 4 on a real GPU: the
// FP8 slope at most 0.6 of the FP16 slope, and on an H200 FP16 at >= 60% of
// 4.8 TB/s at long context. It is skipped, not passed, on a CPU adapter.
// (On an H200 the slope ratio target is missed so far: see
// wgsl/BENCHMARKS-draft.md.)
func TestDecodeBWTargets(t *testing.T) {
	r := gpuTestGPU(t)
	if !r.Info().Hardware {
		t.Skipf("adapter %s is not a hardware GPU: decode-bw timing targets not checked", r.Info())
	}
	rec := gpuRun(t, DecodeBW{Runner: r}, map[string]string{"contexts": "65536,262144,524288", "reps": "5"})
	s := rec.SummaryValues()
	t.Logf("decode-bw on %s: %v", r.Info().Name, s)
	if strings.Contains(r.Info().Name, "H200") && s["fp16_bw_gbs"] < 0.6*4800 {
		t.Errorf("FP16 at %.0f GB/s at 512k tokens, want >= 2880 (60%% of 4.8 TB/s)", s["fp16_bw_gbs"])
	}
	if s["slope_ratio"] > 0.6 {
		t.Errorf("FP8/FP16 slope ratio %.3f, want <= 0.6", s["slope_ratio"])
	}
}

func TestGPUExperimentsRegistered(t *testing.T) {
	for _, name := range []string{"gpu-accum", "decode-bw"} {
		e, err := sim.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(e.Doc(), "GPU") {
			t.Errorf("%s: doc does not mention the GPU", name)
		}
	}
	if b := gpuDecodeBatch(0, 8, 524288, 2<<30); b != 1 {
		t.Errorf("auto batch at 512k with 2 GiB bindings: %d, want 1", b)
	}
	if b := gpuDecodeBatch(0, 8, 1024, 128<<20); b != 63 {
		t.Errorf("auto batch at 1k with 128 MiB bindings: %d, want 63 (below the binding limit)", b)
	}
	if b := gpuDecodeBatch(0, 8, 256, 4<<30); b != 64 {
		t.Errorf("auto batch at 256 tokens with 4 GiB bindings: %d, want 64 (the cap)", b)
	}
	if s := gpuSlope([]float64{1, 2, 3}, []float64{3, 5, 7}); s != 2 {
		t.Errorf("slope %g, want 2", s)
	}
}
