package experiments

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(KVFormats{}) }

// KVFormats is the `kv-formats` experiment: output error and needle
// retrieval against context length for KV-cache formats × scale
// granularities × arithmetic, beside bf16, and the promotion interval each
// needs to stay within 1 % of bf16's retrieval.
type KVFormats struct{}

// Name returns "kv-formats".
func (KVFormats) Name() string { return "kv-formats" }

// Doc describes the experiment.
func (KVFormats) Doc() string {
	return `KV-cache formats (bf16, e4m3/e5m2 with per-tensor, per-token-head and per-channel scales, MXFP8, NVFP4, MXFP4) on the synthetic needle: retrieval and output error against context length.

The needle task of the needle experiment (one decode query, head_dim d,
haystack logits ~N(0, score_std^2), values ~N(value_mean, value_std^2), one
needle with logit margin and a ±1 code, optional sinks). Each series is a
cache format with its scales, the way the kernel feeds it to the MMA and the
arithmetic (see the set parameter):

  direct        the MMA reads the stored codes (FA3's FP8 kernel; bf16)
  dequant-bf16  code × scales in FP32, rounded to bf16, bf16 MMA, Q and P
                in bf16 (vLLM's Triton unified attention, FlashInfer)
  dequant-e4m3  code × scales in FP32, rounded to e4m3, e4m3 MMA, P in
                e4m3 (TensorRT-LLM's FP4 KV cache through the FP8 MMA)
  hopper        sm90 wgmma models; blackwell: sm100 tcgen05 (FP32 in
                tensor memory)

  native        tcgen05 kind::mxf8f6f4 / mxf4 / mxf4nvf4 reading the
                block codes and scales (K blocks along head_dim, V blocks
                along tokens, Q and P block-quantized in the kernel:
                SageAttention3's design; docs/kv-formats.md)

Scales: "one" is 1.0 (no calibration); "amax" the cache's amax over the
format's largest value; static scales are computed on the haystack and the
needle and sinks are stored with them. Per-token-head and block scales come
from each token's own values.

With -device gpu, every series whose MMA the WGSL simulator runs (all of
this experiment's: e4m3, e5m2, bf16, f16, direct or dequantized, Hopper or
Blackwell, and the native block-scaled ones) runs on the GPU, bit for bit
with the CPU; a series it does not run stays on the CPU, and the run's
notes list both. The exact references stay on the CPU.

Decode regime: split-KV as the splits parameter says (auto: FA3's
num_splits heuristic for the series' GPU, 132 SMs for hopper and 148 for
blackwell, and batch-kv-heads; the notes give the splits per context). Probe and haystacks as the needle experiment's.

y: relative L2 error of O (%) against exact float64 attention on the
unquantized inputs, never promoted (FA3 as shipped), with its interval
between haystacks; fields acc (retrieval), alpha (shrinkage), residual,
cosine, and relerr_p{N}, acc_p{N}, alpha_p{N} for each promotion interval
N (tiles; 1 is vLLM's two-level accumulation); the summary the same per
context (relerr in %). The summary's need_<series> is the longest interval
whose accuracy stays within 1 point (0.01) of bf16's at
every context (0: never promoting suffices; -1: no interval does).`
}

// kvFormatsCase is one series: a spec and an arithmetic.
type kvFormatsCase struct {
	label string
	spec  attention.KVSpec
	arch  string
}

