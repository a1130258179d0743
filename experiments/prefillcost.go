package experiments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/fp8lab/fp8lab/experiments/costdata"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(PrefillCost{}) }

// PrefillCost is the `prefill-cost` experiment: the measured H200 prefill
// attention at head_dim 128 and 256 (BF16, FP8 single-level, FP8
// two-level), with the kernels' registers and spills, beside the accuracy
// of single- against two-level accumulation from the attention simulator:
// the speed and accuracy of two-level accumulation on one page.
type PrefillCost struct{}

// Name returns "prefill-cost".
func (PrefillCost) Name() string { return "prefill-cost" }

// Doc describes the experiment.
func (PrefillCost) Doc() string {
	return `Prefill at head_dim 128 and 256: measured H200 time of BF16, FP8 single-level and FP8 two-level attention, against the published ~1.6× FP8 slowdown, beside the accuracy of the two.

Speed: the "prefill" rows of experiments/costdata (one causal prefill of one
layer, context = query = KV tokens; our Triton kernels and PyTorch SDPA),
as time per query token (µs / context) against context, with the compiled
kernels' registers and spills. Summary: FP8 two-level over BF16 (and
single-level over BF16) at each measured context and head_dim; the
published ~1.6× (blog: gemma-4-E2B's TTFT quadratic coefficient 1.12e-6 /
6.93e-7 = 1.62, H100, vLLM's FA3 or Triton path, unclear which,
fp8-attention.md §4.1) and the FA3 tile_size.h TODO "FP8 prefill ~0.54x of
BF16 with two-level accum at hd256" (1.85×, §2.3); and the part of the
published slowdown the measurement explains, (measured − 1) / (published −
1) at the longest context.

Accuracy (attention simulator, as skip-sw's full layers): one query per
trial over acc-contexts tokens at head_dim 256 (and 128), q-per-kv query
heads on one KV head, Q, K ~ N(0,1), V ~ N(v-mean, 1); series "rel err: …",
the relative L2 error of O against float64 attention for FP8 single-level
(FA3 as shipped), FP8 two-level (every tile) and BF16.`
}

// Params returns the parameter schema.
func (PrefillCost) Params() []sim.Param {
	return []sim.Param{
		{Name: "accuracy", Doc: "run the attention simulator for the accuracy part", Kind: sim.KindBool, Default: true},
		{Name: "acc-contexts", Doc: "context lengths of the accuracy runs", Unit: "tokens", Kind: sim.KindInts, Default: []int{4096, 16384}, Min: 1, Max: 1 << 20},
		{Name: "acc-head-dims", Doc: "head dims of the accuracy runs (64, 128 or 256)", Kind: sim.KindInts, Default: []int{128, 256}, Min: 64, Max: 256},
		{Name: "trials", Doc: "queries (independent inputs) per context", Kind: sim.KindInt, Default: 3, Min: 1, Max: 10000},
		{Name: "q-per-kv", Doc: "query heads per KV head (gemma-4-E2B: 8)", Kind: sim.KindInt, Default: 8, Min: 1, Max: 64},
		{Name: "v-mean", Doc: "mean of V", Kind: sim.KindFloat, Default: 0.5, Min: -10, Max: 10},
	}
}

// prefillImpls are the measured implementations and their series names.
var prefillImpls = []struct{ impl, name string }{
	{"triton-bf16", "bf16"}, {"triton-fp8-1level", "fp8 single-level"}, {"triton-fp8-2level", "fp8 two-level"}, {"sdpa", "sdpa bf16"},
}

// Published FP8 prefill slowdowns at head_dim 256.
const (
	prefillPublishedTTFT = 1.12e-6 / 6.93e-7 // blog, gemma-4-E2B TTFT quadratic coefficients
	prefillPublishedTODO = 1 / 0.54          // FA3 hopper/tile_size.h TODO
)

