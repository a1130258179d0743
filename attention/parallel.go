package attention

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// quantChunk is the tokens one worker of parallelTokens quantizes at a
// time: a multiple of padTokens, so that two workers never write the same
// 32-token run of a transposed V row (a cache line of 16-bit codes), and
// the granularity of the cancellation checks (1024 tokens at head_dim 256
// are a few milliseconds on one core).
const quantChunk = 1024

// parallelMinElems is the smallest cache (tokens × heads × dim) that
// parallelTokens spreads over several goroutines; below it a single
// goroutine is faster than starting others.
const parallelMinElems = 1 << 16

// parallelTokens calls fn(lo, hi) for consecutive ranges [lo, hi) of
// quantChunk tokens covering [0, tokens) (the last one shorter), on up to
// workers goroutines (0: GOMAXPROCS) when the cache has elems elements or
// more, else on the caller's. fn must write only what belongs to the tokens
// of its range (the ranges are disjoint, so the result is the same bits
// whatever the number of goroutines and the order they run in). It looks at
// ctx before each range and returns ctx.Err() once it is cancelled (ranges
// already started finish).
func parallelTokens(ctx context.Context, tokens, elems, workers int, fn func(lo, hi int)) error {
	return parallelRange(ctx, tokens, quantChunk, elems, workers, fn)
}

// parallelRange is parallelTokens over [0, n) in ranges of chunk.
func parallelRange(ctx context.Context, n, chunk, elems, workers int, fn func(lo, hi int)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	chunks := (n + chunk - 1) / chunk
	workers = min(workers, chunks)
	if elems < parallelMinElems {
		workers = 1
	}
	var next atomic.Int64
	work := func() {
		for ctx.Err() == nil {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			fn(c*chunk, min((c+1)*chunk, n))
		}
	}
	if workers <= 1 {
		work()
		return ctx.Err()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(work)
	}
	wg.Wait()
	return ctx.Err()
}

// parallelRangeErr is parallelRange with an fn that can fail: the ranges
// go on after a failure (only ctx stops them), and the error returned is
// ctx's once it is cancelled, else the first fn returned.
func parallelRangeErr(ctx context.Context, n, chunk, elems, workers int, fn func(lo, hi int) error) error {
	var (
		mu    sync.Mutex
		first error
	)
	err := parallelRange(ctx, n, chunk, elems, workers, func(lo, hi int) {
		if err := fn(lo, hi); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	})
	if err != nil {
		return err
	}
	return first
}
