package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
)

// h200-attention's chart and cost estimate (sim.Charter, sim.Coster).

// Chart declares h200-attention's chart.
func (H200Attention) Chart() sim.Chart {
	return sim.Chart{
		X: sim.Axis{Quantity: "context length N", Unit: "tokens", Log: true, Base: 2},
		Y: sim.Axis{Quantity: "relative L2 error of O", Unit: "%", Log: true},
		Styles: append([]sim.Style{
			{Match: "fp8 bn128 single-level", Family: "fp8 bn128", Variant: "single-level"},
			{Match: "fp8 bn128 every tile", Family: "fp8 bn128", Variant: "every tile"},
			{Match: "fp8 bn128 every * tiles", Family: "fp8 bn128", Variant: "every N tiles"},
			{Match: "fp8 bn64 single-level", Family: "fp8 bn64", Variant: "single-level"},
			{Match: "fp8 bn64 every tile", Family: "fp8 bn64", Variant: "every tile"},
			{Match: "fp8 bn64 every * tiles", Family: "fp8 bn64", Variant: "every N tiles"},
			{Match: "fp8 * single-level", Family: "fp8 other tile", Variant: "single-level"},
			{Match: "fp8 * every tile", Family: "fp8 other tile", Variant: "every tile"},
			{Match: "fp8 *", Family: "fp8 other tile", Variant: "every N tiles"},
			{Match: "bf16*", Family: "bf16", Variant: "single-level"},
			{Match: "exact attention", Family: "exact"},
		}, h200AttentionMeasuredStyles()...),
		Fields: []sim.Field{
			{Key: "acc", Axis: axisRowAccuracy},
			{Key: "h200", Axis: sim.Axis{Quantity: "the H200's relative L2 error of O", Unit: "%", Log: true}},
			{Key: "h200_acc", Axis: sim.Axis{Quantity: "the H200's needle retrieval", Unit: "fraction of the 64 queries"}.Range(0, 1)},
			{Key: "diff_pct", Axis: sim.Axis{Quantity: "simulated minus the H200's error, relative to the H200's", Unit: "%"}},
			{Key: "vs_h200", Axis: sim.Axis{Quantity: "relative L2 distance between the simulated and the H200's O", Unit: "relative", Log: true}},
		},
		Summary: []sim.SummaryField{
			{Match: "relerr_pct_*", Axis: sim.Axis{Quantity: "relative L2 error of O at N", Unit: "%", Log: true}},
			{Match: "acc_*", Axis: axisRowAccuracy},
			{Match: "diff_pct_*", Axis: sim.Axis{Quantity: "simulated minus the H200's error, relative to the H200's, at N", Unit: "%"}},
			{Match: "max_abs_diff_pct", Axis: sim.Axis{Quantity: "largest |simulated − H200| relative to the H200's", Unit: "%"}},
			{Match: "figures_compared", Axis: sim.Axis{Quantity: "H200 figures compared", Unit: "figures"}},
			{Match: "figures_within_1pct", Axis: sim.Axis{Quantity: "H200 figures the simulation matches within 1 %", Unit: "figures"}},
		},
		Show: []string{"figures_within_1pct", "figures_compared", "max_abs_diff_pct"},
	}
}

// axisRowAccuracy is h200-attention's retrieval: the share of its 64 queries
// whose needle code is read back.
var axisRowAccuracy = sim.Axis{Quantity: "needle retrieval", Unit: "fraction of the 64 queries"}.Range(0, 1)

// h200AttentionMeasuredStyles style the H200's own figures ("H200 " and the
// simulated series' label) as measured hardware in the simulated series'
// colour, one diamond per promotion variant.
func h200AttentionMeasuredStyles() []sim.Style {
	var out []sim.Style
	for _, fam := range []struct{ match, family string }{{"fp8 bn128", "fp8 bn128"}, {"fp8 bn64", "fp8 bn64"}, {"fp8 *", "fp8 other tile"}} {
		for _, v := range []struct{ match, variant string }{{"single-level", "single-level"}, {"every tile", "every tile"}, {"every * tiles", "every N tiles"}} {
			out = append(out, sim.Style{Match: h200AttentionMeasured + fam.match + " " + v.match, Family: fam.family, Variant: v.variant, Measured: true})
		}
	}
	return append(out, sim.Style{Match: h200AttentionMeasured + "bf16*", Family: "bf16", Variant: "single-level", Measured: true})
}

func (H200Attention) Cost(v sim.Values) sim.Cost {
	const q, d = 64, 128
	blocks, modes := int64(len(v.Ints("block-n"))), int64(len(v.Ints("modes")))
	kernels, dtypes := blocks*modes, blocks
	if v.Bool("bf16") {
		kernels, dtypes = kernels+1, dtypes+1
	}
	var mem, work int64
	for _, n := range v.Ints("N") {
		nd := sim.MulSat(int64(n), d)
		// Inputs as float32 (and their float64 generation), one cache, and
		// the quantized reference.
		mem = max(mem, sim.MulSat(nd, 2*4+2*8+4))
		work = sim.AddSat(work, sim.AddSat(sim.MulSat(nd, 2*costNormal+dtypes*2*costQuant), sim.MulSat(q, nd, kernels*costKernel+dtypes*costRef)))
	}
	return sim.Cost{Memory: sim.AddSat(costBase, mem), Work: work}
}
