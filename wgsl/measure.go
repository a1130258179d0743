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
// wall time, the host's submits and waits included, counted from the end
// of the first repetition: that one compiles the pipelines on a cold
// cache, and seconds of compiling on the host warm nothing on the GPU);
// then stop as soon as
// the last Window repetitions agree within Tol (largest ≤ (1 + Tol) ×
// smallest, on the GPU's time when timestamps exist, else the wall time);
// give up after MaxTime or MaxRuns (the measurement then says it was not
// stable). With a Clock probe that answers, the clock must have settled
// too: a stable time is not a stable clock (on the H200, gpucheck's
// benchmarks once measured at 345–675 MHz of 1980 with times agreeing
// within 5 %). Settled is either at least ClockFrac of the maximum, or
// the probe's readings over the last ClockSettle agreeing within Tol (a
// load too light for the GPU to raise its clock: the clock it settles at
// is measured and recorded, not waited out). The timed repetitions
// follow.
type Warmup struct {
	MinRuns, Window, MaxRuns int
	MinTime, MaxTime         time.Duration
	Tol                      float64
	// Clock reports the GPU's SM clock and its maximum (nil: not asked;
	// see Runner.SetClockProbe); ClockFrac is the fraction of the maximum
	// the clock must reach (0: any).
	Clock       ClockProbe
	ClockFrac   float64
	ClockSettle time.Duration
}

// ClockProbe reports the GPU's SM clock now and its maximum, in MHz; ok is
// false when it cannot tell (no sample yet, no nvidia-smi). WebGPU has no
// clock query, so a probe comes from outside (gpucheck's nvidia-smi
// sampler).
type ClockProbe func() (smMHz, maxMHz float64, ok bool)

// DefaultWarmup returns the rule for an adapter: on a hardware GPU at least
// 3 runs and 0.5 s, the last 3 within 5 %, at most 5 s or 100000 runs; on
// a CPU adapter (lavapipe: no clock to ramp, only the shader compile and
// the caches) at least 2 runs, the last 2 within 20 %, at most 1 s or 50.
// On hardware, with a clock probe (when the runner has one), the SM clock
// must also be at 90 % of its maximum or unchanged (within 5 %) for 0.6 s
// (three of gpucheck's nvidia-smi samples).
func DefaultWarmup(hardware bool) Warmup {
	if hardware {
		return Warmup{MinRuns: 3, Window: 3, MaxRuns: 100000, MinTime: 500 * time.Millisecond, MaxTime: 5 * time.Second, Tol: 0.05,
			ClockFrac: 0.9, ClockSettle: 600 * time.Millisecond}
	}
	return Warmup{MinRuns: 2, Window: 2, MaxRuns: 50, MaxTime: time.Second, Tol: 0.20}
}

// String states the rule in words, for reports.
func (w Warmup) String() string {
	clk := ""
	if w.Clock != nil && w.ClockFrac > 0 {
		clk = fmt.Sprintf(" and the SM clock is at %.0f %% of its maximum or has settled (within %.0f %% for %v)", 100*w.ClockFrac, 100*w.Tol, w.ClockSettle)
	}
	return fmt.Sprintf("untimed runs until the last %d agree within %.0f %%%s (after at least %d runs and %v after the first one; at most %d runs or %v)",
		w.Window, 100*w.Tol, clk, w.MinRuns, w.MinTime, w.MaxRuns, w.MaxTime)
}

// clockReading is one answer of the probe during a warm-up.
type clockReading struct {
	at        time.Time
	sm, maxSM float64
}

// clockSettled reports whether the readings say the clock has settled by
// w's rule (see Warmup), and whether it is up (at ClockFrac of the
// maximum). No probe, or none of its answers, counts as settled and up.
func (w Warmup) clockSettled(rs []clockReading) (settled, up bool) {
	if len(rs) == 0 {
		return true, true
	}
	last := rs[len(rs)-1]
	if last.sm >= w.ClockFrac*last.maxSM {
		return true, true
	}
	if last.at.Sub(rs[0].at) < w.ClockSettle {
		return false, false
	}
	// The newest readings back until they span ClockSettle, and at least
	// three of them (one slow run must not make a window of one reading).
	lo, hi := last.sm, last.sm
	for i, n := len(rs)-1, 0; i >= 0; i-- {
		lo, hi, n = min(lo, rs[i].sm), max(hi, rs[i].sm), n+1
		if n >= 3 && last.at.Sub(rs[i].at) >= w.ClockSettle {
			return lo > 0 && hi <= (1+w.Tol)*lo, false
		}
	}
	return false, false
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
	// without a probe); ClockUp is whether the warm-up ended with the clock
	// at ClockFrac of its maximum (false also where it settled lower).
	ClockMHz, ClockMaxMHz, ClockEndMHz float64
	ClockUp                            bool
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
	var warm time.Time // the end of the first repetition: MinTime counts from it
	var recent []time.Duration
	var readings []clockReading
	for {
		if err := ctx.Err(); err != nil {
			return m, err
		}
		t, err := one()
		if err != nil {
			return m, err
		}
		m.Warmups++
		if m.Warmups == 1 {
			warm = time.Now()
		}
		recent = append(recent, t.Best())
		if len(recent) > w.Window {
			recent = recent[1:]
		}
		el := time.Since(start)
		if m.Warmups >= max(w.MinRuns, w.Window, 1) && time.Since(warm) >= w.MinTime && agree(recent, w.Tol) {
			if w.Clock != nil {
				if sm, maxSM, ok := w.Clock(); ok && maxSM > 0 {
					readings = append(readings, clockReading{time.Now(), sm, maxSM})
					m.ClockMHz, m.ClockMaxMHz = sm, maxSM
				}
			}
			settled, up := w.clockSettled(readings)
			m.ClockUp = up && len(readings) > 0
			if settled {
				m.Stable = true
				break
			}
		} else {
			readings = readings[:0] // the times moved: the clock must settle again
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
		if sm, _, ok := w.Clock(); ok {
			m.ClockEndMHz = sm
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
	r.wait() // the rule depends on the hardware
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
