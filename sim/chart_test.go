package sim

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestMatchSeries(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{
		{"fp32", "fp32", true},
		{"fp32", "fp32.fma", false},
		{"fp32*", "fp32.fma", true},
		{"*fp8", "ITL ms: fp8", true},
		{"*fp8", "ITL ms: fp8 skip-sw", false},
		{"sm90.wgmma every* (kBlockN)", "sm90.wgmma every96 (kBlockN)", true},
		{"sm90.wgmma every* (kBlockN)", "sm90.wgmma every96", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"*", "", true},
		{"", "x", false},
	} {
		if got := MatchSeries(c.pattern, c.name); got != c.want {
			t.Errorf("MatchSeries(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
}

func TestChartStyleOfAndOrder(t *testing.T) {
	c := Chart{
		X: Axis{Quantity: "K", Unit: "elements"}, Y: Axis{Quantity: "error", Unit: "relative"},
		Styles: []Style{
			{Match: "fp32.fma", Family: "fp32", Variant: "fma"},
			{Match: "fp32*", Family: "fp32"},
			{Match: "fp64", Family: "fp64"},
		},
	}
	if s, i := c.StyleOf("fp32.fma"); i != 0 || s.Variant != "fma" {
		t.Errorf("fp32.fma: %+v %d: the first matching style wins", s, i)
	}
	if s, i := c.StyleOf("fp32.x"); i != 1 || s.Family != "fp32" {
		t.Errorf("fp32.x: %+v %d", s, i)
	}
	if s, i := c.StyleOf("kahan"); i != -1 || s.Family != "kahan" {
		t.Errorf("kahan: %+v %d: an undeclared series gets a family of its own", s, i)
	}
	if f := c.Families(); strings.Join(f, ",") != "fp32,fp64" {
		t.Errorf("families %q", f)
	}
	if v := c.Variants(); len(v) != 2 || v[0] != "fma" || v[1] != "" {
		t.Errorf("variants %q", v)
	}
	if err := c.Check(); err != nil {
		t.Error(err)
	}
}

func TestChartCheck(t *testing.T) {
	ok := Axis{Quantity: "q", Unit: "u"}
	many := make([]Style, MaxFamilies+1)
	for i := range many {
		many[i] = Style{Match: string(rune('a' + i)), Family: string(rune('a' + i))}
	}
	for _, c := range []struct {
		chart Chart
		want  string
	}{
		{Chart{X: Axis{Quantity: "q"}, Y: ok, Styles: []Style{{Match: "*", Family: "f"}}}, "axis x: no unit"},
		{Chart{X: ok, Y: Axis{Unit: "u"}, Styles: []Style{{Match: "*", Family: "f"}}}, "axis y: no quantity"},
		{Chart{X: ok, Y: ok}, "no series styles"},
		{Chart{X: ok, Y: ok, Styles: many}, "11 colour families, at most 10"},
		{Chart{X: ok, Y: ok, Styles: []Style{{Match: "*", Family: "f", Axis: 2}}}, "not declared"},
		{Chart{X: Axis{Quantity: "q", Unit: "u", Base: 3}, Y: ok, Styles: []Style{{Match: "*", Family: "f"}}}, "log base 3"},
		{Chart{X: ok, Y: ok, Styles: []Style{{Match: "*", Family: "f"}}, Refs: []Ref{{Axis: "z", Label: "l"}}}, `axis "z"`},
	} {
		err := c.chart.Check()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check() = %v, want an error with %q", err, c.want)
		}
	}
}

func TestAliases(t *testing.T) {
	params := []Param{
		{Name: "k-block-n", Aliases: []string{"kBlockN"}, Kind: KindInt, Default: 96, Min: 32, Max: 1024},
		{Name: "trials", Kind: KindInt, Default: 1},
	}
	v, err := ValuesFromMap(params, map[string]any{"kBlockN": 128})
	if err != nil || v.Int("k-block-n") != 128 || !v.Given("k-block-n") {
		t.Fatalf("a former name is read as the parameter: %v %v", v.Map(), err)
	}
	if f := v.Flags(); !strings.Contains(f, "-k-block-n 128") || strings.Contains(f, "kBlockN") {
		t.Errorf("flags %q: written with the current name only", f)
	}
	if _, err := ValuesFromMap(params, map[string]any{"kBlockN": 128, "k-block-n": 64}); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("both names given: %v", err)
	}
	if _, err := ValuesFromMap(params, map[string]any{"kBlockN": 16}); err == nil || !strings.Contains(err.Error(), `parameter "k-block-n": 16 is below the minimum 32`) {
		t.Errorf("a bad value under a former name: %v", err)
	}
	bad := []Param{{Name: "a", Aliases: []string{"b"}, Kind: KindInt, Default: 1}, {Name: "b", Kind: KindInt, Default: 1}}
	if err := CheckParams(bad); err == nil {
		t.Error("an alias equal to another parameter's name was accepted")
	}
}

func TestClientPlatformNamesProgram(t *testing.T) {
	b := Build()
	if b.Program == "" {
		t.Fatal("Build().Program is empty")
	}
	p := clientPlatform(b)
	if !strings.Contains(p, "program "+b.Program) || !strings.HasPrefix(p, b.Platform) {
		t.Errorf("client platform %q does not name the program %q", p, b.Program)
	}
	b.Program = strings.Repeat("é", 150)
	if p := clientPlatform(b); len(p) > 200 || !strings.HasSuffix(p, "...") || !utf8.ValidString(p) {
		t.Errorf("a long program name: %d bytes, valid UTF-8 %v", len(p), utf8.ValidString(p))
	}
}

// TestTableSinkWidth checks that a table of many series is written as
// several tables of at most TableWidth columns, each with the x column,
// and that no value is lost.
func TestTableSinkWidth(t *testing.T) {
	var b strings.Builder
	s := NewTableSink(&b)
	var names []string
	for i := range 12 {
		names = append(names, "a rather long series name "+string(rune('A'+i)))
	}
	for _, n := range names {
		for x := 1; x <= 3; x++ {
			if err := s.Point(Point{Series: n, X: float64(x), Y: float64(x) / 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	tables := 0
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > TableWidth {
			t.Errorf("line of %d columns: %q", n, line)
		}
		if strings.HasPrefix(line, "x ") {
			tables++
		}
	}
	if tables < 2 {
		t.Errorf("%d tables, want several:\n%s", tables, out)
	}
	for _, n := range names {
		if !strings.Contains(out, n) {
			t.Errorf("series %q missing:\n%s", n, out)
		}
	}
	if c := strings.Count(out, "0.333333"); c != len(names) {
		t.Errorf("%d values 0.333333, want %d:\n%s", c, len(names), out)
	}
}

// A style's Points reaches the page as "points" (markers, no line), and is
// left out when unset, so existing charts read as before.
func TestStylePointsJSON(t *testing.T) {
	b, err := json.Marshal([]Style{{Match: "a", Family: "f", Points: true}, {Match: "b", Family: "f"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `[{"match":"a","family":"f","points":true},{"match":"b","family":"f"}]` {
		t.Errorf("JSON %s", got)
	}
}

// TestChartFieldOfAndSummaryAxis: a field is found by its key, "y" and "x"
// fall back to the chart's own axes (with y's interval extras), and a
// summary key takes the unit of the first pattern it matches.
func TestChartFieldOfAndSummaryAxis(t *testing.T) {
	c := Chart{
		X: Axis{Quantity: "K", Unit: "elements"}, Y: Axis{Quantity: "error", Unit: "relative"}, Error: "se",
		Styles: []Style{{Match: "*", Family: "all"}},
		Fields: []Field{{Key: "p99", Axis: Axis{Quantity: "error p99", Unit: "relative"}}},
		Summary: []SummaryField{
			{Match: "*_diff_pct", Axis: Axis{Quantity: "difference", Unit: "%"}},
			{Match: "slope*", Axis: Axis{Quantity: "slope", Unit: "ms/token"}},
		},
	}
	if f, ok := c.FieldOf("p99"); !ok || f.Axis.Quantity != "error p99" {
		t.Errorf("p99: %+v %v", f, ok)
	}
	if f, ok := c.FieldOf("y"); !ok || f.Axis != c.Y || f.Error != "se" {
		t.Errorf("y: %+v %v", f, ok)
	}
	if f, ok := c.FieldOf("x"); !ok || f.Axis != c.X {
		t.Errorf("x: %+v %v", f, ok)
	}
	if _, ok := c.FieldOf("p50"); ok {
		t.Error("p50 is not declared")
	}
	if a, ok := c.SummaryAxis("slope_bf16_diff_pct"); !ok || a.Unit != "%" {
		t.Errorf("the first matching pattern wins: %+v %v", a, ok)
	}
	if a, ok := c.SummaryAxis("slope_bf16"); !ok || a.Unit != "ms/token" {
		t.Errorf("slope_bf16: %+v %v", a, ok)
	}
	if _, ok := c.SummaryAxis("break_even"); ok {
		t.Error("break_even is not declared")
	}
	if err := c.Check(); err != nil {
		t.Error(err)
	}
	c.Show = []string{"slope_bf16", "break_even"}
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), `shown summary value "break_even": no unit`) {
		t.Errorf("a shown value without a unit: %v", err)
	}
	c.Show = nil
	c.Summary = append(c.Summary, SummaryField{Match: "", Axis: Axis{Quantity: "q"}})
	if err := c.Check(); err == nil || !strings.Contains(err.Error(), "summary field 2: empty pattern") || !strings.Contains(err.Error(), "no unit") {
		t.Errorf("a summary entry without pattern or unit: %v", err)
	}
}

// TestChartTrials: per-trial values go to the series S+Trials with the
// trial's index, at most MaxTrialValues per point, styled as S; nothing is
// emitted when the chart declares no Trials.
func TestChartTrials(t *testing.T) {
	c := Chart{X: Axis{Quantity: "K", Unit: "el"}, Y: Axis{Quantity: "e", Unit: "rel"}, Styles: []Style{{Match: "a", Family: "A"}}, Trials: " · trials"}
	if of, ok := c.TrialsOf("a · trials"); !ok || of != "a" {
		t.Errorf("TrialsOf: %q %v", of, ok)
	}
	if _, i := c.StyleOf("a · trials"); i != 0 {
		t.Errorf("the trials of a are not styled as a: %d", i)
	}
	rec := &Recorder{}
	vals := make([]float64, MaxTrialValues+10)
	for i := range vals {
		vals[i] = float64(i)
	}
	run := &Run{ctx: context.Background(), sink: rec}
	if err := c.EmitTrials(run, "a", 4, vals, func(i int) map[string]float64 { return map[string]float64{"u": 2 * float64(i)} }); err != nil {
		t.Fatal(err)
	}
	pts := rec.Points()
	if len(pts) != MaxTrialValues || pts[3].Series != "a · trials" || pts[3].X != 4 || pts[3].Y != 3 || pts[3].Extra["trial"] != 3 || pts[3].Extra["u"] != 6 {
		t.Errorf("%d points, the fourth %+v", len(pts), pts[3])
	}
	c.Trials = ""
	if err := c.EmitTrials(run, "a", 4, vals, nil); err != nil || len(rec.Points()) != MaxTrialValues {
		t.Errorf("no Trials: %v, %d points", err, len(rec.Points()))
	}
}
