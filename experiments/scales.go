package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
	"github.com/fp8lab/fp8lab/internal/stats"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

func init() { sim.Register(Scales{}) }

// Scales is the `scales` experiment: the output error of FP8 attention with
// uncalibrated (1.0), per-tensor and per-KV-head scales, on KV caches whose
// heads differ in magnitude.
type Scales struct{}

// Name returns "scales".
func (Scales) Name() string { return "scales" }

// Doc describes the experiment.
func (Scales) Doc() string {
	return `Output error of FP8 attention with scale 1.0, per-tensor amax scales and per-KV-head amax scales, on KV caches with outlier heads.

A decode query per query head over a KV cache of kv-heads heads (GQA with
q-per-kv query heads per KV head), head_dim 128. KV head h has K and V of
magnitude f_h = base·2^(head_spread·z_h) (z_h ~ N(0,1)) times the outlier
factor for the first outlier-heads heads: K ~ f_h·N(0,1), V ~ f_h·(value-mean +
N(0,1)); its queries are N(0,1)/f_h, so every head's logits are about N(0,1)
whatever its magnitude (the question is the quantization, not the softmax).

Series (x = outlier factor, y = relative L2 error of O in %, mean over query
heads, against the float64 attention on the unquantized inputs):
  scale 1.0        k, v, q descales 1.0 (vLLM's default; the published runs)
  per-tensor amax  one amax/448 scale per tensor (vLLM calculate_kv_scales,
                   llm-compressor per-tensor)
  per-head amax    one amax/448 scale per KV head for k, v and q (vLLM #30141
                   with llm-compressor attn_head; FA3's (batch, num_heads_k)
                   descales)
  bf16             the bf16 kernel, for scale
Quantization is satfinite(x / scale) (vLLM's cache write and query quant); the
fp8 kernels promote P·V every tile (promotion parameter). Extra fields: worst
(the worst head), normal (mean over the non-outlier heads), outlier (mean over
the outlier heads), saturated and underflow (fractions of K/V/Q elements that
the cast clamps to ±max or flushes to 0), and the decomposition of the
error: alpha (the shrinkage <O, O*>/<O*, O*>) and residual (%), with 95 %
intervals from the variation between trials (each trial a cache of its
own). The summary gives relerr and worst in % (as the points), alpha.`
}

// scalesSchemes are the fp8 series.
var scalesSchemes = []string{"scale 1.0", "per-tensor amax", "per-head amax"}

// Params returns the parameter schema.
func (Scales) Params() []sim.Param {
	return []sim.Param{
		{Name: "outlier", Doc: "magnitude factors of the outlier heads", Kind: sim.KindInts, Default: []int{1, 10, 100, 1000, 10000, 100000}, Min: 1, Max: 100000000},
		{Name: "outlier-heads", Aliases: []string{"outlier_heads"}, Doc: "number of outlier KV heads", Kind: sim.KindInt, Default: 1, Min: 0, Max: 64},
		{Name: "kv-heads", Aliases: []string{"kv_heads"}, Doc: "KV heads", Kind: sim.KindInt, Default: 8, Min: 1, Max: 64},
		{Name: "q-per-kv", Aliases: []string{"q_per_kv"}, Doc: "query heads per KV head (GQA)", Kind: sim.KindInt, Default: 2, Min: 1, Max: 16},
		{Name: "tokens", Doc: "context length", Unit: "tokens", Kind: sim.KindInt, Default: 4096, Min: 1, Max: 1 << 20},
		{Name: "base", Doc: "magnitude of the ordinary heads", Kind: sim.KindFloat, Default: 1.0, Min: 1e-6, Max: 1e6},
		{Name: "head-spread", Aliases: []string{"head_spread"}, Doc: "spread of the ordinary heads' magnitudes (standard deviation of log2)", Kind: sim.KindFloat, Default: 1.0, Min: 0, Max: 10},
		{Name: "value-mean", Aliases: []string{"value_mean"}, Doc: "mean of the values relative to their spread", Kind: sim.KindFloat, Default: 0.5, Min: -100, Max: 100},
		{Name: "dtype", Doc: "fp8 format of the cache", Kind: sim.KindChoice, Default: "e4m3", Choices: []string{"e4m3", "e5m2"}},
		{Name: "promotion", Doc: "P·V promotion interval of the fp8 kernels in tiles (0 never, 1 every tile)", Kind: sim.KindInt, Default: 1, Min: 0, Max: 1 << 20},
		{Name: "trials", Doc: "random caches per outlier factor", Kind: sim.KindInt, Default: 4, Min: 1, Max: 100000},
		deviceParam(),
	}
}

