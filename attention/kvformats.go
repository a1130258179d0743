package attention

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/fp8lab/fp8lab/fp8"
)

// KVFormat is the format a KV cache is stored in: a 16-bit float, an fp8
// format with separate scales, or a block-scaled format (elements with one
// scale per block of consecutive channels of one token and head).
//
// Every format is a row of [KVFormatTable]; the methods below read that
// row, so a new KV format is a row (and, where its arithmetic is new, the
// step that computes it), not a new case in a switch. KVFormat(i) is row i.
type KVFormat uint8

// The KV-cache formats: the indices of their rows in KVFormatTable.
const (
	KVInvalid KVFormat = iota
	KVBF16             // bfloat16, no scale
	KVFP16             // float16, no scale
	KVE4M3             // e4m3 with scales of a Granularity
	KVE5M2             // e5m2 with scales of a Granularity
	KVMXFP8            // OCP MXFP8: e4m3 elements, one ue8m0 (power of two) scale per 32 channels
	KVNVFP4            // NVFP4: e2m1 elements, one ue4m3 scale per 16 channels, one FP32 tensor scale
	KVMXFP4            // OCP MXFP4: e2m1 elements, one ue8m0 scale per 32 channels
)

// KVFormatRow describes one KV-cache format: how its elements and scales
// are stored and where the rule comes from. QuantizeKV, the kernels, the
// WGSL simulator and the experiments read nothing else about a format.
//
// The scale rules a row selects (see QuantizeKV for the exact arithmetic):
//   - Scaled: scales of a Granularity, amax/MaxFinite(Elem) (fp8.AmaxScale)
//     or 1.0 as KVSpec.Scale chooses; the element code is cast(x / s).
//   - Block > 0 with BlockScale ue8m0: the OCP MX rule, per block s =
//     2^(floor(log2 amax) − Emax(Elem)), clamped to ue8m0's range.
//   - Block > 0 with BlockScale ue4m3: the NVFP4 rule, s = ue4m3(amax /
//     MaxFinite(Elem) / t), t the FP32 tensor scale when TensorScale (1.0,
//     or amax/(448·MaxFinite(Elem)) as KVSpec.Scale chooses).
//
// Which paths read a row follows from it (KVSpec.Check): PathDirect the
// formats without block scales, the dequantizing paths every format whose
// codes have at most 8 bits or are 16-bit floats, PathBlockScaled the
// block formats that an architecture's Block table names an instruction
// for (Arch.Block).
type KVFormatRow struct {
	Name    string   // what String returns and ParseKVFormat reads
	Aliases []string // other names ParseKVFormat reads
	// Elem is the format of the stored element codes.
	Elem fp8.Format
	// Scaled: the format takes separate scales of a Granularity (e4m3, e5m2).
	Scaled bool
	// Block is the number of consecutive channels of one token and head
	// sharing a block scale (0: no block scales); BlockScale is that
	// scale's format (fp8.FormatUE8M0 or fp8.FormatUE4M3).
	Block      int
	BlockScale fp8.Format
	// TensorScale: one FP32 tensor scale on top of the block scales,
	// chosen by KVSpec.Scale (NVFP4).
	TensorScale bool
	// Doc says what the format is; Source where its rule is specified.
	Doc, Source string
}

// KVFormatTable is the table of KV-cache formats; row 0 is KVInvalid.
// Adding a format is appending a row (before any cache is made; the
// package reads the table, never writes it): it is then parsed by
// ParseKVFormat, listed by KVFormats (the choices of the experiments'
// format parameters) and quantized by QuantizeKV by its row's rules.
var KVFormatTable = []KVFormatRow{
	{Name: "invalid"},
	{Name: "bf16", Elem: fp8.FormatBF16, Doc: "bfloat16, no scale", Source: "every bf16 attention kernel"},
	{Name: "f16", Aliases: []string{"fp16"}, Elem: fp8.FormatFP16, Doc: "float16, no scale", Source: "IEEE 754 binary16"},
	{Name: "e4m3", Elem: fp8.FormatE4M3, Scaled: true, Doc: "e4m3 with scales of a Granularity", Source: "OCP OFP8 (E4M3FN); FA3 and vLLM's fp8 KV cache"},
	{Name: "e5m2", Elem: fp8.FormatE5M2, Scaled: true, Doc: "e5m2 with scales of a Granularity", Source: "OCP OFP8 (E5M2); vLLM's fp8_e5m2 KV cache"},
	{Name: "mxfp8", Elem: fp8.FormatE4M3, Block: 32, BlockScale: fp8.FormatUE8M0, Doc: "e4m3 elements, one ue8m0 (power of two) scale per 32 channels", Source: "OCP Microscaling Formats (MX) v1.0 §5, §6.3"},
	{Name: "nvfp4", Elem: fp8.FormatE2M1, Block: 16, BlockScale: fp8.FormatUE4M3, TensorScale: true, Doc: "e2m1 elements, one ue4m3 scale per 16 channels, one FP32 tensor scale", Source: "NVIDIA PTX ISA, tcgen05.mma kind::mxf4nvf4; NVIDIA's NVFP4 (TensorRT Model Optimizer)"},
	{Name: "mxfp4", Elem: fp8.FormatE2M1, Block: 32, BlockScale: fp8.FormatUE8M0, Doc: "e2m1 elements, one ue8m0 scale per 32 channels", Source: "OCP Microscaling Formats (MX) v1.0 §5, §6.3"},
}

