package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"slices"
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
	var out []T
	err := TrialSets(ctx, run, []TrialSet{{Key: key, N: n}}, func(_, trial int, rng *rand.Rand) T { return fn(trial, rng) },
		func(_ int, res []T) error { out = res; return nil })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// TrialSet is one set of trials of [TrialSets]: N trials of key Key.
type TrialSet struct {
	Key string
	N   int
}

// TrialSets runs the trials of every set as [Trials] runs one set's (the
// generator of trial i of set s is TrialRand(run.Seed, sets[s].Key, i), so
// each result is what Trials(ctx, run, sets[s].Key, sets[s].N, …) gives),
// but in one pool of runtime.GOMAXPROCS(0) goroutines, set after set: the
// trials of a later set start while an earlier one's last trials run, so
// the cores stay busy across sets of few trials. done(s, results) is
// called on the caller's goroutine for each set in order, as soon as that
// set and every set before it have finished (results in trial order);
// the trials go on meanwhile. An error from done stops the trials and is
// returned. Progress, cancellation and panics are as in Trials; a
// negative N is an error before any trial runs.
func TrialSets[T any](ctx context.Context, run *Run, sets []TrialSet, fn func(set, trial int, rng *rand.Rand) T, done func(set int, results []T) error) error {
	return TrialSetsWorkers(ctx, run, sets, runtime.GOMAXPROCS(0), fn, done)
}

// TrialSetsWorkers is [TrialSets] on up to workers goroutines (at least
// one) instead of runtime.GOMAXPROCS(0): more than the cores for trials
// that spend part of their time waiting (for a GPU), so that others draw
// meanwhile. The results are TrialSets' whatever the count; the memory of
// the trials running at once grows with it.
func TrialSetsWorkers[T any](ctx context.Context, run *Run, sets []TrialSet, workers int, fn func(set, trial int, rng *rand.Rand) T, done func(set int, results []T) error) error {
	var total int64
	at := make([]int, len(sets)+1) // at[s]: the first flat index of set s
	for s, set := range sets {
		if set.N < 0 {
			return fmt.Errorf("sim: Trials %q: negative count %d", set.Key, set.N)
		}
		total += int64(set.N)
		at[s+1] = at[s] + set.N
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	run.reserve(total)
	out := make([][]T, len(sets))
	for s, set := range sets {
		out[s] = make([]T, set.N)
	}
	n := at[len(sets)]
	workers = max(1, min(workers, n))
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		next     atomic.Int64
		errOnce  sync.Once
		trialErr error
		wg       sync.WaitGroup
		left     = make([]atomic.Int64, len(sets)) // trials of each set not yet finished
		finished = make(chan int, len(sets))       // sets whose trials have all finished
		ended    = make(chan struct{})             // every worker returned
	)
	for s, set := range sets {
		left[s].Store(int64(set.N))
		if set.N == 0 {
			finished <- s
		}
	}
	runOne := func(s, i int) (ok bool) {
		defer func() {
			if v := recover(); v != nil {
				errOnce.Do(func() {
					trialErr = fmt.Errorf("trials %q, trial %d: %w", sets[s].Key, i, &PanicError{Value: v, Stack: debug.Stack()})
				})
				cancel()
				ok = false
			}
		}()
		out[s][i] = fn(s, i, TrialRand(run.Seed, sets[s].Key, i))
		return true
	}
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				k := int(next.Add(1) - 1)
				if k >= n {
					return
				}
				s, _ := slices.BinarySearch(at, k+1)
				s-- // the set holding flat index k
				if !runOne(s, k-at[s]) {
					return
				}
				run.Advance(1)
				if left[s].Add(-1) == 0 {
					finished <- s
				}
			}
		})
	}
	go func() { wg.Wait(); close(ended) }()
	stop := func(err error) error { cancel(); <-ended; return err }
	complete := make([]bool, len(sets))
	for s := range sets {
		for !complete[s] {
			select {
			case f := <-finished:
				complete[f] = true
			case <-ended:
				// Every worker returned: the sets they finished are in
				// finished; any other was stopped.
				for len(finished) > 0 {
					complete[<-finished] = true
				}
				if !complete[s] {
					if trialErr != nil {
						return trialErr
					}
					if err := parent.Err(); err != nil {
						return err
					}
					return context.Canceled
				}
			}
		}
		if err := parent.Err(); err != nil {
			return stop(err)
		}
		if err := done(s, out[s]); err != nil {
			return stop(err)
		}
	}
	<-ended
	if trialErr != nil {
		return trialErr
	}
	return parent.Err()
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
