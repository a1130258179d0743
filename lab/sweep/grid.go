// Package sweep is the arithmetic of fp8lab's sweeps: a grid over any
// parameters of one experiment times a list of seeds ([Spec], [Grid]), the
// parsing of its command-line form (`-kBlockN 64,96 -seeds 1..20`), and the
// aggregation of the finished runs into per-group statistics (mean, standard
// error and a 95 % Student-t confidence interval, computed with gonum) of
// every summary value and of every point of every series ([Aggregate]).
//
// It holds no state and runs nothing: package lab stores sweeps in the
// notebook, runs their children in its pool or on Slurm, and serves the
// aggregate.
package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fp8lab/fp8lab/sim"
)

// Limits of a sweep; a spec beyond them is refused with the limit named.
const (
	MaxAxes   = 8     // swept parameters
	MaxValues = 1000  // values of one axis
	MaxSeeds  = 1000  // seeds
	MaxRuns   = 20000 // grid points × seeds
)

// Axis is one swept parameter and its values, in the order they are run.
type Axis struct {
	Name   string `json:"name"`
	Values []any  `json:"values"`
}

// Spec is what a user asks for: an experiment, fixed parameter values (the
// others take their defaults), the swept axes and the seeds. Every run of
// the sweep is one grid point (one value of each axis) with one seed.
type Spec struct {
	Experiment string         `json:"experiment"`
	Params     map[string]any `json:"params,omitempty"`
	Axes       []Axis         `json:"axes"`
	Seeds      []uint64       `json:"seeds"`
}

// Grid is a validated Spec: axis values are converted to their parameter's
// kind, and every run's values can be built. Runs are numbered 0 … Len()-1:
// the seed varies fastest, then the last axis, …, the first axis slowest.
type Grid struct {
	Spec   Spec
	exp    sim.Experiment
	params []sim.Param
	sizes  []int // values per axis
}

// NewGrid validates spec against exp's schema: every axis is a parameter
// (at most once, not also fixed), every value converts to its kind and lies
// in its limits, and the counts are within the limits above. The returned
// grid holds converted copies of the values.
func NewGrid(exp sim.Experiment, spec Spec) (*Grid, error) {
	if exp == nil {
		return nil, errors.New("sweep: no experiment")
	}
	spec.Experiment = exp.Name()
	params := exp.Params()
	if _, err := sim.ValuesFromMap(params, spec.Params); err != nil {
		return nil, fmt.Errorf("fixed parameters: %w", err)
	}
	if len(spec.Axes) > MaxAxes {
		return nil, fmt.Errorf("%d swept parameters; at most %d", len(spec.Axes), MaxAxes)
	}
	if len(spec.Seeds) == 0 {
		return nil, errors.New("seeds: none given (e.g. 1..20)")
	}
	if len(spec.Seeds) > MaxSeeds {
		return nil, fmt.Errorf("%d seeds; at most %d", len(spec.Seeds), MaxSeeds)
	}
	if i := firstDuplicate(spec.Seeds); i >= 0 {
		return nil, fmt.Errorf("seeds: %d given twice", spec.Seeds[i])
	}
	g := &Grid{exp: exp, params: params}
	runs := len(spec.Seeds)
	axes := make([]Axis, len(spec.Axes))
	for i, a := range spec.Axes {
		k := slices.IndexFunc(params, func(p sim.Param) bool { return p.Name == a.Name })
		switch {
		case k < 0:
			return nil, fmt.Errorf("swept parameter %q: %s has no such parameter", a.Name, exp.Name())
		case slices.ContainsFunc(spec.Axes[:i], func(b Axis) bool { return b.Name == a.Name }):
			return nil, fmt.Errorf("swept parameter %q given twice", a.Name)
		case len(a.Values) == 0:
			return nil, fmt.Errorf("swept parameter %q: no values", a.Name)
		case len(a.Values) > MaxValues:
			return nil, fmt.Errorf("swept parameter %q: %d values; at most %d", a.Name, len(a.Values), MaxValues)
		}
		if _, fixed := spec.Params[a.Name]; fixed {
			return nil, fmt.Errorf("parameter %q is both fixed and swept", a.Name)
		}
		vals := make([]any, len(a.Values))
		seen := map[string]bool{}
		for j, v := range a.Values {
			x, err := params[k].Convert(v)
			if err != nil {
				return nil, fmt.Errorf("swept %w", err)
			}
			key := params[k].FormatValue(x)
			if seen[key] {
				return nil, fmt.Errorf("swept parameter %q: value %s given twice", a.Name, key)
			}
			seen[key] = true
			vals[j] = x
		}
		axes[i] = Axis{Name: a.Name, Values: vals}
		g.sizes = append(g.sizes, len(vals))
		runs *= len(vals)
		if runs > MaxRuns {
			return nil, fmt.Errorf("more than %d runs (grid points × seeds)", MaxRuns)
		}
	}
	spec.Axes = axes
	spec.Seeds = slices.Clone(spec.Seeds)
	g.Spec = spec
	return g, nil
}

