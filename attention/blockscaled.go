package attention

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// The block-scaled (native) path, PathBlockScaled: the tensor core reads
// block-scaled codes and their scales directly, as Blackwell's tcgen05.mma
// kind::mxf8f6f4 / kind::mxf4 / kind::mxf4nvf4 (block_scale) do, with its
// FP32 accumulator in tensor memory. The design follows SageAttention3
// (Zhang et al. 2025, "SageAttention3: Microscaling FP4 Attention for
// Inference", arXiv 2505.11594; thu-ml/SageAttention,
// sageattention3_blackwell): Q and K quantized per block along head_dim for
// QKᵀ, P per block of consecutive tokens and V per block of consecutive
// tokens of one channel for P·V. Every choice the paper does not pin down
// is stated where it is made and in docs/kv-formats.md.
//
//   - Instructions: mxfp8 sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32 (K 32, ue8m0
//     per 32), mxfp4 sm100.tcgen05.mxf4.f32 (K 64, ue8m0 per 32), nvfp4
//     sm100.tcgen05.mxf4nvf4.ue4m3.f32 (K 64, ue4m3 per 16), the same for
//     both GEMMs (Config.QKModel/PVModel may name another accum
//     Instruction with the same element format, scale format and block).
//   - K: QuantizeKV's codes and block scales along head_dim, unchanged.
//   - Q: q / q_descale (FP32), then per block along head_dim by the rule of
//     the cache's format with a tensor scale of 1: MX s = 2^(floor(log2
//     amax) − emax_elem) (OCP MX v1.0 §6.3), NVFP4 s = ue4m3(amax / 6) (the
//     paper's per-block FP8 scale max|x|/6; no second-level scale for Q).
//   - V: per channel, per block of 32 (MX) / 16 (NVFP4) consecutive tokens
//     (blocks start at token 0), the same rule; NVFP4's FP32 tensor scale
//     of the whole cache as for the other paths. This is the cache layout
//     a native P·V needs: the MMA contracts over tokens, so the scales must
//     run along tokens; a cache whose V blocks run along head_dim cannot
//     feed kind::mxf* for P·V without being re-quantized.
//   - P = exp2(S − m + 8) in FP32 as on the other paths (the row sum l from
//     the unrounded P), then per block of 32/16 consecutive tokens of the
//     tile, the same rule with tensor scale 1. SageAttention3's first level
//     of its two-level P quantization (a per-row FP32 scale mapping the
//     row's max to 448·6, applied after the MMA) is not modelled: FA3's
//     static 2^8 already maps the running max to 256, where NVFP4's
//     ue4m3(amax/6) ≤ 42.7 uses the upper part of e4m3's range as the
//     paper's first level intends.
//   - NVFP4's tensor scales are applied in FP32 outside the MMA: K's folded
//     into softmax_scale·log2(e)·q_descale (S × scale), V's into the final
//     O *= v_descale / l, as the direct path applies descales.
//   - A block holding NaN or ±inf (in Q, K, V or P) gets the scale's NaN
//     code (ue8m0 0xff, ue4m3 0x7f) and zero elements, so the MMA returns
//     NaN (e2m1 has no NaN code to carry it).
//   - Tiles: FA3's fp8 table (DefaultTiles with e4m3), kBlockN rounded up
//     to a multiple of the instruction's K (96 → 128 for the FP4 K = 64).

// blockCache is what the block-scaled MMA reads from a PathBlockScaled
// cache: 8-bit element codes (the same codes as KV.k and KV.vt) and scale
// codes, and the V the cache was written with (a token's write changes the
// scales of the token blocks it falls in).
type blockCache struct {
	f      KVFormat
	elem   fp8.Format // e4m3 or e2m1
	scale  fp8.Format // ue8m0 or ue4m3
	block  int
	kq, vq *tokenQuant
	k8     []uint8   // [head][token][dim]
	ks     []uint8   // [head][token][dim/block]: blocks along head_dim
	vt8    []uint8   // [head][vdim][stride]: dim-major, as KV.vt
	vs     []uint8   // [head][vdim][stride/block]: blocks along tokens
	vraw   []float32 // [head][vdim][stride]: V as written (+0 padding)
}

