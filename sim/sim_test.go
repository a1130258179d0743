package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// testExperiment is a small experiment for the tests: for each context it
// runs "trials" trials drawing uniform numbers and emits their mean.
type testExperiment struct{}

func (testExperiment) Name() string    { return "sim-test" }
func (testExperiment) Doc() string     { return "Test experiment.\nMore text." }
func (testExperiment) Params() []Param { return testParams() }

func testParams() []Param {
	return []Param{
		{Name: "trials", Doc: "trials per context", Kind: KindInt, Default: 100, Min: 1, Max: 1000000},
		{Name: "scale", Doc: "scale of the draws", Kind: KindFloat, Default: 1.0, Min: 0, Max: 10},
		{Name: "fused", Doc: "fused", Kind: KindBool, Default: false},
		{Name: "model", Doc: "model", Kind: KindChoice, Default: "a", Choices: []string{"a", "b"}},
		{Name: "contexts", Doc: "contexts", Unit: "tokens", Kind: KindInts, Default: []int{4096, 16384}, Min: 1, Max: 131072},
		{Name: "mode", Doc: "test behaviour", Kind: KindChoice, Default: "normal",
			Choices: []string{"normal", "panic", "trial-panic", "slow", "progress"}},
	}
}

func (testExperiment) Run(ctx context.Context, run *Run) error {
	v := run.Values
	contexts := v.Ints("contexts")
	trials := v.Int("trials")
	switch v.String("mode") {
	case "panic":
		var m map[string]int
		m["boom"] = 1 // nil map write: a runtime panic
	case "slow":
		_, err := Trials(ctx, run, "slow", 1<<20, func(int, *rand.Rand) int {
			time.Sleep(time.Millisecond)
			return 0
		})
		return err
	case "trial-panic":
		_, err := Trials(ctx, run, "tp", 100, func(i int, _ *rand.Rand) int {
			if i == 37 {
				panic("trial 37")
			}
			return i
		})
		return err
	}
	run.AddTotal(int64(len(contexts) * trials))
	scale := v.Float("scale")
	var total float64
	for _, c := range contexts {
		key := fmt.Sprintf("ctx=%d", c)
		ys, err := Trials(ctx, run, key, trials, func(_ int, rng *rand.Rand) float64 {
			return scale * rng.Float64()
		})
		if err != nil {
			return err
		}
		var sum float64
		for _, y := range ys {
			sum += y
		}
		total += sum
		if err := run.Emit(Point{Series: v.String("model"), X: float64(c), Y: sum / float64(trials),
			Extra: map[string]float64{"first": ys[0]}}); err != nil {
			return err
		}
	}
	run.Note("done")
	run.Summary(map[string]float64{"mean": total / float64(len(contexts)*trials)})
	return nil
}

func init() { Register(testExperiment{}) }

