// Package fp8 holds the number formats of FP8 attention and their conversions,
// bit for bit as NVIDIA hardware and PyTorch produce them.
//
// Formats:
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
//     finite value to ±max; NaN stays NaN.
//   - NoSat gives NaN (e4m3) or ±inf (e5m2) when the rounded value exceeds the
//     largest finite value, and for infinite inputs.
//
// PyTorch's Tensor.to(torch.float8_e4m3fn) and Tensor.to(torch.float8_e5m2)
// are the NoSat conversions (checked bit for bit against the H200 captures
// for every float32 input). vLLM's KV-cache and query quantization divide by
// a scale and use the SatFinite conversion (see Quantizer).
//
// The package also describes every input format of the tensor-core models
// (Format) so that package accum can decompose codes into sign, integer
// significand and exponent without going through floating point.
//
// fp8 owns number formats only: no accumulation (package accum) and no
// attention (package attention).
package fp8
