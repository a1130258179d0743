package experiments

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/fp8lab/fp8lab/experiments/costdata"
	"github.com/fp8lab/fp8lab/presets"
	"github.com/fp8lab/fp8lab/sim"
)

// The measured-cost mode of itl and skip-sw (costs = measured, the
// default): ITL(L) is the step time of costmodel.go at context L, the
// slopes and intercepts are least-squares lines through ITL at the
// contexts parameter (default the published benchmark's 256 → 125k, the
// write-up's method, fp8-attention.md §4.6), and the break-even is
// Δintercept / Δslope of those lines. The bandwidth mode (costs =
// bandwidth) is the first-principles model of itl.go.

// itlCostsChoices are the values of the costs parameter.
var itlCostsChoices = []string{"measured", "bandwidth"}

// itlCostsParam is the parameter that picks the cost model.
var itlCostsParam = sim.Param{Name: "costs", Doc: "cost model: measured (the H200 kernel costs of experiments/costdata, scaled by datasheet ratios) or bandwidth (bytes over η · bandwidth, the efficiency parameters)",
	Kind: sim.KindChoice, Default: "measured", Choices: itlCostsChoices}

// itlFP8ScalesParam picks the FP8 rows: per-tensor or per-head scales.
var itlFP8ScalesParam = sim.Param{Name: "fp8-scales", Doc: "FP8 scale granularity of the measured rows: tensor (vLLM's default) or head (measured costs only)",
	Kind: sim.KindChoice, Default: "tensor", Choices: []string{"tensor", "head"}}

// itlMeasuredFit is the measured-cost model's lines for one GPU and model.
type itlMeasuredFit struct {
	gpu            presets.GPU
	model          *costModel
	bf16, fp8, sw  costLine // sw: fp8 skip-sw (zero without sliding layers)
	hasSW          bool
	beFP8, beSkip  float64
	pub            itlPublished
	hasPub         bool
	curves         map[string][]float64 // format name → ITL at the contexts
	attn           map[string][]float64 // format name → decode attention ms
	parts0         map[string]costParts // at the first context
	contexts       []int
	fp8Kind, scale string
}

// itlMeasuredFitFor computes the lines of one GPU and model.
func itlMeasuredFitFor(f *costdata.File, gpuID, modelID, fp8Kind string, batch int, contexts []int) (*itlMeasuredFit, error) {
	g, err := presets.LookupGPU(gpuID)
	if err != nil {
		return nil, err
	}
	c, err := newCostModel(f, modelID, g, []string{costdata.KVBF16, fp8Kind})
	if err != nil {
		return nil, err
	}
	r := &itlMeasuredFit{gpu: g, model: c, contexts: contexts, fp8Kind: fp8Kind, scale: c.scale.String(),
		curves: map[string][]float64{}, attn: map[string][]float64{}, parts0: map[string]costParts{}}
	r.pub, r.hasPub = itlPublishedFor(gpuID, modelID)
	r.hasSW = c.preset.HasSlidingWindow()
	bf, all, skip := costFormats(fp8Kind)
	forms := []costFormat{bf, all}
	if r.hasSW {
		forms = append(forms, skip)
	}
	xs := make([]float64, len(contexts))
	for i, L := range contexts {
		xs[i] = float64(L)
	}
	for _, fm := range forms {
		ys := make([]float64, len(contexts))
		for i, L := range contexts {
			p, err := c.Step(fm, batch, L)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				r.parts0[fm.name] = p
			}
			ys[i] = p.Total()
			r.attn[fm.name] = append(r.attn[fm.name], p.Attention)
		}
		r.curves[fm.name] = ys
		line, err := fitLine(xs, ys)
		if err != nil {
			return nil, fmt.Errorf(`parameter "contexts": %w`, err)
		}
		switch fm.name {
		case "bf16":
			r.bf16 = line
		case "fp8":
			r.fp8 = line
		default:
			r.sw = line
		}
	}
	r.beFP8 = breakEvenOf(r.bf16, r.fp8)
	if r.hasSW {
		r.beSkip = breakEvenOf(r.bf16, r.sw)
	}
	return r, nil
}

