package wgsl

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/internal/simcase"
)

// Calls of SimDecodeBatch made while the device is busy share one
// submission, each call gets its own trials' outputs (attention.Run on
// its patched cache, bit for bit), and a queued call that is cancelled
// returns at once without its parts being packed; the rest are unharmed.
func TestSimDecodeBatchConcurrent(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	c := simcase.Case{Tokens: 600, Cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 4, KBlockN: 64, Promotion: 1}, PerHead: true}
	const calls = 6
	type call struct {
		job     SimJob
		patched []*attention.KV
		out     [][][]float64
		err     error
	}
	cs := make([]call, calls)
	for i := range cs {
		q0, qScale, kv, err := simcase.Inputs(c, uint64(60+i))
		if err != nil {
			t.Fatal(err)
		}
		trials, p := batchTrials(t, kv, q0, 2, uint64(70+i))
		cs[i] = call{job: SimJob{Cfg: c.Cfg, QScale: qScale, KV: kv, Trials: trials}, patched: p}
	}
	// The device busy: the first call's round waits for the runner's lock,
	// the others queue behind it.
	if err := r.lock(); err != nil {
		t.Fatal(err)
	}
	before := r.sq.submissions.Load()
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	start := func(i int, ctx context.Context) {
		wg.Go(func() { cs[i].out, cs[i].err = r.SimDecodeBatch(ctx, []SimJob{cs[i].job}) })
	}
	start(0, ctx)
	waitFor(t, func() bool { r.sq.mu.Lock(); defer r.sq.mu.Unlock(); return r.sq.running && len(r.sq.pending) == 0 })
	for i := 1; i < calls; i++ {
		cctxI := ctx
		if i == 2 {
			cctxI = cctx
		}
		start(i, cctxI)
	}
	waitFor(t, func() bool { r.sq.mu.Lock(); defer r.sq.mu.Unlock(); return len(r.sq.pending) == calls-1 })
	cancel()
	waitFor(t, func() bool { r.sq.mu.Lock(); defer r.sq.mu.Unlock(); return len(r.sq.pending) == calls-2 })
	r.mu.Unlock()
	wg.Wait()
	if got := r.sq.submissions.Load() - before; got != 2 {
		t.Errorf("%d submissions for one call and %d queued behind it, want 2", got, calls-2)
	}
	for i, cl := range cs {
		if i == 2 {
			if !errors.Is(cl.err, context.Canceled) {
				t.Errorf("call 2, cancelled while queued: %v, want context.Canceled", cl.err)
			}
			continue
		}
		if cl.err != nil {
			t.Fatalf("call %d: %v", i, cl.err)
		}
		if len(cl.out) != 1 || len(cl.out[0]) != len(cl.job.Trials) {
			t.Fatalf("call %d: %d jobs, want 1 of %d trials", i, len(cl.out), len(cl.job.Trials))
		}
		for k, tr := range cl.job.Trials {
			want, err := attention.Run(ctx, cl.job.Cfg, tr.Q, cl.job.QScale, cl.patched[k])
			if err != nil {
				t.Fatal(err)
			}
			for x := range want {
				if !sameF32(float32(cl.out[0][k][x]), float32(want[x])) {
					t.Fatalf("call %d trial %d: O[%d] = %g, attention.Run %g", i, k, x, cl.out[0][k][x], want[x])
				}
			}
		}
	}
	// A call whose ctx is already done is refused before it queues.
	if _, err := r.SimDecodeBatch(cctx, []SimJob{cs[0].job}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled ctx: %v, want context.Canceled", err)
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(end) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(time.Millisecond)
	}
}
