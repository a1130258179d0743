package attention

import (
	"context"
	"fmt"
	"math"
)

// ReferenceQuantizedTrials is [ReferenceQuantizedPatched] for several
// queries over one cache, each read through its own patches: out[t] is,
// bit for bit, ReferenceQuantizedPatched(ctx, cfg, qs[t], nil, kv,
// patches[t]) (patches nil: no trial patches; else one entry per query,
// nil for none). It is how the needle experiments compute the exact
// outputs O* of the trials that share a haystack.
//
// The trials share every read of the cache: each block of sixteen keys of
// K, and each chunk of refViewChunk keys of a block of sixteen channels of
// V, is decoded once (code value × descale, rounded once, as
// referenceCodes's tables hold it) and then used by every trial and
// query head of the KV head's group, as the reference of a GQA group uses
// it for its query heads. Every score is still one dot product over
// head_dim in order, every output element one sum over the keys in order,
// each product and sum rounded on its own: the same operations as the
// reference of one query. A patched key's score and terms are computed
// from the trial's patch in their place in the order. The keys' scores
// run on up to GOMAXPROCS goroutines by blocks of keys, and the sums by
// blocks of channels and groups of trials (each sum computed by one
// goroutine, in order: the same bits however many run).
//
// A block-scaled cache, whose V scales span blocks of tokens, cannot be
// read through patches: each trial then goes through
// ReferenceQuantizedPatched on its own (which refuses patches); so does
// every trial where the vector kernels do not run (WebAssembly, purego,
// other architectures: there the shared decode saves less than its pure-Go
// sums cost, BENCHMARKS.md), the same bits either way. The shared path
// holds a float64 score per visible key for every trial and query head
// (len(qs)·QHeads·n·8 bytes: 16 trials of 1M tokens, 128 MiB). It honours
// ctx between blocks. Errors are those of ReferenceQuantizedPatched (a
// query of the wrong length, a patch outside the cache), queries of
// different numbers of rows, and a patches slice whose length is not
// len(qs).
func ReferenceQuantizedTrials(ctx context.Context, cfg Config, qs [][]float32, kv *KV, patches [][]TokenPatch) ([][]float64, error) {
	if patches != nil && len(patches) != len(qs) {
		return nil, fmt.Errorf("attention: %d trials' patches for %d queries", len(patches), len(qs))
	}
	if len(qs) == 0 {
		return nil, nil
	}
	patchOf := func(t int) []TokenPatch {
		if patches == nil {
			return nil
		}
		return patches[t]
	}
	// Every query makes a kernel of the same rows (the same contract on
	// every path).
	ks := make([]*kernel, len(qs))
	for t, q := range qs {
		kt, err := newKernel(cfg, []int{0}, q, nil, kv)
		if err != nil {
			return nil, err
		}
		if t > 0 && kt.mq != ks[0].mq {
			return nil, fmt.Errorf("attention: trial %d has %d query rows, trial 0 %d", t, kt.mq, ks[0].mq)
		}
		ks[t] = kt
	}
	if kv.bs != nil || !sharedTrials {
		// Each trial alone, the trials side by side.
		outs := make([][]float64, len(qs))
		err := parallelRangeErr(ctx, len(qs), 1, len(qs)*ks[0].n*ks[0].HeadDim, 0, func(t0, t1 int) error {
			for t := t0; t < t1; t++ {
				o, err := ReferenceQuantizedPatched(ctx, cfg, qs[t], nil, kv, patchOf(t))
				if err != nil {
					return err
				}
				outs[t] = o
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		return outs, nil
	}
	qvs := make([][]float64, len(qs))
	bys := make([][][]TokenPatch, len(qs))
	for t, q := range qs {
		var err error
		if bys[t], err = kv.patchesByHead(patchOf(t)); err != nil {
			return nil, err
		}
		qvs[t] = ks[t].dequantizedQuery(q)
	}
	return ks[0].referenceTrials(ctx, qvs, bys)
}

// sharedTrials is whether ReferenceQuantizedTrials shares the cache's reads
// among its trials (referenceTrials, which needs the vector kernels) or
// runs each trial alone: where the vector kernels run. Tests clear it to
// run the other path there too.
var sharedTrials = haveRefAsm

// refSource is where referenceTrials decodes the cache's values from: the
// cache's view, once it is built (the trials count as as many reads of it:
// KV.refViewReads), else the cache's own layout through a table of code
// value × descale. Both give every value × descale rounded once: the same
// float64s.
type refSource struct {
	kv     *KV
	vw     *refView // nil: the codes
	kt, vt []float64
	kd, vd refDecoder
}

// decodeK writes block b of KV head h's keys (sixteen tokens) into dst in
// the K view's order, [dim][16], float64; tokens past the cache are +0.
func (r *refSource) decodeK(dst []float64, h, b int) {
	const L = refLanes
	kv := r.kv
	d := kv.dim
	if r.vw != nil {
		refDecode(dst[:L*d], r.vw.k[(h*kv.stride/L+b)*d*L:][:L*d], &r.kd)
		return
	}
	for l := 0; l < L; l++ {
		t := b*L + l
		if t >= kv.tokens {
			for x := 0; x < d; x++ {
				dst[x*L+l] = 0
			}
			continue
		}
		for x, c := range kv.k[(h*kv.tokens+t)*d:][:d] {
			dst[x*L+l] = r.kt[c]
		}
	}
}

// decodeV writes channels cb·16 … cb·16+15 of KV head h's values of keys
// j0 … j1−1 into dst in the V view's order, [key][16], float64; channels
// past vdim are +0.
func (r *refSource) decodeV(dst []float64, h, cb, j0, j1 int) {
	const L = refLanes
	kv := r.kv
	st, dv := kv.stride, kv.vdim
	if r.vw != nil {
		refDecode(dst[:(j1-j0)*L], r.vw.v[((h*r.vw.vblocks+cb)*st+j0)*L:][:(j1-j0)*L], &r.vd)
		return
	}
	for c := 0; c < L; c++ {
		x := cb*L + c
		if x >= dv {
			for j := j0; j < j1; j++ {
				dst[(j-j0)*L+c] = 0
			}
			continue
		}
		row := kv.vt[(h*dv+x)*st:][j0:j1]
		for j, code := range row {
			dst[j*L+c] = r.vt[code]
		}
	}
}

// referenceTrials is ReferenceQuantizedTrials on the dequantized queries
// qvs (one per trial) and each trial's patches by KV head (bys[t]: nil or
// KV.patchesByHead's). It runs the vector kernels: call it only where they
// run (haveRefAsm).
func (k *kernel) referenceTrials(ctx context.Context, qvs [][]float64, bys [][][]TokenPatch) ([][]float64, error) {
	const L = refLanes
	kv, p := k.kv, k.Plan
	d, dv, n, g := p.HeadDim, p.VDim, p.n, p.group
	T := len(qvs)
	E := T * g // a KV head's items: item e is query head h·g + e%g of trial e/g
	blocks := (n + L - 1) / L
	sl := blocks * L // an item's scores
	vblocks := (dv + L - 1) / L
	val := valueTable(kv.format)
	src := &refSource{kv: kv}
	dec, ok := refDecodes[kv.format]
	if ok {
		src.vw = kv.refViewReads(T)
		src.kd.mode, src.vd.mode = dec.mode, dec.mode
	}
	if src.vw == nil {
		src.kt, src.vt = make([]float64, len(val)), make([]float64, len(val))
	}
	outs := make([][]float64, T)
	for t := range outs {
		outs[t] = make([]float64, p.mq*p.QHeads*dv)
	}
	s := make([]float64, E*sl) // the items' scores, then weights
	l := make([]float64, E)
	live := make([]bool, E)
	neg := make([]bool, E) // the item has a weight of −∞ (a masked key): it is summed alone
	prs := make([][]TokenPatch, E)
	elems := E * n * d // the work of a pass, for parallelRange's threshold
	for h := 0; h < p.KVHeads; h++ {
		ks, vs := float64(scaleOf(kv.kScale, h)), float64(scaleOf(kv.vScale, h))
		if src.vw != nil {
			// The unit times the descale is exact (a power of two times a
			// float32), so value × descale is still one rounding.
			src.kd.scale, src.vd.scale = dec.unit*ks, dec.unit*vs
		} else {
			for c, v := range val {
				src.kt[c], src.vt[c] = v*ks, v*vs
			}
		}
		for i := 0; i < p.mq; i++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			pos := p.position(i)
			lo, hi := p.keyRange(pos)
			if hi <= lo {
				continue
			}
			qrow := func(e int) []float64 {
				return qvs[e/g][(i*p.QHeads+h*g+e%g)*d:][:d]
			}
			for e := range prs {
				prs[e] = nil
				if by := bys[e/g]; by != nil {
					prs[e] = patchesIn(by[h], lo, hi)
				}
			}
			b0, b1 := lo/L, (hi+L-1)/L
			// The scores of every visible block of keys, each block
			// decoded once for every item.
			err := parallelRange(ctx, b1-b0, 64, elems, 0, func(u0, u1 int) {
				kbuf := make([]float64, L*d)
				for b := b0 + u0; b < b0+u1; b++ {
					src.decodeK(kbuf, h, b)
					e := 0
					for ; e+1 < E; e += 2 { // two items a call: more sums in flight
						refDots2(s[e*sl+b*L:][:L], s[(e+1)*sl+b*L:][:L], qrow(e), qrow(e+1), kbuf)
					}
					if e < E {
						refDotsDecoded(s[e*sl+b*L:][:L], qrow(e), kbuf)
					}
				}
			})
			if err != nil {
				return nil, err
			}
			// Each item's scale, patched keys, mask, max and weights.
			err = parallelRange(ctx, E, 1, elems, 0, func(e0, e1 int) {
				var eb expBuf
				for e := e0; e < e1; e++ {
					l[e], live[e], neg[e] = k.refWeights(s[e*sl:][:sl], qrow(e), prs[e], val, ks, i, h*g+e%g, lo, hi, &eb)
				}
			})
			if err != nil {
				return nil, err
			}
			// The sums: a unit is one block of channels for up to
			// refTrialsGroup items, each chunk of keys decoded once for
			// them.
			groups := (E + refTrialsGroup - 1) / refTrialsGroup
			err = parallelRange(ctx, vblocks*groups, 1, elems, 0, func(u0, u1 int) {
				vbuf := make([]float64, refViewChunk*L)
				accs := make([][L]float64, refTrialsGroup)
				for u := u0; u < u1; u++ {
					cb, e0 := u/groups, u%groups*refTrialsGroup
					e1 := min(e0+refTrialsGroup, E)
					nc := min(L, dv-cb*L)
					for e := range accs {
						accs[e] = [L]float64{}
					}
					np := make([]int, e1-e0) // each item's first patch at or after the chunk
					for c0 := lo; c0 < hi; c0 += refViewChunk {
						c1 := min(c0+refViewChunk, hi)
						src.decodeV(vbuf, h, cb, c0, c1)
						// patched adds item e's term of key tp.Pos, read
						// from its patch, and moves past it.
						patched := func(e int, acc *[L]float64, tp TokenPatch) {
							if w := s[e*sl+tp.Pos]; !math.IsInf(w, -1) {
								for c, code := range tp.V[cb*L:][:nc] {
									acc[c] += w * (val[code] * vs)
								}
							}
						}
						for e := e0; e < e1; e++ {
							if !live[e] {
								continue
							}
							if f := e + 1; f < e1 && live[f] && !neg[e] && !neg[f] {
								// Two items side by side: runs of keys
								// between either's patches summed for both
								// at once, a key patched for one added
								// from its patch for it and from the cache
								// for the other, in its place.
								se, sf := s[e*sl:][:sl], s[f*sl:][:sl]
								ae, af := &accs[e-e0], &accs[f-e0]
								pe, pf := prs[e], prs[f]
								ie, jf := np[e-e0], np[f-e0]
								j := c0
								for {
									p := c1 // the next key patched for either
									if ie < len(pe) && pe[ie].Pos < p {
										p = pe[ie].Pos
									}
									if jf < len(pf) && pf[jf].Pos < p {
										p = pf[jf].Pos
									}
									refSums2(ae, af, se[j:p], sf[j:p], vbuf[(j-c0)*L:])
									if p == c1 {
										break
									}
									if ie < len(pe) && pe[ie].Pos == p {
										patched(e, ae, pe[ie])
										ie++
									} else {
										refSumsDecoded(ae, se[p:p+1], vbuf[(p-c0)*L:])
									}
									if jf < len(pf) && pf[jf].Pos == p {
										patched(f, af, pf[jf])
										jf++
									} else {
										refSumsDecoded(af, sf[p:p+1], vbuf[(p-c0)*L:])
									}
									j = p + 1
								}
								np[e-e0], np[f-e0] = ie, jf
								e++
								continue
							}
							se, acc, pr := s[e*sl:][:sl], &accs[e-e0], prs[e]
							pc := np[e-e0]
							j := c0
							for ; pc < len(pr) && pr[pc].Pos < c1; pc++ {
								tp := pr[pc]
								refSumsDecoded(acc, se[j:tp.Pos], vbuf[(j-c0)*L:])
								patched(e, acc, tp)
								j = tp.Pos + 1
							}
							refSumsDecoded(acc, se[j:c1], vbuf[(j-c0)*L:])
							np[e-e0] = pc
						}
					}
					for e := e0; e < e1; e++ {
						if !live[e] {
							continue
						}
						o := outs[e/g][(i*p.QHeads+h*g+e%g)*dv+cb*L:][:nc]
						for c := range o {
							o[c] = accs[e-e0][c] / l[e]
						}
					}
				}
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return outs, nil
}

// refTrialsGroup is the items (trials × query heads) whose sums one unit of
// referenceTrials computes from one decode of V: more share a decode, fewer
// leave more units for the cores.
const refTrialsGroup = 4