// newBlockQuant is the block quantizer of format f with tensor scale 1 (Q
// and P).
func newBlockQuant(f KVFormat) *tokenQuant {
	return &tokenQuant{f: f, path: PathBlockScaled, dt: f.Elem(), tensor: 1,
		e2m1: nearestTable(fp8.FormatE2M1), ue4m3: nearestTable(fp8.FormatUE4M3)}
}

// quantBlock writes the element codes of the block x to out[i·stride] and
// returns its scale code, by QuantizeKV's rule (blockScale, elemCode); a
// block holding NaN or ±inf gets the NaN scale code and zero elements.
func (q *tokenQuant) quantBlock(x []float32, out []uint8, stride int) uint8 {
	a := amax32(x) // NaN if any y is NaN
	if a != a || math.IsInf(float64(a), 0) {
		for i := range x {
			out[i*stride] = 0
		}
		// The scale format's NaN, its all-ones code (ue4m3 0x7f, ue8m0
		// 0xff): one above its largest finite code.
		return uint8(q.f.BlockScale().MaxCode() + 1)
	}
	s, code := q.blockScale(a)
	div := s * q.tensor
	var codes [codeChunk]uint16
	for lo := 0; lo < len(x); lo += codeChunk {
		blk := x[lo:min(lo+codeChunk, len(x))]
		q.elemCodes(codes[:len(blk)], blk, div)
		for i, c := range codes[:len(blk)] {
			out[(lo+i)*stride] = uint8(c)
		}
	}
	return code
}

