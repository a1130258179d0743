package experiments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/internal/wasmtest"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/tensorfile"
)

// portableCase is how TestWasmEqualsNative runs one registered experiment.
type portableCase struct {
	// runs are parameter sets (as `lab run` takes them), each run once with
	// portableSeed: small, but through every arithmetic path the
	// experiment has (formats, paths, distributions).
	runs []map[string]string
	// with, when set, returns the experiment to run (its files) given the
	// folder of the inputs the native side wrote (portableWriteInputs).
	with func(e sim.Experiment, inputs string) (sim.Experiment, error)
	// cpu, when set, replaces the runs for an experiment that needs a GPU
	// (node has no WebGPU): it computes the CPU half of the experiment
	// (its inputs and the Go results the GPU's are compared with) through
	// the experiment's own functions, recorded as points.
	cpu func(seed uint64) (*portableRecord, error)
	// probe, when set, records values inside the experiment that its
	// outputs round away (draws cast to e4m3), through its own functions,
	// compared besides the runs: a function whose bits differ between the
	// platforms cannot hide there until a rare draw shows it.
	probe func(seed uint64) (*portableRecord, error)
	// none, when set, says why the experiment is not compared at all; the
	// test logs it (it is not counted as equal).
	none string
}

// portableSeed is the seed of every run.
const portableSeed = 7

// portableCases holds an entry for every registered experiment;
// TestPortableCasesCoverRegistry fails when one has none.
var portableCases = map[string]portableCase{
	"attention-file": {
		runs: []map[string]string{
			{"format": "e4m3", "scale": "amax", "promotions": "0,1", "k-block-n": "64"},
			{"format": "nvfp4", "path": "dequant-e4m3", "promotions": "0", "causal": "true"},
			{"format": "mxfp8", "path": "block-scaled", "arch": "blackwell", "promotions": "1"},
		},
		with: func(e sim.Experiment, dir string) (sim.Experiment, error) {
			return e.(AttentionFile).WithFiles(map[string]string{
				"q": filepath.Join(dir, "q.npy"), "k": filepath.Join(dir, "k.npy"), "v": filepath.Join(dir, "v.npy")})
		},
	},
	"contraction": {runs: []map[string]string{
		{"K": "1024,65536,262144", "trials": "4", "captures": "off"},
		{"K": "2048", "trials": "2", "dist": "normal", "series": "headline", "captures": "off"},
		{"K": "600", "trials": "2", "dist": "pv-biased", "series": "sm90", "captures": "off"},
	}, probe: portableContraction},
	"decode-bw": {none: "it measures times on a WebGPU adapter (node has none, and no two timings are equal); its arithmetic is the GPU's"},
	"gpu-accum": {cpu: portableGPUAccum},
	"h200-attention": {
		runs: []map[string]string{{"N": "4096", "block-n": "128,64", "modes": "0,1,4"}},
		with: func(e sim.Experiment, _ string) (sim.Experiment, error) {
			dir, err := filepath.Abs(filepath.Join("..", "testdata", "h200-attention"))
			h := e.(H200Attention)
			h.CapturesDir = dir // the H200's O, read by both sides
			return h, err
		},
	},
	"itl": {runs: []map[string]string{
		{"contexts": "256,4096,65536"},
		{"gpu": "h200", "model": "gpt-oss-20b", "efficiency": "measured", "bw-measured": "3800", "contexts": "1024,32768"},
	}},
	"kv-formats": {runs: []map[string]string{
		{"contexts": "1024,4096", "trials": "3", "promotions": "0,1"},
	}},
	"needle": {runs: []map[string]string{
		{"contexts": "4096,16384", "trials": "4"},
		{"contexts": "2048", "trials": "3", "head-dim": "64", "sinks": "2", "k-band": "8", "k-band-mean": "2", "haystacks": "2"},
		{"contexts": "4096", "trials": "3", "head-dim": "64", "regime": "decode", "splits": "auto", "probe": "legacy", "haystacks": "3"},
		{"contexts": "2048", "trials": "2", "head-dim": "64", "probe": "hadamard", "haystacks": "2"},
	}},
	"sensitivity": {runs: []map[string]string{
		{"vary": "sink-share", "context": "2048", "trials": "4", "haystacks": "2", "head-dim": "64"},
		{"vary": "splits", "context": "2048", "trials": "2", "haystacks": "2", "head-dim": "64"},
	}},
	"promotion": {runs: []map[string]string{
		{"context": "8192", "trials": "3", "intervals": "1,0", "k-block-n": "64", "stats": "llama31-8b"},
	}},
	"scales": {runs: []map[string]string{
		{"outlier": "1,1000", "kv-heads": "4", "tokens": "2048", "trials": "2"},
		{"outlier": "100", "kv-heads": "2", "tokens": "1024", "trials": "1", "dtype": "e5m2", "promotion": "0"},
	}},
	"prefill-cost": {runs: []map[string]string{
		{"acc-contexts": "512", "trials": "2", "acc-head-dims": "64,256"},
	}},
	"throughput": {runs: []map[string]string{
		{"requests": "10", "output": "100", "concurrencies": "8"},
		{"model": "gpt-oss-20b", "requests": "6", "output": "50", "vary": "input", "inputs": "4096", "gpu": "b200"},
	}},
	"skip-sw": {runs: []map[string]string{
		{"acc-contexts": "4096,32768", "trials": "2", "q-per-kv": "4", "contexts": "1024,65536"},
	}},
}

