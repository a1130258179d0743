package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
)

// contractionExec runs the contraction experiment with command-line style
// values and returns what it recorded.
func contractionExec(t *testing.T, e Contraction, seed uint64, args map[string]string) (*sim.Recorder, error) {
	t.Helper()
	v, err := sim.ParseValues(e.Params(), args)
	if err != nil {
		t.Fatalf("ParseValues(%v): %v", args, err)
	}
	rec := &sim.Recorder{}
	_, err = sim.Execute(context.Background(), e, v, seed, rec)
	return rec, err
}

// TestContractionTinyKMatchesAccum replays every trial of a small run with
// the trial's generator and checks each point against accum.Chain and
// accum.ExactDot called directly.
func TestContractionTinyKMatchesAccum(t *testing.T) {
	const seed, trials, cols = 7, 5, 3
	for _, dist := range contractionDists {
		t.Run(dist, func(t *testing.T) {
			rec, err := contractionExec(t, Contraction{}, seed, map[string]string{
				"K": "32,96,200", "trials": fmt.Sprint(trials), "cols": fmt.Sprint(cols),
				"dist": dist, "captures": "off", "kBlockN": "64",
			})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]sim.Point{}
			for _, p := range rec.Points() {
				got[fmt.Sprintf("%s@%g", p.Series, p.X)] = p
			}
			gen, err := newContractionGen(dist, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []int{32, 96, 200} {
				key := fmt.Sprintf("contraction %s K=%d", dist, k)
				sum := make([]float64, len(contractionAllSeries))
				for tr := range trials {
					a, b := gen.draw(sim.TrialRand(seed, key, tr), k, cols)
					for si, s := range contractionAllSeries {
						promote := s.promote
						if promote < 0 {
							promote = 64
						}
						m := accum.MustLookup(s.model)
						var num, den float64
						for j := range b {
							ref := accum.ExactDot(fp8.FormatE4M3, a, b[j], 0)
							d := float64(accum.Chain(m, a, b[j], 0, promote))
							num += (d - ref) * (d - ref)
							den += ref * ref
						}
						sum[si] += math.Sqrt(num / den)
					}
				}
				for si, s := range contractionAllSeries {
					name := fmt.Sprintf("%s@%d", s.label(64), k)
					p, ok := got[name]
					if !ok {
						t.Fatalf("no point %s", name)
					}
					want := sum[si] / trials
					if math.Abs(p.Y-want) > 1e-12*math.Abs(want) {
						t.Errorf("%s: y = %g, replay gives %g", name, p.Y, want)
					}
					if p.Extra["p99"] < p.Extra["p50"] || p.Extra["max"] < p.Extra["p99"] || p.Y > p.Extra["max"] {
						t.Errorf("%s: inconsistent statistics %v (mean %g)", name, p.Extra, p.Y)
					}
				}
			}
		})
	}
}

// TestContractionOneStep checks the plumbing on one instruction by hand: a
// K = 32 dot product never promoted is one wgmma step from zero, which for
// small integers is exact.
func TestContractionOneStep(t *testing.T) {
	a, b := make([]uint16, 32), make([]uint16, 32)
	want := 0.0
	for i := range a {
		x, y := float32(i%5), float32(1+i%3)
		a[i] = uint16(fp8.EncodeE4M3(x, fp8.SatFinite))
		b[i] = uint16(fp8.EncodeE4M3(-y, fp8.SatFinite))
		want -= float64(x * y)
	}
	models := []accum.Model{accum.MustLookup("sm90.wgmma.e4m3.f32"), accum.MustLookup("fp32")}
	tr := contractionRun(context.Background(), models, []int{0, 0}, a, [][]uint16{b})
	for i, rel := range tr.rel {
		if rel != 0 || tr.bias[i] != 0 {
			t.Errorf("%s: rel %g bias %g on an exact sum %g", models[i].Name(), rel, tr.bias[i], want)
		}
	}
}

