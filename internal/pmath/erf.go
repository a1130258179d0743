package pmath

// Erfc and Erfcinv are ported from Go's math/erf.go and math/erfinv.go
// (erfc from FreeBSD's s_erf.c; erfinv from Wichura's AS 241, PPND16), with
// Exp and Log from this package and every product rounded by an explicit
// float64 conversion, so that no platform fuses a*b+c. The Go code carries
// these notices:
//
// Copyright 2010, 2017 The Go Authors. All rights reserved.
//
// Redistribution and use in source and binary forms, with or without
// modification, are permitted provided that the following conditions are
// met:
//
//   - Redistributions of source code must retain the above copyright
//     notice, this list of conditions and the following disclaimer.
//   - Redistributions in binary form must reproduce the above copyright
//     notice, this list of conditions and the following disclaimer in the
//     documentation and/or other materials provided with the distribution.
//   - Neither the name of Google LLC nor the names of its contributors may
//     be used to endorse or promote products derived from this software
//     without specific prior written permission.
//
// THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS
// IS" AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED
// TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A
// PARTICULAR PURPOSE ARE DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER
// OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL,
// EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO,
// PROCUREMENT OF SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR
// PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF
// LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING
// NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS
// SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
//
// Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//
// Developed at SunPro, a Sun Microsystems, Inc. business.
// Permission to use, copy, modify, and distribute this
// software is freely granted, provided that this notice
// is preserved.

import "math"

// horner returns c[0] + x·(c[1] + x·(c[2] + …)), each product and sum
// rounded on its own (the order of math's nested expressions).
func horner(x float64, c ...float64) float64 {
	r := c[len(c)-1]
	for i := len(c) - 2; i >= 0; i-- {
		r = c[i] + float64(x*r)
	}
	return r
}

// The coefficients of erfc (s_erf.c): on [0, 0.84375) pp/qq, on
// [0.84375, 1.25) pa/qa, on [1.25, 1/0.35) ra/sa, on [1/0.35, 28) rb/sb
// (the denominators' constant term, 1, first).
const erx = 8.45062911510467529297e-01

var (
	erfPP = [...]float64{1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02, -5.77027029648944159157e-03, -2.37630166566501626084e-05}
	erfQQ = [...]float64{1, 3.97917223959155352819e-01, 6.50222499887672944485e-02, 5.08130628187576562776e-03, 1.32494738004321644526e-04, -3.96022827877536812320e-06}
	erfPA = [...]float64{-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01, 3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02, -2.16637559486879084300e-03}
	erfQA = [...]float64{1, 1.06420880400844228286e-01, 5.40397917702171048937e-01, 7.18286544141962662868e-02, 1.26171219808761642112e-01, 1.36370839120290507362e-02, 1.19844998467991074170e-02}
	erfRA = [...]float64{-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01, -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02, -8.12874355063065934246e+01, -9.81432934416914548592e+00}
	erfSA = [...]float64{1, 1.96512716674392571292e+01, 1.37657754143519042600e+02, 4.34565877475229228821e+02, 6.45387271733267880336e+02, 4.29008140027567833386e+02, 1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02}
	erfRB = [...]float64{-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01, -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03, -4.83519191608651397019e+02}
	erfSB = [...]float64{1, 3.03380607434824582924e+01, 3.25792512996573918826e+02, 1.53672958608443695994e+03, 3.19985821950859553908e+03, 2.55305040643316442583e+03, 4.74528541206955367215e+02, -2.24409524465858183362e+01}
)

// Erfc returns the complementary error function 1 − erf(x) =
// 2/√π ∫_x^∞ e^(−t²) dt: s_erf.c's rational approximations, and for
// |x| ≥ 1.25 e^(−x²) from two Exp calls (−z² − 0.5625 with z the high 20
// bits of x, exact, and the remainder). Within 6 ulps of math.Erfc, which
// is within 1 ulp of the exact value (TestErfcAccuracy); from x ≈ 26.55 the
// value is subnormal (0 from 27.3) and has a subnormal's absolute
// precision.
// Specials: Erfc(+Inf) = 0, Erfc(−Inf) = 2, Erfc(NaN) = NaN; Erfc(x) = 2
// for x < −6 and 0 for x ≥ 28.
func Erfc(x float64) float64 {
	const tiny = 0x1p-56
	switch {
	case x != x:
		return x
	case math.IsInf(x, 1):
		return 0
	case math.IsInf(x, -1):
		return 2
	}
	sign := x < 0
	if sign {
		x = -x
	}
	if x < 0.84375 {
		temp := x
		if x >= tiny {
			z := float64(x * x)
			y := horner(z, erfPP[:]...) / horner(z, erfQQ[:]...)
			if x < 0.25 {
				temp = x + float64(x*y)
			} else {
				temp = 0.5 + (float64(x*y) + (x - 0.5))
			}
		}
		if sign {
			return 1 + temp
		}
		return 1 - temp
	}
	if x < 1.25 {
		s := x - 1
		pq := horner(s, erfPA[:]...) / horner(s, erfQA[:]...)
		if sign {
			return 1 + erx + pq
		}
		return 1 - erx - pq
	}
	if x >= 28 {
		if sign {
			return 2
		}
		return 0
	}
	s := 1 / float64(x*x)
	var rs float64
	if x < 1/0.35 {
		rs = horner(s, erfRA[:]...) / horner(s, erfSA[:]...)
	} else {
		if sign && x > 6 {
			return 2
		}
		rs = horner(s, erfRB[:]...) / horner(s, erfSB[:]...)
	}
	z := math.Float64frombits(math.Float64bits(x) & 0xffffffff00000000)
	r := float64(Exp(float64(-z*z)-0.5625) * Exp(float64((z-x)*(z+x))+rs))
	if sign {
		return 2 - r/x
	}
	return r / x
}

