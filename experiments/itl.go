package experiments

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fp8lab/fp8lab/presets"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(ITL{}) }

// ITL is the `itl` experiment: the decode cost model of fp8-attention.md §4.
// It predicts the inter-token latency at concurrency 1 against context
// length for a BF16 and an FP8 KV cache from first principles (bytes read
// per step over achieved bandwidth), and sets the predicted slopes, their
// ratio and the break-even context beside the published measurements.
type ITL struct{}

// Name returns "itl".
func (ITL) Name() string { return "itl" }

// Doc describes the experiment.
func (ITL) Doc() string {
	return `Decode cost model: inter-token latency against context for BF16 and FP8 KV caches, slope ratio and break-even, predicted against published.

costs measured (the default): the step time of the measured H200 kernel
costs (experiments/costdata; docs/cost-model.md): per layer decode
attention at min(L, window), the KV write and (FP8) the query
quantization, the bf16 GEMMs, weights outside them at the measured stream
bandwidth, the unmeasured kernels' launches; scaled to the GPU by
datasheet bandwidth (and FLOPs) ratios, fixed costs equal. Slope and
intercept are least-squares lines over the contexts (default the
published 256 → 125k), the break-even Δintercept / Δslope; nothing
published goes in. Series as below, plus the H200's measured attention
per step ("h200 measured attention …"). A build without the cost file
says it has no measured costs and predicts nothing.

costs bandwidth (the first-principles model, what follows):
ITL(L) = ITL0 + batch · (KV bytes per token · L + sliding-window KV bytes) / (η · bandwidth)
(fp8-attention.md §4.6), with KV bytes per token = 2 · full layers · KV heads ·
head_dim · (2 B for BF16, 1 B for FP8) from the model preset (presets.Models), the
datasheet HBM bandwidth of the GPU preset (presets.GPUs), and an achieved-bandwidth
factor η per dtype from the efficiency parameter:
  roofline   η = 1 (no fitted number: the pure first-principles prediction);
  doc-4.4    η_BF16 = 0.90, η_FP8 = 0.83, the factors fp8-attention.md §4.4
             derived from the published H100 Llama-3.1-8B slopes (so that row
             is reproduced by construction; the others are predictions);
  measured   η = bw-measured / the datasheet bandwidth of bw-gpu: the
             effective bandwidth the decode-bw experiment measured for FP16
             (and, with bw-measured-fp8, FP8) KV on the GPU at hand.
ITL0 = weight bytes / (weights-eff · bandwidth) + launch-ms (weights only where
the preset knows them), and the FP8 cache adds a fixed overhead fp8-overhead
(default: the published intercept gap of the GPU and model, 0 where none).
Break-even = fixed overhead / (BF16 slope − FP8 slope): the context above which
FP8 KV is faster. The model has no first-principles term for that overhead, so
a predicted break-even tests the slope gap only.

Series: bf16, fp8 (and fp8 skip-sw for models with sliding-window layers), ITL
in ms against context, and the published linear fits where the write-up gives
both slope and intercept. Notes: the model against the published figures for
every published GPU and model (vLLM blog, fp8-attention.md §1.1, §4.4–4.5), in
two tables: predictions (nothing published went in), and figures that are not
predictions: the break-even with the published overhead (published gap /
predicted slope gap; for gpt-oss the gap itself comes from the published
break-even), and under doc-4.4 the H100 Llama slopes and every slope ratio
(0.5·0.90/0.83 = 0.5422 for every GPU), which are fitted. Summary: the model's
slopes (ms/token), ratio, break-even; KEY_published; and the difference as
KEY_diff_pct for a prediction, KEY_derived_diff_pct for a figure derived from a
published one, KEY_fitted_diff_pct for one fitted to it.`
}

// itlEfficiencies are the values of the efficiency parameter.
var itlEfficiencies = []string{"roofline", "doc-4.4", "measured"}

// itlDoc44 are the achieved-bandwidth factors of fp8-attention.md §4.4 (from
// the published H100 Llama-3.1-8B slopes: 3.00 / 3.35 and 2.77 / 3.35 TB/s).
const (
	itlDoc44BF16 = 0.90
	itlDoc44FP8  = 0.83
)

