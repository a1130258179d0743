package sweep

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/fp8lab/fp8lab/sim"
)

// Stat is the statistics of n finite values of one quantity over the runs
// of a group: mean, sample standard deviation (n−1), standard error sd/√n
// and the 95 % confidence interval of the mean, mean ± t(0.975, n−1)·se
// (Student t). With n = 1 the mean is the value and SD, SE and the interval
// are NaN (unknown, not zero); with n = 0 everything is NaN. Non-finite
// values (NaN, ±Inf) are not averaged: NonFinite counts them, so nothing is
// dropped silently.
type Stat struct {
	N         int
	Mean      float64
	SD        float64
	SE        float64
	Lo, Hi    float64 // 95 % confidence interval of the mean
	NonFinite int
	// Method says how Lo and Hi were computed: MethodT, or a percentile
	// bootstrap (see [Options.Positive]); empty when they are unknown.
	Method string
}

// MethodT names the Student-t interval of the mean.
const MethodT = "95 % Student-t interval of the mean"

// tQuantile975 returns t(0.975, nu) from gonum's Student t, memoised.
var tCache sync.Map // int → float64

func tQuantile975(nu int) float64 {
	if v, ok := tCache.Load(nu); ok {
		return v.(float64)
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(nu)}.Quantile(0.975)
	tCache.Store(nu, q)
	return q
}

// Describe returns the Stat of values (see [Stat]). values is reordered.
func Describe(values []float64) Stat {
	s := Stat{}
	finite := values[:0:0]
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			s.NonFinite++
			continue
		}
		finite = append(finite, v)
	}
	s.N = len(finite)
	nan := math.NaN()
	switch s.N {
	case 0:
		s.Mean, s.SD, s.SE, s.Lo, s.Hi = nan, nan, nan, nan, nan
	case 1:
		s.Mean, s.SD, s.SE, s.Lo, s.Hi = finite[0], nan, nan, nan, nan
	default:
		s.Mean, s.SD = stat.MeanStdDev(finite, nil)
		s.SE = stat.StdErr(s.SD, float64(s.N))
		h := tQuantile975(s.N-1) * s.SE
		s.Lo, s.Hi = s.Mean-h, s.Mean+h
		s.Method = MethodT
	}
	return s
}

// Bootstrap budget: an aggregate draws at most bootstrapDraws values for
// its bootstrap intervals in all (about a second of CPU), with between
// bootstrapMin and bootstrapMax resamples per interval; past the budget the
// intervals are Student t, and their Method says so.
const (
	bootstrapDraws = 200_000_000
	bootstrapMax   = 2000
	bootstrapMin   = 200
)

// describeBootstrap returns Describe(values) with Lo and Hi replaced by the
// 2.5 and 97.5 percentiles of the mean over b resamples (with replacement,
// from a generator seeded by seed: the same values give the same interval),
// when n ≥ 2. Such an interval stays within the values' range, so a
// positive quantity keeps a positive interval.
func describeBootstrap(values []float64, b int, seed uint64) Stat {
	s := Describe(values)
	if s.N < 2 {
		return s
	}
	finite := make([]float64, 0, s.N)
	for _, v := range values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			finite = append(finite, v)
		}
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(finite))))
	means := make([]float64, b)
	n := len(finite)
	for i := range means {
		sum := 0.0
		for range n {
			sum += finite[rng.IntN(n)]
		}
		means[i] = sum / float64(n)
	}
	sort.Float64s(means)
	s.Lo = stat.Quantile(0.025, stat.Empirical, means, nil)
	s.Hi = stat.Quantile(0.975, stat.Empirical, means, nil)
	s.Method = fmt.Sprintf("95 %% percentile bootstrap of the mean (%d resamples)", b)
	if s.N < 10 {
		s.Method += "; fewer than 10 runs: it undercovers"
	}
	return s
}

// Options choose what [AggregateWith] describes.
type Options struct {
	// Field is the point quantity described per (series, x): "" or "y" is
	// the point's y, any other name the point extra of that name (a point
	// without it contributes nothing to its Stat).
	Field string
	// Positive reports whether a quantity is positive by nature (an error,
	// a time: drawn on a log axis): kind is "summary" (name a summary key)
	// or "series" (name a series). Where it holds and every value is
	// positive, the interval is a percentile bootstrap of the mean, which
	// stays positive where the t interval can go below zero. Nil: t
	// intervals throughout.
	Positive func(kind, name string) bool
	// Unit returns the unit of a quantity (kind and name as for Positive;
	// for a series, the unit of Field), written beside its statistics; ""
	// is unknown. Nil: no units.
	Unit func(kind, name string) string
}

// Sample is one finished run as the aggregation sees it.
type Sample struct {
	ID      string
	Params  map[string]any
	Summary map[string]float64
	Points  []sim.Point
}

// SeriesStat is the Stat of one point (series, x) over a group's runs.
type SeriesStat struct {
	X float64
	Stat
}

// Group is the statistics of the runs sharing the values of the group-by
// parameters.
type Group struct {
	Key     map[string]any // the group-by parameters' values
	Runs    []string       // the runs' ids
	Summary map[string]Stat
	Series  map[string][]SeriesStat // by series, in increasing x
}

// Result is an aggregate: one Group per distinct value of the group-by
// parameters, in the order of the first run of each.
type Result struct {
	GroupBy []string
	// Field is the point quantity of Series' statistics ("y" or an extra).
	Field string
	// Units are the units of the quantities, by "summary:NAME" and
	// "series:NAME" ([Options.Unit]); absent where unknown.
	Units    map[string]string
	Summary  []string // every summary name, sorted
	Series   []string // every series name, sorted
	Groups   []Group
	Excluded []string `json:",omitempty"` // filled by the caller: runs not aggregated, and why
}

