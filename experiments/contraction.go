package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/accum/golden"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(Contraction{}) }

// Contraction is the `contraction` experiment: the relative error of FP8
// (e4m3) dot products of length K against their exact value, for each
// tensor-core model and promotion interval, and, when the H200
// long-contraction captures are at hand, the real kernels' errors on the
// captured inputs and how many of their outputs the models reproduce bit for
// bit.
//
// The zero value looks for the captures itself (see [Contraction.CapturesDir]).
type Contraction struct {
	// CapturesDir is the folder of the long-contraction capture files
	// (*long_e4m3_K*.txt, or .txt.gz). When empty, the experiment uses the
	// folders listed in $FP8LAB_CAPTURES (separated as in $PATH) if set,
	// else both ../shared/golden/h200 (the shared H200 captures) and
	// testdata/h200-fresh (fp8lab's own H200 captures, seed 777) relative
	// to the root of the fp8lab module, found by walking up from the working
	// directory to its go.mod.
	CapturesDir string
}

// contractionCapturesEnv names the environment variable that points the
// registered experiment at another captures folder: sim parameters have no
// free-text kind, so the folder cannot be a parameter.
const contractionCapturesEnv = "FP8LAB_CAPTURES"

// Name returns "contraction".
func (Contraction) Name() string { return "contraction" }

// Doc describes the experiment.
func (Contraction) Doc() string {
	return `Relative error of a K-long FP8 e4m3 dot product against the exact value, per accumulation model and promotion interval.

Each trial draws one row a (K codes) and cols columns b (K codes each) from the
chosen distribution, computes the cols outputs a·b_j with every selected series
and exactly (accum.ExactDot), and records the relative L2 error
||d - ref|| / ||ref|| over the cols outputs (cols = 1 gives |d - ref| / |ref|;
with cols >= 4 a reference near zero cannot blow up the mean, as it would for a
single zero-mean output). y is the mean over trials; extra fields: p50, p99 and
max over trials (nearest rank: below 100 trials p99 is the maximum), and bias = mean of <d,ref>/<ref,ref> - 1 (negative: the sum
shrinks toward zero, the "swamping" of fp8-attention.md §2.5).

Series: sm90.wgmma.e4m3.f32 never promoted (FA3 before flash-attention #104),
promoted every 32 and every 128 elements (the captures' every32 / every128,
DeepSeek's N_C = 128) and every kBlockN (FA3's two-level accumulation: one KV
tile; 96 for the head_dim-128 decode tile, 128 at head_dim 64, 192 for
the head_dim-128 prefill tile, fp8-attention.md §2.3); sm90.mma.sync and
sm89.mma.sync (never promoted); sm100.tcgen05.f8f6f4 (Blackwell, never
promoted); and the IEEE baselines fp32, fp32.fma, fp64, kahan, pairwise.

Distributions: pv (the captures' P·V: logits ~ N(0, logit-std^2) per row,
P = softmax, multiplied by pscale = 448 / max of P over 64 rows and cast to
e4m3; V ~ N(0,1) in e4m3), pv-biased (the same P, V ~ N(0.5, 1): real V caches
are not zero-mean), normal (both N(0,1)), uniform-positive (both U(0,1): every
product positive, the worst case for truncation).

With the H200 captures (long_e4m3_K*.txt[.gz] in ../shared/golden/h200 and
testdata/h200-fresh from the module root, or in the folders of
$FP8LAB_CAPTURES) it recomputes their every32 and
every128 outputs with accum.Chain (summary: captures_bitexact of
captures_total) and emits, at x = K over the captures' 8 rows, the relative
error of the H200's cublas, cublas_fast, every32, every128 and of the model's
never / every128 on the same inputs.`
}

// contractionSeries is one line of the plot: a model and a promotion
// interval.
type contractionSeries struct {
	id      string // parameter value, e.g. "wgmma-every128"
	model   string // accum model name
	promote int    // elements per promotion; 0 never; -1 the kBlockN parameter
}

// contractionAllSeries lists every series in display order.
var contractionAllSeries = []contractionSeries{
	{"wgmma-never", "sm90.wgmma.e4m3.f32", 0},
	{"wgmma-every32", "sm90.wgmma.e4m3.f32", 32},
	{"wgmma-every128", "sm90.wgmma.e4m3.f32", 128},
	{"wgmma-kblockn", "sm90.wgmma.e4m3.f32", -1},
	{"mma.sync", "sm90.mma.sync.e4m3.f32", 0},
	{"sm89", "sm89.mma.sync.e4m3.f32", 0},
	{"sm100", "sm100.tcgen05.f8f6f4.f32", 0},
	{"fp32", "fp32", 0},
	{"fp32.fma", "fp32.fma", 0},
	{"fp64", "fp64", 0},
	{"kahan", "kahan", 0},
	{"pairwise", "pairwise", 0},
}

