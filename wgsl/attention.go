package wgsl

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
)

// KVFormat is the project's one KV-cache format type, attention's (its rows
// are attention.KVFormatTable). The native decode kernel reads two:
//
//   - KVFP16 stores K and V as IEEE binary16 (rounded to nearest even);
//   - KVE4M3 stores e4m3fn codes with a per-tensor descale: value =
//     code × scale (satfinite rounding to nearest even of x / scale).
//
// The zero value, attention.KVInvalid, reads as KVFP16 (the kernel's
// default); DecodeConfig refuses every other format.
type KVFormat = attention.KVFormat

// The formats of the native decode kernel.
const (
	KVFP16 = attention.KVFP16
	KVE4M3 = attention.KVE4M3
)

// DecodeConfig is the shape of one decode attention step: Batch sequences of
// Context cached tokens each, KVHeads KV heads, QHeads query heads (a
// multiple of KVHeads: grouped-query attention), HeadDim dimensions.
type DecodeConfig struct {
	Batch, KVHeads, QHeads, HeadDim, Context int
	KV                                       KVFormat
	// KScale and VScale are the descales of an e4m3 cache (0 means 1);
	// unused for FP16.
	KScale, VScale float32
	// Math is the kernels' arithmetic (see [DecodeMaths]): "" or MathF32,
	// the default, or MathF32QReg; MathF16 is refused (see there).
	Math string
}

// The decode kernels' arithmetic variants ([DecodeConfig.Math]).
const (
	// MathF32: f32 arithmetic; each invocation scores whole tokens, reading
	// the query from workgroup memory (shared by NTOK tokens at a time).
	MathF32 = "f32"
	// MathF32QReg: f32 arithmetic with head_dim split across invocations:
	// each invocation keeps 16 dims of the query heads in registers and
	// computes their part of the scores of 32×NB tokens per pass; the 8
	// partial sums of a token (one per warp) are added through workgroup
	// memory (two barriers per pass). No per-token reads of the query from
	// workgroup memory. The same products in another order: as accurate as
	// MathF32 (about 1e-6). Slower on an H200 (2026-11-29, batch 1, 8 KV
	// heads, G = 4, 64k..512k tokens): FP16 1.70 ns/token (2347 GB/s),
	// e4m3 1.55 ns/token (1276 GB/s), ratio 0.91, against MathF32's 1.01
	// and 0.875 (3820 and 2169 GB/s, ratio 0.87): the barriers and the
	// partial sums cost more than the reads of q saved. Kept for comparison.
	MathF32QReg = "f32-qreg"
	// MathF16: packed f16 products (WGSL `enable f16;`). Refused: the
	// wgpu-native bundled with github.com/cogentcore/webgpu v0.23.0 (naga of
	// wgpu 22) does not parse `enable f16;` nor know the f16 type ("unknown
	// scalar type: 'f16'"), whatever the device's shader-f16 feature says.
	MathF16 = "f16"
)

// DecodeMaths lists the values of [DecodeConfig.Math] that run.
var DecodeMaths = []string{MathF32, MathF32QReg}

// mathName returns the arithmetic c uses ("" is MathF32).
func (c DecodeConfig) mathName() string {
	if c.Math == "" {
		return MathF32
	}
	return c.Math
}

// The decode kernels' shape, tuned on an NVIDIA H200 (BENCHMARKS-draft.md):
// workgroups of attnWG invocations; a split holds at most attnMaxT tokens
// (fewer when the device's workgroup memory is small). The rest of the
// shape depends on the cache format: see [decodeTune].
const (
	attnWG   = 256
	attnMaxT = 1024
)

// decodeTune is the part of the kernels' shape that differs between the
// cache formats.
type decodeTune struct {
	// ntok is the number of tokens each invocation scores at once (their
	// K rows' loads in flight together, sharing each read of the query).
	ntok int
	// u is the number of V rows each invocation loads per P·V iteration.
	u int
	// wideV: an e4m3 invocation reads 16 codes of a V row (one 16-byte
	// load) instead of 8.
	wideV bool
	// oldConv widens e4m3 codes with the earlier, longer bit sequence
	// (for comparison only).
	oldConv bool
	// serial adds the P·V partial sums of the token phases one phase
	// after the other (one barrier each) instead of in slots and a tree.
	serial bool
	// qreg: MathF32QReg's scores (ntok unused), nb blocks of 32 tokens
	// per pass.
	qreg bool
	nb   int
}

