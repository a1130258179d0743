// Command gpucheck runs fp8lab's WebGPU checks and benchmarks on the GPU at
// hand in one invocation, for a run on a real GPU (an NVIDIA H200 through
// Vulkan) or on lavapipe:
//
//   - the adapter (name, type, backend, how kernels are timed) and whether
//     the device cuts long loops (lavapipe does, after ~65535 iterations);
//   - bit-exactness: the H200 capture files (records, long contractions,
//     conversion tables) and random batches through the WGSL emulation of
//     every emulated tensor-core model, against the hardware and accum;
//   - the attention simulator's decode path in WGSL (wgsl.Runner.SimDecode)
//     against attention.Run, bit for bit ("attention decode: N/N
//     bit-exact");
//   - the FMA verdict (does the driver contract a*b+c?) and which Go baseline
//     the GPU's own f32 accumulation equals (the gpu-accum experiment);
//   - throughput of the emulated sm90 wgmma e4m3 chain in FP8 products per
//     second (target on an H200: >= 6e11 at the median);
//   - decode-bw: decode attention time against context for FP16 and e4m3 KV
//     caches, slopes, bandwidth and slope ratio (targets on an H200: FP16 at
//     >= 60% of 4.8 TB/s at long context, FP8 slope <= 0.6 × FP16's);
//   - sim: the attention simulator's decode on the GPU as the needle
//     experiments send it (wgsl.BenchSimDecode): one haystack's 12 trials
//     in FA3's prefill tile, eight haystacks' in one batch, and the decode
//     tile with 16 splits.
//
// Every timing warms up first (wgsl.DefaultWarmup: untimed runs until the
// last 3 agree within 5 %, after at least 3 runs and 0.5 s counted from
// the end of the first (which compiles the pipelines on a cold cache), at
// most 5 s;
// on a CPU adapter the last 2 within 20 %, at most 1 s), then repeats
// (-reps) and reports the median with the min–max and quartiles of the
// timed runs; targets are judged on the median. The clocks each benchmark
// ran at are sampled by nvidia-smi (SM and memory clocks, power,
// temperature, every 200 ms) when it is on the PATH; otherwise the report
// says they were not measured (WebGPU reports no clocks).
//
// Usage:
//
//	gpucheck [-adapter NAME] [-captures DIR] [-json] [-quick] [-strict]
//
// It prints a report (or one JSON object with -json) and exits with status
// 1 when a bit-exactness check fails or a step errs; with -strict, also when
// a speed target on a hardware GPU is missed. On a CPU adapter (lavapipe)
// the benchmarks use small sizes and the speed targets are reported as not
// checked.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/experiments"
	"github.com/fp8lab/fp8lab/internal/simcase"
	"github.com/fp8lab/fp8lab/presets"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
	"github.com/fp8lab/fp8lab/wgsl/wgslcheck"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gpucheck:", err)
		os.Exit(1)
	}
}

// Targets on an NVIDIA H200: the chain's of issue 17 (the median of a
// warmed-up run; issue 4 asked 3e11), the decode's of issue 4.
const (
	targetProductsPerS = 6e11
	targetBWFraction   = 0.6
	targetSlopeRatio   = 0.6
)

// Num is a number of the JSON report: null when it is not finite (a timing
// on a loaded CPU adapter can give NaN, which encoding/json refuses).
type Num = sim.JSONFloat

// Report is what gpucheck prints with -json.
type Report struct {
	Adapter        wgsl.AdapterInfo  `json:"adapter"`
	TimingSource   string            `json:"timing_source"`
	LoopIterations int               `json:"loop_iterations_of_200000"`
	FMA            FMA               `json:"fma"`
	CapturesDir    string            `json:"captures_dir"`
	Captures       []wgslcheck.Check `json:"captures"`
	Random         []wgslcheck.Check `json:"random"`
	Formats        []wgslcheck.Check `json:"formats"`
	Scaled         []wgslcheck.Check `json:"scaled"`
	AttnDecode     []wgslcheck.Check `json:"attention_decode"`
	BitExact       bool              `json:"bit_exact"`
	Warmup         string            `json:"warmup_rule"`
	Chain          []ChainRate       `json:"chain_bench"`
	DecodeBW       Experiment        `json:"decode_bw"`
	Sim            []SimRate         `json:"sim_bench"`
	GPUAccum       Experiment        `json:"gpu_accum"`
	Targets        []Target          `json:"targets"`
	Elapsed        float64           `json:"elapsed_s"`
}

