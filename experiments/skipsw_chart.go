package experiments

import (
	"slices"

	"github.com/fp8lab/fp8lab/presets"
	"github.com/fp8lab/fp8lab/sim"
)

// skip-sw's chart and cost estimate (sim.Charter, sim.Coster).

// Chart declares skip-sw's chart: the ITL curves on the left axis, the
// accuracy runs' errors on the right.
func (SkipSW) Chart() sim.Chart {
	y2 := sim.Axis{Quantity: "relative L2 error of O (right: rel err series)", Unit: "relative", Log: true}
	return sim.Chart{
		X: sim.Axis{Quantity: "context length", Unit: "tokens"},
		// The presets with sliding-window layers carry no weight bytes
		// (the run's notes say so): the modelled ITL is what the KV cache,
		// the FP8 overhead and launch-ms cost, not a whole step.
		Y:  sim.Axis{Quantity: "modelled ITL without the weight read (left: ITL series)", Unit: "ms"},
		Y2: &y2,
		Styles: append(append(itlStyles(skipswITLPrefix), itlMeasuredStyles(skipswITLPrefix)...),
			sim.Style{Match: "rel err: sliding* fp8", Family: "fp8", Variant: "sliding-window layer", Axis: 2},
			sim.Style{Match: "rel err: sliding* bf16", Family: "bf16", Variant: "sliding-window layer", Axis: 2},
			sim.Style{Match: "rel err: full fp8 two-level", Family: "fp8", Variant: "full layer, two-level", Axis: 2},
			sim.Style{Match: "rel err: full fp8*", Family: "fp8", Variant: "full layer", Axis: 2},
			sim.Style{Match: "rel err: full bf16", Family: "bf16", Variant: "full layer", Axis: 2},
		),
		Fields: append(slices.Clone(itlFields),
			sim.Field{Key: "max", Axis: sim.Axis{Quantity: "relative L2 error of O, worst trial", Unit: "relative", Log: true}},
			sim.Field{Key: "accum", Axis: sim.Axis{Quantity: "relative L2 error of O against attention on the quantized cache (the arithmetic alone)", Unit: "relative", Log: true}},
			sim.Field{Key: "cosine", Axis: sim.Axis{Quantity: "cosine similarity of O to exact attention, mean over trials", Unit: "cosine"}},
			sim.Field{Key: "alpha", Axis: sim.Axis{Quantity: "shrinkage α = ⟨O, O*⟩/⟨O*, O*⟩, mean over trials", Unit: "ratio"}},
			sim.Field{Key: "residual", Axis: sim.Axis{Quantity: "residual ‖O − αO*‖/‖O*‖, mean over trials", Unit: "relative", Log: true}},
			sim.Field{Key: "trials", Axis: sim.Axis{Quantity: "trials", Unit: "count"}},
		),
		Summary: append([]sim.SummaryField{
			{Match: "*_rel_l2_n*", Axis: sim.Axis{Quantity: "relative L2 error of O at n tokens, mean over trials", Unit: "relative", Log: true}},
			{Match: "sliding_fp8_growth", Axis: sim.Axis{Quantity: "sliding fp8 error at the longest over the shortest context", Unit: "ratio"}},
			{Match: "sliding_fp8_over_bf16", Axis: sim.Axis{Quantity: "sliding fp8 error over bf16's at the longest context", Unit: "ratio"}},
			{Match: "*skip*_diff_pct", Axis: sim.Axis{Quantity: "model minus published, relative to published (fp8 skip-sw)", Unit: "%"}},
			{Match: "slope_ratio_skip*", Axis: sim.Axis{Quantity: "ITL slope ratio of fp8 skip-sw over bf16", Unit: "ratio"}},
			{Match: "slope_skip*", Axis: sim.Axis{Quantity: "ITL slope of fp8 skip-sw against context", Unit: "ms/token", Log: true}},
			{Match: "break_even_skip*", Axis: sim.Axis{Quantity: "break-even context of fp8 skip-sw (bf16 sliding layers)", Unit: "tokens"}},
			{Match: "fp8_overhead_skip*", Axis: sim.Axis{Quantity: "fixed cost per step of fp8 skip-sw", Unit: "ms"}},
		}, append(slices.Clone(itlMeasuredSummaryFields), itlSummaryFields...)...),
		Show: []string{"slope_ratio", "slope_ratio_skip", "break_even", "break_even_skip", "sliding_fp8_over_bf16"},
		Refs: []sim.Ref{
			{Axis: "x", Summary: "break_even", Label: "FP8 break-even (model)"},
			{Axis: "x", Summary: "break_even_skip", Label: "FP8 skip-sw break-even (model)"},
		},
	}
}

func (SkipSW) Cost(v sim.Values) sim.Cost {
	c := sim.Cost{Memory: costBase, Work: 1e6}
	if !v.Bool("accuracy") {
		return c
	}
	d := int64(256) // the largest head_dim the simulator takes: an upper bound for every preset
	if m, err := presets.LookupModel(v.String("model")); err == nil {
		for _, g := range m.KV {
			if g.Window > 0 {
				d = int64(g.HeadDim)
				break
			}
		}
	}
	group, trials := int64(v.Int("q-per-kv")), v.Int("trials")
	cases := int64(2)
	if v.Bool("full-layers") {
		cases += 3
	}
	var maxN, work int64
	for _, n := range v.Ints("acc-contexts") {
		nd := sim.MulSat(int64(n), d)
		maxN = max(maxN, int64(n))
		perTrial := sim.AddSat(sim.MulSat(nd, 2*costNormal), sim.MulSat(cases, nd, 2*costQuant+group*(costKernel+2*costRef)))
		work = sim.AddSat(work, sim.MulSat(int64(trials), perTrial))
	}
	// A trial holds K and V as float32 and float64 and one cache at a time.
	perTrial := sim.MulSat(maxN, d, 2*4+2*8+4)
	c.Memory = sim.AddSat(c.Memory, sim.MulSat(int64(sim.Workers(trials)), perTrial))
	c.Work = sim.AddSat(c.Work, work)
	return c
}
