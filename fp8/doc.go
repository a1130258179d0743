// Package fp8 holds the narrow number formats (FP8, FP6, FP4, the MX and
// NVFP4 scale formats, AMD's fnuz FP8, TF32) and their conversions, bit for
// bit as NVIDIA hardware and PyTorch produce them. Every format is a row of
// one table of format descriptions (Spec: exponent and fraction bits, bias,
// code width, sign, infinities, NaN encoding); Format's methods read it.
//
// Formats with their own code types:
//
//   - E4M3: OCP e4m3fn. 1 sign, 4 exponent (bias 7), 3 fraction bits. No
//     infinities: 0x7f and 0xff are NaN. Largest finite value 448 (0x7e),
//     smallest subnormal 2^-9.
//   - E5M2: IEEE-like. 1 sign, 5 exponent (bias 15), 2 fraction bits, with
//     infinities (0x7c, 0xfc) and NaNs (0x7d..0x7f, 0xfd..0xff). Largest finite
//     value 57344 (0x7b), smallest subnormal 2^-16.
//   - BF16 (round to nearest even from float32) and FP16 (through
//     github.com/x448/float16, also round to nearest even).
//
// Conversions from float32 round to nearest, ties to even, in one step (never
// through an intermediate format). Overflow follows one of two behaviours,
// named as in CUDA's __nv_cvt_float_to_fp8:
//
//   - SatFinite clamps every finite or infinite input beyond the largest
//     finite value to ±max; NaN stays NaN. (fnuz: ±inf give NaN 0x80, as
//     HIP does.)
//   - NoSat gives NaN (e4m3) or ±inf (e5m2) when the rounded value exceeds the
//     largest finite value, and for infinite inputs. (fnuz: 0x80, as
//     PyTorch; FP4/FP6 saturate in both modes.)
//
// convert.go holds the table of every format's edge rules with its sources.
// ue8m0 (EncodeUE8M0) and tf32 (TF32Round) take PTX's rounding directions
// (Rounding: rn, rna, rz, rp).
//
// PyTorch's Tensor.to(torch.float8_e4m3fn) and Tensor.to(torch.float8_e5m2)
// are the NoSat conversions (checked bit for bit against the H200 captures
// for every float32 input). vLLM's KV-cache and query quantization divide by
// a scale and use the SatFinite conversion (see Quantizer).
//
// Formats described by the table (Format, Spec) and converted by the generic
// conversions:
//
//   - E2M1 (FP4), E2M3 and E3M2 (FP6): OCP MX v1.0 element formats, no
//     infinities and no NaN; largest values 6, 7.5 and 28.
//   - UE8M0: the MX scale, 2^(code−127), code 0xff is NaN, no zero.
//   - UE4M3: the NVFP4 scale, e4m3 without its sign bit (7 bits), 0x7f NaN.
//   - E4M3FNUZ, E5M2FNUZ: AMD CDNA3 fp8/bf8 (bias 8 and 16), no infinities,
//     no −0, 0x80 the only NaN; largest values 240 and 57344.
//   - TF32: 1+8+10 bits carried in a float32 pattern whose 13 low bits are
//     ignored.
//
// Block-scaled formats (block.go): QuantizeMX/DequantizeMX (OCP MX v1.0,
// 32 elements of e4m3, e5m2, e2m3, e3m2 or e2m1 per ue8m0 scale) and
// QuantizeNVFP4/DequantizeNVFP4 (16 e2m1 elements per ue4m3 scale, and an
// FP32 per-tensor scale), returning errors for bad lengths and scales.
//
// The package also describes every input format of the tensor-core models
// (Format) so that package accum can decompose codes into sign, integer
// significand and exponent without going through floating point.
//
// fp8 owns number formats only: no accumulation (package accum) and no
// attention (package attention).
package fp8
