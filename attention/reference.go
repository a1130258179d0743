package attention

import (
	"context"
	"fmt"
	"math"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
)

// Reference returns exact-as-float64 attention: for every query row,
// softmax(SoftmaxScale · q·kᵀ) · v over the keys the row may see (cfg's
// causal mask and window, queries the last mq tokens of n), with float64
// dot products, exp (pmath.Exp: the same bits on every platform) and sums (two passes: max, then Σ exp(s − max)·v /
// Σ exp(s − max)), with exp(sink − max) added to the denominator when
// cfg.Sinks is set. q is [mq][QHeads][HeadDim]; k is [n][KVHeads][HeadDim],
// v [n][KVHeads][VDim]; the result is [mq][QHeads][VDim]. cfg's models,
// dtype, tiles and promotion play no part. A row that sees no key gives 0.
// The rows and heads run on up to GOMAXPROCS goroutines (each output
// element is computed by one, in the order above: the same bits however
// many run). It honours ctx between chunks of rows and heads.
func Reference(ctx context.Context, cfg Config, q, k, v []float64, mq, n int) ([]float64, error) {
	return reference(ctx, cfg, q, k, v, mq, n, 0, referenceChunkKeys)
}

// ReferenceF32 is [Reference] on float32 inputs, bit for bit Reference on
// their float64 values (every element converted exactly) without those
// float64 copies: k and v are read where they lie, a float32 cache of n
// tokens costing no 2·n·heads·d·8 bytes of copies (what scales and
// attention-file built for each trial or layer).
func ReferenceF32(ctx context.Context, cfg Config, q, k, v []float32, mq, n int) ([]float64, error) {
	q64 := make([]float64, len(q))
	for i, x := range q {
		q64[i] = float64(x)
	}
	return reference(ctx, cfg, q64, k, v, mq, n, 0, referenceChunkKeys)
}