// scalesResult is one trial's errors per series (bf16 last) and per query
// head, with the fractions of clamped and flushed elements per fp8 scheme.
type scalesResult struct {
	err       [][]attention.Errors // [series][query head]
	saturated []float64
	underflow []float64
	e         error
}

// Run runs the trials of every outlier factor.
func (Scales) Run(ctx context.Context, run *sim.Run) error {
	v := run.Values
	kvh, group, trials := v.Int("kv-heads"), v.Int("q-per-kv"), v.Int("trials")
	nOut := min(v.Int("outlier-heads"), kvh)
	dtype, err := fp8.ParseFormat(v.String("dtype"))
	if err != nil {
		return err
	}
	g, closeGPU := openDevice(ctx, v) // opens while the first trials draw their caches
	defer closeGPU()
	run.AddTotal(int64(len(v.Ints("outlier")) * trials))
	summary := map[string]float64{}
	series := append(append([]string{}, scalesSchemes...), "bf16")
	table := []string{fmt.Sprintf("%9s  %-16s %9s %9s %9s %9s %10s %10s", "outlier", "series", "mean %", "ordinary", "outlier", "worst %", "saturated", "underflow")}
	// Every factor's trials in one pool (a factor's few trials alone left
	// most cores idle), each factor's points emitted once it and those
	// before it are done.
	factors := v.Ints("outlier")
	sets := make([]sim.TrialSet, len(factors))
	for i, factor := range factors {
		sets[i] = sim.TrialSet{Key: fmt.Sprintf("scales/%d", factor), N: trials}
	}
	// With the GPU a trial waits for the device (its open, then its
	// batch) holding its worker: extra workers draw other trials meanwhile
	// (on the H200 the 16 workers of the defaults sat idle 0.2 s waiting
	// for the open), as many as scalesWaitBytes of their inputs allow.
	workers := runtime.GOMAXPROCS(0)
	if g != nil {
		per := int64(v.Int("tokens")) * int64(kvh) * scalesHeadDim * scalesTrialBytes
		workers += int(min(int64(workers), scalesWaitBytes/max(per, 1)))
	}
	err = sim.TrialSetsWorkers(ctx, run, sets, workers, func(set, trial int, _ *rand.Rand) scalesResult {
		// The trial's generator itself (TrialRand wraps it), for FillNormal.
		return scalesTrial(ctx, sim.TrialSource(run.Seed, sets[set].Key, trial), v, dtype, float64(factors[set]), nOut, g)
	}, func(set int, res []scalesResult) error {
		factor := factors[set]
		for s, name := range series {
			var mean, worst, normal, outl, sat, under float64
			var nn, no int
			var relerr, alpha, residual []stats.Cluster // one cluster per trial (its query heads)
			for _, r := range res {
				if r.e != nil {
					return r.e
				}
				var cr, ca, cs stats.Cluster
				for hq, e := range r.err[s] {
					mean += e.RelL2
					worst = max(worst, e.RelL2)
					if hq/group < nOut {
						outl += e.RelL2
						no++
					} else {
						normal += e.RelL2
						nn++
					}
					cr.N, cr.Sum = cr.N+1, cr.Sum+e.RelL2
					ca.N, ca.Sum = ca.N+1, ca.Sum+e.Alpha
					cs.N, cs.Sum = cs.N+1, cs.Sum+e.Residual
				}
				relerr, alpha, residual = append(relerr, cr), append(alpha, ca), append(residual, cs)
				if s < len(scalesSchemes) {
					sat += r.saturated[s]
					under += r.underflow[s]
				}
			}
			mean /= float64(len(res) * kvh * group)
			extra := map[string]float64{"worst": 100 * worst, "saturated": sat / float64(len(res)), "underflow": under / float64(len(res))}
			if nn > 0 {
				extra["normal"] = 100 * normal / float64(nn)
			}
			if no > 0 {
				extra["outlier"] = 100 * outl / float64(no)
			}
			put := func(key string, cs []stats.Cluster, positive bool, scale float64) {
				iv := stats.Mean(cs, positive)
				for k, v := range map[string]float64{key: iv.Est, key + "_lo": iv.Lo, key + "_hi": iv.Hi} {
					if !math.IsNaN(v) {
						extra[k] = scale * v
					}
				}
			}
			put("relerr", relerr, true, 100)
			put("alpha", alpha, false, 1)
			put("residual", residual, true, 100)
			key := map[string]string{"scale 1.0": "unit", "per-tensor amax": "tensor", "per-head amax": "head", "bf16": "bf16"}[name]
			summary[fmt.Sprintf("relerr_%s_x%d", key, factor)] = 100 * mean
			summary[fmt.Sprintf("worst_%s_x%d", key, factor)] = 100 * worst
			summary[fmt.Sprintf("alpha_%s_x%d", key, factor)] = extra["alpha"]
			if err := run.Emit(sim.Point{Series: name, X: float64(factor), Y: 100 * mean, Extra: extra}); err != nil {
				return err
			}
			table = append(table, fmt.Sprintf("%9d  %-16s %9.4f %9.4f %9.4f %9.4f %10.2e %10.2e", factor, name, 100*mean,
				extra["normal"], extra["outlier"], 100*worst, extra["saturated"], extra["underflow"]))
		}
		return nil
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	if g != nil && g.Err() == nil {
		where := "bf16's too"
		if err := wgsl.SimDecodeSupports(scalesBF16(attention.Config{HeadDim: scalesHeadDim, KVHeads: kvh, QHeads: kvh * group})); err != nil {
			where = fmt.Sprintf("bf16's on the CPU (%v)", err)
		}
		run.Note(fmt.Sprintf("device gpu: the fp8 kernels on the GPU (%s), %s; the float64 references on the CPU", g.Info().Name, where))
	}
	run.Note("relative L2 error of O (%): mean over query heads, ordinary and outlier heads, worst head; fraction of K/V/Q elements clamped or flushed:\n" + strings.Join(table, "\n"))
	run.Summary(summary)
	return nil
}

// scalesChunk is the tokens of a trial's cache drawn at a time (it
// divides 1024, the tokens between looks at ctx).
const scalesChunk = 64

// scalesTrial draws one cache and query and runs every series, the
// series side by side on their own goroutines. With g set (device gpu)
// the kernels run on the GPU (wgsl.SimDecode, bit for bit attention.Run):
// the fp8 ones, and bf16's where the simulator runs it
// (wgsl.SimDecodeSupports); the references stay on the CPU.
func scalesTrial(ctx context.Context, src *rand.PCG, v sim.Values, dtype fp8.Format, factor float64, nOut int, g *wgsl.Runner) scalesResult {
	const d = scalesHeadDim
	rng := rand.New(src) // draws from src: what rng draws, src has drawn
	kvh, group, n := v.Int("kv-heads"), v.Int("q-per-kv"), v.Int("tokens")
	qh := kvh * group
	mag := make([]float64, kvh)
	for h := range mag {
		mag[h] = v.Float("base") * math.Exp2(v.Float("head-spread")*pmath.NormFloat64(rng))
		if h < nOut {
			mag[h] *= factor
		}
	}
	shape := fp8.Shape{Tokens: n, Heads: kvh, Dim: d}
	k, vv := make([]float32, shape.Len()), make([]float32, shape.Len())
	valueMean := v.Float("value-mean") // read once: a map lookup per element was 5 % of a run in wasm
	// k[i] and vv[i] from the normals 2i and 2i+1 of src, i = (t·kvh+h)·d+x
	// (one NormFloat64 call each, in that order): k[i] = float32(mag[h]·z),
	// vv[i] = float32(mag[h]·(valueMean + z')), scalesChunk tokens at a
	// time (a kernel call each in the js/wasm build).
	z := make([]float64, 2*kvh*d*min(n, scalesChunk))
	for t := 0; t < n; t += scalesChunk {
		if t%1024 == 0 && ctx.Err() != nil {
			return scalesResult{e: ctx.Err()}
		}
		m := min(scalesChunk, n-t)
		zc := z[:2*kvh*d*m]
		pmath.FillNormal(zc, src)
		pmath.PairsToF32Heads(k[t*kvh*d:][:kvh*d*m], vv[t*kvh*d:][:kvh*d*m], zc, mag, d, valueMean)
	}
	q := make([]float32, qh*d)
	for hq := 0; hq < qh; hq++ {
		for x := 0; x < d; x++ {
			q[hq*d+x] = float32(pmath.NormFloat64(rng) / mag[hq/group])
		}
	}
	cfg := attention.Config{HeadDim: d, KVHeads: kvh, QHeads: qh, Promotion: v.Int("promotion")}
	var res scalesResult
	ref, err := attention.ReferenceF32(ctx, cfg, q, k, vv, 1, n) // Reference's bits, no float64 copies
	if err != nil {
		return scalesResult{e: err}
	}
	qShape := fp8.Shape{Tokens: group, Heads: kvh, Dim: d} // q heads of a KV head are consecutive
	// The schemes and bf16 run side by side, each on its own goroutine,
	// each result kept at its index. With g, the decodes go to the GPU in
	// one batch (one submission for the three fp8 caches, which differ
	// only in their descales, then bf16's), sent by the first series whose
	// cache is ready once every one's is (a series that failed sends
	// nothing).
	bf16Cfg := scalesBF16(cfg)
	bf16GPU := g != nil && wgsl.SimDecodeSupports(bf16Cfg) == nil
	onDevice := len(scalesSchemes)
	if bf16GPU {
		onDevice++
	}
	type part struct {
		err        []attention.Errors
		sat, under float64
		e          error
	}
	parts := make([]part, len(scalesSchemes)+1)
	var (
		ready    sync.WaitGroup // every scheme's cache quantized (or failed)
		batch    sync.Once
		jobs     = make([]*wgsl.SimJob, onDevice)
		outs     = make([][]float64, onDevice)
		batchErr error
	)
	ready.Add(onDevice)
	onGPU := func(si int, job wgsl.SimJob) ([]float64, error) {
		// Packed here, side by side with the other series and the other
		// trials, not in the batch under the runner's lock (a trial's
		// packing was the GPU's queue at 65536 tokens). A cache the
		// simulator cannot pack ahead (nil) is packed by the batch.
		if pc, err := wgsl.PackSimCache(job.Cfg, job.QScale, job.KV); err == nil {
			job.Packed = pc
			defer pc.Release() // after the batch: no call reads it then
		}
		jobs[si] = &job
		ready.Done()
		ready.Wait()
		batch.Do(func() {
			var js []wgsl.SimJob
			var at []int
			for i, j := range jobs {
				if j != nil {
					js, at = append(js, *j), append(at, i)
				}
			}
			o, err := g.SimDecodeBatch(ctx, js)
			if err != nil {
				batchErr = err
				return
			}
			for k, i := range at {
				outs[i] = o[k][0]
			}
		})
		return outs[si], batchErr
	}
	var wg sync.WaitGroup
	for si, scheme := range scalesSchemes {
		wg.Go(func() {
			p := &parts[si]
			sent := false // with g: whether this scheme has joined the batch
			defer func() {
				if g != nil && !sent {
					ready.Done()
				}
			}()
			var ks, vs, qs []float32
			switch scheme {
			case "scale 1.0":
				ks, vs, qs = []float32{1}, []float32{1}, []float32{1}
			default:
				g := fp8.PerTensor
				if scheme == "per-head amax" {
					g = fp8.PerHead
				}
				ks, _ = fp8.Calibrate(k, shape, g, dtype)
				vs, _ = fp8.Calibrate(vv, shape, g, dtype)
				qs, _ = fp8.Calibrate(scalesGroupQ(q, kvh, group, d), qShape, g, dtype)
			}
			kv, err := attention.NewKVContext(ctx, k, vv, shape, dtype, fp8.SatFinite, ks, vs)
			if err != nil {
				p.e = err
				return
			}
			c := cfg
			c.DType = dtype
			var o []float64
			if g != nil {
				sent = true
				o, err = onGPU(si, wgsl.SimJob{Cfg: c, QScale: qs, KV: kv, Trials: []wgsl.SimTrial{{Q: q}}})
			} else {
				o, err = attention.Run(ctx, c, q, qs, kv)
			}
			if err != nil {
				p.e = err
				return
			}
			p.err = scalesPerHead(o, ref, qh, d)
			sat, under := scalesClamped(k, shape, ks, dtype)
			sv, uv := scalesClamped(vv, shape, vs, dtype)
			sq, uq := scalesClamped(scalesGroupQ(q, kvh, group, d), qShape, qs, dtype)
			total := float64(2*len(k) + len(q))
			p.sat, p.under = (sat+sv+sq)/total, (under+uv+uq)/total
		})
	}
	wg.Go(func() {
		si := len(scalesSchemes)
		p := &parts[si]
		sent := false
		defer func() {
			if bf16GPU && !sent {
				ready.Done()
			}
		}()
		kv, err := attention.NewKVContext(ctx, k, vv, shape, fp8.FormatBF16, fp8.SatFinite, nil, nil)
		if err != nil {
			p.e = err
			return
		}
		var o []float64
		if bf16GPU {
			sent = true
			o, err = onGPU(si, wgsl.SimJob{Cfg: bf16Cfg, KV: kv, Trials: []wgsl.SimTrial{{Q: q}}})
		} else {
			o, err = attention.Run(ctx, bf16Cfg, q, nil, kv)
		}
		if err != nil {
			p.e = err
			return
		}
		p.err = scalesPerHead(o, ref, qh, d)
	})
	wg.Wait()
	for i, p := range parts {
		if p.e != nil {
			return scalesResult{e: p.e}
		}
		res.err = append(res.err, p.err)
		if i < len(scalesSchemes) {
			res.saturated = append(res.saturated, p.sat)
			res.underflow = append(res.underflow, p.under)
		}
	}
	return res
}

// scalesHeadDim is the head dimension of every trial.
const scalesHeadDim = 128

// scalesTrialBytes is about the bytes a trial holds per K element: K and V
// as float32 (8), four caches of 16-bit codes, K's and V's (16), and
// their packed copies for the GPU (10); scalesWaitBytes bounds the inputs
// of the extra trials a GPU run draws while others wait (1 GiB, the
// needle's group budget).
const (
	scalesTrialBytes = 34
	scalesWaitBytes  = 1 << 30
)

// scalesBF16 is the bf16 series' configuration: cfg's shape, bf16 K and
// V, promotion 0 (the bf16 series has always run so).
func scalesBF16(cfg attention.Config) attention.Config {
	cfg.DType, cfg.Promotion = fp8.FormatBF16, 0
	return cfg
}

// scalesGroupQ lays the queries out as a [group][kv heads][d] tensor, so
// that fp8.Calibrate's per-head scales are FA3's per-KV-head q_descale (the
// query heads of KV head h are h·group … h·group+group−1).
func scalesGroupQ(q []float32, kvh, group, d int) []float32 {
	out := make([]float32, len(q))
	for h := 0; h < kvh; h++ {
		for g := 0; g < group; g++ {
			copy(out[(g*kvh+h)*d:][:d], q[(h*group+g)*d:][:d])
		}
	}
	return out
}

// scalesPerHead returns the errors of each query head's output.
func scalesPerHead(o, ref []float64, qh, d int) []attention.Errors {
	e := make([]attention.Errors, qh)
	for h := range e {
		e[h] = attention.Compare(o[h*d:(h+1)*d], ref[h*d:(h+1)*d])
	}
	return e
}

// scalesClamped counts the elements of x (laid out as shape) that the cast
// x/scale clamps to ±max or flushes to zero (x ≠ 0).
//
// The float32 quotient |x|/s and the cast are monotonic in |x| (rounding to
// nearest, symmetric in the sign), so for each scale s a few magnitudes
// found once (scalesBounds) decide every element by comparing the bits of
// |x|, without a division or a cast per element: the same counts as asking
// the cast about every element (TestScalesClampedCountsAsTheCast,
// FuzzScalesClamped).
func scalesClamped(x []float32, shape fp8.Shape, scales []float32, f fp8.Format) (sat, under float64) {
	bounds := make([]scalesBound, len(scales))
	for h, s := range scales {
		bounds[h] = scalesBounds(s, f)
	}
	if len(scales) == 1 && bounds[0].ok { // one scale: the whole tensor at once
		return bounds[0].count(x[:shape.Len()])
	}
	// A head at a time: its rows, a row of heads apart, counted in one call
	// (pmath.CountAbsAboveRows: one kernel call in the js/wasm build). The
	// counts are integers, so their float64 sums are exact in any order.
	row := shape.Heads * shape.Dim
	for h := 0; h < shape.Heads; h++ {
		b := bounds[min(h, len(bounds)-1)]
		if !b.ok { // a scale that is not a positive finite number: the cast on each
			for t := 0; t < shape.Tokens; t++ {
				for _, y := range x[t*row+h*shape.Dim:][:shape.Dim] {
					s, u := scalesClampedOne(y, scales[min(h, len(scales)-1)], f)
					sat += s
					under += u
				}
			}
			continue
		}
		s, u := b.countRows(x[h*shape.Dim:], row, shape.Tokens, shape.Dim)
		sat += s
		under += u
	}
	return sat, under
}

// count is scalesClamped of x for valid bounds: the elements above sat
// less the NaNs (above +Inf), and those at least nonzero less those above
// zero (nonzero ≤ zero+1, so these are the ones between; a NaN is in
// both), counted by their magnitudes' bits (pmath.CountAbsAbove).
func (b scalesBound) count(x []float32) (sat, under float64) {
	return b.countRows(x, len(x), 1, len(x))
}

// countRows is count over rows rows of cols elements, rowStride apart in x.
func (b scalesBound) countRows(x []float32, rowStride, rows, cols int) (sat, under float64) {
	c := pmath.CountAbsAboveRows(x, rowStride, rows, cols, [4]uint32{b.sat, 0x7f800000, b.nonzero - 1, b.zero})
	return float64(c[0] - c[1]), float64(c[2] - c[3])
}

// scalesClampedOne is the cast's answer for one element: whether x/s
// saturates (|x/s| > max) or flushes to zero (x/s ≠ 0, encoded as ±0).
func scalesClampedOne(x, s float32, f fp8.Format) (sat, under float64) {
	y := x / s
	switch {
	case math.Abs(float64(y)) > float64(fp8.MaxFinite(f)):
		return 1, 0
	case y != 0 && math.Abs(float64(y)) < f.Value(1) && f.Encode(y, fp8.SatFinite)&0x7f == 0: // fp8 codes: sign in bit 7
		return 0, 1
	}
	return 0, 0
}

// scalesBound holds, for one scale s, bits of float32 magnitudes a: a > sat
// saturates (|a/s| > max), nonzero ≤ a ≤ zero flushes to zero (a/s ≠ 0
// and cast to ±0). ok is false for a scale that is not a positive finite
// number (the bounds then mean nothing).
type scalesBound struct {
	sat, nonzero, zero uint32
	ok                 bool
}

// scalesBounds finds the bounds of s by bisection over the bits of the
// magnitudes 0 … +∞ (each predicate is monotonic in the magnitude).
func scalesBounds(s float32, f fp8.Format) scalesBound {
	if !(s > 0) || math.IsInf(float64(s), 1) {
		return scalesBound{}
	}
	const inf = 0x7f800000
	// last returns the largest bits b in [0, inf] with p(b), given p(0)
	// and p monotonic (true, then false); inf when p holds everywhere.
	last := func(p func(a float32) bool) uint32 {
		lo, hi := uint32(0), uint32(inf) // p(lo) holds
		if p(math.Float32frombits(hi)) {
			return hi
		}
		for hi-lo > 1 { // p(lo), !p(hi)
			mid := lo + (hi-lo)/2
			if p(math.Float32frombits(mid)) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return lo
	}
	satB := last(func(a float32) bool { sat, _ := scalesClampedOne(a, s, f); return sat == 0 })
	zeroQ := last(func(a float32) bool { return a/s == 0 }) // quotients of 0
	zeroC := last(func(a float32) bool {
		y := a / s
		return math.Abs(float64(y)) < f.Value(1) && f.Encode(y, fp8.SatFinite)&0x7f == 0
	})
	return scalesBound{sat: satB, nonzero: zeroQ + 1, zero: zeroC, ok: true}
}