func TestParseValuesErrors(t *testing.T) {
	tests := []struct {
		name string
		args map[string]string
		want string // error text; "" for success
	}{
		{"defaults", nil, ""},
		{"all given", map[string]string{"trials": "5", "scale": "2.5", "fused": "true", "model": "b", "contexts": "1, 2,131072"}, ""},
		{"below min", map[string]string{"trials": "0"}, `parameter "trials": 0 is below the minimum 1`},
		{"above max", map[string]string{"trials": "2000000"}, `parameter "trials": 2000000 is above the maximum 1000000`},
		{"not int", map[string]string{"trials": "abc"}, `parameter "trials": "abc" is not an integer`},
		{"float for int", map[string]string{"trials": "1.5"}, `parameter "trials": "1.5" is not an integer`},
		{"float above", map[string]string{"scale": "10.5"}, `parameter "scale": 10.5 is above the maximum 10`},
		{"float below", map[string]string{"scale": "-0.25"}, `parameter "scale": -0.25 is below the minimum 0`},
		{"float nan", map[string]string{"scale": "NaN"}, `parameter "scale": NaN is not a finite number`},
		{"float inf", map[string]string{"scale": "1e400"}, `parameter "scale": +Inf is not a finite number`},
		{"not float", map[string]string{"scale": "x"}, `parameter "scale": "x" is not a number`},
		{"bad bool", map[string]string{"fused": "yes"}, `parameter "fused": "yes" is not true or false`},
		{"bad choice", map[string]string{"model": "c"}, `parameter "model": "c" is not one of a, b`},
		{"list element above", map[string]string{"contexts": "4096,262144"}, `parameter "contexts": 262144 is above the maximum 131072 (element 2)`},
		{"list element below", map[string]string{"contexts": "0"}, `parameter "contexts": 0 is below the minimum 1 (element 1)`},
		{"list malformed", map[string]string{"contexts": "4096,,8"}, `parameter "contexts": element 2: "" is not an integer`},
		{"list empty", map[string]string{"contexts": ""}, `parameter "contexts": the list is empty`},
		{"unknown", map[string]string{"trails": "1"}, `unknown parameter "trails" (known: contexts, fused, mode, model, scale, trials)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseValues(testParams(), tt.args)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValuesGetters(t *testing.T) {
	v, err := ParseValues(testParams(), map[string]string{"trials": "7", "contexts": "8,9", "fused": "1", "model": "b"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Int("trials") != 7 || v.Float("scale") != 1 || !v.Bool("fused") || v.String("model") != "b" ||
		!slices.Equal(v.Ints("contexts"), []int{8, 9}) {
		t.Errorf("values = %v", v.Map())
	}
	if !v.Given("trials") || v.Given("scale") {
		t.Errorf("Given wrong")
	}
	if got, want := v.Flags(), "-trials 7 -scale 1 -fused=true -model b -contexts 8,9 -mode normal"; got != want {
		t.Errorf("Flags = %q, want %q", got, want)
	}
	// The getters return copies: changing one does not change the values.
	v.Ints("contexts")[0] = 100
	if v.Ints("contexts")[0] != 8 {
		t.Errorf("Ints is not a copy")
	}
	d, _ := Defaults(testParams())
	if !slices.Equal(d.Ints("contexts"), []int{4096, 16384}) {
		t.Errorf("default contexts = %v", d.Ints("contexts"))
	}
}

func TestValuesFromJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"empty", ``, ""},
		{"null", `null`, ""},
		{"typed", `{"trials": 3, "scale": 0.5, "fused": true, "model": "b", "contexts": [1, 2]}`, ""},
		{"strings", `{"trials": "3", "scale": "0.5", "fused": "false", "contexts": "1,2"}`, ""},
		{"integral float", `{"trials": 3.0}`, ""},
		{"below", `{"trials": 0}`, `parameter "trials": 0 is below the minimum 1`},
		{"fraction", `{"trials": 2.5}`, `parameter "trials": 2.5 is not an integer`},
		{"huge", `{"trials": 1e30}`, `parameter "trials": 1e30 is not an integer`},
		{"bool for int", `{"trials": true}`, `parameter "trials": true is not an integer`},
		{"null value", `{"scale": null}`, `parameter "scale": null is not a number`},
		{"number for bool", `{"fused": 1}`, `parameter "fused": 1 is not true or false`},
		{"number for choice", `{"model": 1}`, `parameter "model": 1 is not a string`},
		{"list element", `{"contexts": [1, "x"]}`, `parameter "contexts": element 2: "x" is not an integer`},
		{"list element limit", `{"contexts": [1, 200000]}`, `parameter "contexts": 200000 is above the maximum 131072 (element 2)`},
		{"not a list", `{"contexts": {"a": 1}}`, `parameter "contexts": {"a":1} is not a list of integers`},
		{"unknown", `{"x": 1}`, `unknown parameter "x" (known: contexts, fused, mode, model, scale, trials)`},
		{"malformed", `{"trials": }`, `parameters: invalid character '}' looking for beginning of value`},
		{"trailing", `{} {}`, `parameters: trailing data after the JSON object`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ValuesFromJSON(testParams(), []byte(tt.in))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCheckParams(t *testing.T) {
	tests := []struct {
		name string
		p    Param
		want string
	}{
		{"ok int from float const", Param{Name: "n", Kind: KindInt, Default: 4.0}, ""},
		{"bad name", Param{Name: "1x", Kind: KindInt, Default: 1}, `parameter "1x": invalid name`},
		{"reserved", Param{Name: "seed", Kind: KindInt, Default: 1}, `parameter "seed": reserved name`},
		{"no kind", Param{Name: "n", Default: 1}, `parameter "n": unknown kind Kind(0)`},
		{"no choices", Param{Name: "c", Kind: KindChoice, Default: "a"}, `parameter "c": a choice without choices`},
		{"default out of range", Param{Name: "n", Kind: KindInt, Default: 0, Min: 1, Max: 2}, `default: parameter "n": 0 is below the minimum 1`},
		{"min above max", Param{Name: "n", Kind: KindInt, Default: 0, Min: 2, Max: 1}, `parameter "n": minimum 2 is above the maximum 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckParams([]Param{tt.p})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error = %q, want %q", got, tt.want)
			}
		})
	}
	if err := CheckParams([]Param{{Name: "a", Kind: KindBool, Default: true}, {Name: "a", Kind: KindBool, Default: true}}); err == nil ||
		err.Error() != `parameter "a": declared twice` {
		t.Errorf("duplicate: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	e, err := Lookup("sim-test")
	if err != nil || e.Name() != "sim-test" {
		t.Fatalf("Lookup = %v, %v", e, err)
	}
	if _, err := Lookup("nope"); err == nil || !strings.Contains(err.Error(), `unknown experiment "nope" (known: `) ||
		!strings.Contains(err.Error(), "sim-test") {
		t.Errorf("Lookup(nope) error = %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Errorf("duplicate Register did not panic")
			}
		}()
		Register(testExperiment{})
	}()
	list := Experiments()
	if !slices.IsSortedFunc(list, func(a, b Experiment) int { return strings.Compare(a.Name(), b.Name()) }) {
		t.Errorf("Experiments not sorted")
	}
	if Summary(testExperiment{}) != "Test experiment." {
		t.Errorf("Summary = %q", Summary(testExperiment{}))
	}
}

