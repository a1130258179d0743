package experiments

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/fp8lab/fp8lab/experiments/costdata"
	"github.com/fp8lab/fp8lab/presets"
)

// This file holds the measured-cost model of a decode or serving step
// (issue 20): a step's time is the sum of measured kernel times, looked up
// in the H200 kernel-cost file (package costdata) at the step's shapes and
// scaled to the GPU asked for by datasheet ratios. Nothing in it is fitted
// to a published ITL, slope, intercept or throughput.
//
//	step(kv, B, L) = Σ attention layers [decode(kv, B, min(L, window))]
//	              + Σ KV-writing layers [kv_write(kv, B)]
//	              + Σ FP8 layers [q_quant(B)]
//	              + Σ measured GEMMs linear(B) + weight bytes not measured as
//	                GEMMs / stream bandwidth + unmeasured kernels × launch.

// measuredCosts returns the embedded kernel costs (costdata.Embedded); the
// tests of this package replace it with a SYNTHETIC file when the build has
// no measured one (costs_synthetic_test.go).
var measuredCosts = costdata.Embedded

// costAttnGroup is a set of attention layers of one shape.
type costAttnGroup struct {
	layers   int
	shape    costdata.Shape
	window   int  // sliding window in tokens; 0: full attention
	writesKV bool // false: the layers read another layer's cache (gemma's KV sharing)
}

// costLinear is a GEMM of the step measured by the "linear" rows: [m × k] ·
// [k × n], count times per step.
type costLinear struct {
	name  string
	n, k  int
	count int
	// perSeq: the GEMM runs on one token per sequence that samples (the LM
	// head), not on every token of the step.
	perSeq bool
}

// costModelSpec is what a model's decode step runs, one row per model: a
// new model is a new row.
type costModelSpec struct {
	model   string // presets.Model ID
	attn    []costAttnGroup
	linears []costLinear
	// streamBytes and streamFLOPs are the weight bytes read and the FLOPs
	// of a step of m tokens, s of them sampled, outside the measured GEMMs
	// (MoE experts, an LM head of another shape): the slower of the bytes
	// at the measured stream bandwidth and the FLOPs at the measured GEMM
	// rate; nil: none.
	streamBytes, streamFLOPs func(m, s int) float64
	// kernels is the number of kernels per step that no row measures
	// (norms, rotary embedding, activations, router, sampling), each
	// costing one launch inside a CUDA graph; their own work is neglected.
	kernels int
	// weightsKnown is false when the step's weights are not modelled at all
	// (the intercept then lacks them; slopes and break-evens do not
	// depend on them).
	weightsKnown bool
	// weightBytes is the bytes of weights the model holds in GPU memory
	// (for the KV capacity of the serving model).
	weightBytes float64
	source      string
}

// gptOSSExpertBytes is one gpt-oss-20b expert (gate_up 2880 → 2·2880 and
// down 2880 → 2880) in MXFP4: 4 bits per parameter plus an 8-bit scale per
// 32, 4.25 bits.
const gptOSSExpertBytes = 3 * 2880 * 2880 * 4.25 / 8