// itlDefaultContexts is the published benchmark's range: input 256 → 125k
// tokens (fp8-attention.md §1.1).
var itlDefaultContexts = []int{256, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 98304, 125000}

// itlCostParams are the parameters of the cost model shared by itl and
// skip-sw.
func itlCostParams() []sim.Param {
	return []sim.Param{
		itlCostsParam, itlFP8ScalesParam,
		{Name: "contexts", Doc: "context lengths of the ITL curves", Unit: "tokens", Kind: sim.KindInts,
			Default: itlDefaultContexts, Min: 1, Max: 1 << 22},
		{Name: "batch", Doc: "concurrent sequences at the same context (the published fits: 1)", Kind: sim.KindInt,
			Default: 1, Min: 1, Max: 4096},
		{Name: "efficiency", Doc: "achieved-bandwidth factor: roofline (1), doc-4.4 (0.90 / 0.83), measured (from bw-measured)", Kind: sim.KindChoice,
			Default: "roofline", Choices: itlEfficiencies},
		{Name: "bw-measured", Doc: "effective bandwidth decode-bw measured for FP16 KV on bw-gpu (0: none; implies efficiency measured)", Unit: "GB/s", Kind: sim.KindFloat,
			Default: 0.0, Min: 0, Max: 100000},
		{Name: "bw-measured-fp8", Doc: "the same for FP8 KV (0: the FP16 figure)", Unit: "GB/s", Kind: sim.KindFloat,
			Default: 0.0, Min: 0, Max: 100000},
		{Name: "bw-gpu", Doc: "the GPU bw-measured was measured on", Kind: sim.KindChoice,
			Default: "h200", Choices: presets.GPUIDs()},
		{Name: "fp8-overhead", Doc: "fixed FP8 cost per step (-1: the published intercept gap of this GPU and model, 0 where none)", Unit: "ms", Kind: sim.KindFloat,
			Default: -1.0, Min: -1, Max: 1000},
		{Name: "weights-eff", Doc: "achieved-bandwidth factor of the weight read in ITL0", Kind: sim.KindFloat,
			Default: 1.0, Min: 0.01, Max: 1},
		{Name: "launch-ms", Doc: "fixed cost per step added to ITL0 (launches, CPU)", Unit: "ms", Kind: sim.KindFloat,
			Default: 0.0, Min: 0, Max: 1000},
	}
}

// Params returns the parameter schema.
func (ITL) Params() []sim.Param {
	return append([]sim.Param{
		{Name: "gpu", Doc: "GPU preset", Kind: sim.KindChoice, Default: "h100-sxm", Choices: presets.GPUIDs()},
		{Name: "model", Doc: "model preset", Kind: sim.KindChoice, Default: "llama-3.1-8b", Choices: presets.ModelIDs()},
	}, itlCostParams()...)
}

// itlPublished is one published single-request decode measurement
// (concurrency 1, ITL = intercept + slope · context fitted over 256 → 125k
// tokens). Zero means not published.
type itlPublished struct {
	gpu, model string
	// Slopes in ms per token of context: BF16, FP8 everywhere, FP8 with
	// the sliding-window layers kept in BF16 (skip-SW).
	slopeBF16, slopeFP8, slopeSkip float64
	// Intercepts in ms.
	t0BF16, t0FP8 float64
	// Gaps of the FP8 intercepts over the BF16 one, in ms: the FP8 fixed
	// overhead.
	gapFP8, gapSkip float64
	// Break-even contexts in tokens.
	breakEven, breakEvenSkip float64
	source                   string
}

