package experiments

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// itlExec runs an experiment with command-line style values; without a
// costs value it runs the bandwidth model, which these tests check (the
// measured-cost model's are in itl_costs_test.go).
func itlExec(t *testing.T, e sim.Experiment, args map[string]string) (*sim.Recorder, error) {
	t.Helper()
	if _, ok := args["costs"]; !ok {
		args = maps.Clone(args)
		if args == nil {
			args = map[string]string{}
		}
		args["costs"] = "bandwidth"
	}
	v, err := sim.ParseValues(e.Params(), args)
	if err != nil {
		return nil, err
	}
	rec := &sim.Recorder{}
	_, err = sim.Execute(context.Background(), e, v, 1, rec)
	return rec, err
}

// itlClose reports whether got is within a relative 1e-12 of want.
func itlClose(got, want float64) bool {
	return math.Abs(got-want) <= 1e-12*math.Abs(want)
}

// TestITLArithmetic checks the cost model against hand-computed examples
// (bytes per token from the model shapes, bandwidths from the datasheets).
func TestITLArithmetic(t *testing.T) {
	const (
		h100  = 3.35e12 // B/s
		b200  = 8e12
		llama = 2 * 32 * 8 * 128 // KV elements per token
		gptF  = 2 * 12 * 8 * 64  // full layers of gpt-oss-20b
		gptSW = 2 * 12 * 8 * 64  // sliding layers, window 128
	)
	for _, tc := range []struct {
		name string
		args map[string]string
		want map[string]float64 // summary values
		at   int                // a context for the curve check
		itl  map[string]float64 // series -> ITL at `at`
	}{
		{
			name: "H100 Llama-8B roofline",
			args: map[string]string{"gpu": "h100-sxm", "model": "llama-3.1-8b", "contexts": "1000"},
			want: map[string]float64{
				"slope_bf16":  llama * 2 / h100 * 1e3, // 3.9126e-5 ms/token
				"slope_fp8":   llama * 1 / h100 * 1e3,
				"slope_ratio": 0.5,
				"break_even":  0.14 / (llama * 1 / h100 * 1e3), // published gap 6.58 − 6.44
				"itl0_bf16":   8.03e9 * 2 / h100 * 1e3,
				"itl0_fp8":    8.03e9*2/h100*1e3 + 0.14,
				// (3.9126e-5 − 4.37e-5) / 4.37e-5
				"slope_bf16_diff_pct": (llama*2/h100*1e3 - 4.37e-5) / 4.37e-5 * 100,
				// published gap / predicted slope gap: not a prediction
				"break_even_derived_diff_pct": (0.14/(llama*1/h100*1e3) - 7010) / 7010 * 100,
			},
			at: 1000,
			itl: map[string]float64{
				"bf16": 8.03e9*2/h100*1e3 + 1000*llama*2/h100*1e3,
				"fp8":  8.03e9*2/h100*1e3 + 0.14 + 1000*llama*1/h100*1e3,
			},
		},
		{
			name: "B200 Llama-8B, doc-4.4 efficiencies, batch 8, own overhead and launch",
			args: map[string]string{"gpu": "b200", "model": "llama-3.1-8b", "efficiency": "doc-4.4", "batch": "8",
				"fp8-overhead": "0.5", "launch-ms": "1", "weights-eff": "0.5", "contexts": "2000"},
			want: map[string]float64{
				"slope_bf16": 8 * llama * 2 / (0.90 * b200) * 1e3,
				"slope_fp8":  8 * llama * 1 / (0.83 * b200) * 1e3,
				"break_even": 0.5 / (8*llama*2/(0.90*b200)*1e3 - 8*llama*1/(0.83*b200)*1e3),
				"itl0_bf16":  8.03e9*2/(0.5*b200)*1e3 + 1,
				"itl0_fp8":   8.03e9*2/(0.5*b200)*1e3 + 1.5,
			},
			at: 2000,
			itl: map[string]float64{
				"bf16": 8.03e9*2/(0.5*b200)*1e3 + 1 + 2000*8*llama*2/(0.90*b200)*1e3,
			},
		},
		{
			name: "H100 gpt-oss-20b measured on an H200 (3840 of 4800 GB/s)",
			args: map[string]string{"gpu": "h100-sxm", "model": "gpt-oss-20b", "bw-measured": "3840", "bw-measured-fp8": "3360", "contexts": "1000"},
			want: map[string]float64{
				"eta_bf16":   0.8,
				"eta_fp8":    0.7,
				"slope_bf16": gptF * 2 / (0.8 * h100) * 1e3,
				"slope_fp8":  gptF * 1 / (0.7 * h100) * 1e3,
				"slope_skip": gptF * 1 / (0.7 * h100) * 1e3,
				"break_even": 0.040 / (gptF*2/(0.8*h100)*1e3 - gptF*1/(0.7*h100)*1e3),
				"itl0_bf16":  0, // no weights in the preset
			},
			at: 1000,
			itl: map[string]float64{
				// full layers grow with L, sliding layers read their 128-token window.
				"bf16":        1000*gptF*2/(0.8*h100)*1e3 + 128*gptSW*2/(0.8*h100)*1e3,
				"fp8":         0.040 + 1000*gptF*1/(0.7*h100)*1e3 + 128*gptSW*1/(0.7*h100)*1e3,
				"fp8 skip-sw": 0.020 + 1000*gptF*1/(0.7*h100)*1e3 + 128*gptSW*2/(0.8*h100)*1e3,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := itlExec(t, ITL{}, tc.args)
			if err != nil {
				t.Fatal(err)
			}
			s := rec.SummaryValues()
			for k, want := range tc.want {
				got, ok := s[k]
				if !ok || !(itlClose(got, want) || got == want) {
					t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
				}
			}
			for _, p := range rec.Points() {
				if want, ok := tc.itl[p.Series]; ok && p.X == float64(tc.at) && !itlClose(p.Y, want) {
					t.Errorf("%s at %d: %v ms, want %v", p.Series, tc.at, p.Y, want)
				}
			}
		})
	}
}

