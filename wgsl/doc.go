// Package wgsl runs fp8lab's arithmetic as WGSL compute shaders on any GPU
// through WebGPU (github.com/cogentcore/webgpu): natively through
// wgpu-native (Vulkan, Metal, D3D12; lavapipe on a CPU) when built with cgo,
// and in a browser when built for GOOS=js GOARCH=wasm. Built without cgo for
// a native target, [Open] returns an error wrapping [ErrNoAdapter].
//
// # The runner
//
// [Open] picks an adapter (a discrete GPU before an integrated one, a virtual
// one, a CPU implementation; Vulkan, Metal or D3D12, an OpenGL one only when
// named; or the one named by [Options.Adapter] / $FP8LAB_ADAPTER; the
// OpenGL backend is started only when no other adapter fits, see
// [EnvBackends]), requests every device limit
// field by field with explicit numbers (larger buffers and workgroup memory
// than WebGPU's defaults, capped by what the adapter offers), and reports
// what it chose in [AdapterInfo]. Shader compilation and validation errors
// come back as Go errors (natively the binding wraps each call in an error
// scope; in the browser the runner pushes and pops the device's own scopes),
// never as a buffer of zeros. Kernels are timed with timestamp queries
// where the adapter has them, else with the wall clock around submit and
// wait ([Timing]). Every method takes a context and checks it between
// submissions; a [Runner] is safe for concurrent use (calls are serialized)
// and must be closed.
//
// # Bit-exact kernels
//
// These use integer arithmetic only, so that no driver can contract,
// reassociate or flush what they compute (NVIDIA contracts a*b+c into an
// FMA, lavapipe does not; see [Runner.ProbeFMA]):
//
//   - [Runner.DecodeFP8] and [Runner.EncodeFP8]: e4m3/e5m2 conversions,
//     equal to package fp8 for all codes and all float32 inputs checked
//     (every range boundary of the H200's conversion tables ±2 ulps, and
//     random bit patterns), NaN patterns included;
//   - [Runner.Chain] and [Runner.Step]: the T-FDPA step of
//     tensorcore-numerics.md §2 and chains of it with promotion, equal to
//     accum.Chain bit for bit for every model [Emulations] lists
//     (sm100.mma.sync.bf16.f32, sm100.mma.sync.e4m3.f32,
//     sm100.mma.sync.e5m2.f32, sm100.mma.sync.f16.f32,
//     sm100.tcgen05.f16.f32, sm100.tcgen05.f8f6f4.f32,
//     sm80.mma.sync.bf16.f32, sm80.mma.sync.f16.f32, sm89.mma.sync.e4m3.f32,
//     sm89.mma.sync.e5m2.f32, sm90.mma.sync.e4m3.f32,
//     sm90.mma.sync.e5m2.f32, sm90.wgmma.bf16.f32, sm90.wgmma.e4m3.f32,
//     sm90.wgmma.e5m2.f32, sm90.wgmma.f16.f32; TestDocClaims checks the
//     list): the models one of [StepShapes]' rows accepts by their
//     parameters (kind, input format, K, the step's L, F, rounding,
//     e_zero), never by name, on the H200 captures and on random batches
//     (package wgslcheck: CheckCaptures, CheckRandom); the one exception is
//     the payload of a NaN result, always the canonical 0x7fffffff (Go's own
//     float32 add may propagate another NaN where accum adds in Go);
//   - [Runner.AddF32]: the integer FP32 adder (round to nearest even,
//     subnormals kept) that promotion and the mma.sync emulation use;
//   - [Runner.SimDecode]: the attention simulator's decode path (package
//     attention, attention.Run for one query per head): the same tiles in the
//     same order, both GEMMs through the T-FDPA chains, the online softmax,
//     P cast to the dtype and promotion never / every tile / every N tiles,
//     split-KV decode (a workgroup per split, attention's own combine on
//     the host), for e4m3/e5m2 caches and bf16/f16 ones (a 16-bit step with i32
//     exponents, 2 codes a word: tfdpa_step16), with
//     every FP32 multiply, divide, add and a correctly rounded exp2 done in
//     integer arithmetic, so the whole output equals attention.Run bit for
//     bit on any adapter (wgslcheck.CheckSimDecode; on an H200, which fuses
//     a*b+c, 6656/6656 outputs up to 128k tokens).
//
// Widths: WGSL has no 64-bit integers. A step's terms are below 2^27 (F =
// 25) and a step of 32 products sums below 2^33, but each sign's part stays
// below 2^32, so wide steps keep positive and negative terms in two u32 sums.
// The 16-bit step: a significand product is below 2^22 (f16) and is shifted
// by F − 2·mbits to below 2^27; each sign's part of 16 products and c stays
// below 2^32; exponents are i32 (bf16 products span 2^−266 … 2^256).
// Long K loops are cut into dispatches that carry the accumulators in a
// buffer: lavapipe ends the loops of an invocation, silently, after about
// 65535 iterations of all its loops together ([Runner.LoopIterations]
// measures it).
//
// # Native arithmetic
//
// [Runner.NativeDot] sums products in the GPU's own f32 arithmetic
// (sequential, as a kernel author writes it, or a pairwise tree), for
// comparison with accum's baselines. [Runner.DecodeAttention] is a
// split-KV decode attention over an FP16 or e4m3 KV cache, in f32, for speed
// ([Runner.BenchDecode]; [DecodeConfig.Math] selects a variant, f16 math is
// refused because the bundled WGSL compiler has no f16); it agrees with a float64 attention over the same
// cache values to about 1e-6 (its tests). [Runner.BenchChain] and
// [Runner.ReadBandwidth] measure the emulation's throughput and the device's
// streaming bandwidth.
//
// # Where things are
//
// The [Runner] is one device (runner.go; gpu*.go and adapter.go are its
// backends). Its methods, by noun: the emulation kernels, bit-exact
// (tfdpa.go: [Runner.Chain], [Runner.Step]; convert.go, narrow.go: the
// conversions and [Runner.AddF32]; scaled.go: [Runner.ScaledStep];
// bench.go: [Runner.BenchChain]); the attention simulator (attnsim*.go:
// [Runner.SimDecode], [Runner.SimDecodeTrials], [Runner.SimDecodeBatch],
// [Runner.BenchSimDecode]); native arithmetic (native.go: [Runner.NativeDot],
// [Runner.ProbeFMA], [Runner.LoopIterations], [Runner.ReadBandwidth]); native
// decode (attention.go: [Runner.DecodeAttention], [Runner.BenchDecode]); and
// the benchmarks' warm-up (measure.go). The checks that compare the kernels
// with the H200 captures, accum, fp8 and attention.Run are package
// wgslcheck's, outside this runtime, which does not read captures.
//
// The WGSL sources are embedded ([Shader], [Shaders]; shaders.go lists
// them); every kernel's module is assembled one way: generated constants,
// the library files it includes, its kernel file, common.wgsl. Package
// wgsl depends on fp8, accum (the models' parameters, from which the
// kernels' constants and tables are derived), attention (the
// configuration, plan and cache types of SimDecode, and its combine),
// internal/cpufeat (whether the host runs packBytes' AVX2 kernel),
// internal/wgpuinst (a wgpu-native instance of the primary backends) and
// internal/hugemem (huge pages for the packed caches' buffers).
package wgsl
