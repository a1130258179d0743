package experiments

import (
	"maps"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// A small needle run: every series at every context, accuracies in [0, 1],
// the easy context solved by every series, and the same numbers for the
// same seed whatever the number of cores.
func TestNeedleSmallDeterministic(t *testing.T) {
	args := map[string]string{"contexts": "1024,4096", "trials": "12", "head_dim": "64", "haystacks": "2"}
	prev := runtime.GOMAXPROCS(1)
	a, err := attnExec(t, Needle{}, 3, args)
	runtime.GOMAXPROCS(prev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := attnExec(t, Needle{}, 3, args)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(a.SummaryValues(), b.SummaryValues()) {
		t.Errorf("the same seed gave different summaries on 1 and %d cores:\n%v\n%v", prev, a.SummaryValues(), b.SummaryValues())
	}
	pts := a.Points()
	if len(pts) != 6 {
		t.Fatalf("%d points, want 2 contexts × 3 series", len(pts))
	}
	for _, p := range pts {
		if p.Y < 0 || p.Y > 1 || p.Extra["trials"] != 12 {
			t.Errorf("point %+v", p)
		}
		if p.X == 1024 && p.Y < 0.9 {
			t.Errorf("%s retrieves %.2f at 1024 tokens", p.Series, p.Y)
		}
	}
	c, err := attnExec(t, Needle{}, 4, args)
	if err != nil {
		t.Fatal(err)
	}
	if maps.Equal(a.SummaryValues(), c.SummaryValues()) && a.Points()[5].Y == c.Points()[5].Y {
		t.Log("seeds 3 and 4 gave identical results (possible, but suspicious)")
	}
}

// The mechanism of the collapse (docs/mechanism.md): with a large value
// mean, single-level fp8 shrinks O uniformly (alpha well below 1, the
// residual after the shrinkage far smaller than 1 − alpha: truncation
// toward zero against an accumulator that grows with the mean); the legacy
// probe, whose codes do not sum to zero, turns that shrinkage into a lost
// needle, while the zero-sum probe retrieves it from the same kind of
// output. Zero-mean values are not shrunk; two-level is right throughout.
func TestNeedleMechanism(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	run := func(mean, probe string) map[string]float64 {
		rec, err := attnExec(t, Needle{}, 1, map[string]string{"contexts": "16384", "trials": "24", "head_dim": "64",
			"value_mean": mean, "margin": "5.5", "probe": probe, "regime": "decode", "splits": "1", "haystacks": "4"})
		if err != nil {
			t.Fatal(err)
		}
		return rec.SummaryValues()
	}
	zero, legacy, balanced := run("0", "balanced"), run("4", "legacy"), run("4", "balanced")
	t.Logf("value mean 4, fp8 single-level: alpha %.3f, residual %.3g%%, relerr %.3g%%; retrieval legacy %.2f, balanced %.2f (bf16 %.2f / %.2f)",
		balanced["alpha_16k_fp8"], balanced["residual_16k_fp8"], balanced["relerr_16k_fp8"], legacy["acc_16k_fp8"], balanced["acc_16k_fp8"], legacy["acc_16k_bf16"], balanced["acc_16k_bf16"])
	if zero["acc_16k_fp8"] < zero["acc_16k_bf16"]-0.2 || zero["alpha_16k_fp8"] < 0.99 {
		t.Errorf("zero-mean values: fp8 %.2f (alpha %.4f), bf16 %.2f: single-level should neither shrink nor collapse", zero["acc_16k_fp8"], zero["alpha_16k_fp8"], zero["acc_16k_bf16"])
	}
	if a, r := balanced["alpha_16k_fp8"], balanced["residual_16k_fp8"]/100; !(a < 0.9 && r < (1-a)/2) {
		t.Errorf("value mean 4: single-level alpha %.3f, residual %.3g: want a uniform shrinkage (alpha < 0.9, residual < (1 - alpha)/2)", a, r)
	}
	if legacy["acc_16k_fp8"] > 0.3 || legacy["acc_16k_bf16"] < 0.7 || legacy["acc_16k_fp8-two-level"] < 0.7 {
		t.Errorf("legacy probe, value mean 4: bf16 %.2f, fp8 %.2f, two-level %.2f: want fp8 collapsed, the others not", legacy["acc_16k_bf16"], legacy["acc_16k_fp8"], legacy["acc_16k_fp8-two-level"])
	}
	if balanced["acc_16k_fp8"] < 0.7 {
		t.Errorf("balanced probe, value mean 4: fp8 retrieves %.2f: a uniform shrinkage should not lose a zero-sum code", balanced["acc_16k_fp8"])
	}
}

func TestNeedleRejects(t *testing.T) {
	if _, err := attnExec(t, Needle{}, 1, map[string]string{"contexts": "64", "sinks": "64", "trials": "1"}); err == nil ||
		!strings.Contains(err.Error(), "no room for a needle") {
		t.Errorf("64 sinks in 64 tokens: %v", err)
	}
	if _, err := attnExec(t, Needle{}, 1, map[string]string{"contexts": "4096", "kBlockN": "100", "trials": "1"}); err == nil ||
		!strings.Contains(err.Error(), "kBlockN 100") {
		t.Errorf("kBlockN 100: %v", err)
	}
}

// Promotion: never is worse than every tile, and intervals of more tiles
// than the context holds equal never.
func TestPromotionSmall(t *testing.T) {
	rec, err := attnExec(t, Promotion{}, 1, map[string]string{"context": "8192", "trials": "6", "head_dim": "64",
		"intervals": "1,1000,0", "kBlockN": "128", "bf16": "false"})
	if err != nil {
		t.Fatal(err)
	}
	s := rec.SummaryValues()
	if !(s["relerr_bn128_never"] > 3*s["relerr_bn128_every1"]) {
		t.Errorf("relative error never %g, every tile %g", s["relerr_bn128_never"], s["relerr_bn128_every1"])
	}
	if s["relerr_bn128_every1000"] != s["relerr_bn128_never"] {
		t.Errorf("every 1000 tiles (%g) differs from never (%g) at 64 tiles", s["relerr_bn128_every1000"], s["relerr_bn128_never"])
	}
	if len(rec.Points()) != 3 {
		t.Errorf("%d points, want 3", len(rec.Points()))
	}
}

// Scales: per-head amax scales are unaffected by an outlier head; a
// per-tensor scale fails once the outlier squeezes the ordinary heads below
// e4m3's range, and scale 1.0 once the outlier saturates.
func TestScalesSmall(t *testing.T) {
	rec, err := attnExec(t, Scales{}, 1, map[string]string{"outlier": "1,100000", "trials": "1", "tokens": "256", "kv_heads": "4", "q_per_kv": "1"})
	if err != nil {
		t.Fatal(err)
	}
	s := rec.SummaryValues()
	if s["relerr_head_x100000"] > 2*s["relerr_head_x1"]+0.2 {
		t.Errorf("per-head scales: %g with an outlier head, %g without", s["relerr_head_x100000"], s["relerr_head_x1"])
	}
	if s["relerr_tensor_x100000"] < 5*s["relerr_head_x100000"] {
		t.Errorf("per-tensor %g vs per-head %g with a 1e5 outlier head", s["relerr_tensor_x100000"], s["relerr_head_x100000"])
	}
	if s["worst_unit_x100000"] < 50 {
		t.Errorf("scale 1.0, worst head %g with a 1e5 outlier head", s["worst_unit_x100000"])
	}
	if len(rec.Points()) != 8 || len(rec.Notes()) != 1 {
		t.Errorf("%d points and %d notes", len(rec.Points()), len(rec.Notes()))
	}
}

// Sensitivity: the single-level error grows with the values' mean and
// falls with the splits, and a sink share is reached by its logit.
func TestSensitivitySmall(t *testing.T) {
	run := func(vary string) map[string]float64 {
		rec, err := attnExec(t, Sensitivity{}, 1, map[string]string{"vary": vary, "context": "8192", "trials": "4", "haystacks": "2", "head_dim": "64"})
		if err != nil {
			t.Fatal(err)
		}
		return rec.SummaryValues()
	}
	vm := run("value-mean")
	if !(vm["relerr_valuemean0p5_fp8-single-level"] > 2*vm["relerr_valuemean0p1_fp8-single-level"]) {
		t.Errorf("single-level error at mean 0.5σ %.3g%%, 0.1σ %.3g%%: want growth", vm["relerr_valuemean0p5_fp8-single-level"], vm["relerr_valuemean0p1_fp8-single-level"])
	}
	sp := run("splits")
	if !(sp["relerr_splits16_fp8-single-level"] < sp["relerr_splits1_fp8-single-level"]/3) {
		t.Errorf("16 splits %.3g%%, 1 split %.3g%%", sp["relerr_splits16_fp8-single-level"], sp["relerr_splits1_fp8-single-level"])
	}
	// The logit of a 0.5 share: ln(0.5/0.5 · (8191·e^0.5 + e^5.8)).
	if got, want := sinkLogit(0.5, 8192, 1, 5.8), math.Log(8191*math.Exp(0.5)+math.Exp(5.8)); math.Abs(got-want) > 1e-12 {
		t.Errorf("sinkLogit = %v, want %v", got, want)
	}
}

// group-memory changes only how many haystacks are drawn (and, with a GPU,
// batched) at once: at a context where 64 MiB holds one haystack and the
// default four, the run draws 4 groups against 1 and gives the same
// points and summary bit for bit; its memory estimate grows with it.
func TestNeedleGroupMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	args := map[string]string{"contexts": "66000", "trials": "4", "head_dim": "64", "haystacks": "4", "series": "fp8"}
	small := maps.Clone(args)
	small["group-memory"] = "64"
	groups := func(a map[string]string) int {
		v, err := sim.ParseValues(Needle{}.Params(), a)
		if err != nil {
			t.Fatal(err)
		}
		nt := attnNeedleFromValues(v)
		runs, err := needleRuns(nt, "fp8", 0, attnRegimeFromValues(v), 66000)
		if err != nil {
			t.Fatal(err)
		}
		return len(nt.groups(attnCall{n: 66000, trials: 4, haystacks: 4, runs: runs}))
	}
	if g1, g4 := groups(args), groups(small); g1 != 1 || g4 != 4 {
		t.Fatalf("groups: %d at the default, %d at 64 MiB; want 1 and 4", g1, g4)
	}
	a, err := attnExec(t, Needle{}, 7, args)
	if err != nil {
		t.Fatal(err)
	}
	b, err := attnExec(t, Needle{}, 7, small)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(a.SummaryValues(), b.SummaryValues()) || len(a.Points()) != len(b.Points()) {
		t.Fatalf("group-memory changed the results:\n%v\n%v", a.SummaryValues(), b.SummaryValues())
	}
	for i, p := range a.Points() {
		if q := b.Points()[i]; p.Y != q.Y || !maps.Equal(p.Extra, q.Extra) {
			t.Errorf("point %d: %+v against %+v", i, p, q)
		}
	}
	cost := func(mib string) int64 {
		v, err := sim.ParseValues(Needle{}.Params(), map[string]string{"contexts": "1048576", "group-memory": mib})
		if err != nil {
			t.Fatal(err)
		}
		return Needle{}.Cost(v).Memory
	}
	if lo, hi := cost("1024"), cost("65536"); hi <= lo {
		t.Errorf("memory estimate %d at 64 GiB, not above %d at 1 GiB", hi, lo)
	}
}