// kvFormatsSets are the series of the set parameter.
func kvFormatsCases(set string) []kvFormatsCase {
	e := func(f attention.KVFormat, kg, vg attention.Granularity, sc attention.ScaleChoice, p attention.Path) attention.KVSpec {
		return attention.KVSpec{Format: f, KScales: kg, VScales: vg, Scale: sc, Path: p}
	}
	T, TH, C := attention.PerTensor, attention.PerTokenHead, attention.PerChannel
	one, amax := attention.ScaleOne, attention.ScaleAmax
	direct, dbf, de4, native := attention.PathDirect, attention.PathDequantBF16, attention.PathDequantE4M3, attention.PathBlockScaled
	small := []kvFormatsCase{
		{"bf16", e(attention.KVBF16, T, T, one, direct), "hopper"},
		{"e4m3 tensor 1.0 (FA3)", e(attention.KVE4M3, T, T, one, direct), "hopper"},
		{"e4m3 token-head →bf16", e(attention.KVE4M3, TH, TH, one, dbf), "hopper"},
		{"mxfp8 →bf16", e(attention.KVMXFP8, T, T, one, dbf), "hopper"},
		{"nvfp4 amax →e4m3", e(attention.KVNVFP4, T, T, amax, de4), "hopper"},
		{"mxfp4 →bf16", e(attention.KVMXFP4, T, T, one, dbf), "hopper"},
	}
	switch set {
	case "small":
		return small
	case "all":
	default:
		f, err := attention.ParseKVFormat(set)
		if err != nil {
			return nil // the set parameter's choices are small, all and the formats
		}
		return kvFormatsOf(f, small[0])
	}
	return []kvFormatsCase{
		small[0],
		{"f16", e(attention.KVFP16, T, T, one, direct), "hopper"},
		small[1],
		{"e4m3 tensor amax", e(attention.KVE4M3, T, T, amax, direct), "hopper"},
		{"e4m3 tensor 1.0 →bf16", e(attention.KVE4M3, T, T, one, dbf), "hopper"},
		small[2],
		{"e4m3 k:channel amax →bf16", e(attention.KVE4M3, C, T, amax, dbf), "hopper"},
		{"e5m2 tensor 1.0", e(attention.KVE5M2, T, T, one, direct), "hopper"},
		small[3],
		{"mxfp8 →e4m3", e(attention.KVMXFP8, T, T, one, de4), "hopper"},
		{"nvfp4 amax →bf16", e(attention.KVNVFP4, T, T, amax, dbf), "hopper"},
		small[4],
		small[5],
		{"mxfp4 →e4m3", e(attention.KVMXFP4, T, T, one, de4), "hopper"},
		{"e4m3 tensor 1.0 tcgen05", e(attention.KVE4M3, T, T, one, direct), "blackwell"},
		{"nvfp4 amax →e4m3 tcgen05", e(attention.KVNVFP4, T, T, amax, de4), "blackwell"},
		{"mxfp8 native tcgen05", e(attention.KVMXFP8, T, T, one, native), "blackwell"},
		{"nvfp4 amax native tcgen05", e(attention.KVNVFP4, T, T, amax, native), "blackwell"},
		{"mxfp4 native tcgen05", e(attention.KVMXFP4, T, T, one, native), "blackwell"},
	}
}

// kvFormatsOf is the set of one format f: bf16 (the reference of the
// need_ summary) and f on every path that reads it, from f's row of
// attention.KVFormatTable: direct and the two dequantizing paths on hopper,
// the native block-scaled MMA on the first architecture with an
// instruction for it. Scales: the amax choice where the row takes a scale
// choice (Scaled, TensorScale), per tensor.
func kvFormatsOf(f attention.KVFormat, bf16 kvFormatsCase) []kvFormatsCase {
	cases := []kvFormatsCase{bf16}
	sc, scale := attention.ScaleOne, ""
	if f.Scaled() || f.TensorScale() {
		sc, scale = attention.ScaleAmax, " amax"
	}
	shape := attention.KVShape{Tokens: 1, Heads: 1, KDim: max(f.Block(), 1)}
	for _, p := range []struct {
		path   attention.Path
		suffix string
	}{{attention.PathDirect, ""}, {attention.PathDequantBF16, " →bf16"}, {attention.PathDequantE4M3, " →e4m3"}, {attention.PathBlockScaled, " native"}} {
		spec := attention.KVSpec{Format: f, Scale: sc, Path: p.path}
		if spec.Check(shape) != nil || (f == attention.KVBF16 && p.path == attention.PathDirect) {
			continue
		}
		arch, label := "hopper", f.String()+scale+p.suffix
		if p.path == attention.PathBlockScaled {
			arch = ""
			for _, a := range attention.Arches() {
				if a.Block[f] != "" {
					arch, label = a.Name, label+" "+a.MMA
					break
				}
			}
			if arch == "" {
				continue
			}
		}
		cases = append(cases, kvFormatsCase{label, spec, arch})
	}
	return cases
}

