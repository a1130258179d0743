package experiments

import (
	"context"
	"slices"

	"github.com/fp8lab/fp8lab/sim"
)

// attnCall is one call of attnNeedleContext that a Run makes: the key of
// its trials, the context length, the trials, the haystacks asked for and
// the runs.
type attnCall struct {
	key                  string
	n, trials, haystacks int
	runs                 []attnNeedleRun
}

// groups returns the haystack groups [g0, g1) attnNeedleContext draws for
// c, in order: haystacks min(c.haystacks, c.trials), attnGroup at a time.
func (t attnNeedle) groups(c attnCall) [][2]int {
	hs := min(c.haystacks, c.trials)
	group := t.attnGroup(c.n, hs, c.runs)
	var gs [][2]int
	for g0 := 0; g0 < hs; g0 += group {
		gs = append(gs, [2]int{g0, min(g0+group, hs)})
	}
	return gs
}

// attnDrawer draws the haystack groups of a Run's calls of
// attnNeedleContext, in the order the calls read them, on its own
// goroutine. With ahead 0 it draws a group when next asks for it. With
// ahead ≥ 1 it draws ahead of the reader as far as memory allows: a group
// is drawn once it fits, with the group being read and those drawn before
// it, in ahead+1 times the bytes of the run's largest group (what
// attnNeedleCost counts). With equal groups that is ahead groups beyond
// the one read: with ahead 1 the next group is drawn and quantized while
// the trials of the current one run (on the GPU and the CPU), so that
// those phases overlap instead of following each other. Small groups
// (short contexts before long ones) go further ahead: while a GPU device
// opens, the first groups' trials wait for it and the drawer goes on
// drawing instead of leaving the cores idle. A group equal to the one
// before it (the same key, context and haystacks, its caches among those
// drawn; promotion's kernel runs over one cache) is the same haystacks
// again, not drawn twice. The haystacks are the bits attnNeedle.haystacks
// draws (each from its own generator, whenever it is drawn).
//
// next returns the groups in order; stop cancels the drawing and waits for
// the goroutine to end (call it once, deferred, whatever happened). The
// drawing stops with ctx.
type attnDrawer struct {
	t      attnNeedle
	want   chan struct{} // one per next call: the reader asks for one more group
	out    chan attnDrawn
	cancel context.CancelFunc
	done   chan struct{}
	err    error // the error next returned, returned again by later calls
}

// attnDrawn is one group as the drawer hands it over.
type attnDrawn struct {
	hays []*attnHaystack
	err  error
}

// drawAhead is the groups a drawer draws ahead: 1 on the GPU, whose
// kernels leave the CPU's cores to the next group's haystacks; 0 on the
// CPU, whose trials fill every core already (drawing ahead there would
// only hold one more group in memory).
func (t attnNeedle) drawAhead() int {
	if t.gpu != nil {
		return gpuDrawAhead
	}
	return 0
}

// gpuDrawAhead is drawAhead on the GPU (attnNeedleCost counts the groups
// it holds).
const gpuDrawAhead = 1

// newDrawer starts drawing the groups of calls (see attnDrawer).
func (t attnNeedle) newDrawer(ctx context.Context, run *sim.Run, calls []attnCall, ahead int) *attnDrawer {
	type job struct {
		c      attnCall
		g0, g1 int
	}
	var jobs []job
	for _, c := range calls {
		for _, g := range t.groups(c) {
			jobs = append(jobs, job{c, g[0], g[1]})
		}
	}
	// bytes[i] is job i's memory in the units of attnNeedle.haystackBytes;
	// the drawer holds at most (ahead+1)·max of them.
	bytes := make([]int64, len(jobs))
	var largest int64
	for i, j := range jobs {
		bytes[i] = int64(j.g1-j.g0) * t.haystackBytes(j.c.n, j.c.runs)
		largest = max(largest, bytes[i])
	}
	budget := int64(ahead+1) * largest
	dctx, cancel := context.WithCancel(ctx)
	d := &attnDrawer{t: t, want: make(chan struct{}, len(jobs)+1),
		out: make(chan attnDrawn, len(jobs)), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		var prev *job
		var prevHays []*attnHaystack
		asked := 0 // next calls so far: the reader holds group asked−1
		fits := func(i int) bool {
			if i < asked {
				return true // the reader waits for it
			}
			if ahead == 0 {
				return false
			}
			var held int64
			for k := max(asked-1, 0); k <= i; k++ {
				held += bytes[k]
			}
			return held <= budget
		}
		for i := range jobs {
			j := &jobs[i]
			for !fits(i) {
				select {
				case <-d.want:
					asked++
				case <-dctx.Done():
					return
				}
			}
			if prev != nil && prev.c.key == j.c.key && prev.c.n == j.c.n && prev.g0 == j.g0 && prev.g1 == j.g1 && hasCaches(prevHays, j.c.runs) {
				d.out <- attnDrawn{hays: slices.Clone(prevHays)} // the reader may clear its slice
				continue
			}
			prevHays = nil // garbage once its reader is done with it
			hays, err := t.haystacks(dctx, run, j.c.key, j.c.n, j.g0, j.g1, j.c.runs)
			d.out <- attnDrawn{hays: slices.Clone(hays), err: err}
			if err != nil {
				return
			}
			prev, prevHays = j, hays
		}
	}()
	return d
}

// hasCaches reports whether every haystack of hays holds every cache of runs.
func hasCaches(hays []*attnHaystack, runs []attnNeedleRun) bool {
	for _, h := range hays {
		for _, r := range runs {
			if h.base[r.cache()] == nil {
				return false
			}
		}
	}
	return len(hays) > 0
}

// next returns the next group, waiting for it to be drawn; the error
// (ctx's once cancelled) stays: later calls return it again.
func (d *attnDrawer) next(ctx context.Context) ([]*attnHaystack, error) {
	if d.err != nil {
		return nil, d.err
	}
	d.want <- struct{}{} // never blocks: room for one a group, and one past the last
	select {
	case g := <-d.out:
		if g.err != nil {
			d.err = g.err
		}
		return g.hays, g.err
	case <-ctx.Done():
		d.err = ctx.Err()
		return nil, d.err
	case <-d.done:
		// Ended without a group: cancelled, or read past its calls.
		select {
		case g := <-d.out:
			if g.err != nil {
				d.err = g.err
			}
			return g.hays, g.err
		default:
		}
		if err := ctx.Err(); err != nil {
			d.err = err
		} else {
			d.err = context.Canceled
		}
		return nil, d.err
	}
}

// stop cancels the drawing and waits for its goroutine to end.
func (d *attnDrawer) stop() {
	d.cancel()
	<-d.done
}