// itlMeasuredRow is one predicted-against-published line.
type itlMeasuredRow struct {
	key, what, unit string
	pred, pub       float64
	why             string // the reason of a miss the model knows of; empty
}

// rows returns the comparisons with the published figures.
func (r *itlMeasuredFit) rows() []itlMeasuredRow {
	if !r.hasPub {
		return nil
	}
	p := r.pub
	var out []itlMeasuredRow
	add := func(key, what, unit string, pred, pub float64, why string) {
		if pub != 0 {
			out = append(out, itlMeasuredRow{key, what, unit, pred, pub, why})
		}
	}
	kernel := "our Triton split-KV kernel stands for vLLM's FA3/FlashInfer"
	add("slope_bf16", "BF16 slope", "ms/token", r.bf16.Slope, p.slopeBF16, kernel)
	add("slope_fp8", "FP8 slope", "ms/token", r.fp8.Slope, p.slopeFP8, kernel)
	add("slope_ratio", "FP8/BF16 slope ratio", "ratio", r.fp8.Slope/r.bf16.Slope, p.slopeFP8/p.slopeBF16, kernel)
	add("break_even", "FP8 break-even", "tokens", r.beFP8, p.breakEven, "the FP8 fixed cost is the measured q_quant + kv_write + decode intercept difference; vLLM fuses q_quant (#24914)")
	if r.hasSW {
		add("slope_skip", "FP8 skip-SW slope", "ms/token", r.sw.Slope, p.slopeSkip, kernel)
		if p.slopeSkip != 0 {
			add("slope_ratio_skip", "skip-SW/BF16 slope ratio", "ratio", r.sw.Slope/r.bf16.Slope, p.slopeSkip/p.slopeBF16, kernel)
		}
		add("break_even_skip", "skip-SW break-even", "tokens", r.beSkip, p.breakEvenSkip, "")
	}
	if r.model.spec.weightsKnown {
		add("itl0_bf16", "BF16 intercept", "ms", r.bf16.Intercept, p.t0BF16, "vLLM's per-step CPU work (scheduler, sampling, Python) is not in the kernel costs")
	}
	return out
}

// itlMeasuredSources says where every input of the table comes from.
func itlMeasuredSources(f *costdata.File, fits []*itlMeasuredFit) []string {
	lines := []string{
		"inputs: decode attention, KV write, query quantization, bf16 GEMMs, stream bandwidth and the graph launch cost MEASURED on the " +
			f.Provenance.String() + " (" + f.Name + "; method: " + f.Provenance.Method + ")",
		"inputs: scaling to other GPUs by DATASHEET ratios (presets.GPUs): bandwidth-bound parts by bandwidth, compute-bound by dense BF16 FLOP/s, fixed parts equal (H100 SXM: the H200's SMs and clocks; B200: assumed)",
		"inputs: layers, heads, head dims, windows, KV sharing and GEMM shapes from the MODEL CARDS (fp8-attention.md §4.1); nothing fitted to a published slope, intercept or break-even",
		"inputs: the interpolation of decode(L) is piecewise-linear in L (a kernel's time is affine in the bytes it reads; a log-log interpolation would bend that line), the line through the last two measured contexts beyond them",
	}
	seen := map[string]bool{}
	for _, r := range fits {
		if !seen[r.model.spec.model] {
			seen[r.model.spec.model] = true
			lines = append(lines, "model "+r.model.preset.Name+": "+r.model.spec.source)
		}
	}
	for _, r := range fits {
		if r.gpu.ID != "h200" && !seen[r.gpu.ID] {
			seen[r.gpu.ID] = true
			lines = append(lines, "scaling: "+r.scale)
		}
	}
	return lines
}

// itlMeasuredTable formats the predicted-against-published table.
func itlMeasuredTable(fits []*itlMeasuredFit) []string {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "GPU\tmodel\tquantity\tpredicted\tpublished\tdiff\tunit\twithin 10%%\tknown reason of a miss\t\n")
	for _, r := range fits {
		for _, row := range r.rows() {
			d := (row.pred - row.pub) / row.pub * 100
			ok := "yes"
			why := ""
			if math.Abs(d) > 10 || math.IsNaN(d) {
				ok, why = "NO", row.why
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%.4g\t%.4g\t%+.1f%%\t%s\t%s\t%s\t\n", r.gpu.Name, r.model.preset.Name, row.what, row.pred, row.pub, d, row.unit, ok, why)
		}
	}
	w.Flush()
	return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
}

