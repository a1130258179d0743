//go:build amd64 && !purego

package fp8

import "github.com/fp8lab/fp8lab/internal/cpufeat"

// The AVX2 kernel of EncodeScaled for the formats of at most 8 bits
// (encvec_amd64.s), used when the CPU has AVX2 and the OS saves the YMM
// state; otherwise, on other architectures and with the purego build tag,
// encodeLoop runs. TestEncodeVecEqualsScalar and FuzzEncodeScaledSlice
// check that the two agree bit for bit.
var haveEncodeAsm = cpufeat.AVX2

// encodeVecAsm converts whole vectors of 8 float32 from src (n elements,
// the last n mod 8 left alone) to codes at dst[i·stride], src[i]/scale
// when div is 1 (src[i] when 0), stopping before the first vector that
// holds a lane whose quotient is inf, NaN or, for an unsigned format (vp's
// mask all ones), negative. It returns the number of elements converted, a
// multiple of 8. Each lane's code is encodeLoop's (zeros and subnormals
// included); see encvec_amd64.s.
//
//go:noescape
func encodeVecAsm(dst *uint16, stride int, src *float32, n int, scale float32, div int, vp *vecParams) (done int)

// encodeBF16Asm is encodeVecAsm for bf16 (BF16FromFloat32 of each
// quotient), stopping before the first vector that holds a NaN quotient;
// see encvec_amd64.s.
//
//go:noescape
func encodeBF16Asm(dst *uint16, stride int, src *float32, n int, scale float32, div int) (done int)

// maxAbsAsm is the largest of x[i]'s bits with the sign bit cleared, over
// the first n&^7 elements of x (0 for none); see encvec_amd64.s.
//
//go:noescape
func maxAbsAsm(x *float32, n int) uint32