// costModelSpecs are the models of the measured-cost model.
var costModelSpecs = []costModelSpec{
	{
		model: "llama-3.1-8b",
		attn:  []costAttnGroup{{layers: 32, shape: costdata.Shape{QHeads: 32, KVHeads: 8, HeadDim: 128}, writesKV: true}},
		linears: []costLinear{
			{"qkv", 6144, 4096, 32, false}, {"o", 4096, 4096, 32, false}, {"gate_up", 28672, 4096, 32, false}, {"down", 4096, 14336, 32, false}, {"lm_head", 128256, 4096, 1, true},
		},
		// Per layer: input RMSNorm, rotary embedding, fused residual-add
		// RMSNorm, SiLU-and-mul (vLLM's LlamaDecoderLayer); per step:
		// embedding, final norm, sampling.
		kernels:      32*4 + 3,
		weightsKnown: true, weightBytes: 8.03e9 * 2,
		source: "fp8-attention.md §4.1 (model card): 32 layers of 32 q / 8 KV heads, head_dim 128; GEMMs qkv 4096→6144, o 4096→4096, " +
			"gate_up 4096→28672, down 14336→4096, lm_head 4096→128256 measured as bf16 GEMMs; 131 unmeasured kernels per step (4 per layer + 3) at the measured graph launch cost",
	},
	{
		model: "gpt-oss-20b",
		attn: []costAttnGroup{
			{layers: 12, shape: costdata.Shape{QHeads: 64, KVHeads: 8, HeadDim: 64}, writesKV: true},
			{layers: 12, shape: costdata.Shape{QHeads: 64, KVHeads: 8, HeadDim: 64}, window: 128, writesKV: true},
		},
		linears: []costLinear{{"qkv", 5120, 2880, 24, false}, {"o", 2880, 4096, 24, false}},
		streamBytes: func(m, s int) float64 {
			// Distinct experts of top-4 of 32 over m tokens routed
			// independently and uniformly: 32·(1 − (28/32)^m) per layer;
			// the bf16 LM head 2880 → 201088 once.
			experts := 32 * (1 - math.Pow(28.0/32, float64(m)))
			return 24*experts*gptOSSExpertBytes + 201088*2880*2
		},
		streamFLOPs: func(m, s int) float64 {
			// Four experts per token, the LM head per sampled token.
			return 2*float64(m)*24*4*3*2880*2880 + 2*float64(s)*201088*2880
		},
		// Per layer: two RMSNorms, rotary embedding, router GEMM, top-k,
		// two expert GEMMs and their activation; per step: embedding,
		// final norm, sampling.
		kernels:      24*8 + 3,
		weightsKnown: true, weightBytes: 24*32*gptOSSExpertBytes + 24*(5120*2880+2880*4096)*2 + 2*201088*2880*2,
		source: "fp8-attention.md §4.1 and the model card (config.json: 24 layers, hidden 2880, 64 q / 8 KV heads of 64, sliding window 128 on even layers, " +
			"32 experts top-4 of intermediate 2880 in MXFP4, vocabulary 201088): attention GEMMs measured as bf16 GEMMs; the experts (4.25 bits per parameter, " +
			"distinct experts of independent uniform routing) and the bf16 LM head are NOT measured rows: their bytes at the measured stream bandwidth; " +
			"195 unmeasured kernels per step (8 per layer + 3) at the measured graph launch cost",
	},
	{
		model: "gemma-4-e2b",
		attn: []costAttnGroup{
			{layers: 3, shape: costdata.Shape{QHeads: 8, KVHeads: 1, HeadDim: 512}, writesKV: true},
			{layers: 4, shape: costdata.Shape{QHeads: 8, KVHeads: 1, HeadDim: 512}},
			{layers: 12, shape: costdata.Shape{QHeads: 8, KVHeads: 1, HeadDim: 256}, window: 512, writesKV: true},
			{layers: 16, shape: costdata.Shape{QHeads: 8, KVHeads: 1, HeadDim: 256}, window: 512},
		},
		source: "fp8-attention.md §4.1: 35 layers, 8 q / 1 KV head; 7 full layers of head_dim 512 (global_head_dim), 28 sliding of head_dim 256 with window 512; " +
			"num_kv_shared_layers 20: 3 full and 12 sliding layers store KV, the other 20 read it (they run attention, they write no KV). " +
			"Weights NOT modelled (per-layer embeddings; not given): the intercept lacks them, the slopes and the break-even do not depend on them",
	},
}

// costSpecFor returns the spec of a model.
func costSpecFor(model string) (costModelSpec, error) {
	for _, s := range costModelSpecs {
		if s.model == model {
			return s, nil
		}
	}
	var ids []string
	for _, s := range costModelSpecs {
		ids = append(ids, s.model)
	}
	return costModelSpec{}, fmt.Errorf("the measured-cost model has no step for %q (it has %s)", model, strings.Join(ids, ", "))
}

// costFormat is how a cache stores its layers: the kv of the rows of full
// and sliding layers.
type costFormat struct {
	name          string
	full, sliding string
}

// fp8 reports whether kv is an FP8 format.
func costIsFP8(kv string) bool { return kv != costdata.KVBF16 }

// costFormats returns bf16, fp8 (every layer) and fp8 skip-sw (sliding
// layers bf16) for FP8 rows of kind fp8 (fp8-tensor or fp8-head).
func costFormats(fp8 string) (bf16, all, skip costFormat) {
	return costFormat{"bf16", costdata.KVBF16, costdata.KVBF16},
		costFormat{"fp8", fp8, fp8},
		costFormat{"fp8 skip-sw", fp8, costdata.KVBF16}
}

// kvOf returns the kv format of a group's layers.
func (f costFormat) kvOf(g costAttnGroup) string {
	if g.window > 0 {
		return f.sliding
	}
	return f.full
}