// contractionSeriesSets are the named sets of the series parameter.
var contractionSeriesSets = map[string][]string{
	"headline":     {"wgmma-never", "wgmma-every128", "sm100"},
	"sm90":         {"wgmma-never", "wgmma-every32", "wgmma-every128", "wgmma-kblockn", "mma.sync"},
	"tensor-cores": {"wgmma-never", "wgmma-every32", "wgmma-every128", "wgmma-kblockn", "mma.sync", "sm89", "sm100"},
	"baselines":    {"fp32", "fp32.fma", "fp64", "kahan", "pairwise"},
}

// contractionSeriesChoices are the values of the series parameter: "all",
// the named sets, then every single series.
func contractionSeriesChoices() []string {
	c := []string{"all", "headline", "sm90", "tensor-cores", "baselines"}
	for _, s := range contractionAllSeries {
		c = append(c, s.id)
	}
	return c
}

// contractionSelect returns the series a value of the series parameter
// selects, in display order.
func contractionSelect(choice string) []contractionSeries {
	var out []contractionSeries
	set, named := contractionSeriesSets[choice]
	for _, s := range contractionAllSeries {
		if choice == "all" || choice == s.id || named && slices.Contains(set, s.id) {
			out = append(out, s)
		}
	}
	return out
}

// label is the series name shown in the output.
func (s contractionSeries) label(kBlockN int) string {
	short := strings.TrimSuffix(strings.TrimSuffix(s.model, ".e4m3.f32"), ".f32")
	switch {
	case s.promote < 0:
		return fmt.Sprintf("%s every%d (kBlockN)", short, kBlockN)
	case s.promote > 0:
		return fmt.Sprintf("%s every%d", short, s.promote)
	case s.model == "sm90.wgmma.e4m3.f32":
		return short + " never"
	}
	return short
}

// contractionDists are the input distributions.
var contractionDists = []string{"pv", "pv-biased", "normal", "uniform-positive"}

// contractionDefaultK is 1024 … 2^20 in powers of 2.
func contractionDefaultK() []int {
	var k []int
	for n := 1 << 10; n <= 1<<20; n <<= 1 {
		k = append(k, n)
	}
	return k
}

// Limits of the parameters.
const (
	contractionMaxK    = 1 << 22 // 4M: 8 columns × 4M codes × 2 B = 64 MiB per worker
	contractionMaxCols = 64
)

// Params returns the parameter schema.
func (Contraction) Params() []sim.Param {
	return []sim.Param{
		{Name: "K", Doc: "contraction lengths (elements per dot product)", Unit: "elements", Kind: sim.KindInts,
			Default: contractionDefaultK(), Min: 1, Max: contractionMaxK},
		{Name: "trials", Doc: "trials per K (each: one row a and cols columns b)", Kind: sim.KindInt,
			Default: 64, Min: 1, Max: 100000},
		{Name: "cols", Doc: "columns b per trial; the error is the relative L2 error over these outputs (8 as the captures)", Kind: sim.KindInt,
			Default: 8, Min: 1, Max: contractionMaxCols},
		{Name: "dist", Doc: "input distribution", Kind: sim.KindChoice, Default: "pv", Choices: contractionDists},
		{Name: "logit-std", Doc: "standard deviation of the softmax logits of pv and pv-biased (the captures: 2)", Kind: sim.KindFloat,
			Default: 2.0, Min: 0, Max: 8},
		{Name: "series", Doc: "which series: all, a named set, or one series", Kind: sim.KindChoice,
			Default: "all", Choices: contractionSeriesChoices()},
		{Name: "k-block-n", Aliases: []string{"kBlockN"}, Doc: "KV tile of the two-level series (FA3: 96 hd128 decode, 128 hd64 decode, 192 hd128 prefill)", Unit: "elements", Kind: sim.KindInt,
			Default: 96, Min: 32, Max: 1 << 16},
		{Name: "captures", Doc: "overlay the H200 long-contraction captures when found (auto) or not (off)", Kind: sim.KindChoice,
			Default: "auto", Choices: []string{"auto", "off"}},
	}
}

// contractionTrial is the outcome of one trial: per series, the relative
// error and the bias.
type contractionTrial struct {
	rel, bias []float64
}

