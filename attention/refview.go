package attention

import (
	"context"
	"math"
	"sync"
	"unsafe"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/hugemem"
	"github.com/fp8lab/fp8lab/internal/pmath"
)

// The quantized reference's second layout of a cache (see referenceViews):
// the codes of K and V rearranged so that the sixteen lanes of one step of
// the vector kernels are contiguous, 32 bytes one load.
//
//   - K is dim-major within blocks of refLanes tokens: for block b of
//     refLanes tokens and dimension x, the codes of tokens
//     b·refLanes … b·refLanes+15 lie side by side, [head][stride/16][dim][16]
//     (the padding tokens of the stride +0 codes): one load gives sixteen
//     keys' codes at x, the lanes of sixteen independent dot products.
//   - V is token-major within blocks of refLanes channels: for channel
//     block cb and token j, the codes of channels cb·16 … cb·16+15 of key
//     j lie side by side, [head][⌈vdim/16⌉][stride][16] (the padding
//     channels +0 codes): one load gives one key's codes of sixteen output
//     elements, the lanes of sixteen independent weighted sums.
//
// A view is built once per cache, by the reference that refViewAfter names
// for its format (KV.refView: a cache read fewer times keeps the scalar path),
// and read by every reference after, from any number of
// goroutines. It is one more copy of the cache's codes. Every write of codes
// keeps it equal to the cache: SetToken and SetTokenCodes (and so
// RestoreToken) write the token into the view too, a bulk quantization
// (setTokens) drops it, and a Clone starts without one. A block-scaled
// cache never builds one (its reference reads Dequantize).
const refLanes = 16

// refViewChunk is the keys of V the weighted sums take at a time (for a
// GQA group, decoded once: 32 KiB of float64, in the L1 or L2 cache).
const refViewChunk = 256

// refView is a cache's K and V codes in the reference's vector layout.
type refView struct {
	vblocks int      // ⌈vdim / refLanes⌉
	k       []uint16 // [head][stride/refLanes][dim][refLanes]
	v       []uint16 // [head][vblocks][stride][refLanes]
}

// kvViews holds a cache's view, built on demand; mu orders the build with
// the writes that keep it current.
type kvViews struct {
	mu    sync.Mutex
	reads int // the references that asked for a view
	v     *refView
	// The kernels' tile-major views of V (vtiles.go), by tile width, and
	// the kernels of each width that asked for one.
	vt     map[int]*vTiles
	vreads map[int]int
}

// refView returns the cache's view, building it on the refViewAfter-th
// call (a cache read only a few times does not pay for the copy: its
// references read the cache's own layout, the same bits), or nil before
// and when the vector kernels cannot run here (another architecture, the
// purego tag, a CPU without AVX2 or F16C), for a block-scaled cache, or
// for a format refDecodes has no row for. Safe for
// concurrent use by readers of the cache.
func (c *KV) refView() *refView { return c.refViewReads(1) }

// refViewReads is refView for reads references at once (the trials of
// ReferenceQuantizedTrials, each of which would have read the cache): they
// count as that many reads.
func (c *KV) refViewReads(reads int) *refView {
	after := refViewAfter(c.format)
	if after == 0 || !haveRefAsm || c.bs != nil || c.views == nil {
		return nil
	}
	c.views.mu.Lock()
	defer c.views.mu.Unlock()
	if c.views.v == nil {
		if c.views.reads += reads; c.views.reads < after {
			return nil
		}
		c.views.v = newRefView(c)
	}
	return c.views.v
}

// dropViews forgets the view (a bulk write of the cache follows).
func (c *KV) dropViews() {
	if c.views == nil {
		return
	}
	c.views.mu.Lock()
	c.views.v, c.views.reads = nil, 0
	c.views.vt, c.views.vreads = nil, nil
	c.views.mu.Unlock()
}

// viewToken copies token t of KV head h from the cache into its views, if
// it has any.
func (c *KV) viewToken(t, h int) {
	if c.views == nil {
		return
	}
	c.views.mu.Lock()
	if v := c.views.v; v != nil {
		v.setToken(c, t, h)
	}
	for _, w := range c.views.vt {
		w.setToken(c, t, h)
	}
	c.views.mu.Unlock()
}

