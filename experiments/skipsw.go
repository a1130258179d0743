package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
	"github.com/fp8lab/fp8lab/presets"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(SkipSW{}) }

// SkipSW is the `skip-sw` experiment: a model with sliding-window layers
// (gpt-oss-20b) with an FP8 KV cache everywhere against one whose
// sliding-window layers keep BF16 (vLLM's --kv-cache-dtype-skip-layers
// sliding_window, #33695). It predicts the decode cost of both with the itl
// cost model and, through the attention simulator, the accuracy of a
// sliding-window layer in FP8 and BF16.
type SkipSW struct{}

// Name returns "skip-sw".
func (SkipSW) Name() string { return "skip-sw" }

// Doc describes the experiment.
func (SkipSW) Doc() string {
	return `Sliding-window layers kept in BF16 (skip-SW) against FP8 everywhere: decode cost and the sliding layers' accuracy.

Cost (the itl experiment's model, same parameters; by default the measured
kernel costs, whose sliding layers cost their window's decode whatever the
context, so that skip-SW moves the intercept, not the slope): ITL against context for
bf16, fp8 and fp8 skip-sw, the FP8/BF16 and skip-SW/BF16 slope ratios and
break-evens, against the published gpt-oss-20b figures (H100: slopes 8.94e-6 /
7.14e-6 / 6.34e-6 ms/token, ratios 80% / 71%; break-even 22,109 / 7,659). In a
bandwidth model the sliding layers read a bounded cache, so skipping them
changes the intercept, not the slope: the model predicts the same slope for
fp8 and fp8 skip-sw, and says how far that is from the published figures.

Accuracy (attention simulator, package attention): one decode query per
trial over acc-contexts tokens, head_dim and window of the model's sliding
layers (gpt-oss-20b: 64 and 128), q-per-kv query heads on one KV head
(gpt-oss: 64 / 8), Q, K ~ N(0,1), V ~ N(v-mean, 1), scales 1.0 (as the
write-up). Series (latencies prefixed "ITL ms: ", errors "rel err: "): the sliding layer in fp8 (FA3 as shipped, single-level
P·V) and in bf16, and for contrast a full-attention layer of the same shape in
fp8 single-level, fp8 two-level (every tile) and bf16; y = relative L2 error
of O against float64 attention on the unquantized inputs (mean over trials);
extra: max over trials, accum (the error against float64 attention on the
quantized cache, i.e. the arithmetic alone), cosine, and the decomposition
alpha (the shrinkage <O, O*>/<O*, O*>) and residual (relative, after it).`
}

// skipswModels are the model presets with sliding-window layers.
func skipswModels() []string {
	var ids []string
	for _, m := range presets.Models() {
		if m.HasSlidingWindow() {
			ids = append(ids, m.ID)
		}
	}
	return ids
}

// Params returns the parameter schema.
func (SkipSW) Params() []sim.Param {
	return append([]sim.Param{
		{Name: "gpu", Doc: "GPU preset", Kind: sim.KindChoice, Default: "h100-sxm", Choices: presets.GPUIDs()},
		{Name: "model", Doc: "model preset with sliding-window layers", Kind: sim.KindChoice, Default: "gpt-oss-20b", Choices: skipswModels()},
		{Name: "accuracy", Doc: "run the attention simulator for the accuracy part", Kind: sim.KindBool, Default: true},
		{Name: "acc-contexts", Doc: "context lengths of the accuracy runs", Unit: "tokens", Kind: sim.KindInts,
			Default: []int{4096, 32768, 131072}, Min: 1, Max: 1 << 20},
		{Name: "trials", Doc: "decode queries (independent inputs) per context", Kind: sim.KindInt, Default: 6, Min: 1, Max: 10000},
		{Name: "q-per-kv", Doc: "query heads per KV head (gpt-oss-20b: 64 / 8)", Kind: sim.KindInt, Default: 8, Min: 1, Max: 64},
		{Name: "v-mean", Doc: "mean of V (real V caches are not zero-mean)", Kind: sim.KindFloat, Default: 0.5, Min: -10, Max: 10},
		{Name: "full-layers", Doc: "also run a full-attention layer of the same shape, for contrast", Kind: sim.KindBool, Default: true},
	}, itlCostParams()...)
}

