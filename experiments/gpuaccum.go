package experiments

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/wgsl"
	"github.com/fp8lab/fp8lab/wgsl/wgslcheck"
)

func init() { sim.Register(GPUAccum{}) }

// GPUAccum is the `gpu-accum` experiment: the same batch of FP8 dot products
// through accum's Go models, through their WGSL emulation on the GPU (which
// must be equal bit for bit), and through the GPU's own f32 arithmetic
// (sequential and pairwise), with a probe of whether the GPU contracts
// a*b+c into an FMA and the Go baseline its arithmetic equals.
type GPUAccum struct {
	// Runner is the GPU to use; nil opens one (wgsl.Open, which honours
	// $FP8LAB_ADAPTER) for the run and closes it after.
	Runner *wgsl.Runner
}

// Name returns "gpu-accum".
func (GPUAccum) Name() string { return "gpu-accum" }

// Doc describes the experiment.
func (GPUAccum) Doc() string {
	return `Simulated against GPU accumulation: FP8 dot products through the Go models, their WGSL emulation and the GPU's own f32 arithmetic.

Each trial draws a P·V-like pair of e4m3 rows of length K (a = softmax
weights of N(0, 2^2) logits scaled so that max P = 448; b = V ~ N(0,1)), and
computes a·b with:
  - the tensor-core models sm90.wgmma.e4m3.f32 (never promoted and promoted
    every 128 elements), sm90.mma.sync.e4m3.f32 and sm100.tcgen05.f8f6f4.f32,
    each in Go (accum.Chain) and emulated in WGSL on the GPU in integer
    arithmetic: the two must be equal bit for bit (summary wgsl_mismatches);
  - the GPU's own f32 arithmetic: a sequential loop s = s + a[k]*b[k] as a
    kernel author writes it, and a pairwise tree (K a power of two);
  - accum's baselines fp32, fp32.fma, fp64, kahan, pairwise, exact.
y is the median over trials of |d - ref| / |ref| (ref the exact dot product);
extra fields: mean and max; for emulated series wgsl_mismatches.

The GPU's arithmetic: an FMA probe (vectors where one rounding and two
differ) says whether the driver contracts a*b+c and whether WGSL's fma()
rounds once; the sequential GPU loop is compared with every Go baseline bit
for bit, on the e4m3 trials (whose products are exact in f32, so fp32 and
fp32.fma agree) and on FP32 inputs (where they differ: the decisive check).
Summary: fused (1 if a*b+c is contracted), fma_builtin_fused, seq_eq_NAME and
pairwise_eq_pairwise (fraction of trials equal), fp32in_seq_eq_fused and
fp32in_seq_eq_unfused, attn_decode_equal of attn_decode_compared (the
attention simulator's decode path run in WGSL against attention.Run, bit
for bit: wgsl.Runner.SimDecode), hardware (1 for a GPU, 0 for lavapipe or another CPU
adapter). It needs a WebGPU adapter; $FP8LAB_ADAPTER picks one.`
}

// Params returns the parameter schema.
func (GPUAccum) Params() []sim.Param {
	return []sim.Param{
		{Name: "K", Doc: "contraction lengths", Unit: "elements", Kind: sim.KindInts,
			Default: []int{256, 1024, 4096, 16384, 65536}, Min: 1, Max: 1 << 22},
		{Name: "trials", Doc: "dot products per K", Kind: sim.KindInt, Default: 32, Min: 1, Max: 4096},
	}
}

// gpuAccumModel is one emulated series.
type gpuAccumModel struct {
	label, model string
	promote      int
}

var gpuAccumModels = []gpuAccumModel{
	{"sm90.wgmma never", "sm90.wgmma.e4m3.f32", 0},
	{"sm90.wgmma every128", "sm90.wgmma.e4m3.f32", 128},
	{"sm90.mma.sync", "sm90.mma.sync.e4m3.f32", 0},
	{"sm100.tcgen05", "sm100.tcgen05.f8f6f4.f32", 0},
}

var gpuAccumBaselines = []string{"fp32", "fp32.fma", "fp64", "kahan", "pairwise", "exact"}

// gpuAccumPV draws one P·V-like pair of e4m3 rows of length k.
func gpuAccumPV(rng *rand.Rand, k int) (a, b []uint16) {
	a, b = make([]uint16, k), make([]uint16, k)
	z := make([]float64, k)
	zmax := math.Inf(-1)
	for i := range z {
		z[i] = pmath.NormFloat64(rng) * 2
		zmax = max(zmax, z[i])
	}
	for i := range z {
		a[i] = uint16(fp8.EncodeE4M3(float32(448*pmath.Exp(z[i]-zmax)), fp8.SatFinite))
		b[i] = uint16(fp8.EncodeE4M3(float32(pmath.NormFloat64(rng)), fp8.SatFinite))
	}
	return a, b
}

