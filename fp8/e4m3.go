package fp8

import "math"

// Saturation selects what a conversion does with values beyond the largest
// finite value of the target format.
type Saturation uint8

const (
	// SatFinite clamps to ±max (CUDA __NV_SATFINITE); NaN stays NaN.
	SatFinite Saturation = iota
	// NoSat gives NaN for e4m3 and ±inf for e5m2 (CUDA __NV_NOSAT, and
	// PyTorch's casts).
	NoSat
)

// String returns "satfinite" or "nosat".
func (s Saturation) String() string {
	if s == NoSat {
		return "nosat"
	}
	return "satfinite"
}

// E4M3 is an OCP e4m3fn code: 1 sign, 4 exponent bits (bias 7), 3 fraction
// bits, no infinities, NaN at 0x7f and 0xff.
type E4M3 uint8

// E4M3 constants.
const (
	E4M3Max    E4M3 = 0x7e // 448
	E4M3NaN    E4M3 = 0x7f
	E4M3MaxVal      = 448.0
)

// E5M2 is an e5m2 code: 1 sign, 5 exponent bits (bias 15), 2 fraction bits,
// with infinities (0x7c, 0xfc) and NaNs (0x7d..0x7f and their negatives).
type E5M2 uint8

// E5M2 constants.
const (
	E5M2Max    E5M2 = 0x7b // 57344
	E5M2Inf    E5M2 = 0x7c
	E5M2NaN    E5M2 = 0x7f
	E5M2MaxVal      = 57344.0
)

var (
	e4m3Table [256]float32
	e5m2Table [256]float32
)

func init() {
	for c := 0; c < 256; c++ {
		e4m3Table[c] = math.Float32frombits(decodeBits(uint32(c), 4, 3, false))
		e5m2Table[c] = math.Float32frombits(decodeBits(uint32(c), 5, 2, true))
	}
}

// decodeBits returns the float32 bits of an 8-bit code with ebits exponent
// and mbits fraction bits. Finite values are exact. NaN patterns follow what
// the H200 and PyTorch produce: e4m3 NaN keeps its sign and places the
// fraction bits at the top of the float32 fraction (0x7f -> 0x7ff00000);
// e5m2 NaN becomes sign|0x7fffffff.
func decodeBits(code uint32, ebits, mbits uint, ieee bool) uint32 {
	sign := (code >> 7) << 31
	e := (code >> mbits) & (1<<ebits - 1)
	m := code & (1<<mbits - 1)
	bias := int32(1)<<(ebits-1) - 1
	switch {
	case ieee && e == 1<<ebits-1:
		if m == 0 {
			return sign | 0x7f800000
		}
		return sign | 0x7fffffff
	case !ieee && e == 1<<ebits-1 && m == 1<<mbits-1:
		return sign | 0x7f800000 | m<<(23-mbits)
	case e == 0:
		if m == 0 {
			return sign
		}
		// Subnormal: m * 2^(1-bias-mbits), exact in float32.
		v := math.Ldexp(float64(m), int(1-bias-int32(mbits)))
		return sign | math.Float32bits(float32(v))
	}
	return sign | uint32(int32(e)-bias+127)<<23 | m<<(23-mbits)
}

// Float32 returns the value of c. Every finite code is exact; NaN codes give
// the float32 NaN bits the H200 gives (0x7f -> 0x7ff00000, 0xff -> 0xfff00000).
func (c E4M3) Float32() float32 { return e4m3Table[c] }

// Float64 returns the value of c, exact.
func (c E4M3) Float64() float64 { return float64(e4m3Table[c]) }

// IsNaN reports whether c is 0x7f or 0xff.
func (c E4M3) IsNaN() bool { return c&0x7f == 0x7f }

// Float32 returns the value of c. Finite codes and infinities are exact; NaN
// codes give sign|0x7fffffff, as the H200 decode table has them.
func (c E5M2) Float32() float32 { return e5m2Table[c] }

// Float64 returns the value of c, exact.
func (c E5M2) Float64() float64 { return float64(e5m2Table[c]) }

// IsNaN reports whether c is a NaN code.
func (c E5M2) IsNaN() bool { return c&0x7f > 0x7c }

// IsInf reports whether c is ±inf.
func (c E5M2) IsInf() bool { return c&0x7f == 0x7c }

// EncodeE4M3 converts x to e4m3 with round to nearest, ties to even, and the
// given saturation. NaN gives 0x7f with the sign of x. Under SatFinite,
// anything whose magnitude rounds above 448 (including ±inf) gives ±448;
// under NoSat it gives NaN (0x7f with the sign of x): this is PyTorch's
// float8_e4m3fn cast. Inputs below half the smallest subnormal (2^-10) give
// ±0, and 2^-10 itself, a tie, also gives ±0.
func EncodeE4M3(x float32, sat Saturation) E4M3 {
	return E4M3(encTable[FormatE4M3].encode(math.Float32bits(x), 0, sat))
}

// EncodeE5M2 converts x to e5m2 with round to nearest, ties to even, and the
// given saturation. NaN gives 0x7f with the sign of x. Under SatFinite,
// anything whose magnitude rounds above 57344 (including ±inf) gives ±57344;
// under NoSat it gives ±inf (0x7c), as IEEE rounding does: this is PyTorch's
// float8_e5m2 cast.
func EncodeE5M2(x float32, sat Saturation) E5M2 {
	return E5M2(encTable[FormatE5M2].encode(math.Float32bits(x), 0, sat))
}