// The coefficients of erfinv (AS 241): numerators and denominators on
// |x| ≤ 0.85 (a, b), for r = √(ln 2 − ln(1 − |x|)) ≤ 5 (c, d) and beyond
// (e, f), constant term first.
var (
	erfinvA = [...]float64{1.1975323115670912564578e0, 4.7072688112383978012285e1, 6.9706266534389598238465e2, 4.8548868893843886794648e3, 1.6235862515167575384252e4, 2.3782041382114385731252e4, 1.1819493347062294404278e4, 8.8709406962545514830200e2}
	erfinvB = [...]float64{1.0000000000000000000e0, 4.2313330701600911252e1, 6.8718700749205790830e2, 5.3941960214247511077e3, 2.1213794301586595867e4, 3.9307895800092710610e4, 2.8729085735721942674e4, 5.2264952788528545610e3}
	erfinvC = [...]float64{1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0, 3.64784832476320460504e0, 1.27045825245236838258e0, 2.41780725177450611770e-1, 2.27238449892691845833e-2, 7.74545014278341407640e-4}
	erfinvD = [...]float64{1.4142135623730950488016887e0, 2.9036514445419946173133295e0, 2.3707661626024532365971225e0, 9.7547832001787427186894837e-1, 2.0945065210512749128288442e-1, 2.1494160384252876777097297e-2, 7.7441459065157709165577218e-4, 1.4859850019840355905497876e-9}
	erfinvE = [...]float64{6.65790464350110377720e0, 5.46378491116411436990e0, 1.78482653991729133580e0, 2.96560571828504891230e-1, 2.65321895265761230930e-2, 1.24266094738807843860e-3, 2.71155556874348757815e-5, 2.01033439929228813265e-7}
	erfinvF = [...]float64{1.414213562373095048801689e0, 8.482908416595164588112026e-1, 1.936480946950659106176712e-1, 2.103693768272068968719679e-2, 1.112800997078859844711555e-3, 2.611088405080593625138020e-5, 2.010321207683943062279931e-7, 2.891024605872965461538222e-15}
)

// Erfinv returns the inverse error function of x: AS 241's rational
// approximations (about 16 significant digits), the tails
// (|x| > 0.85) through Log. Within 10 ulps of math.Erfinv
// (TestErfcAccuracy): a 1-ulp difference of Log grows in the subtraction
// r − 1.6. Specials:
// Erfinv(±1) = ±Inf, NaN for |x| > 1 and for NaN.
func Erfinv(x float64) float64 {
	if x != x || x <= -1 || x >= 1 {
		if x == -1 || x == 1 {
			return math.Inf(int(x))
		}
		return math.NaN()
	}
	sign := x < 0
	if sign {
		x = -x
	}
	var ans float64
	if x <= 0.85 {
		r := 0.180625 - float64(float64(0.25*x)*x)
		ans = float64(x*horner(r, erfinvA[:]...)) / horner(r, erfinvB[:]...)
	} else {
		r := math.Sqrt(math.Ln2 - Log(1.0-x))
		if r <= 5.0 {
			r -= 1.6
			ans = horner(r, erfinvC[:]...) / horner(r, erfinvD[:]...)
		} else {
			r -= 5.0
			ans = horner(r, erfinvE[:]...) / horner(r, erfinvF[:]...)
		}
	}
	if sign {
		return -ans
	}
	return ans
}

// Erfcinv returns the inverse of Erfc: Erfinv(1 − x), as math.Erfcinv
// (so it is +Inf for x ≤ 2^-54, where 1 − x rounds to 1; within 10 ulps
// of math.Erfcinv).
// Specials: Erfcinv(0) = +Inf, Erfcinv(2) = −Inf, NaN outside [0, 2] and
// for NaN.
func Erfcinv(x float64) float64 { return Erfinv(1 - x) }