// gpuULPs returns |d − ref| in units in the last place of float32 at ref
// (the spacing of the float32 values around the exact result; the
// subnormal spacing below the normal range).
func gpuULPs(d float32, ref float64) float64 {
	a := math.Abs(ref)
	if a == 0 || math.IsInf(a, 0) || math.IsNaN(a) {
		if float64(d) == ref {
			return 0
		}
		return math.Inf(1)
	}
	_, e := math.Frexp(a) // a = f·2^e, f in [0.5, 1)
	ulp := math.Ldexp(1, max(e-24, -149))
	return math.Abs(float64(d)-ref) / ulp
}

func gpuRel(d float32, ref float64) float64 {
	if ref == 0 {
		if d == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(float64(d)-ref) / math.Abs(ref)
}

func gpuStats(x []float64) (median, mean, maxv float64) {
	s := slices.Clone(x)
	slices.Sort(s)
	for _, v := range s {
		mean += v
	}
	return s[len(s)/2], mean / float64(len(s)), s[len(s)-1]
}

func gpuSame(a, b float32) bool {
	if math.IsNaN(float64(a)) && math.IsNaN(float64(b)) {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

// Run runs the experiment.
func (g GPUAccum) Run(ctx context.Context, run *sim.Run) error {
	r, done, err := openGPU(ctx, g.Runner, "gpu-accum")
	if err != nil {
		return err
	}
	defer done()
	info := r.Info()
	run.Note(fmt.Sprintf("gpu-accum: adapter %s", info))
	ks, trials := run.Values.Ints("K"), run.Values.Int("trials")

	// Study 1: does the GPU fuse a*b+c?
	rep, err := r.ProbeFMA(ctx)
	if err != nil {
		return err
	}
	run.Note("gpu-accum: FMA probe: " + rep.Verdict())
	summary := map[string]float64{
		"fused": gpuBool(rep.Contracts()), "fma_builtin_fused": gpuBool(rep.FMAIsFused()),
		"hardware": gpuBool(info.Hardware),
	}

	var planned int64
	for _, k := range ks {
		planned += int64(trials) * int64(k)
	}
	run.AddTotal(planned)

	// Studies 2 and 3, per contraction length: the WGSL emulation against
	// the Go models, and the GPU's own f32 loops against the baselines.
	tally := newGPUAccumTally()
	for _, k := range ks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := tally.contraction(ctx, run, r, k, trials); err != nil {
			return err
		}
	}
	matched := tally.summarize(summary)

	// Study 4: FP32 inputs, where fused and unfused chains differ.
	fusedEq, unfusedEq, n, err := gpuFP32Inputs(ctx, r, run.Seed)
	if err != nil {
		return err
	}
	summary["fp32in_seq_eq_fused"] = float64(fusedEq) / float64(n)
	summary["fp32in_seq_eq_unfused"] = float64(unfusedEq) / float64(n)

	// Study 5: the attention simulator's decode path in WGSL against
	// attention.Run.
	attn, err := wgslcheck.CheckSimDecode(ctx, r, run.Seed, 1024)
	if err != nil {
		return err
	}
	var attnN, attnEq int
	for _, c := range attn {
		attnN, attnEq = attnN+c.Total, attnEq+c.EqualModel
	}
	summary["attn_decode_compared"] = float64(attnN)
	summary["attn_decode_equal"] = float64(attnEq)
	run.Summary(summary)
	run.Note(fmt.Sprintf("gpu-accum: attention decode (the FA3 simulator's decode path in WGSL, %d configurations up to 1024 tokens): %d/%d outputs bit-exact with attention.Run", len(attn), attnEq, attnN))
	tally.notes(run, matched, fusedEq, unfusedEq, n)
	return nil
}

// gpuAccumTrial is one dot product of gpu-accum's contraction study: its
// inputs, the exact value, and the outputs of the Go models (in
// gpuAccumModels order) and of the baselines.
type gpuAccumTrial struct {
	a, b           []uint16
	ref            float64
	goOut, baseOut []float32
}

// gpuAccumDraw draws one trial of length k from rng and computes its CPU
// half: the exact dot product, the Go models and the baselines (what the
// GPU's results are compared with).
func gpuAccumDraw(rng *rand.Rand, k int, baselines []accum.Model) gpuAccumTrial {
	a, b := gpuAccumPV(rng, k)
	t := gpuAccumTrial{a: a, b: b, ref: accum.ExactDot(fp8.FormatE4M3, a, b, 0)}
	for _, m := range gpuAccumModels {
		t.goOut = append(t.goOut, accum.Chain(accum.MustLookup(m.model), a, b, 0, m.promote))
	}
	for _, m := range baselines {
		t.baseOut = append(t.baseOut, m.Dot(a, b, 0))
	}
	return t
}

// gpuAccumTally counts, over the contraction lengths, what the WGSL
// emulation and the GPU's own loops agreed with.
type gpuAccumTally struct {
	baselines            []accum.Model
	mismatches, compared int
	seqEq                []int // per baseline: sequential GPU loop equal
	seqN                 int
	pairEq, pairN        int
}

func newGPUAccumTally() *gpuAccumTally {
	t := &gpuAccumTally{baselines: make([]accum.Model, len(gpuAccumBaselines)), seqEq: make([]int, len(gpuAccumBaselines))}
	for i, n := range gpuAccumBaselines {
		t.baselines[i] = accum.MustLookup(n)
	}
	return t
}

// contraction runs trials dot products of length k: through the Go models
// and their WGSL emulation (one series each, relative errors against the
// exact dot product), and through the GPU's own sequential and pairwise
// f32 loops, compared with the IEEE baselines.
func (ta *gpuAccumTally) contraction(ctx context.Context, run *sim.Run, r *wgsl.Runner, k, trials int) error {
	res, err := sim.Trials(ctx, run, fmt.Sprintf("gpu-accum K=%d", k), trials, func(_ int, rng *rand.Rand) gpuAccumTrial {
		t := gpuAccumDraw(rng, k, ta.baselines)
		run.Advance(int64(k) - 1)
		return t
	})
	if err != nil {
		return err
	}
	in := wgsl.ChainInput{K: k, A: make([]uint8, 0, trials*k), B: make([]uint8, 0, trials*k), C: make([]float32, trials)}
	x, y := make([]float32, 0, trials*k), make([]float32, 0, trials*k)
	for _, t := range res {
		for i := range t.a {
			in.A, in.B = append(in.A, uint8(t.a[i])), append(in.B, uint8(t.b[i]))
			x, y = append(x, fp8.E4M3(t.a[i]).Float32()), append(y, fp8.E4M3(t.b[i]).Float32())
		}
	}
	emit := func(series string, out []float32, extra map[string]float64) error {
		rel := make([]float64, trials)
		for i, t := range res {
			rel[i] = gpuRel(out[i], t.ref)
		}
		med, mean, mx := gpuStats(rel)
		e := map[string]float64{"mean": mean, "max": mx}
		for key, val := range extra {
			e[key] = val
		}
		if err := run.Emit(sim.Point{Series: series, X: float64(k), Y: med, Extra: e}); err != nil {
			return err
		}
		return GPUAccum{}.Chart().EmitTrials(run, series, float64(k), rel, func(i int) map[string]float64 {
			return map[string]float64{"ulp": gpuULPs(out[i], res[i].ref)}
		})
	}
	for mi, m := range gpuAccumModels {
		got, err := r.Chain(ctx, m.model, in, m.promote)
		if err != nil {
			return err
		}
		bad := 0
		for i, t := range res {
			if !gpuSame(got[i], t.goOut[mi]) {
				bad++
			}
		}
		ta.mismatches += bad
		ta.compared += trials
		if err := emit(m.label, got, map[string]float64{"wgsl_mismatches": float64(bad)}); err != nil {
			return err
		}
	}
	seq, err := r.NativeDot(ctx, wgsl.Sequential, x, y, make([]float32, trials), k)
	if err != nil {
		return err
	}
	for i, t := range res {
		for bi := range ta.baselines {
			if gpuSame(seq[i], t.baseOut[bi]) {
				ta.seqEq[bi]++
			}
		}
	}
	ta.seqN += trials
	if err := emit("gpu f32 sequential", seq, nil); err != nil {
		return err
	}
	if bits.OnesCount(uint(k)) == 1 {
		pw, err := r.NativeDot(ctx, wgsl.Pairwise, x, y, make([]float32, trials), k)
		if err != nil {
			return err
		}
		pi := slices.Index(gpuAccumBaselines, "pairwise")
		for i, t := range res {
			if gpuSame(pw[i], t.baseOut[pi]) {
				ta.pairEq++
			}
		}
		ta.pairN += trials
		if err := emit("gpu f32 pairwise", pw, nil); err != nil {
			return err
		}
	}
	for bi, name := range gpuAccumBaselines {
		if name == "exact" {
			continue
		}
		out := make([]float32, trials)
		for i, t := range res {
			out[i] = t.baseOut[bi]
		}
		if err := emit("go "+name, out, nil); err != nil {
			return err
		}
	}
	return nil
}

// summarize writes the tallies into summary and returns the baselines the
// sequential GPU loop equalled on every dot product.
func (ta *gpuAccumTally) summarize(summary map[string]float64) (matched []string) {
	summary["wgsl_mismatches"] = float64(ta.mismatches)
	summary["wgsl_compared"] = float64(ta.compared)
	for bi, name := range gpuAccumBaselines {
		summary["seq_eq_"+name] = float64(ta.seqEq[bi]) / float64(max(ta.seqN, 1))
		if ta.seqEq[bi] == ta.seqN && ta.seqN > 0 {
			matched = append(matched, name)
		}
	}
	if ta.pairN > 0 {
		summary["pairwise_eq_pairwise"] = float64(ta.pairEq) / float64(ta.pairN)
	}
	return matched
}

// notes says in words what the studies found.
func (ta *gpuAccumTally) notes(run *sim.Run, matched []string, fusedEq, unfusedEq, n int) {
	if ta.mismatches == 0 {
		run.Note(fmt.Sprintf("gpu-accum: WGSL emulation equal to the Go models on all %d dot products", ta.compared))
	} else {
		run.Note(fmt.Sprintf("gpu-accum: WGSL emulation differs from the Go models on %d of %d dot products", ta.mismatches, ta.compared))
	}
	fp32Verdict := "neither a fused nor an unfused Go chain"
	switch {
	case fusedEq == n && unfusedEq < n:
		fp32Verdict = "accum.FMA32 chains (fp32.fma) bit for bit"
	case unfusedEq == n && fusedEq < n:
		fp32Verdict = "unfused f32 chains (fp32) bit for bit"
	}
	run.Note(fmt.Sprintf("gpu-accum: the GPU's sequential f32 loop equals on e4m3 inputs: %s (of %s); on FP32 inputs: %s (%d/%d fused, %d/%d unfused); pairwise tree equals accum pairwise on %d/%d",
		strings.Join(matched, ", "), strings.Join(gpuAccumBaselines, ", "), fp32Verdict, fusedEq, n, unfusedEq, n, ta.pairEq, ta.pairN))
}

func gpuBool(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// gpuFP32Rows vectors of gpuFP32K elements make study 4's FP32 inputs.
const gpuFP32Rows, gpuFP32K = 32, 4096

// gpuFP32Draw draws study 4's FP32 normal vectors x and y (row after row).
func gpuFP32Draw(seed uint64) (x, y []float32) {
	rng := sim.TrialRand(seed, "gpu-accum fp32 inputs", 0)
	x, y = make([]float32, gpuFP32Rows*gpuFP32K), make([]float32, gpuFP32Rows*gpuFP32K)
	for i := range x {
		x[i], y[i] = float32(pmath.NormFloat64(rng)), float32(pmath.NormFloat64(rng))
	}
	return x, y
}

// gpuFP32Inputs runs n FP32 normal vectors through the GPU's sequential
// loop and counts the outputs equal to Go's fused and unfused chains.
func gpuFP32Inputs(ctx context.Context, r *wgsl.Runner, seed uint64) (fused, unfused, n int, err error) {
	const rows, K = gpuFP32Rows, gpuFP32K
	x, y := gpuFP32Draw(seed)
	got, err := r.NativeDot(ctx, wgsl.Sequential, x, y, make([]float32, rows), K)
	if err != nil {
		return 0, 0, 0, err
	}
	for i := 0; i < rows; i++ {
		var sf, su float32
		for k := i * K; k < (i+1)*K; k++ {
			sf = accum.FMA32(x[k], y[k], sf)
			su = float32(su + float32(x[k]*y[k]))
		}
		if math.Float32bits(got[i]) == math.Float32bits(sf) {
			fused++
		}
		if math.Float32bits(got[i]) == math.Float32bits(su) {
			unfused++
		}
	}
	return fused, unfused, rows, nil
}