func firstDuplicate(s []uint64) int {
	seen := make(map[uint64]bool, len(s))
	for i, v := range s {
		if seen[v] {
			return i
		}
		seen[v] = true
	}
	return -1
}

// Experiment returns the swept experiment.
func (g *Grid) Experiment() sim.Experiment { return g.exp }

// Points returns the number of grid points (the product of the axis sizes;
// 1 without axes).
func (g *Grid) Points() int {
	n := 1
	for _, s := range g.sizes {
		n *= s
	}
	return n
}

// Len returns the number of runs: grid points × seeds.
func (g *Grid) Len() int { return g.Points() * len(g.Spec.Seeds) }

// Run returns the parameter values and seed of run i (0 ≤ i < Len()); it
// returns an error for an i out of range.
func (g *Grid) Run(i int) (sim.Values, uint64, error) {
	if i < 0 || i >= g.Len() {
		return sim.Values{}, 0, fmt.Errorf("run %d of a sweep of %d", i, g.Len())
	}
	seed := g.Spec.Seeds[i%len(g.Spec.Seeds)]
	m := make(map[string]any, len(g.Spec.Params)+len(g.Spec.Axes))
	for k, v := range g.Spec.Params {
		m[k] = v
	}
	for k, v := range g.point(i / len(g.Spec.Seeds)) {
		m[k] = v
	}
	vals, err := sim.ValuesFromMap(g.params, m)
	return vals, seed, err
}

// LargestRun returns the values of the run whose parameters take the most
// bytes as JSON: every axis at its value with the longest encoding (each
// parameter is one entry of a run's parameters, so their sizes add up).
// A limit on a run's parameters holds for every run of the grid when it
// holds for this one.
func (g *Grid) LargestRun() (sim.Values, error) {
	m := make(map[string]any, len(g.Spec.Params)+len(g.Spec.Axes))
	for k, v := range g.Spec.Params {
		m[k] = v
	}
	for _, a := range g.Spec.Axes {
		best, size := a.Values[0], -1
		for _, v := range a.Values {
			b, err := json.Marshal(v)
			if err != nil {
				return sim.Values{}, fmt.Errorf("swept parameter %q: %v", a.Name, err)
			}
			if len(b) > size {
				best, size = v, len(b)
			}
		}
		m[a.Name] = best
	}
	return sim.ValuesFromMap(g.params, m)
}

// point returns the axis values of grid point p.
func (g *Grid) point(p int) map[string]any {
	m := make(map[string]any, len(g.Spec.Axes))
	for a := len(g.Spec.Axes) - 1; a >= 0; a-- {
		m[g.Spec.Axes[a].Name] = g.Spec.Axes[a].Values[p%g.sizes[a]]
		p /= g.sizes[a]
	}
	return m
}

// ParseSeeds reads a seed list: comma-separated seeds and inclusive ranges,
// e.g. "1..20" or "1,2,5..7". At most MaxSeeds seeds; none twice.
func ParseSeeds(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		lo, hi, isRange := strings.Cut(f, "..")
		a, err := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("seeds %q: %q is not a whole number (write e.g. 1..20 or 1,2,5)", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(strings.TrimSpace(hi), 10, 64); err != nil || b < a {
				return nil, fmt.Errorf("seeds %q: range %q: want lo..hi with lo ≤ hi", s, f)
			}
		}
		if b-a >= MaxSeeds || len(out)+int(b-a)+1 > MaxSeeds {
			return nil, fmt.Errorf("seeds %q: more than %d seeds", s, MaxSeeds)
		}
		for v := a; ; v++ {
			out = append(out, v)
			if v == b {
				break
			}
		}
	}
	if i := firstDuplicate(out); i >= 0 {
		return nil, fmt.Errorf("seeds %q: %d given twice", s, out[i])
	}
	return out, nil
}

// ParseFlagValues turns what a user typed after -NAME in `lab sweep` into
// the parameter's values: alternatives are separated by ',' — except for a
// list parameter (kind ints), whose alternatives are separated by ';' since
// ',' separates a list's elements ("-K 1024,4096;65536" is two lists).
// Every value is checked against the parameter's schema.
func ParseFlagValues(p sim.Param, s string) ([]any, error) {
	sep := ","
	if p.Kind == sim.KindInts {
		sep = ";"
	}
	var out []any
	for _, f := range strings.Split(s, sep) {
		v, err := p.Parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Key returns a canonical text of parameter values (sorted by name, JSON
// values), used to compare grid points whatever the numeric types: a run's
// params decoded from JSON (float64) and the grid's (int) give the same key.
func Key(names []string, params map[string]any) string {
	var b strings.Builder
	for i, n := range names {
		if i > 0 {
			b.WriteByte('\x1f')
		}
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(canon(params[n]))
	}
	return b.String()
}

func canon(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return canon(f)
		}
		return x.String()
	case string:
		return strconv.Quote(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	// Lists decode as []any of float64: re-canonicalise their elements.
	var list []any
	if json.Unmarshal(b, &list) == nil && list != nil {
		parts := make([]string, len(list))
		for i, e := range list {
			parts[i] = canon(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	return string(b)
}