// qregNB is the number of 32-token blocks MathF32QReg scores per pass.
const qregNB = 2

// defaultTune returns the shape used for kv: on a hardware GPU the fastest
// measured on an H200 (BENCHMARKS-draft.md), on a CPU adapter shorter
// kernels (lavapipe's compiler crashes on the longer ones).
func defaultTune(kv KVFormat, hardware bool) decodeTune {
	switch {
	case kv == KVE4M3 && hardware:
		return decodeTune{ntok: 2, u: 16}
	case kv == KVE4M3:
		return decodeTune{ntok: 2, u: 8}
	case hardware:
		return decodeTune{ntok: 2, u: 8}
	}
	return decodeTune{ntok: 1, u: 8}
}

// decodePlan is a DecodeConfig with the tokens per split, T, that the
// device's workgroup memory allows, and the kernels' shape.
type decodePlan struct {
	DecodeConfig
	T    int
	tune decodeTune
}

// plan checks c and picks T: the largest of 1024, 512, 256 whose workgroup
// memory (the query block, 2 KiB per group of 4 heads, and the scores, 16
// bytes per token per group) fits limit bytes, and the shape for a hardware
// GPU or not.
func (c DecodeConfig) plan(limit uint32, hardware bool) (decodePlan, error) {
	if err := c.check(); err != nil {
		return decodePlan{}, err
	}
	c = c.withKV()
	ng4 := (c.group() + 3) / 4
	red := 0 // MathF32QReg's partial scores
	if c.mathName() == MathF32QReg {
		red = ng4 * qregNB * 4096
	}
	for t := attnMaxT; t >= 256; t /= 2 {
		if uint32(ng4*(2048+16*t)+red) <= limit {
			p := decodePlan{c, t, defaultTune(c.KV, hardware)}
			if red > 0 {
				p.tune.qreg, p.tune.nb = true, qregNB
			}
			if p.splits() > 65535 {
				return decodePlan{}, fmt.Errorf("wgsl: decode attention over %d tokens needs %d splits, more than a grid row holds", c.Context, p.splits())
			}
			return p, nil
		}
	}
	return decodePlan{}, fmt.Errorf("wgsl: decode attention with %d query heads per KV head needs %d bytes of workgroup memory, the device allows %d",
		c.group(), ng4*(2048+16*256)+red, limit)
}

// withKV is c with the zero KV format read as KVFP16.
func (c DecodeConfig) withKV() DecodeConfig {
	if c.KV == attention.KVInvalid {
		c.KV = KVFP16
	}
	return c
}

func (c DecodeConfig) check() error {
	switch {
	case c.KV != attention.KVInvalid && c.KV != KVFP16 && c.KV != KVE4M3:
		return fmt.Errorf("wgsl: the decode kernel reads %s or %s KV caches, not %s", KVFP16, KVE4M3, c.KV)
	case c.HeadDim != 128:
		return fmt.Errorf("wgsl: decode attention supports head_dim 128, not %d", c.HeadDim)
	case c.Batch < 1 || c.KVHeads < 1 || c.Context < 1:
		return fmt.Errorf("wgsl: decode attention needs batch, KV heads and context >= 1 (got %d, %d, %d)", c.Batch, c.KVHeads, c.Context)
	case c.QHeads%c.KVHeads != 0 || c.QHeads/c.KVHeads < 1 || c.QHeads/c.KVHeads > 8:
		return fmt.Errorf("wgsl: %d query heads over %d KV heads: need 1 to 8 query heads per KV head", c.QHeads, c.KVHeads)
	case c.Batch*c.KVHeads > 65535 || c.Batch*c.QHeads > 32768*65535:
		return fmt.Errorf("wgsl: decode attention grid too large (batch × KV heads %d)", c.Batch*c.KVHeads)
	case c.Math == MathF16:
		return fmt.Errorf("wgsl: decode math %q is not available: the bundled wgpu-native (naga of wgpu 22) cannot compile WGSL f16 (it rejects `enable f16;` and the f16 type), whatever the device's shader-f16 feature", c.Math)
	case c.Math != "" && !slices.Contains(DecodeMaths, c.Math):
		return fmt.Errorf("wgsl: unknown decode math %q (have %s)", c.Math, strings.Join(DecodeMaths, ", "))
	}
	return nil
}

