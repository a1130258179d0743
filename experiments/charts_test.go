package experiments

import (
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

// TestChartsDeclared checks that every registered experiment declares its
// chart: both axes with a quantity and a unit, at most sim.MaxFamilies
// colours, and styles that every series of a small run matches (no series
// left to an undeclared colour).
func TestChartsDeclared(t *testing.T) {
	exps := sim.Experiments()
	if len(exps) < 9 {
		t.Fatalf("%d experiments registered, want at least 9", len(exps))
	}
	for _, e := range exps {
		c, ok := e.(sim.Charter)
		if !ok {
			t.Errorf("%s: no chart declared (sim.Charter)", e.Name())
			continue
		}
		ch := c.Chart()
		if err := ch.Check(); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
		for name, a := range map[string]sim.Axis{"x": ch.X, "y": ch.Y} {
			if a.Quantity == "" || a.Unit == "" {
				t.Errorf("%s: axis %s without quantity or unit: %+v", e.Name(), name, a)
			}
		}
		if s := sim.SchemaOf(e); s.Chart == nil {
			t.Errorf("%s: the schema carries no chart", e.Name())
		}
	}
}

// TestChartSeriesStyled runs the fast experiments with small parameters and
// checks that each series they emit has a declared style and that a
// reference line's summary entry exists.
func TestChartSeriesStyled(t *testing.T) {
	cases := []struct {
		e    sim.Experiment
		args map[string]string
	}{
		{Contraction{}, map[string]string{"K": "64,128", "trials": "2", "captures": "auto"}},
		{Needle{}, map[string]string{"contexts": "256", "trials": "2", "head-dim": "64"}},
		{Promotion{}, map[string]string{"context": "512", "trials": "2", "head-dim": "64", "k-block-n": "96,192,64,160"}},
		{Scales{}, map[string]string{"outlier": "1,10", "trials": "1", "tokens": "256", "kv-heads": "2", "q-per-kv": "1"}},
		{ITL{}, nil},
		{SkipSW{}, map[string]string{"acc-contexts": "256", "trials": "1"}},
	}
	for _, c := range cases {
		t.Run(c.e.Name(), func(t *testing.T) {
			v, err := sim.ParseValues(c.e.Params(), c.args)
			if err != nil {
				t.Fatal(err)
			}
			rec := &sim.Recorder{}
			res, err := sim.Execute(t.Context(), c.e, v, 1, rec)
			if err != nil {
				t.Fatal(err)
			}
			ch := c.e.(sim.Charter).Chart()
			seen := map[string]bool{}
			for _, p := range rec.Points() {
				if seen[p.Series] {
					continue
				}
				seen[p.Series] = true
				_, i := ch.StyleOf(p.Series)
				if i < 0 {
					t.Errorf("series %q has no declared style", p.Series)
				}
				if ch.Error != "" {
					if _, ok := p.Extra[ch.Error]; !ok {
						t.Errorf("series %q: no %q extra for the error bars", p.Series, ch.Error)
					}
				}
			}
			for _, r := range ch.Refs {
				if r.Summary != "" {
					if _, ok := res.Summary[r.Summary]; !ok {
						t.Errorf("reference %q: no summary entry %q", r.Label, r.Summary)
					}
				}
			}
		})
	}
}
