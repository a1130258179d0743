//go:build amd64 && !purego

package pmath

import "github.com/fp8lab/fp8lab/internal/cpufeat"

// The AVX2 batch exp (exps_amd64.s), chosen at run time: used when the CPU
// has AVX2 and the OS saves the YMM registers; otherwise, on other
// architectures and with the purego build tag, Exps runs its pure-Go
// chains. TestExpsEqualsExp and FuzzExps check both against Exp bit for
// bit.

// haveExpAsm reports whether the AVX2 exp can run here.
var haveExpAsm = cpufeat.AVX2

// expBlocks computes Exp of up to blocks blocks of expBlock elements from
// x into dst, in order, and returns the number of blocks done: it stops
// before the first block with an element outside the fast-path domain
// (leaving that block's dst unwritten). It uses no FMA: every product,
// quotient and sum is rounded on its own, as Exp rounds it.
//
//go:noescape
func expBlocks(dst, x *float64, blocks int) int

// axpyF32x4 and axpyF64x4 are AxpyF32x4 and AxpyF64x4 on the first n
// elements (n a positive multiple of 4) in AVX2, one lane an element; see
// axpy_amd64.s.
//
//go:noescape
func axpyF32x4(o *float64, w *[4]float64, v0, v1, v2, v3 *float32, n int)

//go:noescape
func axpyF64x4(o *float64, w *[4]float64, v0, v1, v2, v3 *float64, n int)

// dotsF32x8 and dotsF64x8 are DotsF32x8 and DotsF64x8 for n a positive
// multiple of 4, in AVX2, one lane a key; see dots_amd64.s.
//
//go:noescape
func dotsF32x8(out *[8]float64, q *float64, n int, k *[8]*float32)

//go:noescape
func dotsF64x8(out *[8]float64, q *float64, n int, k *[8]*float64)

// pairsToF32 is PairsToF32 on the first n pairs (n a positive multiple of
// 4) in AVX2; see pairs_amd64.s.
//
//go:noescape
func pairsToF32(a, b *float32, z *float64, n int, as, bs, bm float64)

// countAbsAbove is CountAbsAbove on the first n elements (n a positive
// multiple of 8) in AVX2; see magnitudes_amd64.s.
//
//go:noescape
func countAbsAbove(x *float32, n int, t *[4]uint32, out *[4]int)
