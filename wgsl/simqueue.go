package wgsl

import (
	"context"
	"runtime/trace"
	"slices"
	"sync"
	"sync/atomic"
)

// Concurrent SimDecodeBatch calls share submissions (group commit): a call
// queues its jobs' parts and waits; one goroutine per runner takes every
// queued call at once (a round), cuts their parts into submissions as one
// batch would (simChunks: parts of one batchKey side by side, whichever
// call they came from) and hands each call its outputs. While a round runs
// on the device the calls that arrive queue for the next, so N callers
// that each bring a small batch (scales: one trial's four caches each) pay
// a few submissions' fixed costs (the read back, the dispatches' launch,
// the device's idle between them) instead of N. A trial's outputs do not
// depend on what else shares its submission (SimDecodeBatch's contract:
// TestSimDecodeBatch and TestSimDecodeBatchConcurrent check each output
// against attention.Run), so the bits are those of one call at a time.
//
// Cancelling: a call whose ctx ends returns ctx.Err() as soon as the round
// no longer reads its inputs (its caches and queries): at once if none of
// its parts is being packed or uploaded, else after that upload. Its parts
// not yet packed are dropped. The round itself is cancelled only when every
// call in it is.

// simQueue is a runner's queue of SimDecodeBatch calls.
type simQueue struct {
	mu      sync.Mutex
	pending []*simReq
	running bool // a goroutine is running rounds
	// submissions counts the submissions made (tests).
	submissions atomic.Int64
}

// simReq is one SimDecodeBatch call in the queue or in a round.
type simReq struct {
	ctx       context.Context
	parts     []simPart
	out       [][][]float64
	err       error
	cancelled atomic.Bool // the caller has stopped waiting
	// reading counts the round's submissions that hold parts of this call
	// and are not yet uploaded or dropped, left those not yet ended (read
	// back, failed or dropped); out, err and both counts are the round
	// goroutine's until done is closed.
	reading, left int
	released      chan struct{} // closed when reading reaches 0
	done          chan struct{} // closed when reading is 0 and left is 0 or err set
	relOnce       sync.Once
	doneOnce      sync.Once
}

// settle closes released and done when their conditions hold.
func (q *simReq) settle() {
	if q.reading > 0 {
		return
	}
	q.relOnce.Do(func() { close(q.released) })
	if q.left == 0 || q.err != nil {
		q.doneOnce.Do(func() { close(q.done) })
	}
}

// fail sets the call's error (the first one stays) and settles it.
func (q *simReq) fail(err error) {
	if q.err == nil {
		q.err = err
	}
	q.settle()
}

// dropped reports whether the round should skip the call's parts.
func (q *simReq) dropped() bool { return q.cancelled.Load() || q.err != nil }

// simRun queues parts (a SimDecodeBatch call of jobs jobs) and waits for
// their outputs, out[j] the trials of job j in order.
func (r *Runner) simRun(ctx context.Context, parts []simPart, jobs int) ([][][]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q := &simReq{ctx: ctx, parts: parts, out: make([][][]float64, jobs),
		released: make(chan struct{}), done: make(chan struct{})}
	for j := range q.out {
		q.out[j] = [][]float64{}
	}
	for i := range q.parts {
		q.parts[i].req = q
	}
	r.sq.mu.Lock()
	r.sq.pending = append(r.sq.pending, q)
	if !r.sq.running {
		r.sq.running = true
		go r.simRounds()
	}
	r.sq.mu.Unlock()
	select {
	case <-q.done:
	case <-ctx.Done():
		q.cancelled.Store(true)
		r.sq.mu.Lock()
		i := slices.Index(r.sq.pending, q)
		if i >= 0 { // still queued: no round has seen it
			r.sq.pending = slices.Delete(r.sq.pending, i, i+1)
		}
		r.sq.mu.Unlock()
		if i < 0 {
			<-q.released // no pack or upload reads its inputs any more
		}
		return nil, ctx.Err()
	}
	if q.err != nil {
		return nil, q.err
	}
	return q.out, nil
}

