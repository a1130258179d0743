package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/sim"
)

type fakeExp struct{}

func (fakeExp) Name() string { return "fake" }
func (fakeExp) Doc() string  { return "fake" }
func (fakeExp) Params() []sim.Param {
	return []sim.Param{
		{Name: "n", Doc: "n", Kind: sim.KindInt, Default: 1, Min: 1, Max: 100},
		{Name: "mode", Doc: "mode", Kind: sim.KindChoice, Default: "a", Choices: []string{"a", "b", "c"}},
		{Name: "K", Doc: "K", Kind: sim.KindInts, Default: []int{1}, Min: 1, Max: 1 << 20},
		{Name: "f", Doc: "f", Kind: sim.KindFloat, Default: 0.5, Min: 0, Max: 1},
	}
}
func (fakeExp) Run(context.Context, *sim.Run) error { return nil }

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

// TestDescribeKnownValues checks the statistics against values computed
// independently (R 4.3: t.test(x)$conf.int, sd(x)/sqrt(length(x))).
func TestDescribeKnownValues(t *testing.T) {
	cases := []struct {
		name                 string
		x                    []float64
		n, nonfinite         int
		mean, sd, se, lo, hi float64
	}{
		// t.test(1:5): 95 percent CI 1.036757 4.963243
		{"1..5", []float64{1, 2, 3, 4, 5}, 5, 0, 3, 1.5811388300841898, 0.7071067811865476, 1.036757, 4.963243},
		// by hand: squared deviations sum to 8.69, sd = √(8.69/3), se = sd/2,
		// t(0.975, 3) = 3.182446305 (tables)
		{"four", []float64{2.1, 3.4, 1.9, 5.6}, 4, 0, 3.25, math.Sqrt(8.69 / 3), math.Sqrt(8.69/3) / 2,
			3.25 - 3.182446305*math.Sqrt(8.69/3)/2, 3.25 + 3.182446305*math.Sqrt(8.69/3)/2},
		// two values: t(0.975,1) = 12.7062047; mean 1, sd sqrt(2), se 1
		{"two", []float64{0, 2}, 2, 0, 1, math.Sqrt2, 1, 1 - 12.7062047, 1 + 12.7062047},
		{"nonfinite kept apart", []float64{1, math.NaN(), 2, 3, 4, 5, math.Inf(1)}, 5, 2, 3, 1.5811388300841898, 0.7071067811865476, 1.036757, 4.963243},
	}
	for _, c := range cases {
		s := Describe(c.x)
		if s.N != c.n || s.NonFinite != c.nonfinite {
			t.Errorf("%s: n %d nonfinite %d, want %d %d", c.name, s.N, s.NonFinite, c.n, c.nonfinite)
		}
		for _, q := range []struct {
			what      string
			got, want float64
		}{{"mean", s.Mean, c.mean}, {"sd", s.SD, c.sd}, {"se", s.SE, c.se}, {"lo", s.Lo, c.lo}, {"hi", s.Hi, c.hi}} {
			if !near(q.got, q.want, 1e-6) {
				t.Errorf("%s: %s = %.9g, want %.9g", c.name, q.what, q.got, q.want)
			}
		}
	}
	// The hand-computed t(0.975, 3) of case "four" — checked separately so
	// the case's interval is not circular.
	if q := tQuantile975(3); !near(q, 3.182446305, 1e-8) {
		t.Errorf("t(0.975,3) = %v", q)
	}
	one := Describe([]float64{7})
	if one.N != 1 || one.Mean != 7 || !math.IsNaN(one.SD) || !math.IsNaN(one.Lo) {
		t.Errorf("one value: %+v (want mean 7, unknown sd and interval)", one)
	}
	none := Describe([]float64{math.NaN()})
	if none.N != 0 || none.NonFinite != 1 || !math.IsNaN(none.Mean) {
		t.Errorf("no finite value: %+v", none)
	}
}

