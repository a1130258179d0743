package pmath

// wedgeBelow reports y < Exp(t), the ziggurat's wedge test, for any t ≤ 0
// (the wedges have t = −x²/2 with |x| < zr, so t > −zr²/2 ≈ −5.926): it
// compares y with a cheap approximation a of e^t first and calls Exp only
// when y lies within a·wedgeMargin of a (or t is below the table's
// range), which TestWedgeExact finds in none of 270 000 wedge tests. The
// answer is always that of the exact comparison.
//
// Why the margin holds: |a − e^t| ≤ 2·10^-12·e^t (expNear), and Exp is
// within 2 ulps, |Exp(t) − e^t| ≤ 2^-51·e^t, so |a − Exp(t)| ≤ 3·10^-12·a.
// The computed bounds lo = a − a·2^-32 and hi = a + a·2^-32 are each
// rounded once (a·2^-32 is exact), so lo ≤ a·(1 − 2^-32 + 2^-53) <
// a·(1 − 3·10^-12) ≤ Exp(t) and hi ≥ a·(1 + 2^-32 − 2^-53) > Exp(t).
// Hence y < lo implies y < Exp(t), and y > hi implies y > Exp(t); only
// lo ≤ y ≤ hi needs Exp.
func wedgeBelow(y, t float64) bool {
	if a, ok := expNear(t); ok {
		d := a * wedgeMargin
		switch {
		case y < float64(a-d):
			return true
		case y > float64(a+d):
			return false
		}
	}
	return y < Exp(t)
}

// wedgeMargin is the relative half-width of wedgeBelow's undecided band,
// 2^-32 ≈ 2.3·10^-10: about 80 times expNear's error bound plus Exp's.
const wedgeMargin = 0x1p-32

// expTable[k] is Exp(−k/16), within 2 ulps of e^(−k/16), for the wedges'
// range of t, [−zr²/2, 0] ⊂ [−95.5/16, 0].
var expTable [96]float64

func init() {
	for k := range expTable {
		expTable[k] = Exp(-float64(k) / 16)
	}
}

// expNear returns e^t within 2·10^-12 relative and true for t in
// (−95.5/16, 0], false for t ≤ −6 and NaN (either, with the same bound, in
// between); it is not portable-exact,
// only wedgeBelow's bounds use it. t is split as −k/16 + r, k =
// round(−16·t), |r| ≤ 1/32 (r = t + k/16 is rounded once, by at most
// 2^-59); e^t is expTable[k] (2 ulps) times the Taylor polynomial of e^r
// to r^5 in Estrin's form (the dropped terms, about |r|^6/6!, are below
// 1.4·10^-12 of e^r; the rounding of its 9 operations, of the constants
// and of the product with expTable[k] adds below 15·2^-53 relative). In
// all, below 1.5·10^-12. TestExpNear checks the bound against Exp.
func expNear(t float64) (float64, bool) {
	s := float64(-16*t) + 0.5
	if !(s >= 0 && s < float64(len(expTable))) {
		return 0, false
	}
	k := int(s) // floor, s ≥ 0
	r := float64(t + float64(k)/16)
	r2 := float64(r * r)
	p := float64(float64(1+r) + float64(r2*float64(float64(0.5+float64(r*(1.0/6)))+float64(r2*float64(1.0/24+float64(r*(1.0/120)))))))
	return float64(expTable[k] * p), true
}
