//go:build amd64 && !purego

package accum

import "github.com/fp8lab/fp8lab/internal/cpufeat"

// haveFMAAsm reports whether fmaChain32 can run here: the AVX2 step's
// checks (cpufeat.AVX2: AVX and YMM state saved by the OS) and FMA
// (cpufeat.FMA).
var haveFMAAsm = haveStepAsm && cpufeat.FMA

// fmaChain32 returns c after c = fma(a[i], b[i], c) for i < n in float32
// (IEEE, round to nearest even): chainFMA32 in hardware (amd_amd64.s).
// NaN payloads are the hardware's; chainFMA32 redoes a chain that ends in
// NaN with FMA32 for the reference's bits.
//
//go:noescape
func fmaChain32(a, b *uint32, n int, c float32) float32

// fdpaPairs8 computes the c-independent half of groups whole CDNA3 fp8
// groups of 16 (fdpaSum's even and odd sums and exponents) into sums and
// exps, two a group; see amd_amd64.s. It runs where haveStepAsm does.
//
//go:noescape
func fdpaPairs8(entA, entB *[1 << 16]uint64, a, b *uint8, groups int, sums *float64, exps *int32)

// fdpaSums16 computes the c-independent half of groups whole CDNA3
// f16/bf16 groups of 8 (fdpaSum's sum and exponent) into sums and exps,
// one a group; see amd_amd64.s. It runs where haveStepAsm does.
//
//go:noescape
func fdpaSums16(entA, entB *[1 << 16]uint64, a, b *uint16, groups int, sums *float64, exps *int32)

// xf32Sums4 is xf32Sums for groups whole xf32 groups of 4 (the same
// exponents, and the same sums where the exponent is below 126); see
// amd_amd64.s. It runs where haveStepAsm does.
//
//go:noescape
func xf32Sums4(a, b *uint32, groups int, sums *float64, exps *int32)
