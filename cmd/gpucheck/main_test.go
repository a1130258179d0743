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
	args := []string{"-quick", "-json", "-contexts", "512,1024", "-accum-k", "256,1024", "-trials", "4", "-bench-m", "16", "-bench-n", "16", "-bench-k", "256", "-reps", "2"}
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
