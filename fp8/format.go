package fp8

import (
	"fmt"
	"math"
	"strings"
)

// Format names a number format that a tensor-core model reads or writes.
// Codes of every format are carried in a uint32, right-aligned: 4 bits for
// e2m1, 6 for e2m3/e3m2, 7 for ue4m3, 8 for the fp8 formats and ue8m0, 16 for
// fp16/bf16, the float32 bit pattern for tf32 and fp32. Bits above CodeBits
// are ignored by every method that reads a code.
//
// Every format is one row of a table of format descriptions (Spec); the
// methods below read that row, so adding a format is adding a row.
type Format uint8

// The formats. The values are stable: new formats are appended.
const (
	FormatInvalid Format = iota
	FormatE4M3
	FormatE5M2
	FormatFP16
	FormatBF16
	FormatTF32
	FormatFP32
	FormatE2M1     // FP4 (OCP MX E2M1, PTX .e2m1)
	FormatE2M3     // FP6 (OCP MX E2M3, PTX .e2m3)
	FormatE3M2     // FP6 (OCP MX E3M2, PTX .e3m2)
	FormatUE8M0    // MX scale (OCP E8M0, PTX .ue8m0)
	FormatUE4M3    // NVFP4 scale (PTX .ue4m3): e4m3 without its sign bit
	FormatE4M3FNUZ // AMD CDNA3 fp8 (PyTorch float8_e4m3fnuz)
	FormatE5M2FNUZ // AMD CDNA3 bf8 (PyTorch float8_e5m2fnuz)
	numFormats     // not a format: the length of the table
)

// NaNEncoding says which codes of a format are NaN (and whether it has
// infinities).
type NaNEncoding uint8

// The NaN encodings.
const (
	// NaNNone: the format has neither NaN nor infinities (e2m1, e2m3, e3m2).
	NaNNone NaNEncoding = iota
	// NaNIEEE: exponent field all ones is inf (fraction 0) or NaN
	// (fraction ≠ 0), as IEEE 754 (e5m2, fp16, bf16, tf32, fp32).
	NaNIEEE
	// NaNAllOnes: only the code whose exponent and fraction fields are all
	// ones is NaN (S.1111.111 for e4m3, 0x7f for ue4m3, 0xff for ue8m0);
	// no infinities. The rest of the top binade is finite.
	NaNAllOnes
	// NaNNegZero: the code of −0 (sign bit only, 0x80) is the only NaN; no
	// infinities and no −0 (AMD fnuz formats).
	NaNNegZero
)

// String returns "none", "ieee", "all-ones" or "neg-zero".
func (n NaNEncoding) String() string {
	switch n {
	case NaNIEEE:
		return "ieee"
	case NaNAllOnes:
		return "all-ones"
	case NaNNegZero:
		return "neg-zero"
	}
	return "none"
}

// Spec describes a format as data: the value of a finite code with sign s,
// exponent field e and fraction field m is
//
//	(-1)^s × 2^(e − Bias) × (1 + m/2^FracBits)        for a normal code,
//	(-1)^s × 2^(1 − Bias) × (m/2^FracBits)            for e = 0 when Subnormals,
//
// and without Subnormals (ue8m0) e = 0 is an ordinary binade 2^(−Bias) and
// the format has no zero. The layout of a code, from the top bit down, is
// [sign if Signed] [ExpBits] [FracBits] [TruncBits ignored low bits].
type Spec struct {
	Name       string      // PTX-style name (String)
	ExpBits    int         // exponent field width
	FracBits   int         // stored fraction bits
	Bias       int         // exponent bias
	CodeBits   int         // width of a code, including the ignored low bits
	TruncBits  int         // low bits ignored when reading a code (tf32: 13)
	Signed     bool        // false for the unsigned scale formats ue8m0, ue4m3
	Inf        bool        // has ±inf (only with NaNIEEE)
	NaN        NaNEncoding // which codes are NaN
	Subnormals bool        // exponent field 0 holds zero and subnormals
}