// itlPublishedTable holds the published figures (vLLM blog "The State of FP8
// KV-Cache and Attention Quantization in vLLM", as fp8-attention.md §1.1 and
// §4.4–4.5 quote it).
var itlPublishedTable = []itlPublished{
	{gpu: "h100-sxm", model: "llama-3.1-8b", slopeBF16: 4.37e-5, slopeFP8: 2.37e-5, t0BF16: 6.44, t0FP8: 6.58,
		gapFP8: 6.58 - 6.44, breakEven: 7010,
		source: "fp8-attention.md §1.1: slope 4.37e-5 → 2.37e-5 ms/token, intercept 6.44 → 6.58 ms; break-even 7,010 (v0.19.1)"},
	{gpu: "b200", model: "llama-3.1-8b", slopeBF16: 1.80e-5, slopeFP8: 9.72e-6, t0BF16: 3.93, t0FP8: 3.96,
		gapFP8: 3.96 - 3.93, breakEven: 4000,
		source: "fp8-attention.md §1.1, §4.5: FlashInfer on B200, slope 1.80e-5 → 9.72e-6, intercept 3.93 → 3.96; break-even \"≈ 4k\""},
	{gpu: "h100-sxm", model: "gpt-oss-20b", slopeBF16: 8.94e-6, slopeFP8: 7.14e-6, slopeSkip: 6.34e-6,
		gapFP8: 0.040, gapSkip: 0.020, breakEven: 22109, breakEvenSkip: 7659,
		source: "fp8-attention.md §1.1, §4.5: slopes 8.94e-6 / 7.14e-6 / 6.34e-6 (skip-SW), intercepts 4.03–4.07 ms " +
			"(not given one by one); break-even 22,109 (FP8) and 7,659 (skip-SW), which imply gaps of 0.040 and 0.020 ms"},
	{gpu: "b200", model: "gpt-oss-20b", slopeBF16: 3.56e-6, slopeFP8: 2.06e-6, t0BF16: 3.15, t0FP8: 3.17,
		gapFP8: 3.17 - 3.15, breakEven: 13000,
		source: "fp8-attention.md §1.1: slope 3.56e-6 → 2.06e-6, intercept 3.15 → 3.17; break-even \"about 13k\""},
	{gpu: "h100-sxm", model: "gemma-4-e2b", slopeBF16: 5.30e-5, slopeFP8: 3.60e-5,
		source: "fp8-attention.md §1.1: slope 5.30e-5 → 3.60e-5 (no intercepts); §4.4: not bandwidth-bound"},
}

// itlPublishedFor returns the published figures of a GPU and model.
func itlPublishedFor(gpu, model string) (itlPublished, bool) {
	for _, p := range itlPublishedTable {
		if p.gpu == gpu && p.model == model {
			return p, true
		}
	}
	return itlPublished{}, false
}

// itlSettings are the cost-model parameters common to every GPU and model.
type itlSettings struct {
	efficiency       string  // the efficiency parameter after bw-measured
	etaBF16, etaFP8  float64 // achieved-bandwidth factors
	etaWeights       float64
	launch, overhead float64 // ms; overhead < 0: published gap
	batch            int
	source           string // one line on where η comes from
}

// itlSettingsFrom reads the shared parameters.
func itlSettingsFrom(v sim.Values) (itlSettings, error) {
	s := itlSettings{
		efficiency: v.String("efficiency"), etaWeights: v.Float("weights-eff"),
		launch: v.Float("launch-ms"), overhead: v.Float("fp8-overhead"), batch: v.Int("batch"),
	}
	bw, bw8 := v.Float("bw-measured"), v.Float("bw-measured-fp8")
	if bw > 0 || bw8 > 0 {
		s.efficiency = "measured"
	}
	switch s.efficiency {
	case "roofline":
		s.etaBF16, s.etaFP8 = 1, 1
		s.source = "roofline: η = 1 for both dtypes (datasheet bandwidth, no fitted factor)"
	case "doc-4.4":
		s.etaBF16, s.etaFP8 = itlDoc44BF16, itlDoc44FP8
		s.source = "doc-4.4: η_BF16 = 0.90, η_FP8 = 0.83 (fp8-attention.md §4.4, implied by the published H100 Llama-3.1-8B slopes: that row is reproduced by construction)"
	case "measured":
		if bw <= 0 {
			return s, fmt.Errorf(`parameter "bw-measured": efficiency measured needs the FP16 bandwidth decode-bw measured (GB/s)`)
		}
		if bw8 <= 0 {
			bw8 = bw
		}
		g, err := presets.LookupGPU(v.String("bw-gpu"))
		if err != nil {
			return s, err
		}
		for _, x := range []struct {
			name string
			gbs  float64
		}{{"bw-measured", bw}, {"bw-measured-fp8", bw8}} {
			if x.gbs*presets.GB > 1.05*g.Bandwidth {
				return s, fmt.Errorf("parameter %q: %g GB/s is above the %s's datasheet %g GB/s", x.name, x.gbs, g.Name, g.Bandwidth/presets.GB)
			}
		}
		s.etaBF16, s.etaFP8 = bw*presets.GB/g.Bandwidth, bw8*presets.GB/g.Bandwidth
		s.source = fmt.Sprintf("measured: η_BF16 = %g / %g GB/s = %.3f, η_FP8 = %g / %g GB/s = %.3f (decode-bw on the %s, applied to the chosen GPU)",
			bw, g.Bandwidth/presets.GB, s.etaBF16, bw8, g.Bandwidth/presets.GB, s.etaFP8, g.Name)
	default:
		return s, fmt.Errorf(`parameter "efficiency": unknown value %q`, s.efficiency)
	}
	return s, nil
}

