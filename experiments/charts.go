package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
)

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

// trialsSuffix names the series of per-trial values (sim.Chart.Trials).
const trialsSuffix = " · trials"

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

// attnFieldsRefQuantized is the O* of needle and promotion.
const attnFieldsRefQuantized = "exact attention on the same quantized inputs"

// attnSummary declares the summary keys of the needle experiments whose
// names are prefix_<rest>: accuracy with its interval bounds, the errors in
// % and the shrinkage, ref the O* they are against.
func attnSummary(ref string) []sim.SummaryField {
	return []sim.SummaryField{
		{Match: "acc_lo_*", Axis: sim.Axis{Quantity: "retrieval accuracy, lower 95 % bound between haystacks", Unit: "fraction of trials"}},
		{Match: "acc_hi_*", Axis: sim.Axis{Quantity: "retrieval accuracy, upper 95 % bound between haystacks", Unit: "fraction of trials"}},
		{Match: "acc_*", Axis: axisAccuracy},
		{Match: "relerr_lo_*", Axis: sim.Axis{Quantity: "relative L2 error of O vs " + ref + ", lower 95 % bound", Unit: "%", Log: true}},
		{Match: "relerr_hi_*", Axis: sim.Axis{Quantity: "relative L2 error of O vs " + ref + ", upper 95 % bound", Unit: "%", Log: true}},
		{Match: "relerr_*", Axis: sim.Axis{Quantity: "relative L2 error of O vs " + ref, Unit: "%", Log: true}},
		{Match: "residual_*", Axis: sim.Axis{Quantity: "residual ‖O − αO*‖/‖O*‖, O* " + ref, Unit: "%", Log: true}},
		{Match: "alpha_*", Axis: sim.Axis{Quantity: "shrinkage α = ⟨O, O*⟩/⟨O*, O*⟩, O* " + ref, Unit: "ratio"}},
		{Match: "splits_*", Axis: sim.Axis{Quantity: "split-KV ranges of the decode", Unit: "splits"}},
		{Match: "chance", Axis: sim.Axis{Quantity: "chance level of retrieval (1/candidates)", Unit: "fraction of trials"}},
	}
}

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
		X:       axisContext,
		Y:       axisAccuracy,
		Lo:      "acc_lo",
		Hi:      "acc_hi",
		Method:  attnIntervalMethod(8),
		Fields:  append(attnNeedleFields(attnFieldsRefQuantized), attnRunFields...),
		Summary: attnSummary(attnFieldsRefQuantized),
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
		X:       sim.Axis{Quantity: "tokens accumulated in the tensor core between promotions", Unit: "tokens", Log: true, Base: 2},
		Y:       sim.Axis{Quantity: "relative L2 error of O vs " + attnFieldsRefQuantized, Unit: "%", Log: true},
		Lo:      "relerr_lo",
		Hi:      "relerr_hi",
		Method:  attnIntervalMethod(8),
		Fields:  fields,
		Summary: attnSummary(attnFieldsRefQuantized),
		Styles: []sim.Style{
			{Match: "kBlockN 96", Family: "fp8, tile 96"},
			{Match: "kBlockN 192", Family: "fp8, tile 192"},
			{Match: "kBlockN 224", Family: "fp8, tile 224"},
			{Match: "kBlockN 128", Family: "fp8, tile 128"},
			{Match: "kBlockN 64", Family: "fp8, tile 64"},
			{Match: "kBlockN *", Family: "fp8, other tile"},
			{Match: "bf16", Family: "bf16"},
		},
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
		Summary: []sim.SummaryField{
			{Match: "relerr_*", Axis: sim.Axis{Quantity: "relative L2 error of O vs " + ref + ", mean over query heads and trials", Unit: "%", Log: true}},
			{Match: "worst_*", Axis: sim.Axis{Quantity: "relative L2 error of the worst query head", Unit: "%", Log: true}},
			{Match: "alpha_*", Axis: sim.Axis{Quantity: "shrinkage α, mean over query heads and trials", Unit: "ratio"}},
		},
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
			{Match: "fp16" + decodeBWFit, Family: "fp16 KV", Variant: "least-squares line", Fit: true},
			{Match: "e4m3" + decodeBWFit, Family: "fp8 e4m3 KV", Variant: "least-squares line", Fit: true},
		},
		Show: []string{"fp16_slope_ns", "e4m3_slope_ns", "slope_ratio"},
		Fields: []sim.Field{
			{Key: "bandwidth_gbs", Axis: sim.Axis{Quantity: "KV bytes read per step / time", Unit: "GB/s"}},
			{Key: "batch", Axis: sim.Axis{Quantity: "sequences per step", Unit: "sequences"}},
			{Key: "timestamp", Axis: sim.Axis{Quantity: "timed by GPU timestamps", Unit: "1 yes, 0 wall clock"}},
			{Key: "ms_min", Axis: sim.Axis{Quantity: "time per decode step, fastest timed step", Unit: "ms"}},
			{Key: "ms_max", Axis: sim.Axis{Quantity: "time per decode step, slowest timed step", Unit: "ms"}},
			{Key: "ms_q1", Axis: sim.Axis{Quantity: "time per decode step, first quartile", Unit: "ms"}},
			{Key: "ms_q3", Axis: sim.Axis{Quantity: "time per decode step, third quartile", Unit: "ms"}},
			{Key: "reps", Axis: sim.Axis{Quantity: "timed steps", Unit: "steps"}},
			{Key: "warmups", Axis: sim.Axis{Quantity: "untimed warm-up steps", Unit: "steps"}},
			{Key: "warmup_s", Axis: sim.Axis{Quantity: "warm-up time", Unit: "s"}},
			{Key: "stable", Axis: sim.Axis{Quantity: "the warm-up ended on a stable time (1) or at its cap (0)", Unit: "boolean"}},
		},
		Summary: []sim.SummaryField{
			{Match: "*_slope_ns", Axis: sim.Axis{Quantity: "decode time slope against context (whole batch)", Unit: "ns/token"}},
			{Match: "*_intercept_ms", Axis: sim.Axis{Quantity: "decode time at zero context (fitted intercept)", Unit: "ms"}},
			{Match: "slope_ratio", Axis: sim.Axis{Quantity: "e4m3 slope over fp16 slope", Unit: "ratio"}},
			{Match: "*_gbs", Axis: sim.Axis{Quantity: "bandwidth", Unit: "GB/s"}},
			{Match: "batch", Axis: sim.Axis{Quantity: "sequences per step", Unit: "sequences"}},
			{Match: "hardware", Axis: sim.Axis{Quantity: "a hardware GPU (not a CPU adapter)", Unit: "1 yes, 0 no"}},
			{Match: "math_qreg", Axis: sim.Axis{Quantity: "math f32-qreg", Unit: "1 yes, 0 no"}},
		},
	}
}