// The table of formats: one row each. The names after the first are the
// spellings ParseFormat also accepts (PTX, OCP, PyTorch, ml_dtypes).
var formatTable = [numFormats]struct {
	Spec
	aliases []string
}{
	FormatInvalid: {Spec{Name: "invalid", ExpBits: 8, Bias: 127, CodeBits: 32, Signed: true, Subnormals: true}, nil},
	FormatE4M3: {Spec{Name: "e4m3", ExpBits: 4, FracBits: 3, Bias: 7, CodeBits: 8, Signed: true, NaN: NaNAllOnes, Subnormals: true},
		[]string{"e4m3fn", "fp8e4m3", "float8_e4m3fn"}},
	FormatE5M2: {Spec{Name: "e5m2", ExpBits: 5, FracBits: 2, Bias: 15, CodeBits: 8, Signed: true, Inf: true, NaN: NaNIEEE, Subnormals: true},
		[]string{"fp8e5m2", "float8_e5m2"}},
	FormatFP16: {Spec{Name: "f16", ExpBits: 5, FracBits: 10, Bias: 15, CodeBits: 16, Signed: true, Inf: true, NaN: NaNIEEE, Subnormals: true},
		[]string{"fp16", "float16", "half"}},
	FormatBF16: {Spec{Name: "bf16", ExpBits: 8, FracBits: 7, Bias: 127, CodeBits: 16, Signed: true, Inf: true, NaN: NaNIEEE, Subnormals: true},
		[]string{"bfloat16"}},
	FormatTF32: {Spec{Name: "tf32", ExpBits: 8, FracBits: 10, Bias: 127, CodeBits: 32, TruncBits: 13, Signed: true, Inf: true, NaN: NaNIEEE, Subnormals: true},
		[]string{"xf32"}},
	FormatFP32: {Spec{Name: "f32", ExpBits: 8, FracBits: 23, Bias: 127, CodeBits: 32, Signed: true, Inf: true, NaN: NaNIEEE, Subnormals: true},
		[]string{"fp32", "float32"}},
	FormatE2M1: {Spec{Name: "e2m1", ExpBits: 2, FracBits: 1, Bias: 1, CodeBits: 4, Signed: true, NaN: NaNNone, Subnormals: true},
		[]string{"fp4", "fp4e2m1", "float4_e2m1fn", "float4_e2m1fn_x2"}},
	FormatE2M3: {Spec{Name: "e2m3", ExpBits: 2, FracBits: 3, Bias: 1, CodeBits: 6, Signed: true, NaN: NaNNone, Subnormals: true},
		[]string{"fp6e2m3", "float6_e2m3fn", "mxfp6e2m3"}},
	FormatE3M2: {Spec{Name: "e3m2", ExpBits: 3, FracBits: 2, Bias: 3, CodeBits: 6, Signed: true, NaN: NaNNone, Subnormals: true},
		[]string{"fp6e3m2", "float6_e3m2fn", "mxfp6e3m2"}},
	FormatUE8M0: {Spec{Name: "ue8m0", ExpBits: 8, FracBits: 0, Bias: 127, CodeBits: 8, NaN: NaNAllOnes},
		[]string{"e8m0", "e8m0fnu", "float8_e8m0fnu"}},
	FormatUE4M3: {Spec{Name: "ue4m3", ExpBits: 4, FracBits: 3, Bias: 7, CodeBits: 7, NaN: NaNAllOnes, Subnormals: true},
		nil},
	FormatE4M3FNUZ: {Spec{Name: "e4m3fnuz", ExpBits: 4, FracBits: 3, Bias: 8, CodeBits: 8, Signed: true, NaN: NaNNegZero, Subnormals: true},
		[]string{"float8_e4m3fnuz", "fp8e4m3fnuz", "fp8fnuz"}},
	FormatE5M2FNUZ: {Spec{Name: "e5m2fnuz", ExpBits: 5, FracBits: 2, Bias: 16, CodeBits: 8, Signed: true, NaN: NaNNegZero, Subnormals: true},
		[]string{"float8_e5m2fnuz", "fp8e5m2fnuz", "bf8", "bf8fnuz"}},
}

// Formats returns every valid format, in the order of their values.
func Formats() []Format {
	fs := make([]Format, 0, numFormats-1)
	for f := FormatInvalid + 1; f < numFormats; f++ {
		fs = append(fs, f)
	}
	return fs
}

// Valid reports whether f is one of the formats of the table.
func (f Format) Valid() bool { return f > FormatInvalid && f < numFormats }

// spec returns f's row; an unknown value reads as the invalid row.
func (f Format) spec() *Spec {
	if f < numFormats {
		return &formatTable[f].Spec
	}
	return &formatTable[FormatInvalid].Spec
}

// Spec returns f's description (a copy of its table row); for a value that
// is not a format, the row of FormatInvalid.
func (f Format) Spec() Spec { return *f.spec() }

// String returns the PTX-style name: e4m3, e5m2, f16, bf16, tf32, f32, e2m1,
// e2m3, e3m2, ue8m0, ue4m3, e4m3fnuz, e5m2fnuz.
func (f Format) String() string {
	if f < numFormats {
		return formatTable[f].Name
	}
	return fmt.Sprintf("Format(%d)", f)
}