func (c DecodeConfig) group() int { return c.QHeads / c.KVHeads }
func (p decodePlan) splits() int  { return (p.Context + p.T - 1) / p.T }
func (c DecodeConfig) paddedContext() int {
	return (c.Context + 31) &^ 31
}

func (c DecodeConfig) scales() (k, v float32) {
	k, v = c.KScale, c.VScale
	if k == 0 {
		k = 1
	}
	if v == 0 {
		v = 1
	}
	return k, v
}

// KVBytes is the number of bytes of K and V one decode step reads.
func (c DecodeConfig) KVBytes() int64 {
	return 2 * int64(c.Batch) * int64(c.KVHeads) * int64(c.Context) * int64(c.HeadDim) * int64(c.withKV().KV.CodeBytes())
}

// cacheBytes is the size of the K buffer (padded to 32 tokens) and of V.
func (c DecodeConfig) cacheBytes() (k, v int64) {
	row := int64(c.HeadDim) * int64(c.withKV().KV.CodeBytes())
	bh := int64(c.Batch) * int64(c.KVHeads)
	return bh * int64(c.paddedContext()) * row, bh * int64(c.Context) * row
}

func (p decodePlan) consts() []constDecl {
	c, tn := p.DecodeConfig, p.tune
	rw := c.HeadDim * c.KV.CodeBytes() / 16
	ng4 := (c.group() + 3) / 4
	// ve: V values per invocation and row; ns: slots of the P·V sums (a
	// power of two, at most the token phases, fitting the scores' memory).
	ve := 8
	if c.KV == KVE4M3 && tn.wideV {
		ve = 16
	}
	ph := attnWG / (c.HeadDim / ve)
	ns := 1
	for 2*ns <= ph && 2*ns*4*ng4*c.HeadDim/4 <= ng4*p.T && !tn.serial {
		ns *= 2
	}
	d := []constDecl{cU32("WG", attnWG), cU32("D", c.HeadDim), cU32("G", c.group()), cU32("NG4", ng4),
		cU32("T", p.T), cBool("KV8", c.KV == KVE4M3), cU32("RW", rw), cU32("U", tn.u),
		cU32("VE", ve), cU32("NS", ns), cBool("SERIAL", tn.serial), cBool("OLDCONV", tn.oldConv)}
	switch {
	case c.KV == KVE4M3 && tn.wideV:
		d = append(d, cRaw("alias VWORD = vec4<u32>;"),
			cRaw("fn vdec(w: VWORD) -> mat4x4<f32> { return mat4x4<f32>(fp8x4(w.x), fp8x4(w.y), fp8x4(w.z), fp8x4(w.w)); }"))
	case c.KV == KVE4M3:
		d = append(d, cRaw("alias VWORD = vec2<u32>;"),
			cRaw("fn vdec(w: VWORD) -> mat2x4<f32> { return mat2x4<f32>(fp8x4(w.x), fp8x4(w.y)); }"))
	default:
		d = append(d, cRaw("alias VWORD = vec4<u32>;"),
			cRaw("fn vdec(w: VWORD) -> mat2x4<f32> { return mat2x4<f32>(f16x4(w.x, w.y), f16x4(w.z, w.w)); }"))
	}
	d = append(d, cU32("NTOK", tn.ntok), cU32("NQK", tn.ntok*ng4))
	nb, red := max(tn.nb, 1), 1
	if tn.qreg {
		red = nb * ng4 * (attnWG / 32) * 32
	}
	d = append(d, cBool("QREG", tn.qreg), cU32("NB", nb), cU32("NBG", nb*ng4), cU32("RED", red), cU32("QCH", rw*32/attnWG), cU32("QR", 16*ng4))
	d = append(d, cRaw(c.genQK(rw, tn.ntok)), cRaw(genPV(tn.u, ve/4)))
	if tn.qreg {
		d = append(d, cRaw(c.genQKReg(ng4, nb)))
	} else {
		d = append(d, cRaw("fn qk_reg(qr: ptr<function, array<vec4<f32>, QR>>, kbs: array<u32, NB>) -> array<vec4<f32>, NBG> { var a: array<vec4<f32>, NBG>; return a; }"))
	}
	return d
}