// itlNoMeasuredCosts reports a build without measured costs: a note and
// measured_costs = 0, no points and no numbers.
func itlNoMeasuredCosts(run *sim.Run, name string, err error) error {
	if !errors.Is(err, costdata.ErrNoMeasuredCosts) {
		return err
	}
	run.Note(name + ": " + err.Error() + "; nothing is predicted (run with -costs bandwidth for the first-principles model)")
	run.Summary(map[string]float64{"measured_costs": 0})
	return nil
}

// itlMeasuredRun is the measured-cost part of itl and skip-sw: it emits the
// ITL curves of the chosen GPU and model (series prefixed by prefix), the
// measured H200 attention points, and the table over the published GPUs and
// models (models: nil for every published one), and returns the summary.
// ok is false when the build has no measured costs (a note said so).
func itlMeasuredRun(run *sim.Run, name, prefix string, models []string) (summary map[string]float64, ok bool, err error) {
	v := run.Values
	f, err := measuredCosts()
	if err != nil {
		return nil, false, itlNoMeasuredCosts(run, name, err)
	}
	fp8Kind := costdata.KVFP8Tensor
	if v.String("fp8-scales") == "head" {
		fp8Kind = costdata.KVFP8Head
	}
	batch, contexts := v.Int("batch"), v.Ints("contexts")
	if len(contexts) < 2 {
		return nil, false, errors.New(`parameter "contexts": the slope needs at least two contexts`)
	}
	r, err := itlMeasuredFitFor(f, v.String("gpu"), v.String("model"), fp8Kind, batch, contexts)
	if err != nil {
		return nil, false, err
	}
	for _, fm := range []string{"bf16", "fp8", "fp8 skip-sw"} {
		ys, has := r.curves[fm]
		if !has {
			continue
		}
		line := map[string]costLine{"bf16": r.bf16, "fp8": r.fp8, "fp8 skip-sw": r.sw}[fm]
		for i, L := range contexts {
			if err := run.Emit(sim.Point{Series: prefix + fm, X: float64(L), Y: ys[i], Extra: map[string]float64{"slope": line.Slope, "kv_ms": r.attn[fm][i]}}); err != nil {
				return nil, false, err
			}
		}
	}
	if err := itlEmitPublishedFits(run, r, contexts, prefix); err != nil {
		return nil, false, err
	}
	if err := itlEmitMeasuredAttention(run, f, r, batch, fp8Kind, prefix); err != nil {
		return nil, false, err
	}
	p0 := r.parts0["bf16"]
	summary = map[string]float64{
		"measured_costs":  1,
		"slope_bf16":      r.bf16.Slope,
		"slope_fp8":       r.fp8.Slope,
		"slope_ratio":     r.fp8.Slope / r.bf16.Slope,
		"break_even":      r.beFP8,
		"itl0_bf16":       r.bf16.Intercept,
		"itl0_fp8":        r.fp8.Intercept,
		"fp8_overhead_ms": r.fp8.Intercept - r.bf16.Intercept,
		"bandwidth_tbs":   r.gpu.Bandwidth / presets.TB,
		"step_linear_ms":  p0.Linear, "step_stream_ms": p0.Stream, "step_launch_ms": p0.Launch,
		"step_kv_write_ms":        p0.KVWrite,
		"kv_bytes_per_token_bf16": r.model.preset.KVBytesPerToken(2),
		"kv_bytes_per_token_fp8":  r.model.preset.KVBytesPerToken(1),
	}
	if r.hasSW {
		summary["slope_skip"] = r.sw.Slope
		summary["slope_ratio_skip"] = r.sw.Slope / r.bf16.Slope
		summary["break_even_skip"] = r.beSkip
		summary["fp8_overhead_skip_ms"] = r.sw.Intercept - r.bf16.Intercept
	}
	for _, row := range r.rows() {
		summary[row.key+"_published"] = row.pub
		summary[row.key+"_diff_pct"] = (row.pred - row.pub) / row.pub * 100
	}
	run.Note(fmt.Sprintf("%s: measured costs (%s) for %s on %s at batch %d; FP8 rows %s; lines fitted by least squares over %d contexts %d → %d tokens",
		name, f.Provenance.GPU, r.model.preset.Name, r.gpu.Name, batch, fp8Kind, len(contexts), contexts[0], contexts[len(contexts)-1]))
	if n := r.model.slidingNote(); n != "" {
		run.Note(name + ": " + n)
	}
	run.Note(name + ": " + decodeImplNote(f, r.model.spec.attn, fp8Kind))
	if costsNotMeasured(f) {
		run.Note(name + ": THE COST FILE IS NOT A MEASUREMENT (" + f.Provenance.GPU + "): these numbers test the model, they predict nothing")
	}
	var fits []*itlMeasuredFit
	for _, p := range itlPublishedTable {
		if models != nil && !slices.Contains(models, p.model) {
			continue
		}
		pf, err := itlMeasuredFitFor(f, p.gpu, p.model, fp8Kind, 1, contexts)
		if err != nil {
			return nil, false, fmt.Errorf("%s on %s: %w", p.model, p.gpu, err)
		}
		fits = append(fits, pf)
		for _, row := range pf.rows() {
			k := fmt.Sprintf("table.%s.%s.%s", p.gpu, p.model, row.key)
			summary[k] = row.pred
			summary[k+"_published"] = row.pub
			summary[k+"_diff_pct"] = (row.pred - row.pub) / row.pub * 100
		}
	}
	if batch != 1 {
		run.Note(name + ": the table is at batch 1 (the published figures are single-request)")
	}
	run.Note(name + ": predicted (measured kernel costs; nothing published went in) against published:")
	for _, line := range itlMeasuredTable(fits) {
		run.Note(line)
	}
	for _, line := range itlMeasuredSources(f, append([]*itlMeasuredFit{r}, fits...)) {
		run.Note(name + ": " + line)
	}
	return summary, true, nil
}