// Run runs the experiment.
func (PrefillCost) Run(ctx context.Context, run *sim.Run) error {
	v := run.Values
	summary := map[string]float64{}
	f, err := measuredCosts()
	switch {
	case errors.Is(err, costdata.ErrNoMeasuredCosts):
		run.Note("prefill-cost: " + err.Error() + "; the speed part is not shown")
		summary["measured_costs"] = 0
	case err != nil:
		return err
	default:
		summary["measured_costs"] = 1
		if err := prefillSpeed(run, f, summary); err != nil {
			return err
		}
	}
	if v.Bool("accuracy") {
		if err := prefillAccuracy(ctx, run, summary); err != nil {
			return err
		}
	}
	run.Summary(summary)
	return nil
}

// prefillSpeed emits the measured rows and the ratios.
func prefillSpeed(run *sim.Run, f *costdata.File, summary map[string]float64) error {
	if costsNotMeasured(f) {
		run.Note("prefill-cost: THE COST FILE IS NOT A MEASUREMENT (" + f.Provenance.GPU + "): these numbers test the experiment, they measure nothing")
	}
	run.Note("prefill-cost: measured on the " + f.Provenance.String() + "; method: " + f.Provenance.Method)
	shapes := f.PrefillShapes()
	if len(shapes) == 0 {
		run.Note("prefill-cost: the cost file has no prefill rows")
		return nil
	}
	for _, s := range shapes {
		us := map[string]map[int]float64{}
		for _, im := range prefillImpls {
			us[im.impl] = map[int]float64{}
			for _, r := range f.Rows {
				if r.Op != "prefill" || r.Impl != im.impl || (costdata.Shape{QHeads: r.QHeads, KVHeads: r.KVHeads, HeadDim: r.HeadDim}) != s {
					continue
				}
				if old, ok := us[im.impl][r.Context]; ok && old <= r.US {
					continue
				}
				us[im.impl][r.Context] = r.US
				p := sim.Point{Series: fmt.Sprintf("%s hd%d", im.name, s.HeadDim), X: float64(r.Context), Y: r.US / float64(r.Context),
					Extra: map[string]float64{"us": r.US, "registers": float64(r.Registers), "spills": float64(r.Spills), "q_heads": float64(s.QHeads), "kv_heads": float64(s.KVHeads)}}
				if r.USQ1 > 0 && r.USQ3 > 0 {
					p.Extra["q1_per_token"], p.Extra["q3_per_token"] = r.USQ1/float64(r.Context), r.USQ3/float64(r.Context)
				}
				if err := run.Emit(p); err != nil {
					return err
				}
				if r.Registers >= 0 {
					summary[fmt.Sprintf("registers_%s_hd%d", prefillKey(im.name), s.HeadDim)] = float64(r.Registers)
				}
				if r.Spills >= 0 {
					summary[fmt.Sprintf("spills_%s_hd%d", prefillKey(im.name), s.HeadDim)] = float64(r.Spills)
				}
			}
		}
		bf := us["triton-bf16"]
		ctxs := make([]int, 0, len(bf))
		for n := range bf {
			ctxs = append(ctxs, n)
		}
		slices.Sort(ctxs)
		for _, n := range ctxs {
			for _, im := range prefillImpls[1:3] {
				if t, ok := us[im.impl][n]; ok {
					summary[fmt.Sprintf("ratio_%s_over_bf16_hd%d_n%d", prefillKey(im.name), s.HeadDim, n)] = t / bf[n]
				}
			}
		}
		if s.HeadDim == 256 && len(ctxs) > 0 {
			n := ctxs[len(ctxs)-1]
			if t, ok := us["triton-fp8-2level"][n]; ok {
				r := t / bf[n]
				summary["ratio_two_level_hd256"] = r
				summary["ratio_two_level_hd256_published"] = prefillPublishedTTFT
				summary["ratio_two_level_hd256_published_fa3_todo"] = prefillPublishedTODO
				summary["explained_fraction_of_published"] = (r - 1) / (prefillPublishedTTFT - 1)
				run.Note(fmt.Sprintf("prefill-cost: at head_dim 256 and %d tokens FP8 two-level takes %.3g× BF16's time (published: %.3g× on the TTFT quadratic coefficient, %.3g× in FA3's tile_size.h TODO): the measurement accounts for %.0f%% of the published slowdown (measured − 1 over published − 1); our Triton kernels stand for FA3",
					n, r, prefillPublishedTTFT, prefillPublishedTODO, 100*(r-1)/(prefillPublishedTTFT-1)))
			}
		}
	}
	return nil
}