// newRefView builds the view of c's codes.
func newRefView(c *KV) *refView {
	const L = refLanes
	st, d, dv := c.stride, c.dim, c.vdim
	v := &refView{vblocks: (dv + L - 1) / L}
	v.k = alignedCodes(c.heads * st * d)
	v.v = alignedCodes(c.heads * v.vblocks * st * L)
	// Each 32-byte row of the view written whole, in order (the fresh
	// memory's lines filled one after the other), from sixteen sources; on
	// GOMAXPROCS goroutines for a large cache, each writing its own blocks.
	zero := make([]uint16, max(d, c.tokens)) // the padding's source
	kblocks := st / L
	_ = parallelRange(context.Background(), c.heads*kblocks, 64, len(v.k), 0, func(u0, u1 int) {
		var src [L][]uint16
		for u := u0; u < u1; u++ {
			h, b := u/kblocks, u%kblocks
			if (b+1)*L <= c.tokens && d%L == 0 {
				// sixteen whole tokens: d/16 tiles of 16 × 16 codes
				transposeTiles(v.k[(h*kblocks+b)*d*L:][:d*L], c.k[(h*c.tokens+b*L)*d:], d, d/L)
				continue
			}
			for l := range src {
				src[l] = zero[:d]
				if t := b*L + l; t < c.tokens {
					src[l] = c.k[(h*c.tokens+t)*d:][:d]
				}
			}
			dst := v.k[(h*kblocks+b)*d*L:][:d*L]
			for x := 0; x < d; x++ {
				row := (*[L]uint16)(dst[x*L:])
				for l := range row {
					row[l] = src[l][x]
				}
			}
		}
	})
	const chunk = 1024 // tokens of V a unit
	chunks := (c.tokens + chunk - 1) / chunk
	_ = parallelRange(context.Background(), c.heads*v.vblocks*chunks, 4, len(v.v), 0, func(u0, u1 int) {
		var src [L][]uint16
		for u := u0; u < u1; u++ {
			h, cb, t0 := u/(v.vblocks*chunks), u/chunks%v.vblocks, u%chunks*chunk
			t1 := min(t0+chunk, c.tokens)
			for l := range src {
				src[l] = zero[:c.tokens]
				if x := cb*L + l; x < dv {
					src[l] = c.vt[(h*dv+x)*st:][:c.tokens]
				}
			}
			dst := v.v[(h*v.vblocks+cb)*st*L:][:st*L]
			if (cb+1)*L <= dv {
				// sixteen whole channels: the tiles of 16 tokens, then the rest
				n := (t1 - t0) / L
				transposeTiles(dst[t0*L:][:n*L*L], c.vt[(h*dv+cb*L)*st+t0:], st, n)
				t0 += n * L
			}
			for t := t0; t < t1; t++ {
				row := (*[L]uint16)(dst[t*L:])
				for l := range row {
					row[l] = src[l][t]
				}
			}
		}
	})
	return v
}

// refWeights turns one query's dot products se[lo:hi] (query row i of
// query head hq, its dequantized query qr) into its softmax weights in
// place: each times SoftmaxScale, a patched key's (pr, by token) from its
// patch's codes (val × the K descale ks), a masked key's −∞, then
// expWeights from the row's max. It returns l (with the sink's term when
// cfg has sinks), whether the row has a key to weigh (live: otherwise se is
// left as scores and its output stays 0), and whether any weight is −∞.
func (k *kernel) refWeights(se, qr []float64, pr []TokenPatch, val []float64, ks float64, i, hq, lo, hi int, eb *expBuf) (l float64, live, neg bool) {
	p := k.Plan
	for j := lo; j < hi; j++ {
		se[j] = p.SoftmaxScale * se[j]
	}
	for _, tp := range pr {
		var dot float64
		for x, c := range tp.K {
			dot += qr[x] * (val[c] * ks)
		}
		se[tp.Pos] = p.SoftmaxScale * dot
	}
	if p.Mask != nil {
		for j, ok := range p.Mask[i*p.n+lo : i*p.n+hi] {
			if !ok {
				se[lo+j] = math.Inf(-1)
			}
		}
	}
	me := math.Inf(-1)
	for _, sc := range se[lo:hi] {
		me = max(me, sc)
		neg = neg || math.IsInf(sc, -1)
	}
	if math.IsInf(me, -1) {
		return 0, false, neg
	}
	if len(p.Sinks) > 0 {
		l = pmath.Exp(p.Sinks[hq] - me)
	}
	return expWeights(se[lo:hi], me, l, eb), true, neg
}

// transposeTiles is transpose16 on slices: tiles 16×16 transposes, tile
// j's row l the 16 codes at src[16j+l·stride:], row x of its transpose to
// dst[256j+16x:]. It panics when a tile reaches past src or dst.
func transposeTiles(dst, src []uint16, stride, tiles int) {
	if tiles <= 0 {
		return
	}
	if len(dst) < 256*tiles || len(src) < 15*stride+16*tiles || stride < 16 {
		panic("attention: transposeTiles out of bounds")
	}
	transpose16(&dst[0], &src[0], stride, tiles)
}

