package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
	"slices"
)

// itl's chart and cost estimate (sim.Charter, sim.Coster); the ITL
// curves' styles and fields are skip-sw's too.

// Chart declares itl's chart: the modelled and published ITL lines, and
// the break-even context (modelled and published) where FP8 KV starts to
// pay.
func (ITL) Chart() sim.Chart {
	return sim.Chart{
		X:       sim.Axis{Quantity: "context length", Unit: "tokens"},
		Y:       sim.Axis{Quantity: "inter-token latency", Unit: "ms"},
		Styles:  append(itlStyles(""), itlMeasuredStyles("")...),
		Fields:  itlFields,
		Summary: append(slices.Clone(itlMeasuredSummaryFields), itlSummaryFields...),
		Show:    []string{"slope_ratio", "slope_ratio_published", "break_even", "break_even_published"},
		Refs: []sim.Ref{
			{Axis: "x", Summary: "break_even", Label: "FP8 break-even (model)"},
			{Axis: "x", Summary: "break_even_published", Label: "FP8 break-even (published)"},
		},
	}
}

// itlFields are the point extras of the ITL curves.
var itlFields = []sim.Field{
	{Key: "slope", Axis: sim.Axis{Quantity: "ITL slope against context", Unit: "ms/token", Log: true}},
	{Key: "kv_ms", Axis: sim.Axis{Quantity: "KV-cache read time per step", Unit: "ms"}},
}

// itlSummaryFields are the units of itl's (and skip-sw's) summary values;
// the first matching pattern wins.
var itlSummaryFields = []sim.SummaryField{
	{Match: "*_diff_pct", Axis: sim.Axis{Quantity: "model minus published, relative to published", Unit: "%"}},
	{Match: "slope_ratio*", Axis: sim.Axis{Quantity: "ITL slope ratio (over bf16)", Unit: "ratio"}},
	{Match: "slope*", Axis: sim.Axis{Quantity: "ITL slope against context", Unit: "ms/token", Log: true}},
	{Match: "break_even*", Axis: sim.Axis{Quantity: "break-even context of FP8 KV", Unit: "tokens"}},
	{Match: "itl0*", Axis: sim.Axis{Quantity: "ITL at zero context (intercept)", Unit: "ms"}},
	{Match: "eta_*", Axis: sim.Axis{Quantity: "achieved-bandwidth factor", Unit: "fraction of the roofline"}},
	{Match: "fp8_overhead*", Axis: sim.Axis{Quantity: "fixed FP8 cost per step", Unit: "ms"}},
	{Match: "kv_bytes_per_token_*", Axis: sim.Axis{Quantity: "KV-cache bytes per token of context", Unit: "bytes"}},
	{Match: "bandwidth_tbs", Axis: sim.Axis{Quantity: "memory bandwidth of the GPU preset", Unit: "TB/s"}},
}

// itlStyles are the styles of the ITL curves whose names start with prefix.
func itlStyles(prefix string) []sim.Style {
	return []sim.Style{
		{Match: prefix + "bf16", Family: "bf16", Variant: "predicted"},
		{Match: prefix + "fp8", Family: "fp8", Variant: "predicted"},
		{Match: prefix + "fp8 skip-sw", Family: "fp8 skip-sw", Variant: "predicted"},
		{Match: prefix + "bf16 published fit", Family: "bf16", Variant: "published fit", Fit: true},
		{Match: prefix + "fp8 published fit", Family: "fp8", Variant: "published fit", Fit: true},
		{Match: prefix + "fp8 skip-sw published fit", Family: "fp8 skip-sw", Variant: "published fit", Fit: true},
	}
}

func (ITL) Cost(v sim.Values) sim.Cost {
	return sim.Cost{Memory: costBase, Work: sim.MulSat(int64(len(v.Ints("contexts"))), 1e5)}
}