// ParseFormat reads a format name, case-insensitively: the String names and
// the PTX, OCP and PyTorch spellings (e4m3fn, fp16, fp4, float4_e2m1fn,
// e8m0fnu, float8_e4m3fnuz, bf8, ...). Block formats (mxfp4, nvfp4) are
// not element formats and are not accepted.
func ParseFormat(s string) (Format, error) {
	l := strings.ToLower(strings.TrimSpace(s))
	for f := FormatInvalid + 1; f < numFormats; f++ {
		if l == formatTable[f].Name {
			return f, nil
		}
		for _, a := range formatTable[f].aliases {
			if l == a {
				return f, nil
			}
		}
	}
	names := make([]string, 0, numFormats-1)
	for _, f := range Formats() {
		names = append(names, f.String())
	}
	return FormatInvalid, fmt.Errorf("unknown format %q (want one of %s)", s, strings.Join(names, ", "))
}

// FracBits is the number of stored fraction bits (0 for ue8m0).
func (f Format) FracBits() int { return f.spec().FracBits }

// Emin is the exponent of the smallest normal number; subnormals are read
// with this exponent (tensorcore-numerics.md §2). For ue8m0, which has no
// subnormals, it is the exponent of code 0 (−127).
func (f Format) Emin() int {
	s := f.spec()
	if s.Subnormals {
		return 1 - s.Bias
	}
	return -s.Bias
}

// Emax is the exponent of the largest finite value.
func (f Format) Emax() int {
	s := f.spec()
	top := 1<<s.ExpBits - 1
	switch s.NaN {
	case NaNIEEE:
		top--
	case NaNAllOnes:
		if s.FracBits == 0 {
			top-- // ue8m0: the all-ones code is the whole top binade
		}
	}
	return top - s.Bias
}

// CodeBits is the width of a code: 4 (e2m1), 6 (e2m3, e3m2), 7 (ue4m3), 8,
// 16 or 32.
func (f Format) CodeBits() int { return f.spec().CodeBits }

// Signed reports whether codes carry a sign bit (all but ue8m0 and ue4m3).
func (f Format) Signed() bool { return f.spec().Signed }

// HasInf reports whether the format has infinities.
func (f Format) HasInf() bool { return f.spec().Inf }

// MaxCode is the code of the largest finite value (positive).
func (f Format) MaxCode() uint32 {
	s := f.spec()
	if !f.Valid() {
		return 0
	}
	w := uint(s.CodeBits - s.TruncBits)
	if s.Signed {
		w--
	}
	all := uint32(1)<<w - 1 // magnitude bits all ones
	var c uint32
	switch s.NaN {
	case NaNIEEE:
		c = all &^ (1 << s.FracBits) // exponent field all ones minus one, fraction all ones
	case NaNAllOnes:
		c = all - 1
	default:
		c = all
	}
	return c << s.TruncBits
}

// SignBit is the mask of the sign bit of a code, 0 for unsigned formats.
func (f Format) SignBit() uint32 {
	s := f.spec()
	if !s.Signed {
		return 0
	}
	return 1 << (s.CodeBits - 1)
}

// Class says what kind of number a code holds.
type Class uint8

// The classes.
const (
	Zero Class = iota
	Finite
	Inf
	NaN
)

// Parts is a decoded code: for Finite, the value is
// (-1)^Neg × M × 2^(E − FracBits), with M the integer significand (hidden bit
// included for normals, absent for subnormals) and E the exponent field
// (Emin for subnormals), as the T-FDPA step reads it.
type Parts struct {
	Class Class
	Neg   bool
	M     uint64
	E     int
}

// Decompose splits a code into its parts without any rounding. For tf32 the
// 13 low bits of the float32 pattern are ignored (truncation, as the tensor
// cores read TF32); bits above CodeBits are ignored for every format (so
// ue4m3 reads bit 7 of its byte as nothing, as MMA-Sim's |scale| does). The
// NaN code of a fnuz format (0x80) has Neg set; its other codes never give
// a negative zero. FormatInvalid and unknown values give NaN.
func (f Format) Decompose(code uint32) Parts {
	if !f.Valid() {
		return Parts{Class: NaN}
	}
	s := f.spec()
	code >>= uint(s.TruncBits)
	w := uint(s.CodeBits - s.TruncBits)
	code &= 1<<w - 1
	neg := false
	if s.Signed {
		w--
		neg = code>>w&1 == 1
	}
	mbits, ebits := uint(s.FracBits), uint(s.ExpBits)
	e := code >> mbits & (1<<ebits - 1)
	m := code & (1<<mbits - 1)
	emax := uint32(1)<<ebits - 1
	switch s.NaN {
	case NaNIEEE:
		if e == emax && m == 0 {
			return Parts{Class: Inf, Neg: neg}
		}
		if e == emax {
			return Parts{Class: NaN, Neg: neg}
		}
	case NaNAllOnes:
		if e == emax && m == 1<<mbits-1 {
			return Parts{Class: NaN, Neg: neg}
		}
	case NaNNegZero:
		if neg && e == 0 && m == 0 {
			return Parts{Class: NaN, Neg: true}
		}
	}
	if s.Subnormals && e == 0 {
		if m == 0 {
			return Parts{Class: Zero, Neg: neg}
		}
		return Parts{Class: Finite, Neg: neg, M: uint64(m), E: 1 - s.Bias}
	}
	return Parts{Class: Finite, Neg: neg, M: uint64(m | 1<<mbits), E: int(e) - s.Bias}
}