// Run runs the experiment.
func (c Contraction) Run(ctx context.Context, run *sim.Run) error {
	v := run.Values
	chart := c.Chart()
	ks := v.Ints("K")
	trials, cols := v.Int("trials"), v.Int("cols")
	dist, sigma := v.String("dist"), v.Float("logit-std")
	kBlockN := v.Int("k-block-n")
	series := contractionSelect(v.String("series"))
	models := make([]accum.Model, len(series))
	promote := make([]int, len(series))
	for i, s := range series {
		m, err := accum.Lookup(s.model)
		if err != nil {
			return err
		}
		models[i], promote[i] = m, s.promote
		if s.promote < 0 {
			promote[i] = kBlockN
		}
		if err := accum.CheckPromotion(m, promote[i]); err != nil {
			return fmt.Errorf("parameter \"k-block-n\": %w", err)
		}
	}

	gen, err := newContractionGen(dist, sigma)
	if err != nil {
		return err
	}

	var capFiles []*golden.LongFile
	var capErr error
	var capSkipped []string
	if v.String("captures") == "auto" {
		capFiles, capErr = c.loadCaptures()
		// Only the captures at the K asked for: no rows the user did not ask for.
		kept := capFiles[:0:0]
		for _, f := range capFiles {
			if slices.Contains(ks, f.K) {
				kept = append(kept, f)
			} else {
				capSkipped = append(capSkipped, strconv.Itoa(f.K))
			}
		}
		capFiles = kept
	}

	var planned int64
	for _, k := range ks {
		planned += int64(trials) * int64(k)
	}
	for _, f := range capFiles {
		planned += int64(len(f.Outputs)) * int64(f.K)
	}
	run.AddTotal(planned)

	summary := map[string]float64{}
	for _, k := range ks {
		key := fmt.Sprintf("contraction %s K=%d", dist, k)
		res, err := sim.Trials(ctx, run, key, trials, func(trial int, _ *rand.Rand) contractionTrial {
			// The trial's generator is sim.Trials's (TrialRand) with its
			// PCG at hand: the codes are drawn from the PCG's state itself
			// (pmath.AliasPCG), the same numbers.
			t := contractionStream(ctx, gen, sim.TrialSource(run.Seed, key, trial), k, cols, models, promote)
			run.Advance(int64(k) - 1)
			return t
		})
		if err != nil {
			return err
		}
		for i, s := range series {
			rel := make([]float64, trials)
			bias := 0.0
			for t := range res {
				rel[t] = res[t].rel[i]
				bias += res[t].bias[i]
			}
			st := contractionStatsOf(rel)
			p := sim.Point{Series: s.label(kBlockN), X: float64(k), Y: st.mean, Extra: map[string]float64{
				"p50": st.p50, "p99": st.p99, "max": st.max, "bias": bias / float64(trials), "trials": float64(trials),
			}}
			if err := run.Emit(p); err != nil {
				return err
			}
			if err := chart.EmitTrials(run, p.Series, p.X, rel, func(t int) map[string]float64 {
				return map[string]float64{"bias": res[t].bias[i]}
			}); err != nil {
				return err
			}
			if k == 131072 || k == ks[len(ks)-1] {
				summary[fmt.Sprintf("%s_mean_K%d", s.id, k)] = st.mean
				summary[fmt.Sprintf("%s_p99_K%d", s.id, k)] = st.p99
			}
		}
	}

	switch {
	case v.String("captures") == "off":
	case capErr != nil:
		run.Note("contraction: captures not used: " + capErr.Error())
	default:
		if len(capSkipped) > 0 {
			run.Note("contraction: H200 captures also exist at K = " + strings.Join(capSkipped, ", ") + " (not in -K: not used)")
		}
		if err := contractionCaptures(ctx, run, capFiles, summary); err != nil {
			return err
		}
	}
	run.Summary(summary)
	return nil
}

// contractionStream is one trial: from the trial's PCG src it draws the row
// a and then the cols columns b one at a time, in the order of
// contractionGen.draw on rand.New(src) (so the numbers are those of
// contractionRun on draw's output), and computes each
// column's exact reference and every series' output before drawing the
// next. A trial so holds a, one column and the row's logits — 12·k bytes —
// not cols+1 rows (0.55 GiB at k = 4M and 64 columns), and it looks at ctx
// before each column and each series' dot product: one dot product of at
// most k elements (tens of milliseconds at k = 4M) between looks.
func contractionStream(ctx context.Context, gen *contractionGen, src *rand.PCG, k, cols int, models []accum.Model, promote []int) contractionTrial {
	t := contractionTrial{rel: make([]float64, len(models)), bias: make([]float64, len(models))}
	a := gen.row(ctx, src, k)
	if a == nil {
		return t // cancelled
	}
	// The columns a group at a time (at most contractionGroupCodes codes:
	// one column at K = 4M), drawn in order: nothing else draws from rng.
	group := max(1, min(cols, contractionGroupCodes/k))
	b := make([]uint16, group*k)
	out, part, prev := make([]float32, group), make([]float32, group), make([]float32, group)
	ref := make([]float64, cols)
	d := make([][]float64, len(models))
	for i := range d {
		d[i] = make([]float64, cols)
	}
	for j0 := 0; j0 < cols; j0 += group {
		g := min(group, cols-j0)
		for r := range g {
			if ctx.Err() != nil {
				return t
			}
			col := b[r*k:][:k]
			gen.column(src, col)
			ref[j0+r] = accum.ExactDot(fp8.FormatE4M3, a, col, 0)
		}
		for i, m := range models {
			if ctx.Err() != nil {
				return t
			}
			contractionChainRows(m, a, b[:g*k], promote[i], out[:g], part[:g], prev[:g])
			for r, x := range out[:g] {
				d[i][j0+r] = float64(x)
			}
		}
	}
	for i := range models {
		t.rel[i], t.bias[i] = contractionRelErr(d[i], ref)
	}
	return t
}