// FMA is the probe's verdict.
type FMA struct {
	Verdict          string `json:"verdict"`
	Contracts        bool   `json:"contracts_mul_add"`
	FMABuiltinFused  bool   `json:"fma_builtin_fused"`
	Vectors          int    `json:"vectors"`
	MulAddFused      int    `json:"mul_add_fused"`
	MulAddUnfused    int    `json:"mul_add_unfused"`
	FMABuiltinMatch  int    `json:"fma_builtin_fused_count"`
	FMABuiltinUnfuse int    `json:"fma_builtin_unfused_count"`
}

// ChainRate is one emulated chain benchmark: the rate at the median time,
// and the timing's spread, warm-up and clocks.
type ChainRate struct {
	Model        string `json:"model"`
	M            int    `json:"M"`
	N            int    `json:"N"`
	K            int    `json:"K"`
	ProductsPerS Num    `json:"products_per_s"`
	Timing
	Checked int `json:"checked"`
	Equal   int `json:"equal"`
}

// Timing is a benchmark's timed runs after its warm-up: median, min–max
// and quartiles in milliseconds, how many, the warm-up, and the clocks.
type Timing struct {
	TimeMS  Num    `json:"time_ms"` // the median
	MinMS   Num    `json:"min_ms"`
	MaxMS   Num    `json:"max_ms"`
	Q1MS    Num    `json:"q1_ms"`
	Q3MS    Num    `json:"q3_ms"`
	Reps    int    `json:"reps"`
	Source  string `json:"timing"`
	Warmups int    `json:"warmups"`
	WarmupS Num    `json:"warmup_s"`
	Stable  bool   `json:"warmup_stable"`
	// ClockMHz is the SM clock the warm-up ended at, ClockEndMHz the one
	// after the timed runs (nvidia-smi's latest sample; NaN without one).
	ClockMHz    Num    `json:"warmup_end_sm_mhz"`
	ClockEndMHz Num    `json:"timed_end_sm_mhz"`
	ClockUp     bool   `json:"clock_up"` // at 90 % of the maximum; false: settled lower`
	Clocks      Clocks `json:"clocks"`
}

func timingOf(m wgsl.Measurement, k Clocks) Timing {
	ms := func(d time.Duration) Num { return Num(d.Seconds() * 1e3) }
	return Timing{TimeMS: ms(m.Median), MinMS: ms(m.Min), MaxMS: ms(m.Max), Q1MS: ms(m.Q1), Q3MS: ms(m.Q3), Reps: len(m.Times),
		Source: m.Source, Warmups: m.Warmups, WarmupS: Num(m.WarmupTime.Seconds()), Stable: m.Stable, Clocks: k,
		ClockMHz: mhz(m.ClockMHz), ClockEndMHz: mhz(m.ClockEndMHz), ClockUp: m.ClockUp}
}

// mhz is a probe's clock, NaN where there was none (0).
func mhz(v float64) Num {
	if v <= 0 {
		return Num(math.NaN())
	}
	return Num(v)
}

// String writes the timing in one line.
func (t Timing) String() string {
	st := "stable"
	if !t.Stable {
		st = "NOT stable: warm-up capped"
	}
	clk := ""
	if !math.IsNaN(float64(t.ClockMHz)) {
		how := "up"
		if !t.ClockUp {
			how = "settled below 90 % of its maximum"
		}
		clk = fmt.Sprintf("; SM %.0f MHz after the warm-up (%s), %.0f after the timed runs", float64(t.ClockMHz), how, float64(t.ClockEndMHz))
	}
	return fmt.Sprintf("median %.4g ms (min %.4g, max %.4g, IQR %.4g–%.4g; %d runs, %s) after %d warm-up runs in %.2f s (%s%s)",
		float64(t.TimeMS), float64(t.MinMS), float64(t.MaxMS), float64(t.Q1MS), float64(t.Q3MS), t.Reps, t.Source, t.Warmups, float64(t.WarmupS), st, clk)
}