// costScaling carries the H200's measured costs to another GPU. The parts of
// a cost that grow with the bytes read (decode attention over the context,
// cache writes and query quantization over the tokens, a GEMM whose
// arithmetic intensity is below the H200's ridge point) are multiplied by
// bw = H200 datasheet bandwidth / target's; the parts that grow with the
// FLOPs (prefill attention, GEMMs above the ridge) by flops = H200 dense
// BF16 / target's; fixed costs (a kernel's intercept, the launch) are kept
// equal: the H100 SXM has the H200's SMs and clocks (132 SMs, 1980 MHz),
// and for the B200 equal fixed costs are an assumption (its datasheet gives
// no per-kernel latency).
type costScaling struct {
	from, to  presets.GPU
	bw, flops float64
	ridge     float64 // FLOP per byte at which the H200 turns compute-bound
}

// newCostScaling returns the scaling from the H200 to gpu.
func newCostScaling(gpu presets.GPU) (costScaling, error) {
	h, err := presets.LookupGPU("h200")
	if err != nil {
		return costScaling{}, err
	}
	s := costScaling{from: h, to: gpu, bw: h.Bandwidth / gpu.Bandwidth, ridge: h.BF16FLOPS / h.Bandwidth}
	if gpu.BF16FLOPS > 0 {
		s.flops = h.BF16FLOPS / gpu.BF16FLOPS
	}
	return s, nil
}

// String states the rule and the ratios.
func (s costScaling) String() string {
	if s.from.ID == s.to.ID {
		return "measured on the " + s.from.Name + " (no scaling)"
	}
	fl := "no compute figures: compute-bound terms refused"
	if s.flops > 0 {
		fl = fmt.Sprintf("×%.3g (dense BF16 %g / %g TFLOP/s)", s.flops, s.from.BF16FLOPS/1e12, s.to.BF16FLOPS/1e12)
	}
	return fmt.Sprintf("H200 → %s: bandwidth-bound parts ×%.3g (datasheet %g / %g TB/s), compute-bound parts %s, fixed parts (intercepts, launches) equal",
		s.to.Name, s.bw, s.from.Bandwidth/presets.TB, s.to.Bandwidth/presets.TB, fl)
}

// linearScale returns the factor of one GEMM's time: bw below the ridge
// point, flops above.
func (s costScaling) linearScale(m, n, k int) (float64, error) {
	mf, nf, kf := float64(m), float64(n), float64(k)
	intensity := 2 * mf * nf * kf / (2 * (mf*kf + nf*kf + mf*nf))
	if intensity < s.ridge {
		return s.bw, nil
	}
	if s.flops == 0 {
		return 0, fmt.Errorf("a compute-bound GEMM (%d × %d × %d) on the %s, whose preset has no compute figures", m, n, k, s.to.Name)
	}
	return s.flops, nil
}

// costModel is the measured-cost model of one model on one GPU.
type costModel struct {
	file   *costdata.File
	spec   costModelSpec
	preset presets.Model
	scale  costScaling
	launch float64 // µs per kernel inside a CUDA graph
	stream float64 // achieved weight-read bandwidth on the target, B/s
	// decode[kv][group index]: the decode curves (per batch) of a group's
	// shape, scaled.
	decode  map[string]map[costDecodeKey]costBatchCurves
	write   map[string]map[costdata.Shape]costdata.Curve // KV write per layer, scaled
	qquant  map[string]map[costdata.Shape]costdata.Curve
	linears []costdata.Curve // measured GEMM curves (H200 times), per spec.linears
	gemm    float64          // achieved GEMM rate on the target, FLOP/s
	// prefill[impl][shape]: the prefill curve of a shape (µs against
	// query-key pairs) and the factor of its growing part (the FLOPs
	// ratio of the GPUs, times the shape's FLOPs over the measured one's
	// where the shape itself is not measured).
	prefill map[string]map[costdata.Shape]costPrefill
}

// costPrefill is a prefill curve and the factor of its growing part.
type costPrefill struct {
	curve  costdata.Curve
	factor float64
	from   costdata.Shape // the measured shape
}

// costDecodeKey names a decode curve: a shape and the window of its rows
// (0: full-attention rows).
type costDecodeKey struct {
	shape  costdata.Shape
	window int
}

// costBatchCurves are the decode curves of one shape and format.
type costBatchCurves struct {
	batches []float64
	curves  []costdata.Curve
}

