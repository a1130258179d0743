package experiments

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/fp8lab/fp8lab/experiments/costdata"
	"github.com/fp8lab/fp8lab/presets"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(Throughput{}) }

// Throughput is the `throughput` experiment: a serving schedule simulated
// step by step on the measured kernel costs (costmodel.go), BF16 against
// FP8 KV caches, under the load of the write-up's benchmark (150 requests
// at concurrency 8 of about 20k input and 2k output tokens,
// fp8-attention.md §1.1, §4.5).
type Throughput struct{}

// Name returns "throughput".
func (Throughput) Name() string { return "throughput" }

// Doc describes the experiment.
func (Throughput) Doc() string {
	return `Serving under load from measured kernel costs: output throughput and runtime of BF16 against FP8 KV caches, and how the gain moves with concurrency and input length.

A discrete-time schedule of vLLM's kind, every step priced by the measured
H200 kernel costs of experiments/costdata (scaled to the GPU by datasheet
ratios, as in itl): requests lengths input ± spread and output ± spread
(uniform, from the seed; the same requests for every format); a client
that keeps concurrency requests in flight (vllm bench serve
--max-concurrency); continuous batching: every step decodes one token of
each running sequence whose prompt is in, and fills the rest of a token
budget (token-budget, default 8192: vLLM V1's max_num_batched_tokens for
the API server on GPUs of 70 GiB or more, from vLLM's arg_utils, not
verified here) with prompt chunks, first come first served (chunked
prefill). The step that finishes a prompt samples its first token. KV
capacity: gpu-mem-util · GPU memory − the model's weights, at the
format's bytes per token (sliding layers hold at most their window); a
request is admitted when its whole input + output fits (vLLM allocates as
it goes and preempts; this model waits instead) and otherwise waits.

A step costs: the GEMMs at the step's tokens (the LM head at its sampled
tokens), decode attention at the running sequences' mean context, prefill
attention of each chunk (its query-key pairs at the measured rate), the
cache writes and FP8 query quantization of the step's tokens, the
unmeasured kernels' launches. Not modelled: vLLM's per-step CPU work
(scheduling, sampling, detokenizing), preemption, prefix caching.

Output: per format the output throughput (output tokens / runtime),
runtime and median ITL (the median step time over decode tokens), the
gains of FP8 and (models with sliding layers) FP8 skip-SW over BF16 in %,
beside the published load tests (blog Tables 4 and 5: Llama-3.1-8B
+14.9 % throughput, −13.0 % runtime; gpt-oss-20b skip-SW +4.8 %, FP8
+2.6 %). Series: the gains against the varied quantity (vary
concurrency: over concurrencies; vary input: over inputs, the mean input
length), one point per sweep value as it finishes; extras: both
throughputs, runtimes, median ITLs and the most sequences running.`
}

// throughputModels are the models the serving model has weights for.
func throughputModels() []string {
	var ids []string
	for _, s := range costModelSpecs {
		if s.weightsKnown {
			ids = append(ids, s.model)
		}
	}
	return ids
}