// SimRate is one timing of the attention simulator's decode on the GPU
// (wgsl.BenchSimDecode).
type SimRate struct {
	Name         string `json:"name"`
	Tokens       int    `json:"tokens"`
	KBlockN      int    `json:"kBlockN"`
	Splits       int    `json:"splits"`
	Caches       int    `json:"caches"`
	Trials       int    `json:"trials"`
	Workgroups   int    `json:"workgroups"`
	Dispatches   int    `json:"dispatches"`
	Repeats      int    `json:"repeats"` // a timed run: the dispatches this many times back to back (wgsl.BenchSimDecode)
	PerTrialMS   Num    `json:"per_trial_ms"`
	ProductsPerS Num    `json:"products_per_s"`
	Timing
}

// Experiment is the outcome of an experiment run, with the clocks of its
// run when it times the GPU (decode-bw).
type Experiment struct {
	Flags   string         `json:"flags"`
	Summary map[string]Num `json:"summary"`
	Points  []Point        `json:"points"`
	Notes   []string       `json:"notes"`
	Clocks  *Clocks        `json:"clocks,omitempty"`
}

// Point is one result point of an experiment.
type Point struct {
	Series string         `json:"series"`
	X      Num            `json:"x"`
	Y      Num            `json:"y"`
	Extra  map[string]Num `json:"extra,omitempty"`
}

// Target is one speed target and its outcome.
type Target struct {
	Name   string `json:"name"`
	Value  Num    `json:"value"`
	Want   string `json:"want"`
	Status string `json:"status"` // "met", "missed", "not checked: …"
}

type options struct {
	adapter, captures string
	jsonOut, quick    bool
	strict            bool
	contexts          []int
	batch, reps       int
	benchM, benchN    int
	benchK            int
	accumK            []int
	trials            int
	simTokens         int
	peakGBs           float64
	peakFrom          string // where peakGBs comes from: "-peak-gbs" or a GPU preset's datasheet
	math              string
	only              map[string]bool
}

// steps are the parts of a run that -only selects.
var steps = []string{"captures", "random", "formats", "attention", "chain", "accum", "decode", "sim"}

func (o options) want(step string) bool { return len(o.only) == 0 || o.only[step] }

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	logf := func(format string, a ...any) {
		if !o.jsonOut {
			fmt.Fprintf(stdout, format+"\n", a...)
		} else {
			fmt.Fprintf(stderr, format+"\n", a...)
		}
	}
	r, err := wgsl.Open(ctx, wgsl.Options{Adapter: o.adapter})
	if err != nil {
		return err
	}
	defer r.Close()
	info := r.Info()
	c := &checker{r: r, o: o, logf: logf, info: info,
		rep: &Report{Adapter: info, TimingSource: info.TimingSource(), BitExact: true, Warmup: r.Warmup().String()}, small: o.quick || !info.Hardware}
	c.o.defaults(c.small, info)
	c.clk = startClocks(ctx, info.String())
	defer c.clk.stop()
	r.SetClockProbe(c.clk.latest)
	c.rep.Warmup = r.Warmup().String()
	for _, step := range []func(context.Context) error{c.probes, c.benchmarks, c.bitExactness, c.gpuAccum} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	rep := c.rep
	rep.Targets = targets(rep, info, c.o)
	logf("targets:")
	missed := false
	for _, t := range rep.Targets {
		logf("  %-44s %12.4g  want %-14s %s", t.Name, t.Value, t.Want, t.Status)
		missed = missed || t.Status == "missed"
	}
	rep.Elapsed = time.Since(start).Seconds()
	logf("bit-exact: %v; elapsed %.1f s", rep.BitExact, rep.Elapsed)
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	}
	switch {
	case !rep.BitExact:
		return errors.New("bit-exactness checks failed")
	case o.strict && missed:
		return errors.New("speed targets missed")
	}
	return nil
}

