// Package accum models, bit for bit, how GPU tensor cores and kernels
// accumulate dot products.
//
// The unit is one tensor-core step, T-FDPA (tensorcore-numerics.md §2): L exact
// products and the incoming accumulator c are aligned to the largest
// exponent, each term is truncated toward zero to F fraction bits below it,
// the truncated terms are summed exactly as integers, and the sum is
// converted once (rho: RZ to FP32, RZ to e8m13, or RNE to FP16); Params.Step
// is the reference implementation. Block-scaled kinds add the scales'
// exponents to each product's (or to a group of 16 FP4 products').
//
// Every GPU instruction, NVIDIA and AMD, is one Row of one table (Rows):
// its name after the PTX or AMD ISA instruction (sm90.wgmma.e4m3.f32),
// architecture, kind, operand and accumulator formats, K, the step's
// parameters (L, F, rho, e_zero), scales, groups, and the source of its
// parameters with the evidence that verified them. Regular families (the
// operand pairs of kind::f8f6f4, the FP4 kinds, CDNA v_mfma) are rows
// generated from their parameters. A row is found as a Model (16-bit codes
// of one format: Lookup, Models) and/or as an Instruction (codes of any
// width, mixed formats, block scales: LookupInstruction, Instructions); the
// two interfaces are views of the same row. AMD's v_mfma rows share the
// table but not the T-FDPA step: their FMA chains, pairwise trees and
// round-down fused dots (MMA-Sim's simulator/amd.py) round where T-FDPA
// truncates, so their kinds run amdInstr's arithmetic (Row documents each
// kind). A new instruction is a new row; a new GPU is its rows plus a row
// of attention's architecture table.
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
