package lab

import (
	"fmt"

	"github.com/fp8lab/fp8lab/sim"
)

// Default budget of a lab: what a laptop affords. `lab serve -max-memory
// -max-work` change them.
const (
	// DefaultMaxMemory is the most memory the runs the lab executes at
	// once may hold together, by their estimates, where the machine's
	// memory is not known (DefaultMaxMemoryFor); a run estimated above it
	// is refused.
	DefaultMaxMemory = 4 << 30
	// DefaultMaxWork is the most work one run may be estimated to need:
	// 3.6e12 operations, about an hour of CPU time on one core.
	DefaultMaxWork = 3600e9
)

// DefaultMaxMemoryFor is the default memory budget of a lab on a machine
// with mem bytes of memory (0: unknown): a quarter of it, at least
// DefaultMaxMemory. The experiments' estimates grow with the cores their
// trials run on (a buffer per worker, a haystack group per device), and a
// machine with more cores has more memory: a fixed 4 GiB refused the
// default needle (5.9 GiB estimated with -device gpu) on a 16-core,
// 128 GiB host.
func DefaultMaxMemoryFor(mem int64) int64 {
	return max(DefaultMaxMemory, mem/4)
}

// budgetError is a run refused for its estimated cost (answered 400).
type budgetError struct{ msg string }

func (e *budgetError) Error() string { return e.msg }

// estimate returns the cost of running exp with values, or a budgetError
// when it is over the lab's budget or unknown.
func (s *Server) estimate(exp sim.Experiment, values sim.Values) (sim.Cost, error) {
	c, ok := sim.Estimate(exp, values)
	if !ok {
		return c, &budgetError{fmt.Sprintf("experiment %q gives no cost estimate; the lab runs only experiments that do (run it with lab run in a terminal)", exp.Name())}
	}
	var over []string
	if c.Memory > s.opts.MaxMemory {
		over = append(over, fmt.Sprintf("memory: the limit is %s (-max-memory)", sim.Bytes(s.opts.MaxMemory)))
	}
	if c.Work > s.opts.MaxWork {
		over = append(over, fmt.Sprintf("work: the limit is %.2g operations, %s of CPU time (-max-work)", float64(s.opts.MaxWork), sim.CPUTime(s.opts.MaxWork)))
	}
	if len(over) > 0 {
		msg := fmt.Sprintf("run over the lab's budget: %s %s needs %v;", exp.Name(), values.Flags(), c)
		for i, o := range over {
			if i > 0 {
				msg += ";"
			}
			msg += " " + o
		}
		return c, &budgetError{msg}
	}
	return c, nil
}