// parseOptions reads gpucheck's flags.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("gpucheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	var contexts, accumK, only string
	fs.StringVar(&o.adapter, "adapter", "", "pick the adapter whose description contains this text (default $FP8LAB_ADAPTER, else the best: a discrete GPU first)")
	fs.StringVar(&o.captures, "captures", "", "folder of the H200 capture files (default $FP8LAB_CAPTURES, else ../shared/golden/h200, shared/golden/h200 or captures/ from the working directory or beside the binary)")
	fs.BoolVar(&o.jsonOut, "json", false, "print one JSON object instead of the report")
	fs.BoolVar(&o.quick, "quick", false, "small sizes everywhere (automatic on a CPU adapter)")
	fs.BoolVar(&o.strict, "strict", false, "exit 1 when a speed target on a hardware GPU is missed")
	fs.StringVar(&contexts, "contexts", "", "decode-bw context lengths (default 1024 … 524288 in powers of 2 on a GPU, 512 … 4096 on a CPU adapter)")
	fs.StringVar(&o.math, "math", wgsl.MathF32, "decode-bw arithmetic, the same for FP16 and FP8: "+strings.Join(wgsl.DecodeMaths, " or "))
	fs.IntVar(&o.batch, "batch", 0, "decode-bw batch (0: the largest that fits a storage binding at the longest context, at most 64)")
	fs.IntVar(&o.reps, "reps", 0, "timed repetitions per benchmark point after the warm-up (default 10 on a GPU, 3 on a CPU adapter)")
	fs.IntVar(&o.simTokens, "sim-tokens", 0, "sim bench: context of the simulator's decode (default 131072 on a GPU, 4096 on a CPU adapter)")
	fs.IntVar(&o.benchM, "bench-m", 0, "chain benchmark: rows of A (default 1024 on a GPU, 64 on a CPU adapter)")
	fs.IntVar(&o.benchN, "bench-n", 0, "chain benchmark: rows of B (default 1024 / 64)")
	fs.IntVar(&o.benchK, "bench-k", 0, "chain benchmark: contraction length (default 8192 / 1024)")
	fs.StringVar(&accumK, "accum-k", "", "gpu-accum contraction lengths (default 1024 … 1048576 by 4 on a GPU, 256 … 16384 on a CPU adapter)")
	fs.IntVar(&o.trials, "trials", 0, "gpu-accum trials per K (default 32 / 16)")
	fs.StringVar(&only, "only", "", "run only these steps (comma-separated: "+strings.Join(steps, ", ")+"); the adapter, loop and FMA probes always run")
	fs.Float64Var(&o.peakGBs, "peak-gbs", 0, "peak memory bandwidth in GB/s for the bandwidth target (default: the datasheet figure of the GPU preset the adapter name matches, presets.GPUForAdapter, e.g. 4800 for an H200, 3350 for an H100 80GB HBM3; else not checked)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if !slices.Contains(wgsl.DecodeMaths, o.math) {
		return o, fmt.Errorf("-math %q: not one of %s (f16: the bundled WGSL compiler has no f16, see wgsl.MathF16)", o.math, strings.Join(wgsl.DecodeMaths, ", "))
	}
	var err error
	if o.contexts, err = parseInts(contexts); err != nil {
		return o, fmt.Errorf("-contexts: %v", err)
	}
	if o.accumK, err = parseInts(accumK); err != nil {
		return o, fmt.Errorf("-accum-k: %v", err)
	}
	if only != "" {
		o.only = map[string]bool{}
		for _, st := range strings.Split(only, ",") {
			st = strings.TrimSpace(st)
			if !slices.Contains(steps, st) {
				return o, fmt.Errorf("-only: unknown step %q (steps: %s)", st, strings.Join(steps, ", "))
			}
			o.only[st] = true
		}
	}
	return o, nil
}

// checker runs gpucheck's steps on one adapter and fills the report.
type checker struct {
	r     *wgsl.Runner
	o     options
	rep   *Report
	info  wgsl.AdapterInfo
	small bool
	logf  func(string, ...any)
	clk   *clocks
}

