package experiments

import (
	"fmt"
	"github.com/fp8lab/fp8lab/presets"
	"math"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// skipswSmall are the values of a quick accuracy run.
var skipswSmall = map[string]string{"acc-contexts": "512,4096", "trials": "2", "q-per-kv": "2"}

// TestSkipSWCost checks the cost part: in a bandwidth model skipping the
// sliding layers leaves the slope where FP8 everywhere puts it (their cache
// is bounded) and moves only the intercept; the published figures and
// differences are in the summary.
func TestSkipSWCost(t *testing.T) {
	rec, err := itlExec(t, SkipSW{}, map[string]string{"accuracy": "false", "contexts": "64,1000"})
	if err != nil {
		t.Fatal(err)
	}
	s := rec.SummaryValues()
	const h100, full, sw = 3.35e12, 2 * 12 * 8 * 64, 2 * 12 * 8 * 64 // B/s, elements per token
	for k, want := range map[string]float64{
		"slope_bf16":                 full * 2 / h100 * 1e3,
		"slope_skip":                 full * 1 / h100 * 1e3,
		"slope_ratio_skip":           0.5,
		"slope_ratio_skip_published": 6.34e-6 / 8.94e-6,
		"slope_ratio_skip_diff_pct":  (0.5 - 6.34e-6/8.94e-6) / (6.34e-6 / 8.94e-6) * 100,
		"break_even_skip":            0.020 / (full * 1 / h100 * 1e3),
		"break_even_skip_published":  7659,
	} {
		if got := s[k]; !itlClose(got, want) {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	// At 1000 tokens skip-SW reads the sliding layers' 128 tokens in BF16.
	for _, p := range rec.Points() {
		if p.Series == skipswITLPrefix+"fp8 skip-sw" && p.X == 1000 {
			want := 0.020 + (1000*full*1+128*sw*2)/h100*1e3
			if !itlClose(p.Y, want) {
				t.Errorf("skip-SW ITL at 1000 tokens: %v ms, want %v", p.Y, want)
			}
		}
		if strings.HasPrefix(p.Series, skipswErrPrefix) {
			t.Errorf("accuracy point %q with -accuracy false", p.Series)
		}
	}
	if notes := strings.Join(rec.Notes(), "\n"); !strings.Contains(notes, "accuracy part not run") || !strings.Contains(notes, "same slope") {
		t.Errorf("notes: %s", notes)
	}
}

// TestSkipSWAccuracy runs a small accuracy part: the sliding layer's FP8
// error does not grow with the context (its window bounds the contraction),
// BF16 is more accurate than FP8, and the full layer's single-level FP8 error
// grows with the context while two-level stays small.
func TestSkipSWAccuracy(t *testing.T) {
	rec, err := itlExec(t, SkipSW{}, skipswSmall)
	if err != nil {
		t.Fatal(err)
	}
	s := rec.SummaryValues()
	for _, n := range []int{512, 4096} {
		for _, k := range []string{"sliding_fp8", "sliding_bf16", "full_fp8", "full_fp8_two_level", "full_bf16"} {
			if v := s[fmt.Sprintf("%s_rel_l2_n%d", k, n)]; !(v > 0 && v < 1) {
				t.Errorf("%s at %d tokens: error %v", k, n, v)
			}
		}
		if f, b := s[fmt.Sprintf("sliding_fp8_rel_l2_n%d", n)], s[fmt.Sprintf("sliding_bf16_rel_l2_n%d", n)]; b >= f {
			t.Errorf("%d tokens: sliding bf16 error %v not below fp8 %v", n, b, f)
		}
	}
	if g := s["sliding_fp8_growth"]; g < 0.5 || g > 2 {
		t.Errorf("sliding fp8 error grows ×%v from 512 to 4096 tokens", g)
	}
	if a, b := s["full_fp8_rel_l2_n512"], s["full_fp8_rel_l2_n4096"]; b < 2*a {
		t.Errorf("full fp8 single-level error %v → %v: expected growth with the context", a, b)
	}
	if two, one := s["full_fp8_two_level_rel_l2_n4096"], s["full_fp8_rel_l2_n4096"]; two*3 > one {
		t.Errorf("two-level %v not well below single-level %v at 4096 tokens", two, one)
	}
}

// TestSkipSWSeeds checks that a seed determines the accuracy part.
func TestSkipSWSeeds(t *testing.T) {
	args := map[string]string{"acc-contexts": "300", "trials": "2", "q-per-kv": "1", "full-layers": "false"}
	get := func() map[string]float64 {
		rec, err := itlExec(t, SkipSW{}, args)
		if err != nil {
			t.Fatal(err)
		}
		return rec.SummaryValues()
	}
	a, b := get(), get()
	for k, v := range a {
		if b[k] != v && !(math.IsNaN(v) && math.IsNaN(b[k])) {
			t.Errorf("%s: %v then %v with the same seed", k, v, b[k])
		}
	}
}

// TestSkipSWParams checks parameter limits.
func TestSkipSWParams(t *testing.T) {
	params := SkipSW{}.Params()
	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"model": "llama-3.1-8b"}, `parameter "model": "llama-3.1-8b" is not one of gpt-oss-20b, gemma-4-e2b`},
		{map[string]string{"trials": "0"}, `parameter "trials": 0 is below the minimum 1`},
		{map[string]string{"q-per-kv": "65"}, `parameter "q-per-kv": 65 is above the maximum 64`},
		{map[string]string{"acc-contexts": "0"}, `parameter "acc-contexts": 0 is below the minimum 1`},
	} {
		_, err := sim.ParseValues(params, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestSkipSWPresetsHaveNoWeights: skip-sw's y axis says its ITL holds no
// weight read, true only while every preset with sliding-window layers has
// WeightBytes 0; a preset with weights makes the axis false.
func TestSkipSWPresetsHaveNoWeights(t *testing.T) {
	for _, id := range skipswModels() {
		m, err := presets.LookupModel(id)
		if err != nil {
			t.Fatal(err)
		}
		if m.WeightBytes != 0 {
			t.Errorf("%s has weights (%g bytes): skip-sw's y axis (\"no weights\") must change", id, m.WeightBytes)
		}
	}
}
