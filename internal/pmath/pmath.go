// Package pmath holds the elementary functions and the normal generator
// that fp8lab's results go through, written so that every platform gives
// the same bits: only IEEE float64 +, −, ×, ÷ and sqrt (each rounded to
// nearest even; explicit float64 conversions keep the compiler from fusing
// a*b+c), integer arithmetic and math's exact functions (Ldexp, Frexp,
// Floor, Abs).
//
// Why: Go's math.Exp and math.Log are assembly on amd64 and pure Go on
// wasm, and their results differ in the last bit for some inputs (on 16 %
// and 2.5 % of TestPortableAcrossPlatforms's arguments); so do the pure-Go
// functions that call them (math.Erfc on 12 %; Erfinv's tails and Pow can),
// and so can math/rand/v2's NormFloat64 and ExpFloat64 in their rare
// branches (the ziggurat's tail and wedges; none did in 2^17 draws). A
// haystack drawn or a reference computed with them differs between the lab
// in the browser and the lab on the server. With pmath they are equal bit
// for bit (TestPortableAcrossPlatforms runs the same vectors under wasm,
// in Node.js, and compares every bit).
//
// Accuracy: Exp and Log are within 2 ulps of the exact value, Log2 within
// 3 (TestAccuracy compares them with math's functions and with 200-bit
// math/big on sample points); they are not correctly rounded. Exp is finite
// up to ln(MaxFloat64) = 709.78 (amd64's math.Exp gives +Inf from about
// 709.5). Erfc, Erfinv and Erfcinv are math's algorithms over these Exp
// and Log (within 6, 10 and 10 ulps of math's). Specials
// follow math: NaN in, NaN out; Exp(+Inf) = +Inf, Exp(−Inf) = 0;
// Log(0) = −Inf, Log(x < 0) = NaN, Log(+Inf) = +Inf.
package pmath

import "math"

// Split ln 2 (Cody and Waite): lnHi has 32 significant bits, so k·lnHi is
// exact for |k| < 2^20, and lnHi + lnLo is ln 2 to about 2^-85.
const (
	ln2   = 0.693147180559945309417232121458176568
	lnHi  = 6.93147180369123816490e-01 // 0x3fe62e42fee00000
	lnLo  = 1.90821492927058770002e-10 // 0x3dea39ef35793c76
	log2e = 1.44269504088896340735992468100189214
)

// Exp returns e^x. |x| is reduced to r = x − k·ln 2 with |r| ≤ ln2/2 (the
// two-part ln 2 keeps the reduction exact to about 2^-85), e^r is the
// Taylor series to r^13 by Horner's rule (the first dropped term is below
// 2^-60 of the sum), and the result is scaled by 2^k with math.Ldexp
// (exact, or rounded once to a subnormal).
func Exp(x float64) float64 {
	switch {
	case x != x:
		return x
	case x > 710:
		return math.Inf(1)
	case x < -745.1332191019412:
		return 0
	case x > -0x1p-54 && x < 0x1p-54:
		return 1 + x
	}
	k := math.Floor(float64(x*log2e) + 0.5)
	r := float64(x-float64(k*lnHi)) - float64(k*lnLo)
	// e^r = 1 + r(1 + r/2(1 + r/3(1 + … (1 + r/13)))).
	s := 1.0
	for i := 13; i >= 1; i-- {
		s = 1 + float64(float64(r*s)/float64(i))
	}
	return math.Ldexp(s, int(k))
}

// logReduced returns ln f for f in [√½, √2]: 2·atanh(z), z = (f−1)/(f+1),
// |z| ≤ 0.1716, by its series to z^25 (the first dropped term is below
// 2^-62 of the sum).
func logReduced(f float64) float64 {
	z := float64(f-1) / float64(f+1)
	z2 := float64(z * z)
	s := 1.0 / 25
	for i := 23; i >= 1; i -= 2 {
		s = float64(1/float64(i)) + float64(z2*s)
	}
	return float64(2*z) * s
}

// reduce splits a positive finite x into f·2^e with f in [√½, √2).
func reduce(x float64) (f float64, e int) {
	f, e = math.Frexp(x) // f in [0.5, 1)
	if f < math.Sqrt2/2 {
		f *= 2
		e--
	}
	return f, e
}

// logSpecial returns the logarithm of x's specials (NaN, +Inf, x < 0, 0)
// and whether x was one; the finite positive x are left to the series.
func logSpecial(x float64) (float64, bool) {
	switch {
	case x != x || math.IsInf(x, 1):
		return x, true
	case x < 0:
		return math.NaN(), true
	case x == 0:
		return math.Inf(-1), true
	}
	return 0, false
}

// Log returns the natural logarithm of x: x = f·2^e with f in [√½, √2),
// ln x = e·ln 2 + ln f, ln f from the atanh series.
func Log(x float64) float64 {
	if y, ok := logSpecial(x); ok {
		return y
	}
	f, e := reduce(x)
	k := float64(e)
	return float64(k*lnHi) + float64(logReduced(f)+float64(k*lnLo))
}

// Log2 returns the base-2 logarithm of x: e + ln f · log2(e) for x =
// f·2^e, f in [√½, √2); powers of two give their exponent exactly.
func Log2(x float64) float64 {
	if y, ok := logSpecial(x); ok {
		return y
	}
	f, e := reduce(x)
	return float64(e) + float64(logReduced(f)*log2e)
}

// Log2f returns log2(x) for a float32 x, rounded to float32 (from Log2 in
// float64: within an ulp of the exact value).
func Log2f(x float32) float32 { return float32(Log2(float64(x))) }