// Params returns the parameter schema.
func (Throughput) Params() []sim.Param {
	return []sim.Param{
		{Name: "gpu", Doc: "GPU preset", Kind: sim.KindChoice, Default: "h100-sxm", Choices: presets.GPUIDs()},
		{Name: "model", Doc: "model preset (with modelled weights)", Kind: sim.KindChoice, Default: "llama-3.1-8b", Choices: throughputModels()},
		itlFP8ScalesParam,
		{Name: "requests", Doc: "requests of the benchmark (the write-up: 150)", Kind: sim.KindInt, Default: 150, Min: 1, Max: 100000},
		{Name: "concurrency", Doc: "requests in flight (the write-up: 8)", Kind: sim.KindInt, Default: 8, Min: 1, Max: 4096},
		{Name: "input", Doc: "mean input length (the write-up: about 20k)", Unit: "tokens", Kind: sim.KindInt, Default: 20000, Min: 1, Max: 1 << 20},
		{Name: "output", Doc: "mean output length (the write-up: about 2k)", Unit: "tokens", Kind: sim.KindInt, Default: 2000, Min: 1, Max: 1 << 20},
		{Name: "spread", Doc: "half-width of the uniform spread of both lengths (the write-up: ±15 %)", Kind: sim.KindFloat, Default: 0.15, Min: 0, Max: 0.99},
		{Name: "token-budget", Doc: "tokens per step (max_num_batched_tokens)", Unit: "tokens", Kind: sim.KindInt, Default: 8192, Min: 1, Max: 1 << 20},
		{Name: "gpu-mem-util", Doc: "fraction of GPU memory for weights and KV cache (vLLM's default 0.9)", Kind: sim.KindFloat, Default: 0.9, Min: 0.05, Max: 1},
		{Name: "vary", Doc: "the swept quantity: concurrency (over concurrencies), input (over inputs) or none", Kind: sim.KindChoice, Default: "concurrency", Choices: []string{"concurrency", "input", "none"}},
		{Name: "concurrencies", Doc: "the concurrencies of the sweep (vary concurrency)", Kind: sim.KindInts, Default: []int{1, 2, 4, 8, 16, 32, 64}, Min: 1, Max: 4096},
		{Name: "inputs", Doc: "the mean input lengths of the sweep (vary input)", Unit: "tokens", Kind: sim.KindInts, Default: []int{2000, 5000, 10000, 20000, 50000, 100000}, Min: 1, Max: 1 << 20},
	}
}

// throughputPublished is a published load test (fp8-attention.md §4.5, blog
// Tables 4 and 5): output throughput in tok/s and median ITL in ms per
// format, on an H100 at concurrency 8, ~20k input, ~2k output, 150
// requests.
type throughputPublished struct {
	model       string
	tokS, itlMS map[string]float64
	source      string
}

var throughputPublishedTable = []throughputPublished{
	{model: "llama-3.1-8b", tokS: map[string]float64{"bf16": 450.3, "fp8": 517.5}, itlMS: map[string]float64{"bf16": 15.18, "fp8": 12.93},
		source: "blog Table 4 (fp8-attention.md §4.5): H100, concurrency 8, 150 requests, 20k ± 15 % in, 2k ± 15 % out"},
	{model: "gpt-oss-20b", tokS: map[string]float64{"bf16": 831.6, "fp8": 853.0, "fp8 skip-sw": 871.8}, itlMS: map[string]float64{"bf16": 8.09, "fp8": 7.90, "fp8 skip-sw": 7.70},
		source: "blog Table 5 (fp8-attention.md §4.5): H100, same load"},
}

// throughputLoad is one simulated benchmark's settings.
type throughputLoad struct {
	requests, concurrency, input, output, budget int
	spread, memUtil                              float64
	seed                                         uint64
}

// throughputResult is one format's simulated benchmark.
type throughputResult struct {
	runtimeS, tokS, medianITL float64
	outTokens, steps          int
	maxRunning                int // most sequences running at once
	capacityTokens            float64
}

// throughputLengths draws the requests' input and output lengths.
func throughputLengths(l throughputLoad) (in, out []int) {
	rng := rand.New(rand.NewPCG(l.seed, 0x7468726f))
	draw := func(mean int) int {
		return max(1, int(math.Round(float64(mean)*(1+l.spread*(2*rng.Float64()-1)))))
	}
	in, out = make([]int, l.requests), make([]int, l.requests)
	for i := range in {
		in[i], out[i] = draw(l.input), draw(l.output)
	}
	return in, out
}

// throughputSeq is a request in the server.
type throughputSeq struct {
	in, out   int // lengths
	done, gen int // prompt tokens in the cache, tokens generated
	bytes     float64
}

