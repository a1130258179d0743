// Package attention runs attention exactly as an FP8 FlashAttention-3
// kernel on Hopper computes it, and exactly as float64 arithmetic would.
//
// Two computations:
//
//   - [Reference]: float64 attention, softmax(scale·q·kᵀ)·v with masks, on
//     any values (the dequantized codes the kernel reads, via
//     [ReferenceQuantized], or the unquantized inputs);
//     [ReferenceQuantizedTrials] gives the same bits for several queries
//     over one cache, each with its own patched tokens (the trials of a
//     needle haystack), decoding each block of the cache once for all.
//   - [Run]: a simulator of FA3's SM90 forward mainloop (fp8-attention.md
//     §2–§3): KV tiles of kBlockN tokens visited newest first; S = Q·Kᵀ per
//     tile through an accum model (a chain of head_dim/K steps from +0),
//     scaled in FP32 by softmax_scale·log2(e)·q_descale·k_descale; online
//     softmax in FP32 (running max m, row sum l of the unrounded P,
//     alpha = exp2(m_old − m_new)); P = exp2(S − m + 8) cast to the dtype
//     (e4m3 RNE satfinite for FP8, bf16 for a bf16 cache); P·V through an
//     accum model accumulating into the running O, which is rescaled by
//     alpha in FP32 before it enters the chain; promotion of O out of the
//     tensor core never (FA3 as shipped), every tile (vLLM's two-level
//     accumulation) or every N tiles (the lazy acc_scale variant); finally
//     O *= v_descale / l. The tile loop (kernel.attendRow) reads like the
//     kernel: one function, the steps in order, each a named call.
//
// Options ([Config]): head_dim 64/128/192/256/512/576 ([HeadDims]; V's
// may be narrower, [Config.VDim]); GQA (query heads per KV head); the
// cache in any format of [KVFormatTable] (bf16, f16, e4m3, e5m2, mxfp8,
// nvfp4, mxfp4; [KV] holds the codes and their descales, [QuantizeKV]
// stores them by the row's rule; TestDocClaims checks both lists); the accum model
// of each GEMM by name (any tensor-core model reading the dtype, or an IEEE
// baseline such as "fp32" or "exact"); kBlockM/kBlockN with FA3's defaults
// ([DefaultTiles]); sliding window; decode (one query) and causal prefill
// (the last Mq tokens); [Compare] gives relative L2, max abs and cosine.
//
// KV formats ([QuantizeKV], [KVSpec]): bf16/f16, e4m3/e5m2 with scales of a
// granularity, and the block formats MXFP8, NVFP4 and MXFP4, fed to the MMA
// directly, dequantized to bf16 or e4m3, or read natively by Blackwell's
// block-scaled tcgen05 kinds ([PathBlockScaled], blockscaled.go: Q and P
// block-quantized in the kernel, V stored with its blocks along tokens).
//
// Arithmetic. Everything that is FP32 in the kernel is float32 here, each
// operation rounded to nearest even, never fused (explicit conversions
// prevent FMA contraction). exp2 is computed as float64 math.Exp2 rounded
// once to float32 (correctly rounded but for rare double-rounding cases);
// the H200 uses ex2.approx, so element-wise agreement with hardware is
// statistical while the error figures agree to about four digits (the
// h200-attention experiment). Row sums are summed in key order; GPUs use
// tree reductions, another source of last-bit differences.
//
// Speed. accum's tensor-core models of 8- and 16-bit inputs run a fast path
// that gives the reference step's bits. One decode of 128k tokens at head_dim 128
// with sm90 wgmma e4m3 for both GEMMs is about 34 million products.
//
// [H200Inputs] regenerates the inputs of the H200 attention captures
// (attn_inputs.py) bit for bit through package numpyrand.
//
// attention owns attention only: number formats are package fp8's,
// accumulation package accum's, experiments package experiments'.
package attention