// alignedCodes returns n +0 codes starting on a 64-byte boundary, so that
// no 32-byte load of a kernel's step splits a cache line.
func alignedCodes(n int) []uint16 {
	b := hugemem.Advise(make([]uint16, n+32))
	off := int(uintptr(unsafe.Pointer(&b[0])) % 64 / 2)
	return b[(32-off)%32:][:n:n]
}

// setToken copies token t of KV head h from c into the view.
func (v *refView) setToken(c *KV, t, h int) {
	const L = refLanes
	st, d, dv := c.stride, c.dim, c.vdim
	dst := v.k[(h*st/L+t/L)*d*L+t%L:]
	for x, code := range c.k[(h*c.tokens+t)*d:][:d] {
		dst[x*L] = code
	}
	for x := 0; x < dv; x++ {
		v.v[((h*v.vblocks+x/L)*st+t)*L+x%L] = c.vt[(h*dv+x)*st+t]
	}
}

// refDecoder says how a kernel turns a code into its value × descale (the
// exact value times the descale, rounded once in float64, as
// referenceCodes's tables hold it): mode, a row of refDecodes, and scale,
// the descale times the row's unit.
type refDecoder struct {
	mode  int
	scale float64
}

// The kernels' decodes: every cache format (fp8.Format) the view serves
// is a row of refDecodes; a cache of any other format builds no view.
const (
	refE4M3 = iota // the magnitude bits << 7 are the f16 of value / 256, the sign to bit 15, 0x7f to NaN
	refE5M2        // code << 8 is the f16 bits
	refBF16        // code << 16 is the float32 bits
	refF16         // the f16 bits
)

// refDecodes maps a cache format to its decode and its unit: the value of
// a code is unit × what the decode gives (exact: a power of two).
var refDecodes = map[fp8.Format]struct {
	mode  int
	unit  float64
	after int // the reference that builds the view (refViewAfter: ⌈build / saving⌉)
}{
	fp8.FormatE4M3: {refE4M3, 256, 4},
	fp8.FormatE5M2: {refE5M2, 1, 2},
	fp8.FormatBF16: {refBF16, 1, 2},
	fp8.FormatFP16: {refF16, 1, 1},
}

// refViewAfter returns the reference of a cache of format f that builds
// its view (0: none is built).
//
// A cache's view is built by its refDecodes row's after-th reference: a
// cache read R times pays, with the view, after−1 reads from the codes, the
// build and R−after+1 reads from the view. Not knowing R, building once
// the savings forgone by the reads from the codes add up to one build
// (after = build / a read's saving, the ski-rental rule) costs at most
// twice the better choice made knowing R. Measured on the 2-core VM
// (BenchmarkRefViewBuild with -cpu 1, BenchmarkReferenceQuantizedFormats:
// 128k tokens, head_dim 128, one core; medians of 3, 2026-12-03): a build
// 15.4 ms (its tiles through transpose16), a read from the view saving 5.0
// (e4m3), 11.2 (e5m2), 10.1 (bf16) and 21.1 (f16) cpu-ms.
func refViewAfter(f fp8.Format) int { return refDecodes[f].after }