// probes describes the adapter and runs the loop-limit and FMA probes.
func (c *checker) probes(ctx context.Context) error {
	r, rep, logf, info := c.r, c.rep, c.logf, c.info
	logf("adapter: %s", info)
	logf("  hardware GPU: %v; timing by %s; shader-f16: %v; limits: max buffer %d, storage binding %d, workgroup memory %d",
		info.Hardware, info.TimingSource(), info.ShaderF16, info.MaxBuffer, info.MaxStorageBinding, info.MaxWorkgroupStorage)
	for _, other := range info.Others {
		logf("  also present: %s", other)
	}
	logf("  opened in %s; backends started: %s (%s)", info.Open, info.Backends, wgsl.EnvBackends)
	var err error
	if rep.LoopIterations, err = r.LoopIterations(ctx, 200000); err != nil {
		return err
	}
	logf("loop limit: a loop of 200000 iterations ran %d (the kernels split long loops across dispatches either way)", rep.LoopIterations)
	fma, err := r.ProbeFMA(ctx)
	if err != nil {
		return err
	}
	rep.FMA = FMA{Verdict: fma.Verdict(), Contracts: fma.Contracts(), FMABuiltinFused: fma.FMAIsFused(), Vectors: fma.Vectors,
		MulAddFused: fma.MulAddFused, MulAddUnfused: fma.MulAddUnfused, FMABuiltinMatch: fma.FMAFused, FMABuiltinUnfuse: fma.FMAUnfused}
	logf("fma: %s", rep.FMA.Verdict)
	return nil
}

// benchmarks runs decode-bw, the chain and the simulator's benchmarks
// first, on a GPU kept busy: after seconds of CPU-side checks an idle GPU
// ran the first benchmark at half speed (each benchmark warms up too).
func (c *checker) benchmarks(ctx context.Context) error {
	r, rep, logf, o, info := c.r, c.rep, c.logf, c.o, c.info
	logf("timing: %s; then %d timed runs, median (min–max, IQR); targets judged on the median", rep.Warmup, o.reps)
	if o.want("chain") || o.want("decode") || o.want("sim") {
		t0 := time.Now()
		if bw, _, err := r.ReadBandwidth(ctx, min(uint64(1<<30), info.MaxStorageBinding), 4096, 30); err == nil {
			logf("warm-up: streaming read at %.1f GB/s; %s", bw/1e9, c.clk.window(t0, time.Now()))
		}
	}
	var err error
	if o.want("decode") {
		dbArgs := map[string]string{"contexts": ints(o.contexts), "reps": strconv.Itoa(o.reps), "math": o.math}
		if o.batch > 0 {
			dbArgs["batch"] = strconv.Itoa(o.batch)
		}
		t0 := time.Now()
		rep.DecodeBW, err = runExperiment(ctx, experiments.DecodeBW{Runner: r}, dbArgs)
		if err != nil {
			return err
		}
		k := c.clk.window(t0, time.Now())
		rep.DecodeBW.Clocks = &k
		logExperiment(logf, "decode-bw", rep.DecodeBW)
		logf("  %s", k)
	}
	if o.want("chain") {
		for _, model := range []string{"sm90.wgmma.e4m3.f32", "sm90.mma.sync.e4m3.f32", "sm100.tcgen05.f8f6f4.f32"} {
			t0 := time.Now()
			b, err := r.BenchChain(ctx, model, o.benchM, o.benchN, o.benchK, o.reps, 64)
			if err != nil {
				return err
			}
			cr := ChainRate{Model: model, M: b.M, N: b.N, K: b.K, ProductsPerS: Num(b.Rate), Timing: timingOf(b.Measurement, c.clk.window(t0, time.Now())),
				Checked: b.Checked, Equal: b.Equal}
			rep.Chain = append(rep.Chain, cr)
			if b.Equal != b.Checked {
				rep.BitExact = false
			}
			logf("chain bench %s: %d×%d outputs, K=%d: %.3g FP8 products/s at the median; %d/%d sampled outputs equal to accum",
				model, b.M, b.N, b.K, b.Rate, b.Equal, b.Checked)
			logf("  %s", cr.Timing)
			logf("  %s", cr.Clocks)
		}
	}
	if o.want("sim") {
		if err := c.simBench(ctx); err != nil {
			return err
		}
	}
	return nil
}