// newCostModel looks up every curve the model needs in f, for the formats
// kvs ("bf16" and the FP8 kind); it fails naming the first missing row.
func newCostModel(f *costdata.File, modelID string, gpu presets.GPU, kvs []string) (*costModel, error) {
	spec, err := costSpecFor(modelID)
	if err != nil {
		return nil, err
	}
	pm, err := presets.LookupModel(modelID)
	if err != nil {
		return nil, err
	}
	sc, err := newCostScaling(gpu)
	if err != nil {
		return nil, err
	}
	c := &costModel{file: f, spec: spec, preset: pm, scale: sc,
		decode: map[string]map[costDecodeKey]costBatchCurves{}, write: map[string]map[costdata.Shape]costdata.Curve{}, qquant: map[string]map[costdata.Shape]costdata.Curve{}}
	if c.launch, err = f.Launch("graph"); err != nil {
		return nil, err
	}
	if spec.streamBytes != nil {
		bw, err := f.StreamBandwidth()
		if err != nil {
			return nil, err
		}
		c.stream = bw / sc.bw
		rate, err := f.GEMMRate()
		if err != nil {
			return nil, err
		}
		if sc.flops == 0 {
			return nil, fmt.Errorf("%s: the %s preset has no compute figures to scale the GEMM rate", pm.Name, gpu.Name)
		}
		c.gemm = rate / sc.flops
	}
	for _, kv := range kvs {
		c.decode[kv], c.write[kv], c.qquant[kv] = map[costDecodeKey]costBatchCurves{}, map[costdata.Shape]costdata.Curve{}, map[costdata.Shape]costdata.Curve{}
		for _, g := range spec.attn {
			for _, win := range []int{0, g.window} {
				key := costDecodeKey{g.shape, win}
				if _, ok := c.decode[kv][key]; ok {
					continue
				}
				bs, cs, err := f.DecodeWindowCurves(g.shape, kv, f.DecodeImpl(g.shape, kv), win)
				if win > 0 && errors.Is(err, costdata.ErrNoRows) {
					continue // no sliding rows: the full rows at min(L, window)
				}
				if err != nil {
					return nil, err
				}
				for i := range cs {
					cs[i] = cs[i].Scaled(sc.bw)
				}
				c.decode[kv][key] = costBatchCurves{bs, cs}
			}
			if _, ok := c.write[kv][g.shape]; ok {
				continue
			}
			w, err := f.KVWriteCurve(g.shape.KVHeads, g.shape.HeadDim, kv)
			if err != nil {
				return nil, err
			}
			c.write[kv][g.shape] = w.Scaled(sc.bw)
			if costIsFP8(kv) {
				q, err := f.QQuantCurve(g.shape.QHeads, g.shape.HeadDim, kv)
				if err != nil {
					return nil, err
				}
				c.qquant[kv][g.shape] = q.Scaled(sc.bw)
			}
		}
	}
	for _, l := range spec.linears {
		cv, _, err := f.LinearCurve(l.n, l.k)
		if err != nil {
			return nil, fmt.Errorf("%s's %s GEMM: %w", pm.Name, l.name, err)
		}
		c.linears = append(c.linears, cv)
	}
	return c, nil
}

// costParts is a step's time in ms by term.
type costParts struct {
	Attention, Prefill, KVWrite, QQuant, Linear, Stream, Launch float64
}

// Total is the step time in ms.
func (p costParts) Total() float64 {
	return p.Attention + p.Prefill + p.KVWrite + p.QQuant + p.Linear + p.Stream + p.Launch
}

// Fixed is the part of the step that does not depend on the context.
func (p costParts) Fixed() float64 { return p.Total() - p.Attention - p.Prefill }

// linearMS returns the time of the step's measured GEMMs at m tokens, s
// of them sampled, in ms.
func (c *costModel) linearMS(m, s int) (float64, error) {
	ms := 0.0
	for i, l := range c.spec.linears {
		mm := m
		if l.perSeq {
			mm = s
		}
		if mm == 0 {
			continue
		}
		r, err := c.scale.linearScale(mm, l.n, l.k)
		if err != nil {
			return 0, err
		}
		ms += float64(l.count) * c.linears[i].At(float64(mm)) * r / 1e3
	}
	return ms, nil
}