// simRounds runs rounds until the queue is empty.
func (r *Runner) simRounds() {
	for {
		r.sq.mu.Lock()
		reqs := r.sq.pending
		r.sq.pending = nil
		if len(reqs) == 0 {
			r.sq.running = false
			r.sq.mu.Unlock()
			return
		}
		r.sq.mu.Unlock()
		r.simRound(reqs)
	}
}

// simRound runs the calls reqs in as few submissions as simChunks cuts.
func (r *Runner) simRound(reqs []*simReq) {
	// The round's context: the first call's values (its trace task), done
	// when every call's is.
	ctx, cancel := context.WithCancel(context.WithoutCancel(reqs[0].ctx))
	defer cancel()
	var live atomic.Int64
	var parts []simPart
	for _, q := range reqs {
		if err := q.ctx.Err(); err != nil {
			q.fail(err)
			continue
		}
		live.Add(1)
		stop := context.AfterFunc(q.ctx, func() {
			if live.Add(-1) == 0 {
				cancel()
			}
		})
		defer stop()
		parts = append(parts, q.parts...)
	}
	limit := max(1, int(min(r.info.MaxStorageBinding/4, 1<<31)))
	chunks := simChunks(parts, maxSimRows, limit)
	for _, ch := range chunks {
		for _, q := range chunkReqs(ch) {
			q.reading++
			q.left++
		}
	}
	for _, q := range reqs {
		q.settle() // a call without trials is done now
	}
	// Each submission is packed on the host while the one before is
	// uploaded and run (at most two packed at once); the parts of calls
	// that have stopped waiting or failed are left out when its packing
	// starts.
	type packed struct {
		pk    *simPacked
		chunk []simPart
		reqs  []*simReq
		err   error
	}
	pack := func(chunk []simPart) chan packed {
		var keep []simPart
		for _, q := range chunkReqs(chunk) {
			if q.dropped() {
				q.reading--
				q.left--
				q.settle()
			}
		}
		for _, pt := range chunk {
			if !pt.req.dropped() {
				keep = append(keep, pt)
			}
		}
		ch := make(chan packed, 1)
		if len(keep) == 0 {
			ch <- packed{}
			return ch
		}
		kept := chunkReqs(keep)
		go func() {
			defer trace.StartRegion(ctx, "wgsl: pack a batch").End()
			pk, err := packSim(keep)
			ch <- packed{pk, keep, kept, err}
		}()
		return ch
	}
	var next chan packed
	if len(chunks) > 0 {
		next = pack(chunks[0])
	}
	for i := range chunks {
		p := <-next
		if i+1 < len(chunks) {
			next = pack(chunks[i+1])
		}
		if len(p.reqs) == 0 {
			continue // every call in it had stopped waiting
		}
		uploaded := false
		up := func() {
			uploaded = true
			for _, q := range p.reqs {
				q.reading--
				q.settle() // a caller that stopped waiting may go
			}
		}
		var o [][][]float64
		err := p.err
		if err == nil {
			r.sq.submissions.Add(1)
			o, err = r.simSubmit(ctx, p.pk, up)
		}
		if !uploaded {
			up()
		}
		if err == nil {
			for k, pt := range p.chunk {
				if !pt.req.dropped() {
					pt.req.out[pt.job] = append(pt.req.out[pt.job], o[k]...)
				}
			}
		}
		for _, q := range p.reqs {
			q.left--
			if err != nil {
				q.fail(err)
			} else {
				q.settle()
			}
		}
	}
}

// chunkReqs is the calls of chunk's parts, each once, in order.
func chunkReqs(chunk []simPart) []*simReq {
	var qs []*simReq
	for _, pt := range chunk {
		if !slices.Contains(qs, pt.req) {
			qs = append(qs, pt.req)
		}
	}
	return qs
}
