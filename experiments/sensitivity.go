package experiments

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(Sensitivity{}) }

// Sensitivity is the `sensitivity` experiment: how the needle task's
// FP8 failure moves with the quantities no one has measured for the model
// the published figures come from: the values' mean, the attention sinks'
// share of the softmax weight, the spread of the haystack's scores, and
// the number of split-KV ranges of a decode.
type Sensitivity struct{}

// Name returns "sensitivity".
func (Sensitivity) Name() string { return "sensitivity" }

// Doc describes the experiment.
func (Sensitivity) Doc() string {
	return `How the single-level FP8 error and retrieval move with what nobody measured: the values' mean, the sinks' share of the weight, the scores' spread, the splits.

The needle task (the needle experiment's parameters and defaults: balanced
probe, 8 haystacks, prefill regime unless regime says decode) at one context
length, with one quantity varied over a fixed grid (vary):
  value-mean   0, 0.05, 0.1, 0.2, 0.3, 0.5 (× value-std)
  sink-share   0, 0.1, 0.3, 0.5, 0.7, 0.9: one sink token (value sink-value)
               whose logit gives it that expected share of the softmax
               weight: logit = ln(share/(1 − share) · ((n − 1)·e^(score-std²/2)
               + e^margin))
  score-std    0.5, 1, 1.5, 2, 2.5 nats
  splits       1, 2, 4, 8, 16, 32, 64 (the decode regime)
Series: bf16, fp8 single-level (FA3 as shipped), fp8 two-level (promoted
every tile). x = the varied quantity, y = relative L2 error of O (%) vs the
exact attention on the same quantized inputs; fields acc (retrieval, the
probe's), alpha (shrinkage), residual, cosine, with 95 % intervals from
the variation between haystacks. docs/mechanism.md reads the result.`
}

// sensitivityGrids are the values each vary choice runs.
var sensitivityGrids = map[string][]float64{
	"value-mean": {0, 0.05, 0.1, 0.2, 0.3, 0.5},
	"sink-share": {0, 0.1, 0.3, 0.5, 0.7, 0.9},
	"score-std":  {0.5, 1, 1.5, 2, 2.5},
	"splits":     {1, 2, 4, 8, 16, 32, 64},
}

// sensitivityXField is the point field holding x for each vary choice
// (declared in Chart.Fields with its own axis: the chart's x axis is the
// same for every choice).
var sensitivityXField = map[string]string{"value-mean": "value_mean_sigma", "sink-share": "sink_share", "score-std": "score_std", "splits": "splits_x"}

// sensitivityAxes are the x axes of the vary choices.
var sensitivityAxes = map[string]sim.Axis{
	"value-mean": {Quantity: "mean of the values, in units of their standard deviation", Unit: "σ"},
	"sink-share": {Quantity: "expected share of the softmax weight on the sink token", Unit: "fraction"},
	"score-std":  {Quantity: "standard deviation of the haystack's logits", Unit: "nats"},
	"splits":     {Quantity: "split-KV ranges of the decode", Unit: "splits", Log: true, Base: 2},
}

// Params returns the parameter schema.
func (Sensitivity) Params() []sim.Param {
	p := []sim.Param{
		{Name: "vary", Doc: "the quantity varied over its grid (see the doc)", Kind: sim.KindChoice, Default: "value-mean", Choices: []string{"value-mean", "sink-share", "score-std", "splits"}},
		{Name: "context", Doc: "context length", Unit: "tokens", Kind: sim.KindInt, Default: 131072, Min: 64, Max: 1 << 20},
		{Name: "trials", Doc: "trials per grid value", Kind: sim.KindInt, Default: 48, Min: 1, Max: 1000000},
		attnRegimeParam(),
	}
	p = append(p, attnSplitParams(0)...)
	return append(p, attnNeedleParams(needleDefaultMargin)...)
}

// sinkLogit returns the logit that gives one sink the expected share of
// the softmax weight over n tokens of haystack logits N(0, σ²) and the
// needle's logit margin.
func sinkLogit(share float64, n int, scoreStd, margin float64) float64 {
	rest := float64(n-1)*pmath.Exp(scoreStd*scoreStd/2) + pmath.Exp(margin)
	return pmath.Log(share / (1 - share) * rest)
}

