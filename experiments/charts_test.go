package experiments

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/tensorfile"

	"github.com/fp8lab/fp8lab/sim"
)

// TestChartsDeclared checks that every registered experiment declares its
// chart: both axes with a quantity and a unit, at most sim.MaxFamilies
// colours, and styles that every series of a small run matches (no series
// left to an undeclared colour).
func TestChartsDeclared(t *testing.T) {
	exps := sim.Experiments()
	if len(exps) < 9 {
		t.Fatalf("%d experiments registered, want at least 9", len(exps))
	}
	for _, e := range exps {
		c, ok := e.(sim.Charter)
		if !ok {
			t.Errorf("%s: no chart declared (sim.Charter)", e.Name())
			continue
		}
		ch := c.Chart()
		if err := ch.Check(); err != nil {
			t.Errorf("%s: %v", e.Name(), err)
		}
		for name, a := range map[string]sim.Axis{"x": ch.X, "y": ch.Y} {
			if a.Quantity == "" || a.Unit == "" {
				t.Errorf("%s: axis %s without quantity or unit: %+v", e.Name(), name, a)
			}
		}
		if s := sim.SchemaOf(e); s.Chart == nil {
			t.Errorf("%s: the schema carries no chart", e.Name())
		}
	}
}

// chartTestArgs are small parameters for each experiment, so that every
// registered experiment runs in TestChartSeriesStyled in about a second. An
// experiment not listed runs at its defaults when they cost at most
// chartTestMaxWork; a costlier one fails the test until it is listed.
var chartTestArgs = map[string]map[string]string{
	"contraction":    {"K": "64,128", "trials": "2", "captures": "auto"},
	"needle":         {"contexts": "256", "trials": "2", "head-dim": "64"},
	"promotion":      {"context": "512", "trials": "2", "head-dim": "64", "k-block-n": "96,192,64,160"},
	"scales":         {"outlier": "1,10", "trials": "2", "tokens": "256", "kv-heads": "2", "q-per-kv": "1"},
	"sensitivity":    {"vary": "splits", "context": "512", "trials": "2", "haystacks": "2", "head-dim": "64"},
	"skip-sw":        {"acc-contexts": "256", "trials": "1"},
	"h200-attention": {"N": "128,4096"},
	"kv-formats":     {"contexts": "256", "trials": "2", "head-dim": "64", "promotions": "0,1"},
	"attention-file": {"promotions": "0,1"},
	"gpu-accum":      {"K": "32,64", "trials": "2"},
	"decode-bw":      {"contexts": "64,128", "reps": "1", "batch": "1", "kv-heads": "1", "q-heads": "1"},
	"throughput":     {"requests": "20", "output": "200", "concurrencies": "4,8"},
	"prefill-cost":   {"acc-contexts": "256", "trials": "1"},
}

// chartTestMaxWork bounds the defaults' cost of an experiment that
// chartTestArgs does not list (sim.Cost.Work: about 1e9 per CPU second).
const chartTestMaxWork = 2e9

// chartFieldsPending lists the experiments whose Chart() declarations are
// another engineer's (issue 18: the lead adds their point fields and
// summary units): their undeclared extras and summary keys are logged, not
// failed. An entry whose experiment declares everything fails the test, so
// that the list only shrinks.
var chartFieldsPending = map[string]bool{}

// chartTestExperiment returns e ready to run in a test: a GPU experiment
// gets the shared runner (skipped without an adapter), a file experiment
// small input files.
func chartTestExperiment(t *testing.T, e sim.Experiment) sim.Experiment {
	t.Helper()
	switch x := e.(type) {
	case GPUAccum:
		x.Runner = gpuTestGPU(t)
		return x
	case DecodeBW:
		x.Runner = gpuTestGPU(t)
		return x
	}
	if fe, ok := e.(sim.FileExperiment); ok {
		dir := t.TempDir()
		rng := rand.New(rand.NewPCG(1, 2))
		files := map[string]string{}
		for _, r := range fe.FileRoles() {
			tokens := map[string]int{"q": 1, "k": 64, "v": 64}[r.Name]
			if tokens == 0 {
				continue // an optional role (positions, mask)
			}
			x := make([]float32, tokens*64)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			path := filepath.Join(dir, r.Name+".npy")
			if err := tensorfile.WriteNPY(path, []int{tokens, 1, 64}, x); err != nil {
				t.Fatal(err)
			}
			files[r.Name] = path
		}
		out, err := fe.WithFiles(files)
		if err != nil {
			t.Fatalf("%s with small inputs %v: %v", e.Name(), files, err)
		}
		return out
	}
	return e
}