// itlCost is the cost model of one GPU and model.
type itlCost struct {
	gpu   presets.GPU
	model presets.Model
	itlSettings
	pub    itlPublished
	hasPub bool
}

// newITLCost combines the presets and the settings.
func newITLCost(gpuID, modelID string, s itlSettings) (itlCost, error) {
	g, err := presets.LookupGPU(gpuID)
	if err != nil {
		return itlCost{}, err
	}
	m, err := presets.LookupModel(modelID)
	if err != nil {
		return itlCost{}, err
	}
	c := itlCost{gpu: g, model: m, itlSettings: s}
	c.pub, c.hasPub = itlPublishedFor(gpuID, modelID)
	return c, nil
}

// itlLayout says how a cache stores its layers: bytes per element of the
// full-attention layers and of the sliding-window layers, with their
// achieved-bandwidth factors.
type itlLayout struct {
	name               string
	fullElem, swElem   float64
	fullEta, swEta     float64
	skip               bool // FP8 with the sliding-window layers in BF16
	fp8                bool
	publishedOverheads func(itlPublished) float64
}

// layouts returns the BF16, FP8 and FP8 skip-SW layouts under settings s.
func (s itlSettings) layouts() (bf16, fp8, skip itlLayout) {
	bf16 = itlLayout{name: "bf16", fullElem: 2, swElem: 2, fullEta: s.etaBF16, swEta: s.etaBF16}
	fp8 = itlLayout{name: "fp8", fullElem: 1, swElem: 1, fullEta: s.etaFP8, swEta: s.etaFP8, fp8: true,
		publishedOverheads: func(p itlPublished) float64 { return p.gapFP8 }}
	skip = itlLayout{name: "fp8 skip-sw", fullElem: 1, swElem: 2, fullEta: s.etaFP8, swEta: s.etaBF16, fp8: true, skip: true,
		publishedOverheads: func(p itlPublished) float64 { return p.gapSkip }}
	return
}

// slope returns the predicted ITL slope in ms per token of context.
func (c itlCost) slope(l itlLayout) float64 {
	return float64(c.batch) * c.model.KVBytesPerToken(l.fullElem) / (l.fullEta * c.gpu.Bandwidth) * 1e3
}

// base returns the predicted ITL0 in ms without the FP8 overhead: the weight
// read (when the preset knows the weights) plus the launch cost.
func (c itlCost) base() float64 {
	return c.model.WeightBytes/(c.etaWeights*c.gpu.Bandwidth)*1e3 + c.launch
}

// overheadOf returns the FP8 fixed overhead of a layout in ms: the parameter,
// or the published intercept gap (0 where none).
func (c itlCost) overheadOf(l itlLayout) float64 {
	switch {
	case !l.fp8:
		return 0
	case c.overhead >= 0:
		return c.overhead
	case c.hasPub:
		return l.publishedOverheads(c.pub)
	}
	return 0
}

// itl returns the predicted ITL in ms at a context of L tokens.
func (c itlCost) itl(l itlLayout, L int) float64 {
	kv := c.model.KVBytesPerToken(l.fullElem)*float64(L)/l.fullEta + c.model.WindowKVBytes(L, l.swElem)/l.swEta
	return c.base() + c.overheadOf(l) + float64(c.batch)*kv/c.gpu.Bandwidth*1e3
}