// Series prefixes: the terminal table puts every series in one table, so the
// names say which are latencies and which are errors.
const (
	skipswITLPrefix = "ITL ms: "
	skipswErrPrefix = "rel err: "
)

// Run runs the experiment.
func (e SkipSW) Run(ctx context.Context, run *sim.Run) error {
	v := run.Values
	if v.String("costs") == "measured" {
		summary, ok, err := itlMeasuredRun(run, "skip-sw", skipswITLPrefix, []string{v.String("model")})
		if err != nil || !ok {
			return err
		}
		if v.Bool("accuracy") {
			if err := skipswAccuracy(ctx, run, presetOf(v.String("model")), summary); err != nil {
				return err
			}
		}
		run.Summary(summary)
		return nil
	}
	s, err := itlSettingsFrom(v)
	if err != nil {
		return err
	}
	c, err := newITLCost(v.String("gpu"), v.String("model"), s)
	if err != nil {
		return err
	}
	if !c.model.HasSlidingWindow() {
		return fmt.Errorf(`parameter "model": %s has no sliding-window layers`, c.model.Name)
	}
	bf16, fp8L, skip := s.layouts()
	if err := itlEmitCurves(run, c, []itlLayout{bf16, fp8L, skip}, v.Ints("contexts"), skipswITLPrefix); err != nil {
		return err
	}
	summary := itlSummary(c, bf16, fp8L)
	summary["slope_skip"] = c.slope(skip)
	summary["slope_ratio_skip"] = c.slope(skip) / c.slope(bf16)
	summary["break_even_skip"] = c.breakEven(bf16, skip)
	summary["fp8_overhead_skip_ms"] = c.overheadOf(skip)
	for _, r := range c.compare() {
		summary[r.key+"_published"] = r.pub
		summary[r.summaryKey()] = r.diffPct()
	}
	run.Note(fmt.Sprintf("skip-sw: %s on %s; efficiency %s", c.model.Name, c.gpu.Name, s.source))
	if c.model.WeightBytes == 0 {
		run.Note("skip-sw: the preset has no weight bytes (" + c.model.Name + "): the ITL curves hold launch-ms, the FP8 overhead and the KV reads only")
	}
	var costs []itlCost
	for _, p := range itlPublishedTable {
		if p.model == c.model.ID {
			pc, err := newITLCost(p.gpu, p.model, s)
			if err != nil {
				return err
			}
			costs = append(costs, pc)
		}
	}
	if len(costs) > 0 {
		run.Note("skip-sw: predicted against published:")
		for _, line := range itlTable(costs) {
			run.Note(line)
		}
	}
	if c.hasPub && c.pub.slopeSkip != 0 {
		run.Note(fmt.Sprintf("skip-sw: the bandwidth model gives FP8 and FP8 skip-SW the same slope (%.3g ms/token): the sliding layers' cache is bounded. "+
			"Published, the sliding layers still cost %.3g ms/token of context under FP8 (%.3g − %.3g), and FP8 reaches %.0f%% of BF16's slope rather than 50%%: "+
			"per-step work sized by the context (split heuristics, scheduler metadata) and the missing decode tile for local layers are the candidates of fp8-attention.md §4.4, none of them in this model.",
			c.slope(fp8L), c.pub.slopeFP8-c.pub.slopeSkip, c.pub.slopeFP8, c.pub.slopeSkip, 100*c.pub.slopeFP8/c.pub.slopeBF16))
	}

	if v.Bool("accuracy") {
		if err := skipswAccuracy(ctx, run, c.model, summary); err != nil {
			return err
		}
	} else {
		run.Note("skip-sw: accuracy part not run (-accuracy=false)")
	}
	run.Summary(summary)
	return nil
}