// simBench times the attention simulator's decode on the GPU as the needle
// experiments send it: e4m3 caches of simTokens tokens, one query head,
// head_dim 128, a needle replaced per trial; one haystack's 12 trials in
// FA3's prefill tile (kBlockN 224, one split), eight haystacks' 96 trials
// in one batch, and the decode tile (kBlockN 96) with 16 splits.
func (c *checker) simBench(ctx context.Context) error {
	n := c.o.simTokens
	caches := make([]*attention.KV, 8)
	for i := range caches {
		_, _, kv, err := simcase.Inputs(simcase.Case{Tokens: n, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 1}}, uint64(100+i))
		if err != nil {
			return err
		}
		caches[i] = kv
	}
	rng := rand.New(rand.NewPCG(3, 4))
	trials := func(kv *attention.KV) []wgsl.SimTrial {
		ts := make([]wgsl.SimTrial, 12)
		for i := range ts {
			q := make([]float32, 128)
			for j := range q {
				q[j] = float32(rng.NormFloat64())
			}
			tk, err := wgsl.SimTokenOf(kv, rng.IntN(n), 0) // a token's own codes: the work of a needle
			if err != nil {
				panic(err) // the position lies in the cache
			}
			ts[i] = wgsl.SimTrial{Q: q, Tokens: []wgsl.SimToken{tk}}
		}
		return ts
	}
	for _, b := range []struct {
		name           string
		kbn, splits, h int
	}{{"prefill tile, 1 haystack × 12 trials", 224, 1, 1}, {"prefill tile, 8 haystacks × 12 trials in one batch", 224, 1, 8}, {"decode tile, 16 splits, 1 haystack × 12 trials", 96, 16, 1}} {
		var jobs []wgsl.SimJob
		for _, kv := range caches[:b.h] {
			jobs = append(jobs, wgsl.SimJob{Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 1, KBlockN: b.kbn, Splits: b.splits}, KV: kv, Trials: trials(kv)})
		}
		t0 := time.Now()
		sb, err := c.r.BenchSimDecode(ctx, jobs, c.o.reps)
		if err != nil {
			return err
		}
		sr := SimRate{Name: b.name, Tokens: n, KBlockN: b.kbn, Splits: b.splits, Caches: b.h, Trials: sb.Trials, Workgroups: sb.Workgroups, Dispatches: sb.Dispatches, Repeats: sb.Repeats,
			PerTrialMS: Num(sb.Time.Seconds() * 1e3 / float64(sb.Trials)), ProductsPerS: Num(sb.Rate), Timing: timingOf(sb.Measurement, c.clk.window(t0, time.Now()))}
		c.rep.Sim = append(c.rep.Sim, sr)
		c.logf("sim bench %s, %d tokens: %d workgroups, %d dispatches (a timed run: %d× back to back): %.4g ms a trial, %.3g products/s at the median", b.name, n, sb.Workgroups, sb.Dispatches, sb.Repeats, float64(sr.PerTrialMS), sb.Rate)
		c.logf("  %s", sr.Timing)
		c.logf("  %s", sr.Clocks)
	}
	if s := c.rep.Sim; len(s) >= 2 && s[1].TimeMS > 0 {
		c.logf("sim bench: 8 haystacks in one batch take %.2f× the time of one (a GPU running them side by side: 1; one after the other: 8)", float64(s[1].TimeMS/s[0].TimeMS))
	}
	return nil
}