// breakEven returns the context above which layout l is faster than BF16:
// overhead / slope gap, +Inf when l's slope is not smaller, 0 when there is
// no overhead.
func (c itlCost) breakEven(bf16, l itlLayout) float64 {
	gap := c.slope(bf16) - c.slope(l)
	if gap <= 0 {
		return math.Inf(1)
	}
	return c.overheadOf(l) / gap
}

// itlBasis says what a compared figure is, so that a figure computed from a
// published one is never read as a prediction that agrees with it.
type itlBasis uint8

const (
	// itlPredicted: computed from the presets and the parameters alone (no
	// published figure of this comparison went in).
	itlPredicted itlBasis = iota
	// itlFitted: the efficiency factors were chosen to reproduce this
	// published figure (doc-4.4), so it agrees by construction.
	itlFitted
	// itlDerived: a published figure divided by a predicted one (the
	// break-even: the published FP8 overhead over the predicted slope gap);
	// its difference measures the predicted part only.
	itlDerived
)

// suffix is the summary-key suffix of the difference: "_diff_pct" for a
// prediction, "_fitted_diff_pct" and "_derived_diff_pct" otherwise.
func (b itlBasis) suffix() string {
	return [...]string{"_diff_pct", "_fitted_diff_pct", "_derived_diff_pct"}[b]
}

// itlRow is one line of the predicted-against-published table.
type itlRow struct {
	key, what, unit string // key names the summary entry, e.g. "slope_bf16"
	pred, pub       float64
	basis           itlBasis
	why             string // for fitted and derived rows: what went in
}

// diffPct is (predicted − published) / published in %.
func (r itlRow) diffPct() float64 { return (r.pred - r.pub) / r.pub * 100 }

// summaryKey is the summary key of the row's difference.
func (r itlRow) summaryKey() string { return r.key + r.basis.suffix() }

// doc44Fit is the published row the doc-4.4 efficiencies were fitted to.
const doc44FitGPU, doc44FitModel = "h100-sxm", "llama-3.1-8b"

// compare returns the rows of the table for c's GPU and model: every
// quantity the write-up publishes, each with its basis.
func (c itlCost) compare() []itlRow {
	if !c.hasPub {
		return nil
	}
	p := c.pub
	bf16, fp8, skip := c.layouts()
	var rows []itlRow
	add := func(key, what, unit string, pred, pub float64, basis itlBasis, why string) {
		if pub != 0 {
			rows = append(rows, itlRow{key, what, unit, pred, pub, basis, why})
		}
	}
	// Slopes: predicted, except those the doc-4.4 factors were fitted to.
	slopeBasis, slopeWhy := itlPredicted, ""
	ratioBasis, ratioWhy := itlPredicted, ""
	if c.efficiency == "doc-4.4" {
		slopeWhy = "η fitted on H100 Llama-3.1-8B"
		if p.gpu == doc44FitGPU && p.model == doc44FitModel {
			slopeBasis, slopeWhy = itlFitted, "doc-4.4 η was fitted to these slopes"
		}
		ratioBasis, ratioWhy = itlFitted, fmt.Sprintf("0.5 · η_BF16/η_FP8 = %.4g for every GPU, fitted to the H100 Llama-3.1-8B ratio", 0.5*c.etaBF16/c.etaFP8)
	}
	// Break-evens: published overheads over predicted slope gaps.
	beBasis := func(gapFromBreakEven bool) (itlBasis, string) {
		if c.overhead >= 0 {
			return itlPredicted, fmt.Sprintf("overhead %g ms given", c.overhead)
		}
		if slopeBasis == itlFitted {
			return itlFitted, "published intercept gap / slope gap fitted to the published slopes"
		}
		if gapFromBreakEven {
			return itlDerived, "the gap is implied by the published break-even: the difference is the slope-gap error"
		}
		return itlDerived, "published intercept gap / predicted slope gap: tests the slope gap only"
	}
	gptGap := p.t0BF16 == 0 // gpt-oss H100: the gaps come from the published break-evens
	add("slope_bf16", "BF16 slope", "ms/token", c.slope(bf16), p.slopeBF16, slopeBasis, slopeWhy)
	add("slope_fp8", "FP8 slope", "ms/token", c.slope(fp8), p.slopeFP8, slopeBasis, slopeWhy)
	add("slope_ratio", "FP8/BF16 slope ratio", "", c.slope(fp8)/c.slope(bf16), p.slopeFP8/p.slopeBF16, ratioBasis, ratioWhy)
	b, why := beBasis(gptGap)
	add("break_even", "FP8 break-even (gap "+fmtG(c.overheadOf(fp8))+" ms)", "tokens", c.breakEven(bf16, fp8), p.breakEven, b, why)
	if c.model.HasSlidingWindow() {
		add("slope_skip", "FP8 skip-SW slope", "ms/token", c.slope(skip), p.slopeSkip, slopeBasis, slopeWhy)
		if p.slopeSkip != 0 {
			add("slope_ratio_skip", "skip-SW/BF16 slope ratio", "", c.slope(skip)/c.slope(bf16), p.slopeSkip/p.slopeBF16, ratioBasis, ratioWhy)
		}
		b, why := beBasis(gptGap)
		add("break_even_skip", "skip-SW break-even (gap "+fmtG(c.overheadOf(skip))+" ms)", "tokens", c.breakEven(bf16, skip), p.breakEvenSkip, b, why)
	}
	if c.model.WeightBytes > 0 {
		add("itl0_bf16", fmt.Sprintf("BF16 intercept (weights at η %g + %g ms)", c.etaWeights, c.launch), "ms", c.base(), p.t0BF16, itlPredicted, "")
	}
	return rows
}

