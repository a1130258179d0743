package labtest

import (
	"context"
	"math"

	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(ChartDemo{}) }

// ChartDemo is the lab-chart experiment: a small deterministic run whose
// chart has everything a chart must show: two families with variants, a
// measured series, exact zeros and a non-finite value on a log axis,
// standard errors, a reference line from the summary and a published mark.
type ChartDemo struct{}

// Name returns "lab-chart".
func (ChartDemo) Name() string { return "lab-chart" }

// Doc describes the experiment.
func (ChartDemo) Doc() string {
	return "Test experiment of the lab's charts: declared axes, families, zeros, NaN, standard errors.\n\n" +
		"x = 2^k for k in 4 … 4+points-1; y = scale·x^-1 (a, b plain), the same over 2 (b fast), " +
		"0 (a exact: every point), x^-1/3 with one NaN (hw, measured); se = y/10 on a; " +
		"fields p90 (a: 2y in [y, 4y], b: 3y) and acc (a: 1 - y)."
}

// Params returns the schema.
func (ChartDemo) Params() []sim.Param {
	return []sim.Param{
		{Name: "points", Doc: "points per series", Kind: sim.KindInt, Default: 6, Min: 2, Max: 20},
		{Name: "scale", Doc: "factor of every y", Kind: sim.KindFloat, Default: 1.0, Min: 0.001, Max: 1000},
	}
}

// Chart declares the chart.
func (ChartDemo) Chart() sim.Chart {
	return sim.Chart{
		X:     sim.Axis{Quantity: "size", Unit: "elements", Log: true, Base: 2},
		Y:     sim.Axis{Quantity: "error", Unit: "relative", Log: true},
		Error: "se",
		Styles: []sim.Style{
			{Match: "a", Family: "alpha"},
			{Match: "a exact", Family: "alpha", Variant: "exact"},
			{Match: "b *", Family: "beta", Variant: "fast"},
			{Match: "b", Family: "beta"},
			{Match: "hw", Family: "alpha", Variant: "hardware", Measured: true},
		},
		Fields: []sim.Field{
			{Key: "p90", Axis: sim.Axis{Quantity: "error, 90th percentile", Unit: "relative", Log: true}, Lo: "p90_lo", Hi: "p90_hi", Method: "95 % test interval (p90/2, 2·p90)"},
			{Key: "acc", Axis: sim.Axis{Quantity: "accuracy", Unit: "fraction of trials"}.Range(0, 1)},
		},
		Summary: []sim.SummaryField{{Match: "floor", Axis: sim.Axis{Quantity: "error floor", Unit: "relative", Log: true}}},
		Refs:    []sim.Ref{{Axis: "y", Summary: "floor", Label: "floor"}},
		Marks:   []sim.Mark{{Series: "a", X: 64, Y: 0.05, Label: "published 0.05 (a test figure)"}},
	}
}

// Run emits the points.
// Cost: a few points, no memory to speak of (the lab runs only
// experiments that estimate their cost).
func (ChartDemo) Cost(v sim.Values) sim.Cost { return sim.Cost{Memory: 1 << 20, Work: 1e6} }

func (ChartDemo) Run(ctx context.Context, run *sim.Run) error {
	n, scale := run.Values.Int("points"), run.Values.Float("scale")
	for k := range n {
		x := math.Ldexp(1, 4+k)
		y := scale / x
		hw := y / 3
		if k == 1 {
			hw = math.NaN()
		}
		for _, p := range []sim.Point{
			{Series: "a", X: x, Y: y, Extra: map[string]float64{"se": y / 10, "p90": 2 * y, "p90_lo": y, "p90_hi": 4 * y, "acc": 1 - y}},
			{Series: "a exact", X: x, Y: 0},
			{Series: "b", X: x, Y: y, Extra: map[string]float64{"p90": 3 * y}},
			{Series: "b fast", X: x, Y: y / 2},
			{Series: "hw", X: x, Y: hw},
		} {
			if err := run.Emit(p); err != nil {
				return err
			}
		}
	}
	run.Summary(map[string]float64{"floor": scale / math.Ldexp(1, 4+n)})
	return nil
}
