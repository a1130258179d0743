package experiments

import "github.com/fp8lab/fp8lab/sim"

// The charts of the experiments (sim.Charter): axes with quantity and unit,
// declared scales, and series grouped by colour (family: architecture,
// format, model), dash and marker (variant: promotion, scaling) and
// diamonds for measured hardware. The lab's page draws every run from
// these alone, so a run gives the same chart wherever it was computed.

var (
	axisK        = sim.Axis{Quantity: "contraction length K", Unit: "elements", Log: true, Base: 2}
	axisContext  = sim.Axis{Quantity: "context length", Unit: "tokens", Log: true, Base: 2}
	axisRelErr   = sim.Axis{Quantity: "relative error", Unit: "relative", Log: true}
	axisAccuracy = sim.Axis{Quantity: "retrieval accuracy", Unit: "fraction of trials"}.Range(0, 1)
)

// Chart declares contraction's chart.
func (Contraction) Chart() sim.Chart {
	return sim.Chart{
		X: axisK,
		Y: sim.Axis{Quantity: "relative L2 error over the columns, mean over trials", Unit: "relative", Log: true},
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
	}
}

// Chart declares gpu-accum's chart.
func (GPUAccum) Chart() sim.Chart {
	return sim.Chart{
		X: axisK,
		Y: sim.Axis{Quantity: "relative error, median over trials", Unit: "relative", Log: true},
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
	}
}

// Chart declares h200-attention's chart.
func (H200Attention) Chart() sim.Chart {
	return sim.Chart{
		X: sim.Axis{Quantity: "context length N", Unit: "tokens", Log: true, Base: 2},
		Y: sim.Axis{Quantity: "relative L2 error of O", Unit: "%", Log: true},
		Styles: []sim.Style{
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
		},
	}
}

// Chart declares itl's chart.
func (ITL) Chart() sim.Chart {
	return sim.Chart{
		X:      sim.Axis{Quantity: "context length", Unit: "tokens"},
		Y:      sim.Axis{Quantity: "inter-token latency", Unit: "ms"},
		Styles: itlStyles(""),
	}
}

// itlStyles are the styles of the ITL curves whose names start with prefix.
func itlStyles(prefix string) []sim.Style {
	return []sim.Style{
		{Match: prefix + "bf16", Family: "bf16", Variant: "predicted"},
		{Match: prefix + "fp8", Family: "fp8", Variant: "predicted"},
		{Match: prefix + "fp8 skip-sw", Family: "fp8 skip-sw", Variant: "predicted"},
		{Match: prefix + "bf16 published fit", Family: "bf16", Variant: "published fit"},
		{Match: prefix + "fp8 published fit", Family: "fp8", Variant: "published fit"},
		{Match: prefix + "fp8 skip-sw published fit", Family: "fp8 skip-sw", Variant: "published fit"},
	}
}

// attnFieldsRefQuantized is the O* of needle and promotion.
const attnFieldsRefQuantized = "exact attention on the same quantized inputs"

// attnRunFields are the fields of the needle experiments' points besides
// the decomposition: the kernel's splits and tile.
var attnRunFields = []sim.Field{
	{Key: "splits", Axis: sim.Axis{Quantity: "split-KV ranges of the decode (1: prefill, or no split)", Unit: "splits"}},
	{Key: "kBlockN", Axis: sim.Axis{Quantity: "KV tile width kBlockN", Unit: "tokens"}},
}

// Chart declares needle's chart: retrieval with its between-haystack
// interval, the chance level and the published 128k figures; the
// decomposition of O's error on the field selector.
func (Needle) Chart() sim.Chart {
	const src = "published, RULER niah_multikey_2, Llama-3.1-8B, 128k"
	return sim.Chart{
		X:      axisContext,
		Y:      axisAccuracy,
		Lo:     "acc_lo",
		Hi:     "acc_hi",
		Method: attnIntervalMethod(8),
		Fields: append(attnNeedleFields(attnFieldsRefQuantized), attnRunFields...),
		Styles: []sim.Style{
			{Match: "bf16", Family: "bf16"},
			{Match: "fp8", Family: "fp8 e4m3", Variant: "single-level"},
			{Match: "fp8-two-level", Family: "fp8 e4m3", Variant: "two-level"},
		},
		Refs: []sim.Ref{{Axis: "y", Summary: "chance", Label: "chance (1/candidates)"}},
		Marks: []sim.Mark{
			{Series: "bf16", X: 131072, Y: 0.91, Label: "bf16 0.91 (" + src + ")"},
			{Series: "fp8", X: 131072, Y: 0.13, Label: "fp8 0.13 (" + src + ")"},
			{Series: "fp8-two-level", X: 131072, Y: 0.89, Label: "fp8 two-level 0.89 (" + src + ")"},
			{Series: "bf16", X: 131072, Y: 0.91, Label: "bf16 0.91 (" + src + ")", Field: "acc"},
			{Series: "fp8", X: 131072, Y: 0.13, Label: "fp8 0.13 (" + src + ")", Field: "acc"},
			{Series: "fp8-two-level", X: 131072, Y: 0.89, Label: "fp8 two-level 0.89 (" + src + ")", Field: "acc"},
		},
	}
}