// genQKReg writes qk_reg for MathF32QReg: the loads of the nb chunk
// columns of this invocation (QCH 16-byte chunks each: 16 dims), then
// their products with the 16 dims of the query heads held in qr, two
// partial sums per token and head group.
func (c DecodeConfig) genQKReg(ng4, nb int) string {
	var b strings.Builder
	b.WriteString("fn qk_reg(qr: ptr<function, array<vec4<f32>, QR>>, kbs: array<u32, NB>) -> array<vec4<f32>, NBG> {\n")
	qch := 1
	if c.KV == KVFP16 {
		qch = 2
	}
	for k := 0; k < nb; k++ {
		for ch := 0; ch < qch; ch++ {
			fmt.Fprintf(&b, "    let w%d_%d = K[kbs[%d] + %du];\n", k, ch, k, ch*attnWG)
		}
		// x{k}_{e/4}: dims 4(e/4)..4(e/4)+3 of the invocation's 16
		if c.KV == KVE4M3 {
			for i, comp := range []string{"x", "y", "z", "w"} {
				fmt.Fprintf(&b, "    let x%d_%d = fp8x4(w%d_0.%s);\n", k, i, k, comp)
			}
		} else {
			for ch := 0; ch < qch; ch++ {
				fmt.Fprintf(&b, "    let x%d_%d = f16x4(w%d_%d.x, w%d_%d.y);\n    let x%d_%d = f16x4(w%d_%d.z, w%d_%d.w);\n",
					k, 2*ch, k, ch, k, ch, k, 2*ch+1, k, ch, k, ch)
			}
		}
	}
	b.WriteString("    var acc: array<vec4<f32>, NBG>;\n")
	comps := []string{"x", "y", "z", "w"}
	for h := 0; h < ng4; h++ {
		for k := 0; k < nb; k++ {
			for a := 0; a < 2; a++ {
				fmt.Fprintf(&b, "    var a%d_%d_%d = vec4<f32>(0.0);\n", h, k, a)
			}
			for e := 0; e < 16; e++ {
				a := (e / 4) % 2
				fmt.Fprintf(&b, "    a%d_%d_%d = a%d_%d_%d + x%d_%d.%s * (*qr)[%d];\n", h, k, a, h, k, a, k, e/4, comps[e%4], 16*h+e)
			}
			fmt.Fprintf(&b, "    acc[%d] = a%d_%d_0 + a%d_%d_1;\n", k*ng4+h, h, k, h, k)
		}
	}
	b.WriteString("    return acc;\n}")
	return b.String()
}

// genQK writes qk_tokens: the RW loads of each of the NTOK K rows, then
// their products with the query heads held in qm, each mat of qm read once
// for all NTOK tokens (two partial sums per token to shorten the chains).
func (c DecodeConfig) genQK(rw, ntok int) string {
	var b strings.Builder
	b.WriteString("fn qk_tokens(kbs: array<u32, NTOK>) -> array<vec4<f32>, NQK> {\n")
	for k := 0; k < ntok; k++ {
		for j := 0; j < rw; j++ {
			fmt.Fprintf(&b, "    let w%d_%d = K[kbs[%d] + %du];\n", k, j, k, 32*j)
		}
	}
	b.WriteString("    var acc: array<vec4<f32>, NQK>;\n    for (var h = 0u; h < NG4; h = h + 1u) {\n        let q = h * DW;\n")
	for k := 0; k < ntok; k++ {
		fmt.Fprintf(&b, "        var a%d_0 = vec4<f32>(0.0);\n        var a%d_1 = vec4<f32>(0.0);\n", k, k)
	}
	for j := 0; j < rw; j++ {
		if c.KV == KVE4M3 {
			for i := 0; i < 4; i++ {
				fmt.Fprintf(&b, "        let m%d_%d = qmat(q + %du);\n", j, i, 4*j+i)
			}
			for k := 0; k < ntok; k++ {
				a := j % 2
				fmt.Fprintf(&b, "        a%d_%d = a%d_%d + fp8x4(w%d_%d.x) * m%d_0 + fp8x4(w%d_%d.y) * m%d_1 + fp8x4(w%d_%d.z) * m%d_2 + fp8x4(w%d_%d.w) * m%d_3;\n",
					k, a, k, a, k, j, j, k, j, j, k, j, j, k, j, j)
			}
		} else {
			for i := 0; i < 2; i++ {
				fmt.Fprintf(&b, "        let m%d_%d = qmat(q + %du);\n", j, i, 2*j+i)
			}
			for k := 0; k < ntok; k++ {
				a := j % 2
				fmt.Fprintf(&b, "        a%d_%d = a%d_%d + f16x4(w%d_%d.x, w%d_%d.y) * m%d_0 + f16x4(w%d_%d.z, w%d_%d.w) * m%d_1;\n",
					k, a, k, a, k, j, k, j, j, k, j, k, j, j)
			}
		}
	}
	for k := 0; k < ntok; k++ {
		fmt.Fprintf(&b, "        acc[%du * NG4 + h] = a%d_0 + a%d_1;\n", k, k, k)
	}
	b.WriteString("    }\n    return acc;\n}")
	return b.String()
}