func runTest(t *testing.T, procs int, seed uint64, args map[string]string) ([]Point, *Recorder) {
	t.Helper()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	v, err := ParseValues(testParams(), args)
	if err != nil {
		t.Fatal(err)
	}
	rec := &Recorder{}
	res, err := Execute(context.Background(), testExperiment{}, v, seed, rec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Points != int64(len(rec.Points())) {
		t.Errorf("Result.Points = %d, recorded %d", res.Points, len(rec.Points()))
	}
	return rec.Points(), rec
}

func TestDeterministicAcrossCores(t *testing.T) {
	args := map[string]string{"trials": "5000", "contexts": "1,2,3,4"}
	p1, _ := runTest(t, 1, 42, args)
	p4, _ := runTest(t, 4, 42, args)
	if len(p1) != 4 {
		t.Fatalf("got %d points", len(p1))
	}
	for i := range p1 {
		if p1[i].Y != p4[i].Y || p1[i].Extra["first"] != p4[i].Extra["first"] {
			t.Errorf("point %d: GOMAXPROCS 1 gives %v, 4 gives %v", i, p1[i], p4[i])
		}
	}
	other, _ := runTest(t, 4, 43, args)
	if other[0].Y == p1[0].Y {
		t.Errorf("seeds 42 and 43 give the same numbers")
	}
	// Different keys give different streams.
	if TrialRand(1, "a", 0).Uint64() == TrialRand(1, "b", 0).Uint64() ||
		TrialRand(1, "a", 0).Uint64() == TrialRand(1, "a", 1).Uint64() {
		t.Errorf("TrialRand streams collide")
	}
}

func TestProgressOneBar(t *testing.T) {
	_, rec := runTest(t, 2, 1, map[string]string{"trials": "1000", "contexts": "1,2,3"})
	done, total := rec.LastProgress()
	if done != 3000 || total != 3000 {
		t.Errorf("final progress %d/%d, want 3000/3000", done, total)
	}
	if got := rec.SummaryValues()["mean"]; !(got > 0.45 && got < 0.55) {
		t.Errorf("summary mean = %v", got)
	}
	if !slices.Equal(rec.Notes(), []string{"done"}) || !rec.Closed() {
		t.Errorf("notes %v closed %v", rec.Notes(), rec.Closed())
	}
}

// progressLog records every progress report to check it never goes back.
type progressLog struct {
	Recorder
	mu    sync.Mutex
	fracs []float64
}

func (p *progressLog) Progress(done, total int64) {
	p.mu.Lock()
	p.fracs = append(p.fracs, float64(done)/float64(total))
	p.mu.Unlock()
}

func TestTrialsWithoutPlanGrowsTotal(t *testing.T) {
	var rec Recorder
	run := &Run{ctx: context.Background(), sink: &rec}
	for range 3 {
		if _, err := Trials(context.Background(), run, "k", 10, func(int, *rand.Rand) int { return 0 }); err != nil {
			t.Fatal(err)
		}
	}
	if run.done.Load() != 30 || run.total.Load() != 30 {
		t.Errorf("progress %d/%d, want 30/30", run.done.Load(), run.total.Load())
	}
	// With a plan, the total stays and the fraction never decreases.
	var log progressLog
	run = &Run{ctx: context.Background(), sink: &log}
	run.AddTotal(30)
	for range 3 {
		Trials(context.Background(), run, "k", 10, func(int, *rand.Rand) int { time.Sleep(100 * time.Microsecond); return 0 })
	}
	if run.total.Load() != 30 {
		t.Errorf("planned total changed to %d", run.total.Load())
	}
	if !slices.IsSorted(log.fracs) || log.fracs[len(log.fracs)-1] != 1 {
		t.Errorf("progress fractions %v", log.fracs)
	}
}

func TestCancellation(t *testing.T) {
	v, err := ParseValues(testParams(), map[string]string{"mode": "slow"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err = Execute(ctx, testExperiment{}, v, 1, nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("cancellation took %v", d)
	}
	// An already-cancelled context does not start trials.
	_, err = Trials(ctx, &Run{ctx: ctx, sink: Discard}, "k", 10, func(int, *rand.Rand) int { t.Error("ran"); return 0 })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Trials err = %v", err)
	}
}

func TestPanicBecomesError(t *testing.T) {
	for _, mode := range []string{"panic", "trial-panic"} {
		t.Run(mode, func(t *testing.T) {
			v, _ := ParseValues(testParams(), map[string]string{"mode": mode})
			rec := &Recorder{}
			_, err := Execute(context.Background(), testExperiment{}, v, 1, rec)
			var pe *PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a PanicError", err)
			}
			if !strings.HasPrefix(err.Error(), `experiment "sim-test": `) || len(pe.Stack) == 0 {
				t.Errorf("err = %q", err)
			}
			if mode == "trial-panic" && !strings.Contains(err.Error(), `trials "tp", trial 37: panic: trial 37`) {
				t.Errorf("err = %q", err)
			}
			if !rec.Closed() {
				t.Errorf("sink not closed")
			}
		})
	}
}

func TestExecuteRejectsForeignValues(t *testing.T) {
	v, _ := Defaults([]Param{{Name: "n", Kind: KindInt, Default: 1}})
	if _, err := Execute(context.Background(), testExperiment{}, v, 1, nil); err == nil {
		t.Errorf("values of another schema accepted")
	}
	// The zero Values means defaults.
	if res, err := Execute(context.Background(), testExperiment{}, Values{}, 1, nil); err != nil || res.Values.Int("trials") != 100 {
		t.Errorf("zero Values: %v %v", res, err)
	}
}

func TestEmitRejectsReservedExtra(t *testing.T) {
	run := &Run{ctx: context.Background(), sink: Discard}
	if err := run.Emit(Point{Extra: map[string]float64{"y": 1}}); err == nil {
		t.Errorf("reserved extra accepted")
	}
}

func TestJSONSink(t *testing.T) {
	var b bytes.Buffer
	s := NewJSONSink(&b)
	s.Point(Point{Series: "fp8 two-level", X: 4096, Y: 0.89, Extra: map[string]float64{"rel_l2": 1.5e-3, "cos": 0.999}})
	s.Point(Point{Series: `q"\`, X: 1e6, Y: math.NaN()})
	s.Progress(1, 2)
	s.Note("line\twith \"tab\"")
	s.Summary(map[string]float64{"slope": -2.5e-5, "break_even": 7000})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want := `{"type":"point","series":"fp8 two-level","x":4096,"y":0.89,"cos":0.999,"rel_l2":0.0015}
{"type":"point","series":"q\"\\","x":1e+06,"y":null}
{"type":"note","text":"line\twith \"tab\""}
{"type":"summary","values":{"break_even":7000,"slope":-2.5e-05}}
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	var e bytes.Buffer
	NewJSONSink(&e).Close()
	if e.String() != `{"type":"summary","values":{}}`+"\n" {
		t.Errorf("empty summary: %q", e.String())
	}
}

func TestTableSink(t *testing.T) {
	var b bytes.Buffer
	s := NewTableSink(&b)
	s.Point(Point{Series: "bf16", X: 131072, Y: 0.91})
	s.Point(Point{Series: "bf16", X: 4096, Y: 0.93})
	s.Point(Point{Series: "fp8 single-level", X: 131072, Y: 0.13})
	s.Point(Point{Series: "fp8 single-level", X: 4096, Y: 0.123456789})
	s.Point(Point{Series: "fp8 two-level", X: 4096, Y: 0.89})
	s.Note("a note")
	s.Summary(map[string]float64{"slope": 4.37e-5, "acc": 0.5})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	want := `x       bf16  fp8 single-level  fp8 two-level
4096    0.93          0.123457           0.89
131072  0.91              0.13              -
a note

acc    0.5
slope  4.37e-05
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestTee(t *testing.T) {
	var a, b Recorder
	s := Tee(&a, &b)
	s.Point(Point{Series: "s", X: 1, Y: 2})
	s.Note("n")
	s.Summary(map[string]float64{"k": 1})
	s.Close()
	for _, r := range []*Recorder{&a, &b} {
		if len(r.Points()) != 1 || len(r.Notes()) != 1 || r.SummaryValues()["k"] != 1 || !r.Closed() {
			t.Errorf("tee did not forward everything")
		}
	}
}

func TestProgressBar(t *testing.T) {
	var b bytes.Buffer
	p := NewProgressBar(&b)
	p.Width = 10
	now := time.Unix(0, 0)
	p.now = func() time.Time { return now }
	p.Progress(0, 100)
	now = now.Add(2 * time.Second)
	p.Progress(5, 100) // same decile: not drawn
	p.Progress(50, 100)
	now = now.Add(2 * time.Second)
	p.Progress(100, 100)
	p.Close()
	want := "[>         ]   0.0%  elapsed 0ms  eta ?\n" +
		"[=====>    ]  50.0%  elapsed 2s  eta 2s\n" +
		"[==========] 100.0%  elapsed 4s  eta 0ms\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
	// Interactive: redraws in place, throttled, ends with a newline.
	b.Reset()
	p = NewProgressBar(&b)
	p.interactive = true
	p.Width = 4
	now = time.Unix(0, 0)
	p.now = func() time.Time { return now }
	p.Progress(1, 4)
	p.Progress(2, 4) // within the interval: not drawn
	now = now.Add(time.Second)
	p.Progress(3, 4)
	p.Close()
	out := b.String()
	if strings.Count(out, "\r") != 3 || !strings.HasSuffix(out, "\n") || !strings.Contains(out, "[===>]  75.0%") {
		t.Errorf("interactive output %q", out)
	}
}

// A KindInt parameter with named values reads the word wherever a number
// goes, writes it back, and keeps its range for numbers.
func TestNamedIntValues(t *testing.T) {
	p := Param{Name: "splits", Kind: KindInt, Default: 0, Min: 1, Max: 128, Named: []Named{{"auto", 0}}}
	ps := []Param{p}
	if err := CheckParams(ps); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   any
		want int
		err  string
	}{
		{"auto", 0, ""}, {" auto ", 0, ""}, {"4", 4, ""}, {float64(16), 16, ""}, {"0", 0, ""},
		{"129", 0, "above the maximum 128"}, {"-1", 0, "below the minimum 1"}, {"many", 0, `"many" is not an integer or auto`},
	} {
		got, err := p.Convert(c.in)
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want %q", c.in, err, c.err)
			}
		case err != nil || got != c.want:
			t.Errorf("%v: %v, %v; want %d", c.in, got, err, c.want)
		}
	}
	if s := p.FormatValue(0); s != "auto" {
		t.Errorf("FormatValue(0) = %q, want auto", s)
	}
	if s := p.FormatValue(7); s != "7" {
		t.Errorf("FormatValue(7) = %q", s)
	}
	if l := p.Limits(); l != "[1, 128] or auto" {
		t.Errorf("Limits() = %q", l)
	}
	v, err := ParseValues(ps, map[string]string{"splits": "auto"})
	if err != nil || v.Int("splits") != 0 || v.Flags() != "-splits auto" {
		t.Errorf("ParseValues: %v %v, flags %q", v.Map(), err, v.Flags())
	}
}

// TestBuildBindingsAndDevice: a build names the WebGPU binding it links
// (with its version) and the CPU it runs on, so that every record says what
// computed it.
func TestBuildBindingsAndDevice(t *testing.T) {
	b := Build()
	if !strings.Contains(b.Device, "logical CPUs") {
		t.Errorf("device %q", b.Device)
	}
	t.Logf("bindings %q, device %q", b.Bindings, b.Device)
}
