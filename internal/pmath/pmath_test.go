package pmath

import (
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"
)

// ulps returns the distance between a and b in float64 ulps of b.
func ulps(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / (math.Nextafter(math.Abs(b), math.Inf(1)) - math.Abs(b))
}

func TestSpecials(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"Exp(0)", Exp(0), 1}, {"Exp(+Inf)", Exp(inf), inf}, {"Exp(-Inf)", Exp(-inf), 0},
		{"Exp(710)", Exp(710), inf}, {"Exp(-746)", Exp(-746), 0}, {"Exp(1)", Exp(1), math.E},
		{"Exp(709.7)", Exp(709.7), 1.6549840276802644e308}, {"Exp(-745)", Exp(-745), 5e-324},
		{"Log(1)", Log(1), 0}, {"Log(0)", Log(0), -inf}, {"Log(+Inf)", Log(inf), inf},
		{"Log2(8)", Log2(8), 3}, {"Log2(0x1p-1074)", Log2(0x1p-1074), -1074}, {"Log2(0.5)", Log2(0.5), -1},
		{"Log2(0)", Log2(0), -inf},
	} {
		if c.got != c.want && ulps(c.got, c.want) > 1 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for _, f := range []func(float64) float64{Exp, Log, Log2} {
		if !math.IsNaN(f(nan)) {
			t.Errorf("NaN does not give NaN")
		}
	}
	if !math.IsNaN(Log(-1)) || !math.IsNaN(Log2(-1)) {
		t.Errorf("log of a negative number is not NaN")
	}
}

// bigLog returns ln x (log2 x with base2) from 200-bit arithmetic.
func bigLog(x float64, base2 bool) float64 {
	// ln x = 2 atanh((x-1)/(x+1)) in big arithmetic, after scaling by 2^e.
	f, e := math.Frexp(x)
	prec := uint(200)
	bf := new(big.Float).SetPrec(prec).SetFloat64(f)
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	z := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).Sub(bf, one), new(big.Float).SetPrec(prec).Add(bf, one))
	z2 := new(big.Float).SetPrec(prec).Mul(z, z)
	sum := new(big.Float).SetPrec(prec)
	term := new(big.Float).SetPrec(prec).Set(z)
	for k := 1; k < 400; k += 2 {
		sum.Add(sum, new(big.Float).SetPrec(prec).Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k))))
		term.Mul(term, z2)
	}
	sum.Mul(sum, new(big.Float).SetPrec(prec).SetInt64(2))
	ln2, _ := new(big.Float).SetPrec(prec).SetString("0.693147180559945309417232121458176568075500134360255254120680009493393621969694715605863326996418687542")
	sum.Add(sum, new(big.Float).SetPrec(prec).Mul(ln2, new(big.Float).SetPrec(prec).SetInt64(int64(e))))
	if base2 {
		sum.Quo(sum, ln2)
	}
	v, _ := sum.Float64()
	return v
}

func TestAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var worstExp, worstLog, worstLog2, worstBig float64
	for i := 0; i < 200000; i++ {
		// Below 709: amd64's assembly math.Exp overflows to +Inf from
		// about 709.5, short of the true threshold 709.78.
		x := (rng.Float64()*2-1)*740 - 31
		worstExp = max(worstExp, ulps(Exp(x), math.Exp(x)))
		y := math.Exp(rng.Float64()*1400 - 700)
		worstLog = max(worstLog, ulps(Log(y), math.Log(y)))
		if i%200 == 0 {
			worstBig = max(worstBig, ulps(Log(y), bigLog(y, false)))
			worstLog2 = max(worstLog2, ulps(Log2(y), bigLog(y, true)))
			z := 1 + (rng.Float64()-0.5)*1e-6 // near 1, where cancellation would show
			worstBig = max(worstBig, ulps(Log(z), bigLog(z, false)))
			worstLog2 = max(worstLog2, ulps(Log2(z), bigLog(z, true)))
		}
	}
	// math's own functions are within an ulp of the exact value: 3 ulps
	// between the two leaves pmath within 2.
	if worstExp > 3 || worstLog > 3 || worstLog2 > 3 || worstBig > 2 {
		t.Errorf("worst errors: Exp %.2f ulps, Log %.2f from math's; Log %.2f, Log2 %.2f from 200-bit", worstExp, worstLog, worstBig, worstLog2)
	}
	t.Logf("worst errors: Exp %.2f ulps, Log %.2f (vs math); Log %.2f, Log2 %.2f (vs 200-bit)", worstExp, worstLog, worstBig, worstLog2)
}