// bitExactness runs the checks against the captures, the Go models and
// package fp8: captures, random batches, narrow formats and block-scaled
// steps, the attention decode.
func (c *checker) bitExactness(ctx context.Context) error {
	r, rep, logf, o, small := c.r, c.rep, c.logf, c.o, c.small
	var err error
	rep.CapturesDir = findCaptures(o.captures)
	if !o.want("captures") {
		logf("captures: skipped (-only)")
	} else if rep.CapturesDir == "" {
		logf("captures: not found (give -captures DIR or set FP8LAB_CAPTURES): H200 capture checks NOT RUN")
	} else {
		if rep.Captures, err = wgslcheck.CheckCaptures(ctx, r, rep.CapturesDir); err != nil {
			return err
		}
		logf("captures (%s):", rep.CapturesDir)
		rep.BitExact = logChecks(logf, rep.Captures) && rep.BitExact
	}
	rows := 64
	if small {
		rows = 16
	}
	if o.want("random") {
		if rep.Random, err = wgslcheck.CheckRandom(ctx, r, 1, rows); err != nil {
			return err
		}
		logf("random batches through the WGSL emulation, against accum:")
		rep.BitExact = logChecks(logf, rep.Random) && rep.BitExact
	}
	if o.want("formats") {
		if rep.Formats, err = wgslcheck.CheckNarrow(ctx, r, 1, 100000); err != nil {
			return err
		}
		logf("narrow-format conversions in WGSL (e4m3 … e5m2fnuz, ue8m0), against package fp8:")
		rep.BitExact = logChecks(logf, rep.Formats) && rep.BitExact
		n := 4096
		if small {
			n = 512
		}
		if rep.Scaled, err = wgslcheck.CheckScaled(ctx, r, 1, n); err != nil {
			return err
		}
		logf("block-scaled and FP4/FP6 steps in WGSL (tcgen05 / sm_120 f8f6f4, mxf8f6f4, mxf4, mxf4nvf4), against accum:")
		rep.BitExact = logChecks(logf, rep.Scaled) && rep.BitExact
	}
	if o.want("attention") {
		maxTokens := 131072
		if small {
			maxTokens = 2048
		}
		if rep.AttnDecode, err = wgslcheck.CheckSimDecode(ctx, r, 1, maxTokens); err != nil {
			return err
		}
		logf("attention simulator, decode path in WGSL, against attention.Run:")
		ok := logChecks(logf, rep.AttnDecode)
		var n, eq int
		for _, c := range rep.AttnDecode {
			n, eq = n+c.Total, eq+c.EqualModel
		}
		logf("attention decode: %d/%d bit-exact", eq, n)
		rep.BitExact = ok && rep.BitExact
	}
	return nil
}

// gpuAccum runs the gpu-accum experiment: the GPU's own accumulation.
func (c *checker) gpuAccum(ctx context.Context) error {
	if !c.o.want("accum") {
		return nil
	}
	var err error
	c.rep.GPUAccum, err = runExperiment(ctx, experiments.GPUAccum{Runner: c.r}, map[string]string{"K": ints(c.o.accumK), "trials": strconv.Itoa(c.o.trials)})
	if err != nil {
		return err
	}
	logExperiment(c.logf, "gpu-accum", c.rep.GPUAccum)
	if c.rep.GPUAccum.Summary["wgsl_mismatches"] != 0 {
		c.rep.BitExact = false
	}
	return nil
}