// TestChartSeriesStyled runs every registered experiment (a new one
// included, see chartTestArgs) with small parameters and checks its points
// against its declared chart: every series has a declared style, the
// interval extras the chart names are there, every extra a point carries
// is declared in Chart.Fields (or names an interval of a declared field),
// every summary key matches a Chart.Summary entry, and the summary entries
// of reference lines exist.
func TestChartSeriesStyled(t *testing.T) {
	for _, registered := range sim.Experiments() {
		name := registered.Name()
		if strings.HasPrefix(name, "lab-") {
			continue // the lab's own test experiments
		}
		t.Run(name, func(t *testing.T) {
			e := chartTestExperiment(t, registered)
			args, listed := chartTestArgs[name]
			v, err := sim.ParseValues(e.Params(), args)
			if err != nil {
				t.Fatal(err)
			}
			if !listed {
				c, ok := sim.Estimate(e, v)
				if !ok || c.Work > chartTestMaxWork {
					t.Fatalf("%s costs %v at its defaults: give it small parameters in chartTestArgs", name, c)
				}
			}
			rec := &sim.Recorder{}
			res, err := sim.Execute(t.Context(), e, v, 1, rec)
			if err != nil {
				t.Fatal(err)
			}
			ch := e.(sim.Charter).Chart()
			declared := map[string]bool{"trial": ch.Trials != ""}
			for _, f := range append(slices.Clone(ch.Fields), sim.Field{Key: "y", Error: ch.Error, Lo: ch.Lo, Hi: ch.Hi}) {
				for _, k := range []string{f.Key, f.Error, f.Lo, f.Hi} {
					if k != "" {
						declared[k] = true
					}
				}
			}
			var missing []string
			seen := map[string]bool{}
			for _, p := range rec.Points() {
				for k := range p.Extra {
					if !declared[k] && !slices.Contains(missing, "extra "+k) {
						missing = append(missing, "extra "+k)
					}
				}
				if seen[p.Series] {
					continue
				}
				seen[p.Series] = true
				if of, ok := ch.TrialsOf(p.Series); ok && !seen[of] {
					t.Errorf("series %q of per-trial values before (or without) its series %q", p.Series, of)
				}
				if _, i := ch.StyleOf(p.Series); i < 0 {
					t.Errorf("series %q has no declared style", p.Series)
				}
				for _, k := range []string{ch.Error, ch.Lo, ch.Hi} {
					if _, trials := ch.TrialsOf(p.Series); trials {
						break // a trial's value has no interval
					}
					if st, _ := ch.StyleOf(p.Series); st.Fit {
						break // a fitted line has no interval of its own
					}
					if _, ok := p.Extra[k]; k != "" && !ok {
						t.Errorf("series %q: no %q extra for the intervals of y", p.Series, k)
					}
				}
			}
			if len(rec.Points()) == 0 {
				t.Error("no points")
			}
			for k := range res.Summary {
				if _, ok := ch.SummaryAxis(k); !ok {
					missing = append(missing, "summary "+k)
				}
			}
			slices.Sort(missing)
			switch {
			case chartFieldsPending[name] && len(missing) == 0:
				t.Errorf("%s now declares every field and summary unit: remove it from chartFieldsPending", name)
			case chartFieldsPending[name]:
				t.Logf("pending (the lead's declarations): %d undeclared: %s", len(missing), strings.Join(missing, ", "))
			case len(missing) > 0:
				t.Errorf("undeclared in Chart.Fields / Chart.Summary (no unit for them): %s", strings.Join(missing, ", "))
			}
			for _, r := range ch.Refs {
				if r.Summary != "" {
					if _, ok := res.Summary[r.Summary]; !ok {
						t.Errorf("reference %q: no summary entry %q", r.Label, r.Summary)
					}
				}
			}
		})
	}
}
