package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
)

// contraction's chart and cost estimate (sim.Charter, sim.Coster).

// Chart declares contraction's chart; its per-trial relative errors (and
// biases) are in the series "… · trials".
func (Contraction) Chart() sim.Chart {
	return sim.Chart{
		Trials: trialsSuffix,
		X:      axisK,
		Y:      sim.Axis{Quantity: "relative L2 error over the columns, mean over trials", Unit: "relative", Log: true},
		Styles: []sim.Style{
			{Match: "sm90.wgmma never", Family: "sm90 wgmma", Variant: "never"},
			{Match: "sm90.wgmma every32", Family: "sm90 wgmma", Variant: "every32"},
			{Match: "sm90.wgmma every128", Family: "sm90 wgmma", Variant: "every128"},
			{Match: "sm90.wgmma every* (kBlockN)", Family: "sm90 wgmma", Variant: "every kBlockN"},
			{Match: "sim wgmma never (h200 inputs)", Family: "sm90 wgmma", Variant: "never, H200 inputs"},
			{Match: "sim wgmma every128 (h200 inputs)", Family: "sm90 wgmma", Variant: "every128, H200 inputs"},
			{Match: "h200 every32", Family: "sm90 wgmma", Variant: "every32", Measured: true},
			{Match: "h200 every128", Family: "sm90 wgmma", Variant: "every128", Measured: true},
			{Match: "h200 cublas", Family: "cuBLAS", Measured: true},
			{Match: "h200 cublas_fast", Family: "cuBLAS", Variant: "fast accumulation", Measured: true},
			{Match: "sm100*", Family: "sm100 tcgen05"},
			{Match: "sm90.mma.sync", Family: "sm90 mma.sync"},
			{Match: "sm89*", Family: "sm89 mma.sync"},
			{Match: "fp32.fma", Family: "fp32", Variant: "fma"},
			{Match: "fp32", Family: "fp32"},
			{Match: "fp64", Family: "fp64"},
			{Match: "kahan", Family: "kahan (fp32)"},
			{Match: "pairwise", Family: "pairwise (fp32)"},
		},
		Fields: []sim.Field{
			{Key: "p50", Axis: sim.Axis{Quantity: "relative L2 error over the columns, median over trials", Unit: "relative", Log: true}},
			{Key: "p99", Axis: sim.Axis{Quantity: "relative L2 error over the columns, 99th percentile over trials", Unit: "relative", Log: true}},
			{Key: "max", Axis: sim.Axis{Quantity: "relative L2 error over the columns, worst trial", Unit: "relative", Log: true}},
			{Key: "bias", Axis: sim.Axis{Quantity: "signed relative error of the outputs, mean over trials (bias)", Unit: "relative"}},
			{Key: "trials", Axis: sim.Axis{Quantity: "trials", Unit: "count"}},
			{Key: "rows", Axis: sim.Axis{Quantity: "captured outputs compared (H200 captures)", Unit: "count"}},
		},
		Summary: []sim.SummaryField{
			{Match: "*_mean_K*", Axis: sim.Axis{Quantity: "relative L2 error, mean over trials, at K", Unit: "relative", Log: true}},
			{Match: "*_p99_K*", Axis: sim.Axis{Quantity: "relative L2 error, 99th percentile over trials, at K", Unit: "relative", Log: true}},
			{Match: "captures_files", Axis: sim.Axis{Quantity: "H200 long-contraction capture files read", Unit: "files"}},
			{Match: "captures_total", Axis: sim.Axis{Quantity: "H200 outputs compared (every32 and every128)", Unit: "outputs"}},
			{Match: "captures_*bitexact", Axis: sim.Axis{Quantity: "H200 outputs the model reproduces bit for bit", Unit: "outputs"}},
			{Match: "captures_ref_mismatch", Axis: sim.Axis{Quantity: "captures whose exact reference differs from the file's", Unit: "outputs"}},
		},
		Show: []string{"captures_bitexact", "captures_total"},
	}
}

// Cost estimates a contraction run.
func (Contraction) Cost(v sim.Values) sim.Cost {
	ks, trials, cols := v.Ints("K"), int64(v.Int("trials")), int64(v.Int("cols"))
	models := int64(len(contractionSelect(v.String("series"))))
	var work, maxK int64
	for _, k := range ks {
		maxK = max(maxK, int64(k))
		perCol := sim.MulSat(int64(k), models*costChain+costExact+costDraw)
		work = sim.AddSat(work, sim.MulSat(trials, sim.AddSat(sim.MulSat(cols, perCol), sim.MulSat(int64(k), 2*costNormal))))
	}
	// A trial holds its row (2 B), one column (2 B) and the row's logits
	// (8 B) per element, and its results.
	perTrial := sim.MulSat(maxK, 12)
	mem := sim.AddSat(costBase, sim.MulSat(int64(sim.Workers(int(trials))), perTrial))
	mem = sim.AddSat(mem, sim.MulSat(trials, models, 16+64))
	return sim.Cost{Memory: mem, Work: work}
}