func (o *options) defaults(small bool, info wgsl.AdapterInfo) {
	pick := func(v *int, big, sm int) {
		if *v == 0 {
			*v = big
			if small {
				*v = sm
			}
		}
	}
	pick(&o.reps, 10, 3)
	pick(&o.benchM, 1024, 64)
	pick(&o.benchN, 1024, 64)
	pick(&o.benchK, 8192, 1024)
	pick(&o.trials, 32, 16)
	pick(&o.simTokens, 131072, 4096)
	if len(o.contexts) == 0 {
		if small {
			o.contexts = []int{512, 1024, 2048, 4096}
		} else {
			for l := 1024; l <= 1<<19; l *= 2 {
				o.contexts = append(o.contexts, l)
			}
		}
	}
	if len(o.accumK) == 0 {
		if small {
			o.accumK = []int{256, 1024, 4096, 16384}
		} else {
			for k := 1024; k <= 1<<20; k *= 4 {
				o.accumK = append(o.accumK, k)
			}
		}
	}
	if o.peakGBs == 0 {
		if g, ok := presets.GPUForAdapter(info.Name); ok {
			o.peakGBs = g.Bandwidth / 1e9 // the datasheet's, of the GPU presets
			o.peakFrom = "the " + g.Name + " datasheet, preset " + g.ID
		}
	}
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// findCaptures returns the captures folder: the flag, $FP8LAB_CAPTURES, or
// the first of the usual places that exists; "" when none does.
func findCaptures(flagDir string) string {
	cands := []string{flagDir, os.Getenv("FP8LAB_CAPTURES")}
	rel := []string{"../shared/golden/h200", "shared/golden/h200", "captures"}
	cands = append(cands, rel...)
	if exe, err := os.Executable(); err == nil {
		for _, r := range rel {
			cands = append(cands, filepath.Join(filepath.Dir(exe), r))
		}
	}
	for _, c := range cands {
		if c == "" {
			continue
		}
		if st, err := os.Stat(c); err == nil && st.IsDir() {
			return c
		}
		if c == flagDir || c == os.Getenv("FP8LAB_CAPTURES") {
			return "" // named but missing: do not fall back silently
		}
	}
	return ""
}

func logChecks(logf func(string, ...any), checks []wgslcheck.Check) bool {
	ok := true
	var total, eq int
	for _, c := range checks {
		hw := "no hardware result"
		if c.EqualHW >= 0 {
			hw = fmt.Sprintf("%d/%d equal to the H200", c.EqualHW, c.Total)
		}
		status := "ok"
		if !c.OK() {
			status, ok = "MISMATCH", false
		}
		logf("  %-60s %s, %d/%d to the Go model  %s", c.Name, hw, c.EqualModel, c.Total, status)
		total += c.Total
		eq += c.EqualModel
	}
	logf("  total: %d/%d equal to the Go models", eq, total)
	return ok
}

func runExperiment(ctx context.Context, e sim.Experiment, args map[string]string) (Experiment, error) {
	vals, err := sim.ParseValues(e.Params(), args)
	if err != nil {
		return Experiment{}, err
	}
	rec := &sim.Recorder{}
	if _, err := sim.Execute(ctx, e, vals, 1, rec); err != nil {
		return Experiment{}, err
	}
	out := Experiment{Flags: vals.Flags(), Summary: nums(rec.SummaryValues()), Notes: rec.Notes()}
	for _, p := range rec.Points() {
		out.Points = append(out.Points, Point{Series: p.Series, X: Num(p.X), Y: Num(p.Y), Extra: nums(p.Extra)})
	}
	return out, nil
}

// nums converts a map of values for the JSON report (nil stays nil).
func nums(m map[string]float64) map[string]Num {
	if m == nil {
		return nil
	}
	out := make(map[string]Num, len(m))
	for k, v := range m {
		out[k] = Num(v)
	}
	return out
}

func logExperiment(logf func(string, ...any), name string, e Experiment) {
	logf("%s %s:", name, e.Flags)
	for _, n := range e.Notes {
		logf("  %s", n)
	}
	var keys []string
	for k := range e.Summary {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		logf("  %-26s %.6g", k, e.Summary[k])
	}
	if name == "decode-bw" {
		for _, p := range e.Points {
			logf("  %-5s L=%-8.0f %10.4f ms  %8.1f GB/s", p.Series, p.X, p.Y, p.Extra["bandwidth_gbs"])
		}
	}
}

func targets(rep *Report, info wgsl.AdapterInfo, o options) []Target {
	notGPU := "not checked: " + info.Name + " is not a hardware GPU"
	status := func(ok bool) string {
		if !info.Hardware {
			return notGPU
		}
		if ok {
			return "met"
		}
		return "missed"
	}
	var ts []Target
	for _, c := range rep.Chain {
		if c.Model == "sm90.wgmma.e4m3.f32" {
			ts = append(ts, Target{Name: "sm90 wgmma e4m3 chain, FP8 products/s (median)", Value: c.ProductsPerS, Want: ">= 6e11", Status: status(c.ProductsPerS >= targetProductsPerS)})
		}
	}
	s := rep.DecodeBW.Summary
	if s == nil {
		return ts
	}
	bw := Target{Name: fmt.Sprintf("decode FP16 bandwidth at %d tokens, GB/s", o.contexts[len(o.contexts)-1]), Value: s["fp16_bw_gbs"]}
	if o.peakGBs > 0 {
		from := o.peakFrom
		if from == "" {
			from = "-peak-gbs"
		}
		bw.Want = fmt.Sprintf(">= %.0f (%.0f%% of %.0f GB/s, %s)", targetBWFraction*o.peakGBs, 100*targetBWFraction, o.peakGBs, from)
		bw.Status = status(float64(s["fp16_bw_gbs"]) >= targetBWFraction*o.peakGBs)
	} else {
		bw.Want = "60% of peak"
		bw.Status = "not checked: peak bandwidth unknown (-peak-gbs)"
		if !info.Hardware {
			bw.Status = notGPU
		}
	}
	ts = append(ts, bw)
	ts = append(ts, Target{Name: "decode slope ratio e4m3 / fp16", Value: s["slope_ratio"], Want: "<= 0.6", Status: status(s["slope_ratio"] <= targetSlopeRatio)})
	return ts
}