// Params returns the parameter schema.
func (KVFormats) Params() []sim.Param {
	p := []sim.Param{
		{Name: "contexts", Doc: "context lengths", Unit: "tokens", Kind: sim.KindInts, Default: []int{4096, 16384}, Min: 64, Max: 1 << 20},
		{Name: "trials", Doc: "trials per context length", Kind: sim.KindInt, Default: 24, Min: 1, Max: 1000000},
		{Name: "set", Doc: "which series: small (6), all (19), or one KV format (bf16 and that format on every path that reads it: attention.KVFormatTable)", Kind: sim.KindChoice, Default: "small", Choices: append([]string{"small", "all"}, attention.KVFormatNames()...)},
		{Name: "promotions", Doc: "P·V promotion intervals tried (tiles; 0 never, 1 every tile)", Kind: sim.KindInts, Default: []int{0, 1, 16}, Min: 0, Max: 1 << 20},
		{Name: "k-block-n", Aliases: []string{"kBlockN"}, Doc: "KV tile width; 0 is FA3's decode tile", Unit: "tokens", Kind: sim.KindInt, Default: 0, Min: 0, Max: attention.MaxKBlockN},
	}
	p = append(p, attnSplitParams(0)...)
	return append(p, attnNeedleParams(needleDefaultMargin)...)
}

