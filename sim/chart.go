package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Charter is implemented by experiments that declare how their points are
// drawn. The lab's page and its reports draw every run of such an
// experiment from the declaration alone, so the same points give the same
// chart wherever they were computed (terminal, server, browser).
type Charter interface {
	Chart() Chart
}

// MaxFamilies is the most colours one chart may use: the palette of the
// page ([Palette]) has this many colour-blind-safe colours.
const MaxFamilies = 10

// Palette is the colour of each family, in the order the families first
// appear in [Chart.Styles]: Okabe & Ito's eight colour-blind-safe colours
// (black replaced by a dark grey), then two of Paul Tol's muted scheme.
var Palette = []string{
	"#0072B2", // blue
	"#E69F00", // orange
	"#009E73", // bluish green
	"#D55E00", // vermillion
	"#CC79A7", // reddish purple
	"#56B4E9", // sky blue
	"#3f3f3f", // dark grey
	"#B8A000", // dark yellow (Okabe-Ito yellow darkened to read on white)
	"#882255", // wine (Tol)
	"#44AA99", // teal (Tol)
}

// Chart declares an experiment's chart: its axes, how its series are
// styled, and the reference lines and published figures drawn with them.
type Chart struct {
	X Axis `json:"x"`
	Y Axis `json:"y"`
	// Y2 is a second, right-hand y axis for the series whose style has
	// Axis 2 (another quantity in the same run); nil when there is none.
	Y2 *Axis `json:"y2,omitempty"`
	// Styles map series names to their look; the first matching style
	// wins. A series no style matches gets a family of its own.
	Styles []Style `json:"styles"`
	// Error names the point extra holding the standard error of y ("se"):
	// the page draws 95 % intervals (±1.96 se) from it. Empty: none.
	Error string `json:"error,omitempty"`
	// Lo and Hi name the point extras holding the bounds of y's interval,
	// drawn instead of ±1.96 Error when both are set (intervals that are
	// not symmetric: a bootstrap over haystacks, a log-scale interval);
	// Method says how they were computed, for the legend ("95 % cluster
	// bootstrap over 8 haystacks").
	Lo     string `json:"lo,omitempty"`
	Hi     string `json:"hi,omitempty"`
	Method string `json:"method,omitempty"`
	// Fields declares the quantities a point carries besides the default
	// y, for the page's y (and x) selector: each names a point extra (or
	// "y", "x") with its axis (quantity, unit, scale) and its interval
	// extras. Every extra a point of the experiment emits should be
	// declared, so that no quantity is shown without its unit.
	Fields []Field `json:"fields,omitempty"`
	// Summary declares the units of the run's summary values: each entry
	// names a pattern over the summary keys ('*' as in [Style.Match]; the
	// first match wins) with the axis the value would be drawn on, so that
	// a summary value is shown with its unit wherever it appears (the run's
	// table, a comparison, a sweep). Every key an experiment's summary holds
	// should match one.
	Summary []SummaryField `json:"summary,omitempty"`
	// Trials, when set, is the suffix of the series that hold per-trial
	// values: the points of series S+Trials are the trials of S's points
	// (same x, y the trial's value of S's quantity, the extra "trial" its
	// index, other extras as declared in Fields), at most [MaxTrialValues]
	// per point. The page leaves them off the chart, draws them as a
	// distribution (histogram, CDF, scatter over trials) and pairs two runs
	// on the same seeds trial by trial.
	Trials string `json:"trials,omitempty"`
	// Show names summary values that are the experiment's answer (a fitted
	// slope, a ratio, a count of figures matched): the page writes each
	// under the chart with the quantity and unit Summary declares for it.
	Show []string `json:"show,omitempty"`
	// Refs are reference lines (chance level, a bound).
	Refs []Ref `json:"refs,omitempty"`
	// Marks are published figures, drawn as labelled markers.
	Marks []Mark `json:"marks,omitempty"`
}

