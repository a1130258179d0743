package experiments

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/experiments/costdata"
	"github.com/fp8lab/fp8lab/presets"
)

// These tests check the measured-cost model's invariants on the SYNTHETIC
// cost file (costs_synthetic_test.go): bytes, units, monotonicity, the
// break-even's definition, the scaling rules and the serving model's
// conservation. None of them reads a number as a prediction.

func synthModel(t *testing.T, model, gpu string) *costModel {
	t.Helper()
	g, err := presets.LookupGPU(gpu)
	if err != nil {
		t.Fatal(err)
	}
	kvs := []string{costdata.KVBF16, costdata.KVFP8Tensor, costdata.KVFP8Head}
	c, err := newCostModel(syntheticCosts(), model, g, kvs)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.loadPrefill(kvs); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCostKVBytesPerToken(t *testing.T) {
	for _, tc := range []struct {
		model                  string
		full16, slide16        float64 // bf16 bytes per token
		window                 int
		tensorScale, headScale float64
	}{
		{"llama-3.1-8b", 2 * 32 * 8 * 128 * 2, 0, 0, 2 * 4 * 32, 2 * 4 * 32 * 8},
		{"gpt-oss-20b", 2 * 12 * 8 * 64 * 2, 2 * 12 * 8 * 64 * 2, 128, 2 * 4 * 24, 2 * 4 * 24 * 8},
		// 3 stored full layers of head_dim 512 and 12 stored sliding of 256:
		// the 20 KV-sharing layers store nothing.
		{"gemma-4-e2b", 2 * 3 * 1 * 512 * 2, 2 * 12 * 1 * 256 * 2, 512, 2 * 4 * 15, 2 * 4 * 15},
	} {
		c := synthModel(t, tc.model, "h200")
		bf, all, skip := costFormats(costdata.KVFP8Tensor)
		f16, s16, w := c.costKVBytesPerToken(bf)
		f8, s8, _ := c.costKVBytesPerToken(all)
		fs, ss, _ := c.costKVBytesPerToken(skip)
		if f16 != tc.full16 || s16 != tc.slide16 || w != tc.window {
			t.Errorf("%s bf16: %g + %g (window %d), want %g + %g (%d)", tc.model, f16, s16, w, tc.full16, tc.slide16, tc.window)
		}
		if f8 != f16/2 || s8 != s16/2 || fs != f16/2 || ss != s16 {
			t.Errorf("%s: fp8 %g + %g, skip-sw %g + %g: want half of bf16's %g + %g, the skip-sw sliding layers whole", tc.model, f8, s8, fs, ss, f16, s16)
		}
		// The preset counts the full layers the same way.
		if p := c.preset.KVBytesPerToken(2); p != f16 {
			t.Errorf("%s: preset %g B/token, model %g", tc.model, p, f16)
		}
		if got := c.costKVScaleBytes(bf); got != 0 {
			t.Errorf("%s: bf16 has %g scale bytes", tc.model, got)
		}
		if got := c.costKVScaleBytes(all); got != tc.tensorScale {
			t.Errorf("%s: per-tensor scales %g B, want %g (K and V, float32, per KV-writing layer)", tc.model, got, tc.tensorScale)
		}
		_, head, _ := costFormats(costdata.KVFP8Head)
		if got := c.costKVScaleBytes(head); got != tc.headScale {
			t.Errorf("%s: per-head scales %g B, want %g", tc.model, got, tc.headScale)
		}
	}
}

// TestCostStepUnits: at a measured point the step's terms are the rows' µs
// summed over the layers, in ms.
func TestCostStepUnits(t *testing.T) {
	f := syntheticCosts()
	c := synthModel(t, "llama-3.1-8b", "h200")
	bf, all, _ := costFormats(costdata.KVFP8Tensor)
	s := costdata.Shape{QHeads: 32, KVHeads: 8, HeadDim: 128}
	row := func(op, kv string, batch, context int) float64 {
		for _, r := range f.Rows {
			h := costdata.Shape{QHeads: r.QHeads, KVHeads: r.KVHeads, HeadDim: r.HeadDim}
			if r.Op == op && r.KV == kv && r.Batch == batch && r.Context == context && (op != "decode" || h == s) && r.HeadDim == 128 && (r.KVHeads == 8 || op == "q_quant") {
				return r.US
			}
		}
		t.Fatalf("no %s row %s %d %d", op, kv, batch, context)
		return 0
	}
	for _, fm := range []costFormat{bf, all} {
		p, err := c.Step(fm, 8, 4096)
		if err != nil {
			t.Fatal(err)
		}
		want := costParts{
			Attention: 32 * row("decode", fm.full, 8, 4096) / 1e3,
			KVWrite:   32 * row("kv_write", fm.full, 8, 0) / 1e3,
			Launch:    131 * 2.5 / 1e3,
		}
		if fm.name != "bf16" {
			want.QQuant = 32 * row("q_quant", fm.full, 8, 0) / 1e3
		}
		for _, x := range []struct {
			name      string
			got, want float64
		}{{"attention", p.Attention, want.Attention}, {"kv_write", p.KVWrite, want.KVWrite}, {"q_quant", p.QQuant, want.QQuant}, {"launch", p.Launch, want.Launch}} {
			if math.Abs(x.got-x.want) > 1e-12*math.Max(1, x.want) {
				t.Errorf("%s %s: %g ms, want %g", fm.name, x.name, x.got, x.want)
			}
		}
		if p.Linear <= 0 || p.Prefill != 0 || p.Stream != 0 {
			t.Errorf("%s: linear %g, prefill %g, stream %g", fm.name, p.Linear, p.Prefill, p.Stream)
		}
		if d := p.Total() - (p.Attention + p.KVWrite + p.QQuant + p.Linear + p.Launch); math.Abs(d) > 1e-12 {
			t.Errorf("total is not the sum of the terms (%g)", d)
		}
	}
}

// TestCostStepMonotonic: a step never gets cheaper with a longer context
// or a larger batch, inside and beyond the measured range, on every GPU.
func TestCostStepMonotonic(t *testing.T) {
	contexts := []int{1, 256, 1024, 1500, 4096, 100000, 131072, 200000, 1 << 20}
	batches := []int{1, 2, 8, 20, 32, 64}
	for _, model := range []string{"llama-3.1-8b", "gpt-oss-20b", "gemma-4-e2b"} {
		for _, gpu := range []string{"h100-sxm", "h200", "b200"} {
			c := synthModel(t, model, gpu)
			bf, all, skip := costFormats(costdata.KVFP8Tensor)
			for _, fm := range []costFormat{bf, all, skip} {
				for _, b := range batches {
					prev := 0.0
					for _, L := range contexts {
						p, err := c.Step(fm, b, L)
						if err != nil {
							t.Fatal(err)
						}
						if p.Total() < prev {
							t.Errorf("%s %s %s batch %d: %g ms at %d tokens, less than %g before", model, gpu, fm.name, b, p.Total(), L, prev)
						}
						prev = p.Total()
					}
				}
				for _, L := range contexts {
					prev := 0.0
					for _, b := range batches {
						p, _ := c.Step(fm, b, L)
						if p.Total() < prev {
							t.Errorf("%s %s %s at %d tokens: %g ms at batch %d, less than %g before", model, gpu, fm.name, L, p.Total(), b, prev)
						}
						prev = p.Total()
					}
				}
			}
		}
	}
}

// TestCostBreakEven: the break-even is the intercept gap over the slope
// gap of the fitted lines, the context where they meet.
func TestCostBreakEven(t *testing.T) {
	for _, tc := range []struct {
		b, l costLine
		want float64
	}{
		{costLine{6.44, 4.37e-5}, costLine{6.58, 2.37e-5}, 0.14 / 2e-5},
		{costLine{1, 2}, costLine{1, 3}, math.Inf(1)}, // steeper: never
		{costLine{1, 2}, costLine{0.5, 1}, 0},         // cheaper everywhere
	} {
		if got := breakEvenOf(tc.b, tc.l); math.Abs(got-tc.want) > 1e-9*math.Abs(tc.want) && got != tc.want {
			t.Errorf("breakEvenOf(%v, %v) = %g, want %g", tc.b, tc.l, got, tc.want)
		}
	}
	// On the model: the lines meet at the break-even.
	r, err := itlMeasuredFitFor(syntheticCosts(), "h100-sxm", "llama-3.1-8b", costdata.KVFP8Tensor, 1, itlDefaultContexts)
	if err != nil {
		t.Fatal(err)
	}
	be := r.beFP8
	if !(be > 0) || math.IsInf(be, 0) {
		t.Fatalf("break-even %g", be)
	}
	yb, yf := r.bf16.Intercept+r.bf16.Slope*be, r.fp8.Intercept+r.fp8.Slope*be
	if math.Abs(yb-yf) > 1e-9*yb {
		t.Errorf("at the break-even %g the lines are %g and %g ms", be, yb, yf)
	}
	if want := (r.fp8.Intercept - r.bf16.Intercept) / (r.bf16.Slope - r.fp8.Slope); math.Abs(be-want) > 1e-9*want {
		t.Errorf("break-even %g, want Δintercept/Δslope = %g", be, want)
	}
	// A line fitted to exact line data is that line.
	l, err := fitLine([]float64{1, 2, 4, 8}, []float64{3, 5, 9, 17})
	if err != nil || math.Abs(l.Intercept-1) > 1e-12 || math.Abs(l.Slope-2) > 1e-12 {
		t.Errorf("fitLine: %v, %v; want 1 + 2x", l, err)
	}
}

// TestCostScaling: the growing part of a bandwidth-bound cost scales by the
// datasheet bandwidth ratio and its intercept stays; GEMMs scale by
// bandwidth below the H200's ridge point and by FLOPs above it.
func TestCostScaling(t *testing.T) {
	h200 := synthModel(t, "llama-3.1-8b", "h200")
	bf, _, _ := costFormats(costdata.KVFP8Tensor)
	for _, gpu := range []string{"h100-sxm", "b200"} {
		c := synthModel(t, "llama-3.1-8b", gpu)
		r := 4.8e12 / c.scale.to.Bandwidth
		at := func(m *costModel, L float64) float64 { return m.decodeMS(bf, 1, L) }
		i0, i1 := at(h200, 1024)-(at(h200, 2048)-at(h200, 1024)), at(c, 1024)-(at(c, 2048)-at(c, 1024))
		if math.Abs(i0-i1) > 1e-12 {
			t.Errorf("%s: decode intercept %g ms, the H200's %g", gpu, i1, i0)
		}
		g0, g1 := at(h200, 65536)-at(h200, 1024), at(c, 65536)-at(c, 1024)
		if math.Abs(g1-g0*r) > 1e-12*g1 {
			t.Errorf("%s: decode growth %g ms, want the H200's %g × %g", gpu, g1, g0, r)
		}
		for _, m := range []int{1, 8192} {
			s, err := c.scale.linearScale(m, 28672, 4096)
			if err != nil {
				t.Fatal(err)
			}
			want := r
			if m == 8192 {
				want = 989e12 / c.scale.to.BF16FLOPS
			}
			if s != want {
				t.Errorf("%s: GEMM at m = %d scales ×%g, want ×%g", gpu, m, s, want)
			}
		}
	}
	if c := synthModel(t, "llama-3.1-8b", "h200"); c.scale.bw != 1 || c.scale.flops != 1 {
		t.Errorf("H200 to itself: ×%g, ×%g", c.scale.bw, c.scale.flops)
	}
}

// TestThroughputConservation: every request's output is generated, once;
// every format sees the same requests; more KV capacity is never slower.
func TestThroughputConservation(t *testing.T) {
	for _, model := range []string{"llama-3.1-8b", "gpt-oss-20b"} {
		c := synthModel(t, model, "h100-sxm")
		forms := throughputFormats(c.preset, costdata.KVFP8Tensor)
		load := throughputLoad{requests: 24, concurrency: 16, input: 30000, output: 300, budget: 2048, spread: 0.15, memUtil: 0.9, seed: 3}
		ins, outs := throughputLengths(load)
		want := 0
		for _, o := range outs {
			want += o
		}
		for _, fm := range forms {
			prev := math.Inf(1)
			prevRunning := 0
			for _, util := range []float64{0.35, 0.5, 0.9} {
				l := load
				l.memUtil = util
				r, err := throughputSimulate(context.Background(), c, fm, l, ins, outs, c.scale.to.Memory)
				if err != nil {
					t.Fatalf("%s %s util %g: %v", model, fm.name, util, err)
				}
				if r.outTokens != want {
					t.Errorf("%s %s: %d output tokens, want Σ output = %d", model, fm.name, r.outTokens, want)
				}
				if r.runtimeS > prev*(1+1e-12) {
					t.Errorf("%s %s: util %g is slower (%g s) than less memory (%g s)", model, fm.name, util, r.runtimeS, prev)
				}
				if r.maxRunning > load.concurrency {
					t.Errorf("%s %s: %d running at concurrency %d", model, fm.name, r.maxRunning, load.concurrency)
				}
				if r.maxRunning < prevRunning && util > 0.35 {
					t.Errorf("%s %s: more memory runs fewer sequences (%d < %d)", model, fm.name, r.maxRunning, prevRunning)
				}
				prev, prevRunning = r.runtimeS, r.maxRunning
			}
		}
	}
	// A smaller cache holds fewer sequences: Llama at 0.35 of 80 GB less
	// 16.06 GB of weights holds 11.94 GB of KV: 3 sequences of 30,100
	// tokens at 128 KiB (3.95 GB each) in BF16, 6 in FP8.
	c := synthModel(t, "llama-3.1-8b", "h100-sxm")
	bf, all, _ := costFormats(costdata.KVFP8Tensor)
	l := throughputLoad{requests: 8, concurrency: 8, input: 30000, output: 100, budget: 2048, memUtil: 0.35, seed: 1}
	ins, outs := throughputLengths(l)
	rb, err := throughputSimulate(context.Background(), c, bf, l, ins, outs, c.scale.to.Memory)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := throughputSimulate(context.Background(), c, all, l, ins, outs, c.scale.to.Memory)
	if err != nil {
		t.Fatal(err)
	}
	if rb.maxRunning != 3 || rf.maxRunning != 6 {
		t.Errorf("at most %d BF16 and %d FP8 sequences running, want 3 and 6 (11.94 GB of cache)", rb.maxRunning, rf.maxRunning)
	}
}

// TestThroughputCancel: a cancelled context stops the schedule.
func TestThroughputCancel(t *testing.T) {
	c := synthModel(t, "llama-3.1-8b", "h100-sxm")
	bf, _, _ := costFormats(costdata.KVFP8Tensor)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	l := throughputLoad{requests: 150, concurrency: 8, input: 20000, output: 2000, budget: 8192, memUtil: 0.9}
	ins, outs := throughputLengths(l)
	if _, err := throughputSimulate(ctx, c, bf, l, ins, outs, c.scale.to.Memory); err != context.Canceled {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// TestCostSlidingWindowRows: with rows of the sliding kernel whose cost
// grows with the context (a grid sized by the context), FP8's sliding
// layers add slope and skip-SW's BF16 ones add more; without them skip-SW
// has FP8's slope.
func TestCostSlidingWindowRows(t *testing.T) {
	fit := func(f *costdata.File) *itlMeasuredFit {
		// Contexts inside the measured 1024 → 131072, where the rows are
		// lines.
		r, err := itlMeasuredFitFor(f, "h200", "gpt-oss-20b", costdata.KVFP8Tensor, 1, []int{1024, 4096, 32768, 125000})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := fit(syntheticCosts())
	if math.Abs(plain.sw.Slope-plain.fp8.Slope) > 1e-15 {
		t.Errorf("without sliding rows: skip-SW slope %g, FP8 %g: want equal", plain.sw.Slope, plain.fp8.Slope)
	}
	var extra []map[string]any
	for _, kv := range []string{"bf16", "fp8-tensor"} {
		perToken := map[string]float64{"bf16": 1e-4, "fp8-tensor": 2e-4}[kv] // µs per token of context
		for _, b := range []int{1, 8, 32} {
			for _, L := range []int{1024, 131072} {
				extra = append(extra, map[string]any{"op": "decode", "impl": "triton-splitkv", "kv": kv, "batch": b, "context": L, "window": 128,
					"q_heads": 64, "kv_heads": 8, "head_dim": 64, "us": 7 + perToken*float64(L)})
			}
		}
	}
	r := fit(syntheticCosts(extra...))
	// 12 sliding layers: FP8 adds 12 · 2e-4 µs/token, skip-SW's BF16 12 · 1e-4.
	if d := r.fp8.Slope - plain.fp8.Slope; math.Abs(d-12*2e-4/1e3) > 1e-12 {
		t.Errorf("FP8 slope grew by %g ms/token, want %g", d, 12*2e-4/1e3)
	}
	if d := r.sw.Slope - plain.sw.Slope; math.Abs(d-12*1e-4/1e3) > 1e-12 {
		t.Errorf("skip-SW slope grew by %g ms/token, want %g", d, 12*1e-4/1e3)
	}
	if n := r.model.slidingNote(); !strings.Contains(n, "measured sliding-window rows (window 128)") {
		t.Errorf("note %q", n)
	}
}

// TestEmbeddedCostsComplete: the embedded cost file (when the build has
// one) holds every row the models need, for every model on every GPU of
// the published figures: a capture that misses a shape fails here, naming
// the row, rather than in a run.
func TestEmbeddedCostsComplete(t *testing.T) {
	f, err := costdata.Embedded()
	if errors.Is(err, costdata.ErrNoMeasuredCosts) {
		t.Skip("no measured costs in this build (experiments/costdata/h200-kernel-costs.json)")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{costdata.KVFP8Tensor} {
		for _, spec := range costModelSpecs {
			for _, gpu := range []string{"h200", "h100-sxm", "b200"} {
				g, _ := presets.LookupGPU(gpu)
				kvs := []string{costdata.KVBF16, kind}
				c, err := newCostModel(f, spec.model, g, kvs)
				if err != nil {
					t.Errorf("%s on %s: %v", spec.model, gpu, err)
					continue
				}
				if err := c.loadPrefill(kvs); err != nil {
					t.Errorf("%s on %s prefill: %v", spec.model, gpu, err)
				}
			}
		}
	}
}

func BenchmarkThroughputSimulate(b *testing.B) {
	g, _ := presets.LookupGPU("h100-sxm")
	kvs := []string{costdata.KVBF16, costdata.KVFP8Tensor}
	c, err := newCostModel(syntheticCosts(), "llama-3.1-8b", g, kvs)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.loadPrefill(kvs); err != nil {
		b.Fatal(err)
	}
	_, fp8, _ := costFormats(costdata.KVFP8Tensor)
	l := throughputLoad{requests: 16, concurrency: 8, input: 20000, output: 500, budget: 8192, spread: 0.15, memUtil: 0.9, seed: 1}
	ins, outs := throughputLengths(l)
	b.ResetTimer()
	for b.Loop() {
		if _, err := throughputSimulate(context.Background(), c, fp8, l, ins, outs, g.Memory); err != nil {
			b.Fatal(err)
		}
	}
}
