package fp8

import (
	"math"

	"github.com/x448/float16"
)

// BF16 is a bfloat16 code: the top 16 bits of a float32.
type BF16 uint16

// BF16FromFloat32 rounds x to bfloat16, to nearest with ties to even. ±inf
// and ±0 are kept; a NaN stays NaN (its sign kept, quiet bit set); values
// that round beyond the largest finite bfloat16 give ±inf.
func BF16FromFloat32(x float32) BF16 {
	b := math.Float32bits(x)
	if b&0x7fffffff > 0x7f800000 {
		return BF16(b>>16 | 0x40)
	}
	b += 0x7fff + (b>>16)&1
	return BF16(b >> 16)
}

// Float32 returns the value of c, exact.
func (c BF16) Float32() float32 { return math.Float32frombits(uint32(c) << 16) }

// FP16 is an IEEE binary16 code.
type FP16 uint16

// FP16FromFloat32 rounds x to binary16, to nearest with ties to even, with
// overflow to ±inf and gradual underflow (github.com/x448/float16).
func FP16FromFloat32(x float32) FP16 { return FP16(float16.Fromfloat32(x)) }

// Float32 returns the value of c, exact.
func (c FP16) Float32() float32 { return float16.Frombits(uint16(c)).Float32() }

// TF32FromFloat32 truncates x to TF32 (10 fraction bits) by zeroing the 13 low
// fraction bits, as the tensor cores read FP32 operands for TF32 MMA. The
// result is returned as float32 bits.
func TF32FromFloat32(x float32) uint32 { return math.Float32bits(x) &^ 0x1fff }