// portableContraction records the sampler's values before their cast to
// e4m3: the code masses of the normal and shifted-normal alias tables
// (Erfc), and draws of a softmax row's log max P (Exp, Log, Erfc,
// Erfcinv, the normals), of the maximum of n normals (Log, Erfcinv) and
// of the binomial tail count (Exp).
func portableContraction(seed uint64) (*portableRecord, error) {
	rec := &portableRecord{}
	add := func(series string, x, y float64) {
		rec.Points = append(rec.Points, portablePoint{Series: series, X: math.Float64bits(x), Y: math.Float64bits(y)})
	}
	for _, mu := range []float64{0, 0.5} {
		m := contractionCodeMass(func(lo, hi float64) float64 { return contractionNormalMass(lo-mu, hi-mu) })
		for c, p := range m {
			add(fmt.Sprintf("code mass, mean %g", mu), float64(c), p)
		}
	}
	rng := sim.TrialRand(seed, "portable contraction", 0)
	for i := range 64 {
		for _, k := range []int{100, 1024, 1 << 20} {
			add(fmt.Sprintf("log max P, k %d", k), float64(i), contractionPVLogMaxP(rng, k, 2))
		}
		add("max of 4096 normals", float64(i), contractionMaxNormal(rng, 4096))
		add("binomial(65536, 32/65536)", float64(i), float64(contractionBinomial(rng, 65536, 32.0/65536)))
	}
	return rec, nil
}

// portableGPUAccum is gpu-accum's CPU half, as its run computes it: the
// P·V-like trials of two contraction lengths (inputs, exact value, Go
// models, baselines) and study 4's FP32 inputs with Go's fused and unfused
// chains over them.
func portableGPUAccum(seed uint64) (*portableRecord, error) {
	rec := &portableRecord{}
	add := func(series string, x float64, y float64) {
		rec.Points = append(rec.Points, portablePoint{Series: series, X: math.Float64bits(x), Y: math.Float64bits(y)})
	}
	ta := newGPUAccumTally()
	for _, k := range []int{256, 4096} {
		for i := range 3 {
			t := gpuAccumDraw(sim.TrialRand(seed, fmt.Sprintf("gpu-accum K=%d", k), i), k, ta.baselines)
			add("exact", float64(k), t.ref)
			for j, m := range gpuAccumModels {
				add(m.label, float64(k), float64(t.goOut[j]))
			}
			for j, n := range gpuAccumBaselines {
				add(n, float64(k), float64(t.baseOut[j]))
			}
			var codes float64
			for j := range t.a {
				codes = codes*31 + float64(t.a[j])*256 + float64(t.b[j])
				codes = math.Mod(codes, 1<<40)
			}
			add("input codes (hash)", float64(k), codes)
		}
	}
	x, y := gpuFP32Draw(seed)
	for r := range gpuFP32Rows {
		var sf, su float32
		for k := r * gpuFP32K; k < (r+1)*gpuFP32K; k++ {
			sf = accum.FMA32(x[k], y[k], sf)
			su = float32(su + float32(x[k]*y[k]))
		}
		add("fp32 inputs fused", float64(r), float64(sf))
		add("fp32 inputs unfused", float64(r), float64(su))
	}
	return rec, nil
}

// portableRecord is the output of one run, every float as its bits.
type portableRecord struct {
	Run     string            // experiment #index: parameters
	Points  []portablePoint   // in emission order
	Notes   []string          // in order
	Summary map[string]uint64 // name → bits
	Err     string            // the run's error, if any
	Seconds float64           // how long it took (not compared)
}

