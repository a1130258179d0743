package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
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
		res, err := sim.Trials(ctx, run, key, trials, func(_ int, rng *rand.Rand) contractionTrial {
			t := contractionStream(ctx, gen, rng, k, cols, models, promote)
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

// contractionStream is one trial: it draws the row a and then the cols
// columns b one at a time, in the order of contractionGen.draw (so the
// numbers are those of contractionRun on draw's output), and computes each
// column's exact reference and every series' output before drawing the
// next. A trial so holds a, one column and the row's logits — 12·k bytes —
// not cols+1 rows (0.55 GiB at k = 4M and 64 columns), and it looks at ctx
// before each column and each series' dot product: one dot product of at
// most k elements (tens of milliseconds at k = 4M) between looks.
func contractionStream(ctx context.Context, gen *contractionGen, rng *rand.Rand, k, cols int, models []accum.Model, promote []int) contractionTrial {
	t := contractionTrial{rel: make([]float64, len(models)), bias: make([]float64, len(models))}
	a := gen.row(ctx, rng, k)
	if a == nil {
		return t // cancelled
	}
	b := make([]uint16, k)
	ref := make([]float64, cols)
	d := make([][]float64, len(models))
	for i := range d {
		d[i] = make([]float64, cols)
	}
	for j := range cols {
		if ctx.Err() != nil {
			return t
		}
		gen.column(rng, b)
		ref[j] = accum.ExactDot(fp8.FormatE4M3, a, b, 0)
		for i, m := range models {
			if ctx.Err() != nil {
				return t
			}
			d[i][j] = float64(accum.Chain(m, a, b, 0, promote[i]))
		}
	}
	for i := range models {
		t.rel[i], t.bias[i] = contractionRelErr(d[i], ref)
	}
	return t
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

// contractionPVRows is the number of rows the captures drew their one pscale
// over (tc_probe.py: 64 rows of P, pscale = 448 / max of all of them).
const contractionPVRows = 64

// contractionGen draws the inputs of one trial. Codes are drawn directly from
// the distribution of the e4m3 cast of the continuous value (round to
// nearest even, SatFinite), by Walker's alias method over the 256 codes: the
// same distribution as drawing the float and casting it, at a fraction of the
// cost (the boundaries between codes are the midpoints of neighbouring
// values; ties have probability zero).
type contractionGen struct {
	dist  string
	sigma float64
	a, b  *contractionAlias // samplers of a (nil for pv: see pvRow) and of b
}

// newContractionGen prepares the samplers of a distribution.
func newContractionGen(dist string, sigma float64) (*contractionGen, error) {
	g := &contractionGen{dist: dist, sigma: sigma}
	normal := func(mu float64) *contractionAlias {
		return newContractionAlias(contractionCodeMass(func(lo, hi float64) float64 { return contractionNormalMass(lo-mu, hi-mu) }))
	}
	uniform := newContractionAlias(contractionCodeMass(func(lo, hi float64) float64 {
		return max(0, min(hi, 1)-max(lo, 0))
	}))
	switch dist {
	case "pv":
		g.b = normal(0)
	case "pv-biased":
		g.b = normal(0.5)
	case "normal":
		g.a, g.b = normal(0), normal(0)
	case "uniform-positive":
		g.a, g.b = uniform, uniform
	default:
		return nil, fmt.Errorf("parameter \"dist\": unknown distribution %q", dist)
	}
	return g, nil
}

// draw returns one row a of k codes and cols columns b of k codes each.
func (g *contractionGen) draw(rng *rand.Rand, k, cols int) (a []uint16, b [][]uint16) {
	a = g.row(context.Background(), rng, k)
	b = make([][]uint16, cols)
	for j := range b {
		b[j] = make([]uint16, k)
		g.column(rng, b[j])
	}
	return a, b
}

// row draws the row a of k codes, the first draw of a trial. It returns
// nil once ctx is cancelled, looking every 65536 elements.
func (g *contractionGen) row(ctx context.Context, rng *rand.Rand, k int) []uint16 {
	a := make([]uint16, k)
	if g.a != nil {
		for i := range a {
			if i%65536 == 0 && ctx.Err() != nil {
				return nil
			}
			a[i] = g.a.draw(rng)
		}
	} else if !g.pvRow(ctx, rng, a) {
		return nil
	}
	return a
}

// column fills b with one column of codes, drawn after the row and the
// columns before it.
func (g *contractionGen) column(rng *rand.Rand, b []uint16) {
	for i := range b {
		b[i] = g.b.draw(rng)
	}
}

// pvRow fills a with one row of P scaled into e4m3 as
// shared/golden/h200/capture/tc_probe.py does: logits z ~ N(0, sigma²),
// P = softmax(z), a = e4m3(min(P · pscale, 448)) with pscale = 448 / max P over
// 64 rows. The row itself is drawn in full; of the other 63 rows only their
// largest P matters, drawn by [contractionPVLogMaxP].
//
// It returns false, with a unfinished, once ctx is cancelled (it looks every
// 65536 elements).
func (g *contractionGen) pvRow(ctx context.Context, rng *rand.Rand, a []uint16) bool {
	e := make([]float64, len(a))
	zmax := math.Inf(-1)
	for i := range e {
		if i%65536 == 0 && ctx.Err() != nil {
			return false
		}
		e[i] = rng.NormFloat64()
		zmax = max(zmax, e[i])
	}
	den := 0.0
	for i := range e {
		e[i] = math.Exp(g.sigma * (e[i] - zmax)) // P_i · den, in (0, 1]
		den += e[i]
	}
	logMax := -math.Log(den) // log of the row's largest P
	for range contractionPVRows - 1 {
		if ctx.Err() != nil {
			return false
		}
		logMax = max(logMax, contractionPVLogMaxP(rng, len(a), g.sigma))
	}
	scale := 448 * math.Exp(-math.Log(den)-logMax) // pscale / den
	for i := range a {
		a[i] = uint16(fp8.EncodeE4M3(float32(min(e[i]*scale, 448)), fp8.SatFinite))
	}
	return true
}

// contractionPVTail is the expected number of logits of a row that
// [contractionPVLogMaxP] draws one by one.
const contractionPVTail = 32

// contractionPVLogMaxP draws log(max_i P_i) for a softmax row P of k logits
// sigma·z_i, z_i ~ N(0,1): that is −log Σ_i exp(sigma·(z_i − max z)).
//
// Short rows are drawn in full. Otherwise the logits above the threshold t
// with P(z > t) = 32/k are drawn exactly: their number is binomial, each one
// from the normal's upper tail by inversion; the sum over the k − n logits
// below t, a sum of many bounded terms, is drawn from the normal law with its
// exact conditional mean and variance (E[e^(s·z) | z < t] =
// e^(s²/2)·Φ(t − s)/Φ(t)). Its error is the central-limit remainder of a sum
// whose relative spread is a few percent at k = 1024 and shrinks as 1/√k.
func contractionPVLogMaxP(rng *rand.Rand, k int, sigma float64) float64 {
	full := func() float64 {
		z := make([]float64, k)
		zmax := math.Inf(-1)
		for i := range z {
			z[i] = rng.NormFloat64()
			zmax = max(zmax, z[i])
		}
		sum := 0.0
		for _, x := range z {
			sum += math.Exp(sigma * (x - zmax))
		}
		return -math.Log(sum)
	}
	if k <= 4*contractionPVTail {
		return full()
	}
	q := float64(contractionPVTail) / float64(k)
	n := contractionBinomial(rng, k, q)
	if n == 0 {
		return full() // probability e^-32
	}
	t := math.Sqrt2 * math.Erfcinv(2*q)
	tail := make([]float64, n)
	zmax := math.Inf(-1)
	for i := range tail {
		u := 1 - rng.Float64() // (0, 1]
		tail[i] = math.Sqrt2 * math.Erfcinv(2*q*u)
		zmax = max(zmax, tail[i])
	}
	sum := 0.0
	for _, x := range tail {
		sum += math.Exp(sigma * (x - zmax))
	}
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	nb := float64(k - n)
	m1 := math.Exp(sigma*sigma/2-sigma*zmax) * phi(t-sigma) / (1 - q)
	m2 := math.Exp(2*sigma*sigma-2*sigma*zmax) * phi(t-2*sigma) / (1 - q)
	bulk := nb*m1 + math.Sqrt(nb*max(0, m2-m1*m1))*rng.NormFloat64()
	return -math.Log(sum + max(bulk, 0))
}

// contractionBinomial draws from Binomial(n, p) by inversion (for a small
// mean n·p: the loop runs about n·p times).
func contractionBinomial(rng *rand.Rand, n int, p float64) int {
	u := rng.Float64()
	pmf := math.Exp(float64(n) * math.Log1p(-p))
	cdf := pmf
	j := 0
	for u >= cdf && j < n {
		pmf *= float64(n-j) / float64(j+1) * p / (1 - p)
		j++
		cdf += pmf
	}
	return j
}

// contractionMaxNormal draws the maximum of n independent N(0,1) values by
// inversion: Φ⁻¹(U^(1/n)) = √2 · erfcinv(2 · (1 − U^(1/n))), with
// 1 − U^(1/n) = −expm1(log(U)/n) computed without cancellation.
func contractionMaxNormal(rng *rand.Rand, n int) float64 {
	if n <= 0 {
		return math.Inf(-1)
	}
	u := 1 - rng.Float64() // (0, 1]
	q := -math.Expm1(math.Log(u) / float64(n))
	if q <= 0 {
		return math.Inf(-1) // u == 1
	}
	return math.Sqrt2 * math.Erfcinv(2*q)
}

// contractionNormalMass returns P(lo ≤ Z < hi) for Z ~ N(0,1), through the
// complementary error function on the side that keeps relative precision in
// the tails.
func contractionNormalMass(lo, hi float64) float64 {
	if hi <= lo {
		return 0
	}
	if lo >= 0 {
		return 0.5 * (math.Erfc(lo/math.Sqrt2) - math.Erfc(hi/math.Sqrt2))
	}
	if hi <= 0 {
		return 0.5 * (math.Erfc(-hi/math.Sqrt2) - math.Erfc(-lo/math.Sqrt2))
	}
	return 1 - 0.5*math.Erfc(hi/math.Sqrt2) - 0.5*math.Erfc(-lo/math.Sqrt2)
}

// contractionCodeMass returns, for every e4m3 code, the probability that a
// value drawn with interval masses mass(lo, hi) = P(lo ≤ X < hi) casts to it
// (round to nearest even, SatFinite): a finite code's interval runs between
// the midpoints to its neighbours, the largest magnitude's to infinity;
// negative values below the first midpoint give −0 (0x80), as the cast does.
// NaN codes get 0.
func contractionCodeMass(mass func(lo, hi float64) float64) *[256]float64 {
	var p [256]float64
	top := int(fp8.E4M3Max)
	val := func(c int) float64 { return float64(fp8.E4M3(c).Float32()) }
	for c := 0; c <= top; c++ {
		lo, hi := 0.0, math.Inf(1)
		if c > 0 {
			lo = (val(c-1) + val(c)) / 2
		}
		if c < top {
			hi = (val(c) + val(c+1)) / 2
		}
		p[c] = mass(lo, hi)
		p[c|0x80] = mass(-hi, -lo)
	}
	return &p
}

// contractionAlias samples codes by Walker's alias method: one 64-bit draw,
// its top 8 bits a column, its low 56 bits compared with the column's
// threshold.
type contractionAlias struct {
	thr   [256]uint64
	alias [256]uint8
}

// newContractionAlias builds the sampler of the (unnormalised) probabilities
// p by Vose's algorithm.
func newContractionAlias(p *[256]float64) *contractionAlias {
	const one = 1 << 56
	var s contractionAlias
	total := 0.0
	for _, x := range p {
		total += x
	}
	var q [256]float64
	var small, large []int
	for i, x := range p {
		q[i] = x / total * 256
		if q[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		l, g := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		s.thr[l] = uint64(q[l] * one)
		s.alias[l] = uint8(g)
		q[g] -= 1 - q[l]
		if q[g] < 1 {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	for _, i := range append(small, large...) { // leftovers are 1 up to rounding
		s.thr[i], s.alias[i] = one, uint8(i)
	}
	return &s
}

// draw returns one code.
func (s *contractionAlias) draw(rng *rand.Rand) uint16 {
	u := rng.Uint64()
	i := u >> 56
	if u&(1<<56-1) < s.thr[i] {
		return uint16(i)
	}
	return uint16(s.alias[i])
}

// contractionCapturesModel is the model the long captures were taken with.
const contractionCapturesModel = "sm90.wgmma.e4m3.f32"

// loadCaptures reads the long-contraction capture files (long_e4m3_K*.txt,
// possibly gzip-compressed as .txt.gz, with any prefix such as "fresh_"),
// sorted by K. It returns an error saying where it looked when there are
// none.
func (c Contraction) loadCaptures() ([]*golden.LongFile, error) {
	var dirs []string
	switch {
	case c.CapturesDir != "":
		dirs = []string{c.CapturesDir}
	case os.Getenv(contractionCapturesEnv) != "":
		dirs = filepath.SplitList(os.Getenv(contractionCapturesEnv))
	default:
		root, err := moduleRoot()
		if err != nil {
			return nil, err
		}
		dirs = []string{
			filepath.Join(root, "..", "shared", "golden", "h200"), // the shared H200 captures
			filepath.Join(root, "testdata", "h200-fresh"),         // fp8lab's own, seed 777
		}
	}
	var paths []string
	for _, dir := range dirs {
		for _, pat := range []string{"*long_e4m3_K*.txt", "*long_e4m3_K*.txt.gz"} {
			p, err := filepath.Glob(filepath.Join(dir, pat))
			if err != nil {
				return nil, err
			}
			paths = append(paths, p...)
		}
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no long_e4m3_K*.txt[.gz] files in %s", strings.Join(dirs, ", "))
	}
	var files []*golden.LongFile
	for _, p := range paths {
		f, err := golden.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if f.Long == nil {
			return nil, fmt.Errorf("%s: a %v file, not a long-contraction file", p, f.Kind)
		}
		if f.Long.Model != contractionCapturesModel {
			return nil, fmt.Errorf("%s: model %q, want %q", p, f.Long.Model, contractionCapturesModel)
		}
		files = append(files, f.Long)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].K < files[j].K })
	return files, nil
}

// contractionCaptureCount is the agreement of the models with one capture
// file.
type contractionCaptureCount struct {
	every32, every128, outputs, refMismatch int
}

// contractionCaptures recomputes the captured every32 / every128 outputs,
// counts the bit-exact ones, and emits the relative errors of the H200
// kernels and of the model on the captured inputs, one point per file at
// x = K (mean over the 8 rows, each the relative L2 error over the 8
// columns; p99 over 8 rows is their maximum).
func contractionCaptures(ctx context.Context, run *sim.Run, files []*golden.LongFile, summary map[string]float64) error {
	var total contractionCaptureCount
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		cnt, rows, err := contractionCaptureFile(ctx, f)
		if err != nil {
			return err
		}
		run.Advance(int64(len(f.Outputs)) * int64(f.K))
		total.every32 += cnt.every32
		total.every128 += cnt.every128
		total.outputs += cnt.outputs
		total.refMismatch += cnt.refMismatch
		for _, name := range contractionCaptureVariants {
			st := contractionStatsOf(rows[name])
			p := sim.Point{Series: name, X: float64(f.K), Y: st.mean, Extra: map[string]float64{
				"p50": st.p50, "p99": st.p99, "max": st.max, "rows": float64(len(rows[name])),
			}}
			if err := run.Emit(p); err != nil {
				return err
			}
		}
		run.Note(fmt.Sprintf("contraction: H200 capture %s (K=%d): every32 %d/%d and every128 %d/%d bit-exact with accum.Chain(%s)",
			filepath.Base(f.Path), f.K, cnt.every32, cnt.outputs, cnt.every128, cnt.outputs, f.Model))
	}
	summary["captures_files"] = float64(len(files))
	summary["captures_total"] = float64(2 * total.outputs)
	summary["captures_bitexact"] = float64(total.every32 + total.every128)
	summary["captures_every32_bitexact"] = float64(total.every32)
	summary["captures_every128_bitexact"] = float64(total.every128)
	summary["captures_ref_mismatch"] = float64(total.refMismatch)
	return nil
}

// contractionCaptureVariants are the series emitted from the captures.
var contractionCaptureVariants = []string{
	"h200 cublas", "h200 cublas_fast", "h200 every32", "h200 every128",
	"sim wgmma never (h200 inputs)", "sim wgmma every128 (h200 inputs)",
}

// contractionCaptureFile checks one capture file through golden.LongResults
// (the file's model, contractionCapturesModel): it counts the bit-exact
// every32 / every128 outputs and the refs that differ from accum.ExactDot,
// and returns per variant the relative L2 error of each row over its
// captured columns.
func contractionCaptureFile(ctx context.Context, f *golden.LongFile) (contractionCaptureCount, map[string][]float64, error) {
	var cnt contractionCaptureCount
	res, err := golden.LongResults(ctx, f)
	if err != nil {
		return cnt, nil, err
	}
	// Per row I: the outputs of each variant and the refs, over the
	// captured columns J.
	byRow := map[int]map[string][]float64{}
	f32 := func(bits uint32) float64 { return float64(math.Float32frombits(bits)) }
	for _, lr := range res {
		o := lr.Out
		cnt.outputs++
		if math.Float32bits(lr.Every32) == o.Every32 {
			cnt.every32++
		}
		if math.Float32bits(lr.Every128) == o.Every128 {
			cnt.every128++
		}
		if lr.Exact != o.Ref {
			cnt.refMismatch++
		}
		r := byRow[o.I]
		if r == nil {
			r = map[string][]float64{}
			byRow[o.I] = r
		}
		r["ref"] = append(r["ref"], o.Ref)
		r["h200 cublas"] = append(r["h200 cublas"], f32(o.Cublas))
		r["h200 cublas_fast"] = append(r["h200 cublas_fast"], f32(o.CublasFast))
		r["h200 every32"] = append(r["h200 every32"], f32(o.Every32))
		r["h200 every128"] = append(r["h200 every128"], f32(o.Every128))
		r["sim wgmma never (h200 inputs)"] = append(r["sim wgmma never (h200 inputs)"], float64(lr.Never))
		r["sim wgmma every128 (h200 inputs)"] = append(r["sim wgmma every128 (h200 inputs)"], float64(lr.Every128))
	}
	rowIDs := make([]int, 0, len(byRow))
	for i := range byRow {
		rowIDs = append(rowIDs, i)
	}
	sort.Ints(rowIDs)
	rows := map[string][]float64{}
	for _, i := range rowIDs {
		for _, name := range contractionCaptureVariants {
			rel, _ := contractionRelErr(byRow[i][name], byRow[i]["ref"])
			rows[name] = append(rows[name], rel)
		}
	}
	return cnt, rows, nil
}
