package experiments

import (
	"context"
	"fmt"
	gomath "math"

	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

func init() { sim.Register(DecodeBW{}) }

// DecodeBW is the `decode-bw` experiment: the measured time of one decode
// attention step on the GPU at hand (WGSL, split-KV, native f32 arithmetic)
// against context length, for an FP16 and an FP8 (e4m3) KV cache: slope per
// token, effective bandwidth and the FP8/FP16 slope ratio (the decode cost
// model's input, fp8-attention.md §4).
type DecodeBW struct {
	// Runner is the GPU to use; nil opens one (wgsl.Open, which honours
	// $FP8LAB_ADAPTER) for the run and closes it after.
	Runner *wgsl.Runner
}

// Name returns "decode-bw".
func (DecodeBW) Name() string { return "decode-bw" }

// Doc describes the experiment.
func (DecodeBW) Doc() string {
	return `Measured decode attention time against context length on this GPU, FP16 against FP8 (e4m3) KV cache: slope per token, bandwidth, slope ratio.

One decode step: batch sequences, q-heads query heads over kv-heads KV heads
(GQA), head_dim 128, every cached token read once (split-KV: a workgroup per
512 tokens and KV head, then a combine kernel), in WGSL with native f32
arithmetic over an FP16 cache (vectorized 16-byte loads, unpack2x16float) or
an e4m3 cache (16 codes per load, widened to FP16 bit patterns). The cache
is filled on the GPU; each point is the median of reps repetitions, each
steps decode steps back to back (about 10 ms of GPU work, at most 512 steps,
as a served model's layers keep the GPU busy: one step alone leaves it idle
between submissions and its clock down), the repetition's time divided by
steps, timed with GPU timestamp queries where the adapter has them (else
the wall clock around submit and wait, launch overhead included), after a
warm-up of untimed repetitions until the time is stable (wgsl.DefaultWarmup:
on a GPU the last 3 within 5 % after at least 0.5 s and the SM clock up or
settled, at most 5 s; the point's stable extra is 0 when the cap ended it).

Series fp16 and e4m3: y = milliseconds per step at x = context tokens; extra:
bandwidth_gbs (KV bytes read / time), batch, timestamp (1 when timed by GPU
timestamps), the spread of the timed repetitions per step (ms_min, ms_max,
ms_q1, ms_q3), reps, warmups, warmup_s, steps, sm_mhz and sm_end_mhz (the SM
clock at the warm-up's end and after the timed repetitions, where gpucheck
samples nvidia-smi; 0 otherwise) and stable. Series "fp16 least-squares fit" and
"e4m3 least-squares fit": the fitted line over the measured contexts (25
points). Summary: the least-squares slope
of time against context for each (fp16_slope_ns, e4m3_slope_ns: nanoseconds
per token of context, for the whole batch) and its intercept
(fp16_intercept_ms, e4m3_intercept_ms), slope_ratio = e4m3 / fp16 (the
published H100 FA3 figure: 0.54), the bandwidth at the longest context
(fp16_bw_gbs, e4m3_bw_gbs), the marginal bandwidth bytes-per-token / slope
(fp16_marginal_gbs, e4m3_marginal_gbs), the bandwidth of a plain streaming
read through WGSL on the device, the ceiling (stream_gbs), batch, math_qreg (1 when math is f32-qreg) and hardware (0 on a CPU
adapter such as lavapipe, where the numbers only show the kernels run).

batch 0 picks the largest batch (at most 64; at most 4 on a CPU adapter)
whose FP16 K cache at the longest context fits one storage binding of the
device. The defaults are
small so that a CPU adapter finishes in seconds; on a GPU use
-contexts 1024,2048,...,524288.`
}

// Params returns the parameter schema.
func (DecodeBW) Params() []sim.Param {
	return []sim.Param{
		{Name: "contexts", Doc: "context lengths", Unit: "tokens", Kind: sim.KindInts,
			Default: []int{512, 1024, 2048, 4096}, Min: 1, Max: 1 << 24},
		{Name: "batch", Doc: "sequences per step (0: the largest that fits, at most 64)", Kind: sim.KindInt, Default: 0, Min: 0, Max: 4096},
		{Name: "kv-heads", Aliases: []string{"kv_heads"}, Doc: "KV heads", Kind: sim.KindInt, Default: 8, Min: 1, Max: 128},
		{Name: "q-heads", Aliases: []string{"q_heads"}, Doc: "query heads (1 to 8 per KV head)", Kind: sim.KindInt, Default: 32, Min: 1, Max: 1024},
		{Name: "reps", Doc: "timed repetitions per point after the warm-up (the median is kept, min and max reported)", Kind: sim.KindInt, Default: 3, Min: 1, Max: 1000},
		{Name: "math", Doc: "the kernels' arithmetic, the same for both formats: f32 (q read from workgroup memory) or f32-qreg (head_dim split across invocations, q in registers)",
			Kind: sim.KindChoice, Default: wgsl.MathF32, Choices: wgsl.DecodeMaths},
	}
}

// gpuDecodeBatch returns the batch to use: the parameter, or the largest
// (at most 64) whose FP16 K cache at context maxL stays below maxBinding
// bytes. (Below, not up to: on the H200 a step over two 2 GiB buffers, the
// binding limit exactly, ran 5 times slower than over two 1 GiB ones.)
func gpuDecodeBatch(param, kvHeads, maxL int, maxBinding uint64) int {
	if param > 0 {
		return param
	}
	perSeq := uint64(kvHeads) * uint64((maxL+31)&^31) * 128 * 2
	return int(max(1, min(64, (maxBinding-1)/perSeq)))
}

// gpuSlope fits t = a + b·x by least squares and returns b (0 for fewer
// than two distinct x).
func gpuSlope(x, t []float64) float64 {
	_, b := gpuFit(x, t)
	return b
}

// gpuFit fits t = a + b·x by least squares and returns a and b (0, 0 for
// fewer than two distinct x).
func gpuFit(x, t []float64) (a, b float64) {
	n := float64(len(x))
	var sx, st, sxx, sxt float64
	for i := range x {
		sx += x[i]
		st += t[i]
		sxx += x[i] * x[i]
		sxt += x[i] * t[i]
	}
	d := n*sxx - sx*sx
	if len(x) < 2 || d == 0 {
		return 0, 0
	}
	b = (n*sxt - sx*st) / d
	return (st - b*sx) / n, b
}

// decodeBWFit suffixes the series of the least-squares line through a
// format's measured points.
const decodeBWFit = " least-squares fit"

// decodeBWFitPoints is the number of points of a fitted line.
const decodeBWFitPoints = 25

// decodeBWFitXs returns the contexts the fitted line is drawn at: from the
// smallest to the largest measured one, evenly spaced in log x (the
// measured contexts themselves when there are fewer than two distinct).
func decodeBWFitXs(xs []float64) []float64 {
	lo, hi := gomath.Inf(1), gomath.Inf(-1)
	for _, x := range xs {
		lo, hi = min(lo, x), max(hi, x)
	}
	if !(hi > lo) || lo <= 0 {
		return xs
	}
	out := make([]float64, decodeBWFitPoints)
	for i := range out {
		out[i] = lo * gomath.Pow(hi/lo, float64(i)/float64(decodeBWFitPoints-1))
	}
	out[len(out)-1] = hi
	return out
}

// Run runs the experiment.
func (e DecodeBW) Run(ctx context.Context, run *sim.Run) error {
	r, done, err := openGPU(ctx, e.Runner, "decode-bw")
	if err != nil {
		return err
	}
	defer done()
	v := run.Values
	contexts := v.Ints("contexts")
	kvh, qh, reps := v.Int("kv-heads"), v.Int("q-heads"), v.Int("reps")
	math := v.String("math")
	maxL := 0
	for _, l := range contexts {
		maxL = max(maxL, l)
	}
	info := r.Info()
	batch := gpuDecodeBatch(v.Int("batch"), kvh, maxL, info.MaxStorageBinding)
	if v.Int("batch") == 0 && !info.Hardware {
		batch = min(batch, 4) // a CPU adapter: keep the run to seconds
	}
	run.Note(fmt.Sprintf("decode-bw: adapter %s, timing by %s, batch %d, math %s (both formats)", info, info.TimingSource(), batch, math))
	run.Progress(0, int64(2*len(contexts)))
	summary := map[string]float64{"batch": float64(batch), "hardware": gpuBool(info.Hardware),
		"math_qreg": gpuBool(math == wgsl.MathF32QReg)}
	// The ceiling: a plain streaming read through WGSL on this device.
	size := uint64(64 << 20)
	if info.Hardware {
		size = min(uint64(1<<30), info.MaxStorageBinding)
	}
	stream, _, err := r.ReadBandwidth(ctx, size, int(size/16/(256*64)), reps)
	if err != nil {
		return err
	}
	summary["stream_gbs"] = stream / 1e9
	slopes := map[wgsl.KVFormat]float64{}
	// The two formats of the decode kernel and their series names (fp16 is
	// decode-bw's name of attention's f16).
	for _, f := range []struct {
		kv   wgsl.KVFormat
		name string
	}{{wgsl.KVFP16, "fp16"}, {wgsl.KVE4M3, "e4m3"}} {
		kv, name := f.kv, f.name
		var xs, ts []float64
		var last wgsl.DecodeBench
		for _, l := range contexts {
			cfg := wgsl.DecodeConfig{Batch: batch, KVHeads: kvh, QHeads: qh, HeadDim: 128, Context: l, KV: kv, KScale: 0.01, VScale: 0.01, Math: math}
			b, err := r.BenchDecode(ctx, cfg, reps)
			if err != nil {
				return err
			}
			ms := b.Time.Seconds() * 1e3
			xs, ts = append(xs, float64(l)), append(ts, b.Time.Seconds())
			if l == maxL {
				last = b
			}
			m := b.Measurement
			if err := run.Emit(sim.Point{Series: name, X: float64(l), Y: ms, Extra: map[string]float64{
				"bandwidth_gbs": b.Bandwidth / 1e9, "batch": float64(batch), "timestamp": gpuBool(b.Source == "timestamp"),
				"ms_min": m.Min.Seconds() * 1e3, "ms_max": m.Max.Seconds() * 1e3, "ms_q1": m.Q1.Seconds() * 1e3, "ms_q3": m.Q3.Seconds() * 1e3,
				"reps": float64(len(m.Times)), "warmups": float64(m.Warmups), "warmup_s": m.WarmupTime.Seconds(), "stable": gpuBool(m.Stable),
				"steps": float64(b.Steps), "sm_mhz": m.ClockMHz, "sm_end_mhz": m.ClockEndMHz,
			}}); err != nil {
				return err
			}
			run.Advance(1)
		}
		icpt, slope := gpuFit(xs, ts)
		slopes[kv] = slope
		// The fitted line, whose slope is the experiment's result, drawn
		// over the measured contexts (decodeBWFitPoints points spaced
		// evenly in log x: the chart's x axis is logarithmic, on which the
		// straight line is a curve).
		for _, x := range decodeBWFitXs(xs) {
			if err := run.Emit(sim.Point{Series: name + decodeBWFit, X: x, Y: (icpt + slope*x) * 1e3}); err != nil {
				return err
			}
		}
		summary[name+"_intercept_ms"] = icpt * 1e3
		summary[name+"_slope_ns"] = slope * 1e9
		summary[name+"_bw_gbs"] = last.Bandwidth / 1e9
		bytesPerToken := float64(2 * batch * kvh * 128 * kv.CodeBytes())
		if slope > 0 {
			summary[name+"_marginal_gbs"] = bytesPerToken / slope / 1e9
		}
	}
	if slopes[wgsl.KVFP16] > 0 {
		summary["slope_ratio"] = slopes[wgsl.KVE4M3] / slopes[wgsl.KVFP16]
	} else {
		summary["slope_ratio"] = gomath.NaN()
	}
	run.Summary(summary)
	run.Note(fmt.Sprintf("decode-bw (math "+math+"): slope fp16 %.3g ns/token, e4m3 %.3g ns/token (ratio %.3f); at %d tokens fp16 %.3g GB/s, e4m3 %.3g GB/s; a plain streaming read: %.3g GB/s",
		summary["fp16_slope_ns"], summary["e4m3_slope_ns"], summary["slope_ratio"], maxL, summary["fp16_bw_gbs"], summary["e4m3_bw_gbs"], summary["stream_gbs"]))
	return nil
}