// Aggregate groups samples by the values of the parameters groupBy (every
// sample in one group when empty) and describes every summary value and
// every (series, x) point of each group. A sample lacking a summary value
// another has simply contributes nothing to it (N says how many did).
func Aggregate(groupBy []string, samples []Sample) Result {
	return AggregateWith(groupBy, samples, Options{})
}

// AggregateWith is [Aggregate] with the choices of opt: the point quantity
// described and the quantities whose intervals respect their sign.
func AggregateWith(groupBy []string, samples []Sample, opt Options) Result {
	field := opt.Field
	if field == "y" {
		field = ""
	}
	res := Result{GroupBy: slices.Clone(groupBy), Field: opt.Field}
	if res.Field == "" {
		res.Field = "y"
	}
	type acc struct {
		g       *Group
		summary map[string][]float64
		series  map[string]map[uint64][]float64 // by the bits of x (NaN and zero made one)
	}
	byKey := map[string]*acc{}
	var order []*acc
	sumNames, serNames := map[string]bool{}, map[string]bool{}
	for _, s := range samples {
		k := Key(groupBy, s.Params)
		a := byKey[k]
		if a == nil {
			key := make(map[string]any, len(groupBy))
			for _, n := range groupBy {
				key[n] = s.Params[n]
			}
			a = &acc{g: &Group{Key: key}, summary: map[string][]float64{}, series: map[string]map[uint64][]float64{}}
			byKey[k] = a
			order = append(order, a)
		}
		a.g.Runs = append(a.g.Runs, s.ID)
		for n, v := range s.Summary {
			a.summary[n] = append(a.summary[n], v)
			sumNames[n] = true
		}
		for _, p := range s.Points {
			m := a.series[p.Series]
			if m == nil {
				m = map[uint64][]float64{}
				a.series[p.Series] = m
				serNames[p.Series] = true
			}
			v := p.Y
			if field != "" {
				var ok bool
				if v, ok = p.Extra[field]; !ok {
					continue
				}
			}
			k := xKey(p.X)
			m[k] = append(m[k], v)
		}
	}
	// The bootstrap's resamples: as many as the budget allows over every
	// value of the positive quantities, or none (t intervals).
	var values int64
	for _, a := range order {
		for n, vs := range a.summary {
			if opt.Positive != nil && opt.Positive("summary", n) {
				values += int64(len(vs))
			}
		}
		for n, m := range a.series {
			if opt.Positive != nil && opt.Positive("series", n) {
				for _, vs := range m {
					values += int64(len(vs))
				}
			}
		}
	}
	b := bootstrapMax
	if values > 0 {
		b = int(min(int64(bootstrapMax), bootstrapDraws/values))
	}
	describe := func(kind, name string, x float64, vs []float64) Stat {
		if opt.Positive == nil || !opt.Positive(kind, name) || !allPositive(vs) {
			return Describe(vs)
		}
		if b < bootstrapMin {
			s := Describe(vs)
			if s.Method != "" {
				s.Method += fmt.Sprintf(" (too many values for a bootstrap: more than %d draws)", bootstrapDraws)
			}
			return s
		}
		h := fnv.New64a()
		fmt.Fprintf(h, "%s\x00%s\x00%v", kind, name, x)
		return describeBootstrap(vs, b, h.Sum64())
	}
	for _, a := range order {
		a.g.Summary = make(map[string]Stat, len(a.summary))
		for n, vs := range a.summary {
			a.g.Summary[n] = describe("summary", n, 0, vs)
		}
		a.g.Series = make(map[string][]SeriesStat, len(a.series))
		for n, m := range a.series {
			xs := make([]float64, 0, len(m))
			for k := range m {
				xs = append(xs, math.Float64frombits(k))
			}
			sort.Float64s(xs) // NaN first
			out := make([]SeriesStat, len(xs))
			for i, x := range xs {
				out[i] = SeriesStat{X: x, Stat: describe("series", n, x, m[xKey(x)])}
			}
			a.g.Series[n] = out
		}
		res.Groups = append(res.Groups, *a.g)
	}
	res.Summary = sortedKeys(sumNames)
	res.Series = sortedKeys(serNames)
	if opt.Unit != nil {
		res.Units = map[string]string{}
		for _, n := range res.Summary {
			if u := opt.Unit("summary", n); u != "" {
				res.Units["summary:"+n] = u
			}
		}
		for _, n := range res.Series {
			if u := opt.Unit("series", n); u != "" {
				res.Units["series:"+n] = u
			}
		}
	}
	return res
}

// allPositive reports whether every finite value is above zero.
func allPositive(vs []float64) bool {
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v <= 0 {
			return false
		}
	}
	return true
}

// xKey is the map key of a point's x: its bits, with every NaN one key and
// −0 the same as +0.
func xKey(x float64) uint64 {
	switch {
	case math.IsNaN(x):
		return math.Float64bits(math.NaN())
	case x == 0:
		return 0
	}
	return math.Float64bits(x)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// GroupLabel formats a group's key as "kBlockN=64 dist=pv".
func GroupLabel(groupBy []string, key map[string]any) string {
	if len(groupBy) == 0 {
		return "all runs"
	}
	parts := make([]string, len(groupBy))
	for i, n := range groupBy {
		parts[i] = n + "=" + strings.Trim(canon(key[n]), `"`)
	}
	return strings.Join(parts, " ")
}