// Run runs the grid.
func (Sensitivity) Run(ctx context.Context, run *sim.Run) error {
	base, g, done, err := attnStart(ctx, run)
	if err != nil {
		return err
	}
	defer done()
	vary := run.Values.String("vary")
	grid := sensitivityGrids[vary]
	if vary == "splits" {
		g.name = attnRegimeDecode
	}
	n, trials := run.Values.Int("context"), run.Values.Int("trials")
	run.AddTotal(int64(len(grid) * trials))
	summary := map[string]float64{}
	var notes []string
	for _, x := range grid {
		t := base
		switch vary {
		case "value-mean":
			t.valueMean = x * t.valueStd
		case "sink-share":
			t.sinks, t.sinkLogit = 0, 0
			if x > 0 {
				t.sinks, t.sinkLogit = 1, sinkLogit(x, n, t.scoreStd, t.margin)
			}
		case "score-std":
			t.scoreStd = x
		case "splits":
			g.splits = int(x)
		}
		var runs []attnNeedleRun
		for _, s := range []struct {
			name      string
			dt        fp8.Format
			promotion int
		}{{"bf16", fp8.FormatBF16, 0}, {"fp8 single-level", fp8.FormatE4M3, 0}, {"fp8 two-level", fp8.FormatE4M3, 1}} {
			cfg := attention.Config{HeadDim: t.d, DType: s.dt, Promotion: s.promotion}
			if err := g.configure(&cfg, n, nil); err != nil {
				return err
			}
			runs = append(runs, attnNeedleRun{dtype: s.dt, cfg: cfg, promotions: []int{s.promotion}, series: []string{s.name}})
		}
		label := strings.NewReplacer(".", "p").Replace(fmt.Sprintf("%g", x))
		out, err := attnNeedleContext(ctx, run, fmt.Sprintf("sensitivity/%d", n), t, n, trials, run.Values.Int("haystacks"), runs)
		if err != nil {
			return err
		}
		if x == grid[0] {
			t.noteSetup(run, runs) // after the first point's trials: the device note waits for the device
		}
		for i, o := range out {
			ex := o.extras()
			ex["splits"], ex["kBlockN"] = float64(max(runs[i].cfg.Splits, 1)), float64(runs[i].cfg.KBlockN)
			if vary == "sink-share" && t.sinks > 0 {
				ex["sink_logit"] = t.sinkLogit
			}
			ex[sensitivityXField[vary]] = x
			key := strings.ReplaceAll(o.series, " ", "-")
			for _, f := range []string{"acc", "relerr", "alpha", "residual"} {
				if v, ok := ex[f]; ok && !math.IsNaN(v) {
					summary[fmt.Sprintf("%s_%s%s_%s", f, strings.ReplaceAll(vary, "-", ""), label, key)] = v
				}
			}
			if err := run.Emit(sim.Point{Series: o.series, X: x, Y: ex["relerr"], Extra: ex}); err != nil {
				return err
			}
		}
		if vary == "sink-share" && t.sinks > 0 {
			notes = append(notes, fmt.Sprintf("share %g: sink logit %.3g nats", x, t.sinkLogit))
		}
	}
	run.Note(fmt.Sprintf("vary %s over %v; regime %s; %d tokens, %d trials over %d haystacks per value", vary, grid, g.name, n, trials, min(run.Values.Int("haystacks"), trials)))
	if len(notes) > 0 {
		run.Note(strings.Join(notes, "; "))
	}
	run.Summary(summary)
	return nil
}

// Chart declares sensitivity's chart. The x axis names every vary choice's
// quantity: the run's notes say which one varied.
func (Sensitivity) Chart() sim.Chart {
	fields := append(attnNeedleFields(attnFieldsRefQuantized), attnRunFields...)
	fields = append(fields, sim.Field{Key: "sink_logit", Axis: sim.Axis{Quantity: "the sink token's logit", Unit: "nats"}})
	for _, v := range []string{"value-mean", "sink-share", "score-std", "splits"} {
		fields = append(fields, sim.Field{Key: sensitivityXField[v], Axis: sensitivityAxes[v]})
	}
	return sim.Chart{
		X:       sim.Axis{Quantity: "the varied quantity (the run's vary parameter): value mean in σ, sink share, score std in nats, or splits", Unit: "its own unit, as the x fields say"},
		Y:       sim.Axis{Quantity: "relative L2 error of O vs " + attnFieldsRefQuantized, Unit: "%", Log: true},
		Lo:      "relerr_lo",
		Hi:      "relerr_hi",
		Method:  attnIntervalMethod(8),
		Fields:  fields,
		Summary: attnSummary(attnFieldsRefQuantized),
		Styles: []sim.Style{
			{Match: "bf16", Family: "bf16"},
			{Match: "fp8 single-level", Family: "fp8 e4m3", Variant: "single-level"},
			{Match: "fp8 two-level", Family: "fp8 e4m3", Variant: "two-level"},
		},
	}
}

// Cost is the needle harness's: three kernels and a reference per trial
// at every grid value.
func (Sensitivity) Cost(v sim.Values) sim.Cost {
	grid := int64(len(sensitivityGrids[v.String("vary")]))
	c := attnNeedleCost(v, []int{v.Int("context")}, v.Int("trials"), 2, 2, 3, true)
	c.Work = sim.MulSat(c.Work, grid)
	return c
}