// Check reports what makes the row one QuantizeKV cannot store: no
// element format; scales of a Granularity and block scales both; block
// scales of a format other than ue8m0 and ue4m3, or over elements wider
// than 8 bits; a tensor scale without ue4m3 block scales.
func (r KVFormatRow) Check() error {
	switch {
	case r.Elem == fp8.FormatInvalid || !r.Elem.Valid():
		return fmt.Errorf("attention: KV format %q: no element format", r.Name)
	case r.Block < 0 || (r.Block > 0 && r.Scaled):
		return fmt.Errorf("attention: KV format %q: block %d with scales of a granularity", r.Name, r.Block)
	case r.Block > 0 && r.BlockScale != fp8.FormatUE8M0 && r.BlockScale != fp8.FormatUE4M3:
		return fmt.Errorf("attention: KV format %q: block scales in %s (want ue8m0, the MX rule, or ue4m3, the NVFP4 rule)", r.Name, r.BlockScale)
	case r.Block > 0 && r.Elem.CodeBits() > 8:
		return fmt.Errorf("attention: KV format %q: block-scaled %s elements (at most 8 bits)", r.Name, r.Elem)
	case r.TensorScale && (r.Block == 0 || r.BlockScale != fp8.FormatUE4M3):
		return fmt.Errorf("attention: KV format %q: a tensor scale needs ue4m3 block scales", r.Name)
	}
	return nil
}

// row is f's row of KVFormatTable (KVInvalid's for an unknown f).
func (f KVFormat) row() *KVFormatRow {
	if int(f) < len(KVFormatTable) {
		return &KVFormatTable[f]
	}
	return &KVFormatTable[KVInvalid]
}

// Row returns a copy of f's row of KVFormatTable (KVInvalid's, named
// "invalid", for a format outside it).
func (f KVFormat) Row() KVFormatRow { return *f.row() }

// KVFormats lists the formats in the table's order, KVInvalid left out.
func KVFormats() []KVFormat {
	out := make([]KVFormat, 0, len(KVFormatTable)-1)
	for i := 1; i < len(KVFormatTable); i++ {
		out = append(out, KVFormat(i))
	}
	return out
}

// KVFormatNames returns the names of KVFormats, in order.
func KVFormatNames() []string {
	var out []string
	for _, f := range KVFormats() {
		out = append(out, f.String())
	}
	return out
}

// String returns the row's name: bf16, f16, e4m3, e5m2, mxfp8, nvfp4,
// mxfp4, or KVFormat(N) for a format outside the table.
func (f KVFormat) String() string {
	if int(f) < len(KVFormatTable) {
		return KVFormatTable[f].Name
	}
	return fmt.Sprintf("KVFormat(%d)", f)
}

// ParseKVFormat reads a name String returns, or one of the row's aliases
// (fp16 for f16), in any case.
func ParseKVFormat(s string) (KVFormat, error) {
	s = strings.ToLower(s)
	for _, f := range KVFormats() {
		if r := f.row(); r.Name == s || slices.Contains(r.Aliases, s) {
			return f, nil
		}
	}
	return KVInvalid, fmt.Errorf("unknown KV format %q (want one of %s)", s, strings.Join(KVFormatNames(), ", "))
}

// Elem is the format of the stored elements (fp8.FormatInvalid for
// KVInvalid).
func (f KVFormat) Elem() fp8.Format { return f.row().Elem }

// Block is the number of channels sharing a block scale (0 for formats
// without block scales).
func (f KVFormat) Block() int { return f.row().Block }

// BlockScale is the format of the block scales (fp8.FormatInvalid for
// formats without block scales).
func (f KVFormat) BlockScale() fp8.Format {
	if f.Block() == 0 {
		return fp8.FormatInvalid
	}
	return f.row().BlockScale
}

// CodeBytes is the number of bytes one element code takes stored a code to
// a byte or two, as the GPU kernels store them: 2 for the 16-bit formats, 1
// for fp8 and the narrower ones (an e2m1 code in a byte of its own), 0 for
// KVInvalid.
func (f KVFormat) CodeBytes() int { return (f.Elem().CodeBits() + 7) / 8 }

// Scaled reports whether the format takes scales of a Granularity (e4m3 and
// e5m2).
func (f KVFormat) Scaled() bool { return f.row().Scaled }

// TensorScale reports whether the format has an FP32 tensor scale on top of
// its block scales, chosen by KVSpec.Scale (NVFP4).
func (f KVFormat) TensorScale() bool { return f.row().TensorScale }

// Granularity says which elements of K or V share a scale.
type Granularity uint8