// referenceViews is referenceCodes on the cache's view (the same
// arguments, the same bits): each score's dot product over head_dim in
// order, sixteen keys a step in the vector kernel (refDots); each output
// element's sum over the keys in order, sixteen channels a step
// (refSums). A score depends on its key alone, so every score of the
// visible keys' blocks is computed from the cache, and then a patched
// key's score is computed again from its patch, and a masked key's set to
// −∞; the sums stop at each patched key, add its term from the patch (in
// its place in the order), and go on. For a GQA group (g > 1) each block
// of K, and each refViewChunk keys of V, is decoded once (refDecode) and
// summed from for every query head of the group (refDotsDecoded,
// refSumsDecoded): the same values, the same products.
func (k *kernel) referenceViews(ctx context.Context, qv []float64, patch [][]TokenPatch, vw *refView) ([]float64, error) {
	const L = refLanes
	kv, p := k.kv, k.Plan
	d, dv, n, g, st := p.HeadDim, p.VDim, p.n, p.group, kv.stride
	val := valueTable(kv.format)
	out := make([]float64, p.mq*p.QHeads*dv)
	dec := refDecodes[kv.format] // refView built a view: the format is a row
	// The KV heads side by side, each on its own scratch, each group's
	// outputs in their own place (the same bits whatever the number of
	// goroutines).
	err := parallelRangeErr(ctx, p.KVHeads, 1, p.mq*p.QHeads*n*d, 0, func(h0, h1 int) error {
		s := make([]float64, g*st) // the group's scores, then weights: [head in group][key]
		l := make([]float64, g)
		live := make([]bool, g)
		kbuf := make([]float64, L*d) // a block of keys, decoded (groups of query heads)
		var vbuf []float64           // a chunk of keys' values, decoded (groups)
		if g > 1 {
			vbuf = make([]float64, refViewChunk*L)
		}
		accs := make([][L]float64, g) // each head's sums of one block of channels
		kd, vd := refDecoder{mode: dec.mode}, refDecoder{mode: dec.mode}
		var eb expBuf
		for h := h0; h < h1; h++ {
			ks, vs := float64(scaleOf(kv.kScale, h)), float64(scaleOf(kv.vScale, h))
			// The unit times the descale is exact (a power of two times a
			// float32), so value × descale is still one rounding.
			kd.scale, vd.scale = dec.unit*ks, dec.unit*vs
			var pt []TokenPatch // this head's patched tokens, in order
			if patch != nil {
				pt = patch[h]
			}
			kh := vw.k[h*st*d:][:st*d]
			vh := vw.v[h*vw.vblocks*st*L:][:vw.vblocks*st*L]
			for i := 0; i < p.mq; i++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				pos := p.position(i)
				lo, hi := p.keyRange(pos)
				if hi <= lo {
					continue
				}
				pr := patchesIn(pt, lo, hi)
				b0, b1 := lo/L, (hi+L-1)/L
				if g == 1 {
					refDots(s[b0*L:b1*L], qv[(i*p.QHeads+h)*d:][:d], kh[b0*L*d:b1*L*d], &kd)
				} else {
					// A group: each block of keys decoded once, for every
					// query head of the group (the same values).
					for b := b0; b < b1; b++ {
						refDecode(kbuf, kh[b*L*d:][:L*d], &kd)
						for e := 0; e < g; e++ {
							refDotsDecoded(s[e*st+b*L:][:L], qv[(i*p.QHeads+h*g+e)*d:][:d], kbuf)
						}
					}
				}
				someLive := false
				for e := 0; e < g; e++ {
					l[e], live[e], _ = k.refWeights(s[e*st:][:st], qv[(i*p.QHeads+h*g+e)*d:][:d], pr, val, ks, i, h*g+e, lo, hi, &eb)
					someLive = someLive || live[e]
				}
				if !someLive {
					continue
				}
				for cb := 0; cb < vw.vblocks; cb++ {
					vb := vh[cb*st*L:][:st*L]
					nc := min(L, dv-cb*L) // the block's channels
					for e := range accs {
						accs[e] = [L]float64{}
					}
					// refViewChunk keys at a time (g > 1: decoded once for
					// the group), each run of keys between patches summed by
					// the kernel, each patched key's term added in its place.
					np := 0 // the first patch of pr at or after the chunk
					for c0 := lo; c0 < hi; c0 += refViewChunk {
						c1 := min(c0+refViewChunk, hi)
						pc := np // the chunk's patches: pr[np:pc]
						for pc < len(pr) && pr[pc].Pos < c1 {
							pc++
						}
						if g > 1 {
							refDecode(vbuf[:(c1-c0)*L], vb[c0*L:c1*L], &vd)
						}
						for e := 0; e < g; e++ {
							if !live[e] {
								continue
							}
							se, acc := s[e*st:][:st], &accs[e]
							run := func(j0, j1 int) {
								if g > 1 {
									refSumsDecoded(acc, se[j0:j1], vbuf[(j0-c0)*L:])
								} else {
									refSums(acc, se[j0:j1], vb[j0*L:], &vd)
								}
							}
							j := c0
							for _, tp := range pr[np:pc] {
								run(j, tp.Pos)
								if w := se[tp.Pos]; !math.IsInf(w, -1) {
									for c, code := range tp.V[cb*L:][:nc] {
										acc[c] += w * (val[code] * vs)
									}
								}
								j = tp.Pos + 1
							}
							run(j, c1)
						}
						np = pc
					}
					for e := 0; e < g; e++ {
						if !live[e] {
							continue
						}
						o := out[(i*p.QHeads+h*g+e)*dv+cb*L:][:nc]
						for c := range o {
							o[c] = accs[e][c] / l[e]
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
