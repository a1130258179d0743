package wgsl

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Warmup is the warm-up rule of the GPU benchmarks (BenchChain,
// BenchDecode, ReadBandwidth, BenchSimDecode): untimed repetitions of the
// measured submission run until the GPU's time for it is stable, so that a
// GPU found idle (an H200 idles at 345 MHz and takes a fraction of a second
// under load to reach its 1980 MHz) is measured at the clock it settles at,
// not at the one it starts from.
//
// The rule: run at least MinRuns repetitions and for at least MinTime (of
// wall time, the host's submits and waits included); then stop as soon as
// the last Window repetitions agree within Tol (largest ≤ (1 + Tol) ×
// smallest, on the GPU's time when timestamps exist, else the wall time);
// give up after MaxTime or MaxRuns (the measurement then says it was not
// stable). With a Clock probe that answers, the warm-up is stable only
// once the SM clock is also at least ClockFrac of its maximum: a stable
// time is not a stable clock (on the H200, gpucheck's benchmarks once
// settled at 345–675 MHz of 1980 with times agreeing within 5 %). The
// timed repetitions follow.
type Warmup struct {
	MinRuns, Window, MaxRuns int
	MinTime, MaxTime         time.Duration
	Tol                      float64
	// Clock reports the GPU's SM clock and its maximum (nil: not asked;
	// see Runner.SetClockProbe); ClockFrac is the fraction of the maximum
	// the clock must reach (0: any).
	Clock     ClockProbe
	ClockFrac float64
}

// ClockProbe reports the GPU's SM clock now and its maximum, in MHz; ok is
// false when it cannot tell (no sample yet, no nvidia-smi). WebGPU has no
// clock query, so a probe comes from outside (gpucheck's nvidia-smi
// sampler).
type ClockProbe func() (smMHz, maxMHz float64, ok bool)

// DefaultWarmup returns the rule for an adapter: on a hardware GPU at least
// 3 runs and 0.5 s, the last 3 within 5 %, at most 10 s or 100000 runs; on
// a CPU adapter (lavapipe: no clock to ramp, only the shader compile and
// the caches) at least 2 runs, the last 2 within 20 %, at most 1 s or 50.
// On hardware, a clock probe (when the runner has one) must also read at
// least 90 % of the maximum SM clock.
func DefaultWarmup(hardware bool) Warmup {
	if hardware {
		return Warmup{MinRuns: 3, Window: 3, MaxRuns: 100000, MinTime: 500 * time.Millisecond, MaxTime: 10 * time.Second, Tol: 0.05, ClockFrac: 0.9}
	}
	return Warmup{MinRuns: 2, Window: 2, MaxRuns: 50, MaxTime: time.Second, Tol: 0.20}
}

// String states the rule in words, for reports.
func (w Warmup) String() string {
	clk := ""
	if w.Clock != nil && w.ClockFrac > 0 {
		clk = fmt.Sprintf(" and the SM clock is at least %.0f %% of its maximum", 100*w.ClockFrac)
	}
	return fmt.Sprintf("untimed runs until the last %d agree within %.0f %%%s (after at least %d runs and %v; at most %d runs or %v)",
		w.Window, 100*w.Tol, clk, w.MinRuns, w.MinTime, w.MaxRuns, w.MaxTime)
}

// clockUp reports whether the probe's clock is high enough, and the clock
// it read (0, 0 without a probe or an answer, which count as up).
func (w Warmup) clockUp() (up bool, sm, maxSM float64) {
	if w.Clock == nil {
		return true, 0, 0
	}
	sm, maxSM, ok := w.Clock()
	if !ok || maxSM <= 0 {
		return true, 0, 0
	}
	return sm >= w.ClockFrac*maxSM, sm, maxSM
}

// Measurement is one benchmark's timing: its warm-up and the timed
// repetitions after it, with their median and spread.
type Measurement struct {
	// Source is "timestamp" when every timed repetition has a GPU
	// timestamp time, else "wall" (the host's time around submit and wait).
	Source string
	// Warmups is the number of untimed repetitions, WarmupTime their wall
	// time; Stable is false when the warm-up ended at its cap, not by the
	// rule.
	Warmups    int
	WarmupTime time.Duration
	Stable     bool
	// ClockMHz and ClockMaxMHz are the probe's SM clock and maximum when
	// the warm-up ended, ClockEndMHz its clock after the timed runs (all 0
	// without a probe).
	ClockMHz, ClockMaxMHz, ClockEndMHz float64
	// Times are the timed repetitions in order; Median, Min, Max and the
	// quartiles Q1, Q3 summarize them (nearest rank).
	Times                    []time.Duration
	Median, Min, Max, Q1, Q3 time.Duration
}

// Spread returns (Max − Min) / Median, the relative range of the timed
// repetitions.
func (m Measurement) Spread() float64 {
	if m.Median <= 0 {
		return 0
	}
	return float64(m.Max-m.Min) / float64(m.Median)
}

// measure warms up by rule w and times reps repetitions of one (which
// runs the benchmark's submission once and returns its Timing). It stops
// with ctx's error once cancelled.
func measure(ctx context.Context, w Warmup, reps int, one func() (Timing, error)) (Measurement, error) {
	var m Measurement
	start := time.Now()
	var recent []time.Duration
	for {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		t, err := one()
		if err != nil {
			return m, err
		}
		m.Warmups++
		recent = append(recent, t.Best())
		if len(recent) > w.Window {
			recent = recent[1:]
		}
		el := time.Since(start)
		if m.Warmups >= max(w.MinRuns, w.Window, 1) && el >= w.MinTime && agree(recent, w.Tol) {
			up, sm, maxSM := w.clockUp()
			m.ClockMHz, m.ClockMaxMHz = sm, maxSM
			if up {
				m.Stable = true
				break
			}
		}
		if m.Warmups >= w.MaxRuns || el >= w.MaxTime {
			break
		}
	}
	m.WarmupTime = time.Since(start)
	allGPU := true
	var walls, gpus []time.Duration
	for range max(reps, 1) {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		t, err := one()
		if err != nil {
			return m, err
		}
		walls, gpus = append(walls, t.Wall), append(gpus, t.GPU)
		allGPU = allGPU && t.GPU > 0
	}
	if w.Clock != nil {
		if sm, maxSM, ok := w.Clock(); ok {
			m.ClockEndMHz = sm
			if m.ClockMaxMHz == 0 {
				m.ClockMHz, m.ClockMaxMHz = sm, maxSM
			}
		}
	}
	m.Times, m.Source = walls, "wall"
	if allGPU {
		m.Times, m.Source = gpus, "timestamp"
	}
	s := slices.Clone(m.Times)
	slices.Sort(s)
	rank := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	m.Min, m.Max, m.Median, m.Q1, m.Q3 = s[0], s[len(s)-1], s[len(s)/2], rank(0.25), rank(0.75)
	return m, nil
}

// agree reports whether the times are within tol of each other (largest ≤
// (1 + tol) × smallest).
func agree(ts []time.Duration, tol float64) bool {
	if len(ts) == 0 {
		return false
	}
	lo, hi := slices.Min(ts), slices.Max(ts)
	return lo > 0 && float64(hi) <= (1+tol)*float64(lo)
}

// SetWarmup sets the warm-up rule of the runner's benchmarks (default:
// DefaultWarmup for the adapter).
func (r *Runner) SetWarmup(w Warmup) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warm, r.warmSet = w, true
}

// Warmup returns the warm-up rule of the runner's benchmarks.
func (r *Runner) Warmup() Warmup {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.warmupLocked()
}

func (r *Runner) warmupLocked() Warmup {
	w := DefaultWarmup(r.info.Hardware)
	if r.warmSet {
		w = r.warm
	}
	if w.Clock == nil {
		w.Clock = r.clock
	}
	return w
}

// SetClockProbe gives the runner's benchmarks a way to read the GPU's SM
// clock (WebGPU has none): their warm-up then also waits, up to its
// MaxTime, for the clock to reach the rule's ClockFrac of its maximum,
// and each Measurement records the clock. nil removes it.
func (r *Runner) SetClockProbe(p ClockProbe) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clock = p
}