// skipswCase is one accuracy series: a layer kind and a cache dtype.
type skipswCase struct {
	name      string
	window    bool // the sliding layer (else the full one)
	dtype     fp8.Format
	promotion int // P·V promotion (fp8 only): 0 never, 1 every tile
	key       string
}

// skipswResult is one trial's errors per case.
type skipswResult struct {
	rel, accum, cosine, alpha, residual []float64
	err                                 error
}

// skipswAccuracy runs the simulator on sliding and full layers of the
// model's shape and emits their errors against float64 attention.
func skipswAccuracy(ctx context.Context, run *sim.Run, m presets.Model, summary map[string]float64) error {
	v := run.Values
	var sw, full presets.LayerGroup
	for _, g := range m.KV {
		if g.Window > 0 && sw.Layers == 0 {
			sw = g
		}
		if g.Window == 0 && full.Layers == 0 {
			full = g
		}
	}
	if !slices.Contains([]int{64, 128, 256}, sw.HeadDim) {
		run.Note(fmt.Sprintf("skip-sw: accuracy part skipped: the simulator takes head_dim 64, 128 or 256, %s's sliding layers have %d", m.Name, sw.HeadDim))
		return nil
	}
	cases := []skipswCase{
		{name: fmt.Sprintf("sliding (window %d) fp8", sw.Window), window: true, dtype: fp8.FormatE4M3, key: "sliding_fp8"},
		{name: fmt.Sprintf("sliding (window %d) bf16", sw.Window), window: true, dtype: fp8.FormatBF16, key: "sliding_bf16"},
	}
	if v.Bool("full-layers") {
		if full.HeadDim != sw.HeadDim {
			run.Note(fmt.Sprintf("skip-sw: full-layer contrast run at the sliding layers' head_dim %d (%s's full layers have %d)", sw.HeadDim, m.Name, full.HeadDim))
		}
		cases = append(cases,
			skipswCase{name: "full fp8 single-level", dtype: fp8.FormatE4M3, key: "full_fp8"},
			skipswCase{name: "full fp8 two-level", dtype: fp8.FormatE4M3, promotion: 1, key: "full_fp8_two_level"},
			skipswCase{name: "full bf16", dtype: fp8.FormatBF16, key: "full_bf16"},
		)
	}
	d, group, mu := sw.HeadDim, v.Int("q-per-kv"), v.Float("v-mean")
	contexts, trials := v.Ints("acc-contexts"), v.Int("trials")
	run.AddTotal(int64(len(contexts) * trials))
	for _, n := range contexts {
		key := fmt.Sprintf("skip-sw accuracy n=%d", n)
		res, err := sim.Trials(ctx, run, key, trials, func(_ int, rng *rand.Rand) skipswResult {
			return skipswTrial(ctx, rng, cases, n, d, group, sw.Window, mu)
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
			var rel, acc, cos, alpha, resid []float64
			for _, r := range res {
				rel, acc, cos = append(rel, r.rel[i]), append(acc, r.accum[i]), append(cos, r.cosine[i])
				alpha, resid = append(alpha, r.alpha[i]), append(resid, r.residual[i])
			}
			st := contractionStatsOf(rel)
			mean := func(x []float64) float64 { return contractionStatsOf(x).mean }
			p := sim.Point{Series: skipswErrPrefix + c.name, X: float64(n), Y: st.mean, Extra: map[string]float64{
				"max": st.max, "accum": mean(acc), "cosine": mean(cos), "alpha": mean(alpha), "residual": mean(resid), "trials": float64(trials),
			}}
			if err := run.Emit(p); err != nil {
				return err
			}
			summary[fmt.Sprintf("%s_rel_l2_n%d", c.key, n)] = st.mean
		}
	}
	first, last := contexts[0], contexts[len(contexts)-1]
	if a, b := summary[fmt.Sprintf("sliding_fp8_rel_l2_n%d", first)], summary[fmt.Sprintf("sliding_fp8_rel_l2_n%d", last)]; a > 0 {
		summary["sliding_fp8_growth"] = b / a
	}
	if b := summary[fmt.Sprintf("sliding_bf16_rel_l2_n%d", last)]; b > 0 {
		summary["sliding_fp8_over_bf16"] = summary[fmt.Sprintf("sliding_fp8_rel_l2_n%d", last)] / b
	}
	run.Note(fmt.Sprintf("skip-sw: accuracy through the attention simulator: one decode query, head_dim %d, %d query heads on one KV head, window %d, V ~ N(%g, 1), scales 1.0; "+
		"errors against float64 attention on the unquantized inputs", d, group, sw.Window, mu))
	return nil
}

// skipswTrial draws one decode's inputs over n tokens and returns the errors
// of every case.
func skipswTrial(ctx context.Context, rng *rand.Rand, cases []skipswCase, n, d, group, window int, mu float64) skipswResult {
	res := skipswResult{rel: make([]float64, len(cases)), accum: make([]float64, len(cases)), cosine: make([]float64, len(cases)),
		alpha: make([]float64, len(cases)), residual: make([]float64, len(cases))}
	q := make([]float32, group*d)
	k := make([]float32, n*d)
	vv := make([]float32, n*d)
	for i := range q {
		q[i] = float32(pmath.NormFloat64(rng))
	}
	for i := range k {
		if i%65536 == 0 && ctx.Err() != nil {
			res.err = ctx.Err()
			return res
		}
		k[i] = float32(pmath.NormFloat64(rng))
		vv[i] = float32(mu + pmath.NormFloat64(rng))
	}
	shape := fp8.Shape{Tokens: n, Heads: 1, Dim: d}
	caches := map[fp8.Format]*attention.KV{}
	refs := map[bool][]float64{}    // unquantized reference, by window
	qrefs := map[string][]float64{} // quantized reference, by window and dtype
	for i, c := range cases {
		if ctx.Err() != nil {
			res.err = ctx.Err()
			return res
		}
		cfg := attention.Config{HeadDim: d, KVHeads: 1, QHeads: group, DType: c.dtype, Promotion: c.promotion}
		if c.window {
			cfg.Window = window
		}
		kv, ok := caches[c.dtype]
		if !ok {
			var err error
			if kv, err = attention.NewKVContext(ctx, k, vv, shape, c.dtype, fp8.SatFinite, nil, nil); err != nil {
				res.err = err
				return res
			}
			caches[c.dtype] = kv
		}
		ref, ok := refs[c.window]
		if !ok {
			var err error
			if ref, err = attention.ReferenceF32(ctx, cfg, q, k, vv, 1, n); err != nil {
				res.err = err
				return res
			}
			refs[c.window] = ref
		}
		qkey := fmt.Sprint(c.window, c.dtype)
		qref, ok := qrefs[qkey]
		if !ok {
			var err error
			if qref, err = attention.ReferenceQuantized(ctx, cfg, q, nil, kv); err != nil {
				res.err = err
				return res
			}
			qrefs[qkey] = qref
		}
		o, err := attention.Run(ctx, cfg, q, nil, kv)
		if err != nil {
			res.err = err
			return res
		}
		e := attention.Compare(o, ref)
		res.rel[i], res.cosine[i], res.alpha[i], res.residual[i] = e.RelL2, e.Cosine, e.Alpha, e.Residual
		res.accum[i] = attention.Compare(o, qref).RelL2
		if math.IsNaN(e.RelL2) {
			res.err = fmt.Errorf("skip-sw: %s at %d tokens: NaN error", c.name, n)
			return res
		}
	}
	return res
}
