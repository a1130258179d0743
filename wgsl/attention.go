package wgsl

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/fp8lab/fp8lab/fp8"
)

// KVFormat is the element type of a KV cache in the native decode kernel.
type KVFormat int

const (
	// KVFP16 stores K and V as IEEE binary16 (rounded to nearest even).
	KVFP16 KVFormat = iota
	// KVE4M3 stores e4m3fn codes with a per-tensor descale: value =
	// code × scale (satfinite rounding to nearest even of x / scale).
	KVE4M3
)

// String returns "fp16" or "e4m3".
func (f KVFormat) String() string {
	if f == KVE4M3 {
		return "e4m3"
	}
	return "fp16"
}

// Bytes is the size of one element: 2 or 1.
func (f KVFormat) Bytes() int {
	if f == KVE4M3 {
		return 1
	}
	return 2
}

// DecodeConfig is the shape of one decode attention step: Batch sequences of
// Context cached tokens each, KVHeads KV heads, QHeads query heads (a
// multiple of KVHeads: grouped-query attention), HeadDim dimensions.
type DecodeConfig struct {
	Batch, KVHeads, QHeads, HeadDim, Context int
	KV                                       KVFormat
	// KScale and VScale are the descales of an e4m3 cache (0 means 1);
	// unused for FP16.
	KScale, VScale float32
}

const (
	attnWG = 128
	attnT  = 512 // tokens per split
)

func (c DecodeConfig) check() error {
	switch {
	case c.HeadDim != 128:
		return fmt.Errorf("wgsl: decode attention supports head_dim 128, not %d", c.HeadDim)
	case c.Batch < 1 || c.KVHeads < 1 || c.Context < 1:
		return fmt.Errorf("wgsl: decode attention needs batch, KV heads and context >= 1 (got %d, %d, %d)", c.Batch, c.KVHeads, c.Context)
	case c.QHeads%c.KVHeads != 0 || c.QHeads/c.KVHeads < 1 || c.QHeads/c.KVHeads > 8:
		return fmt.Errorf("wgsl: %d query heads over %d KV heads: need 1 to 8 query heads per KV head", c.QHeads, c.KVHeads)
	case c.Batch*c.KVHeads > 65535 || c.splits() > 65535:
		return fmt.Errorf("wgsl: decode attention grid too large (batch × KV heads %d, splits %d)", c.Batch*c.KVHeads, c.splits())
	}
	return nil
}

func (c DecodeConfig) group() int  { return c.QHeads / c.KVHeads }
func (c DecodeConfig) splits() int { return (c.Context + attnT - 1) / attnT }
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
	return 2 * int64(c.Batch) * int64(c.KVHeads) * int64(c.Context) * int64(c.HeadDim) * int64(c.KV.Bytes())
}

// cacheBytes is the size of the K buffer (padded to 32 tokens) and of V.
func (c DecodeConfig) cacheBytes() (k, v int64) {
	row := int64(c.HeadDim) * int64(c.KV.Bytes())
	bh := int64(c.Batch) * int64(c.KVHeads)
	return bh * int64(c.paddedContext()) * row, bh * int64(c.Context) * row
}

func (c DecodeConfig) consts() []constDecl {
	d := []constDecl{cU32("WG", attnWG), cU32("D", c.HeadDim), cU32("G", c.group()), cU32("T", attnT),
		cBool("KV8", c.KV == KVE4M3), cU32("RW", c.HeadDim*c.KV.Bytes()/16)}
	if c.KV == KVE4M3 {
		return append(d, cRaw("alias VWORD = u32;"),
			cRaw("fn vword_u32(w: VWORD) -> u32 { return w; }"),
			cRaw("fn vword_vec2(w: VWORD) -> vec2<u32> { return vec2<u32>(w, 0u); }"))
	}
	return append(d, cRaw("alias VWORD = vec2<u32>;"),
		cRaw("fn vword_u32(w: VWORD) -> u32 { return w.x; }"),
		cRaw("fn vword_vec2(w: VWORD) -> vec2<u32> { return w; }"))
}

