// Package stats computes the intervals fp8lab reports for results gathered
// in clusters: trials that share a haystack are not independent, so an
// interval from the binomial (or per-trial) variance alone is too narrow.
// Every interval here is a 95 % interval from the between-cluster
// variation, with Student's t on H − 1 degrees of freedom for H clusters.
//
// Only +, −, ×, ÷, sqrt, pmath.Exp and a table of t quantiles are used, so
// the results are the same bits on every platform.
package stats

import (
	"math"

	"github.com/fp8lab/fp8lab/internal/pmath"
)

// Cluster is one cluster's results: N trials, Sum the sum of the quantity
// over them (the number of successes for a proportion).
type Cluster struct {
	N   int
	Sum float64
}

// Interval is an estimate with its 95 % interval, the number of clusters
// it came from, and the effective number of independent trials (for a
// proportion: the binomial sample size with the same variance).
type Interval struct {
	Est, Lo, Hi float64
	Clusters    int
	NEff        float64
}

// T975 returns Student's t quantile 0.975 on df degrees of freedom (df ≥ 1;
// values below 1 are read as 1): a table to 6 digits for df ≤ 30, then the
// Cornish–Fisher expansion of Abramowitz & Stegun 26.7.5 to df^-4 (error
// below 1e-6 from df 31 on); +Inf df gives the normal 1.959964.
func T975(df float64) float64 {
	if df < 1 || df != df {
		df = 1
	}
	if df <= 30 && df == math.Floor(df) {
		return t975[int(df)-1]
	}
	if math.IsInf(df, 1) {
		return z975
	}
	z := z975
	z2 := z * z
	g1 := (z2 + 1) * z / 4
	g2 := ((5*z2+16)*z2 + 3) * z / 96
	g3 := (((3*z2+19)*z2+17)*z2 - 15) * z / 384
	g4 := ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) * z / 92160
	return z + g1/df + g2/(df*df) + g3/(df*df*df) + g4/(df*df*df*df)
}

const z975 = 1.959963984540054

var t975 = [30]float64{12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
	2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
	2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272}

// ratioVariance returns the estimate Σ Sum / Σ N and its with-replacement
// cluster variance H/(H−1) Σ_h (N_h/N)² (mean_h − est)² (the ratio
// estimator of survey sampling), 0 for fewer than two clusters.
func ratioVariance(cs []Cluster) (est, v float64, n int, h int) {
	var sum float64
	for _, c := range cs {
		if c.N > 0 {
			n += c.N
			sum += c.Sum
			h++
		}
	}
	if n == 0 {
		return math.NaN(), 0, 0, 0
	}
	est = sum / float64(n)
	if h < 2 {
		return est, 0, n, h
	}
	for _, c := range cs {
		if c.N == 0 {
			continue
		}
		w := float64(c.N) / float64(n)
		d := c.Sum/float64(c.N) - est
		v += w * w * d * d
	}
	return est, v * float64(h) / float64(h-1), n, h
}

// Proportion returns the proportion of successes over the clusters with
// its 95 % interval: Wilson's score interval at the effective sample size
// n* = p(1 − p)/V (at most the number of trials), V the between-cluster
// variance of the ratio estimate, with t on H − 1 degrees of freedom in
// place of the normal quantile (after Korn and Graubard, Survey
// Methodology 24(2), 1998). Where the clusters carry no information on
// their spread (one cluster, p = 0 or 1, or every cluster alike) it is the
// binomial Wilson interval over all trials (n* = the trials), which is then
// too narrow if the clusters differ; NEff says which was used. No trials
// gives NaN.
func Proportion(cs []Cluster) Interval {
	p, v, n, h := ratioVariance(cs)
	if n == 0 {
		return Interval{Est: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	neff, z := float64(n), z975
	if h >= 2 {
		z = T975(float64(h - 1))
	}
	if h >= 2 && v > 0 && p > 0 && p < 1 {
		neff = min(float64(n), p*(1-p)/v)
	} else {
		z = z975
	}
	lo, hi := wilson(p, neff, z)
	return Interval{Est: p, Lo: lo, Hi: hi, Clusters: h, NEff: neff}
}

// wilson returns Wilson's score interval for a proportion p over n trials
// with the quantile z.
func wilson(p, n, z float64) (lo, hi float64) {
	z2 := z * z
	den := 1 + z2/n
	mid := (p + z2/(2*n)) / den
	half := z * math.Sqrt(p*(1-p)/n+z2/(4*n*n)) / den
	return max(0, mid-half), min(1, mid+half)
}

// Mean returns the mean of a quantity over the clusters' trials with its
// 95 % interval est ± t·√V (V the between-cluster variance of the ratio
// estimate, t on H − 1 degrees of freedom). With positive set (a quantity
// that is positive by nature: an error, a ratio) the interval is taken on
// the log scale, est·exp(±t·√V/est), so that it stays positive. Fewer than
// two clusters give an interval of NaN; no trials give NaN throughout.
func Mean(cs []Cluster, positive bool) Interval {
	est, v, n, h := ratioVariance(cs)
	if n == 0 {
		return Interval{Est: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	out := Interval{Est: est, Clusters: h, NEff: float64(n), Lo: math.NaN(), Hi: math.NaN()}
	if h < 2 {
		return out
	}
	half := T975(float64(h-1)) * math.Sqrt(v)
	if positive && est > 0 {
		f := pmath.Exp(half / est)
		out.Lo, out.Hi = est/f, est*f
	} else {
		out.Lo, out.Hi = est-half, est+half
	}
	return out
}