// Chart declares promotion's chart: the error of O against the tokens
// accumulated between promotions, retrieval and the published figures on
// the acc field.
func (Promotion) Chart() sim.Chart {
	const pr, blog = "flash-attention #122, RULER niah_multikey_2, Llama-3.1-8B, 128k", "vLLM blog 2026-04-22 Fig. 1, 128k"
	fields := append(attnNeedleFields(attnFieldsRefQuantized), attnRunFields...)
	fields = append(fields,
		sim.Field{Key: "interval", Axis: sim.Axis{Quantity: "promotion interval (0 = never)", Unit: "tiles"}},
		sim.Field{Key: "tokens", Axis: sim.Axis{Quantity: "tokens accumulated in the tensor core between promotions", Unit: "tokens", Log: true, Base: 2}})
	return sim.Chart{
		X:      sim.Axis{Quantity: "tokens accumulated in the tensor core between promotions", Unit: "tokens", Log: true, Base: 2},
		Y:      sim.Axis{Quantity: "relative L2 error of O vs " + attnFieldsRefQuantized, Unit: "%", Log: true},
		Lo:     "relerr_lo",
		Hi:     "relerr_hi",
		Method: attnIntervalMethod(8),
		Fields: fields,
		Styles: []sim.Style{
			{Match: "kBlockN 96", Family: "fp8, tile 96"},
			{Match: "kBlockN 192", Family: "fp8, tile 192"},
			{Match: "kBlockN 224", Family: "fp8, tile 224"},
			{Match: "kBlockN 128", Family: "fp8, tile 128"},
			{Match: "kBlockN 64", Family: "fp8, tile 64"},
			{Match: "kBlockN *", Family: "fp8, other tile"},
			{Match: "bf16", Family: "bf16"},
		},
		Refs: []sim.Ref{{Axis: "y", Summary: "chance", Label: "chance (1/candidates)"}},
		Marks: []sim.Mark{
			{Series: "kBlockN 192", X: 192, Y: 0.89, Label: "every tile 0.89 (" + pr + ")", Field: "acc"},
			{Series: "kBlockN 192", X: 4 * 192, Y: 0.88, Label: "every 4 tiles 0.88 (" + pr + ")", Field: "acc"},
			{Series: "kBlockN 192", X: 64 * 192, Y: 0.856, Label: "every 64 tiles 0.856 (" + pr + ")", Field: "acc"},
			{Series: "kBlockN 192", X: 131072, Y: 0.13, Label: "never 0.13 (" + blog + ")", Field: "acc"},
			{Series: "bf16", X: 131072, Y: 0.912, Label: "bf16 0.912 (" + blog + ")", Field: "acc"},
		},
	}
}