// throughputSimulate runs the schedule of one format. It returns ctx.Err()
// when cancelled.
func throughputSimulate(ctx context.Context, c *costModel, f costFormat, l throughputLoad, ins, outs []int, gpuMem float64) (throughputResult, error) {
	var res throughputResult
	full, sliding, window := c.costKVBytesPerToken(f)
	capacity := l.memUtil*gpuMem - c.spec.weightBytes - c.costKVScaleBytes(f)
	if capacity <= 0 {
		return res, fmt.Errorf("%s's weights (%.3g GB) leave no KV cache in %.3g of %.3g GB", c.preset.Name, c.spec.weightBytes/1e9, l.memUtil, gpuMem/1e9)
	}
	res.capacityTokens = capacity / (full + sliding)
	need := func(i int) float64 {
		n := float64(ins[i] + outs[i])
		return n*full + min(n, float64(window))*sliding
	}
	for i := range ins {
		if need(i) > capacity {
			return res, fmt.Errorf("request %d (%d + %d tokens) needs %.3g GB of KV cache, more than the %.3g GB left", i, ins[i], outs[i], need(i)/1e9, capacity/1e9)
		}
	}
	next, inFlight := 0, 0 // next request the client sends; requests sent, not finished
	var waiting, running []*throughputSeq
	used, clock := 0.0, 0.0
	var itls []float64 // step time of every decode token
	chunks := make([]costChunk, 0, 16)
	for steps := 0; ; steps++ {
		if steps%1024 == 0 && ctx.Err() != nil {
			return res, ctx.Err()
		}
		for inFlight < l.concurrency && next < len(ins) {
			waiting = append(waiting, &throughputSeq{in: ins[next], out: outs[next], bytes: need(next)})
			next, inFlight = next+1, inFlight+1
		}
		for len(waiting) > 0 && used+waiting[0].bytes <= capacity {
			used += waiting[0].bytes
			running, waiting = append(running, waiting[0]), waiting[1:]
		}
		if len(running) == 0 {
			break
		}
		res.maxRunning = max(res.maxRunning, len(running))
		// Decode tokens first, then prompt chunks in arrival order.
		decode, ctxSum := 0, 0.0
		for _, s := range running {
			if s.done == s.in {
				decode++
				ctxSum += float64(s.in + s.gen)
			}
		}
		budget := max(l.budget-decode, 0)
		chunks = chunks[:0]
		sampled := decode
		var chunked []*throughputSeq
		for _, s := range running {
			if s.done < s.in && budget > 0 {
				t := min(s.in-s.done, budget)
				chunks = append(chunks, costChunk{done: s.done, tokens: t})
				chunked = append(chunked, s)
				budget -= t
				if s.done+t == s.in {
					sampled++
				}
			}
		}
		m := l.budget - budget
		if decode > l.budget {
			m = decode // more running sequences than the budget: every one decodes
		}
		var p costParts
		if err := c.fixedMS(f, m, sampled, &p); err != nil {
			return res, err
		}
		if decode > 0 {
			p.Attention = c.decodeMS(f, decode, ctxSum/float64(decode))
		}
		p.Prefill = c.prefillMS(f, chunks)
		dt := p.Total()
		clock += dt
		// Advance the sequences.
		for _, s := range running {
			if s.done == s.in {
				s.gen++
				res.outTokens++
				itls = append(itls, dt)
			}
		}
		for i, s := range chunked {
			s.done += chunks[i].tokens
			if s.done == s.in {
				s.gen++ // the step that finishes the prompt samples the first token
				res.outTokens++
			}
		}
		kept := running[:0]
		for _, s := range running {
			if s.gen >= s.out {
				used -= s.bytes
				inFlight--
				continue
			}
			kept = append(kept, s)
		}
		running = kept
		res.steps = steps + 1
	}
	res.runtimeS = clock / 1e3
	res.tokS = float64(res.outTokens) / res.runtimeS
	if len(itls) > 0 {
		slices.Sort(itls)
		res.medianITL = itls[len(itls)/2]
	}
	return res, nil
}

// throughputFormats returns the formats of a model: bf16, fp8 and, with
// sliding layers, fp8 skip-sw.
func throughputFormats(m presets.Model, fp8Kind string) []costFormat {
	bf, all, skip := costFormats(fp8Kind)
	if m.HasSlidingWindow() {
		return []costFormat{bf, all, skip}
	}
	return []costFormat{bf, all}
}

// throughputRunAll simulates every format under one load.
func throughputRunAll(ctx context.Context, c *costModel, forms []costFormat, l throughputLoad, gpuMem float64) (map[string]throughputResult, error) {
	ins, outs := throughputLengths(l)
	res := map[string]throughputResult{}
	for _, f := range forms {
		r, err := throughputSimulate(ctx, c, f, l, ins, outs, gpuMem)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		res[f.name] = r
	}
	return res, nil
}

