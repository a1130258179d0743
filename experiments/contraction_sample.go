package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
)

// The sampling library of the contraction experiment: rows of a softmax-like
// P (or other distributions) as e4m3 codes, drawn exactly from their
// distributions (alias tables, the P row's tail by binomials).

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
	a, b  *pmath.AliasTable // samplers of a (nil for pv: see pvRow) and of b
}

// newContractionGen prepares the samplers of a distribution.
func newContractionGen(dist string, sigma float64) (*contractionGen, error) {
	g := &contractionGen{dist: dist, sigma: sigma}
	normal := func(mu float64) *pmath.AliasTable {
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

// draw returns one row a of k codes and cols columns b of k codes each,
// drawn one code at a time from rng: the definition that
// contractionStream's draws from the PCG itself (pmath.AliasPCG) are
// tested against.
func (g *contractionGen) draw(rng *rand.Rand, k, cols int) (a []uint16, b [][]uint16) {
	a = make([]uint16, k)
	if g.a != nil {
		for i := range a {
			a[i] = uint16(g.a.Draw(rng.Uint64()))
		}
	} else {
		g.pvRow(context.Background(), rng, a)
	}
	b = make([][]uint16, cols)
	for j := range b {
		b[j] = make([]uint16, k)
		for i := range b[j] {
			b[j][i] = uint16(g.b.Draw(rng.Uint64()))
		}
	}
	return a, b
}

// row draws the row a of k codes, the first draw of a trial, from src. It
// returns nil once ctx is cancelled, looking every 65536 elements.
func (g *contractionGen) row(ctx context.Context, src *rand.PCG, k int) []uint16 {
	a := make([]uint16, k)
	if g.a != nil {
		for i := 0; i < k; i += 65536 {
			if ctx.Err() != nil {
				return nil
			}
			pmath.AliasPCG(a[i:min(i+65536, k)], src, g.a)
		}
	} else if !g.pvRow(ctx, rand.New(src), a) { // rand.New(src) draws src's stream
		return nil
	}
	return a
}

// column fills b with one column of codes from src, drawn after the row
// and the columns before it.
func (g *contractionGen) column(src *rand.PCG, b []uint16) {
	pmath.AliasPCG(b, src, g.b)
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
		e[i] = pmath.NormFloat64(rng)
		zmax = max(zmax, e[i])
	}
	for i := range e {
		e[i] = g.sigma * (e[i] - zmax)
	}
	pmath.Exps(e, e) // P_i · den, in (0, 1]: Exp's bits, several at a time
	den := 0.0
	for _, x := range e {
		den += x
	}
	logMax := -pmath.Log(den) // log of the row's largest P
	for range contractionPVRows - 1 {
		if ctx.Err() != nil {
			return false
		}
		logMax = max(logMax, contractionPVLogMaxP(rng, len(a), g.sigma))
	}
	scale := 448 * pmath.Exp(-pmath.Log(den)-logMax) // pscale / den
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
			z[i] = pmath.NormFloat64(rng)
			zmax = max(zmax, z[i])
		}
		sum := 0.0
		for _, x := range z {
			sum += pmath.Exp(sigma * (x - zmax))
		}
		return -pmath.Log(sum)
	}
	if k <= 4*contractionPVTail {
		return full()
	}
	q := float64(contractionPVTail) / float64(k)
	n := contractionBinomial(rng, k, q)
	if n == 0 {
		return full() // probability e^-32
	}
	t := math.Sqrt2 * pmath.Erfcinv(2*q)
	tail := make([]float64, n)
	zmax := math.Inf(-1)
	for i := range tail {
		u := 1 - rng.Float64() // (0, 1]
		tail[i] = math.Sqrt2 * pmath.Erfcinv(2*q*u)
		zmax = max(zmax, tail[i])
	}
	sum := 0.0
	for _, x := range tail {
		sum += pmath.Exp(sigma * (x - zmax))
	}
	phi := func(x float64) float64 { return 0.5 * pmath.Erfc(-x/math.Sqrt2) }
	nb := float64(k - n)
	m1 := pmath.Exp(sigma*sigma/2-sigma*zmax) * phi(t-sigma) / (1 - q)
	m2 := pmath.Exp(2*sigma*sigma-2*sigma*zmax) * phi(t-2*sigma) / (1 - q)
	bulk := nb*m1 + math.Sqrt(nb*max(0, m2-m1*m1))*pmath.NormFloat64(rng)
	return -pmath.Log(sum + max(bulk, 0))
}

// contractionBinomial draws from Binomial(n, p) by inversion (for a small
// mean n·p: the loop runs about n·p times).
func contractionBinomial(rng *rand.Rand, n int, p float64) int {
	u := rng.Float64()
	pmf := pmath.Exp(float64(n) * math.Log1p(-p))
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
	q := -math.Expm1(pmath.Log(u) / float64(n))
	if q <= 0 {
		return math.Inf(-1) // u == 1
	}
	return math.Sqrt2 * pmath.Erfcinv(2*q)
}

// contractionNormalMass returns P(lo ≤ Z < hi) for Z ~ N(0,1), through the
// complementary error function on the side that keeps relative precision in
// the tails.
func contractionNormalMass(lo, hi float64) float64 {
	if hi <= lo {
		return 0
	}
	if lo >= 0 {
		return 0.5 * (pmath.Erfc(lo/math.Sqrt2) - pmath.Erfc(hi/math.Sqrt2))
	}
	if hi <= 0 {
		return 0.5 * (pmath.Erfc(-hi/math.Sqrt2) - pmath.Erfc(-lo/math.Sqrt2))
	}
	return 1 - 0.5*pmath.Erfc(hi/math.Sqrt2) - 0.5*pmath.Erfc(-lo/math.Sqrt2)
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

// newContractionAlias builds the alias sampler (pmath.AliasTable: one
// 64-bit draw, its top 8 bits a column, its low 56 bits compared with the
// column's threshold) of the (unnormalised) probabilities p by Vose's
// algorithm.
func newContractionAlias(p *[256]float64) *pmath.AliasTable {
	const one = 1 << 56
	var s pmath.AliasTable
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
		s.Thr[l] = uint64(q[l] * one)
		s.Alias[l] = uint8(g)
		q[g] -= 1 - q[l]
		if q[g] < 1 {
			large = large[:len(large)-1]
			small = append(small, g)
		}
	}
	for _, i := range append(small, large...) { // leftovers are 1 up to rounding
		s.Thr[i], s.Alias[i] = one, uint8(i)
	}
	return &s
}