func (c DecodeConfig) params() []uint32 {
	ks, vs := c.scales()
	q := float32(1 / math.Sqrt(float64(c.HeadDim)) * math.Log2E)
	v := float32(1)
	if c.KV == KVE4M3 {
		q *= ks * 256
		v = vs * 256
	}
	_, _, stride := grid(c.Batch*c.QHeads*c.HeadDim/4, attnWG)
	return []uint32{uint32(c.Batch), uint32(c.KVHeads), uint32(c.Context), uint32(c.splits()),
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
	eb := c.KV.Bytes()
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
// [DecodeReference].
func (r *Runner) DecodeAttention(ctx context.Context, cfg DecodeConfig, q, k, v []float32) ([]float32, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
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
	bufs, err := r.decodeBuffers(cfg, f32Bytes(q), kb, vb)
	if err != nil {
		return nil, err
	}
	defer bufs.free(r)
	if _, err := r.be.run(ctx, bufs.calls(cfg), false); err != nil {
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
func (r *Runner) decodeBuffers(cfg DecodeConfig, q, kb, vb []byte) (*decodeBufs, error) {
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

func (b *decodeBufs) calls(cfg DecodeConfig) []call {
	consts := cfg.consts()
	store := []access{readOnly, readOnly, readOnly, readWrite, readWrite, readWrite}
	split := &kernelSpec{file: "attention", entry: "split", consts: consts, storage: store}
	combine := &kernelSpec{file: "attention", entry: "combine", consts: consts, storage: store}
	bufs := []buffer{b.q, b.k, b.v, b.opart, b.ml, b.o}
	p := cfg.params()
	x, y, _ := grid(cfg.Batch*cfg.QHeads*cfg.HeadDim/4, attnWG)
	return []call{
		{k: split, bufs: bufs, params: p, x: uint32(cfg.splits()), y: uint32(cfg.Batch * cfg.KVHeads)},
		{k: combine, bufs: bufs, params: p, x: x, y: y},
	}
}

// DecodeReference computes what [Runner.DecodeAttention] computes, in
// float64 from the same cache values (the FP16 or e4m3 codes decoded
// exactly): the reference its tests compare with.
func DecodeReference(cfg DecodeConfig, q, k, v []float32) ([]float64, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	_, _, kval, vval := cfg.packCache(k, v)
	D, L, G := cfg.HeadDim, cfg.Context, cfg.group()
	out := make([]float64, cfg.Batch*cfg.QHeads*D)
	s := make([]float64, L)
	scale := 1 / math.Sqrt(float64(D))
	for b := 0; b < cfg.Batch; b++ {
		for h := 0; h < cfg.QHeads; h++ {
			bh := b*cfg.KVHeads + h/G
			qv := q[(b*cfg.QHeads+h)*D:][:D]
			m := math.Inf(-1)
			for t := 0; t < L; t++ {
				kv := kval[(bh*L+t)*D:][:D]
				var dot float64
				for d := range D {
					dot += float64(qv[d]) * kv[d]
				}
				s[t] = dot * scale
				m = max(m, s[t])
			}
			var den float64
			for t := range s {
				s[t] = math.Exp(s[t] - m)
				den += s[t]
			}
			o := out[(b*cfg.QHeads+h)*D:][:D]
			for t := 0; t < L; t++ {
				vv := vval[(bh*L+t)*D:][:D]
				for d := range D {
					o[d] += s[t] / den * vv[d]
				}
			}
		}
	}
	return out, nil
}

// DecodeBench is the timing of one decode step configuration.
type DecodeBench struct {
	Config DecodeConfig
	// Time is the median of the timed repetitions of one step (the split
	// and combine kernels in one submission), Times all of them.
	Time  time.Duration
	Times []time.Duration
	// Source is "timestamp" (GPU timestamp queries) or "wall" (host clock
	// around submit and wait, launch overhead included).
	Source string
	// Bytes is the KV cache read by one step; Bandwidth = Bytes / Time in
	// bytes per second.
	Bytes     int64
	Bandwidth float64
}

// BenchDecode times reps decode steps of cfg (after one untimed warm-up)
// over a KV cache filled with pseudo-random values on the device, and
// returns the median. Query values are random normal.
func (r *Runner) BenchDecode(ctx context.Context, cfg DecodeConfig, reps int) (DecodeBench, error) {
	if err := cfg.check(); err != nil {
		return DecodeBench{}, err
	}
	reps = max(reps, 1)
	if err := r.lock(); err != nil {
		return DecodeBench{}, err
	}
	defer r.mu.Unlock()
	q := make([]float32, cfg.Batch*cfg.QHeads*cfg.HeadDim)
	for i := range q {
		q[i] = float32(math.Sin(float64(i)*12.9898) * 1.5)
	}
	bufs, err := r.decodeBuffers(cfg, f32Bytes(q), nil, nil)
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
	steps := bufs.calls(cfg)
	if _, err := r.be.run(ctx, steps, true); err != nil { // warm-up, compiles
		return DecodeBench{}, err
	}
	res := DecodeBench{Config: cfg, Bytes: cfg.KVBytes(), Source: "wall"}
	allGPU := true
	var walls, gpus []time.Duration
	for range reps {
		t, err := r.be.run(ctx, steps, true)
		if err != nil {
			return DecodeBench{}, err
		}
		walls = append(walls, t.Wall)
		gpus = append(gpus, t.GPU)
		allGPU = allGPU && t.GPU > 0
	}
	res.Times = walls
	if allGPU {
		res.Times, res.Source = gpus, "timestamp"
	}
	sorted := slices.Clone(res.Times)
	slices.Sort(sorted)
	res.Time = sorted[len(sorted)/2]
	res.Bandwidth = float64(res.Bytes) / res.Time.Seconds()
	return res, nil
}
