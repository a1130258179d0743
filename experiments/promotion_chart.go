package experiments

import (
	"github.com/fp8lab/fp8lab/sim"
)

// promotion's chart and cost estimate (sim.Charter, sim.Coster).

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

func (Promotion) Cost(v sim.Values) sim.Cost {
	blocks, intervals := int64(len(v.Ints("k-block-n"))), int64(len(v.Ints("intervals")))
	dtypes, kernels := blocks, blocks*intervals
	if wantsGPU(v) {
		kernels = 0 // the fp8 kernels run on the GPU
	}
	if v.Bool("bf16") {
		dtypes, kernels = dtypes+1, kernels+1
	}
	cpuDtypes := dtypes
	if wantsGPU(v) {
		cpuDtypes = dtypes - blocks
	}
	return attnNeedleCost(v, []int{v.Int("context")}, v.Int("trials"), dtypes, cpuDtypes, kernels, true)
}