// TestContractionCaptures reproduces the H200 long-contraction captures'
// every32 and every128 outputs bit for bit: fp8lab's own (testdata/h200-fresh,
// always in the repository) and the shared ones (../shared/golden/h200, when
// that folder is there).
func TestContractionCaptures(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dir string }{
		{"fresh", filepath.Join(root, "testdata", "h200-fresh")},
		{"shared", filepath.Join(root, "..", "shared", "golden", "h200")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if paths, _ := filepath.Glob(filepath.Join(tc.dir, "*long_e4m3_K*")); len(paths) == 0 {
				t.Skipf("captures not checked: no long_e4m3_K* files in %s (not in this checkout)", tc.dir)
			}
			contractionCheckCaptures(t, tc.dir)
		})
	}
}

func contractionCheckCaptures(t *testing.T, dir string) {
	// Captures are used at the K asked for only: ask for every K captured.
	var ks []string
	paths, _ := filepath.Glob(filepath.Join(dir, "*long_e4m3_K*"))
	for _, p := range paths {
		if k, _, ok := strings.Cut(strings.SplitN(filepath.Base(p), "_K", 2)[1], "."); ok {
			ks = append(ks, k)
		}
	}
	rec, err := contractionExec(t, Contraction{CapturesDir: dir}, 1, map[string]string{
		"K": strings.Join(ks, ","), "trials": "1", "series": "headline", "cols": "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	s := rec.SummaryValues()
	if s["captures_total"] == 0 || s["captures_bitexact"] != s["captures_total"] {
		t.Errorf("captures: %v of %v outputs bit-exact", s["captures_bitexact"], s["captures_total"])
	}
	if s["captures_ref_mismatch"] != 0 {
		t.Errorf("%v captured refs differ from accum.ExactDot", s["captures_ref_mismatch"])
	}
	t.Logf("%s: %v of %v outputs bit-exact in %v files", dir, s["captures_bitexact"], s["captures_total"], s["captures_files"])
	series := map[string]bool{}
	for _, p := range rec.Points() {
		series[p.Series] = true
	}
	for _, name := range contractionCaptureVariants {
		if !series[name] {
			t.Errorf("no series %q", name)
		}
	}
	// The model's every128 on the captured inputs is the H200's every128.
	for _, p := range rec.Points() {
		if p.Series == "sim wgmma every128 (h200 inputs)" {
			for _, q := range rec.Points() {
				if q.Series == "h200 every128" && q.X == p.X && q.Y != p.Y {
					t.Errorf("K=%g: model every128 error %g, H200 every128 %g", p.X, p.Y, q.Y)
				}
			}
		}
	}
}

// TestContractionCapturesMissing checks that a missing folder is a note, not
// an error.
func TestContractionCapturesMissing(t *testing.T) {
	rec, err := contractionExec(t, Contraction{CapturesDir: t.TempDir()}, 1, map[string]string{
		"K": "64", "trials": "2", "series": "wgmma-never",
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rec.SummaryValues()["captures_total"]; ok {
		t.Error("captures_total reported without captures")
	}
	if notes := strings.Join(rec.Notes(), "\n"); !strings.Contains(notes, "captures not used") {
		t.Errorf("no note on the missing captures; notes: %q", notes)
	}
}

// TestContractionSeeds checks that a seed determines every number, whatever
// the number of cores, and that another seed changes them.
func TestContractionSeeds(t *testing.T) {
	args := map[string]string{"K": "256,1024", "trials": "6", "captures": "off", "series": "headline"}
	run := func(seed uint64, procs int) []sim.Point {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		rec, err := contractionExec(t, Contraction{}, seed, args)
		if err != nil {
			t.Fatal(err)
		}
		return rec.Points()
	}
	same := func(a, b []sim.Point) bool {
		return slices.EqualFunc(a, b, func(p, q sim.Point) bool {
			return p.Series == q.Series && p.X == q.X && p.Y == q.Y && fmt.Sprint(p.Extra) == fmt.Sprint(q.Extra)
		})
	}
	a, b, c := run(3, 1), run(3, 2), run(4, 2)
	if !same(a, b) {
		t.Error("seed 3 gives different points on 1 and 2 cores")
	}
	if same(a, c) {
		t.Error("seeds 3 and 4 give the same points")
	}
}

// TestContractionParams checks that out-of-range values are rejected with a
// message naming the parameter and the limit.
func TestContractionParams(t *testing.T) {
	params := Contraction{}.Params()
	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"K": "0"}, `parameter "K": 0 is below the minimum 1`},
		{map[string]string{"K": "1024,8388608"}, `parameter "K": 8388608 is above the maximum 4194304`},
		{map[string]string{"trials": "0"}, `parameter "trials": 0 is below the minimum 1`},
		{map[string]string{"cols": "65"}, `parameter "cols": 65 is above the maximum 64`},
		{map[string]string{"dist": "cauchy"}, `parameter "dist": "cauchy" is not one of`},
		{map[string]string{"series": "sm70"}, `parameter "series": "sm70" is not one of`},
		{map[string]string{"logit-std": "-1"}, `parameter "logit-std": -1 is below the minimum 0`},
		{map[string]string{"logit-std": "9"}, `parameter "logit-std": 9 is above the maximum 8`},
		{map[string]string{"kBlockN": "16"}, `parameter "k-block-n": 16 is below the minimum 32`},
	} {
		_, err := sim.ParseValues(params, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	// A tile that is not a whole number of wgmma instructions fails the run.
	_, err := contractionExec(t, Contraction{}, 1, map[string]string{"K": "64", "trials": "1", "kBlockN": "100", "captures": "off"})
	if err == nil || !strings.Contains(err.Error(), `"k-block-n"`) || !strings.Contains(err.Error(), "multiple") {
		t.Errorf("kBlockN 100: error %v, want one naming kBlockN and the multiple of 32", err)
	}
}

// TestContractionCancel checks that a cancelled run stops promptly.
func TestContractionCancel(t *testing.T) {
	v, err := sim.ParseValues(Contraction{}.Params(), map[string]string{"K": "1048576", "trials": "1000", "captures": "off"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = sim.Execute(ctx, Contraction{}, v, 1, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v, want the context's", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("cancelled run took %v", d)
	}
}

// TestContractionAliasMatchesCast checks the code sampler against the cast
// of directly drawn values: the masses sum to 1, and the frequencies of both
// ways agree with the masses (a chi-square bound far in the tail).
func TestContractionAliasMatchesCast(t *testing.T) {
	const n = 400000
	for _, tc := range []struct {
		name string
		mass func(lo, hi float64) float64
		draw func(*rand.Rand) float64
	}{
		{"normal", contractionNormalMass, func(r *rand.Rand) float64 { return r.NormFloat64() }},
		{"normal(0.5,1)", func(lo, hi float64) float64 { return contractionNormalMass(lo-0.5, hi-0.5) },
			func(r *rand.Rand) float64 { return 0.5 + r.NormFloat64() }},
		{"uniform", func(lo, hi float64) float64 { return max(0, min(hi, 1)-max(lo, 0)) }, func(r *rand.Rand) float64 { return r.Float64() }},
		{"normal×300", func(lo, hi float64) float64 { return contractionNormalMass(lo/300, hi/300) },
			func(r *rand.Rand) float64 { return 300 * r.NormFloat64() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := contractionCodeMass(tc.mass)
			total := 0.0
			for _, x := range p {
				total += x
			}
			if math.Abs(total-1) > 1e-12 {
				t.Fatalf("masses sum to %v", total)
			}
			s := newContractionAlias(p)
			r := rand.New(rand.NewPCG(1, 2))
			var alias, cast [256]int
			for range n {
				alias[s.Draw(r.Uint64())]++
				cast[fp8.EncodeE4M3(float32(tc.draw(r)), fp8.SatFinite)]++
			}
			for name, h := range map[string]*[256]int{"alias": &alias, "cast": &cast} {
				chi2, dof := 0.0, 0
				for c := range h {
					e := p[c] * n
					if e < 5 {
						if e < 1e-9 && h[c] > 0 {
							t.Errorf("%s: code %#02x drawn %d times, mass %g", name, c, h[c], p[c])
						}
						continue
					}
					chi2 += (float64(h[c]) - e) * (float64(h[c]) - e) / e
					dof++
				}
				// Mean dof, sd √(2 dof): 6 sd is far in the tail.
				if lim := float64(dof) + 6*math.Sqrt(2*float64(dof)); chi2 > lim {
					t.Errorf("%s: chi-square %.1f over %d bins, limit %.1f", name, chi2, dof, lim)
				}
			}
		})
	}
}

// TestContractionPVMatchesCaptureScript checks the pv row sampler against a
// brute-force run of the capture script's recipe (64 softmax rows, one
// pscale = 448 / max, cast to e4m3): the mean fraction of zero codes, the
// mean of the row sum / K and of the row maximum agree within 5 standard
// errors.
func TestContractionPVMatchesCaptureScript(t *testing.T) {
	const k, trials, sigma = 1024, 60, 2.0
	type stats struct{ zeros, mean, max []float64 }
	add := func(s *stats, row []uint16) {
		z, sum, mx := 0, 0.0, 0.0
		for _, c := range row {
			v := float64(fp8.E4M3(c).Float32())
			if v == 0 {
				z++
			}
			sum += v
			mx = max(mx, v)
		}
		s.zeros = append(s.zeros, float64(z)/k)
		s.mean = append(s.mean, sum/k)
		s.max = append(s.max, mx)
	}
	var brute, gen stats
	r := rand.New(rand.NewPCG(5, 6))
	logits := make([]float64, 64*k)
	for range trials {
		// tc_probe.py: logits = randn(64, K)·2; P = softmax per row;
		// pscale = 448 / P.amax(); Pq = (P·pscale).clamp(max=448) cast.
		p := make([]float64, len(logits))
		amax := 0.0
		for row := range 64 {
			z := logits[row*k : (row+1)*k]
			m := math.Inf(-1)
			for i := range z {
				z[i] = sigma * r.NormFloat64()
				m = max(m, z[i])
			}
			den := 0.0
			for i := range z {
				den += math.Exp(z[i] - m)
			}
			for i := range z {
				p[row*k+i] = math.Exp(z[i]-m) / den
				amax = max(amax, p[row*k+i])
			}
		}
		row := make([]uint16, k) // row 0, as any row
		for i := range row {
			row[i] = uint16(fp8.EncodeE4M3(float32(min(p[i]*448/amax, 448)), fp8.SatFinite))
		}
		add(&brute, row)
	}
	g, err := newContractionGen("pv", sigma)
	if err != nil {
		t.Fatal(err)
	}
	for range 4 * trials {
		a, _ := g.draw(r, k, 1)
		add(&gen, a)
	}
	meanSE := func(x []float64) (float64, float64) {
		m, v := 0.0, 0.0
		for _, e := range x {
			m += e
		}
		m /= float64(len(x))
		for _, e := range x {
			v += (e - m) * (e - m)
		}
		return m, math.Sqrt(v / float64(len(x)-1) / float64(len(x)))
	}
	for _, c := range []struct {
		name string
		b, g []float64
	}{{"zero fraction", brute.zeros, gen.zeros}, {"row mean", brute.mean, gen.mean}, {"row max", brute.max, gen.max}} {
		mb, sb := meanSE(c.b)
		mg, sg := meanSE(c.g)
		if d := math.Abs(mb - mg); d > 5*math.Hypot(sb, sg) {
			t.Errorf("%s: capture recipe %.4g ± %.2g, sampler %.4g ± %.2g", c.name, mb, sb, mg, sg)
		}
	}
}

// TestContractionMaxNormal checks the sampled maximum of n normals against
// its distribution function Φ(x)^n at the quartiles.
func TestContractionMaxNormal(t *testing.T) {
	const draws = 20000
	r := rand.New(rand.NewPCG(8, 9))
	for _, n := range []int{1, 64, 1 << 20} {
		x := make([]float64, draws)
		for i := range x {
			x[i] = contractionMaxNormal(r, n)
		}
		for _, q := range []float64{0.25, 0.5, 0.75} {
			// x_q solves Φ(x)^n = q.
			xq := math.Sqrt2 * math.Erfcinv(2*-math.Expm1(math.Log(q)/float64(n)))
			below := 0
			for _, e := range x {
				if e <= xq {
					below++
				}
			}
			got := float64(below) / draws
			if se := math.Sqrt(q * (1 - q) / draws); math.Abs(got-q) > 5*se {
				t.Errorf("n=%d: P(max ≤ %.3f) = %.4f, want %.2f", n, xq, got, q)
			}
		}
	}
}

// TestContractionModuleRoot finds the module root from a subfolder.
func TestContractionModuleRoot(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "experiments", "contraction.go")); err != nil {
		t.Errorf("root %s: %v", root, err)
	}
}