// quantizeBlockScaled is QuantizeKV for PathBlockScaled (shape and spec
// checked): K as the other paths store it, V in blocks along tokens.
func quantizeBlockScaled(ctx context.Context, k, v []float32, shape KVShape, spec KVSpec, workers int) (*KV, error) {
	kq := newTokenQuant(k, shape.Tokens, shape.Heads, shape.KDim, spec, spec.KScales)
	vq := newTokenQuant(v, shape.Tokens, shape.Heads, shape.VDim, spec, spec.VScales)
	elem := spec.Format.Elem()
	c := newKV(shape.Tokens, shape.Heads, shape.KDim, shape.VDim, elem, fp8.SatFinite, []float32{kq.tensor}, []float32{vq.tensor})
	b := spec.Format.Block()
	bs := &blockCache{f: spec.Format, elem: elem, scale: spec.Format.BlockScale(), block: b, kq: kq, vq: vq,
		k8: make([]uint8, len(c.k)), ks: make([]uint8, len(c.k)/b),
		vt8: make([]uint8, len(c.vt)), vs: make([]uint8, len(c.vt)/b), vraw: make([]float32, len(c.vt))}
	c.bs = bs
	// K and V's raw values token by token (each token writes its own K
	// blocks and its own column of vraw), then V's blocks along tokens
	// channel row by channel row, once every token is in.
	elems := c.tokens * c.heads * (c.dim + c.vdim)
	err := parallelTokens(ctx, c.tokens, elems, workers, func(lo, hi int) {
		for t := lo; t < hi; t++ {
			for h := 0; h < c.heads; h++ {
				bs.putK(c, t, h, k[(t*c.heads+h)*c.dim:][:c.dim])
			}
		}
		// V's column of vraw padTokens tokens at a time: each channel's
		// row takes a cache line of consecutive tokens, read from the
		// block's few KiB of V, instead of one value into each of
		// heads·vdim rows per token.
		for t0 := lo; t0 < hi; t0 += padTokens {
			t1 := min(t0+padTokens, hi)
			for h := 0; h < c.heads; h++ {
				for d := 0; d < c.vdim; d++ {
					row := bs.vraw[(h*c.vdim+d)*c.stride+t0 : (h*c.vdim+d)*c.stride+t1]
					src := v[(t0*c.heads+h)*c.vdim+d:]
					step := c.heads * c.vdim
					for j := range row {
						row[j] = src[j*step]
					}
				}
			}
		}
	})
	if err != nil {
		return nil, err
	}
	err = parallelRange(ctx, c.heads*c.vdim, 8, elems, workers, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for blo := 0; blo < c.stride; blo += b {
				bs.quantV(c, r/c.vdim, r%c.vdim, blo)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// putK stores token t of head h of K: blocks along head_dim.
func (bs *blockCache) putK(c *KV, t, h int, x []float32) {
	b, row := bs.block, (h*c.tokens+t)*c.dim
	for lo := 0; lo < c.dim; lo += b {
		bs.ks[(row+lo)/b] = bs.kq.quantBlock(x[lo:lo+b], bs.k8[row+lo:], 1)
	}
	for d := 0; d < c.dim; d++ {
		c.k[row+d] = uint16(bs.k8[row+d])
	}
}

// quantV quantizes the block of tokens [lo, lo+block) of channel d of
// head h of V from the V written.
func (bs *blockCache) quantV(c *KV, h, d, lo int) {
	b, base := bs.block, (h*c.vdim+d)*c.stride
	bs.vs[(base+lo)/b] = bs.vq.quantBlock(bs.vraw[base+lo:base+lo+b], bs.vt8[base+lo:], 1)
	for i := lo; i < lo+b; i++ {
		c.vt[base+i] = uint16(bs.vt8[base+i])
	}
}

// setToken stores token t of head h and re-quantizes the V blocks of
// tokens it falls in (one per channel).
func (bs *blockCache) setToken(c *KV, t, h int, k, v []float32) {
	bs.putK(c, t, h, k)
	lo := t / bs.block * bs.block
	for d, y := range v {
		bs.vraw[(h*c.vdim+d)*c.stride+t] = y
		bs.quantV(c, h, d, lo)
	}
}

func (bs *blockCache) clone() *blockCache {
	d := *bs
	d.k8, d.ks = append([]uint8(nil), bs.k8...), append([]uint8(nil), bs.ks...)
	d.vt8, d.vs = append([]uint8(nil), bs.vt8...), append([]uint8(nil), bs.vs...)
	d.vraw = append([]float32(nil), bs.vraw...)
	return &d
}

// kValue and vValue are the exact values of K and V elements: code ×
// block scale × tensor scale (NaN for a NaN scale).
func (bs *blockCache) kValue(c *KV, t, h, d int) float64 {
	i := (h*c.tokens+t)*c.dim + d
	return valueTable(bs.elem)[bs.k8[i]] * scaleValues(bs.scale)[bs.ks[i/bs.block]] * float64(c.kScale[0])
}

func (bs *blockCache) vValue(c *KV, t, h, d int) float64 {
	i := (h*c.vdim+d)*c.stride + t
	return valueTable(bs.elem)[bs.vt8[i]] * scaleValues(bs.scale)[bs.vs[i/bs.block]] * float64(c.vScale[0])
}

// scaleValues returns the value of every code (0 … 255) of a scale format
// (NaN for NaN codes and codes past the format's width).
func scaleValues(f fp8.Format) *[256]float64 {
	if f == fp8.FormatUE4M3 {
		return ue4m3Values()
	}
	return ue8m0Values()
}

func newScaleValues(f fp8.Format) *[256]float64 {
	t := new([256]float64)
	for c := range t {
		t[c] = math.NaN()
		if c < 1<<f.CodeBits() {
			t[c] = f.Value(uint32(c))
		}
	}
	return t
}

var (
	ue8m0Values = sync.OnceValue(func() *[256]float64 { return newScaleValues(fp8.FormatUE8M0) })
	ue4m3Values = sync.OnceValue(func() *[256]float64 { return newScaleValues(fp8.FormatUE4M3) })
)

// Models returns the QK and PV model names of arch ("hopper"/"sm90":
// wgmma, FA3's order; "blackwell"/"sm100": tcgen05, FP32 accumulator in
// tensor memory) for the spec's path: the model reading DType() for the
// direct and dequantizing paths (ModelFor), the block-scaled instruction of
// the format for PathBlockScaled, which Hopper cannot run (wgmma has no
// block-scaled kind).
func (s KVSpec) Models(arch string) (qk, pv string, err error) {
	if s.Path != PathBlockScaled {
		name, err := ModelFor(arch, s.DType())
		return name, name, err
	}
	a, err := LookupArch(arch)
	if err != nil {
		return "", "", err
	}
	name := a.Block[s.Format]
	if name == "" {
		return "", "", fmt.Errorf("attention: %s arithmetic cannot read a block-scaled %s cache natively (%s has no block-scaled kind for it): use an architecture that has one, or dequant-bf16/dequant-e4m3", a.Name, s.Format, a.MMA)
	}
	return name, name, nil
}

// lookupBlockInstr resolves a GEMM's model for a block-scaled cache: an
// accum Instruction with FP32 output reading the cache's element format on
// both sides with its scale format and block ("" picks BlockScaledModel).
func lookupBlockInstr(which, name string, bs *blockCache) (accum.Instruction, error) {
	if name == "" {
		name, _ = BlockScaledModel(bs.f)
	}
	want := fmt.Sprintf("a block-scaled instruction reading %s × %s with %s scales per %d (e.g. %s)", bs.elem, bs.elem, bs.scale, bs.block, func() string { n, _ := BlockScaledModel(bs.f); return n }())
	if strings.HasPrefix(name, "sm90.") {
		return nil, fmt.Errorf("%s model %s: Hopper's wgmma has no block-scaled kind, so a block-scaled %s cache needs %s (or a dequantizing path)", which, name, bs.f, want)
	}
	m, err := accum.LookupInstruction(name)
	if err != nil {
		return nil, fmt.Errorf("%s model %q is not a block-scaled instruction: a block-scaled %s cache needs %s", which, name, bs.f, want)
	}
	in := m.Info()
	if in.Scale != bs.scale.String() || in.Block != bs.block || in.A != bs.elem.String() || in.B != bs.elem.String() || in.C != "f32" {
		return nil, fmt.Errorf("%s model %s reads %s × %s -> %s with %q scales per %d: a block-scaled %s cache needs %s", which, name, in.A, in.B, in.C, in.Scale, in.Block, bs.f, want)
	}
	return m, nil
}

// blockRow is a row's scratch for the block-scaled GEMMs.
type blockRow struct {
	qf     []float32 // q / q_descale
	q8, qs []uint8   // the query's element and scale codes
	q64    []float64 // Float64 mode: their exact values (code × scale)
	p8, ps []uint8   // P's element and scale codes of the tile
}

func (k *kernel) newBlockRow() *blockRow {
	b := k.kv.bs.block
	return &blockRow{qf: make([]float32, k.HeadDim), q8: make([]uint8, k.HeadDim), qs: make([]uint8, k.HeadDim/b),
		q64: make([]float64, k.HeadDim), p8: make([]uint8, k.KBlockN), ps: make([]uint8, k.KBlockN/b)}
}

// setQueryBlock quantizes one query (q, HeadDim values) divided by its
// descale qs per block along head_dim; with exact (Float64 mode) it also
// fills the codes' exact values.
func (k *kernel) setQueryBlock(r *row, q []float32, qs float32, exact bool) {
	br, bs := r.b, k.kv.bs
	b := bs.block
	for d, x := range q {
		br.qf[d] = x / qs
	}
	for lo := 0; lo < len(q); lo += b {
		br.qs[lo/b] = k.bq.quantBlock(br.qf[lo:lo+b], br.q8[lo:], 1)
	}
	if exact {
		val, sv := valueTable(bs.elem), scaleValues(bs.scale)
		for d, c := range br.q8 {
			br.q64[d] = val[c] * sv[br.qs[d/b]]
		}
	}
}

// gemmQKBlock is gemmQK on a block-scaled cache: per key, the QK
// instruction's chain over head_dim from +0 (the query's and the key's
// block scales read by the MMA), times scale_log2 in FP32.
func (k *kernel) gemmQKBlock(r *row, t tile) {
	kv, bs := k.kv, k.kv.bs
	b, d := bs.block, kv.dim
	cnt := min(len(r.s), kv.tokens-t.start)
	if k.Float64 {
		val, sv := valueTable(bs.elem), scaleValues(bs.scale)
		for j := 0; j < cnt; j++ {
			row := (r.kvh*kv.tokens + t.start + j) * d
			var dot float64
			for x, q := range r.b.q64 {
				dot += q * (val[bs.k8[row+x]] * sv[bs.ks[(row+x)/b]])
			}
			r.s64[j] = dot * k.scale64[r.kvh] // K's tensor scale is in scale64
		}
		return
	}
	sl := k.scaleLog2[r.kvh]
	for j := 0; j < cnt; j++ {
		row := (r.kvh*kv.tokens + t.start + j) * d
		// Cannot fail: the lengths and scales were sized by newKernel.
		x, _ := accum.ChainCodes(k.bqk, r.b.q8, bs.k8[row:row+d], r.b.qs, bs.ks[row/b:], 0, 0)
		r.s[j] = math.Float32frombits(uint32(x)) * sl
	}
}

// castPBlock quantizes the tile's P per block of consecutive tokens.
func (k *kernel) castPBlock(r *row) {
	b := k.kv.bs.block
	for lo := 0; lo < len(r.p); lo += b {
		r.b.ps[lo/b] = k.bq.quantBlock(r.p[lo:lo+b], r.b.p8[lo:], 1)
	}
}

// pvBlock runs the P·V chains of every accumulator (inputs cs, nil from
// +0; outputs outs) on a block-scaled cache: per channel, the PV
// instruction's chain over the tile's tokens, P's and V's token-block
// scales read by the MMA (V of the tile from vTileBlock; lo is the lowest
// tile the mainloop visits).
func (k *kernel) pvBlock(r *row, t tile, lo int, cs, outs [][]float32) {
	b, bn, d := k.kv.bs.block, k.KBlockN, k.VDim
	vt, vs := k.vTileBlock(r.kvh, t, lo)
	for a, c := range cs {
		out := outs[a]
		for i := 0; i < d; i++ {
			var c0 uint64
			if c != nil {
				c0 = uint64(math.Float32bits(c[i]))
			}
			row := i * bn
			x, _ := accum.ChainCodes(k.bpv, r.b.p8, vt[row:row+bn], r.b.ps, vs[row/b:], c0, 0)
			out[i] = math.Float32frombits(uint32(x))
		}
	}
}

// gemmPVBlock64 is gemmPV in Float64 mode on a block-scaled cache: the
// unrounded P times V's exact values (code × block scale; V's tensor scale
// is applied by finalize).
func (k *kernel) gemmPVBlock64(r *row, t tile) {
	kv, bs := k.kv, k.kv.bs
	val, sv := valueTable(bs.elem), scaleValues(bs.scale)
	for a := range r.acc {
		acc := &r.acc[a]
		for i := 0; i < k.VDim; i++ {
			base := (r.kvh*kv.vdim + i) * kv.stride
			var sum float64
			for j, p := range r.p64 {
				tok := t.start + j
				if tok >= kv.stride {
					break
				}
				sum += p * (val[bs.vt8[base+tok]] * sv[bs.vs[(base+tok)/bs.block]])
			}
			acc.o64[i] = acc.o64[i]*r.alpha64 + sum
		}
	}
}

// dequantizedQueryBlock is dequantizedQuery for a block-scaled cache: each
// query row quantized as setQueryBlock does, its values times q_descale.
func (k *kernel) dequantizedQueryBlock(q []float32) []float64 {
	out := make([]float64, len(q))
	r := &row{b: k.newBlockRow()}
	for base := 0; base < len(q); base += k.HeadDim {
		h := (base / k.HeadDim % k.QHeads) / k.group
		s := scaleOf(k.qScale, h)
		k.setQueryBlock(r, q[base:base+k.HeadDim], s, true)
		for d, x := range r.b.q64 {
			out[base+d] = x * float64(s)
		}
	}
	return out
}
