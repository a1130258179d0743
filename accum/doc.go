// Package accum models, bit for bit, how GPU tensor cores and kernels
// accumulate dot products.
//
// The unit is one tensor-core step, T-FDPA (tensorcore-numerics.md §2): L exact
// products and the incoming accumulator c are aligned to the largest
// exponent, each term is truncated toward zero to F fraction bits below it,
// the truncated terms are summed exactly as integers, and the sum is
// converted once (rho: RZ to FP32, RZ to e8m13, or RNE to FP16). Every GPU is
// a row of parameters (L, F, rho, e_zero, input format) in a table of named
// models (Models), each named after its PTX instruction, for example
// sm90.wgmma.e4m3.f32, with the source of its parameters.
//
// Around the step, Chain runs a kernel's K loop: a chain of steps whose
// rounded output feeds the next step as c, optionally promoted into an FP32
// register every N elements with one round-to-nearest-even add, as
// DeepGEMM, CUTLASS, Triton and vLLM's FlashAttention fork do (§4).
//
// IEEE baselines (fp32 unfused, fp32 fused, fp64, Kahan, pairwise) run
// through the same Model interface so that experiments can put them side by
// side.
//
// Everything here is integer arithmetic on decoded (sign, significand,
// exponent) triples, never float64 shortcuts that round differently. The
// models are checked against real H200 captures by package accum/golden and
// `lab verify`.
//
// accum owns arithmetic only: number formats live in package fp8, attention
// in package attention.
package accum