func TestGridOrderAndValues(t *testing.T) {
	g, err := NewGrid(fakeExp{}, Spec{
		Params: map[string]any{"f": 0.25},
		Axes:   []Axis{{Name: "n", Values: []any{2, float64(3)}}, {Name: "mode", Values: []any{"b", "c", "a"}}},
		Seeds:  []uint64{1, 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	if g.Len() != 12 || g.Points() != 6 {
		t.Fatalf("len %d points %d", g.Len(), g.Points())
	}
	want := []struct {
		n    int
		mode string
		seed uint64
	}{{2, "b", 1}, {2, "b", 2}, {2, "c", 1}, {2, "c", 2}, {2, "a", 1}, {2, "a", 2}, {3, "b", 1}}
	for i, w := range want {
		v, seed, err := g.Run(i)
		if err != nil {
			t.Fatal(err)
		}
		if v.Int("n") != w.n || v.String("mode") != w.mode || seed != w.seed || v.Float("f") != 0.25 {
			t.Errorf("run %d: n=%d mode=%s seed=%d f=%v, want %+v", i, v.Int("n"), v.String("mode"), seed, v.Float("f"), w)
		}
	}
	if _, _, err := g.Run(12); err == nil {
		t.Error("run 12 of 12 accepted")
	}
}

func TestGridRefuses(t *testing.T) {
	cases := []struct {
		spec Spec
		want string
	}{
		{Spec{Axes: []Axis{{Name: "x", Values: []any{1}}}, Seeds: []uint64{1}}, `"x"`},
		{Spec{Axes: []Axis{{Name: "n", Values: []any{1, 1}}}, Seeds: []uint64{1}}, "twice"},
		{Spec{Axes: []Axis{{Name: "n", Values: []any{1000}}}, Seeds: []uint64{1}}, "maximum"},
		{Spec{Axes: []Axis{{Name: "n", Values: []any{1}}, {Name: "n", Values: []any{2}}}, Seeds: []uint64{1}}, "twice"},
		{Spec{Params: map[string]any{"n": 3}, Axes: []Axis{{Name: "n", Values: []any{1}}}, Seeds: []uint64{1}}, "both fixed and swept"},
		{Spec{Axes: []Axis{{Name: "n", Values: []any{1}}}}, "seeds"},
		{Spec{Axes: []Axis{{Name: "n"}}, Seeds: []uint64{1}}, "no values"},
		{Spec{Params: map[string]any{"mode": "z"}, Seeds: []uint64{1}}, "fixed"},
		{Spec{Seeds: []uint64{3, 3}}, "twice"},
	}
	for i, c := range cases {
		_, err := NewGrid(fakeExp{}, c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: err %v, want one containing %q", i, err, c.want)
		}
	}
	var vals []any
	for i := 1; i <= 100; i++ {
		vals = append(vals, i)
	}
	seeds, _ := ParseSeeds("1..1000")
	_, err := NewGrid(fakeExp{}, Spec{Axes: []Axis{{Name: "n", Values: vals}}, Seeds: seeds})
	if err == nil || !strings.Contains(err.Error(), "20000") {
		t.Errorf("100×1000 runs: %v", err)
	}
}

func TestParseSeeds(t *testing.T) {
	good := map[string][]uint64{"1..3": {1, 2, 3}, "1,2,5..7": {1, 2, 5, 6, 7}, " 4 ": {4}, "0..0": {0}}
	for in, want := range good {
		got, err := ParseSeeds(in)
		if err != nil || !equalU(got, want) {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a", "3..1", "1..2000", "1,1", "1..", "-1", "18446744073709551615..18446744073709551615,1..1000"} {
		if _, err := ParseSeeds(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if got, err := ParseSeeds("18446744073709551615"); err != nil || got[0] != math.MaxUint64 {
		t.Errorf("max seed: %v %v", got, err)
	}
}

func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"1..20", "1,2,5..7", "0", "3..1", "18446744073709551610..18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseSeeds(s)
		if err != nil {
			return
		}
		if len(got) == 0 || len(got) > MaxSeeds || firstDuplicate(got) >= 0 {
			t.Fatalf("%q: %d seeds", s, len(got))
		}
	})
}

func equalU(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseFlagValues(t *testing.T) {
	ps := fakeExp{}.Params()
	v, err := ParseFlagValues(ps[2], "1024,4096;65536")
	if err != nil || len(v) != 2 || len(v[0].([]int)) != 2 || v[1].([]int)[0] != 65536 {
		t.Errorf("ints: %v %v", v, err)
	}
	v, err = ParseFlagValues(ps[0], "1,2,3")
	if err != nil || len(v) != 3 || v[2] != 3 {
		t.Errorf("int: %v %v", v, err)
	}
	if _, err := ParseFlagValues(ps[1], "a,zz"); err == nil {
		t.Error("bad choice accepted")
	}
}

func TestKeyAcrossTypes(t *testing.T) {
	names := []string{"K", "n", "mode"}
	a := Key(names, map[string]any{"n": 3, "mode": "a", "K": []int{1, 2}})
	var decoded map[string]any
	json.Unmarshal([]byte(`{"n": 3, "mode": "a", "K": [1, 2]}`), &decoded)
	if b := Key(names, decoded); a != b {
		t.Errorf("keys differ: %q %q", a, b)
	}
	if Key(names, map[string]any{"n": 3, "mode": "b", "K": []int{1, 2}}) == a {
		t.Error("different values, same key")
	}
}

func TestAggregate(t *testing.T) {
	var samples []Sample
	for seed := 1; seed <= 5; seed++ {
		for _, n := range []int{2, 4} {
			samples = append(samples, Sample{
				ID:      "r",
				Params:  map[string]any{"n": float64(n), "mode": "a"},
				Summary: map[string]float64{"acc": float64(seed * n)},
				Points: []sim.Point{
					{Series: "s", X: 10, Y: float64(seed)},
					{Series: "s", X: 20, Y: float64(seed * n)},
					{Series: "t", X: math.NaN(), Y: 1},
					{Series: "t", X: math.NaN(), Y: math.Inf(1)},
				},
			})
		}
	}
	r := Aggregate([]string{"n"}, samples)
	if len(r.Groups) != 2 || len(r.Summary) != 1 || len(r.Series) != 2 {
		t.Fatalf("%d groups %v %v", len(r.Groups), r.Summary, r.Series)
	}
	g := r.Groups[1] // n = 4: acc = 4,8,…,20
	if g.Key["n"] != float64(4) || len(g.Runs) != 5 {
		t.Fatalf("group %v runs %d", g.Key, len(g.Runs))
	}
	if s := g.Summary["acc"]; s.N != 5 || s.Mean != 12 || !near(s.Lo, 12-4*1.963243161, 1e-8) {
		// 4·(1..5): CI is 4× that of 1..5: 12 ± 4·1.963243
		t.Errorf("acc %+v", s)
	}
	pts := g.Series["s"]
	if len(pts) != 2 || pts[0].X != 10 || pts[0].Mean != 3 || pts[1].X != 20 || pts[1].Mean != 12 {
		t.Errorf("series s %+v", pts)
	}
	if tt := g.Series["t"]; len(tt) != 1 || tt[0].N != 5 || tt[0].NonFinite != 5 {
		t.Errorf("series t (NaN x collected in one point, Inf y counted) %+v", tt)
	}
	all := Aggregate(nil, samples)
	if len(all.Groups) != 1 || all.Groups[0].Summary["acc"].N != 10 {
		t.Errorf("no group-by: %+v", all.Groups)
	}
	var buf bytes.Buffer
	if err := r.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if lines[0] != "n,kind,name,x,n,mean,sd,se,ci95_lo,ci95_hi,nonfinite,ci95_method,field,unit" || len(lines) != 1+2*(1+2+1) {
		t.Errorf("csv:\n%s", buf.String())
	}
	if !strings.HasPrefix(lines[1], "2,summary,acc,,5,6,") {
		t.Errorf("csv row 1: %s", lines[1])
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Groups []struct {
			Label   string
			Summary map[string]struct {
				N    int
				Mean *float64
				Lo   *float64 `json:"ci95_lo"`
			}
			Series map[string][]struct {
				X    *float64
				Mean *float64
			}
		}
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Groups[0].Label != "n=2" || *back.Groups[0].Summary["acc"].Mean != 6 || back.Groups[0].Series["t"][0].X != nil || *back.Groups[0].Series["t"][0].Mean != 1 {
		t.Errorf("json: %s", b)
	}
}

// TestAggregateCSVFormulaEscaped: the aggregate CSV escapes text cells a
// spreadsheet would run as formulas (a leading =, +, -, @, tab or CR gets
// an apostrophe), as the run CSV does: group values, summary keys and
// series names come from the runs (issue 18, red team: `=HYPERLINK(...)`
// was written as is). Numbers, -Inf included, stay numbers.
func TestAggregateCSVFormulaEscaped(t *testing.T) {
	samples := []Sample{{ID: "1", Params: map[string]any{"mode": "=HYPERLINK(\"http://x\")"},
		Summary: map[string]float64{"+cmd": -1.5},
		Points:  []sim.Point{{Series: "@SUM(A1)", X: -2, Y: math.Inf(-1)}, {Series: "-x", X: 1, Y: 2}}}}
	var b bytes.Buffer
	if err := Aggregate([]string{"mode"}, samples).WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n")[1:] {
		for _, cell := range strings.Split(line, ",") {
			cell = strings.Trim(cell, `"`)
			if cell != "" && strings.ContainsRune("=+@\t\r", rune(cell[0])) || strings.HasPrefix(cell, "-") && cell != "-1.5" && cell != "-Inf" && cell != "-2" {
				t.Errorf("unescaped cell %q in %q", cell, line)
			}
		}
	}
	for _, want := range []string{`'=HYPERLINK(""http://x"")`, "'+cmd", "'@SUM(A1)", "'-x", ",-2,"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("CSV lacks %q:\n%s", want, b.String())
		}
	}
}

// TestAggregatePositiveBootstrap: a positive quantity (an error: a log
// axis) gets a percentile bootstrap interval, which stays positive where
// the t interval goes below zero (issue 18: fp32_p99 [-4.14e-10,
// 4.256e-07]); the method is named; the same values give the same
// interval; a quantity with a value ≤ 0 keeps the t interval; Field picks a
// point extra and Unit is written beside the statistics.
func TestAggregatePositiveBootstrap(t *testing.T) {
	vals := []float64{1e-10, 2e-10, 1.5e-10, 4e-7, 1e-10}
	var samples []Sample
	for i, v := range vals {
		samples = append(samples, Sample{ID: string(rune('a' + i)), Summary: map[string]float64{"p99": v, "bias": v - 1e-9},
			Points: []sim.Point{{Series: "s", X: 1, Y: -v, Extra: map[string]float64{"p99": v}}}})
	}
	tOnly := Aggregate(nil, samples).Groups[0].Summary["p99"]
	if !(tOnly.Lo < 0) || tOnly.Method != MethodT {
		t.Fatalf("the t interval of the test values: %+v (want it below zero)", tOnly)
	}
	opt := Options{Field: "p99", Positive: func(kind, name string) bool { return name != "bias" },
		Unit: func(kind, name string) string { return "relative" }}
	r := AggregateWith(nil, samples, opt)
	g := r.Groups[0]
	b := g.Summary["p99"]
	if !(b.Lo > 0 && b.Lo <= b.Mean && b.Mean <= b.Hi && b.Hi <= 4e-7) || !strings.Contains(b.Method, "percentile bootstrap") || !strings.Contains(b.Method, "undercovers") {
		t.Errorf("bootstrap of p99: %+v", b)
	}
	if again := AggregateWith(nil, samples, opt).Groups[0].Summary["p99"]; again != b {
		t.Errorf("not reproducible: %+v then %+v", b, again)
	}
	if bias := g.Summary["bias"]; bias.Method != MethodT {
		t.Errorf("bias (not positive): %+v", bias)
	}
	if s := g.Series["s"][0]; s.N != 5 || s.Mean != b.Mean || !(s.Lo > 0) || s.Method != b.Method {
		t.Errorf("series s, field p99 (its y is negative): %+v, want the summary's statistics %+v", s, b)
	}
	var buf bytes.Buffer
	if err := r.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), ",p99,relative\n") || !strings.Contains(buf.String(), "summary,p99,,5,") {
		t.Errorf("CSV without field and unit:\n%s", buf.String())
	}
	js, _ := json.Marshal(r)
	if !strings.Contains(string(js), `"field":"p99"`) || !strings.Contains(string(js), `"series:s":"relative"`) || !strings.Contains(string(js), `"ci95_method":"95 % percentile bootstrap`) {
		t.Errorf("JSON: %s", js)
	}
}