// genPV writes pv_rows: u loads of V rows (clamped to the last row), then
// for each row o += v ⊗ p with p = 0 past the end; nd is the number of
// vec4 of V values per invocation and row (2 or 4).
func genPV(u, nd int) string {
	var b strings.Builder
	b.WriteString("fn pv_rows(o: ptr<function, array<mat4x4<f32>, ON>>, ls: ptr<function, array<vec4<f32>, NG4>>, vb: u32, t: u32, nt: u32) {\n    let last = nt - 1u;\n")
	for k := 0; k < u; k++ {
		fmt.Fprintf(&b, "    let r%d = V[vb + min(t + %du * PH, last) * VC];\n", k, k)
	}
	b.WriteString("    for (var h = 0u; h < NG4; h = h + 1u) {\n")
	for d := 0; d < nd; d++ {
		fmt.Fprintf(&b, "        let k%d = %du * h + %du;\n", d, nd, d)
	}
	for k := 0; k < u; k++ {
		fmt.Fprintf(&b, "        let p%d = select(vec4<f32>(0.0), sc[h * T + min(t + %du * PH, last)], t + %du * PH < nt);\n", k, k, k)
		fmt.Fprintf(&b, "        let v%d = vdec(r%d);\n        (*ls)[h] = (*ls)[h] + p%d;\n", k, k, k)
		for d := 0; d < nd; d++ {
			for i, comp := range []string{"x", "y", "z", "w"} {
				fmt.Fprintf(&b, "        (*o)[k%d][%d] = (*o)[k%d][%d] + v%d[%d] * p%d.%s;\n", d, i, d, i, k, d, k, comp)
			}
		}
	}
	b.WriteString("    }\n}")
	return b.String()
}

func (p decodePlan) params() []uint32 {
	c := p.DecodeConfig
	ks, vs := c.scales()
	q := float32(1 / math.Sqrt(float64(c.HeadDim)) * math.Log2E)
	v := float32(1)
	if c.KV == KVE4M3 {
		q *= ks * 256
		v = vs * 256
	}
	stride := uint32(min(c.Batch*c.QHeads, 32768)) // combine: workgroups per grid row
	return []uint32{uint32(c.Batch), uint32(c.KVHeads), uint32(c.Context), uint32(p.splits()),
		math.Float32bits(q), math.Float32bits(v), uint32(c.paddedContext()), stride}
}

// quantize returns the cache code of x (FP16 bits, or an e4m3 code of
// x/scale) and its exact value.
func (c DecodeConfig) quantize(x, scale float32) (uint32, float64) {
	if c.KV == KVE4M3 {
		code := fp8.EncodeE4M3(x/scale, fp8.SatFinite)
		return uint32(code), code.Float64() * float64(scale)
	}
	h := fp8.FP16FromFloat32(x)
	return uint32(h), float64(h.Float32())
}