// Run runs the experiment.
func (Throughput) Run(ctx context.Context, run *sim.Run) error {
	v := run.Values
	file, err := measuredCosts()
	if errors.Is(err, costdata.ErrNoMeasuredCosts) {
		return itlNoMeasuredCosts(run, "throughput", err)
	}
	if err != nil {
		return err
	}
	g, err := presets.LookupGPU(v.String("gpu"))
	if err != nil {
		return err
	}
	fp8Kind := costdata.KVFP8Tensor
	if v.String("fp8-scales") == "head" {
		fp8Kind = costdata.KVFP8Head
	}
	kvs := []string{costdata.KVBF16, fp8Kind}
	c, err := newCostModel(file, v.String("model"), g, kvs)
	if err != nil {
		return err
	}
	if err := c.loadPrefill(kvs); err != nil {
		return err
	}
	forms := throughputFormats(c.preset, fp8Kind)
	load := throughputLoad{requests: v.Int("requests"), concurrency: v.Int("concurrency"), input: v.Int("input"), output: v.Int("output"),
		budget: v.Int("token-budget"), spread: v.Float("spread"), memUtil: v.Float("gpu-mem-util"), seed: run.Seed}
	sweep := throughputSweep(v)
	run.AddTotal(int64(1 + len(sweep)))

	base, err := throughputRunAll(ctx, c, forms, load, g.Memory)
	if err != nil {
		return err
	}
	run.Advance(1)
	summary := map[string]float64{"measured_costs": 1}
	b := base["bf16"]
	for _, f := range forms {
		r := base[f.name]
		k := throughputKey(f.name)
		summary["tok_s_"+k] = r.tokS
		summary["runtime_s_"+k] = r.runtimeS
		summary["median_itl_ms_"+k] = r.medianITL
		summary["output_tokens_"+k] = float64(r.outTokens)
		summary["capacity_tokens_"+k] = r.capacityTokens
		summary["max_running_"+k] = float64(r.maxRunning)
		if f.name != "bf16" {
			summary["gain_pct_"+k] = (r.tokS/b.tokS - 1) * 100
			summary["runtime_change_pct_"+k] = (r.runtimeS/b.runtimeS - 1) * 100
		}
	}
	for _, p := range throughputPublishedTable {
		if p.model != c.preset.ID || g.ID != "h100-sxm" {
			continue
		}
		for _, f := range forms {
			k := throughputKey(f.name)
			if f.name != "bf16" {
				pub := (p.tokS[f.name]/p.tokS["bf16"] - 1) * 100
				summary["gain_pct_"+k+"_published"] = pub
				summary["gain_pct_"+k+"_diff_points"] = summary["gain_pct_"+k] - pub
				// Total runtime at equal output: the inverse of throughput.
				pubRT := (p.tokS["bf16"]/p.tokS[f.name] - 1) * 100
				summary["runtime_change_pct_"+k+"_published"] = pubRT
				summary["runtime_change_pct_"+k+"_diff_points"] = summary["runtime_change_pct_"+k] - pubRT
			}
			summary["tok_s_"+k+"_published"] = p.tokS[f.name]
			summary["median_itl_ms_"+k+"_published"] = p.itlMS[f.name]
		}
		run.Note("throughput: published: " + p.source)
	}
	run.Note(fmt.Sprintf("throughput: %s on %s (%s), %d requests at concurrency %d, input %d and output %d tokens ± %.0f %%, token budget %d, KV capacity %.3g tokens BF16 (%.3g GB)",
		c.preset.Name, g.Name, c.scale, load.requests, load.concurrency, load.input, load.output, 100*load.spread, load.budget, b.capacityTokens,
		(load.memUtil*g.Memory-c.spec.weightBytes)/1e9))
	for _, f := range forms {
		r := base[f.name]
		run.Note(fmt.Sprintf("throughput: %-12s %8.1f tok/s, runtime %8.1f s, median ITL %6.2f ms, %d output tokens in %d steps, at most %d running",
			f.name, r.tokS, r.runtimeS, r.medianITL, r.outTokens, r.steps, r.maxRunning))
	}
	if costsNotMeasured(file) {
		run.Note("throughput: THE COST FILE IS NOT A MEASUREMENT (" + file.Provenance.GPU + "): these numbers test the model, they predict nothing")
	}
	run.Note("throughput: kernel costs measured on the " + file.Provenance.String() + "; " + c.spec.source)
	if n := c.slidingNote(); n != "" {
		run.Note("throughput: " + n)
	}
	if err := c.fileNotes(run); err != nil {
		return err
	}

	vary := v.String("vary")
	for _, x := range sweep {
		l := load
		if vary == "concurrency" {
			l.concurrency = x
		} else {
			l.input = x
		}
		res, err := throughputRunAll(ctx, c, forms, l, g.Memory)
		if err != nil {
			run.Note(fmt.Sprintf("throughput: %s %d: %v", vary, x, err))
			run.Advance(1)
			continue
		}
		bb := res["bf16"]
		for _, f := range forms[1:] {
			r := res[f.name]
			extra := map[string]float64{
				"concurrency": float64(l.concurrency), "input_tokens": float64(l.input),
				"tok_s": r.tokS, "tok_s_bf16": bb.tokS, "runtime_s": r.runtimeS, "runtime_s_bf16": bb.runtimeS,
				"runtime_change_pct": (r.runtimeS/bb.runtimeS - 1) * 100, "median_itl_ms": r.medianITL, "median_itl_ms_bf16": bb.medianITL,
				"max_running": float64(r.maxRunning), "max_running_bf16": float64(bb.maxRunning),
			}
			if err := run.Emit(sim.Point{Series: f.name + " throughput gain", X: float64(x), Y: (r.tokS/bb.tokS - 1) * 100, Extra: extra}); err != nil {
				return err
			}
		}
		run.Advance(1)
	}
	run.Summary(summary)
	return nil
}

