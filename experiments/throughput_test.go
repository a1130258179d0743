package experiments

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// costsExec runs an experiment with command-line style values.
func costsExec(t *testing.T, e sim.Experiment, args map[string]string) (*sim.Recorder, error) {
	t.Helper()
	v, err := sim.ParseValues(e.Params(), args)
	if err != nil {
		return nil, err
	}
	rec := &sim.Recorder{}
	_, err = sim.Execute(context.Background(), e, v, 1, rec)
	return rec, err
}

// TestThroughputSynthetic runs the benchmark on the SYNTHETIC file: the
// published figures it is set beside are the blog's, every format produces
// the same output tokens, one point per sweep value and FP8 format, and the
// notes say the file is no measurement.
func TestThroughputSynthetic(t *testing.T) {
	withCosts(t, syntheticCosts())
	for _, tc := range []struct {
		model    string
		formats  []string
		pubGains map[string]float64
	}{
		{"llama-3.1-8b", []string{"bf16", "fp8"}, map[string]float64{"fp8": (517.5/450.3 - 1) * 100}},
		{"gpt-oss-20b", []string{"bf16", "fp8", "fp8_skip_sw"}, map[string]float64{"fp8": (853.0/831.6 - 1) * 100, "fp8_skip_sw": (871.8/831.6 - 1) * 100}},
	} {
		rec, err := costsExec(t, Throughput{}, map[string]string{"model": tc.model, "requests": "12", "output": "300", "concurrencies": "1,8,32"})
		if err != nil {
			t.Fatal(err)
		}
		s := rec.SummaryValues()
		for k, want := range tc.pubGains {
			if got := s["gain_pct_"+k+"_published"]; math.Abs(got-want) > 1e-9 {
				t.Errorf("%s %s: published gain %g, want %g", tc.model, k, got, want)
			}
			if d := s["gain_pct_"+k+"_diff_points"]; math.Abs(d-(s["gain_pct_"+k]-want)) > 1e-9 {
				t.Errorf("%s %s: diff %g", tc.model, k, d)
			}
		}
		for _, k := range tc.formats[1:] {
			if s["output_tokens_"+k] != s["output_tokens_bf16"] || s["output_tokens_bf16"] == 0 {
				t.Errorf("%s: %s made %g output tokens, bf16 %g", tc.model, k, s["output_tokens_"+k], s["output_tokens_bf16"])
			}
		}
		if n, want := len(rec.Points()), 3*(len(tc.formats)-1); n != want {
			t.Errorf("%s: %d points, want %d", tc.model, n, want)
		}
		if !strings.Contains(strings.Join(rec.Notes(), "\n"), "NOT A MEASUREMENT") {
			t.Errorf("%s: the notes do not say the file is synthetic", tc.model)
		}
	}
}