// packCache returns the K and V buffers of the kernel's layouts (see
// attention.wgsl) for k and v given as [Batch][KVHeads][Context][HeadDim]
// float32, and the values the cache holds, in the same order.
func (c DecodeConfig) packCache(k, v []float32) (kb, vb []byte, kval, vval []float64) {
	D, L, Lp := c.HeadDim, c.Context, c.paddedContext()
	eb := c.KV.CodeBytes()
	ks, vs := c.scales()
	kSize, vSize := c.cacheBytes()
	kb, vb = make([]byte, kSize), make([]byte, vSize)
	kval, vval = make([]float64, len(k)), make([]float64, len(v))
	put := func(b []byte, off int, code uint32) {
		if eb == 1 {
			b[off] = byte(code)
		} else {
			binary.LittleEndian.PutUint16(b[off:], uint16(code))
		}
	}
	chunk := 16 / eb // elements per 16-byte chunk
	rw := D / chunk  // chunks per row
	for bh := 0; bh < c.Batch*c.KVHeads; bh++ {
		for t := 0; t < L; t++ {
			for d := 0; d < D; d++ {
				i := (bh*L+t)*D + d
				code, val := c.quantize(k[i], ks)
				kval[i] = val
				j, e := d/chunk, d%chunk
				put(kb, ((bh*Lp+t-t%32)*rw+j*32+t%32)*16+e*eb, code)
				code, val = c.quantize(v[i], vs)
				vval[i] = val
				put(vb, i*eb, code)
			}
		}
	}
	return kb, vb, kval, vval
}

// DecodeAttention runs one decode step on the GPU with native f32
// arithmetic: for every sequence b and query head h (KV head h / G),
// O[b][h] = softmax(q·Kᵀ/√D)·V over the Context cached tokens, with K and
// V first stored in the cache format (FP16 rounded to nearest even, or e4m3
// codes of x/scale, satfinite). q is [Batch][QHeads][HeadDim], k and v
// [Batch][KVHeads][Context][HeadDim]; the result is [Batch][QHeads][HeadDim].
// It is accurate to f32 rounding (about 1e-6 relative), not bit-exact; see
// the float64 reference of its tests (decodeReference).
func (r *Runner) DecodeAttention(ctx context.Context, cfg DecodeConfig, q, k, v []float32) ([]float32, error) {
	if err := r.wait(); err != nil { // r.info below
		return nil, err
	}
	plan, err := cfg.plan(r.info.MaxWorkgroupStorage, r.info.Hardware)
	if err != nil {
		return nil, err
	}
	return r.decodeAttention(ctx, plan, q, k, v)
}

func (r *Runner) decodeAttention(ctx context.Context, plan decodePlan, q, k, v []float32) ([]float32, error) {
	cfg := plan.DecodeConfig
	nq := cfg.Batch * cfg.QHeads * cfg.HeadDim
	nkv := cfg.Batch * cfg.KVHeads * cfg.Context * cfg.HeadDim
	if len(q) != nq || len(k) != nkv || len(v) != nkv {
		return nil, fmt.Errorf("wgsl: decode attention needs %d query values and %d K and V values, got %d, %d, %d", nq, nkv, len(q), len(k), len(v))
	}
	kb, vb, _, _ := cfg.packCache(k, v)
	if err := r.lock(); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	bufs, err := r.decodeBuffers(plan, f32Bytes(q), kb, vb)
	if err != nil {
		return nil, err
	}
	defer bufs.free(r)
	if _, err := r.be.run(ctx, bufs.calls(plan), false); err != nil {
		return nil, err
	}
	raw, err := r.be.read(ctx, bufs.o, uint64(4*nq))
	if err != nil {
		return nil, err
	}
	return bytesF32(raw), nil
}

type decodeBufs struct {
	q, k, v, opart, ml, o buffer
}

func (b *decodeBufs) free(r *Runner) {
	for _, x := range []buffer{b.q, b.k, b.v, b.opart, b.ml, b.o} {
		if x != nil {
			r.be.free(x)
		}
	}
}