// fmtG formats a number shortest, for labels.
func fmtG(x float64) string { return fmt.Sprintf("%.3g", x) }

// itlTable formats the table of the given cost models in two parts: the
// predictions against the published figures, then the figures that are not
// predictions (fitted to or derived from published ones), whose differences
// are not agreement. One line per row, aligned columns.
func itlTable(costs []itlCost) []string {
	var lines []string
	for _, part := range []struct {
		title   string
		bases   []itlBasis
		diffCol string
	}{
		{"predicted (from the presets and parameters only) against published:", []itlBasis{itlPredicted}, "diff"},
		{"NOT predictions (fitted to or derived from published figures: a small difference is not agreement):", []itlBasis{itlFitted, itlDerived}, "diff (not agreement)"},
	} {
		var buf bytes.Buffer
		w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "GPU\tmodel\tquantity\tmodel value\tpublished\t%s\tunit\tbasis\t\n", part.diffCol)
		n := 0
		for _, c := range costs {
			for _, r := range c.compare() {
				if !slices.Contains(part.bases, r.basis) {
					continue
				}
				basis := "predicted"
				if r.why != "" {
					basis += ": " + r.why
				}
				switch r.basis {
				case itlFitted:
					basis = "fitted: " + r.why
				case itlDerived:
					basis = "derived: " + r.why
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%.4g\t%.4g\t%+.1f%%\t%s\t%s\t\n", c.gpu.Name, c.model.Name, r.what, r.pred, r.pub, r.diffPct(), r.unit, basis)
				n++
			}
		}
		w.Flush()
		if n == 0 {
			continue
		}
		lines = append(lines, part.title)
		lines = append(lines, strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")...)
	}
	return lines
}

// Run runs the experiment.
func (ITL) Run(ctx context.Context, run *sim.Run) error {
	v := run.Values
	if v.String("costs") == "measured" {
		summary, ok, err := itlMeasuredRun(run, "itl", "", nil)
		if ok {
			run.Summary(summary)
		}
		return err
	}
	s, err := itlSettingsFrom(v)
	if err != nil {
		return err
	}
	c, err := newITLCost(v.String("gpu"), v.String("model"), s)
	if err != nil {
		return err
	}
	bf16, fp8, skip := s.layouts()
	layouts := []itlLayout{bf16, fp8}
	if c.model.HasSlidingWindow() {
		layouts = append(layouts, skip)
	}
	if err := itlEmitCurves(run, c, layouts, v.Ints("contexts"), ""); err != nil {
		return err
	}

	summary := itlSummary(c, bf16, fp8)
	if c.model.HasSlidingWindow() {
		summary["slope_skip"] = c.slope(skip)
		summary["slope_ratio_skip"] = c.slope(skip) / c.slope(bf16)
		summary["break_even_skip"] = c.breakEven(bf16, skip)
	}
	for _, r := range c.compare() {
		summary[r.key+"_published"] = r.pub
		summary[r.summaryKey()] = r.diffPct()
	}

	run.Note(fmt.Sprintf("itl: %s on %s (%g TB/s), KV %g B/token BF16, %g B/token FP8; efficiency %s",
		c.model.Name, c.gpu.Name, c.gpu.Bandwidth/presets.TB, c.model.KVBytesPerToken(2), c.model.KVBytesPerToken(1), s.source))
	if c.model.WeightBytes == 0 {
		run.Note("itl: the preset has no weight bytes (" + c.model.Name + "): ITL0 is launch-ms plus the FP8 overhead only")
	}
	if !c.hasPub {
		run.Note("itl: no published figures for " + c.model.Name + " on " + c.gpu.Name)
	} else {
		run.Note("itl: published: " + c.pub.source)
	}
	// The table of every published GPU and model, under the same settings.
	var costs []itlCost
	for _, p := range itlPublishedTable {
		pc, err := newITLCost(p.gpu, p.model, s)
		if err != nil {
			return err
		}
		costs = append(costs, pc)
		for _, r := range pc.compare() {
			summary[fmt.Sprintf("table.%s.%s.%s", p.gpu, p.model, r.summaryKey())] = r.diffPct()
		}
	}
	run.Note("itl: the model against the published figures (efficiency " + s.efficiency + "):")
	for _, line := range itlTable(costs) {
		run.Note(line)
	}
	run.Summary(summary)
	return nil
}

// itlSummary returns the predicted figures of c for BF16 and FP8.
func itlSummary(c itlCost, bf16, fp8 itlLayout) map[string]float64 {
	return map[string]float64{
		"slope_bf16":              c.slope(bf16),
		"slope_fp8":               c.slope(fp8),
		"slope_ratio":             c.slope(fp8) / c.slope(bf16),
		"break_even":              c.breakEven(bf16, fp8),
		"itl0_bf16":               c.base(),
		"itl0_fp8":                c.base() + c.overheadOf(fp8),
		"fp8_overhead_ms":         c.overheadOf(fp8),
		"eta_bf16":                c.etaBF16,
		"eta_fp8":                 c.etaFP8,
		"bandwidth_tbs":           c.gpu.Bandwidth / presets.TB,
		"kv_bytes_per_token_bf16": c.model.KVBytesPerToken(2),
		"kv_bytes_per_token_fp8":  c.model.KVBytesPerToken(1),
	}
}

// itlEmitCurves emits ITL against context for each layout, and the published
// linear fits where both slope and intercept are published; prefix goes in
// front of every series name.
func itlEmitCurves(run *sim.Run, c itlCost, layouts []itlLayout, contexts []int, prefix string) error {
	for _, l := range layouts {
		for _, L := range contexts {
			p := sim.Point{Series: prefix + l.name, X: float64(L), Y: c.itl(l, L), Extra: map[string]float64{
				"slope": c.slope(l), "kv_ms": c.itl(l, L) - c.base() - c.overheadOf(l),
			}}
			if err := run.Emit(p); err != nil {
				return err
			}
		}
	}
	if !c.hasPub {
		return nil
	}
	for _, f := range []struct {
		name      string
		t0, slope float64
	}{
		{"bf16 published fit", c.pub.t0BF16, c.pub.slopeBF16},
		{"fp8 published fit", c.pub.t0FP8, c.pub.slopeFP8},
	} {
		if f.t0 == 0 || f.slope == 0 || c.batch != 1 {
			continue // the fits are single-request
		}
		for _, L := range contexts {
			if err := run.Emit(sim.Point{Series: prefix + f.name, X: float64(L), Y: f.t0 + f.slope*float64(L)}); err != nil {
				return err
			}
		}
	}
	return nil
}