// fileNotes notes the prefill shapes the model borrowed, in a fixed order.
func (c *costModel) fileNotes(run *sim.Run) error {
	noted := map[string]bool{}
	for _, impl := range slices.Sorted(maps.Keys(c.prefill)) {
		m := c.prefill[impl]
		for _, g := range c.spec.attn {
			s, pf := g.shape, m[g.shape]
			if s != pf.from && !noted[impl+s.String()] {
				noted[impl+s.String()] = true
				run.Note(fmt.Sprintf("throughput: prefill %s of %s is not measured: the measured %s, its growing part × %.3g (FLOPs q_heads · head_dim, and the GPU)", impl, s, pf.from, pf.factor))
			}
		}
	}
	return nil
}

// throughputSweep returns the values of the swept quantity.
func throughputSweep(v sim.Values) []int {
	switch v.String("vary") {
	case "concurrency":
		return v.Ints("concurrencies")
	case "input":
		return v.Ints("inputs")
	}
	return nil
}

// throughputKey is a format's summary-key suffix.
func throughputKey(format string) string {
	switch format {
	case "fp8 skip-sw":
		return "fp8_skip_sw"
	}
	return format
}

// Cost estimates the run: a step per output token over the concurrency
// plus the prompt chunks, about 2 µs each, per format and sweep value.
func (Throughput) Cost(v sim.Values) sim.Cost {
	steps := func(conc, input int) int64 {
		r := int64(v.Int("requests"))
		perReq := int64(v.Int("output")) + int64(input)/int64(v.Int("token-budget")) + 1
		return sim.MulSat(r, perReq) / int64(max(1, min(conc, 64)))
	}
	total := steps(v.Int("concurrency"), v.Int("input"))
	for _, x := range throughputSweep(v) {
		if v.String("vary") == "concurrency" {
			total = sim.AddSat(total, steps(x, v.Int("input")))
		} else {
			total = sim.AddSat(total, steps(v.Int("concurrency"), x))
		}
	}
	return sim.Cost{Memory: sim.AddSat(costBase, sim.MulSat(int64(v.Int("requests")), 64)), Work: sim.MulSat(total, 3, 3000)}
}

