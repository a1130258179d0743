package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
)

// gpu-accum's chart and cost estimate (sim.Charter, sim.Coster).

// Chart declares gpu-accum's chart; its per-trial relative errors (and
// errors in float32 ulps of the exact value) are in the series "… · trials".
func (GPUAccum) Chart() sim.Chart {
	return sim.Chart{
		Trials: trialsSuffix,
		X:      axisK,
		Y:      sim.Axis{Quantity: "relative error, median over trials", Unit: "relative", Log: true},
		Styles: []sim.Style{
			{Match: "sm90.wgmma never", Family: "sm90 wgmma", Variant: "never"},
			{Match: "sm90.wgmma every128", Family: "sm90 wgmma", Variant: "every128"},
			{Match: "sm100*", Family: "sm100 tcgen05"},
			{Match: "sm90.mma.sync", Family: "sm90 mma.sync"},
			{Match: "gpu f32 sequential", Family: "fp32", Variant: "this GPU", Measured: true},
			{Match: "gpu f32 pairwise", Family: "pairwise (fp32)", Variant: "this GPU", Measured: true},
			{Match: "go fp32.fma", Family: "fp32", Variant: "fma"},
			{Match: "go fp32", Family: "fp32"},
			{Match: "go fp64", Family: "fp64"},
			{Match: "go kahan", Family: "kahan (fp32)"},
			{Match: "go pairwise", Family: "pairwise (fp32)"},
		},
		Fields: []sim.Field{
			{Key: "mean", Axis: sim.Axis{Quantity: "relative error, mean over trials", Unit: "relative", Log: true}},
			{Key: "max", Axis: sim.Axis{Quantity: "relative error, worst trial", Unit: "relative", Log: true}},
			{Key: "wgsl_mismatches", Axis: sim.Axis{Quantity: "WGSL results differing from the Go model (bits)", Unit: "trials"}},
			{Key: "ulp", Axis: sim.Axis{Quantity: "error of the result in float32 ulps of the exact value (per trial)", Unit: "ulp"}},
		},
		Summary: []sim.SummaryField{
			{Match: "*_eq_*", Axis: sim.Axis{Quantity: "GPU results bit-equal to the Go baseline", Unit: "fraction of trials"}.Range(0, 1)},
			{Match: "wgsl_*", Axis: sim.Axis{Quantity: "WGSL chains compared or differing from the Go models", Unit: "count"}},
			{Match: "attn_decode_*", Axis: sim.Axis{Quantity: "WGSL decode attention outputs compared or bit-equal", Unit: "count"}},
			{Match: "fused", Axis: sim.Axis{Quantity: "the GPU fuses a*b+c", Unit: "1 yes, 0 no"}},
			{Match: "fma_builtin_fused", Axis: sim.Axis{Quantity: "WGSL fma() is fused", Unit: "1 yes, 0 no"}},
			{Match: "hardware", Axis: sim.Axis{Quantity: "a hardware GPU (not a CPU adapter)", Unit: "1 yes, 0 no"}},
		},
	}
}

func (GPUAccum) Cost(v sim.Values) sim.Cost {
	trials := int64(v.Int("trials"))
	var mem, work int64
	for _, k := range v.Ints("K") {
		tk := sim.MulSat(trials, int64(k))
		// Codes and float32 inputs for the GPU, and the CPU models' check.
		mem = max(mem, sim.MulSat(tk, 2+2*4+8))
		work = sim.AddSat(work, sim.MulSat(tk, 4*costChain+costExact+2*costDraw))
	}
	return sim.Cost{Memory: sim.AddSat(256<<20, mem), Work: work}
}
