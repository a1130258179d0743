package experiments

import (
	"slices"

	"github.com/fp8lab/fp8lab/sim"
)

// needle's chart and cost estimate (sim.Charter, sim.Coster).

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

func (Needle) Cost(v sim.Values) sim.Cost {
	t := attnNeedleFromValues(v)
	cs := v.Ints("contexts")
	runs, err := needleRuns(t, v.String("series"), v.Int("k-block-n"), attnRegimeFromValues(v), slices.Max(cs))
	if err != nil {
		runs = nil
	}
	var kernels, cpuDtypes int64
	gpu := wantsGPU(v)
	for _, r := range runs {
		if gpu && t.onGPU(r) {
			continue // runs on the GPU: the CPU only packs the cache once per batch
		}
		kernels += int64(len(r.promotions))
		cpuDtypes++
	}
	return attnNeedleCost(v, cs, v.Int("trials"), int64(len(runs)), cpuDtypes, kernels, true)
}