// fixedMS returns the context-independent terms of a step of m new tokens
// (decode tokens plus prefill chunk tokens), s of them sampled: cache
// writes, query quantization, GEMMs, weight reads outside them and the
// launches.
func (c *costModel) fixedMS(f costFormat, m, s int, p *costParts) error {
	lin, err := c.linearMS(m, s)
	if err != nil {
		return err
	}
	p.Linear = lin
	for _, g := range c.spec.attn {
		kv := f.kvOf(g)
		if g.writesKV {
			p.KVWrite += float64(g.layers) * c.write[kv][g.shape].At(float64(m)) / 1e3
		}
		if costIsFP8(kv) {
			p.QQuant += float64(g.layers) * c.qquant[kv][g.shape].At(float64(m)) / 1e3
		}
	}
	if c.spec.streamBytes != nil {
		p.Stream = max(c.spec.streamBytes(m, s)/c.stream, c.spec.streamFLOPs(m, s)/c.gemm) * 1e3
	}
	p.Launch = float64(c.spec.kernels) * c.launch / 1e3
	return nil
}

// decodeMS returns the decode attention of a step: batch sequences whose
// mean context is context tokens. A sliding layer costs its measured
// sliding kernel at the context where the file has rows of its window
// (decode rows with "window"), else the full kernel at min(context,
// window).
func (c *costModel) decodeMS(f costFormat, batch int, context float64) float64 {
	if batch == 0 {
		return 0
	}
	ms := 0.0
	for _, g := range c.spec.attn {
		L := context
		bc, ok := c.decode[f.kvOf(g)][costDecodeKey{g.shape, g.window}]
		if !ok {
			// No rows of the sliding kernel: the full kernel over the
			// window.
			L = min(L, float64(g.window))
			bc = c.decode[f.kvOf(g)][costDecodeKey{g.shape, 0}]
		}
		ms += float64(g.layers) * costdata.Interp2(bc.batches, bc.curves, float64(batch), L) / 1e3
	}
	return ms
}

// Step returns the time of a decode step of batch sequences at context
// tokens each, by term.
func (c *costModel) Step(f costFormat, batch, context int) (costParts, error) {
	var p costParts
	if err := c.fixedMS(f, batch, batch, &p); err != nil {
		return p, err
	}
	p.Attention = c.decodeMS(f, batch, float64(context))
	return p, nil
}

// costLine is a least-squares line y = Intercept + Slope · x.
type costLine struct{ Intercept, Slope float64 }

// fitLine fits y against x by least squares (the published ITL fits'
// method, fp8-attention.md §4.6).
func fitLine(xs, ys []float64) (costLine, error) {
	n := float64(len(xs))
	if len(xs) < 2 || len(xs) != len(ys) {
		return costLine{}, errors.New("a line needs at least two points")
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx, sy, sxx, sxy = sx+xs[i], sy+ys[i], sxx+xs[i]*xs[i], sxy+xs[i]*ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return costLine{}, errors.New("a line needs two distinct x")
	}
	s := (n*sxy - sx*sy) / d
	return costLine{Intercept: (sy - s*sx) / n, Slope: s}, nil
}

// breakEvenOf returns the context at which line l meets the BF16 line b:
// Δintercept / Δslope (the write-up's definition); +Inf when l's slope is
// not below b's, 0 when l is nowhere slower.
func breakEvenOf(b, l costLine) float64 {
	ds := b.Slope - l.Slope
	if ds <= 0 {
		return math.Inf(1)
	}
	return max(0, (l.Intercept-b.Intercept)/ds)
}

// costPrefillImpl is the prefill kernel of a cache format: BF16, or FP8 with
// two-level accumulation (flash-attention #104, vLLM's default on Hopper).
func costPrefillImpl(kv string) string {
	if costIsFP8(kv) {
		return "triton-fp8-2level"
	}
	return "triton-bf16"
}

// loadPrefill looks up the prefill curves of the model's shapes for the
// formats kvs: the shape itself where measured, else the measured shape of
// the same head_dim (or head_dim 128) with the growing part scaled by the
// FLOPs ratio q_heads · head_dim.
func (c *costModel) loadPrefill(kvs []string) error {
	c.prefill = map[string]map[costdata.Shape]costPrefill{}
	shapes := c.file.PrefillShapes()
	for _, kv := range kvs {
		impl := costPrefillImpl(kv)
		if c.prefill[impl] == nil {
			c.prefill[impl] = map[costdata.Shape]costPrefill{}
		}
		for _, g := range c.spec.attn {
			if _, ok := c.prefill[impl][g.shape]; ok {
				continue
			}
			from, found := g.shape, false
			for _, want := range []func(costdata.Shape) bool{
				func(s costdata.Shape) bool { return s == g.shape },
				func(s costdata.Shape) bool { return s.HeadDim == g.shape.HeadDim },
				func(s costdata.Shape) bool { return s.HeadDim == 128 },
			} {
				for _, s := range shapes {
					if want(s) {
						from, found = s, true
						break
					}
				}
				if found {
					break
				}
			}
			if !found {
				return fmt.Errorf("%s: no prefill rows for %s or a head_dim to scale from", c.file.Name, g.shape)
			}
			cv, _, _, err := c.file.PrefillCurve(from, impl)
			if err != nil {
				return err
			}
			if c.scale.flops == 0 {
				return fmt.Errorf("prefill on the %s, whose preset has no compute figures", c.scale.to.Name)
			}
			factor := c.scale.flops * float64(g.shape.QHeads*g.shape.HeadDim) / float64(from.QHeads*from.HeadDim)
			c.prefill[impl][g.shape] = costPrefill{curve: cv, factor: factor, from: from}
		}
	}
	return nil
}