// contractionGroupCodes bounds the codes of the columns contractionStream
// holds at once (4 MiB).
const contractionGroupCodes = 1 << 21

// contractionChainRows sets out[r] = accum.Chain(m, a, b_r, 0, promote) for
// the len(out) columns b_r = b[r·len(a) : (r+1)·len(a)], bit for bit,
// through accum.DotRows, which looks a's codes up once for all the columns
// (in wasm a step that looks them up itself costs five times its native
// time, a prepared one three times). part and prev are scratch of
// len(out).
func contractionChainRows(m accum.Model, a, b []uint16, promote int, out, part, prev []float32) {
	k := len(a)
	if promote <= 0 || promote >= k { // Chain: one Dot from +0
		contractionDotRows(m, a, b, k, 0, k, out, prev)
		return
	}
	clear(out) // Chain's FP32 register, from c = +0
	for i := 0; i < k; i += promote {
		contractionDotRows(m, a, b, k, i, min(i+promote, k), part, prev)
		for r, x := range part {
			out[r] = float32(out[r] + x)
		}
	}
}

// contractionDotRows sets out[r] = m.Dot(a[lo:hi], b[r·stride+lo : r·stride+hi], 0)
// for every r. DotRows prepares at most 1024 codes of a: a longer range of
// a tensor-core model is cut at multiples of its instruction's K, each
// piece's outputs the next one's accumulators (Model.Dot is that chain of
// instructions); the other models take the range whole.
func contractionDotRows(m accum.Model, a, b []uint16, stride, lo, hi int, out, prev []float32) {
	info := m.Info()
	piece := hi - lo
	if (info.Kind == accum.KindTFDPA || info.Kind == accum.KindEmulation) && info.K > 0 && info.K <= 1024 {
		piece = 1024 / info.K * info.K
	}
	var c []float32 // nil: from +0
	for i := lo; i < hi; i += piece {
		j := min(i+piece, hi)
		accum.DotRows(m, a[i:j], b[i:], stride, c, out)
		copy(prev, out)
		c = prev
	}
}

// contractionRun computes the cols outputs of every series and the exact
// reference, and returns the relative L2 error and bias per series. It stops
// early (returning zeros) once ctx is cancelled; the caller then discards the
// result.
func contractionRun(ctx context.Context, models []accum.Model, promote []int, a []uint16, b [][]uint16) contractionTrial {
	t := contractionTrial{rel: make([]float64, len(models)), bias: make([]float64, len(models))}
	ref := make([]float64, len(b))
	for j := range b {
		if ctx.Err() != nil {
			return t
		}
		ref[j] = accum.ExactDot(fp8.FormatE4M3, a, b[j], 0)
	}
	d := make([]float64, len(b))
	for i, m := range models {
		for j := range b {
			if ctx.Err() != nil {
				return t
			}
			d[j] = float64(accum.Chain(m, a, b[j], 0, promote[i]))
		}
		t.rel[i], t.bias[i] = contractionRelErr(d, ref)
	}
	return t
}

// contractionRelErr returns ||d - ref||₂ / ||ref||₂ and <d,ref>/<ref,ref> - 1.
// A zero reference gives 0 when d is zero too, +Inf (and a zero bias)
// otherwise.
func contractionRelErr(d, ref []float64) (rel, bias float64) {
	var num, den, dot float64
	for j := range ref {
		e := d[j] - ref[j]
		num += e * e
		den += ref[j] * ref[j]
		dot += d[j] * ref[j]
	}
	if den == 0 {
		if num == 0 {
			return 0, 0
		}
		return math.Inf(1), 0
	}
	return math.Sqrt(num / den), dot/den - 1
}

// contractionStats are statistics over trials.
type contractionStats struct{ mean, p50, p99, max float64 }

// contractionStatsOf returns the mean and the nearest-rank percentiles of x
// (the p-th percentile is the ⌈p·n⌉-th smallest value).
func contractionStatsOf(x []float64) contractionStats {
	s := slices.Clone(x)
	sort.Float64s(s)
	sum := 0.0
	for _, e := range s {
		sum += e
	}
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return contractionStats{mean: sum / float64(len(s)), p50: rank(0.5), p99: rank(0.99), max: s[len(s)-1]}
}