// Run runs every context length.
func (KVFormats) Run(ctx context.Context, run *sim.Run) error {
	t, g, done, err := attnStart(ctx, run)
	if err != nil {
		return err
	}
	defer done()
	t.exactErr = true
	contexts, trials := run.Values.Ints("contexts"), run.Values.Int("trials")
	promotions := slices.Clone(run.Values.Ints("promotions"))
	if !slices.Contains(promotions, 0) {
		promotions = append([]int{0}, promotions...)
	}
	cases := kvFormatsCases(run.Values.String("set"))
	build := func(n int) ([]attnNeedleRun, error) {
		var runs []attnNeedleRun
		for _, c := range cases {
			spec := c.spec
			dt := spec.DType()
			qk, pv, err := spec.Models(c.arch)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.label, err)
			}
			r := attnNeedleRun{dtype: dt, spec: &spec, promotions: promotions,
				cfg: attention.Config{HeadDim: t.d, DType: dt, QKModel: qk, PVModel: pv, KBlockN: run.Values.Int("k-block-n")}}
			if err := g.on(c.arch).configure(&r.cfg, n, &spec); err != nil {
				return nil, fmt.Errorf("%s: %w", c.label, err)
			}
			for _, p := range promotions {
				r.series = append(r.series, fmt.Sprintf("%s p%d", c.label, p))
			}
			runs = append(runs, r)
		}
		return runs, nil
	}
	run.AddTotal(int64(len(contexts) * trials))
	summary := map[string]float64{}
	acc := map[string]map[int]float64{}  // series label → context → accuracy
	errs := map[string]map[int]float64{} // … → relative error, %
	var splits []string
	calls := make([]attnCall, len(contexts))
	for ci, n := range contexts {
		runs, err := build(n)
		if err != nil {
			return err
		}
		calls[ci] = attnCall{key: fmt.Sprintf("kv-formats/%d", n), n: n, trials: trials, haystacks: run.Values.Int("haystacks"), runs: runs}
	}
	dr := t.newDrawer(ctx, run, calls, t.drawAhead())
	defer dr.stop()
	for ci, c := range calls {
		n, runs := c.n, c.runs
		splits = append(splits, fmt.Sprintf("%s: %d", attnCtxLabel(n), max(runs[0].cfg.Splits, 1)))
		for i, c := range cases {
			if c.arch != cases[0].arch && runs[i].cfg.Splits != runs[0].cfg.Splits {
				splits[len(splits)-1] += fmt.Sprintf(" (%s %d)", c.arch, runs[i].cfg.Splits)
				break
			}
		}
		out, err := attnNeedleCall(ctx, run, t, c, dr)
		if err != nil {
			return err
		}
		if ci == 0 {
			t.noteSetup(run, runs) // after the first context: the device note waits for the device
		}
		for i, c := range cases {
			var x map[string]float64
			for j, p := range promotions {
				o := out[i*len(promotions)+j]
				ox := o.extras()
				if j == 0 {
					x = ox // the point: p0, never promoted
				}
				key := fmt.Sprintf("%s p%d", c.label, p)
				if acc[key] == nil {
					acc[key], errs[key] = map[int]float64{}, map[int]float64{}
				}
				acc[key][n], errs[key][n] = ox["acc"], ox["relerr"]
				x[fmt.Sprintf("acc_p%d", p)] = ox["acc"]
				x[fmt.Sprintf("relerr_p%d", p)] = ox["relerr"]
				x[fmt.Sprintf("alpha_p%d", p)] = ox["alpha"]
				slug := kvFormatsSlug(key)
				summary[fmt.Sprintf("acc_%s_%s", attnCtxLabel(n), slug)] = ox["acc"]
				summary[fmt.Sprintf("relerr_%s_%s", attnCtxLabel(n), slug)] = ox["relerr"]
				summary[fmt.Sprintf("alpha_%s_%s", attnCtxLabel(n), slug)] = ox["alpha"]
			}
			x["splits"] = float64(max(runs[i].cfg.Splits, 1))
			if err := run.Emit(sim.Point{Series: c.label, X: float64(n), Y: x["relerr"], Extra: x}); err != nil {
				return err
			}
		}
	}
	// The promotion each needs: the longest interval (0 = never counts as
	// the longest) within 0.01 of bf16 at every context.
	order := slices.Clone(promotions)
	slices.SortFunc(order, func(a, b int) int { // never first, then the longest intervals
		if a == 0 || b == 0 {
			return map[bool]int{true: -1, false: 1}[a == 0]
		}
		return b - a
	})
	bf := cases[0].label + " p0"
	var table []string
	head := fmt.Sprintf("  %-28s", "series (relerr % / acc at p0)")
	for _, n := range contexts {
		head += fmt.Sprintf(" %16s", attnCtxLabel(n))
	}
	table = append(table, head+"  needs")
	for _, c := range cases {
		need := -1
		for _, p := range order {
			ok := true
			for _, n := range contexts {
				ok = ok && acc[fmt.Sprintf("%s p%d", c.label, p)][n] >= acc[bf][n]-0.01
			}
			if ok {
				need = p
				break
			}
		}
		summary["need_"+kvFormatsSlug(c.label)] = float64(need)
		line := fmt.Sprintf("  %-28s", c.label)
		for _, n := range contexts {
			k := c.label + " p0"
			line += fmt.Sprintf(" %8.3g%% / %.2f", errs[k][n], acc[k][n])
		}
		needs := map[int]string{-1: "none tried", 0: "never", 1: "every tile"}[need]
		if needs == "" {
			needs = fmt.Sprintf("every %d tiles", need)
		}
		table = append(table, line+"  "+needs)
	}
	summary["chance"] = 1 / float64(t.m)
	run.Summary(summary)
	run.Note(fmt.Sprintf("decode, splits per context (%s), probe %s, %d haystacks per context", strings.Join(splits, ", "), t.probe, min(run.Values.Int("haystacks"), trials)))
	run.Note("relative L2 error of O vs exact float64 on the unquantized inputs / retrieval accuracy, never promoting; the promotion interval needed to stay within 0.01 of bf16's accuracy (points, not intervals: a guide):\n" + strings.Join(table, "\n"))
	return nil
}

