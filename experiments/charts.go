package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
)

// The charts of the experiments (sim.Charter): axes with quantity and unit,
// declared scales, and series grouped by colour (family: architecture,
// format, model), dash and marker (variant: promotion, scaling) and
// diamonds for measured hardware. The lab's page draws every run from
// these alone, so a run gives the same chart wherever it was computed.
// Each experiment's Chart is beside it (NAME_chart.go or the experiment's
// own file); this file holds the axes and summaries several share.

var (
	axisK        = sim.Axis{Quantity: "contraction length K", Unit: "elements", Log: true, Base: 2}
	axisContext  = sim.Axis{Quantity: "context length", Unit: "tokens", Log: true, Base: 2}
	axisRelErr   = sim.Axis{Quantity: "relative error", Unit: "relative", Log: true}
	axisAccuracy = sim.Axis{Quantity: "retrieval accuracy", Unit: "fraction of trials"}.Range(0, 1)
)

// trialsSuffix names the series of per-trial values (sim.Chart.Trials).
const trialsSuffix = " · trials"

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