// prefillKey is a series name's summary-key form.
func prefillKey(name string) string {
	switch name {
	case "fp8 single-level":
		return "single_level"
	case "fp8 two-level":
		return "two_level"
	case "sdpa bf16":
		return "sdpa"
	}
	return name
}

// prefillAccuracy runs the simulator's full-attention layer in FP8 single-
// and two-level and BF16 at each head_dim.
func prefillAccuracy(ctx context.Context, run *sim.Run, summary map[string]float64) error {
	v := run.Values
	group, mu, trials := v.Int("q-per-kv"), v.Float("v-mean"), v.Int("trials")
	dims := v.Ints("acc-head-dims")
	for _, d := range dims {
		if !slices.Contains([]int{64, 128, 256}, d) {
			return fmt.Errorf(`parameter "acc-head-dims": %d (the simulator takes 64, 128 or 256)`, d)
		}
	}
	cases := []skipswCase{
		{name: "fp8 single-level", dtype: fp8.FormatE4M3, key: "single_level"},
		{name: "fp8 two-level", dtype: fp8.FormatE4M3, promotion: 1, key: "two_level"},
		{name: "bf16", dtype: fp8.FormatBF16, key: "bf16"},
	}
	contexts := v.Ints("acc-contexts")
	run.AddTotal(int64(len(dims) * len(contexts) * trials))
	for _, d := range dims {
		for _, n := range contexts {
			res, err := sim.Trials(ctx, run, fmt.Sprintf("prefill-cost accuracy d=%d n=%d", d, n), trials, func(_ int, rng *rand.Rand) skipswResult {
				return skipswTrial(ctx, rng, cases, n, d, group, 0, mu)
			})
			if err != nil {
				return err
			}
			for _, r := range res {
				if r.err != nil {
					return r.err
				}
			}
			for i, c := range cases {
				var rel []float64
				for _, r := range res {
					rel = append(rel, r.rel[i])
				}
				st := contractionStatsOf(rel)
				if err := run.Emit(sim.Point{Series: fmt.Sprintf("rel err: %s hd%d", c.name, d), X: float64(n), Y: st.mean,
					Extra: map[string]float64{"max": st.max, "trials": float64(trials)}}); err != nil {
					return err
				}
				summary[fmt.Sprintf("rel_l2_%s_hd%d_n%d", c.key, d, n)] = st.mean
			}
		}
	}
	run.Note(fmt.Sprintf("prefill-cost: accuracy through the attention simulator (one query, %d query heads on one KV head, V ~ N(%g, 1), scales 1.0), against float64 attention on the unquantized inputs", group, mu))
	return nil
}