// Value returns the exact value of a code as float64 (every code of every
// format is exact in float64), NaN for NaN codes.
func (f Format) Value(code uint32) float64 {
	p := f.Decompose(code)
	var v float64
	switch p.Class {
	case NaN:
		return math.NaN()
	case Inf:
		v = math.Inf(1)
	case Finite:
		v = math.Ldexp(float64(p.M), p.E-f.FracBits())
	}
	if p.Neg {
		v = -v
	}
	return v
}

// MaxValue is the largest finite value of f (exact).
func (f Format) MaxValue() float64 { return f.Value(f.MaxCode()) }

// Encode converts x to a code of f, rounding to nearest with ties to even,
// with sat as described for each format in convert.go (e4m3, e5m2, e2m1,
// e2m3, e3m2, ue4m3, e4m3fnuz, e5m2fnuz: EncodeFloat32); f16/bf16 overflow
// to ±inf whatever sat; tf32 is the truncation of the 13 low bits, as the
// tensor cores read an FP32 register (TF32Round is the cvt instruction);
// ue8m0 rounds toward zero (cvt.rz, 2^floor(log2|x|), the OCP MX scale
// rule) with sat; f32 and FormatInvalid return the float32 bits.
func (f Format) Encode(x float32, sat Saturation) uint32 {
	switch f {
	case FormatFP16:
		return uint32(FP16FromFloat32(x))
	case FormatBF16:
		return uint32(BF16FromFloat32(x))
	case FormatTF32:
		return TF32FromFloat32(x)
	case FormatUE8M0:
		return uint32(EncodeUE8M0(x, RoundZero, sat))
	}
	if f < numFormats {
		if p := encTable[f]; p != nil {
			return p.encode(math.Float32bits(x), 0, sat)
		}
	}
	return math.Float32bits(x)
}

// canonicalNaN is the float32 a NaN code of the new formats decodes to.
const canonicalNaN = 0x7fc00000

var decodeTables [numFormats]*[256]float32

func init() {
	decodeTables[FormatE4M3] = &e4m3Table
	decodeTables[FormatE5M2] = &e5m2Table
	for _, f := range []Format{FormatE2M1, FormatE2M3, FormatE3M2, FormatUE8M0, FormatUE4M3, FormatE4M3FNUZ, FormatE5M2FNUZ} {
		t := new([256]float32)
		n := 1 << f.CodeBits()
		for c := range t {
			v := f.Value(uint32(c % n))
			if v != v {
				t[c] = math.Float32frombits(canonicalNaN)
			} else {
				t[c] = float32(v) // exact: every code is a float32
			}
		}
		decodeTables[f] = t
	}
}

// Float32 returns the value of a code of f as float32. Every finite code of
// every format is exact in float32 (ue8m0's 2^−127 as a subnormal). NaN
// codes: e4m3 and e5m2 give the patterns the H200 gives (E4M3.Float32,
// E5M2.Float32); the other ≤8-bit formats give 0x7fc00000; f16, bf16, tf32
// and f32 keep their NaN bits (tf32 after truncation). Bits above CodeBits
// are ignored. FormatInvalid gives NaN.
func (f Format) Float32(code uint32) float32 {
	if f < numFormats {
		if t := decodeTables[f]; t != nil {
			return t[code&(1<<f.CodeBits()-1)]
		}
	}
	switch f {
	case FormatFP16:
		return FP16(code).Float32()
	case FormatBF16:
		return BF16(code).Float32()
	case FormatTF32:
		return math.Float32frombits(code &^ 0x1fff)
	case FormatFP32:
		return math.Float32frombits(code)
	}
	return math.Float32frombits(canonicalNaN)
}

// DecodeTable returns a new table of the float32 value of every code of a
// format with codes of at most 8 bits (len 1<<CodeBits), as Float32 gives
// them, or nil for the wider formats.
func DecodeTable(f Format) []float32 {
	if f >= numFormats || decodeTables[f] == nil {
		return nil
	}
	n := 1 << f.CodeBits()
	return append([]float32(nil), decodeTables[f][:n]...)
}