// TestITLTable checks that every published row maps to presets and that the
// table is in the notes with its differences.
func TestITLTable(t *testing.T) {
	for _, p := range itlPublishedTable {
		if _, err := newITLCost(p.gpu, p.model, itlSettings{etaBF16: 1, etaFP8: 1, etaWeights: 1, batch: 1, overhead: -1}); err != nil {
			t.Errorf("published row %s/%s: %v", p.gpu, p.model, err)
		}
		if p.slopeBF16 == 0 || p.slopeFP8 == 0 || p.source == "" {
			t.Errorf("published row %s/%s: incomplete", p.gpu, p.model)
		}
	}
	rec, err := itlExec(t, ITL{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(rec.Notes(), "\n")
	for _, want := range []string{"H100 SXM", "B200", "gpt-oss-20b", "-10.5%", "+2.1%", "4.37e-05"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	s := rec.SummaryValues()
	if got := s["table.b200.llama-3.1-8b.slope_ratio_diff_pct"]; !itlClose(got, (0.5-9.72e-6/1.80e-5)/(9.72e-6/1.80e-5)*100) {
		t.Errorf("B200 ratio difference %v%%", got)
	}
}

// TestITLParams checks parameter limits and the errors of inconsistent
// settings.
func TestITLParams(t *testing.T) {
	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"batch": "0"}, `parameter "batch": 0 is below the minimum 1`},
		{map[string]string{"contexts": "0,100"}, `parameter "contexts": 0 is below the minimum 1`},
		{map[string]string{"fp8-overhead": "-2"}, `parameter "fp8-overhead": -2 is below the minimum -1`},
		{map[string]string{"weights-eff": "0"}, `parameter "weights-eff": 0 is below the minimum 0.01`},
		{map[string]string{"gpu": "a100"}, `parameter "gpu": "a100" is not one of`},
		{map[string]string{"model": "llama-2"}, `parameter "model": "llama-2" is not one of`},
		{map[string]string{"efficiency": "measured"}, `parameter "bw-measured": efficiency measured needs`},
		{map[string]string{"bw-measured": "6000"}, `parameter "bw-measured": 6000 GB/s is above the H200's datasheet 4800 GB/s`},
		{map[string]string{"bw-measured": "3000", "bw-gpu": "h100-sxm", "bw-measured-fp8": "3600"}, `parameter "bw-measured-fp8": 3600 GB/s is above`},
	} {
		_, err := itlExec(t, ITL{}, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestITLNoOverheadNoBreakEven checks the edges of the break-even: no
// overhead gives 0, an FP8 slope that is not smaller gives +Inf.
func TestITLNoOverheadNoBreakEven(t *testing.T) {
	c, err := newITLCost("h200", "qwen3-30b-a3b", itlSettings{etaBF16: 1, etaFP8: 1, etaWeights: 1, batch: 1, overhead: -1})
	if err != nil {
		t.Fatal(err)
	}
	bf16, fp8, _ := c.layouts()
	if be := c.breakEven(bf16, fp8); be != 0 {
		t.Errorf("no published gap: break-even %v, want 0", be)
	}
	c.etaFP8 = 0.4 // FP8 reading at 40%: its slope exceeds BF16's
	_, fp8, _ = c.layouts()
	if be := c.breakEven(bf16, fp8); !math.IsInf(be, 1) {
		t.Errorf("slower FP8: break-even %v, want +Inf", be)
	}
}

// TestITLBasis checks that no figure computed from a published one is
// reported as a prediction: the break-even with the published overhead (the
// published intercept gap over the predicted slope gap; for gpt-oss on the
// H100 the gap comes from the published break-even itself) and, under
// doc-4.4, the slope ratio of every GPU (0.5·0.90/0.83 = 0.5422) and the H100
// Llama slopes the factors were fitted to have their own summary keys and
// table, apart from the predictions.
func TestITLBasis(t *testing.T) {
	for _, tc := range []struct {
		args            map[string]string
		derived, fitted []string // summary keys that must carry these suffixes
		predicted       []string // keys that must stay predictions
	}{
		{
			args: nil,
			derived: []string{"break_even", "table.h100-sxm.llama-3.1-8b.break_even", "table.b200.llama-3.1-8b.break_even",
				"table.h100-sxm.gpt-oss-20b.break_even", "table.h100-sxm.gpt-oss-20b.break_even_skip", "table.b200.gpt-oss-20b.break_even"},
			predicted: []string{"slope_bf16", "slope_ratio", "table.b200.llama-3.1-8b.slope_ratio"},
		},
		{
			args:      map[string]string{"efficiency": "doc-4.4"},
			fitted:    []string{"slope_bf16", "slope_fp8", "slope_ratio", "break_even", "table.b200.llama-3.1-8b.slope_ratio", "table.h100-sxm.gpt-oss-20b.slope_ratio", "table.h100-sxm.gpt-oss-20b.slope_ratio_skip"},
			derived:   []string{"table.b200.llama-3.1-8b.break_even"},
			predicted: []string{"table.b200.llama-3.1-8b.slope_bf16", "itl0_bf16"},
		},
		{
			// An overhead of one's own makes the break-even a prediction.
			args:      map[string]string{"fp8-overhead": "0.1"},
			predicted: []string{"break_even", "table.h100-sxm.gpt-oss-20b.break_even"},
		},
	} {
		rec, err := itlExec(t, ITL{}, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		s := rec.SummaryValues()
		check := func(keys []string, suffix string) {
			for _, k := range keys {
				for _, other := range []string{"_diff_pct", "_derived_diff_pct", "_fitted_diff_pct"} {
					if _, ok := s[k+other]; ok != (other == suffix) {
						t.Errorf("%v: %s%s present %v", tc.args, k, other, ok)
					}
				}
			}
		}
		check(tc.derived, "_derived_diff_pct")
		check(tc.fitted, "_fitted_diff_pct")
		check(tc.predicted, "_diff_pct")
		// In the notes, every break-even row with a published gap sits
		// under the heading of the figures that are not predictions.
		notes := rec.Notes()
		split := slices.IndexFunc(notes, func(n string) bool { return strings.HasPrefix(n, "NOT predictions") })
		for i, n := range notes {
			if strings.Contains(n, "break-even (gap") && tc.args["fp8-overhead"] == "" && (split < 0 || i < split) {
				t.Errorf("%v: break-even row among the predictions: %s", tc.args, n)
			}
		}
	}
}
