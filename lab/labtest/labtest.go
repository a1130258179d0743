// Package labtest registers small deterministic experiments for testing the
// lab end to end without depending on the real experiments: a test imports
// it for its side effect, and `make lab-wasm-test` builds it into the
// WebAssembly registry with the build tag labtest.
//
//	lab-demo   n points over `series` series, y from the seed, optionally
//	           slow (delay per point), failing or panicking at the end
//	lab-chart  a declared chart with families, variants, a measured series,
//	           exact zeros, a NaN, standard errors, a reference and a mark
package labtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fp8lab/fp8lab/sim"
)

// Demo is the lab-demo experiment.
type Demo struct{}

// Name returns "lab-demo".
func (Demo) Name() string { return "lab-demo" }

// Doc describes the experiment.
func (Demo) Doc() string {
	return "Test experiment of the lab: n seeded points over a few series.\n\n" +
		"Series s0 … s{series-1} take turns; every 10th point also goes to \"h200 demo\"."
}

// Params returns the schema.
func (Demo) Params() []sim.Param {
	return []sim.Param{
		{Name: "n", Doc: "points to emit", Kind: sim.KindInt, Default: 100, Min: 1, Max: 1000000},
		{Name: "series", Doc: "number of series", Kind: sim.KindInt, Default: 2, Min: 1, Max: 8},
		{Name: "delay", Doc: "pause after each point", Unit: "µs", Kind: sim.KindFloat, Default: 0.0, Min: 0, Max: 1e6},
		{Name: "pause", Doc: "pause before the first point", Unit: "ms", Kind: sim.KindInt, Default: 0, Min: 0, Max: 60000},
		{Name: "end", Doc: "how the run ends", Kind: sim.KindChoice, Default: "ok", Choices: []string{"ok", "error", "panic"}},
	}
}

// Cost estimates the run: a KiB of memory and a microsecond of work per
// point (the lab's budget tests size runs with n).
func (Demo) Cost(v sim.Values) sim.Cost {
	n := int64(v.Int("n"))
	return sim.Cost{Memory: 1<<20 + n<<10, Work: n * 1000}
}

// Run emits the points.
func (Demo) Run(ctx context.Context, run *sim.Run) error {
	v := run.Values
	n, series := v.Int("n"), v.Int("series")
	delay := time.Duration(v.Float("delay") * float64(time.Microsecond))
	rng := sim.TrialRand(run.Seed, "lab-demo", 0)
	run.Note(fmt.Sprintf("emitting %d points", n))
	run.AddTotal(int64(n))
	select {
	case <-time.After(time.Duration(v.Int("pause")) * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	for i := range n {
		y := rng.Float64()
		if err := run.Emit(sim.Point{Series: fmt.Sprintf("s%d", i%series), X: float64(i), Y: y, Extra: map[string]float64{"i": float64(i)}}); err != nil {
			return err
		}
		if i%10 == 0 {
			if err := run.Emit(sim.Point{Series: "h200 demo", X: float64(i), Y: y / 2}); err != nil {
				return err
			}
		}
		run.Advance(1)
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	run.Summary(map[string]float64{"n": float64(n)})
	switch v.String("end") {
	case "error":
		return errors.New("the demo failed as asked")
	case "panic":
		panic("the demo panicked as asked")
	}
	return nil
}

func init() { sim.Register(Demo{}) }