// costChunk is a prefill chunk of a step: tokens [done, done+tokens) of a
// prompt.
type costChunk struct{ done, tokens int }

// prefillMS returns the prefill attention of a step's chunks, summed over
// the layers: per chunk and layer the kernel's intercept plus the
// query-key pairs it computes (full layers: tokens·(done + tokens/2);
// sliding: tokens·min(window, done + tokens/2)) at the measured rate of
// growth around the chunk's causal pairs (costdata.Curve.Slope).
func (c *costModel) prefillMS(f costFormat, chunks []costChunk) float64 {
	ms := 0.0
	for _, ch := range chunks {
		t, d := float64(ch.tokens), float64(ch.done)
		for _, g := range c.spec.attn {
			pf := c.prefill[costPrefillImpl(f.kvOf(g))][g.shape]
			span := d + t/2
			if g.window > 0 {
				span = min(span, float64(g.window))
			}
			pairs := t * span
			at := (d + t) * (d + t) / 2
			us := pf.curve.Intercept() + pf.curve.Slope(at)*pairs*pf.factor
			ms += float64(g.layers) * us / 1e3
		}
	}
	return ms
}

// costKVBytesPerToken returns the KV-cache bytes per token of the full
// layers that store KV in format f (2 · layers · KV heads · head_dim ·
// bytes per element: 2 for bf16, 1 for fp8; the FP8 scales are per layer,
// not per token: see costKVScaleBytes), and the bytes per token of the
// sliding layers, of which a sequence holds at most window tokens.
func (c *costModel) costKVBytesPerToken(f costFormat) (full, sliding float64, window int) {
	for _, g := range c.spec.attn {
		if !g.writesKV {
			continue
		}
		elem := 2.0
		if costIsFP8(f.kvOf(g)) {
			elem = 1
		}
		b := 2 * float64(g.layers*g.shape.KVHeads*g.shape.HeadDim) * elem
		if g.window > 0 {
			sliding += b
			window = max(window, g.window)
		} else {
			full += b
		}
	}
	return full, sliding, window
}

// costKVScaleBytes returns the bytes of the FP8 scales of format f: one
// float32 for K and one for V per KV-writing FP8 layer (fp8-tensor), or
// per layer and KV head (fp8-head); 0 for bf16.
func (c *costModel) costKVScaleBytes(f costFormat) float64 {
	b := 0.0
	for _, g := range c.spec.attn {
		kv := f.kvOf(g)
		if !g.writesKV || !costIsFP8(kv) {
			continue
		}
		per := 1
		if kv == costdata.KVFP8Head {
			per = g.shape.KVHeads
		}
		b += 2 * 4 * float64(g.layers*per)
	}
	return b
}

// slidingNote says how the model prices its sliding layers.
func (c *costModel) slidingNote() string {
	var parts []string
	for _, g := range c.spec.attn {
		if g.window == 0 {
			continue
		}
		for _, kv := range slices.Sorted(maps.Keys(c.decode)) {
			if _, ok := c.decode[kv][costDecodeKey{g.shape, g.window}]; ok {
				parts = append(parts, fmt.Sprintf("%s: measured sliding-window rows (window %d) against the context", kv, g.window))
			} else {
				parts = append(parts, fmt.Sprintf("%s: no rows of the sliding kernel, the full kernel at min(L, %d), whose cost stops growing at the window (skip-SW then moves the intercept only)", kv, g.window))
			}
		}
		break
	}
	if len(parts) == 0 {
		return ""
	}
	return "sliding layers of " + c.preset.Name + ": " + strings.Join(parts, "; ")
}
