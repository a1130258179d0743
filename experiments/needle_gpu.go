package experiments

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
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
		Doc: "where the FP8 kernels run: cpu (package attention) or gpu (the same arithmetic in WGSL through WebGPU, " +
			"bit for bit, all trials of a haystack at once; bf16 series, baselines with sinks and references stay on the CPU)"}
}

// gpuTrialBatch is the most trials of one haystack sent to the GPU at once
// (memory: a patched V tile of head_dim × kBlockN bytes per trial).
const gpuTrialBatch = 4096

// trialsGPU runs the count trials of haystack h (key tkey) with the FP8
// runs on the GPU (device gpu) and returns what sim.Trials over t.trial
// returns on the CPU: the trials draw exactly what they draw there (the
// same generators), the FP8 kernels run through wgsl.SimDecodeTrials, one
// batch per run and promotion interval, over the shared haystack with each
// trial's needle and sinks as replaced tokens, and everything else (bf16
// runs, the baselines with sinks, the references of withErr) runs on the
// CPU as before. The outcomes equal the CPU path's, bit for bit
// (TestNeedleGPUEqualsCPU).
func (t attnNeedle) trialsGPU(ctx context.Context, run *sim.Run, tkey string, h *attnHaystack, n, count int, runs []attnNeedleRun, withErr bool) ([]attnNeedleTrialResult, error) {
	g := t.gpu
	nSeries := 0
	for _, r := range runs {
		nSeries += len(r.series)
	}
	// The GPU runs the FP8 caches of one scale per tensor (attention.NewKV's);
	// the KV formats of kv-formats (r.spec) stay on the CPU.
	onGPU := func(r attnNeedleRun) bool {
		return r.spec == nil && (r.dtype == fp8.FormatE4M3 || r.dtype == fp8.FormatE5M2)
	}
	draws := make([]attnNeedleDraw, count)
	for i := range draws {
		draws[i] = t.draw(n, sim.TrialRand(run.Seed, tkey, i))
	}
	// hit[i][s], errs[i][s]: trial i, series s (in the order of runs).
	hit := make([][]bool, count)
	errs := make([][]float64, count)
	for i := range hit {
		hit[i] = make([]bool, nSeries)
		errs[i] = make([]float64, nSeries)
	}
	// The CPU part, trial by trial on every core: runs not on the GPU,
	// and the baselines and references the GPU runs need.
	type cpuPart struct {
		base []float64
		ref  []float64
		res  attnNeedleTrialResult
	}
	gpuCache := "" // one FP8 cache in the needle experiments
	for _, r := range runs {
		if onGPU(r) {
			gpuCache = r.cache()
		}
	}
	parts, err := sim.Trials(ctx, run, tkey, count, func(i int, _ *rand.Rand) cpuPart {
		var p cpuPart
		dr := draws[i]
		var cpuRuns []attnNeedleRun
		for _, r := range runs {
			if !onGPU(r) {
				cpuRuns = append(cpuRuns, r)
			}
		}
		if len(cpuRuns) > 0 {
			p.res = t.trialDrawn(ctx, h, dr, cpuRuns, withErr)
		}
		if gpuCache != "" {
			kv := h.borrow(gpuCache)
			saved := t.patch(kv, dr)
			var cfg attention.Config
			for _, r := range runs {
				if onGPU(r) {
					cfg = r.cfg
				}
			}
			var err error
			if p.base, err = t.baseline(ctx, cfg, dr.q, kv); err == nil && withErr {
				if t.exactErr {
					p.ref = t.exact(h, dr.q, dr.pos, dr.needleK, dr.needleV, dr.sinkK, dr.sinkV)
				} else {
					p.ref, err = attention.ReferenceQuantized(ctx, cfg, dr.q, nil, kv)
				}
			}
			restore(kv, saved)
			h.giveBack(gpuCache, kv)
			if err != nil {
				p.res.e = err
			}
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
					if withErr {
						errs[i][s] = p.res.err[k]
					}
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
		kv := h.base[r.cache()]
		cfg := r.cfg
		cfg.HeadDim, cfg.KVHeads, cfg.QHeads = t.d, 1, 1
		if cfg.KBlockN == 0 {
			// The tiles attention.RunPromotions picks from the run's
			// own promotion, the same for every interval it runs.
			_, cfg.KBlockN = attention.DefaultTiles(cfg.HeadDim, r.dtype, attention.IsDecode(cfg.HeadDim, cfg.Window, 1, 1), cfg.Window > 0, cfg.Promotion > 0)
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
					hit[i][s+pi] = attnRetrieveFrom(o, parts[i].base, draws[i].codes, t.d) == draws[i].truth
					if withErr {
						errs[i][s+pi] = attention.Compare(o, parts[i].ref).RelL2
					}
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

// replaced returns the tokens trial dr writes into kv (sinks, needle) as
// the cache's codes, leaving kv as it was.
func (t attnNeedle) replaced(kv *attention.KV, dr attnNeedleDraw) []wgsl.SimToken {
	saved := t.patch(kv, dr)
	toks := make([]wgsl.SimToken, 0, len(saved))
	for tok := range saved {
		k, v := kv.TokenCodes(tok, 0)
		toks = append(toks, wgsl.SimToken{Pos: tok, K: k, V: v})
	}
	restore(kv, saved)
	return toks
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
