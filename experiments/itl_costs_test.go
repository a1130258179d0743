package experiments

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/experiments/costdata"
)

// withCosts runs the test with the cost file f (nil: none).
func withCosts(t *testing.T, f *costdata.File) {
	t.Helper()
	old := measuredCosts
	t.Cleanup(func() { measuredCosts = old })
	measuredCosts = func() (*costdata.File, error) {
		if f == nil {
			return nil, costdata.ErrNoMeasuredCosts
		}
		return f, nil
	}
}

// TestITLMeasuredSynthetic runs itl and skip-sw on the SYNTHETIC file:
// the notes say it is not a measurement, and every published GPU and model
// has its row.
func TestITLMeasuredSynthetic(t *testing.T) {
	withCosts(t, syntheticCosts())
	for _, e := range []struct {
		exp  string
		args map[string]string
	}{{"itl", map[string]string{"costs": "measured"}}, {"skip-sw", map[string]string{"costs": "measured", "accuracy": "false"}}} {
		var rec interface{ Notes() []string }
		var err error
		if e.exp == "itl" {
			r, er := itlExec(t, ITL{}, e.args)
			rec, err = r, er
		} else {
			r, er := itlExec(t, SkipSW{}, e.args)
			rec, err = r, er
		}
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(rec.Notes(), "\n")
		if !strings.Contains(notes, "NOT A MEASUREMENT") {
			t.Errorf("%s: the notes do not say the file is synthetic", e.exp)
		}
		t.Log(notes)
	}
}

// TestITLNoMeasuredCosts: a build without the file says so and predicts
// nothing.
func TestITLNoMeasuredCosts(t *testing.T) {
	withCosts(t, nil)
	rec, err := itlExec(t, ITL{}, map[string]string{"costs": "measured"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Points()); n != 0 {
		t.Errorf("%d points without measured costs", n)
	}
	if s := rec.SummaryValues(); len(s) != 1 || s["measured_costs"] != 0 {
		t.Errorf("summary %v, want only measured_costs = 0", s)
	}
	if !strings.Contains(strings.Join(rec.Notes(), "\n"), "no measured costs") {
		t.Errorf("notes %q do not say there are no measured costs", rec.Notes())
	}
}

// TestITLMeasuredIgnoresPublished: the measured-cost predictions do not
// move when the published figures do (nothing published goes in).
func TestITLMeasuredIgnoresPublished(t *testing.T) {
	f := syntheticCosts()
	before := map[string]*itlMeasuredFit{}
	for _, p := range itlPublishedTable {
		r, err := itlMeasuredFitFor(f, p.gpu, p.model, costdata.KVFP8Tensor, 1, itlDefaultContexts)
		if err != nil {
			t.Fatal(err)
		}
		before[p.gpu+p.model] = r
	}
	saved := slices.Clone(itlPublishedTable)
	t.Cleanup(func() { itlPublishedTable = saved })
	for i := range itlPublishedTable {
		p := &itlPublishedTable[i]
		p.slopeBF16, p.slopeFP8, p.slopeSkip, p.t0BF16, p.t0FP8, p.breakEven, p.breakEvenSkip = 2*p.slopeBF16, 3*p.slopeFP8, 5*p.slopeSkip, 7, 11, 13, 17
	}
	for _, p := range itlPublishedTable {
		r, err := itlMeasuredFitFor(f, p.gpu, p.model, costdata.KVFP8Tensor, 1, itlDefaultContexts)
		if err != nil {
			t.Fatal(err)
		}
		b := before[p.gpu+p.model]
		if r.bf16 != b.bf16 || r.fp8 != b.fp8 || r.sw != b.sw || r.beFP8 != b.beFP8 || r.beSkip != b.beSkip {
			t.Errorf("%s %s: the prediction moved with the published figures", p.gpu, p.model)
		}
	}
}

// TestCostsNoMeasuredCostsEverywhere: throughput says it has no measured
// costs and predicts nothing; prefill-cost keeps its accuracy part only.
func TestCostsNoMeasuredCostsEverywhere(t *testing.T) {
	withCosts(t, nil)
	rec, err := costsExec(t, Throughput{}, map[string]string{"requests": "4", "output": "10"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Points()) != 0 || rec.SummaryValues()["measured_costs"] != 0 || !strings.Contains(strings.Join(rec.Notes(), "\n"), "no measured costs") {
		t.Errorf("throughput without costs: %d points, summary %v, notes %q", len(rec.Points()), rec.SummaryValues(), rec.Notes())
	}
	rec, err = costsExec(t, PrefillCost{}, map[string]string{"acc-contexts": "128", "trials": "1", "acc-head-dims": "64"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.Points() {
		if !strings.HasPrefix(p.Series, "rel err: ") {
			t.Errorf("prefill-cost without costs emits %q", p.Series)
		}
	}
	if rec.SummaryValues()["measured_costs"] != 0 {
		t.Errorf("prefill-cost summary %v", rec.SummaryValues())
	}
}

// TestPrefillCostSynthetic: the ratios are the rows' (the synthetic file's
// two-level is 1.85× BF16 at head_dim 256 by construction), and the part of
// the published slowdown is (ratio − 1)/(published − 1).
func TestPrefillCostSynthetic(t *testing.T) {
	withCosts(t, syntheticCosts())
	rec, err := costsExec(t, PrefillCost{}, map[string]string{"accuracy": "false"})
	if err != nil {
		t.Fatal(err)
	}
	s := rec.SummaryValues()
	r := s["ratio_two_level_hd256"]
	// (10 + 1.85·w) / (10 + w) with w the synthetic BF16 work at 32768.
	w := 32768.0 * 32768 / 2 * 8 * 256 * 4 / 6e14 * 1e6
	if want := (10 + 1.85*w) / (10 + w); math.Abs(r-want) > 1e-12 {
		t.Errorf("two-level / bf16 at hd256 = %g, want %g", r, want)
	}
	if got, want := s["explained_fraction_of_published"], (r-1)/(1.12e-6/6.93e-7-1); math.Abs(got-want) > 1e-12 {
		t.Errorf("explained fraction %g, want %g", got, want)
	}
	if s["spills_two_level_hd256"] != 8 || s["registers_bf16_hd128"] != 188 {
		t.Errorf("registers and spills: %v", s)
	}
}
