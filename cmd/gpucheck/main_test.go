package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/wgsl"
)

// TestQuickRun runs gpucheck -quick -json on whatever adapter is here
// (lavapipe in CI) and checks the report: bit-exact, every step present,
// speed targets marked "not checked" on a CPU adapter. Without an adapter it
// skips, except under CI, where it fails.
func TestQuickRun(t *testing.T) {
	r, err := wgsl.Open(context.Background(), wgsl.Options{})
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no WebGPU adapter under CI: %v", err)
		}
		if errors.Is(err, wgsl.ErrNoAdapter) {
			t.Skipf("no WebGPU adapter here, gpucheck not run: %v", err)
		}
		t.Fatal(err)
	}
	hardware := r.Info().Hardware
	r.Close()
	var out, errOut bytes.Buffer
	args := []string{"-quick", "-json", "-contexts", "512,1024", "-accum-k", "256,1024", "-trials", "4", "-bench-m", "16", "-bench-n", "16", "-bench-k", "256", "-reps", "2", "-sim-tokens", "512"}
	if err := run(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("gpucheck: %v\n%s", err, errOut.String())
	}
	var rep Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out.String())
	}
	if !rep.BitExact || len(rep.Random) == 0 || len(rep.AttnDecode) == 0 || len(rep.Chain) != 3 || rep.DecodeBW.Summary == nil || rep.GPUAccum.Summary == nil {
		t.Errorf("incomplete or failed report: %+v", rep)
	}
	// Every timing has its warm-up, runs, spread and the clocks' source.
	if rep.Warmup == "" || len(rep.Sim) != 3 {
		t.Errorf("warm-up rule %q, %d sim benchmarks (want 3)", rep.Warmup, len(rep.Sim))
	}
	var timings []Timing
	for _, c := range rep.Chain {
		timings = append(timings, c.Timing)
	}
	for _, c := range rep.Sim {
		timings = append(timings, c.Timing)
	}
	for _, tm := range timings {
		if tm.Reps != 2 || tm.Warmups < 1 || !(tm.MinMS <= tm.TimeMS && tm.TimeMS <= tm.MaxMS) || tm.Clocks.Source == "" {
			t.Errorf("timing %+v: want 2 runs after a warm-up, min ≤ median ≤ max, a clocks source", tm)
		}
	}
	if rep.DecodeBW.Clocks == nil || len(rep.DecodeBW.Points) == 0 || rep.DecodeBW.Points[0].Extra["ms_max"] < rep.DecodeBW.Points[0].Y {
		t.Errorf("decode-bw: clocks %v, first point %+v: want clocks and ms_max ≥ the median", rep.DecodeBW.Clocks, rep.DecodeBW.Points)
	}
	for _, tg := range rep.Targets {
		if !hardware && !strings.HasPrefix(tg.Status, "not checked") {
			t.Errorf("target %q on a CPU adapter: %q, want not checked", tg.Name, tg.Status)
		}
	}
	if err := run(context.Background(), []string{"-only", "nothing"}, &out, &errOut); err == nil {
		t.Error("-only nothing: no error")
	}
}

// A timing that came out NaN or infinite (a loaded CPU adapter) is
// reported as null in the JSON report, never an encoding error (which
// once failed TestQuickRun under load: "json: unsupported value: NaN").
func TestReportNonFiniteJSON(t *testing.T) {
	rep := Report{Targets: []Target{{Name: "ratio", Value: Num(math.NaN())}},
		Chain:    []ChainRate{{ProductsPerS: Num(math.Inf(1))}},
		DecodeBW: Experiment{Summary: map[string]Num{"slope_ratio": Num(math.NaN()), "ok": 1.5}, Points: []Point{{X: 1, Y: Num(math.Inf(-1))}}}}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"value":null`, `"products_per_s":null`, `"slope_ratio":null`, `"ok":1.5`, `"y":null`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report JSON lacks %s: %s", want, b)
		}
	}
}

// The clock sampler reads nvidia-smi's CSV lines ([N/A] as NaN, bad lines
// dropped) and a benchmark's window takes the samples around it, or says
// why there are none.
func TestClocks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	if _, ok := parseClockLine("garbage", t0); ok {
		t.Error("a bad line parsed")
	}
	s, ok := parseClockLine("0, 1980, 3201, [N/A], 45, 1980", t0)
	if !ok || s.sm != 1980 || s.mem != 3201 || !math.IsNaN(s.power) || s.maxSM != 1980 {
		t.Errorf("parsed %+v, %v", s, ok)
	}
	c := &clocks{}
	for i, sm := range []float64{345, 1200, 1980, 1980, 1965} {
		c.samples = append(c.samples, clockSample{at: t0.Add(time.Duration(i) * time.Second), sm: sm, mem: 3201, power: float64(100 * i), maxSM: 1980})
	}
	k := c.window(t0.Add(2*time.Second), t0.Add(4*time.Second))
	if k.Samples != 3 || k.SMMHz.Min != 1965 || k.SMMHz.Max != 1980 || k.MaxSM != 1980 || !strings.Contains(k.String(), "SM 1980 MHz (1965–1980) of max 1980") {
		t.Errorf("window: %+v %s", k, k)
	}
	none := &clocks{why: "not measured: no nvidia-smi on the PATH"}
	if k := none.window(t0, t0); k.Samples != 0 || !strings.Contains(k.String(), "no nvidia-smi") {
		t.Errorf("without nvidia-smi: %s", k)
	}
}