type portablePoint struct {
	Series string
	X, Y   uint64
	Extra  map[string]uint64
}

// portableSink records a run.
type portableSink struct {
	mu  sync.Mutex
	rec *portableRecord
}

func (s *portableSink) Point(p sim.Point) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := portablePoint{Series: p.Series, X: math.Float64bits(p.X), Y: math.Float64bits(p.Y)}
	if len(p.Extra) > 0 {
		q.Extra = map[string]uint64{}
		for k, v := range p.Extra {
			q.Extra[k] = math.Float64bits(v)
		}
	}
	s.rec.Points = append(s.rec.Points, q)
	return nil
}
func (s *portableSink) Progress(int64, int64) {}
func (s *portableSink) Note(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rec.Notes = append(s.rec.Notes, text)
}
func (s *portableSink) Summary(map[string]float64) {}
func (s *portableSink) Close() error               { return nil }

// portableRun runs every case of the registry (in name order) and returns
// the records; inputs is the folder of attention-file's inputs.
func portableRun(inputs string) ([]*portableRecord, error) {
	var recs []*portableRecord
	for _, e := range sim.Experiments() {
		c, ok := portableCases[e.Name()]
		if !ok {
			return nil, fmt.Errorf("%s: no entry in portableCases", e.Name())
		}
		switch {
		case c.none != "":
			continue
		case c.cpu != nil:
			t0 := time.Now()
			rec, err := c.cpu(portableSeed)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			rec.Run, rec.Seconds = e.Name()+" (CPU half)", time.Since(t0).Seconds()
			recs = append(recs, rec)
			continue
		}
		exp := e
		if c.with != nil {
			var err error
			if exp, err = c.with(e, inputs); err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
		}
		if c.probe != nil {
			t0 := time.Now()
			rec, err := c.probe(portableSeed)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", e.Name(), err)
			}
			rec.Run, rec.Seconds = e.Name()+" (values before their cast)", time.Since(t0).Seconds()
			recs = append(recs, rec)
		}
		for i, args := range c.runs {
			vals, err := sim.ParseValues(exp.Params(), args)
			if err != nil {
				return nil, fmt.Errorf("%s #%d: %w", e.Name(), i, err)
			}
			keys := slices.Sorted(maps.Keys(args))
			var desc []string
			for _, k := range keys {
				desc = append(desc, "-"+k+" "+args[k])
			}
			rec := &portableRecord{Run: fmt.Sprintf("%s #%d: %s", e.Name(), i, strings.Join(desc, " "))}
			t0 := time.Now()
			res, err := sim.Execute(context.Background(), exp, vals, portableSeed, &portableSink{rec: rec})
			rec.Seconds = time.Since(t0).Seconds()
			if err != nil {
				rec.Err = err.Error()
			}
			rec.Summary = map[string]uint64{}
			for k, v := range res.Summary {
				rec.Summary[k] = math.Float64bits(v)
			}
			recs = append(recs, rec)
		}
	}
	return recs, nil
}

// portableWriteInputs writes attention-file's inputs into dir: Q [4, 4, 64],
// K and V [300, 2, 64] (thd), normal values with an outlier channel in K.
func portableWriteInputs(dir string) error {
	rng := rand.New(rand.NewPCG(3, 5))
	draw := func(n int, f func(i int, x float64) float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(f(i, rng.NormFloat64()))
		}
		return x
	}
	const d = 64
	q := draw(4*4*d, func(_ int, x float64) float64 { return x })
	k := draw(300*2*d, func(i int, x float64) float64 {
		if i%d == 5 {
			return 20 * x
		}
		return x
	})
	v := draw(300*2*d, func(_ int, x float64) float64 { return 0.5 + x })
	return errors.Join(
		tensorfile.WriteNPY(filepath.Join(dir, "q.npy"), []int{4, 4, d}, q),
		tensorfile.WriteNPY(filepath.Join(dir, "k.npy"), []int{300, 2, d}, k),
		tensorfile.WriteNPY(filepath.Join(dir, "v.npy"), []int{300, 2, d}, v))
}

// portableEnv names, in the WebAssembly side's environment, the file it
// writes its records to; portableInputsEnv the folder of the inputs.
const (
	portableEnv       = "FP8LAB_PORTABLE_OUT"
	portableInputsEnv = "FP8LAB_PORTABLE_INPUTS"
)

