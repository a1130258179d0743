package sim

import (
	"fmt"
	"math"
	"runtime"
)

// Cost is an estimate of what one run of an experiment needs, computed
// from its parameter values before it starts, so that a runner (the lab)
// can refuse a run it cannot afford and keep the runs it executes at once
// within its memory.
//
// Estimates are upper-end figures of the implementation as it stands (the
// buffers it allocates, the loops it runs), not measurements: they are
// meant to be right within a small factor, which is what a budget needs.
type Cost struct {
	// Memory is the most bytes the run holds at once, counting the trials
	// it runs in parallel ([Workers] of them), Outside included. Go's
	// collector lets a heap grow to about twice its live bytes before it
	// collects unless a memory limit stops it first, so lab run sets
	// Memory − Outside as the runtime's soft limit
	// (runtime/debug.SetMemoryLimit) for its run, and lab serve its budget.
	Memory int64
	// Outside is the part of Memory held outside Go's heap, which no Go
	// limit bounds: with a GPU the driver's own host memory and the
	// device's buffers (host memory on lavapipe; in the GPU's memory on a
	// discrete card, where the figure is an upper end).
	Outside int64
	// Work is the run's computation in operations of about one nanosecond
	// on one core (one simulated multiply-add of a tensor-core model is
	// about 20): Work / 1e9 is roughly the CPU seconds the run takes.
	Work int64
}

// Coster is implemented by an experiment that estimates its cost from its
// parameter values. Cost must be cheap (arithmetic on the values) and must
// not fail: values are already validated.
type Coster interface {
	Cost(v Values) Cost
}

// Estimate returns the cost of running exp with values, and false when exp
// does not estimate its cost.
func Estimate(exp Experiment, values Values) (Cost, bool) {
	c, ok := exp.(Coster)
	if !ok {
		return Cost{}, false
	}
	return c.Cost(values), true
}

// Workers is the number of trials [Trials] runs at once for n trials: what
// estimates multiply per-trial memory by.
func Workers(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n)) }

// AddSat returns a+b, saturating at math.MaxInt64 (costs of absurd
// parameters must not wrap around to small numbers).
func AddSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// MulSat returns the product of non-negative factors, saturating at
// math.MaxInt64.
func MulSat(factors ...int64) int64 {
	p := int64(1)
	for _, f := range factors {
		if f <= 0 {
			return 0
		}
		if p > math.MaxInt64/f {
			return math.MaxInt64
		}
		p *= f
	}
	return p
}

// Bytes formats a byte count for messages: "512 MiB", "35.2 GiB".
func Bytes(n int64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.3g TiB", float64(n)/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.3g MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.3g KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// CPUTime formats an amount of work as CPU time on one core: "40 s",
// "3.2 h", "9.7 years".
func CPUTime(work int64) string {
	s := float64(work) / 1e9
	switch {
	case s >= 365*86400:
		return fmt.Sprintf("%.3g years", s/(365*86400))
	case s >= 86400:
		return fmt.Sprintf("%.3g days", s/86400)
	case s >= 3600:
		return fmt.Sprintf("%.3g h", s/3600)
	case s >= 60:
		return fmt.Sprintf("%.3g min", s/60)
	}
	return fmt.Sprintf("%.3g s", s)
}

// String describes the cost: "about 1.2 GiB of memory and 3.4e+12
// operations (about 57 min of CPU time on one core)".
func (c Cost) String() string {
	return fmt.Sprintf("about %s of memory and %.2g operations (about %s of CPU time on one core)", Bytes(c.Memory), float64(c.Work), CPUTime(c.Work))
}