// itlEmitPublishedFits emits the published single-request lines.
func itlEmitPublishedFits(run *sim.Run, r *itlMeasuredFit, contexts []int, prefix string) error {
	if !r.hasPub || run.Values.Int("batch") != 1 {
		return nil
	}
	for _, fl := range []struct {
		name      string
		t0, slope float64
	}{{"bf16 published fit", r.pub.t0BF16, r.pub.slopeBF16}, {"fp8 published fit", r.pub.t0FP8, r.pub.slopeFP8}} {
		if fl.t0 == 0 || fl.slope == 0 {
			continue
		}
		for _, L := range contexts {
			if err := run.Emit(sim.Point{Series: prefix + fl.name, X: float64(L), Y: fl.t0 + fl.slope*float64(L)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// itlMeasuredSeries is the prefix of the measured H200 attention series.
const itlMeasuredSeries = "h200 measured attention "

// itlEmitMeasuredAttention emits, at each measured context (no
// interpolation), the decode attention of a step summed over the model's
// layers from the H200's rows, unscaled, at the run's batch when measured.
func itlEmitMeasuredAttention(run *sim.Run, f *costdata.File, r *itlMeasuredFit, batch int, fp8Kind, prefix string) error {
	bf, all, skip := costFormats(fp8Kind)
	forms := []costFormat{bf, all}
	if r.hasSW {
		forms = append(forms, skip)
	}
	for _, fm := range forms {
		// The contexts every group has measured at this batch.
		perCtx := map[int]float64{}
		count := map[int]int{}
		for _, g := range r.model.spec.attn {
			impl := f.DecodeImpl(g.shape, fm.kvOf(g))
			for _, row := range f.Rows {
				if row.Op == "decode" && row.Impl == impl && row.KV == fm.kvOf(g) && row.Batch == batch &&
					(costdata.Shape{QHeads: row.QHeads, KVHeads: row.KVHeads, HeadDim: row.HeadDim}) == g.shape {
					L := row.Context
					if g.window > 0 {
						continue // a sliding layer's cost is at its window: added below
					}
					perCtx[L] += float64(g.layers) * row.US / 1e3
					count[L]++
				}
			}
		}
		full := 0
		for _, g := range r.model.spec.attn {
			if g.window == 0 {
				full++
			}
		}
		for _, L := range slices.Sorted(maps.Keys(perCtx)) {
			if count[L] != full {
				continue
			}
			// Sliding layers: their rows at L where measured, else the
			// full kernel at the window (unscaled, at this batch).
			sliding := 0.0
			for _, g := range r.model.spec.attn {
				if g.window == 0 {
					continue
				}
				impl := f.DecodeImpl(g.shape, fm.kvOf(g))
				us, err := f.Decode(g.shape, fm.kvOf(g), impl, batch, float64(g.window))
				if bs, cs, werr := f.DecodeWindowCurves(g.shape, fm.kvOf(g), impl, g.window); werr == nil {
					us, err = costdata.Interp2(bs, cs, float64(batch), float64(L)), nil
				}
				if err != nil {
					return err
				}
				sliding += float64(g.layers) * us / 1e3
			}
			if err := run.Emit(sim.Point{Series: prefix + itlMeasuredSeries + fm.name, X: float64(L), Y: perCtx[L] + sliding}); err != nil {
				return err
			}
		}
	}
	return nil
}

// presetOf returns the model preset of a validated choice.
func presetOf(id string) presets.Model {
	m, _ := presets.LookupModel(id)
	return m
}

// costsNotMeasured reports a cost file that does not name its GPU or says
// it is synthetic: its numbers must not be read as predictions.
func costsNotMeasured(f *costdata.File) bool {
	return f.Provenance.GPU == "" || strings.Contains(strings.ToLower(f.Provenance.GPU), "synthetic")
}

// itlMeasuredStyles are the styles of the measured H200 attention series.
func itlMeasuredStyles(prefix string) []sim.Style {
	return []sim.Style{
		{Match: prefix + itlMeasuredSeries + "bf16", Family: "bf16", Variant: "H200 attention, measured", Measured: true},
		{Match: prefix + itlMeasuredSeries + "fp8", Family: "fp8", Variant: "H200 attention, measured", Measured: true},
		{Match: prefix + itlMeasuredSeries + "fp8 skip-sw", Family: "fp8 skip-sw", Variant: "H200 attention, measured", Measured: true},
	}
}

// itlMeasuredSummaryFields are the units of the measured-cost summary
// values (before itlSummaryFields: the first match wins).
var itlMeasuredSummaryFields = []sim.SummaryField{
	{Match: "*_diff_pct", Axis: sim.Axis{Quantity: "model minus published, relative to published", Unit: "%"}},
	{Match: "measured_costs", Axis: sim.Axis{Quantity: "measured kernel costs in this build", Unit: "1 yes, 0 no"}},
	{Match: "step_*_ms", Axis: sim.Axis{Quantity: "context-independent part of a decode step, by term, at the first context", Unit: "ms"}},
	{Match: "table.*slope_ratio*", Axis: sim.Axis{Quantity: "ITL slope ratio (over bf16), table row", Unit: "ratio"}},
	{Match: "table.*slope*", Axis: sim.Axis{Quantity: "ITL slope against context, table row", Unit: "ms/token", Log: true}},
	{Match: "table.*break_even*", Axis: sim.Axis{Quantity: "break-even context of FP8 KV, table row", Unit: "tokens"}},
	{Match: "table.*itl0*", Axis: sim.Axis{Quantity: "ITL at zero context (intercept), table row", Unit: "ms"}},
}

// decodeImplNote says which measured decode kernel each attention shape of
// a model reads for the FP8 cache (costdata.File.DecodeImpl: the faster of
// the split-KV kernels measured at that shape), so that a reader sees when
// the FP8-wgmma and when the dequantizing kernel stands for production.
func decodeImplNote(f *costdata.File, groups []costAttnGroup, kv string) string {
	var parts []string
	seen := map[costdata.Shape]bool{}
	for _, g := range groups {
		if seen[g.shape] {
			continue
		}
		seen[g.shape] = true
		parts = append(parts, fmt.Sprintf("%s: %s", g.shape, f.DecodeImpl(g.shape, kv)))
	}
	return "FP8 decode kernel read per shape (the faster measured split-KV kernel at batch 1): " + strings.Join(parts, "; ") +
		"; BF16 reads " + costdata.ImplSplitKV
}