// TestNormal checks the variates' distribution: the Kolmogorov–Smirnov
// distance of 10^6 draws from the normal CDF, and the tail's share beyond
// the ziggurat's edge (3.4426, where the tail algorithm takes over).
func TestNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 1000000
	x := make([]float64, n)
	var tail int
	for i := range x {
		x[i] = NormFloat64(rng)
		if math.Abs(x[i]) > zr {
			tail++
		}
	}
	sort.Float64s(x)
	var d float64
	for i, v := range x {
		c := 0.5 * math.Erfc(-v/math.Sqrt2)
		d = max(d, math.Abs(c-float64(i)/n), math.Abs(c-float64(i+1)/n))
	}
	// The 0.1 % critical value of the KS distance is 1.95/√n.
	if d > 1.95/math.Sqrt(n) {
		t.Errorf("KS distance %.5f from the normal CDF over %d draws (0.1%% critical value %.5f)", d, n, 1.95/math.Sqrt(n))
	}
	want := math.Erfc(zr/math.Sqrt2) * n // P(|x| > zr)
	if math.Abs(float64(tail)-want) > 5*math.Sqrt(want) {
		t.Errorf("%d draws beyond ±%g, want about %.0f", tail, zr, want)
	}
}

func BenchmarkNormFloat64(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var s float64
	for b.Loop() {
		s += NormFloat64(rng)
	}
	_ = s
}

func BenchmarkRandNormFloat64(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	var s float64
	for b.Loop() {
		s += rng.NormFloat64()
	}
	_ = s
}

func TestErfSpecials(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"Erfc(0)", Erfc(0), 1}, {"Erfc(+Inf)", Erfc(inf), 0}, {"Erfc(-Inf)", Erfc(-inf), 2},
		{"Erfc(28)", Erfc(28), 0}, {"Erfc(-7)", Erfc(-7), 2}, {"Erfc(1e-300)", Erfc(1e-300), 1},
		{"Erfinv(0)", Erfinv(0), 0}, {"Erfinv(1)", Erfinv(1), inf}, {"Erfinv(-1)", Erfinv(-1), -inf},
		{"Erfcinv(1)", Erfcinv(1), 0}, {"Erfcinv(0)", Erfcinv(0), inf}, {"Erfcinv(2)", Erfcinv(2), -inf},
		{"Erfcinv(0x1p-54)", Erfcinv(0x1p-54), 5.921587195794507}, // math's 1 − q rounds to 1: +Inf
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	for name, v := range map[string]float64{
		"Erfc(NaN)": Erfc(nan), "Erfinv(NaN)": Erfinv(nan), "Erfinv(1.5)": Erfinv(1.5),
		"Erfinv(-1.5)": Erfinv(-1.5), "Erfcinv(-0.1)": Erfcinv(-0.1), "Erfcinv(2.1)": Erfcinv(2.1),
	} {
		if !math.IsNaN(v) {
			t.Errorf("%s = %v, want NaN", name, v)
		}
	}
}

// TestErfcAccuracy compares Erfc, Erfinv and Erfcinv with math's (which
// are within an ulp or two of the exact values) in relative terms over
// their ranges, the subnormal tail of Erfc included.
func TestErfcAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rel := func(a, b float64) float64 {
		if a == b {
			return 0
		}
		return math.Abs(a-b) / math.Abs(b)
	}
	var worstErfc, worstErfinv, worstErfcinv, worstAt float64
	for i := 0; i < 100000; i++ {
		var x float64
		switch i % 3 {
		case 0:
			x = rng.Float64()*2 - 1 // the series, both signs
		case 1:
			x = rng.Float64()*10 - 6 // the negative tail and the fraction
		default:
			x = 1 + rng.Float64()*26 // the fraction, up to the underflow
		}
		e := rel(Erfc(x), math.Erfc(x))
		if m := math.Erfc(x); m < 0x1p-1000 { // subnormal and near it: in units of the smallest normal's ulp
			e = math.Abs(Erfc(x)-m) / 0x1p-1022 * 0x1p-52
		}
		if e > worstErfc {
			worstErfc, worstAt = e, x
		}
		y := rng.Float64()*2 - 1
		if i%2 == 0 {
			y = math.Copysign(1-math.Exp(-rng.Float64()*36), y) // near ±1
		}
		worstErfinv = max(worstErfinv, rel(Erfinv(y), math.Erfinv(y)))
		q := math.Exp(-rng.Float64() * 700) // (1e-304, 1]
		if q > 1e-3 {                       // math's Erfcinv(q) is Erfinv(1 − q): it loses digits as q shrinks, +Inf once 1 − q rounds to 1
			worstErfcinv = max(worstErfcinv, rel(Erfcinv(q), math.Erfcinv(q)))
		} else {
			worstErfcinv = max(worstErfcinv, rel(Erfc(Erfcinv(q)), q)/1e2) // the round trip, its condition ~x²
		}
	}
	if worstErfc > 1e-13 || worstErfinv > 1e-13 || worstErfcinv > 1e-13 {
		t.Errorf("worst relative errors from math's: Erfc %.2g (at %v), Erfinv %.2g, Erfcinv %.2g", worstErfc, worstAt, worstErfinv, worstErfcinv)
	}
	t.Logf("worst relative errors from math's: Erfc %.2g (at %v), Erfinv %.2g, Erfcinv %.2g", worstErfc, worstAt, worstErfinv, worstErfcinv)
}