// reference is Reference on up to workers goroutines (0: GOMAXPROCS),
// each taking chunks of about chunkKeys keys at a time, on keys and values
// of either float type.
func reference[T float32 | float64](ctx context.Context, cfg Config, q []float64, k, v []T, mq, n, workers, chunkKeys int) ([]float64, error) {
	if cfg.KVHeads == 0 {
		cfg.KVHeads = 1
	}
	if cfg.QHeads == 0 {
		cfg.QHeads = cfg.KVHeads
	}
	// The dtype, models and tiles play no part: the defaults are resolved
	// instead, so that the config of any path (a block-scaled cache's e2m1
	// dtype and instructions included) gives its reference.
	cfg.DType, cfg.QKModel, cfg.PVModel, cfg.KBlockM, cfg.KBlockN = fp8.FormatInvalid, "", "", 0, 0
	p, err := cfg.resolve(mq, n)
	if err != nil {
		return nil, err
	}
	d, dv := p.HeadDim, p.VDim
	if len(q) != mq*p.QHeads*d || len(k) != n*p.KVHeads*d || len(v) != n*p.KVHeads*dv {
		return nil, fmt.Errorf("attention: Reference with %d query, %d key and %d value elements: want %d, %d, %d (%d queries, %d tokens, %d/%d heads, head_dim %d/%d)",
			len(q), len(k), len(v), mq*p.QHeads*d, n*p.KVHeads*d, n*p.KVHeads*dv, mq, n, p.QHeads, p.KVHeads, d, dv)
	}
	out := make([]float64, mq*p.QHeads*dv)
	// Each (row, head) output is its own: the units go to workers in
	// chunks of about chunkKeys keys, in any order, with the same
	// bits.
	units := mq * p.QHeads
	chunk := max(1, chunkKeys/max(1, n))
	if err := parallelRange(ctx, units, chunk, units*n*d, workers, func(u0, u1 int) {
		s := make([]float64, n)
		var eb expBuf
		for u := u0; u < u1; u++ {
			referenceRow(p, q, k, v, u/p.QHeads, u%p.QHeads, s, &eb, out)
		}
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// referenceChunkKeys is about the keys (rows × heads × visible keys) one
// worker of Reference takes at a time.
const referenceChunkKeys = 1 << 15

// referenceRow writes Reference's output of query row i, head hq into
// out, with s (n scores) and eb as scratch; float32 keys and values give
// the bits of their float64 values (pmath's F32 and F64 kernels agree).
func referenceRow[T float32 | float64](p *Plan, q []float64, k, v []T, i, hq int, s []float64, eb *expBuf, out []float64) {
	d, dv, n := p.HeadDim, p.VDim, p.n
	pos := p.position(i)
	lo, hi := p.keyRange(pos)
	h := hq / p.group
	qr := q[(i*p.QHeads+hq)*d:][:d]
	m := math.Inf(-1)
	var kb [8][]T
	var db [8]float64
	for j := lo; j < hi; j++ {
		if run := (hi - j) &^ 3; refKernelsBuilt && run > 0 && p.Mask == nil {
			// The js/wasm kernel: the float32 keys' sums, each in order,
			// four at a time, every run of the row's keys in one call.
			if kf, ok := any(k).([]float32); ok && dotsF32Wasm(qr, kf[(j*p.KVHeads+h)*d:], p.KVHeads*d, p.SoftmaxScale, s[j:][:run]) {
				for _, x := range s[j:][:run] {
					m = max(m, x)
				}
				j += run - 1
				continue
			}
		}
		if j+8 <= hi && p.Mask == nil {
			// Eight keys side by side, each sum in order.
			for c := range kb {
				kb[c] = k[((j+c)*p.KVHeads+h)*d:]
			}
			dots8(&db, qr, &kb)
			for c, dot := range db {
				s[j+c] = p.SoftmaxScale * dot
			}
			m = max(m, s[j], s[j+1], s[j+2], s[j+3], s[j+4], s[j+5], s[j+6], s[j+7])
			j += 7
			continue
		}
		if p.Mask != nil && !p.Mask[i*n+j] {
			s[j] = math.Inf(-1)
			continue
		}
		kr := k[(j*p.KVHeads+h)*d:][:d]
		var dot float64
		for x := range qr {
			dot += qr[x] * float64(kr[x])
		}
		s[j] = p.SoftmaxScale * dot
		m = max(m, s[j])
	}
	o := out[(i*p.QHeads+hq)*dv:][:dv]
	if hi <= lo || math.IsInf(m, -1) {
		return
	}
	var l float64
	if len(p.Sinks) > 0 {
		l = pmath.Exp(p.Sinks[hq] - m)
	}
	l = expWeights(s[lo:hi], m, l, eb)
	for j := lo; j < hi; {
		if j+4 <= hi && !math.IsInf(s[j], -1) && !math.IsInf(s[j+1], -1) && !math.IsInf(s[j+2], -1) && !math.IsInf(s[j+3], -1) {
			// Four keys' terms of each output element, added in order.
			axpy4(o, (*[4]float64)(s[j:j+4]), v[(j*p.KVHeads+h)*dv:], v[((j+1)*p.KVHeads+h)*dv:],
				v[((j+2)*p.KVHeads+h)*dv:], v[((j+3)*p.KVHeads+h)*dv:])
			j += 4
			continue
		}
		w := s[j]
		if math.IsInf(w, -1) { // masked
			j++
			continue
		}
		vr := v[(j*p.KVHeads+h)*dv:][:dv]
		for x := range o {
			o[x] += w * float64(vr[x])
		}
		j++
	}
	for x := range o {
		o[x] /= l
	}
}

// dots8 is pmath.DotsF64x8 or DotsF32x8, by the keys' type.
func dots8[T float32 | float64](db *[8]float64, q []float64, kb *[8][]T) {
	switch kb := any(kb).(type) {
	case *[8][]float64:
		pmath.DotsF64x8(db, q, kb)
	case *[8][]float32:
		pmath.DotsF32x8(db, q, kb)
	}
}

// axpy4 is pmath.AxpyF64x4 or AxpyF32x4, by the values' type.
func axpy4[T float32 | float64](o []float64, w *[4]float64, v0, v1, v2, v3 []T) {
	switch v0 := any(v0).(type) {
	case []float64:
		pmath.AxpyF64x4(o, w, v0, any(v1).([]float64), any(v2).([]float64), any(v3).([]float64))
	case []float32:
		pmath.AxpyF32x4(o, w, v0, any(v1).([]float32), any(v2).([]float32), any(v3).([]float32))
	}
}

// ReferenceQuantized is Reference on the values the kernel reads: the
// query codes (q / q_descale cast to cfg.DType, as Run casts them) times
// q_descale, and the cache's codes times their descales. It compares Run's
// output with exact attention on the same quantized inputs.
func ReferenceQuantized(ctx context.Context, cfg Config, q, qScale []float32, kv *KV) ([]float64, error) {
	return ReferenceQuantizedPatched(ctx, cfg, q, qScale, kv, nil)
}

// ReferenceQuantizedPatched is [ReferenceQuantized] on kv read through
// patch: the same bits as ReferenceQuantized on a copy of kv with the
// patches written in by [KV.SetTokenCodes], in order, without the copy, so
// that goroutines can share one cache, each with its own replaced tokens
// (a needle, sinks). kv is only read. A patch outside the cache or of the
// wrong length, or any patch of a block-scaled cache, is an error.
func ReferenceQuantizedPatched(ctx context.Context, cfg Config, q, qScale []float32, kv *KV, patch []TokenPatch) ([]float64, error) {
	k, err := newKernel(cfg, []int{0}, q, qScale, kv)
	if err != nil {
		return nil, err
	}
	by, err := kv.patchesByHead(patch)
	if err != nil {
		return nil, err
	}
	qv := k.dequantizedQuery(q)
	if kv.bs == nil {
		if vw := kv.refView(); vw != nil {
			return k.referenceViews(ctx, qv, by, vw)
		}
		return k.referenceCodes(ctx, qv, by)
	}
	kd, vd := kv.Dequantize()
	return Reference(ctx, k.Config, qv, kd, vd, k.mq, k.n)
}

// referenceCodes is Reference on the cache's dequantized codes (code value
// × descale, as KV.Dequantize gives them) and the dequantized query qv,
// read from the codes in place, with the tokens of patch (per KV head,
// ordered by token: KV.patchesByHead) read from their patches instead: the
// same operations in the same order (each score's dot product over
// head_dim in order, each output element's sum over the keys in order), so
// the same bits, without a float64 copy of the cache. The query heads of
// one KV head go together, so that each key is decoded once for the group
// (through a table of code value × descale: the product KV.Dequantize
// rounds), and four keys' scores (four output elements' sums) are computed
// side by side: independent sums, each in its own order, that the
// processor can overlap. A patched token ends a run of keys read from the
// cache: its score, and its term of each sum, is computed alone, in its
// place in the order.
func (k *kernel) referenceCodes(ctx context.Context, qv []float64, patch [][]TokenPatch) ([]float64, error) {
	kv, p := k.kv, k.Plan
	d, dv, n, g := p.HeadDim, p.VDim, p.n, p.group
	val := valueTable(kv.format)
	out := make([]float64, p.mq*p.QHeads*dv)
	// The KV heads side by side, each group's outputs in their own place
	// (the same bits whatever the number of goroutines).
	err := parallelRangeErr(ctx, p.KVHeads, 1, p.mq*p.QHeads*n*d, 0, func(h0, h1 int) error {
		s := make([]float64, g*n)  // the group's scores, then weights: [head in group][key]
		m := make([]float64, g)    // each head's largest score
		l := make([]float64, g)    // each head's sum of weights
		live := make([]bool, g)    // each head has a key to weigh
		kr := make([]float64, 4*d) // four keys, decoded
		kt := make([]float64, len(val))
		vt := make([]float64, len(val))
		var eb expBuf
		return k.referenceCodesHeads(ctx, qv, patch, h0, h1, val, out, s, m, l, live, kr, kt, vt, &eb)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// referenceCodesHeads is referenceCodes for KV heads h0 … h1−1, their
// outputs written into out, with the scratch given.
func (k *kernel) referenceCodesHeads(ctx context.Context, qv []float64, patch [][]TokenPatch, h0, h1 int, val, out, s, m, l []float64,
	live []bool, kr, kt, vt []float64, eb *expBuf) error {
	kv, p := k.kv, k.Plan
	d, dv, n, g := p.HeadDim, p.VDim, p.n, p.group
	for h := h0; h < h1; h++ {
		ks, vs := float64(scaleOf(kv.kScale, h)), float64(scaleOf(kv.vScale, h))
		for c, v := range val {
			kt[c], vt[c] = v*ks, v*vs
		}
		var pt []TokenPatch // this head's patched tokens, in order
		if patch != nil {
			pt = patch[h]
		}
		for i := 0; i < p.mq; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			pos := p.position(i)
			lo, hi := p.keyRange(pos)
			for e := range m {
				m[e] = math.Inf(-1)
			}
			// The patches of keys lo … hi−1.
			pr := patchesIn(pt, lo, hi)
			next := 0 // the first patch of pr at or after key j
			for j := lo; j < hi; {
				stop := hi // the next patched key
				if next < len(pr) {
					stop = pr[next].Pos
				}
				if run := (stop - j) &^ 3; refKernelsBuilt && g == 1 && p.Mask == nil && run > 0 &&
					dots4Wasm(qv[(i*p.QHeads+h)*d:][:d], kv.k[(h*n+j)*d:], d, kt, p.SoftmaxScale, s[j:][:run]) {
					// The js/wasm kernel: dot4's bits for the run's keys
					// up to the next patch, four at a time, in one call.
					for _, v := range s[j:][:run] {
						m[0] = max(m[0], v)
					}
					j += run
					continue
				}
				if j+4 <= stop && (p.Mask == nil || p.Mask[i*n+j] && p.Mask[i*n+j+1] && p.Mask[i*n+j+2] && p.Mask[i*n+j+3]) {
					c0, c1, c2, c3 := kv.k[(h*n+j)*d:][:d], kv.k[(h*n+j+1)*d:][:d], kv.k[(h*n+j+2)*d:][:d], kv.k[(h*n+j+3)*d:][:d]
					if g == 1 {
						// One query head: each key decoded inside its
						// dot product (the same products, in the same
						// order), without the store and the load.
						se := s[j:][:4]
						se[0], se[1], se[2], se[3] = dot4(qv[(i*p.QHeads+h)*d:][:d], c0, c1, c2, c3, kt, p.SoftmaxScale)
						m[0] = max(m[0], se[0], se[1], se[2], se[3])
						j += 4
						continue
					}
					k0, k1, k2, k3 := kr[:d], kr[d:2*d], kr[2*d:3*d], kr[3*d:4*d]
					for x := range k0 {
						k0[x], k1[x], k2[x], k3[x] = kt[c0[x]], kt[c1[x]], kt[c2[x]], kt[c3[x]]
					}
					for e := 0; e < g; e++ {
						qr := qv[(i*p.QHeads+h*g+e)*d:][:d]
						var d0, d1, d2, d3 float64
						for x, q := range qr {
							d0 += q * k0[x]
							d1 += q * k1[x]
							d2 += q * k2[x]
							d3 += q * k3[x]
						}
						se := s[e*n+j:][:4]
						se[0], se[1], se[2], se[3] = p.SoftmaxScale*d0, p.SoftmaxScale*d1, p.SoftmaxScale*d2, p.SoftmaxScale*d3
						m[e] = max(m[e], se[0], se[1], se[2], se[3])
					}
					j += 4
					continue
				}
				codes := kv.k[(h*n+j)*d:][:d]
				if j == stop && next < len(pr) {
					codes = pr[next].K
					next++
				}
				if p.Mask != nil && !p.Mask[i*n+j] {
					for e := 0; e < g; e++ {
						s[e*n+j] = math.Inf(-1)
					}
					j++
					continue
				}
				k0 := kr[:d]
				for x, c := range codes {
					k0[x] = kt[c]
				}
				for e := 0; e < g; e++ {
					qr := qv[(i*p.QHeads+h*g+e)*d:][:d]
					var dot float64
					for x := range qr {
						dot += qr[x] * k0[x]
					}
					sc := p.SoftmaxScale * dot
					s[e*n+j] = sc
					m[e] = max(m[e], sc)
				}
				j++
			}
			someLive := false
			for e := 0; e < g; e++ {
				live[e] = hi > lo && !math.IsInf(m[e], -1) // a head with a key to weigh
				if !live[e] {
					continue
				}
				someLive = true
				l[e] = 0
				if len(p.Sinks) > 0 {
					l[e] = pmath.Exp(p.Sinks[h*g+e] - m[e])
				}
				l[e] = expWeights(s[e*n:][lo:hi], m[e], l[e], eb)
			}
			if !someLive {
				continue
			}
			x := 0
			for ; x+4 <= dv; x += 4 {
				r0, r1 := kv.vt[(h*dv+x)*kv.stride:][:hi], kv.vt[(h*dv+x+1)*kv.stride:][:hi]
				r2, r3 := kv.vt[(h*dv+x+2)*kv.stride:][:hi], kv.vt[(h*dv+x+3)*kv.stride:][:hi]
				for e := 0; e < g; e++ {
					if !live[e] {
						continue
					}
					se := s[e*n:][:hi]
					var a0, a1, a2, a3 float64
					j := lo
					for _, tp := range pr {
						a0, a1, a2, a3 = sum4(se[j:tp.Pos], r0[j:], r1[j:], r2[j:], r3[j:], vt, a0, a1, a2, a3)
						if w := se[tp.Pos]; !math.IsInf(w, -1) {
							a0 += w * vt[tp.V[x]]
							a1 += w * vt[tp.V[x+1]]
							a2 += w * vt[tp.V[x+2]]
							a3 += w * vt[tp.V[x+3]]
						}
						j = tp.Pos + 1
					}
					a0, a1, a2, a3 = sum4(se[j:hi], r0[j:], r1[j:], r2[j:], r3[j:], vt, a0, a1, a2, a3)
					o := out[(i*p.QHeads+h*g+e)*dv+x:][:4]
					o[0], o[1], o[2], o[3] = a0/l[e], a1/l[e], a2/l[e], a3/l[e]
				}
			}
			for ; x < dv; x++ {
				row := kv.vt[(h*dv+x)*kv.stride:][:hi]
				for e := 0; e < g; e++ {
					if !live[e] {
						continue
					}
					se := s[e*n:][:hi]
					var acc float64
					for j := lo; j < hi; j++ {
						c := row[j]
						if next := patchAt(pr, j); next != nil {
							c = next.V[x]
						}
						if w := se[j]; !math.IsInf(w, -1) {
							acc += w * vt[c]
						}
					}
					out[(i*p.QHeads+h*g+e)*dv+x] = acc / l[e]
				}
			}
		}
	}
	return nil
}

// expBuf is expWeights's scratch: the arguments of one chunk of keys,
// small enough to stay in the L1 cache.
type expBuf [512]float64

// expWeights turns the scores w into weights, w_j = pmath.Exp(w_j − m)
// (the same bits: pmath.Exps), leaving every −∞ (a masked key) as it is,
// and returns l plus the weights, added in order (the −∞ skipped). buf is
// scratch.
func expWeights(w []float64, m, l float64, buf *expBuf) float64 {
	for len(w) > 0 {
		c := w[:min(len(w), len(buf))]
		t := buf[:len(c)]
		for j, v := range c {
			t[j] = v - m
		}
		pmath.Exps(t, t)
		for j, v := range c {
			if math.IsInf(v, -1) {
				continue
			}
			c[j] = t[j]
			l += t[j]
		}
		w = w[len(c):]
	}
	return l
}

// sum4 adds w_j·vt[r_c[j]] to a_c for every weight w_j of w that is not
// −∞ (a masked key), in order: four output elements' sums over one run of
// keys read from the cache (r_c the rows of four channels, from the run's
// first key).
func sum4(w []float64, r0, r1, r2, r3 []uint16, vt []float64, a0, a1, a2, a3 float64) (float64, float64, float64, float64) {
	if b0, b1, b2, b3, ok := sum4Wasm(w, r0, r1, r2, r3, vt, a0, a1, a2, a3); ok {
		return b0, b1, b2, b3 // the WebAssembly kernel (js/wasm only), the same bits
	}
	r0, r1, r2, r3 = r0[:len(w)], r1[:len(w)], r2[:len(w)], r3[:len(w)]
	for j, wj := range w {
		if !math.IsInf(wj, -1) {
			a0 += wj * vt[r0[j]]
			a1 += wj * vt[r1[j]]
			a2 += wj * vt[r2[j]]
			a3 += wj * vt[r3[j]]
		}
	}
	return a0, a1, a2, a3
}

// dot4 returns the scores scale·Σ_x q[x]·kt[c_i[x]] of four keys of codes
// c_i (each sum in order over x), side by side.
func dot4(q []float64, c0, c1, c2, c3 []uint16, kt []float64, scale float64) (float64, float64, float64, float64) {
	c0, c1, c2, c3 = c0[:len(q)], c1[:len(q)], c2[:len(q)], c3[:len(q)]
	var d0, d1, d2, d3 float64
	for x, qx := range q {
		d0 += qx * kt[c0[x]]
		d1 += qx * kt[c1[x]]
		d2 += qx * kt[c2[x]]
		d3 += qx * kt[c3[x]]
	}
	return scale * d0, scale * d1, scale * d2, scale * d3
}

// patchAt returns the patch of key j among pr (ordered by token), nil if
// none.
func patchAt(pr []TokenPatch, j int) *TokenPatch {
	for i := range pr {
		if pr[i].Pos == j {
			return &pr[i]
		}
		if pr[i].Pos > j {
			break
		}
	}
	return nil
}

// ReferenceWeights returns the exact softmax weights of every query row over
// the keys of kv, computed as ReferenceQuantized computes them (float64
// scores of the dequantized codes, exp(s − max) / Σ exp(s − max)): one
// slice of kv.Tokens() weights per row, rows ordered as O's
// ([queries][QHeads]); masked keys weigh 0. It honours ctx between rows.
func ReferenceWeights(ctx context.Context, cfg Config, q, qScale []float32, kv *KV) ([][]float64, error) {
	return ReferenceWeightsPatched(ctx, cfg, q, qScale, kv, nil)
}

// ReferenceWeightsPatched is [ReferenceWeights] on kv read through patch,
// as [ReferenceQuantizedPatched] reads it: the same bits as
// ReferenceWeights on a copy of kv with the patches written in.
func ReferenceWeightsPatched(ctx context.Context, cfg Config, q, qScale []float32, kv *KV, patch []TokenPatch) ([][]float64, error) {
	k, err := newKernel(cfg, []int{0}, q, qScale, kv)
	if err != nil {
		return nil, err
	}
	by, err := kv.patchesByHead(patch)
	if err != nil {
		return nil, err
	}
	qv := k.dequantizedQuery(q)
	val := valueTable(k.DType)
	d, n := k.HeadDim, k.n
	out := make([][]float64, k.mq*k.QHeads)
	for i := 0; i < k.mq; i++ {
		pos := k.position(i)
		lo, hi := k.keyRange(pos)
		for hq := 0; hq < k.QHeads; hq++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			h := hq / k.group
			ks := float64(scaleOf(kv.kScale, h))
			qr := qv[(i*k.QHeads+hq)*d:][:d]
			var pt []TokenPatch // this head's patched tokens, in order
			if by != nil {
				pt = by[h]
			}
			next := 0
			for next < len(pt) && pt[next].Pos < lo {
				next++
			}
			w := make([]float64, n)
			m := math.Inf(-1)
			for j := lo; j < hi; j++ {
				key := kv.k[(h*n+j)*d:][:d]
				if next < len(pt) && pt[next].Pos == j {
					key = pt[next].K
					next++
				}
				if k.Mask != nil && !k.Mask[i*n+j] {
					w[j] = math.Inf(-1)
					continue
				}
				var dot float64
				if kv.bs != nil {
					for x, qx := range qr {
						dot += qx * kv.bs.kValue(kv, j, h, x)
					}
				} else {
					for x, c := range key {
						dot += qr[x] * (val[c] * ks)
					}
				}
				w[j] = k.SoftmaxScale * dot
				m = max(m, w[j])
			}
			if math.IsInf(m, -1) { // no key visible
				clear(w)
				out[i*k.QHeads+hq] = w
				continue
			}
			var l float64
			for j := lo; j < hi; j++ {
				w[j] = pmath.Exp(w[j] - m)
				l += w[j]
			}
			for j := lo; j < hi; j++ {
				w[j] /= l
			}
			out[i*k.QHeads+hq] = w
		}
	}
	return out, nil
}

// keyRange returns the keys [lo, hi) the causal mask and the window leave
// to the query at position pos (an empty range at lo = hi when none).
func (p *Plan) keyRange(pos int) (lo, hi int) {
	hi = p.n
	if p.Causal {
		hi = pos + 1
	}
	if p.Window > 0 {
		lo = max(0, pos-p.Window+1)
	}
	return min(lo, hi), hi
}

// dequantizedQuery returns the values of the query codes times q_descale.
func (k *kernel) dequantizedQuery(q []float32) []float64 {
	if k.kv.bs != nil {
		return k.dequantizedQueryBlock(q)
	}
	val := valueTable(k.DType)
	out := make([]float64, len(q))
	for i := range q {
		h := (i / k.HeadDim % k.QHeads) / k.group
		s := scaleOf(k.qScale, h)
		out[i] = val[quantize(q[i], s, k.DType, k.Saturation)] * float64(s)
	}
	return out
}

// Errors compares an output with a reference, and splits the error into
// a uniform shrinkage and what is left: o − ref = (α − 1)·ref + (o − α·ref)
// with the second part orthogonal to ref, so RelL2² = (1 − α)² + Residual².
// A kernel that truncates a growing accumulator toward zero shows α < 1
// with a small residual; rounding noise shows α ≈ 1 with the residual.
type Errors struct {
	RelL2  float64 // ‖o − ref‖₂ / ‖ref‖₂ (NaN when ref is all zero)
	MaxAbs float64 // max |o − ref|
	Cosine float64 // ⟨o, ref⟩ / (‖o‖₂ ‖ref‖₂)
	// Alpha is the best-fit scale ⟨o, ref⟩ / ⟨ref, ref⟩ (the shrinkage:
	// 1 is none), Residual ‖o − α·ref‖₂ / ‖ref‖₂ (the error no uniform
	// scale explains).
	Alpha, Residual float64
}

// Compare returns the errors of o against ref, in float64 (two passes:
// the sums, then the residual after α). NaN elements make every figure
// NaN. o and ref must have the same length: Compare panics otherwise (a
// programming error, not a property of the data).
func Compare(o, ref []float64) Errors {
	if len(o) != len(ref) {
		panic(fmt.Sprintf("attention: Compare of %d and %d elements", len(o), len(ref)))
	}
	var diff2, ref2, o2, dot, maxAbs float64
	for i, x := range o {
		r := ref[i]
		d := x - r
		diff2 += d * d
		ref2 += r * r
		o2 += x * x
		dot += x * r
		if a := math.Abs(d); a > maxAbs || a != a {
			maxAbs = a
		}
	}
	alpha := dot / ref2
	var res2 float64
	for i, x := range o {
		d := x - alpha*ref[i]
		res2 += d * d
	}
	return Errors{RelL2: math.Sqrt(diff2) / math.Sqrt(ref2), MaxAbs: maxAbs, Cosine: dot / (math.Sqrt(o2) * math.Sqrt(ref2)),
		Alpha: alpha, Residual: math.Sqrt(res2) / math.Sqrt(ref2)}
}

// String formats the errors in one line.
func (e Errors) String() string {
	return fmt.Sprintf("rel L2 %.4g (α %.6g, residual %.4g), max abs %.4g, cosine %.9f", e.RelL2, e.Alpha, e.Residual, e.MaxAbs, e.Cosine)
}