// TestWasmEqualsNative runs every registered experiment (portableCases:
// small parameters, device cpu) natively and as WebAssembly, and fails
// when any point, note, summary value or error of the two differs in any
// bit: a browser run must give a server run's numbers.
//
// The WebAssembly side is this package's test binary built for js/wasm
// and run by Node.js (Go's own lib/wasm/wasm_exec_node.js, as
// go_js_wasm_exec does), not by headless Chromium. Node runs the same
// WebAssembly on V8, Chromium's engine, and WebAssembly's float arithmetic
// is specified bit for bit (IEEE 754, round to nearest even; only NaN
// payloads are left open), so what the Go code computes is what the page's
// worker computes. Node also gives the binary a file system, so
// attention-file reads its .npy inputs and h200-attention the H200's
// outputs through the same code as the server; and it is a small package
// (make test-deps installs nodejs) where the browser tests need Chromium
// (lab's TestBrowser runs one contraction in the real page and compares it
// with the server's too).
//
// gpu-accum needs a WebGPU adapter, which node lacks: its CPU half (the
// inputs and the Go results that the GPU's are compared with) is compared
// instead. decode-bw measures times and is not compared (logged).
// contraction's sampler values before their cast to e4m3 are compared
// besides its runs (portableContraction).
func TestWasmEqualsNative(t *testing.T) {
	if out := os.Getenv(portableEnv); out != "" {
		// The WebAssembly side (or a native one, asked by hand).
		recs, err := portableRun(os.Getenv(portableInputsEnv))
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(recs)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if runtime.GOOS == "js" {
		t.Skip("compares a WebAssembly run with a native one: run it natively")
	}
	if testing.Short() {
		t.Skip("builds this package for js/wasm and runs it under node (-short)")
	}
	node := wasmtest.Node(t)
	start := time.Now()
	dir := t.TempDir()
	inputs := filepath.Join(dir, "inputs")
	if err := os.Mkdir(inputs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := portableWriteInputs(inputs); err != nil {
		t.Fatal(err)
	}

	// The WebAssembly side, while the native one computes.
	type wasmOut struct {
		recs  []*portableRecord
		times wasmtest.Times
		err   error
	}
	ch := make(chan wasmOut, 1)
	go func() {
		var w wasmOut
		outFile := filepath.Join(dir, "wasm.json")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		w.times, _, w.err = wasmtest.Run(ctx, node, dir, "^TestWasmEqualsNative$",
			portableEnv+"="+outFile, portableInputsEnv+"="+inputs)
		if w.err == nil {
			var b []byte
			if b, w.err = os.ReadFile(outFile); w.err == nil {
				w.err = json.Unmarshal(b, &w.recs)
			}
		}
		ch <- w
	}()

	t0 := time.Now()
	native, err := portableRun(inputs)
	if err != nil {
		t.Fatal(err)
	}
	nativeTime := time.Since(t0)
	w := <-ch
	if w.err != nil {
		t.Fatal(w.err)
	}
	for _, e := range sim.Experiments() {
		if c := portableCases[e.Name()]; c.none != "" {
			t.Logf("%s: not compared: %s", e.Name(), c.none)
		}
	}
	portableCompare(t, native, w.recs)
	t.Logf("native runs %.1f s; js/wasm build %.1f s, runs under node %.1f s; %.1f s in all",
		nativeTime.Seconds(), w.times.Build.Seconds(), w.times.Run.Seconds(), time.Since(start).Seconds())
}

// portableCompare reports every difference between the native and the
// WebAssembly records, run by run (the first few values of each, with the
// counts and the largest relative difference).
func portableCompare(t *testing.T, native, wasm []*portableRecord) {
	t.Helper()
	if len(native) != len(wasm) {
		t.Fatalf("%d native runs, %d WebAssembly runs", len(native), len(wasm))
	}
	for i, n := range native {
		w := wasm[i]
		if n.Run != w.Run {
			t.Fatalf("run %d: native %q, WebAssembly %q", i, n.Run, w.Run)
		}
		var diffs []string
		var worst float64
		differ := func(what string, a, b uint64) {
			x, y := math.Float64frombits(a), math.Float64frombits(b)
			if rel := math.Abs(x-y) / max(math.Abs(x), math.Abs(y)); rel > worst {
				worst = rel
			}
			diffs = append(diffs, fmt.Sprintf("%s: native %v, wasm %v", what, x, y))
		}
		var badPoints, badSummary, badNotes int
		if n.Err != w.Err {
			diffs = append(diffs, fmt.Sprintf("error: native %q, wasm %q", n.Err, w.Err))
		}
		if len(n.Points) != len(w.Points) {
			diffs = append(diffs, fmt.Sprintf("%d points native, %d wasm", len(n.Points), len(w.Points)))
		}
		for j := range min(len(n.Points), len(w.Points)) {
			p, q := n.Points[j], w.Points[j]
			where := fmt.Sprintf("point %d (%s at %v)", j, p.Series, math.Float64frombits(p.X))
			before := len(diffs)
			if p.Series != q.Series {
				diffs = append(diffs, fmt.Sprintf("%s: series %q in wasm", where, q.Series))
			}
			if p.X != q.X {
				differ(where+" x", p.X, q.X)
			}
			if p.Y != q.Y {
				differ(where+" y", p.Y, q.Y)
			}
			for _, k := range slices.Sorted(maps.Keys(p.Extra)) {
				if v, ok := q.Extra[k]; !ok {
					diffs = append(diffs, fmt.Sprintf("%s: no %s in wasm", where, k))
				} else if v != p.Extra[k] {
					differ(where+" "+k, p.Extra[k], v)
				}
			}
			if len(q.Extra) != len(p.Extra) {
				diffs = append(diffs, fmt.Sprintf("%s: %d extra values native, %d wasm", where, len(p.Extra), len(q.Extra)))
			}
			if len(diffs) > before {
				badPoints++
			}
		}
		for _, k := range slices.Sorted(maps.Keys(n.Summary)) {
			if v, ok := w.Summary[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("summary %s: missing in wasm", k))
				badSummary++
			} else if v != n.Summary[k] {
				differ("summary "+k, n.Summary[k], v)
				badSummary++
			}
		}
		if len(n.Summary) != len(w.Summary) {
			diffs = append(diffs, fmt.Sprintf("%d summary values native, %d wasm", len(n.Summary), len(w.Summary)))
		}
		if !slices.Equal(n.Notes, w.Notes) {
			for j := range max(len(n.Notes), len(w.Notes)) {
				if j >= len(n.Notes) || j >= len(w.Notes) || n.Notes[j] != w.Notes[j] {
					badNotes++
				}
			}
			diffs = append(diffs, fmt.Sprintf("notes differ: native %q, wasm %q", n.Notes, w.Notes))
		}
		if len(diffs) == 0 {
			t.Logf("%s: equal (%d points, %d summary values, %d notes; %.1f s native, %.1f s wasm)",
				n.Run, len(n.Points), len(n.Summary), len(n.Notes), n.Seconds, w.Seconds)
			continue
		}
		const show = 6
		more := ""
		if len(diffs) > show {
			more = fmt.Sprintf("\n\t… and %d more", len(diffs)-show)
			diffs = diffs[:show]
		}
		t.Errorf("%s: differs: %d/%d points, %d/%d summary values, %d notes; largest relative difference %.2g\n\t%s%s",
			n.Run, badPoints, len(n.Points), badSummary, len(n.Summary), badNotes, worst, strings.Join(diffs, "\n\t"), more)
	}
}

// TestPortableCasesCoverRegistry fails when a registered experiment has
// no entry in portableCases (a new experiment must say how it is compared)
// or an entry names no registered experiment.
func TestPortableCasesCoverRegistry(t *testing.T) {
	names := map[string]bool{}
	for _, e := range sim.Experiments() {
		names[e.Name()] = true
		c, ok := portableCases[e.Name()]
		if !ok {
			t.Errorf("experiment %q has no entry in portableCases (portable_test.go): give it small parameters", e.Name())
			continue
		}
		set := 0
		for _, b := range []bool{len(c.runs) > 0, c.cpu != nil, c.none != ""} {
			if b {
				set++
			}
		}
		if set != 1 {
			t.Errorf("%s: portableCases entry must have runs, cpu or none (exactly one)", e.Name())
		}
		if c.probe != nil && len(c.runs) == 0 {
			t.Errorf("%s: a probe goes with runs", e.Name())
		}
		for i, args := range c.runs {
			if _, err := sim.ParseValues(e.Params(), args); err != nil {
				t.Errorf("%s #%d: %v", e.Name(), i, err)
			}
		}
	}
	for name := range portableCases {
		if !names[name] {
			t.Errorf("portableCases has %q, which is not registered", name)
		}
	}
}