// Axis describes one axis: the quantity, its unit and its scale. The page
// labels it "Quantity (Unit)".
type Axis struct {
	Quantity string `json:"quantity"` // e.g. "contraction length K"
	// Unit is never empty: a dimensionless quantity names what it counts
	// ("fraction of trials", "relative", "%").
	Unit string `json:"unit"`
	// Log selects a logarithmic axis; the scale is declared, never guessed
	// from the data, so every run of the experiment is drawn alike.
	Log bool `json:"log,omitempty"`
	// Base is the logarithm's base: 10 (the default) or 2 (values that are
	// powers of two, such as context lengths; ticks then read 4k, 8k, …).
	Base int `json:"base,omitempty"`
	// Min and Max fix the axis range (e.g. 0 and 1 for an accuracy); nil
	// lets the page fit the data.
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

// Field is one quantity of a point that the page can put on an axis: the
// point extra Key ("y" and "x" are the point's own coordinates) drawn on
// Axis, with the 95 % interval from the extras Lo and Hi (both, or
// neither) or ±1.96 Error. Method says how Lo and Hi were computed, for the
// chart's notes (as [Chart.Method] for y).
type Field struct {
	Key    string `json:"key"`
	Axis   Axis   `json:"axis"`
	Error  string `json:"error,omitempty"`
	Lo     string `json:"lo,omitempty"`
	Hi     string `json:"hi,omitempty"`
	Method string `json:"method,omitempty"`
}

// SummaryField declares the quantity and unit of the summary values whose
// keys match Match ('*' matches any run of characters).
type SummaryField struct {
	Match string `json:"match"`
	Axis  Axis   `json:"axis"`
}

// FieldOf returns the declared field of the point quantity key: the entry
// of Fields with that key, else for "y" the chart's own y (with its Error,
// Lo and Hi) and for "x" its x. ok is false for an undeclared key.
func (c Chart) FieldOf(key string) (f Field, ok bool) {
	for _, f := range c.Fields {
		if f.Key == key {
			return f, true
		}
	}
	switch key {
	case "y":
		return Field{Key: "y", Axis: c.Y, Error: c.Error, Lo: c.Lo, Hi: c.Hi, Method: c.Method}, true
	case "x":
		return Field{Key: "x", Axis: c.X}, true
	}
	return Field{}, false
}

// SummaryAxis returns the declared axis (quantity and unit) of the summary
// value key: the first entry of Summary whose pattern matches it. ok is
// false when none does.
func (c Chart) SummaryAxis(key string) (a Axis, ok bool) {
	for _, s := range c.Summary {
		if MatchSeries(s.Match, key) {
			return s.Axis, true
		}
	}
	return Axis{}, false
}

// Range returns a copy of a with the range fixed to [lo, hi].
func (a Axis) Range(lo, hi float64) Axis {
	a.Min, a.Max = &lo, &hi
	return a
}

// Label returns "Quantity (Unit)".
func (a Axis) Label() string { return a.Quantity + " (" + a.Unit + ")" }

// Style is the look of the series whose names match Match: colour by
// Family, dash and marker by Variant, a large marker without a line for
// measured hardware, markers alone for categorical x (Points).
type Style struct {
	// Match is a pattern over the series name: '*' matches any run of
	// characters (also none); every other character matches itself.
	Match string `json:"match"`
	// Family is what the colour stands for (architecture, model, format).
	Family string `json:"family"`
	// Variant is what the dash and the marker stand for (promotion,
	// scaling, kernel variant); empty is the plain (solid) variant.
	Variant string `json:"variant,omitempty"`
	// Measured marks measured hardware (the H200 captures): drawn as large
	// diamonds, without a line.
	Measured bool `json:"measured,omitempty"`
	// Points draws the series as markers without a line: its x values are
	// categories with no order to join (query heads, layers × heads).
	Points bool `json:"points,omitempty"`
	// Axis is 2 for a series drawn against [Chart.Y2]; 0 or 1 is Y.
	Axis int `json:"axis,omitempty"`
	// Fit marks a fitted or modelled curve drawn through measured or
	// simulated points: a thin dashed line without markers.
	Fit bool `json:"fit,omitempty"`
}

// Ref is a reference line: y = Value (Axis "y") or x = Value (Axis "x"),
// or the value of the run's summary entry Summary when it is set.
type Ref struct {
	Axis    string  `json:"axis"` // "x" or "y"
	Value   float64 `json:"value,omitempty"`
	Summary string  `json:"summary,omitempty"`
	Label   string  `json:"label"`
}

// Mark is a published figure: a labelled marker at (X, Y), in the colour of
// Series' family. Label says where it was published. Field, when set, is
// the declared field (Chart.Fields) whose quantity Y is: the mark is drawn
// when that field is on the y axis; empty is the chart's default y.
type Mark struct {
	Series string  `json:"series"`
	X      float64 `json:"x"`
	Y      float64 `json:"y"`
	Label  string  `json:"label"`
	Field  string  `json:"field,omitempty"`
}

// MatchSeries reports whether the series name matches the pattern ('*'
// matches any run of characters).
func MatchSeries(pattern, name string) bool {
	star := strings.IndexByte(pattern, '*')
	if star < 0 {
		return pattern == name
	}
	prefix := pattern[:star]
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	rest := pattern[star+1:]
	name = name[len(prefix):]
	for i := 0; i <= len(name); i++ {
		if MatchSeries(rest, name[i:]) {
			return true
		}
	}
	return false
}

// MaxTrialValues is the most per-trial values an experiment emits for one
// point (series, x): a run's distributions stay bounded whatever its
// trials; the first MaxTrialValues trials are kept, in order.
const MaxTrialValues = 256

// TrialsOf returns the series whose per-trial values series holds, and
// whether it is such a series (c.Trials set and a suffix of it).
func (c Chart) TrialsOf(series string) (string, bool) {
	if c.Trials == "" || !strings.HasSuffix(series, c.Trials) {
		return "", false
	}
	return strings.TrimSuffix(series, c.Trials), true
}

// EmitTrials emits the per-trial values of series' point at x as points of
// series+c.Trials ([Chart.Trials]): the first MaxTrialValues of values,
// each with the extra "trial" (its index) and, when extra is not nil, the
// extras extra(i) of trial i. It does nothing when c.Trials is empty.
func (c Chart) EmitTrials(run *Run, series string, x float64, values []float64, extra func(i int) map[string]float64) error {
	if c.Trials == "" {
		return nil
	}
	for i, v := range values[:min(len(values), MaxTrialValues)] {
		e := map[string]float64{}
		if extra != nil {
			e = extra(i)
		}
		e["trial"] = float64(i)
		if err := run.Emit(Point{Series: series + c.Trials, X: x, Y: v, Extra: e}); err != nil {
			return err
		}
	}
	return nil
}

// StyleOf returns the style of the series and its index in c.Styles, or a
// style of its own (family = the name) and -1 when none matches. A series
// of per-trial values ([Chart.Trials]) takes the style of its series.
func (c Chart) StyleOf(series string) (Style, int) {
	if of, ok := c.TrialsOf(series); ok {
		series = of
	}
	for i, s := range c.Styles {
		if MatchSeries(s.Match, series) {
			return s, i
		}
	}
	return Style{Match: series, Family: series}, -1
}

// Families returns the declared families in order of first appearance:
// family i is drawn in Palette[i].
func (c Chart) Families() []string {
	var out []string
	for _, s := range c.Styles {
		if !slices.Contains(out, s.Family) {
			out = append(out, s.Family)
		}
	}
	return out
}

// Variants returns the declared variants in order of first appearance
// (the plain variant "" first when declared): variant i gets dash i.
func (c Chart) Variants() []string {
	var out []string
	for _, s := range c.Styles {
		if !slices.Contains(out, s.Variant) {
			out = append(out, s.Variant)
		}
	}
	return out
}

// Check reports what a reader would stumble on: an axis without quantity
// or unit, a log base other than 2 or 10, more families than [MaxFamilies],
// a style without a pattern or family, a series on a missing Y2, a field
// without a key, declared twice or with half an interval, a summary entry without a pattern, a reference on
// another axis than x or y, a non-finite mark.
func (c Chart) Check() error {
	var errs []error
	axis := func(name string, a Axis) {
		if strings.TrimSpace(a.Quantity) == "" {
			errs = append(errs, fmt.Errorf("axis %s: no quantity", name))
		}
		if strings.TrimSpace(a.Unit) == "" {
			errs = append(errs, fmt.Errorf("axis %s: no unit (a dimensionless quantity names what it counts)", name))
		}
		if a.Base != 0 && a.Base != 2 && a.Base != 10 {
			errs = append(errs, fmt.Errorf("axis %s: log base %d (2 or 10)", name, a.Base))
		}
	}
	axis("x", c.X)
	axis("y", c.Y)
	if c.Y2 != nil {
		axis("y2", *c.Y2)
	}
	if len(c.Styles) == 0 {
		errs = append(errs, errors.New("no series styles"))
	}
	for i, s := range c.Styles {
		if s.Match == "" || s.Family == "" {
			errs = append(errs, fmt.Errorf("style %d: empty pattern or family", i))
		}
		if s.Axis == 2 && c.Y2 == nil {
			errs = append(errs, fmt.Errorf("style %q: on y axis 2, which is not declared", s.Match))
		}
		if s.Axis != 0 && s.Axis != 1 && s.Axis != 2 {
			errs = append(errs, fmt.Errorf("style %q: axis %d (1 or 2)", s.Match, s.Axis))
		}
	}
	if n := len(c.Families()); n > MaxFamilies {
		errs = append(errs, fmt.Errorf("%d colour families, at most %d in one chart", n, MaxFamilies))
	}
	if (c.Lo == "") != (c.Hi == "") {
		errs = append(errs, fmt.Errorf("interval of y: lo %q and hi %q (both or neither)", c.Lo, c.Hi))
	}
	seen := map[string]bool{}
	for _, f := range c.Fields {
		if f.Key == "" || seen[f.Key] {
			errs = append(errs, fmt.Errorf("field %q: empty or declared twice", f.Key))
		}
		seen[f.Key] = true
		axis("field "+f.Key, f.Axis)
		if (f.Lo == "") != (f.Hi == "") {
			errs = append(errs, fmt.Errorf("field %q: interval lo %q and hi %q (both or neither)", f.Key, f.Lo, f.Hi))
		}
	}
	for i, f := range c.Summary {
		if f.Match == "" {
			errs = append(errs, fmt.Errorf("summary field %d: empty pattern", i))
		}
		axis("summary "+f.Match, f.Axis)
	}
	for _, k := range c.Show {
		if _, ok := c.SummaryAxis(k); !ok {
			errs = append(errs, fmt.Errorf("shown summary value %q: no unit declared in Summary", k))
		}
	}
	for _, r := range c.Refs {
		if r.Axis != "x" && r.Axis != "y" {
			errs = append(errs, fmt.Errorf("reference %q: axis %q (x or y)", r.Label, r.Axis))
		}
		if r.Label == "" {
			errs = append(errs, errors.New("reference without a label"))
		}
	}
	for _, m := range c.Marks {
		if m.Field != "" && !seen[m.Field] {
			errs = append(errs, fmt.Errorf("mark %q: field %q is not declared", m.Label, m.Field))
		}
		if math.IsNaN(m.X) || math.IsInf(m.X, 0) || math.IsNaN(m.Y) || math.IsInf(m.Y, 0) || m.Label == "" {
			errs = append(errs, fmt.Errorf("mark %q at (%v, %v): not finite or without a label", m.Label, m.X, m.Y))
		}
	}
	return errors.Join(errs...)
}