// decodeBuffers uploads q and the cache (kb, vb; nil means: allocate and
// fill on the device) and allocates the outputs.
func (r *Runner) decodeBuffers(cfg decodePlan, q, kb, vb []byte) (*decodeBufs, error) {
	b := &decodeBufs{}
	var err error
	fail := func(e error) (*decodeBufs, error) {
		b.free(r)
		return nil, e
	}
	if b.q, err = r.be.upload("attn.q", q); err != nil {
		return fail(err)
	}
	kSize, vSize := cfg.cacheBytes()
	if kb != nil {
		b.k, err = r.be.upload("attn.k", kb)
	} else {
		b.k, err = r.be.alloc("attn.k", uint64(kSize))
	}
	if err != nil {
		return fail(fmt.Errorf("%w (batch %d at context %d: lower the batch)", err, cfg.Batch, cfg.Context))
	}
	if vb != nil {
		b.v, err = r.be.upload("attn.v", vb)
	} else {
		b.v, err = r.be.alloc("attn.v", uint64(vSize))
	}
	if err != nil {
		return fail(fmt.Errorf("%w (batch %d at context %d: lower the batch)", err, cfg.Batch, cfg.Context))
	}
	nq := cfg.Batch * cfg.QHeads
	if b.opart, err = r.be.alloc("attn.opart", uint64(nq*cfg.splits()*cfg.HeadDim*4)); err != nil {
		return fail(err)
	}
	if b.ml, err = r.be.alloc("attn.ml", uint64(nq*cfg.splits()*8)); err != nil {
		return fail(err)
	}
	if b.o, err = r.be.alloc("attn.o", uint64(nq*cfg.HeadDim*4)); err != nil {
		return fail(err)
	}
	return b, nil
}

func (b *decodeBufs) calls(cfg decodePlan) []call {
	consts := cfg.consts()
	store := []access{readOnly, readOnly, readOnly, readWrite, readWrite, readWrite}
	split := &kernelSpec{file: "attention", entry: "split", consts: consts, storage: store}
	combine := &kernelSpec{file: "attention", entry: "combine", consts: consts, storage: store}
	bufs := []buffer{b.q, b.k, b.v, b.opart, b.ml, b.o}
	p := cfg.params()
	nbq := cfg.Batch * cfg.QHeads
	x := uint32(min(nbq, 32768))
	y := (uint32(nbq) + x - 1) / x
	return []call{
		{k: split, bufs: bufs, params: p, x: uint32(cfg.splits()), y: uint32(cfg.Batch * cfg.KVHeads)},
		{k: combine, bufs: bufs, params: p, x: x, y: y},
	}
}

// decodeBenchWork is about the GPU time of one repetition of BenchDecode,
// at most decodeBenchMaxSteps steps. A repetition of more steps than one
// submission holds (maxCallsPerSubmit: 32 steps of two kernels) is several
// submissions, each encoded while the one before runs: between them the
// GPU waits only for the host to see one end and submit the next.
const (
	decodeBenchWork     = 10 * time.Millisecond
	decodeBenchMaxSteps = 512
)

// measureRepeated runs calls once untimed (a pipeline's first dispatch may
// include its compile: LLVM's on lavapipe with an empty shader cache, which
// sized a run of BenchSimDecode at one 3 ms repeat), times them once alone,
// then measures (measure, after r's warm-up) reps runs of them repeated
// back to back for about decodeBenchWork of GPU time, and divides each
// run's times by the repeats,
// which it returns too: at least 1, at most decodeBenchMaxSteps, the work
// over the first time rounded down, or up with roundUp (BenchDecode's
// steps of microseconds round down, BenchSimDecode's submissions of
// milliseconds up, so that a run is never shorter than decodeBenchWork).
// Callers hold r's lock.
func (r *Runner) measureRepeated(ctx context.Context, calls []call, reps int, roundUp bool) (Measurement, int, error) {
	if _, err := r.be.run(ctx, calls, false); err != nil {
		return Measurement{}, 0, err
	}
	first, err := r.be.run(ctx, calls, true)
	if err != nil {
		return Measurement{}, 0, err
	}
	n := 1
	if t := first.Best(); t > 0 {
		w := decodeBenchWork
		if roundUp {
			w += t - 1
		}
		n = int(min(decodeBenchMaxSteps, max(1, int64(w/t))))
	}
	runs := slices.Repeat(calls, n)
	m, err := measure(ctx, r.warmupLocked(), reps, func() (Timing, error) {
		t, err := r.be.run(ctx, runs, true)
		t.Wall, t.GPU = t.Wall/time.Duration(n), t.GPU/time.Duration(n)
		return t, err
	})
	return m, n, err
}

