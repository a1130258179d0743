package experiments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

// The device parameter of the needle experiments: where the FP8 kernels run.
const (
	deviceCPU = "cpu"
	deviceGPU = "gpu"
)

func deviceParam() sim.Param {
	return sim.Param{Name: "device", Kind: sim.KindChoice, Default: deviceCPU, Choices: []string{deviceCPU, deviceGPU},
		Doc: "where the kernels run: cpu (package attention) or gpu (the same arithmetic in WGSL through WebGPU, " +
			"bit for bit, all trials of a haystack at once) for every series the WGSL simulator runs (e4m3, e5m2, bf16, f16 MMAs and the native block-scaled path, head_dim 64/128/256); " +
			"the other series, baselines with sinks and references stay on the CPU, and the run's notes say which series ran where"}
}

// gpuTrialBatch is the most trials of one haystack sent to the GPU at once
// (memory: a patched V tile of head_dim × kBlockN bytes per trial).
const gpuTrialBatch = 4096

// trialsGPU runs the count trials of haystack h (key tkey) with the runs
// the WGSL simulator runs on the GPU (device gpu) and returns what
// sim.Trials over t.trial returns on the CPU: the trials draw exactly what
// they draw there (the same generators), those kernels run through
// wgsl.SimDecodeTrials, one batch per run and promotion interval, over the
// shared haystack (one cache per KV format) with each trial's needle and
// sinks as replaced tokens, and everything else (runs SimDecodeSupports
// refuses, the baselines of the legacy probe, the references O*) runs on
// the CPU as before. The outcomes equal the CPU path's, bit for bit
// (TestNeedleGPUEqualsCPU).
func (t attnNeedle) trialsGPU(ctx context.Context, run *sim.Run, tkey string, h *attnHaystack, n, count int, runs []attnNeedleRun) ([]attnNeedleTrialResult, error) {
	g := t.gpu
	nSeries := 0
	for _, r := range runs {
		nSeries += len(r.series)
	}
	// A run goes to the GPU when the WGSL simulator runs its configuration
	// (wgsl.SimDecodeSupports: e4m3/e5m2/bf16/f16 MMA, head_dim 64/128/256,
	// the native block-scaled path, ...);
	// the others stay on the CPU.
	onGPU := t.onGPU
	draws := make([]attnNeedleDraw, count)
	for i := range draws {
		draws[i] = t.draw(n, sim.TrialRand(run.Seed, tkey, i))
	}
	// hit[i][s], errs[i][s]: trial i, series s (in the order of runs).
	hit := make([][]bool, count)
	errs := make([][]attention.Errors, count)
	for i := range hit {
		hit[i] = make([]bool, nSeries)
		errs[i] = make([]attention.Errors, nSeries)
	}
	// The caches the GPU runs read (runs with one cache share it, and its
	// baseline and reference), and the runs that stay on the CPU.
	var gpuCaches []string
	gpuCfg := map[string]attention.Config{}
	var cpuRuns []attnNeedleRun
	for _, r := range runs {
		if !onGPU(r) {
			cpuRuns = append(cpuRuns, r)
			continue
		}
		if _, ok := gpuCfg[r.cache()]; !ok {
			gpuCaches = append(gpuCaches, r.cache())
			gpuCfg[r.cache()] = r.cfg
		}
	}
	// The CPU part, trial by trial on every core: the runs not on the GPU,
	// and per GPU cache the baseline and the reference of its runs.
	type cpuPart struct {
		base, ref map[string][]float64
		res       attnNeedleTrialResult
	}
	parts, err := sim.Trials(ctx, run, tkey, count, func(i int, _ *rand.Rand) cpuPart {
		p := cpuPart{base: map[string][]float64{}, ref: map[string][]float64{}}
		dr := draws[i]
		var exact []float64 // computed once for the CPU and the GPU runs
		if t.exactErr {
			exact = t.exact(h, dr.q, dr.pos, dr.needleK, dr.needleV, dr.sinkK, dr.sinkV)
		}
		if len(cpuRuns) > 0 {
			p.res = t.trialDrawn(ctx, h, dr, cpuRuns, exact)
		}
		for _, name := range gpuCaches {
			kv := h.borrow(name)
			saved := t.patch(kv, dr)
			cfg := gpuCfg[name]
			base, ref, err := t.references(ctx, cfg, dr.q, kv, exact)
			if rerr := restore(kv, saved); rerr != nil {
				err = errors.Join(err, rerr) // the copy is dropped, not given back
			} else {
				h.giveBack(name, kv)
			}
			if err != nil {
				p.res.e = err
				break
			}
			p.base[name], p.ref[name] = base, ref
		}
		return p
	})
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	for i, p := range parts {
		if p.res.e != nil {
			return nil, p.res.e
		}
		s, k := 0, 0
		for _, r := range runs {
			for range r.series {
				if !onGPU(r) {
					hit[i][s] = p.res.hit[k]
					errs[i][s] = p.res.err[k]
					k++
				}
				s++
			}
		}
	}
	// The GPU part: one batch per run and promotion interval.
	s := 0
	for _, r := range runs {
		if !onGPU(r) {
			s += len(r.series)
			continue
		}
		name := r.cache()
		kv := h.base[name]
		cfg := t.gpuConfig(r)
		if cfg.KBlockN == 0 {
			// The tiles attention.RunPromotions picks from the run's
			// own promotion, the same for every interval it runs.
			p, err := cfg.Plan(1, nil, kv)
			if err != nil {
				return nil, err
			}
			cfg.KBlockN = p.KBlockN
		}
		simTrials := make([]wgsl.SimTrial, count)
		for i, dr := range draws {
			simTrials[i] = wgsl.SimTrial{Q: dr.q, Tokens: t.replaced(kv, dr)}
		}
		for pi, promote := range r.promotions {
			cfg.Promotion = promote
			for lo := 0; lo < count; lo += gpuTrialBatch {
				hi := min(lo+gpuTrialBatch, count)
				outs, err := g.SimDecodeTrials(ctx, cfg, nil, kv, simTrials[lo:hi])
				if err != nil {
					return nil, fmt.Errorf("%s on the GPU: %w", r.series[pi], err)
				}
				for j, o := range outs {
					i := lo + j
					hit[i][s+pi] = t.retrieve(o, parts[i].base[name], draws[i].codes) == draws[i].truth
					errs[i][s+pi] = attention.Compare(o, parts[i].ref[name])
				}
			}
		}
		s += len(r.series)
	}
	res := make([]attnNeedleTrialResult, count)
	for i := range res {
		res[i] = attnNeedleTrialResult{hit: hit[i], err: errs[i]}
	}
	return res, nil
}