// kvFormatsPromotion names a promotion interval in a field's quantity.
func kvFormatsPromotion(p int) string {
	switch p {
	case 0:
		return "never"
	case 1:
		return "every tile"
	}
	return fmt.Sprintf("every %d tiles", p)
}

// kvFormatsSlug turns a series label into a summary key: "e4m3 tensor 1.0
// (FA3) p0" is "e4m3_tensor_1.0_FA3_p0", "→bf16" is "to_bf16".
func kvFormatsSlug(s string) string {
	s = strings.NewReplacer("→", "to_", "(", "", ")", "", ":", "_").Replace(s)
	return strings.Join(strings.Fields(s), "_")
}

// Chart declares kv-formats' chart: retrieval against context, one colour
// per stored format, the dash for the path, scales and arithmetic.
func (KVFormats) Chart() sim.Chart {
	var styles []sim.Style
	for _, f := range attention.KVFormatNames() {
		styles = append(styles,
			sim.Style{Match: f + " *native*", Family: f, Variant: "native block-scaled MMA (tcgen05)"},
			sim.Style{Match: f + " *→e4m3 tcgen05", Family: f, Variant: "dequantized to e4m3, tcgen05"},
			sim.Style{Match: f + " *tcgen05", Family: f, Variant: "Blackwell tcgen05"},
			sim.Style{Match: f + " *→bf16", Family: f, Variant: "dequantized to bf16"},
			sim.Style{Match: f + " *→e4m3", Family: f, Variant: "dequantized to e4m3"},
			sim.Style{Match: f + " *", Family: f, Variant: "direct"},
			sim.Style{Match: f, Family: f})
	}
	fields := attnNeedleFields("exact float64 attention on the unquantized inputs")
	for _, p := range []int{0, 1, 16} { // the default promotions
		fields = append(fields,
			sim.Field{Key: fmt.Sprintf("relerr_p%d", p), Axis: sim.Axis{Quantity: fmt.Sprintf("relative L2 error of O vs exact on the unquantized inputs, promoted %s", kvFormatsPromotion(p)), Unit: "%", Log: true}},
			sim.Field{Key: fmt.Sprintf("acc_p%d", p), Axis: sim.Axis{Quantity: "retrieval accuracy, promoted " + kvFormatsPromotion(p), Unit: "fraction of trials"}.Range(0, 1)},
			sim.Field{Key: fmt.Sprintf("alpha_p%d", p), Axis: sim.Axis{Quantity: "shrinkage α, promoted " + kvFormatsPromotion(p), Unit: "ratio"}})
	}
	fields = append(fields, sim.Field{Key: "splits", Axis: sim.Axis{Quantity: "split-KV ranges of the decode", Unit: "splits"}})
	return sim.Chart{
		X: axisContext, Y: sim.Axis{Quantity: "relative L2 error of O vs exact float64 attention on the unquantized inputs, never promoted", Unit: "%", Log: true},
		Lo: "relerr_lo", Hi: "relerr_hi", Method: attnIntervalMethod(8), Fields: fields, Styles: styles,
		Summary: append(attnSummary("exact float64 attention on the unquantized inputs"),
			sim.SummaryField{Match: "need_*", Axis: sim.Axis{Quantity: "longest promotion interval within 0.01 of bf16's accuracy (0 never; -1 none tried)", Unit: "tiles"}}),
	}
}

// Cost is the needle harness's over the series: one cache per series, one
// kernel per series and promotion, the exact reference per trial.
func (KVFormats) Cost(v sim.Values) sim.Cost {
	cases := int64(len(kvFormatsCases(v.String("set"))))
	prom := int64(len(v.Ints("promotions")) + 1)
	return attnNeedleCost(v, v.Ints("contexts"), v.Int("trials"), cases, cases, cases*prom, true)
}