// Chart declares prefill-cost's chart: time per token on the left, the
// simulator's errors on the right.
func (PrefillCost) Chart() sim.Chart {
	y2 := sim.Axis{Quantity: "relative L2 error of O (right: rel err series)", Unit: "relative", Log: true}
	var styles []sim.Style
	for _, d := range []string{"128", "256"} {
		styles = append(styles,
			sim.Style{Match: "bf16 hd" + d, Family: "bf16", Variant: "hd" + d + ", H200 measured", Measured: true},
			sim.Style{Match: "fp8 single-level hd" + d, Family: "fp8 single-level", Variant: "hd" + d + ", H200 measured", Measured: true},
			sim.Style{Match: "fp8 two-level hd" + d, Family: "fp8 two-level", Variant: "hd" + d + ", H200 measured", Measured: true},
			sim.Style{Match: "sdpa bf16 hd" + d, Family: "sdpa bf16", Variant: "hd" + d + ", H200 measured", Measured: true},
			sim.Style{Match: "rel err: bf16 hd" + d, Family: "bf16", Variant: "hd" + d + ", simulated error", Axis: 2},
			sim.Style{Match: "rel err: fp8 single-level hd" + d, Family: "fp8 single-level", Variant: "hd" + d + ", simulated error", Axis: 2},
			sim.Style{Match: "rel err: fp8 two-level hd" + d, Family: "fp8 two-level", Variant: "hd" + d + ", simulated error", Axis: 2},
		)
	}
	styles = append(styles, sim.Style{Match: "rel err: *", Family: "other head_dim", Axis: 2}, sim.Style{Match: "*", Family: "other head_dim", Measured: true})
	return sim.Chart{
		X:      axisContext,
		Y:      sim.Axis{Quantity: "prefill attention time per query token, one layer (left: measured series)", Unit: "µs/token", Log: true},
		Y2:     &y2,
		Styles: styles,
		Fields: []sim.Field{
			{Key: "q1_per_token", Axis: sim.Axis{Quantity: "prefill time per query token, first quartile of the repetitions", Unit: "µs/token", Log: true}},
			{Key: "q3_per_token", Axis: sim.Axis{Quantity: "prefill time per query token, third quartile of the repetitions", Unit: "µs/token", Log: true}},
			{Key: "us", Axis: sim.Axis{Quantity: "prefill attention time of one layer, median", Unit: "µs", Log: true}},
			{Key: "registers", Axis: sim.Axis{Quantity: "registers per thread of the compiled kernel (-1 unknown)", Unit: "registers"}},
			{Key: "spills", Axis: sim.Axis{Quantity: "register spills of the compiled kernel (-1 unknown)", Unit: "spills"}},
			{Key: "q_heads", Axis: sim.Axis{Quantity: "query heads of the measured shape", Unit: "heads"}},
			{Key: "kv_heads", Axis: sim.Axis{Quantity: "KV heads of the measured shape", Unit: "heads"}},
			{Key: "max", Axis: sim.Axis{Quantity: "relative L2 error of O, worst trial", Unit: "relative", Log: true}},
			{Key: "trials", Axis: sim.Axis{Quantity: "trials", Unit: "count"}},
		},
		Summary: []sim.SummaryField{
			{Match: "ratio_*", Axis: sim.Axis{Quantity: "prefill time over BF16's", Unit: "ratio"}},
			{Match: "explained_fraction_of_published", Axis: sim.Axis{Quantity: "part of the published FP8 slowdown the measurement explains, (measured − 1)/(published − 1)", Unit: "fraction"}},
			{Match: "registers_*", Axis: sim.Axis{Quantity: "registers per thread of the compiled kernel", Unit: "registers"}},
			{Match: "spills_*", Axis: sim.Axis{Quantity: "register spills of the compiled kernel", Unit: "spills"}},
			{Match: "rel_l2_*", Axis: sim.Axis{Quantity: "relative L2 error of O, mean over trials", Unit: "relative", Log: true}},
			{Match: "measured_costs", Axis: sim.Axis{Quantity: "measured kernel costs in this build", Unit: "1 yes, 0 no"}},
		},
		Show: []string{"ratio_two_level_hd256", "ratio_two_level_hd256_published", "explained_fraction_of_published"},
	}
}

// Cost is the accuracy part's (skip-sw's full layers): the speed part reads
// a few rows.
func (PrefillCost) Cost(v sim.Values) sim.Cost {
	c := sim.Cost{Memory: costBase, Work: 1e6}
	if !v.Bool("accuracy") {
		return c
	}
	group, trials := int64(v.Int("q-per-kv")), v.Int("trials")
	var maxND int64
	for _, d := range v.Ints("acc-head-dims") {
		for _, n := range v.Ints("acc-contexts") {
			nd := sim.MulSat(int64(n), int64(d))
			maxND = max(maxND, nd)
			perTrial := sim.AddSat(sim.MulSat(nd, 2*costNormal), sim.MulSat(3, nd, 2*costQuant+group*(costKernel+2*costRef)))
			c.Work = sim.AddSat(c.Work, sim.MulSat(int64(trials), perTrial))
		}
	}
	c.Memory = sim.AddSat(c.Memory, sim.MulSat(int64(sim.Workers(trials)), maxND, 2*4+2*8+4))
	return c
}
