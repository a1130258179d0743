package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func TestT975(t *testing.T) {
	for _, df := range []float64{1, 2, 3, 7, 10, 29, 30, 31, 40, 60, 120, 1000, 1e6} {
		want := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(0.975)
		if got := T975(df); math.Abs(got-want) > 2e-6 {
			t.Errorf("T975(%g) = %.7f, gonum %.7f", df, got, want)
		}
	}
	if got := T975(math.Inf(1)); math.Abs(got-1.959964) > 1e-6 {
		t.Errorf("T975(inf) = %g", got)
	}
}

// drawClusters draws h clusters of n trials whose success probabilities
// vary between clusters: logit p_h ~ N(logit p, tau²).
func drawClusters(rng *rand.Rand, h, n int, p, tau float64) []Cluster {
	cs := make([]Cluster, h)
	for i := range cs {
		lp := math.Log(p/(1-p)) + tau*rng.NormFloat64()
		ph := 1 / (1 + math.Exp(-lp))
		var x int
		for j := 0; j < n; j++ {
			if rng.Float64() < ph {
				x++
			}
		}
		cs[i] = Cluster{N: n, Sum: float64(x)}
	}
	return cs
}

// The known answer of drawClusters: E[p_h], by integration over the
// normal (Gauss–Hermite-free: a fine midpoint rule).
func meanP(p, tau float64) float64 {
	if tau == 0 {
		return p
	}
	var s, w float64
	for z := -8.0; z <= 8; z += 0.001 {
		d := math.Exp(-z * z / 2)
		s += d / (1 + math.Exp(-(math.Log(p/(1-p)) + tau*z)))
		w += d
	}
	return s / w
}

// The 95 % interval of Proportion covers the known answer at least about
// 95 % of the time for the needle experiments' shape (8 haystacks of 12-13
// trials): 95-97 % when the haystacks differ, conservative (about 98.6 %)
// when they do not (t on 7 degrees of freedom, where the binomial would
// do); the binomial interval (every trial independent) covers 62-89 % when
// they differ.
func TestProportionCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const reps = 4000
	for _, c := range []struct {
		p, tau float64
		h, n   int
	}{{0.5, 0, 8, 12}, {0.5, 0.8, 8, 12}, {0.85, 0.6, 8, 13}, {0.3, 1.0, 16, 25}} {
		truth := meanP(c.p, c.tau)
		var cover, coverBinom int
		for r := 0; r < reps; r++ {
			cs := drawClusters(rng, c.h, c.n, c.p, c.tau)
			iv := Proportion(cs)
			if iv.Lo <= truth && truth <= iv.Hi {
				cover++
			}
			lo, hi := wilson(iv.Est, float64(c.h*c.n), z975)
			if lo <= truth && truth <= hi {
				coverBinom++
			}
		}
		got, binom := float64(cover)/reps, float64(coverBinom)/reps
		t.Logf("p %.2f tau %.1f, %d×%d: coverage %.3f (binomial Wilson %.3f)", c.p, c.tau, c.h, c.n, got, binom)
		if got < 0.93 || got > 0.99 {
			t.Errorf("p %.2f tau %.1f, %d clusters of %d: the 95%% interval covers the known answer %.3f in %.1f%% of %d runs", c.p, c.tau, c.h, c.n, truth, 100*got, reps)
		}
	}
}

// The interval of Mean covers the known mean about 95 % of the time, on
// the linear and the log scale, for a positive quantity whose level varies
// between clusters (an error growing with the haystack's value mean).
func TestMeanCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const reps, h, n = 4000, 8, 12
	for _, positive := range []bool{false, true} {
		var cover int
		for r := 0; r < reps; r++ {
			cs := make([]Cluster, h)
			for i := range cs {
				level := 0.1 * math.Exp(0.3*rng.NormFloat64()) // the cluster's own level
				var s float64
				for j := 0; j < n; j++ {
					s += level * math.Exp(0.2*rng.NormFloat64()-0.02)
				}
				cs[i] = Cluster{N: n, Sum: s}
			}
			iv := Mean(cs, positive)
			truth := 0.1 * math.Exp(0.045) // E[level]·E[trial factor] = 0.1·e^(0.3²/2)·1
			if iv.Lo <= truth && truth <= iv.Hi {
				cover++
			}
			if positive && iv.Lo <= 0 {
				t.Fatalf("log-scale interval reaches %g", iv.Lo)
			}
		}
		got := float64(cover) / reps
		t.Logf("positive %v: coverage %.3f", positive, got)
		if got < 0.92 || got > 0.98 {
			t.Errorf("positive %v: the 95%% interval covers the known mean in %.1f%% of %d runs", positive, 100*got, reps)
		}
	}
}

func TestEdges(t *testing.T) {
	if iv := Proportion(nil); !math.IsNaN(iv.Est) {
		t.Errorf("no clusters: %+v", iv)
	}
	iv := Proportion([]Cluster{{N: 10, Sum: 10}, {N: 10, Sum: 10}})
	if iv.Est != 1 || iv.Hi != 1 || !(iv.Lo > 0.8 && iv.Lo < 0.9) || iv.NEff != 20 {
		t.Errorf("all successes: %+v (want the binomial Wilson interval over 20 trials, lo 0.839)", iv)
	}
	iv = Mean([]Cluster{{N: 5, Sum: 1}}, true)
	if iv.Est != 0.2 || !math.IsNaN(iv.Lo) {
		t.Errorf("one cluster: %+v (want no interval)", iv)
	}
}
