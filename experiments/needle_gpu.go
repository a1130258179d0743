package experiments

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/trace"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
)

// gpuTrialBatch is the most trials sent to the GPU in one call (memory: a
// patched V tile of head_dim × kBlockN codes per trial and replaced token).
const gpuTrialBatch = 4096

// trialsGPU runs the trials of the haystacks hays (haystack g0+i of key,
// count(g0+i) trials each) with the runs the WGSL simulator runs on the GPU
// (device gpu) and returns, per haystack, what sim.Trials over t.trial
// returns on the CPU: the trials draw exactly what they draw there (the
// same generators), and those kernels run through wgsl.SimDecodeBatch over
// the haystacks' shared caches (one per KV format and haystack) with each
// trial's needle and sinks as replaced tokens: every haystack, trial and
// promotion interval of a run in one batch, so that the GPU runs them side
// by side, while the CPU computes, trial by trial on every core over all
// the group's haystacks, everything else (runs SimDecodeSupports refuses,
// the baselines of the legacy probe, the references O*, which read the
// shared caches through the trial's replaced tokens:
// attention.ReferenceQuantizedPatched). The outcomes equal the CPU path's,
// bit for bit (TestNeedleGPUEqualsCPU).
func (t attnNeedle) trialsGPU(ctx context.Context, run *sim.Run, key string, g0 int, hays []*attnHaystack, n int, count func(int) int, runs []attnNeedleRun) ([][]attnNeedleTrialResult, error) {
	nSeries := 0
	for _, r := range runs {
		nSeries += len(r.series)
	}
	// A run goes to the GPU when the WGSL simulator runs its configuration
	// (wgsl.SimDecodeSupports: e4m3/e5m2/bf16/f16 MMA, head_dim 64/128/256,
	// the native block-scaled path, ...); the others stay on the CPU. The
	// caches the GPU runs read (runs with one cache share it, and its
	// baseline and reference).
	onGPU := t.onGPU
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
	// Every trial's draw, and the tokens it writes into each GPU cache,
	// before anything reads the caches concurrently (replaced patches and
	// restores the haystack's own cache).
	prep := trace.StartRegion(ctx, "needle: draw the trials, their tokens in each GPU cache")
	tkeys := make([]string, len(hays))
	draws := make([][]attnNeedleDraw, len(hays))
	simTrials := make([]map[string][]wgsl.SimTrial, len(hays))
	patches := make([]map[string][][]attention.TokenPatch, len(hays)) // the same tokens as patches (caches that are not block-scaled)
	for i, h := range hays {
		tkeys[i] = fmt.Sprintf("%s/%d", key, g0+i)
		draws[i] = make([]attnNeedleDraw, count(g0+i))
		for j := range draws[i] {
			draws[i][j] = t.draw(n, sim.TrialRand(run.Seed, tkeys[i], j))
		}
		simTrials[i] = map[string][]wgsl.SimTrial{}
		patches[i] = map[string][][]attention.TokenPatch{}
		for _, name := range gpuCaches {
			kv := h.base[name]
			st := make([]wgsl.SimTrial, len(draws[i]))
			var ps [][]attention.TokenPatch
			if !kv.BlockScaled() {
				ps = make([][]attention.TokenPatch, len(draws[i]))
			}
			for j, dr := range draws[i] {
				st[j] = wgsl.SimTrial{Q: dr.q, Tokens: t.replaced(kv, dr)}
				if ps != nil {
					// The same codes, for the references on the CPU.
					for _, tk := range st[j].Tokens {
						ps[j] = append(ps[j], attention.TokenPatch{Pos: tk.Pos, Head: tk.Head, K: tk.K, V: tk.V})
					}
				}
			}
			simTrials[i][name], patches[i][name] = st, ps
		}
	}
	prep.End()
	// The GPU part: per run on the GPU, one job per promotion interval and
	// haystack (at most gpuTrialBatch trials a job), sent in calls of at
	// most gpuTrialBatch trials, on its own goroutine.
	type jobAt struct{ hay, series, first int } // haystack, series index, first trial
	var jobs []wgsl.SimJob
	var at []jobAt
	s := 0
	for _, r := range runs {
		if !onGPU(r) {
			s += len(r.series)
			continue
		}
		name := r.cache()
		cfg, err := t.gpuTiled(r, hays[0].base[name])
		if err != nil {
			return nil, err
		}
		for pi, promote := range r.promotions {
			cfg.Promotion = promote
			for i, h := range hays {
				st := simTrials[i][name]
				packed := h.packed[packKey(name, cfg.KBlockN)] // nil: SimDecodeBatch packs it
				for lo := 0; lo < len(st); lo += gpuTrialBatch {
					jobs = append(jobs, wgsl.SimJob{Cfg: cfg, KV: h.base[name], Trials: st[lo:min(lo+gpuTrialBatch, len(st))], Packed: packed})
					at = append(at, jobAt{i, s + pi, lo})
				}
			}
		}
		s += len(r.series)
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gpuOut := make([][][]float64, len(jobs))
	var gpuErr error
	gpuDone := make(chan struct{})
	go func() {
		defer close(gpuDone)
		for lo := 0; lo < len(jobs); {
			hi, trials := lo, 0
			for hi < len(jobs) && (hi == lo || trials+len(jobs[hi].Trials) <= gpuTrialBatch) {
				trials += len(jobs[hi].Trials)
				hi++
			}
			r := trace.StartRegion(gctx, "needle: a GPU batch")
			out, err := t.gpu.SimDecodeBatch(gctx, jobs[lo:hi])
			r.End()
			if err != nil {
				gpuErr = err
				return
			}
			copy(gpuOut[lo:hi], out)
			lo = hi
		}
	}()
	// The CPU part, trial by trial on every core: the runs not on the
	// GPU, and per GPU cache the baseline and the reference of its runs.
	type cpuPart struct {
		base map[string]float64
		ref  map[string][]float64
		res  attnNeedleTrialResult
	}
	// One pool over the trials of every haystack of the group, haystack
	// after haystack, so that no core waits at the end of a haystack's
	// few trials; a haystack's borrowed copies (block-scaled caches, runs
	// kept on the CPU) go once its last trial is done.
	parts := make([][]cpuPart, len(hays))
	var flat []int // the first flat index of each haystack
	total := 0
	left := make([]atomic.Int64, len(hays))
	for i := range hays {
		flat = append(flat, total)
		total += len(draws[i])
		parts[i] = make([]cpuPart, len(draws[i]))
		left[i].Store(int64(len(draws[i])))
	}
	// O* of a haystack's trials computed together (attnRefs): for the GPU
	// caches (the first GPU run of each, whose cfg gpuCfg holds) and for
	// the runs kept on the CPU; not when O* is exact.
	var gpuRefs, cpuRefs *attnRefs
	if !t.exactErr {
		cnt := func(i int) int { return len(draws[i]) }
		var refRuns []attnNeedleRun
		for _, name := range gpuCaches {
			for _, r := range runs {
				if onGPU(r) && r.cache() == name {
					refRuns = append(refRuns, r)
					break
				}
			}
		}
		gpuRefs = newAttnRefs(t, run.Seed, hays, n, tkeys, cnt, draws, refRuns)
		cpuRefs = newAttnRefs(t, run.Seed, hays, n, tkeys, cnt, draws, cpuRuns)
	}
	var cpuErr error
	_, err := sim.Trials(ctx, run, key+"/references", total, func(f int, _ *rand.Rand) struct{} {
		defer trace.StartRegion(ctx, "needle: a trial's references on the CPU").End()
		i := sort.Search(len(flat), func(i int) bool { return flat[i] > f }) - 1
		j, h := f-flat[i], hays[i]
		defer func() {
			if left[i].Add(-1) == 0 {
				h.dropCopies() // this haystack's borrowed copies are not needed again
			}
		}()
		p := cpuPart{base: map[string]float64{}, ref: map[string][]float64{}}
		dr := draws[i][j]
		var exact []float64 // computed once for the CPU and the GPU runs
		if t.exactErr {
			exact = t.exact(h, dr.q, dr.pos, dr.needleK, dr.needleV, dr.sinkK, dr.sinkV)
		}
		if len(cpuRuns) > 0 {
			var tr attnTrialRefs
			if cpuRefs != nil {
				tr = func(r int) ([]float64, error) { return cpuRefs.ref(ctx, i, j, r) }
			}
			p.res = t.trialDrawn(ctx, h, dr, cpuRuns, exact, tr)
		}
		for c, name := range gpuCaches {
			var base float64
			var ref []float64
			var err error
			if kv := h.base[name]; kv.BlockScaled() && t.refReadsCache(exact) {
				// A block-scaled cache cannot be read through patches
				// (its V scales span blocks of tokens): a copy with the
				// trial's tokens written in.
				kv := h.borrow(name)
				saved := t.patch(kv, dr)
				base, ref, err = t.references(ctx, gpuCfg[name], dr.q, kv, nil, exact, nil)
				if rerr := restore(kv, saved); rerr != nil {
					err = errors.Join(err, rerr) // the copy is dropped, not given back
				} else {
					h.giveBack(name, kv)
				}
			} else {
				// The shared cache, read through the trial's tokens (not
				// read at all when O* is exact).
				var patch []attention.TokenPatch
				if ps := patches[i][name]; ps != nil {
					patch = ps[j]
				}
				var pre func() ([]float64, error)
				if gpuRefs != nil {
					pre = func() ([]float64, error) { return gpuRefs.ref(ctx, i, j, c) }
				}
				base, ref, err = t.references(ctx, gpuCfg[name], dr.q, kv, patch, exact, pre)
			}
			if err != nil {
				p.res.e = err
				break
			}
			p.base[name], p.ref[name] = base, ref
		}
		parts[i][j] = p
		return struct{}{}
	})
	if err == nil {
	scan:
		for i := range parts {
			for _, p := range parts[i] {
				if p.res.e != nil {
					err = p.res.e
					break scan
				}
			}
		}
	}
	cpuErr = err
	if cpuErr != nil {
		cancel()
	}
	wait := trace.StartRegion(ctx, "needle: wait for the GPU")
	<-gpuDone
	wait.End()
	// No batch reads the group's packed caches now: their buffers go
	// back for the next group's packing (wgsl.SimPackedCache.Release).
	for _, h := range hays {
		for _, pc := range h.packed {
			pc.Release()
		}
		h.packed = nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if cpuErr != nil {
		return nil, cpuErr
	}
	if gpuErr != nil {
		return nil, fmt.Errorf("on the GPU: %w", gpuErr)
	}
	// hit[i][j][s], errs[i][j][s]: haystack i, trial j, series s (in the
	// order of runs). The GPU's outputs are scored (the needle retrieved,
	// the errors against O*) on every core: at 384 trials a context, one
	// goroutine doing it was more than a quarter of kv-formats' wall time.
	score := trace.StartRegion(ctx, "needle: score the GPU's outputs")
	defer score.End()
	gpuRun := make([]bool, len(runs)) // onGPU per run, asked once
	names := map[int]string{}         // series index → its GPU cache
	s = 0
	for k, r := range runs {
		gpuRun[k] = onGPU(r)
		for range r.series {
			if gpuRun[k] {
				names[s] = r.cache()
			}
			s++
		}
	}
	res := make([][]attnNeedleTrialResult, len(hays))
	for i := range hays {
		res[i] = make([]attnNeedleTrialResult, len(draws[i]))
		for j := range res[i] {
			r := attnNeedleTrialResult{hit: make([]bool, nSeries), err: make([]attention.Errors, nSeries)}
			s, k := 0, 0
			for ri, run := range runs {
				for range run.series {
					if !gpuRun[ri] {
						r.hit[s], r.err[s] = parts[i][j].res.hit[k], parts[i][j].res.err[k]
						k++
					}
					s++
				}
			}
			res[i][j] = r
		}
	}
	// Each (job, trial) writes its own element of res: no two share one.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(1, len(at))) {
		wg.Go(func() {
			for q := int(next.Add(1) - 1); q < len(at); q = int(next.Add(1) - 1) {
				a := at[q]
				name := names[a.series]
				for jj, o := range gpuOut[q] {
					j := a.first + jj
					p, dr := parts[a.hay][j], draws[a.hay][j]
					res[a.hay][j].hit[a.series] = t.retrieve(o, p.base[name], dr.codes) == dr.truth
					res[a.hay][j].err[a.series] = attention.Compare(o, p.ref[name])
				}
			}
		})
	}
	wg.Wait()
	return res, nil
}

// packAhead packs, for each run of runs on the GPU, h's cache for the
// run's tiles (wgsl.PackSimCache) into h.packed: done as a haystack is
// drawn, ahead of the group's GPU batch, so that the batch uploads what is
// packed instead of packing on its critical path. Block-scaled caches are
// left to the batch.
func (t attnNeedle) packAhead(h *attnHaystack, runs []attnNeedleRun) error {
	for _, r := range runs {
		if !t.onGPU(r) {
			continue
		}
		name := r.cache()
		kv := h.base[name]
		cfg, err := t.gpuTiled(r, kv)
		if err != nil {
			return err
		}
		key := packKey(name, cfg.KBlockN)
		if h.packed[key] != nil {
			continue
		}
		pc, err := wgsl.PackSimCache(cfg, nil, kv)
		if err != nil {
			return err
		}
		if pc != nil {
			if h.packed == nil {
				h.packed = map[string]*wgsl.SimPackedCache{}
			}
			h.packed[key] = pc
		}
	}
	return nil
}

// packKey names a cache packed for tiles of kBlockN tokens.
func packKey(cache string, kBlockN int) string { return fmt.Sprintf("%s/%d", cache, kBlockN) }

// onGPU reports whether run r goes to the GPU: the WGSL simulator runs its
// configuration (wgsl.SimDecodeSupports, split-KV included).
func (t attnNeedle) onGPU(r attnNeedleRun) bool {
	return wgsl.SimDecodeSupports(t.gpuConfig(r)) == nil
}

// gpuTiled is gpuConfig with its kBlockN resolved on kv: the tiles
// attention.RunPromotions picks from the run's own promotion, the same for
// every interval it runs (the GPU batch's jobs and the caches packed ahead
// for them use these tiles).
func (t attnNeedle) gpuTiled(r attnNeedleRun, kv *attention.KV) (attention.Config, error) {
	cfg := t.gpuConfig(r)
	if cfg.KBlockN == 0 {
		p, err := cfg.Plan(1, nil, kv)
		if err != nil {
			return cfg, err
		}
		cfg.KBlockN = p.KBlockN
	}
	return cfg, nil
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

// useDevice opens the GPU into t.gpu when the run's device is gpu
// (openDevice); the caller defers the returned function, which closes it
// or lets the lab's shared device go.
func (t *attnNeedle) useDevice(ctx context.Context, v sim.Values) (func(), error) {
	g, done := openDevice(ctx, v)
	t.gpu = g
	return done, nil
}

// deviceNote says, for a run on the GPU, which series ran there and which
// stayed on the CPU and why ("" on the CPU).
func (t attnNeedle) deviceNote(runs []attnNeedleRun) string {
	if t.gpu == nil || t.gpu.Err() != nil { // a failed open fails the run at its first GPU batch
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
