package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Trials runs fn for trial = 0 … n−1 spread over runtime.GOMAXPROCS(0)
// goroutines and returns the results in trial order.
//
// Each trial gets its own generator, [TrialRand](run.Seed, key, trial), so a
// result depends on the run seed, the key and the trial index only: the
// output is identical whatever the number of cores and whatever order the
// trials run in. Use a different key for each independent set of trials in a
// run (e.g. the series name), or they draw the same numbers. fn must not share
// mutable state between trials.
//
// Progress: Trials claims n units of the run's planned work ([Run.AddTotal]),
// growing the total only if the plan does not cover them, and advances the
// run by one unit per finished trial. Plan the sum of all Trials calls up
// front and the bar goes once from 0 to 100%.
//
// Trials stops early and returns ctx.Err() once ctx is cancelled (trials
// already running finish first). A panic in fn is returned as a
// *[PanicError] wrapped with the trial index; the other trials stop.
func Trials[T any](ctx context.Context, run *Run, key string, n int, fn func(trial int, rng *rand.Rand) T) ([]T, error) {
	if n < 0 {
		return nil, fmt.Errorf("sim: Trials %q: negative count %d", key, n)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	run.reserve(int64(n))
	out := make([]T, n)
	workers := min(runtime.GOMAXPROCS(0), n)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		next     atomic.Int64
		errOnce  sync.Once
		trialErr error
		wg       sync.WaitGroup
	)
	runOne := func(i int) (ok bool) {
		defer func() {
			if v := recover(); v != nil {
				errOnce.Do(func() {
					trialErr = fmt.Errorf("trials %q, trial %d: %w", key, i, &PanicError{Value: v, Stack: debug.Stack()})
				})
				cancel()
				ok = false
			}
		}()
		out[i] = fn(i, TrialRand(run.Seed, key, i))
		return true
	}
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n || !runOne(i) {
					return
				}
				run.Advance(1)
			}
		})
	}
	wg.Wait()
	if trialErr != nil {
		return nil, trialErr
	}
	if err := parent.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// TrialRand returns the generator of one trial: a PCG seeded from the run
// seed, the key and the trial index only, through SplitMix64 mixing, so
// neighbouring seeds, keys and trials get unrelated streams. [Trials] uses
// it; call it directly to replay one trial.
func TrialRand(seed uint64, key string, trial int) *rand.Rand {
	return rand.New(TrialSource(seed, key, trial))
}

// TrialSource is TrialRand's PCG itself, for code that draws from the
// source directly (pmath.FillNormal steps a PCG's state in registers):
// rand.New(TrialSource(seed, key, trial)) is TrialRand(seed, key, trial).
func TrialSource(seed uint64, key string, trial int) *rand.PCG {
	h := uint64(14695981039346656037) // FNV-1a of key
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	s1 := splitmix(seed ^ splitmix(h))
	s2 := splitmix(s1 ^ splitmix(uint64(trial)+0x632be59bd9b4e019))
	return rand.NewPCG(s1, s2)
}

// splitmix is the SplitMix64 finaliser.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