// onGPU reports whether run r goes to the GPU: the WGSL simulator runs its
// configuration (wgsl.SimDecodeSupports, split-KV included).
func (t attnNeedle) onGPU(r attnNeedleRun) bool {
	return wgsl.SimDecodeSupports(t.gpuConfig(r)) == nil
}

// gpuConfig is run r's configuration as the GPU reads it: one KV head and
// one query head of head_dim t.d, the run's dtype.
func (t attnNeedle) gpuConfig(r attnNeedleRun) attention.Config {
	cfg := r.cfg
	cfg.HeadDim, cfg.KVHeads, cfg.QHeads, cfg.DType = t.d, 1, 1, r.dtype
	return cfg
}

// replaced returns the tokens trial dr writes into kv (sinks, needle) as
// the cache's codes, leaving kv as it was.
func (t attnNeedle) replaced(kv *attention.KV, dr attnNeedleDraw) []wgsl.SimToken {
	saved := t.patch(kv, dr)
	toks := make([]wgsl.SimToken, 0, len(saved))
	for _, st := range saved {
		tok := st.Token()
		tk, err := wgsl.SimTokenOf(kv, tok, 0) // codes, and a block-scaled cache's scales and V block
		if err != nil {
			panic(err) // tok lies in the cache: patch wrote it
		}
		toks = append(toks, tk)
	}
	if err := restore(kv, saved); err != nil {
		panic(err) // restoring what patch saved from this cache cannot fail
	}
	return toks
}

// useDevice opens the GPU into t.gpu when the run's device is gpu; the
// caller defers the returned function, which closes it.
func (t *attnNeedle) useDevice(ctx context.Context, v sim.Values) (func(), error) {
	g, err := openDevice(ctx, v)
	if err != nil || g == nil {
		return func() {}, err
	}
	t.gpu = g
	return func() { g.Close() }, nil
}

// openDevice opens the GPU for a run whose device parameter is gpu (nil,
// nil for cpu); the caller closes it.
func openDevice(ctx context.Context, v sim.Values) (*wgsl.Runner, error) {
	if v.String("device") != deviceGPU {
		return nil, nil
	}
	g, err := wgsl.Open(ctx, wgsl.Options{})
	if err != nil {
		return nil, fmt.Errorf("device gpu: %w", err)
	}
	return g, nil
}

// deviceNote says, for a run on the GPU, which series ran there and which
// stayed on the CPU and why ("" on the CPU).
func (t attnNeedle) deviceNote(runs []attnNeedleRun) string {
	if t.gpu == nil {
		return ""
	}
	var on, off []string
	for _, r := range runs {
		label := strings.Join(r.series, ", ")
		if err := wgsl.SimDecodeSupports(t.gpuConfig(r)); err != nil {
			off = append(off, fmt.Sprintf("%s (%v)", label, err))
		} else {
			on = append(on, label)
		}
	}
	note := fmt.Sprintf("device gpu: %d of %d kernels on the GPU (%s)", len(on), len(runs), t.gpu.Info().Name)
	if len(on) > 0 {
		note += ": " + strings.Join(on, "; ")
	}
	if len(off) > 0 {
		note += "\non the CPU: " + strings.Join(off, "; ")
	}
	return note
}