// DecodeBench is the timing of one decode step configuration.
type DecodeBench struct {
	Config DecodeConfig
	// Time is the median over the timed repetitions of one step's time
	// (the split and combine kernels), Times all of them; a repetition is
	// Steps steps back to back, its time divided by Steps (the
	// Measurement's times likewise, with its warm-up and spread).
	Time        time.Duration
	Times       []time.Duration
	Measurement Measurement
	Steps       int
	// Source is "timestamp" (GPU timestamp queries) or "wall" (host clock
	// around submit and wait, launch overhead included).
	Source string
	// Bytes is the KV cache read by one step; Bandwidth = Bytes / Time in
	// bytes per second.
	Bytes     int64
	Bandwidth float64
}

// BenchDecode times reps repetitions of cfg's decode step, after the
// runner's warm-up rule (Warmup), over a KV cache filled with
// pseudo-random values on the device, and returns the median time of one
// step. A repetition is DecodeBench.Steps steps back to back (about 10 ms
// of GPU work, up to 512 steps, as the layers of a served model's decode
// keep the GPU busy), its time divided by Steps. Query values are random
// normal.
func (r *Runner) BenchDecode(ctx context.Context, cfg DecodeConfig, reps int) (DecodeBench, error) {
	if err := r.wait(); err != nil { // r.info below
		return DecodeBench{}, err
	}
	plan, err := cfg.plan(r.info.MaxWorkgroupStorage, r.info.Hardware)
	if err != nil {
		return DecodeBench{}, err
	}
	return r.benchDecode(ctx, plan, reps)
}

func (r *Runner) benchDecode(ctx context.Context, plan decodePlan, reps int) (DecodeBench, error) {
	cfg := plan.DecodeConfig
	reps = max(reps, 1)
	if err := r.lock(); err != nil {
		return DecodeBench{}, err
	}
	defer r.mu.Unlock()
	q := make([]float32, cfg.Batch*cfg.QHeads*cfg.HeadDim)
	for i := range q {
		q[i] = float32(math.Sin(float64(i)*12.9898) * 1.5)
	}
	bufs, err := r.decodeBuffers(plan, f32Bytes(q), nil, nil)
	if err != nil {
		return DecodeBench{}, err
	}
	defer bufs.free(r)
	kSize, vSize := cfg.cacheBytes()
	fmtWord := uint32(0)
	if cfg.KV == KVE4M3 {
		fmtWord = 1
	}
	var fills []call
	for i, b := range []struct {
		buf  buffer
		size int64
	}{{bufs.k, kSize}, {bufs.v, vSize}} {
		n := int(b.size / 4)
		x, y, stride := grid(n, nativeWG)
		fills = append(fills, call{k: nativeKernel("fill"), bufs: []buffer{bufs.q, bufs.q, b.buf},
			params: []uint32{uint32(n), fmtWord, uint32(0x5eed + i), 0, 0, stride}, x: x, y: y})
	}
	if _, err := r.be.run(ctx, fills, false); err != nil {
		return DecodeBench{}, err
	}
	step := bufs.calls(plan)
	// One step alone leaves the GPU idle between submissions (submit, wait,
	// poll: tens of microseconds of work, then as long again or more with
	// nothing), and its clock stays down: on the H200 the SM sat at its
	// 345 MHz idle clock through decode-bw (nvidia-smi), settled there, and
	// the warm-up rule accepted it. A decode step of a served model runs
	// back to back with its other layers' kernels, so a repetition is
	// Steps steps, about decodeBenchWork of GPU time after a first step
	// timed alone, and its time is divided by Steps (measureRepeated).
	meas, n, err := r.measureRepeated(ctx, step, reps, false)
	if err != nil {
		return DecodeBench{}, err
	}
	res := DecodeBench{Config: cfg, Bytes: cfg.KVBytes(), Source: meas.Source, Time: meas.Median, Times: meas.Times, Measurement: meas, Steps: n}
	res.Bandwidth = float64(res.Bytes) / res.Time.Seconds()
	return res, nil
}
