package sim

import (
	"context"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Experiment is one question fp8lab answers, runnable from the terminal, the
// lab and the browser. Implementations are registered by name with
// [Register], usually from an init function, and run through [Execute].
type Experiment interface {
	// Name is the experiment's registry name, named as the question it
	// answers ("contraction", "needle").
	Name() string
	// Doc describes the experiment; its first line is the one-line summary.
	Doc() string
	// Params is the parameter schema; it must pass [CheckParams].
	Params() []Param
	// Run computes the experiment with run.Values and run.Seed, emitting
	// points through run. It must return promptly once ctx is cancelled
	// ([Trials] and [Run.Emit] return ctx.Err() then).
	Run(ctx context.Context, run *Run) error
}

var registry = struct {
	sync.RWMutex
	m map[string]Experiment
}{m: map[string]Experiment{}}

// Register adds e to the registry. It panics when the name is empty or taken,
// when the parameter schema is invalid, or when the chart e declares (see
// [Charter]) fails [Chart.Check]: these are programming errors found at init.
func Register(e Experiment) {
	name := e.Name()
	if !validName(name) {
		panic(fmt.Sprintf("sim: Register: invalid experiment name %q", name))
	}
	if err := CheckParams(slices.Clone(e.Params())); err != nil {
		panic(fmt.Sprintf("sim: Register %q: %v", name, err))
	}
	if c, ok := e.(Charter); ok {
		if err := c.Chart().Check(); err != nil {
			panic(fmt.Sprintf("sim: Register %q: chart: %v", name, err))
		}
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[name]; dup {
		panic(fmt.Sprintf("sim: Register: experiment %q registered twice", name))
	}
	registry.m[name] = e
}

// Lookup returns the registered experiment with the given name, or an error
// listing the known names.
func Lookup(name string) (Experiment, error) {
	registry.RLock()
	defer registry.RUnlock()
	if e, ok := registry.m[name]; ok {
		return e, nil
	}
	names := slices.Sorted(maps.Keys(registry.m))
	if len(names) == 0 {
		return nil, fmt.Errorf("unknown experiment %q (none registered)", name)
	}
	return nil, fmt.Errorf("unknown experiment %q (known: %s)", name, strings.Join(names, ", "))
}

// Experiments returns the registered experiments sorted by name.
func Experiments() []Experiment {
	registry.RLock()
	defer registry.RUnlock()
	list := slices.Collect(maps.Values(registry.m))
	sort.Slice(list, func(i, j int) bool { return list[i].Name() < list[j].Name() })
	return list
}

// Summary returns the first line of an experiment's Doc.
func Summary(e Experiment) string {
	doc := strings.TrimSpace(e.Doc())
	line, _, _ := strings.Cut(doc, "\n")
	return strings.TrimSpace(line)
}

// Point is one result of an experiment: y at x in a named series (one line
// of a plot). Extra holds further named measurements at the same point
// (e.g. "max_abs", "cosine"); its keys must not be "type", "series", "x" or
// "y".
type Point struct {
	Series string
	X, Y   float64
	Extra  map[string]float64
}

// Run is one execution of an experiment: its validated values, its seed, and
// the channel to the sink. Its methods are safe for concurrent use, so trials
// running in parallel may emit and report progress.
type Run struct {
	// Values are the validated parameter values.
	Values Values
	// Seed is the run's seed; with the same Values it determines every number.
	Seed uint64

	ctx  context.Context
	sink Sink

	done, total, reserved atomic.Int64
	lastProgress          atomic.Int64 // unix nanoseconds of the last forwarded progress
	points                atomic.Int64

	mu      sync.Mutex
	summary map[string]float64
}

// progressEvery is the least interval between progress reports forwarded to
// the sink, except the one reaching the total.
const progressEvery = 50 * time.Millisecond

// Context returns the run's context.
func (r *Run) Context() context.Context { return r.ctx }

var reservedExtra = []string{"type", "series", "x", "y"}

// Emit sends p to the sink. It returns ctx.Err() once the run is cancelled,
// an error when an Extra key is reserved, or the sink's error.
func (r *Run) Emit(p Point) error {
	if err := r.ctx.Err(); err != nil {
		return err
	}
	for k := range p.Extra {
		if slices.Contains(reservedExtra, k) {
			return fmt.Errorf("sim: point extra field %q is reserved", k)
		}
	}
	if p.Extra != nil {
		p.Extra = maps.Clone(p.Extra)
	}
	r.points.Add(1)
	return r.sink.Point(p)
}

// Progress sets the progress to done out of total units of work, replacing
// any earlier count. Use it for work that is not counted by [Trials]; prefer
// [Run.AddTotal] and [Run.Advance] when several steps share one bar.
func (r *Run) Progress(done, total int64) {
	r.total.Store(total)
	r.reserved.Store(done)
	r.done.Store(done)
	r.report(true)
}

// AddTotal plans n more units of work. Calling it once, before the work
// starts, with the sum over all steps (e.g. every [Trials] call of every
// series) makes the progress bar go once from 0 to 100%; [Trials] calls
// then draw on this plan instead of growing the total.
func (r *Run) AddTotal(n int64) {
	r.total.Add(n)
	r.report(false)
}

// Advance records n more units of work done.
func (r *Run) Advance(n int64) {
	r.done.Add(n)
	r.report(false)
}

// reserve claims n units of planned work for a step, growing the total when
// the plan does not cover them.
func (r *Run) reserve(n int64) {
	res := r.reserved.Add(n)
	for {
		t := r.total.Load()
		if t >= res || r.total.CompareAndSwap(t, res) {
			return
		}
	}
}

// report forwards the progress to the sink, at most every progressEvery
// unless force is set or the work is complete.
func (r *Run) report(force bool) {
	done, total := r.done.Load(), r.total.Load()
	now := time.Now().UnixNano()
	last := r.lastProgress.Load()
	if !force && done < total && now-last < int64(progressEvery) {
		return
	}
	if !r.lastProgress.CompareAndSwap(last, now) && !force && done < total {
		return // another goroutine is reporting
	}
	r.sink.Progress(done, total)
}

// Summary merges values into the run's summary (later values win), which the
// sink receives once, when the run ends.
func (r *Run) Summary(values map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.summary == nil {
		r.summary = map[string]float64{}
	}
	maps.Copy(r.summary, values)
}

// Note sends a line of text meant for a human reading the output.
func (r *Run) Note(text string) { r.sink.Note(text) }

// Result describes a finished run.
type Result struct {
	Experiment string             // the experiment's name
	Values     Values             // the parameter values
	Seed       uint64             // the seed
	Points     int64              // number of points emitted
	Summary    map[string]float64 // the merged summary
	Elapsed    time.Duration      // wall-clock time of the run
}

// PanicError is the error of a run whose experiment (or one of its trials)
// panicked.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic
}

// Error returns "panic: VALUE".
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// Execute runs exp with values and seed, sending its output to sink (nil
// discards it), and returns when the run ends.
//
// values must have been validated against exp.Params() (use [ParseValues],
// [ValuesFromJSON] or [ValuesFromMap]); the zero Values means all defaults.
// A panic inside the experiment becomes a *[PanicError] wrapped in the
// returned error: the caller never crashes. When ctx is cancelled, Execute
// returns ctx.Err(). In every case the sink then receives the summary (possibly
// partial) and is closed, so partial output is still shown.
func Execute(ctx context.Context, exp Experiment, values Values, seed uint64, sink Sink) (res Result, err error) {
	if sink == nil {
		sink = Discard
	}
	start := time.Now()
	res = Result{Experiment: exp.Name(), Seed: seed}
	if values.m == nil {
		values, err = Defaults(exp.Params())
	} else if err = sameSchema(values.params, exp.Params()); err != nil {
		err = fmt.Errorf("experiment %q: %w", exp.Name(), err)
	}
	if err != nil {
		sink.Close()
		return res, err
	}
	res.Values = values
	run := &Run{Values: values, Seed: seed, ctx: ctx, sink: sink}
	err = runProtected(ctx, exp, run)
	if ctx.Err() != nil {
		err = ctx.Err()
	} else if err != nil {
		err = fmt.Errorf("experiment %q: %w", exp.Name(), err)
	}
	if t := run.total.Load(); t > 0 {
		sink.Progress(run.done.Load(), t)
	}
	run.mu.Lock()
	res.Summary = maps.Clone(run.summary)
	run.mu.Unlock()
	if res.Summary == nil {
		res.Summary = map[string]float64{}
	}
	sink.Summary(maps.Clone(res.Summary))
	if cerr := sink.Close(); cerr != nil && err == nil {
		err = cerr
	}
	res.Points = run.points.Load()
	res.Elapsed = time.Since(start)
	return res, err
}

func runProtected(ctx context.Context, exp Experiment, run *Run) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return exp.Run(ctx, run)
}

func sameSchema(got, want []Param) error {
	if len(got) != len(want) {
		return fmt.Errorf("values were validated against another parameter schema")
	}
	for i := range got {
		if got[i].Name != want[i].Name || got[i].Kind != want[i].Kind {
			return fmt.Errorf("values were validated against another parameter schema")
		}
	}
	return nil
}