// The granularities.
const (
	PerTensor    Granularity = iota // one scale (vLLM's default)
	PerHead                         // one per KV head (FA3's descale shape)
	PerTokenHead                    // one per token and KV head, from that token's amax, written with the token
	PerChannel                      // one per channel of a KV head (K only: KIVI-style outlier channels)
)

var granularityNames = [...]string{"tensor", "head", "token-head", "channel"}

// String returns tensor, head, token-head or channel.
func (g Granularity) String() string {
	if int(g) < len(granularityNames) {
		return granularityNames[g]
	}
	return fmt.Sprintf("Granularity(%d)", g)
}

// ParseGranularity reads a name String returns.
func ParseGranularity(s string) (Granularity, error) {
	for i, n := range granularityNames {
		if n == s {
			return Granularity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown scale granularity %q (want tensor, head, token-head or channel)", s)
}

// ScaleChoice is how static scales are chosen (the vLLM/SGLang choices).
type ScaleChoice uint8

// The choices.
const (
	ScaleOne    ScaleChoice = iota // 1.0: no calibration (vLLM's default without a checkpoint scale)
	ScaleAmax                      // amax of the whole cache / the format's largest value
	ScalePrefix                    // amax of a calibration prefix (the first tokens) / the largest value
)

var scaleChoiceNames = [...]string{"one", "amax", "prefix"}

// String returns one, amax or prefix.
func (c ScaleChoice) String() string {
	if int(c) < len(scaleChoiceNames) {
		return scaleChoiceNames[c]
	}
	return fmt.Sprintf("ScaleChoice(%d)", c)
}

// ParseScaleChoice reads a name String returns.
func ParseScaleChoice(s string) (ScaleChoice, error) {
	for i, n := range scaleChoiceNames {
		if n == s {
			return ScaleChoice(i), nil
		}
	}
	return 0, fmt.Errorf("unknown scale choice %q (want one, amax or prefix)", s)
}

// Path is how the kernel feeds the cache to the tensor core.
type Path uint8

// The paths (see QuantizeKV).
const (
	// PathDirect: the MMA reads the stored codes; per-tensor or per-head
	// descales are applied in FP32 outside it (to S for K, to O for V).
	// FA3's FP8 kernel (Dao-AILab/flash-attention
	// hopper/mainloop_fwd_sm90_tma_gmma_ws.hpp: q/k/v descale folded into
	// softmax_scale_log2 and the final O scale; ../shared/docs/
	// fp8-attention.md) and every bf16/fp16 cache.
	PathDirect Path = iota
	// PathDequantBF16: each element is dequantized in FP32 (code × scales)
	// and rounded to bf16 before a bf16 MMA with a bf16 query and bf16 P:
	// vLLM's Triton unified attention (vllm-project/vllm
	// vllm/attention/ops/triton_unified_attention.py: K =
	// (K_load.to(tl.float32) * tl.load(k_scale)).to(Q.dtype), V alike,
	// then tl.dot with Q), and the dequantize-to-16-bit KV paths of other
	// kernels (sglang's quantized-KV docs describe the same read path).
	PathDequantBF16
	// PathDequantE4M3: each element is dequantized in FP32 and rounded
	// (RNE, satfinite) to e4m3 before an e4m3 MMA with an e4m3 query and
	// P: TensorRT-LLM's NVFP4 KV cache, whose attention math "is in FP8"
	// (NVIDIA/TensorRT-LLM#6244, XQA on Hopper, trtllm-gen on Blackwell).
	// The order of the FP32 operations inside that kernel is not public;
	// this path's (code × block scale, then × tensor scale, one rounding
	// to e4m3) is the simplest one consistent with it.
	PathDequantE4M3
	// PathBlockScaled: the MMA reads the block-scaled codes and their
	// scales natively: Blackwell tcgen05.mma kind::mxf8f6f4 (MXFP8),
	// kind::mxf4 (MXFP4), kind::mxf4nvf4 with ue4m3 scales (NVFP4), FP32
	// accumulator in tensor memory, as SageAttention3 computes attention
	// (Zhang et al. 2025, arXiv 2505.11594). K keeps its blocks along
	// head_dim; V is stored with its blocks along tokens (per channel, 32 or
	// 16 consecutive tokens), the layout P·V needs; Q and P are quantized
	// per block in the kernel. See blockscaled.go for every choice.
	PathBlockScaled
)

var pathNames = [...]string{"direct", "dequant-bf16", "dequant-e4m3", "block-scaled"}

// String returns direct, dequant-bf16, dequant-e4m3 or block-scaled.
func (p Path) String() string {
	if int(p) < len(pathNames) {
		return pathNames[p]
	}
	return fmt.Sprintf("Path(%d)", p)
}

// ParsePath reads a name String returns.
func ParsePath(s string) (Path, error) {
	for i, n := range pathNames {
		if n == s {
			return Path(i), nil
		}
	}
	return 0, fmt.Errorf("unknown path %q (want direct, dequant-bf16, dequant-e4m3 or block-scaled)", s)
}

// KVSpec describes how a cache is stored and fed to the MMA.
type KVSpec struct {
	Format KVFormat
	// KScales and VScales are the granularities of an e4m3/e5m2 cache's
	// scales (PerChannel for K only); ignored by the other formats.
	KScales, VScales Granularity
	// Scale chooses the static scales: the tensor, head or channel scales
	// of e4m3/e5m2 and NVFP4's FP32 tensor scale. Per-token-head scales and
	// block scales are always the amax of their own elements.
	Scale ScaleChoice
	// PrefixTokens is the calibration prefix of ScalePrefix (1 … tokens).
	PrefixTokens int
	Path         Path
	// Saturation of the e4m3/e5m2 element casts (block formats saturate).
	Saturation fp8.Saturation
}

// DType is the format the MMA reads: the stored one for PathDirect, bf16
// or e4m3 for the dequantizing paths. Q and P are cast to it.
func (s KVSpec) DType() fp8.Format {
	switch s.Path {
	case PathDequantBF16:
		return fp8.FormatBF16
	case PathDequantE4M3:
		return fp8.FormatE4M3
	}
	return s.Format.Elem()
}

// String names the spec compactly, e.g. "e4m3 k:channel v:tensor amax
// dequant-bf16".
func (s KVSpec) String() string {
	var b strings.Builder
	b.WriteString(s.Format.String())
	if s.Format.Scaled() {
		fmt.Fprintf(&b, " k:%s v:%s", s.KScales, s.VScales)
	}
	if s.Format.Scaled() || s.Format.TensorScale() {
		b.WriteString(" " + s.Scale.String())
		if s.Scale == ScalePrefix {
			fmt.Fprintf(&b, "(%d)", s.PrefixTokens)
		}
	}
	b.WriteString(" " + s.Path.String())
	return b.String()
}

// KVShape is the shape of K ([Tokens][Heads][KDim]) and V
// ([Tokens][Heads][VDim]); VDim 0 means KDim.
type KVShape struct{ Tokens, Heads, KDim, VDim int }

// Check validates the spec for shape; every error names the limit.
func (s KVSpec) Check(shape KVShape) error {
	f := s.Format
	if f.Elem() == fp8.FormatInvalid {
		return fmt.Errorf("attention: KV format %s is not one of %s", f, strings.Join(KVFormatNames(), ", "))
	}
	if err := f.row().Check(); err != nil {
		return err
	}
	switch s.Path {
	case PathDirect:
		if f.Block() > 0 {
			return fmt.Errorf("attention: a %s cache needs block-scaled MMA (block-scaled) or a dequantizing path (dequant-bf16, dequant-e4m3)", f)
		}
		if f.Scaled() && (s.KScales > PerHead || s.VScales > PerHead) {
			return fmt.Errorf("attention: %s/%s scales cannot be applied outside an fp8 MMA (FA3 takes per-tensor or per-head descales): use dequant-bf16", s.KScales, s.VScales)
		}
	case PathDequantBF16, PathDequantE4M3:
	case PathBlockScaled:
		if f.Block() == 0 {
			return fmt.Errorf("attention: block-scaled MMA (tcgen05 kind::mxf8f6f4/mxf4/mxf4nvf4) reads mxfp8, nvfp4 or mxfp4 caches; a %s cache has no block scales (use direct, dequant-bf16 or dequant-e4m3)", f)
		}
	default:
		return fmt.Errorf("attention: unknown path %d", s.Path)
	}
	if f.Scaled() {
		if s.KScales > PerChannel || s.VScales > PerTokenHead {
			return fmt.Errorf("attention: scale granularity k:%s v:%s (V takes tensor, head or token-head)", s.KScales, s.VScales)
		}
	}
	if s.Scale > ScalePrefix {
		return fmt.Errorf("attention: unknown scale choice %d", s.Scale)
	}
	if s.Scale == ScalePrefix && (s.PrefixTokens < 1 || s.PrefixTokens > shape.Tokens) {
		return fmt.Errorf("attention: calibration prefix of %d tokens: want 1 … %d (the cache's tokens)", s.PrefixTokens, shape.Tokens)
	}
	for _, d := range []int{shape.KDim, shape.VDim} {
		if b := f.Block(); b > 0 && d%b != 0 {
			return fmt.Errorf("attention: head_dim %d is not a multiple of %s's block of %d", d, f, b)
		}
	}
	return nil
}

// QuantizeKV stores k and v (laid out [tokens][heads][dim], float32, VDim
// wide for v) in spec's format and returns the cache the kernel reads: its
// codes in spec.DType() and its factored descales. For every element x:
//
//   - bf16/f16: code = cast(x) (RNE).
//   - e4m3/e5m2: code = cast(x / s) (a float32 division, RNE, with
//     spec.Saturation), s the element's scale: 1.0, amax/max (448 or 57344)
//     of its group over the whole cache (ScaleAmax) or over the first
//     PrefixTokens tokens (ScalePrefix; a later token beyond the range
//     saturates), or, per token and head, the amax of that token's head
//     (PerTokenHead). The groups: the tensor, a KV head, a channel of a
//     KV head (PerChannel).
//   - MXFP8/MXFP4 (OCP MX v1.0 §6.3): per block of 32 channels of one
//     token and head, s = 2^(floor(log2 amax) − emax_elem) (emax 8 for e4m3,
//     2 for e2m1), clamped to ue8m0's 2^−127 … 2^127 (s = 1 for an all-zero
//     block); code = cast(x / s), RNE, saturating.
//   - NVFP4: a FP32 tensor scale t (1.0, or amax/(448·6) of the cache or
//     the prefix); per block of 16, s = ue4m3(amax_block / 6 / t) (RNE,
//     saturating at 448); code = e2m1(x / (s·t)) with s·t a float32
//     product, RNE, saturating at 6 (a block whose s rounds to 0 stores
//     zeros).
//
// The stored value is code × s (× t). PathDirect keeps the codes and
// factors per-tensor/per-head scales out (KV.KScales/VScales); the
// dequantizing paths compute the stored value in FP32 (code × s, then × t)
// and round it to bf16 (RNE) or e4m3 (RNE, satfinite), with descale 1.
func QuantizeKV(k, v []float32, shape KVShape, spec KVSpec) (*KV, error) {
	return QuantizeKVContext(context.Background(), k, v, shape, spec)
}

// QuantizeKVContext is [QuantizeKV] that stops, returning ctx.Err(), once
// ctx is cancelled (it looks every 1024 tokens). A large cache (64Ki
// elements or more) is quantized on GOMAXPROCS goroutines, 1024 tokens at
// a time (a block-scaled V, 8 channel rows at a time): the codes and
// scales are the same bits as on one, since a token's codes depend only on
// its own values and the static scales, fixed first from the whole
// calibration range, and a V block only on its own tokens.
func QuantizeKVContext(ctx context.Context, k, v []float32, shape KVShape, spec KVSpec) (*KV, error) {
	return quantizeKV(ctx, k, v, shape, spec, 0)
}

// quantizeKV is QuantizeKVContext on workers goroutines (0: GOMAXPROCS).
func quantizeKV(ctx context.Context, k, v []float32, shape KVShape, spec KVSpec, workers int) (*KV, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if shape.VDim == 0 {
		shape.VDim = shape.KDim
	}
	if shape.Tokens < 1 || shape.Heads < 1 || shape.KDim < 1 {
		return nil, fmt.Errorf("attention: KV shape %d tokens × %d heads × %d/%d: every dimension must be at least 1", shape.Tokens, shape.Heads, shape.KDim, shape.VDim)
	}
	if len(k) != shape.Tokens*shape.Heads*shape.KDim || len(v) != shape.Tokens*shape.Heads*shape.VDim {
		return nil, fmt.Errorf("attention: KV shape %d tokens × %d heads × %d/%d needs %d keys and %d values, got %d and %d",
			shape.Tokens, shape.Heads, shape.KDim, shape.VDim, shape.Tokens*shape.Heads*shape.KDim, shape.Tokens*shape.Heads*shape.VDim, len(k), len(v))
	}
	if err := spec.Check(shape); err != nil {
		return nil, err
	}
	if spec.Path == PathBlockScaled {
		return quantizeBlockScaled(ctx, k, v, shape, spec, workers)
	}
	dt := spec.DType()
	sat := spec.Saturation
	if spec.Path != PathDirect {
		sat = fp8.SatFinite
	}
	kq := newTokenQuant(k, shape.Tokens, shape.Heads, shape.KDim, spec, spec.KScales)
	vq := newTokenQuant(v, shape.Tokens, shape.Heads, shape.VDim, spec, spec.VScales)
	kScale, vScale := []float32{1}, []float32{1}
	if spec.Path == PathDirect && spec.Format.Scaled() {
		kScale, vScale = slices.Clone(kq.static), slices.Clone(vq.static)
	}
	c := newKV(shape.Tokens, shape.Heads, shape.KDim, shape.VDim, dt, sat, kScale, vScale)
	c.kq, c.vq = kq, vq
	if err := c.setTokens(ctx, k, v, workers); err != nil {
		return nil, err
	}
	return c, nil
}

// tokenQuant stores one token of one head of K or V in a KV format and
// returns the codes the MMA reads. Static scales (per tensor, head or
// channel) and NVFP4's tensor scale are fixed when the cache is made;
// per-token-head and block scales come from the token's own values.
type tokenQuant struct {
	f      KVFormat
	g      Granularity
	sat    fp8.Saturation
	path   Path
	dt     fp8.Format // the MMA's format
	dim    int
	e2m1   *nearest // the encoders of e2m1 elements and ue4m3 scales
	ue4m3  *nearest
	static []float32 // scaled formats: 1 (tensor), heads (head) or heads·dim (channel) scales
	tensor float32   // NVFP4's tensor scale (1 for the others)
	// elemVal holds float32(f.Elem().Value(code)) per code of an element
	// format of at most 8 bits (nil for the 16-bit ones): the values the
	// dequantizing paths multiply, looked up instead of decoded.
	elemVal []float32
}

// newTokenQuant fixes the static scales of x ([tokens][heads][dim]) for spec.
func newTokenQuant(x []float32, tokens, heads, dim int, spec KVSpec, g Granularity) *tokenQuant {
	q := &tokenQuant{f: spec.Format, g: g, sat: spec.Saturation, path: spec.Path, dt: spec.DType(), dim: dim, tensor: 1,
		e2m1: nearestTable(fp8.FormatE2M1), ue4m3: nearestTable(fp8.FormatUE4M3)}
	elem := q.f.Elem()
	if bits := elem.CodeBits(); bits <= 8 {
		q.elemVal = make([]float32, 1<<bits)
		for c := range q.elemVal {
			q.elemVal[c] = float32(elem.Value(uint32(c)))
		}
	}
	calib := tokens
	if spec.Scale == ScalePrefix {
		calib = spec.PrefixTokens
	}
	switch {
	case q.f.Scaled() && g != PerTokenHead:
		n := 1
		switch g {
		case PerHead:
			n = heads
		case PerChannel:
			n = heads * dim
		}
		amax := make([]float32, n)
		if spec.Scale != ScaleOne {
			for t := 0; t < calib; t++ {
				for h := 0; h < heads; h++ {
					row := x[(t*heads+h)*dim:][:dim]
					if g != PerChannel { // one group for the row
						i := q.group(h, 0)
						amax[i] = max(amax[i], amax32(row))
						continue
					}
					for d, y := range row {
						i := q.group(h, d)
						amax[i] = max(amax[i], abs32(y))
					}
				}
			}
		}
		q.static = make([]float32, n)
		for i, a := range amax {
			q.static[i] = fp8.AmaxScale(a, elem) // 1.0 for ScaleOne (amax 0)
		}
	case q.f.TensorScale() && spec.Scale != ScaleOne:
		if a := amax32(x[:calib*heads*dim]); a > 0 && !math.IsInf(float64(a), 0) {
			q.tensor = a / (fp8.MaxFinite(q.f.BlockScale()) * fp8.MaxFinite(elem)) // NVFP4: 448·6
		}
	}
	return q
}

// group is the index of the static scale of channel d of head h.
func (q *tokenQuant) group(h, d int) int {
	switch q.g {
	case PerHead:
		return h
	case PerChannel:
		return h*q.dim + d
	}
	return 0
}

// quantize stores x (dim values of head h) and writes the MMA's codes to
// out (out[i·stride]). The element codes are converted a slice at a time
// (fp8.Format.EncodeScaled, elemCodes: the codes of the element-wise rule
// below, bit for bit), then finish turns them into the MMA's.
func (q *tokenQuant) quantize(x []float32, h int, out []uint16, stride int) {
	elem := q.f.Elem()
	switch {
	case !q.f.Scaled() && q.f.Block() == 0: // bf16, f16
		if q.dt == elem {
			elem.EncodeSlice(out, stride, x, fp8.SatFinite)
			return
		}
		for i, y := range x {
			c := elem.Encode(y, fp8.SatFinite)
			c = q.dt.Encode(float32(elem.Value(c)), fp8.SatFinite)
			out[i*stride] = uint16(c)
		}
	case q.f.Scaled() && q.g == PerChannel:
		for i, y := range x {
			s := q.static[q.group(h, i)]
			q.put(out, i*stride, elem.Encode(y/s, q.sat), s)
		}
	case q.f.Scaled(): // one scale for the token's head
		var s float32
		if q.g == PerTokenHead {
			s = fp8.AmaxScale(amax32(x), elem)
		} else {
			s = q.static[q.group(h, 0)]
		}
		if q.path == PathDirect {
			elem.EncodeScaled(out, stride, x, s, q.sat)
			return
		}
		var codes [codeChunk]uint16
		for lo := 0; lo < len(x); lo += codeChunk {
			blk := x[lo:min(lo+codeChunk, len(x))]
			elem.EncodeScaled(codes[:], 1, blk, s, q.sat)
			q.finish(codes[:len(blk)], s, out[lo*stride:], stride)
		}
	default: // block formats
		b := q.f.Block()
		var codes [codeChunk]uint16
		for lo := 0; lo < len(x); lo += b {
			blk := x[lo : lo+b]
			s, _ := q.blockScale(amax32(blk))
			for c := 0; c < b; c += codeChunk {
				sub := blk[c:min(c+codeChunk, b)]
				q.elemCodes(codes[:len(sub)], sub, s*q.tensor)
				q.finish(codes[:len(sub)], s, out[(lo+c)*stride:], stride)
			}
		}
	}
}

// codeChunk is the number of element codes quantize converts at a time.
const codeChunk = 128

// put writes the MMA's code of an element whose element code is code and
// whose scale is scale at out[i]: the code itself (PathDirect), or code ×
// scale (× the tensor scale) in FP32 rounded to the MMA's format (RNE,
// satfinite), the code of 0 for a zero scale.
func (q *tokenQuant) put(out []uint16, i int, code uint32, scale float32) {
	switch {
	case q.path == PathDirect:
		out[i] = uint16(code)
	case scale == 0:
		out[i] = uint16(q.dt.Encode(0, fp8.SatFinite))
	default:
		v := q.elemVal[code] * scale
		if q.tensor != 1 {
			v *= q.tensor
		}
		out[i] = uint16(q.dt.Encode(v, fp8.SatFinite))
	}
}

// finish is put of each of codes (one scale), to out[i·stride]: the same
// FP32 operations in the same order, the rounding to the MMA's format a
// slice at a time (fp8.Format.EncodeSlice: Encode's codes).
func (q *tokenQuant) finish(codes []uint16, scale float32, out []uint16, stride int) {
	switch {
	case q.path == PathDirect:
		for i, c := range codes {
			out[i*stride] = c
		}
		return
	case scale == 0:
		z := uint16(q.dt.Encode(0, fp8.SatFinite))
		for i := range codes {
			out[i*stride] = z
		}
		return
	}
	var v [codeChunk]float32
	for i, c := range codes {
		y := q.elemVal[c] * scale
		if q.tensor != 1 {
			y *= q.tensor
		}
		v[i] = y
	}
	q.dt.EncodeSlice(out, stride, v[:len(codes)], fp8.SatFinite)
}

// elemCodes writes elemCode(x[i], div) to dst[i] for every i, the element
// codes of a block a slice at a time: e4m3 through fp8.Format.EncodeScaled
// (EncodeE4M3's codes), e2m1 too for a finite div (its NaN quotients, which
// are then exactly the NaN elements, set to +0 after, as encodeE2M1 does).
func (q *tokenQuant) elemCodes(dst []uint16, x []float32, div float32) {
	switch elem := q.f.Elem(); {
	case div == 0:
		clear(dst[:len(x)])
	case elem == fp8.FormatE4M3:
		elem.EncodeScaled(dst, 1, x, div, fp8.SatFinite)
	case elem == fp8.FormatE2M1 && !math.IsNaN(float64(div)) && !math.IsInf(float64(div), 0):
		elem.EncodeScaled(dst, 1, x, div, fp8.SatFinite)
		for i, y := range x {
			if y != y {
				dst[i] = 0
			}
		}
	default:
		for i, y := range x {
			dst[i] = uint16(q.elemCode(y, div))
		}
	}
}

// blockScale returns the block scale of a block of a block format whose
// largest magnitude is a, and its code: with ue4m3 scales (NVFP4) s =
// ue4m3(a / MaxFinite(elem) / tensor) (RNE, saturating at 448; code in
// ue4m3), with ue8m0 scales (MX) s = mxScale(a) (code in ue8m0, its
// exponent + 127).
func (q *tokenQuant) blockScale(a float32) (float32, uint8) {
	if q.f.BlockScale() == fp8.FormatUE4M3 {
		c := encodeUE4M3(a / fp8.MaxFinite(q.f.Elem()) / q.tensor)
		return fp8.FormatUE4M3.Float32(c), uint8(c) // c is finite: Float32 is its exact value
	}
	x := mxScaleExp(a, q.f.Elem())
	return pow2(x), uint8(x + 127)
}

// elemCode is the element code of y in a block whose divisor (block scale
// × tensor scale, a float32 product) is div: RNE, saturating (e4m3: 448,
// e2m1: 6, any other element format at its largest finite value, NaN to
// +0: encodeNearest); 0 when div is 0.
func (q *tokenQuant) elemCode(y, div float32) uint32 {
	switch elem := q.f.Elem(); {
	case div == 0:
		return 0
	case elem == fp8.FormatE4M3:
		return uint32(fp8.EncodeE4M3(y/div, fp8.SatFinite))
	case elem == fp8.FormatE2M1:
		return encodeE2M1(y / div)
	default:
		return encodeNearest(elem, y/div)
	}
}

// encodeE2M1 is encodeNearest(fp8.FormatE2M1, x) through fp8's e2m1
// conversion, which rounds alike (to nearest, ties to even, saturating at
// ±6, the sign of a zero kept) but gives +6 for NaN, where encodeNearest
// gives +0 (TestEncodeNearestMidpoints checks the two agree).
func encodeE2M1(x float32) uint32 {
	if x != x {
		return 0
	}
	return uint32(fp8.EncodeE2M1(x))
}

// encodeUE4M3 is encodeNearest(fp8.FormatUE4M3, x) through fp8's ue4m3
// conversion, which rounds alike (to nearest, ties to even, saturating at
// 448, every negative input to 0) but gives the NaN code 0x7f for NaN,
// where encodeNearest gives 0 (TestEncodeUE4M3Nearest checks the two
// agree).
func encodeUE4M3(x float32) uint32 {
	if x != x {
		return 0
	}
	return uint32(fp8.EncodeUE4M3(x, fp8.SatFinite))
}

func abs32(x float32) float32 { return float32(math.Abs(float64(x))) }

// amax32 is the largest magnitude in x, what a = max(a, abs32(y)) over x
// from a = 0 gives, NaN (of some payload) when any y is NaN, computed on
// the bit patterns (fp8.MaxAbs): for magnitudes that are not NaN, the
// order of the floats is the order of their bits, and a NaN's bits are
// above every other's. The callers only test a NaN result for being NaN
// (a != a, !(a > 0)), never its payload.
func amax32(x []float32) float32 { return fp8.MaxAbs(x) }

// mxScale is the OCP MX shared scale of a block with largest magnitude a:
// 2^(floor(log2 a) − emax), emax the element format's largest exponent,
// clamped to ue8m0's range; 1 for a zero (or non-finite) amax.
func mxScale(a float32, elem fp8.Format) float32 { return pow2(mxScaleExp(a, elem)) }

// mxScaleExp is the exponent of mxScale(a, elem), −127 … 127, read from
// a's bits: floor(log2 a) is the unbiased exponent of a normal a and
// bits.Len32 − 150 of a subnormal one (a = bits × 2^−149).
func mxScaleExp(a float32, elem fp8.Format) int {
	if !(a > 0) || math.IsInf(float64(a), 0) {
		return 0
	}
	b := math.Float32bits(a)
	e := int(b>>23) - 127
	if b>>23 == 0 {
		e = bits.Len32(b) - 150
	}
	return max(-127, min(127, e-elem.Emax()))
}

// pow2 is 2^x as a float32, for −149 ≤ x ≤ 127 (exact).
func pow2(x int) float32 {
	if x >= -126 {
		return math.Float32frombits(uint32(x+127) << 23)
	}
	return math.Float32frombits(1 << uint(x+149))
}

// encodeNearest returns the code of format f (at most 8 code bits) nearest
// to x, ties to the even code, saturating at the largest finite value; NaN
// gives +0. It serves the formats fp8.Format.Encode does not cover (e2m1,
// ue4m3).
func encodeNearest(f fp8.Format, x float32) uint32 {
	return nearestTable(f).encode(f, x)
}

// encode is encodeNearest with the table of f.
func (t *nearest) encode(f fp8.Format, x float32) uint32 {
	a := math.Abs(float64(x))
	if a != a || (!f.Signed() && x < 0) {
		return 0
	}
	var c uint32
	if t.mid != nil {
		// A small table (e2m1's 8 magnitudes): the index is the count of
		// midpoints below a, plus the ties that go up, counted without a
		// branch on a (a random input's comparisons mispredict).
		i := 0
		for k, m := range t.mid {
			gt := int(math.Float64bits(m-a) >> 63)        // a > m (a is not NaN)
			eq := 1 - int(math.Float64bits(a-m)>>63) - gt // a = m (a − m is +0)
			i += gt + eq*t.up[k]
		}
		c = t.code[i]
		if math.Signbit(float64(x)) && f.Signed() {
			c |= f.SignBit()
		}
		return c
	}
	i := sort.Search(len(t.mag), func(i int) bool { return t.mag[i] >= a })
	switch {
	case i == len(t.mag):
		c = t.code[len(t.mag)-1]
	case i == 0 || t.mag[i] == a:
		c = t.code[i]
	default:
		lo, hi := t.mag[i-1], t.mag[i]
		switch {
		case a-lo < hi-a:
			c = t.code[i-1]
		case a-lo > hi-a:
			c = t.code[i]
		case t.code[i-1]&1 == 0:
			c = t.code[i-1]
		default:
			c = t.code[i]
		}
	}
	if math.Signbit(float64(x)) && f.Signed() {
		c |= f.SignBit()
	}
	return c
}

// nearest is the sorted finite non-negative values of a format and their
// codes.
type nearest struct {
	mag  []float64
	code []uint32
	// mid and up, for a table of at most 16 magnitudes: the midpoints
	// (mag[k] + mag[k+1]) / 2 (exact) and 1 where a tie there goes to
	// code[k+1] (code[k] odd: ties to the even code), else 0.
	mid []float64
	up  []int
}

var (
	nearestMu     sync.Mutex
	nearestTables = map[fp8.Format]*nearest{}
)

func nearestTable(f fp8.Format) *nearest {
	nearestMu.Lock()
	defer nearestMu.Unlock()
	if t, ok := nearestTables[f]; ok {
		return t
	}
	t := &nearest{}
	n := uint32(1) << f.CodeBits()
	for c := uint32(0); c < n; c++ {
		if f.Signed() && c&f.SignBit() != 0 {
			continue
		}
		v := f.Value(c)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		t.mag = append(t.mag, v)
		t.code = append(t.code, c)
	}
	idx := make([]int, len(t.mag))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return t.mag[idx[a]] < t.mag[idx[b]] })
	mag, code := make([]float64, len(idx)), make([]uint32, len(idx))
	for i, j := range idx {
		mag[i], code[i] = t.mag[j], t.code[j]
	}
	t.mag, t.code = mag, code
	if len(t.mag) <= 16 {
		for k := 0; k+1 < len(t.mag); k++ {
			t.mid = append(t.mid, (t.mag[k]+t.mag[k+1])/2)
			t.up = append(t.up, int(t.code[k]&1))
		}
	}
	nearestTables[f] = t
	return t
}