// Chart declares throughput's chart: the gains against the swept quantity,
// the published load tests as marks at concurrency 8.
func (Throughput) Chart() sim.Chart {
	pct := func(q string) sim.Axis { return sim.Axis{Quantity: q, Unit: "%"} }
	return sim.Chart{
		X: sim.Axis{Quantity: "the swept quantity (vary): concurrency in requests, or mean input length in tokens", Unit: "requests or tokens", Log: true, Base: 2},
		Y: pct("output-throughput gain over BF16"),
		Styles: []sim.Style{
			{Match: "fp8 throughput gain", Family: "fp8", Variant: "predicted"},
			{Match: "fp8 skip-sw throughput gain", Family: "fp8 skip-sw", Variant: "predicted"},
		},
		Fields: []sim.Field{
			{Key: "concurrency", Axis: sim.Axis{Quantity: "requests in flight", Unit: "requests", Log: true, Base: 2}},
			{Key: "input_tokens", Axis: sim.Axis{Quantity: "mean input length", Unit: "tokens", Log: true, Base: 2}},
			{Key: "tok_s", Axis: sim.Axis{Quantity: "output throughput of the format", Unit: "tokens/s"}},
			{Key: "tok_s_bf16", Axis: sim.Axis{Quantity: "output throughput of BF16", Unit: "tokens/s"}},
			{Key: "runtime_s", Axis: sim.Axis{Quantity: "total runtime of the format", Unit: "s"}},
			{Key: "runtime_s_bf16", Axis: sim.Axis{Quantity: "total runtime of BF16", Unit: "s"}},
			{Key: "runtime_change_pct", Axis: pct("total-runtime change over BF16")},
			{Key: "median_itl_ms", Axis: sim.Axis{Quantity: "median inter-token latency of the format", Unit: "ms"}},
			{Key: "median_itl_ms_bf16", Axis: sim.Axis{Quantity: "median inter-token latency of BF16", Unit: "ms"}},
			{Key: "max_running", Axis: sim.Axis{Quantity: "most sequences running at once (format)", Unit: "sequences"}},
			{Key: "max_running_bf16", Axis: sim.Axis{Quantity: "most sequences running at once (BF16)", Unit: "sequences"}},
		},
		Summary: []sim.SummaryField{
			{Match: "*_diff_points", Axis: pct("predicted minus published (percentage points)")},
			{Match: "gain_pct_*", Axis: pct("output-throughput gain over BF16")},
			{Match: "runtime_change_pct_*", Axis: pct("total-runtime change over BF16")},
			{Match: "tok_s_*", Axis: sim.Axis{Quantity: "output throughput", Unit: "tokens/s"}},
			{Match: "runtime_s_*", Axis: sim.Axis{Quantity: "total runtime", Unit: "s"}},
			{Match: "median_itl_ms_*", Axis: sim.Axis{Quantity: "median inter-token latency", Unit: "ms"}},
			{Match: "output_tokens_*", Axis: sim.Axis{Quantity: "output tokens generated", Unit: "tokens"}},
			{Match: "capacity_tokens_*", Axis: sim.Axis{Quantity: "KV-cache capacity (full-attention tokens)", Unit: "tokens"}},
			{Match: "max_running_*", Axis: sim.Axis{Quantity: "most sequences running at once", Unit: "sequences"}},
			{Match: "measured_costs", Axis: sim.Axis{Quantity: "measured kernel costs in this build", Unit: "1 yes, 0 no"}},
		},
		Show: []string{"gain_pct_fp8", "gain_pct_fp8_published", "runtime_change_pct_fp8", "runtime_change_pct_fp8_published", "gain_pct_fp8_skip_sw", "gain_pct_fp8_skip_sw_published"},
		Refs: []sim.Ref{{Axis: "y", Value: 0, Label: "no gain"}},
		Marks: []sim.Mark{
			{Series: "fp8 throughput gain", X: 8, Y: (517.5/450.3 - 1) * 100, Label: "published: Llama-3.1-8B, H100, concurrency 8, ~20k in (blog Table 4)"},
			{Series: "fp8 throughput gain", X: 8, Y: (853.0/831.6 - 1) * 100, Label: "published: gpt-oss-20b FP8, H100, concurrency 8 (blog Table 5)"},
			{Series: "fp8 skip-sw throughput gain", X: 8, Y: (871.8/831.6 - 1) * 100, Label: "published: gpt-oss-20b skip-SW, H100, concurrency 8 (blog Table 5)"},
			{Series: "fp8 throughput gain", X: 8, Y: (450.3/517.5 - 1) * 100, Label: "published: Llama-3.1-8B runtime, H100, concurrency 8 (blog Table 4)", Field: "runtime_change_pct"},
		},
	}
}
