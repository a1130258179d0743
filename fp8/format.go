package fp8

import (
	"fmt"
	"math"
	"strings"
)

// Format names a number format that a tensor-core model reads or writes.
// Codes of every format are carried in a uint32: 8 bits for e4m3/e5m2, 16 for
// fp16/bf16, the float32 bit pattern for tf32 and fp32.
type Format uint8

// The formats.
const (
	FormatInvalid Format = iota
	FormatE4M3
	FormatE5M2
	FormatFP16
	FormatBF16
	FormatTF32
	FormatFP32
)

var formatNames = [...]string{"invalid", "e4m3", "e5m2", "f16", "bf16", "tf32", "f32"}

// String returns the PTX-style name: e4m3, e5m2, f16, bf16, tf32, f32.
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", f)
}

// ParseFormat reads a format name (e4m3, e5m2, f16/fp16, bf16, tf32, f32/fp32).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(s) {
	case "e4m3", "e4m3fn":
		return FormatE4M3, nil
	case "e5m2":
		return FormatE5M2, nil
	case "f16", "fp16":
		return FormatFP16, nil
	case "bf16":
		return FormatBF16, nil
	case "tf32":
		return FormatTF32, nil
	case "f32", "fp32":
		return FormatFP32, nil
	}
	return FormatInvalid, fmt.Errorf("unknown format %q (want e4m3, e5m2, f16, bf16, tf32 or f32)", s)
}

// FracBits is the number of stored fraction bits.
func (f Format) FracBits() int {
	switch f {
	case FormatE4M3:
		return 3
	case FormatE5M2:
		return 2
	case FormatFP16, FormatTF32:
		return 10
	case FormatBF16:
		return 7
	case FormatFP32:
		return 23
	}
	return 0
}

// Emin is the exponent of the smallest normal number; subnormals are read
// with this exponent (tensorcore-numerics.md §2).
func (f Format) Emin() int {
	switch f {
	case FormatE4M3:
		return -6
	case FormatE5M2, FormatFP16:
		return -14
	}
	return -126
}

// CodeBits is the width of a code: 8, 16 or 32.
func (f Format) CodeBits() int {
	switch f {
	case FormatE4M3, FormatE5M2:
		return 8
	case FormatFP16, FormatBF16:
		return 16
	}
	return 32
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
// cores read TF32).
func (f Format) Decompose(code uint32) Parts {
	var ebits, mbits uint
	var ieee = true
	var sign uint32
	switch f {
	case FormatE4M3:
		ebits, mbits, ieee, sign = 4, 3, false, code>>7&1
	case FormatE5M2:
		ebits, mbits, sign = 5, 2, code>>7&1
	case FormatFP16:
		ebits, mbits, sign = 5, 10, code>>15&1
	case FormatBF16:
		ebits, mbits, sign = 8, 7, code>>15&1
	case FormatTF32:
		ebits, mbits, sign = 8, 10, code>>31
		code >>= 13
	case FormatFP32:
		ebits, mbits, sign = 8, 23, code>>31
	default:
		return Parts{Class: NaN}
	}
	neg := sign == 1
	e := code >> mbits & (1<<ebits - 1)
	m := code & (1<<mbits - 1)
	emax := uint32(1)<<ebits - 1
	switch {
	case ieee && e == emax && m == 0:
		return Parts{Class: Inf, Neg: neg}
	case ieee && e == emax:
		return Parts{Class: NaN, Neg: neg}
	case !ieee && e == emax && m == 1<<mbits-1:
		return Parts{Class: NaN, Neg: neg}
	case e == 0 && m == 0:
		return Parts{Class: Zero, Neg: neg}
	case e == 0:
		return Parts{Class: Finite, Neg: neg, M: uint64(m), E: f.Emin()}
	}
	bias := int(1)<<(ebits-1) - 1
	return Parts{Class: Finite, Neg: neg, M: uint64(m | 1<<mbits), E: int(e) - bias}
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

// Encode converts x to a code of f, rounding to nearest with ties to even
// (tf32: truncation of the 13 low bits, as the hardware reads it); sat
// applies to e4m3 and e5m2 only, f16/bf16 overflow to ±inf.
func (f Format) Encode(x float32, sat Saturation) uint32 {
	switch f {
	case FormatE4M3:
		return uint32(EncodeE4M3(x, sat))
	case FormatE5M2:
		return uint32(EncodeE5M2(x, sat))
	case FormatFP16:
		return uint32(FP16FromFloat32(x))
	case FormatBF16:
		return uint32(BF16FromFloat32(x))
	case FormatTF32:
		return TF32FromFloat32(x)
	}
	return math.Float32bits(x)
}