// Chart declares scales' chart.
func (Scales) Chart() sim.Chart {
	ref := "exact float64 attention on the unquantized inputs"
	return sim.Chart{
		X:      sim.Axis{Quantity: "magnitude factor of the outlier heads", Unit: "×", Log: true},
		Y:      sim.Axis{Quantity: "relative L2 error of O vs " + ref + ", mean over query heads", Unit: "%", Log: true},
		Lo:     "relerr_lo",
		Hi:     "relerr_hi",
		Method: "95 % intervals from the variation between trials (t on the log scale; each trial a cache of its own)",
		Fields: []sim.Field{
			{Key: "relerr", Axis: sim.Axis{Quantity: "relative L2 error of O vs " + ref + ", mean over query heads", Unit: "%", Log: true}, Lo: "relerr_lo", Hi: "relerr_hi"},
			{Key: "alpha", Axis: sim.Axis{Quantity: "shrinkage α = ⟨O, O*⟩/⟨O*, O*⟩, mean over query heads", Unit: "ratio"}, Lo: "alpha_lo", Hi: "alpha_hi"},
			{Key: "residual", Axis: sim.Axis{Quantity: "residual ‖O − αO*‖/‖O*‖, mean over query heads", Unit: "%", Log: true}, Lo: "residual_lo", Hi: "residual_hi"},
			{Key: "worst", Axis: sim.Axis{Quantity: "relative L2 error of the worst query head", Unit: "%", Log: true}},
			{Key: "normal", Axis: sim.Axis{Quantity: "relative L2 error, mean over the ordinary heads", Unit: "%", Log: true}},
			{Key: "outlier", Axis: sim.Axis{Quantity: "relative L2 error, mean over the outlier heads", Unit: "%", Log: true}},
			{Key: "saturated", Axis: sim.Axis{Quantity: "K/V/Q elements the cast clamps to ±max", Unit: "fraction"}},
			{Key: "underflow", Axis: sim.Axis{Quantity: "K/V/Q elements the cast flushes to 0", Unit: "fraction"}},
		},
		Styles: []sim.Style{
			{Match: "scale 1.0", Family: "fp8", Variant: "scale 1.0"},
			{Match: "per-tensor amax", Family: "fp8", Variant: "per-tensor amax"},
			{Match: "per-head amax", Family: "fp8", Variant: "per-head amax"},
			{Match: "bf16", Family: "bf16"},
		},
	}
}

// Chart declares skip-sw's chart: the ITL curves on the left axis, the
// accuracy runs' errors on the right.
func (SkipSW) Chart() sim.Chart {
	y2 := sim.Axis{Quantity: "relative L2 error of O [rel err: series]", Unit: "relative", Log: true}
	return sim.Chart{
		X:  sim.Axis{Quantity: "context length", Unit: "tokens"},
		Y:  sim.Axis{Quantity: "inter-token latency [ITL ms: series]", Unit: "ms"},
		Y2: &y2,
		Fields: []sim.Field{
			{Key: "max", Axis: sim.Axis{Quantity: "relative L2 error of O, worst trial", Unit: "relative", Log: true}},
			{Key: "accum", Axis: sim.Axis{Quantity: "relative L2 error of O vs exact on the quantized cache (the arithmetic alone)", Unit: "relative", Log: true}},
			{Key: "cosine", Axis: sim.Axis{Quantity: "cosine of O and the exact O*", Unit: "ratio"}},
			{Key: "alpha", Axis: sim.Axis{Quantity: "shrinkage α = ⟨O, O*⟩/⟨O*, O*⟩, mean over trials", Unit: "ratio"}},
			{Key: "residual", Axis: sim.Axis{Quantity: "residual ‖O − αO*‖/‖O*‖, mean over trials", Unit: "relative", Log: true}},
			{Key: "trials", Axis: sim.Axis{Quantity: "trials", Unit: "trials"}},
		},
		Styles: append(itlStyles(skipswITLPrefix),
			sim.Style{Match: "rel err: sliding* fp8", Family: "fp8", Variant: "sliding-window layer", Axis: 2},
			sim.Style{Match: "rel err: sliding* bf16", Family: "bf16", Variant: "sliding-window layer", Axis: 2},
			sim.Style{Match: "rel err: full fp8 two-level", Family: "fp8", Variant: "full layer, two-level", Axis: 2},
			sim.Style{Match: "rel err: full fp8*", Family: "fp8", Variant: "full layer", Axis: 2},
			sim.Style{Match: "rel err: full bf16", Family: "bf16", Variant: "full layer", Axis: 2},
		),
	}
}

// Chart declares decode-bw's chart.
func (DecodeBW) Chart() sim.Chart {
	return sim.Chart{
		X:      axisContext,
		Y:      sim.Axis{Quantity: "time per decode step, median", Unit: "ms"},
		Lo:     "ms_min",
		Hi:     "ms_max",
		Method: "bars: the fastest and slowest of the timed steps after the warm-up (wgsl.DefaultWarmup)",
		Styles: []sim.Style{
			{Match: "fp16", Family: "fp16 KV", Variant: "this GPU", Measured: true},
			{Match: "e4m3", Family: "fp8 e4m3 KV", Variant: "this GPU", Measured: true},
		},
	}
}
