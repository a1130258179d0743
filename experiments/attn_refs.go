package experiments

import (
	"context"
	"runtime/trace"
	"sync"
	"sync/atomic"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/sim"
)

// attnRefChunk is the most trials of one haystack whose references O* are
// computed together (attention.ReferenceQuantizedTrials: each block of the
// shared cache decoded once for all of them). 16 holds a default needle
// haystack's 12 trials; the chunk's trials' outputs and draws are what is
// held at once.
const attnRefChunk = 16

// attnRefs gives the trials over a group's haystacks their references O*
// (exact attention on the cache's quantized inputs, the trial's needle and
// sinks read through patches), computed a chunk of attnRefChunk trials of
// one haystack and one cache at a time: the first trial of a chunk that
// asks computes the chunk's (drawing its trials again from their own
// generators, sim.TrialRand: the draws the trials themselves make), on
// every core; the chunk's other trials wait for it and take theirs. Every
// O* is the bits attention.ReferenceQuantizedPatched gives the trial alone
// (what the trials computed each for itself before), so the outcomes do
// not change. A chunk is forgotten once each of its trials has taken its
// reference.
//
// Caches that are block-scaled are not served (their trials write their
// tokens into a copy): ref gives nil for them, and the trial computes its
// own.
type attnRefs struct {
	t     attnNeedle
	hays  []*attnHaystack
	n     int                // context length
	seed  uint64             // the run's seed
	keys  []string           // each haystack's trial key (sim.TrialRand)
	count func(hay int) int  // each haystack's trials
	draws [][]attnNeedleDraw // each haystack's trials' draws when the caller holds them (nil: drawn again)
	cfgs  []attention.Config // the references' configuration, by the run index callers name
	cache []string           // the cache of each run index
	mu    sync.Mutex         // guards chunks
	chunk map[attnRefKey]*attnRefState
}

// attnRefKey names one chunk: haystack, chunk of its trials, run index.
type attnRefKey struct{ hay, chunk, run int }

type attnRefState struct {
	once sync.Once
	refs [][]float64
	err  error
	left atomic.Int64 // the chunk's trials yet to take theirs
}

// newAttnRefs serves the haystacks hays (haystack i's trials keyed keys[i],
// count(i) of them) of n tokens, for the runs of runs: a reference per
// run index, computed with the run's cfg on the run's cache. draws, when
// not nil, holds every trial's draw (draws[i][j], the GPU path's), which
// the chunks then take instead of drawing the trials again.
func newAttnRefs(t attnNeedle, seed uint64, hays []*attnHaystack, n int, keys []string, count func(int) int, draws [][]attnNeedleDraw, runs []attnNeedleRun) *attnRefs {
	r := &attnRefs{t: t, hays: hays, n: n, seed: seed, keys: keys, count: count, draws: draws, chunk: map[attnRefKey]*attnRefState{}}
	for _, run := range runs {
		r.cfgs = append(r.cfgs, run.cfg)
		r.cache = append(r.cache, run.cache())
	}
	return r
}

// ref returns O* of trial j of haystack hay for run index run (its cache
// and cfg), or nil when it does not serve that cache (a block-scaled one:
// the caller computes its own).
func (r *attnRefs) ref(ctx context.Context, hay, j, run int) ([]float64, error) {
	if r == nil || r.hays[hay].base[r.cache[run]].BlockScaled() {
		return nil, nil
	}
	key := attnRefKey{hay, j / attnRefChunk, run}
	j0 := key.chunk * attnRefChunk
	r.mu.Lock()
	c := r.chunk[key]
	if c == nil {
		c = &attnRefState{}
		c.left.Store(int64(min(j0+attnRefChunk, r.count(hay)) - j0))
		r.chunk[key] = c
	}
	r.mu.Unlock()
	c.once.Do(func() {
		defer trace.StartRegion(ctx, "needle: a chunk of trials' references").End()
		c.refs, c.err = r.compute(ctx, key)
	})
	if c.left.Add(-1) == 0 {
		r.mu.Lock()
		delete(r.chunk, key)
		r.mu.Unlock()
	}
	if c.err != nil {
		return nil, c.err
	}
	return c.refs[j-j0], nil
}

// compute is the chunk key's references.
func (r *attnRefs) compute(ctx context.Context, key attnRefKey) ([][]float64, error) {
	j0 := key.chunk * attnRefChunk
	j1 := min(j0+attnRefChunk, r.count(key.hay))
	kv := r.hays[key.hay].base[r.cache[key.run]]
	qs := make([][]float32, j1-j0)
	patches := make([][]attention.TokenPatch, j1-j0)
	for j := j0; j < j1; j++ {
		var dr attnNeedleDraw
		if r.draws != nil {
			dr = r.draws[key.hay][j]
		} else {
			dr = r.t.draw(r.n, sim.TrialRand(r.seed, r.keys[key.hay], j))
		}
		p, err := r.t.tokenPatches(kv, dr)
		if err != nil {
			return nil, err
		}
		qs[j-j0], patches[j-j0] = dr.q, p
	}
	return attention.ReferenceQuantizedTrials(ctx, r.cfgs[key.run], qs, kv, patches)
}
