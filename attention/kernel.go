package attention

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
)

// Run simulates FA3's forward pass for the queries q over the cache kv and
// returns O, laid out [queries][QHeads][VDim] (like q when VDim is
// HeadDim). q holds float32
// queries; the kernel casts them to cfg.DType after dividing by their
// descale (qScale: one value, or one per KV head as FA3's q_descale; nil
// means 1.0). Queries are the last len(q)/(QHeads·HeadDim) tokens of the
// sequence.
//
// The outputs are the kernel's FP32 values, held exactly in float64 (with
// cfg.Float64, the float64 results). A NaN in the inputs propagates as the
// kernel would propagate it; a row whose every key is masked gives 0, as
// FA3's finalize does for a zero row sum.
//
// Run honours ctx between rows and every 256 tiles.
func Run(ctx context.Context, cfg Config, q, qScale []float32, kv *KV) ([]float64, error) {
	out, err := RunPromotions(ctx, cfg, []int{cfg.Promotion}, q, qScale, kv)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// RunPromotions is Run with several P·V accumulators fed by the same
// scores and P, one per promotion interval (0 never, 1 every tile, N every
// N tiles): the outputs are exactly those of separate Runs with
// cfg.Promotion set to each interval and the same tiles. The default
// tiles follow cfg.Promotion (single-level or two-level table).
func RunPromotions(ctx context.Context, cfg Config, promotions []int, q, qScale []float32, kv *KV) ([][]float64, error) {
	k, err := newKernel(cfg, promotions, q, qScale, kv)
	if err != nil {
		return nil, err
	}
	outs, err := runKernels(ctx, []*kernel{k}, q)
	if err != nil {
		return nil, err
	}
	return outs[0], nil
}

// RunShared runs several configurations over one cache and query:
// out[i] is RunPromotions(ctx, cfgs[i], promotions[i], q, qScale, kv), bit
// for bit. Configurations whose Q·Kᵀ is the same (the QK model, Q's dtype
// and saturation, the heads and the softmax scale; FP32 mode, a cache
// that is not block-scaled) share it: each key's score, which does not
// depend on the tile it falls in (a chain over head_dim from +0, times
// scale_log2), is computed once per query row and read by each of them
// (the needle's FP8 single-level and two-level kernels differ in their
// tiles and P·V only). The first error is returned.
//
// patch, when not empty, replaces tokens of the cache for this call only,
// as ReferenceQuantizedPatched reads them: the outputs are those of the
// same calls on a copy of kv with each patch's codes written in
// (SetTokenCodes), the cache itself only read, so that calls with
// different patches may read it at once. A block-scaled cache or Float64
// mode with a patch is an error.
func RunShared(ctx context.Context, cfgs []Config, promotions [][]int, q, qScale []float32, kv *KV, patch []TokenPatch) ([][][]float64, error) {
	if len(promotions) != len(cfgs) {
		return nil, fmt.Errorf("attention: RunShared with %d configurations and %d promotion lists", len(cfgs), len(promotions))
	}
	var byHead [][]TokenPatch
	if kv != nil {
		var err error
		if byHead, err = kv.patchesByHead(patch); err != nil {
			return nil, err
		}
	}
	ks := make([]*kernel, len(cfgs))
	for i, c := range cfgs {
		k, err := newKernel(c, promotions[i], q, qScale, kv)
		if err == nil && byHead != nil && k.Float64 {
			err = errors.New("attention: token patches in Float64 mode")
		}
		if err != nil {
			if len(cfgs) > 1 {
				err = fmt.Errorf("configuration %d: %w", i, err)
			}
			return nil, err
		}
		k.patch = byHead
		ks[i] = k
	}
	out := make([][][]float64, len(ks))
	done := make([]bool, len(ks))
	for i := range ks {
		if done[i] {
			continue
		}
		group, at := []*kernel{ks[i]}, []int{i}
		for j := i + 1; j < len(ks); j++ {
			if !done[j] && sameScores(ks[i], ks[j]) {
				group, at = append(group, ks[j]), append(at, j)
				done[j] = true
			}
		}
		o, err := runKernels(ctx, group, q)
		if err != nil {
			return nil, err
		}
		for g, j := range at {
			out[j] = o[g]
		}
	}
	return out, nil
}

// sameScores reports whether kernels a and b compute the same S for every
// key of a query row (so that one may read the other's: RunShared).
func sameScores(a, b *kernel) bool {
	return !a.Float64 && !b.Float64 && a.kv == b.kv && a.kv.bs == nil &&
		qkName(a.Plan) == qkName(b.Plan) && a.DType == b.DType && a.Saturation == b.Saturation &&
		a.HeadDim == b.HeadDim && a.QHeads == b.QHeads && a.group == b.group && a.mq == b.mq &&
		slices.Equal(a.scaleLog2, b.scaleLog2) && slices.Equal(a.qScale, b.qScale)
}

// qkName is the name the QK model of p was looked up by (lookupModel: the
// dtype's default when unset); with the dtype it names the model.
func qkName(p *Plan) string {
	if p.QKModel == "" {
		return DefaultModel(p.DType)
	}
	return p.QKModel
}

// runKernels runs kernels over their common cache and query q, the
// outputs per kernel as RunPromotions returns them. More than one kernel:
// they share their scores (sameScores holds), each row's S computed over
// the keys any of them visits and read by all.
func runKernels(ctx context.Context, ks []*kernel, q []float32) ([][][]float64, error) {
	k0 := ks[0]
	outs := make([][][]float64, len(ks))
	for j, k := range ks {
		outs[j] = make([][]float64, len(k.promotions))
		for a := range outs[j] {
			outs[j][a] = make([]float64, k.mq*k.QHeads*k.VDim)
		}
	}
	// The query heads run side by side, each on its own copy of the
	// kernels' scratch (the V block, a row): every row is computed as on
	// one goroutine and stored in its own place, so the outputs are the
	// same bits whatever the number of goroutines (TestRunHeadsParallel).
	heads := func(lo, hi int) error {
		kws := make([]kernel, len(ks))
		rows := make([]*row, len(ks))
		for j, k := range ks {
			kws[j] = *k
			kws[j].vb = vBlock{}
			rows[j] = kws[j].newRow()
		}
		var sAll []float32 // a row's scores, by token (shared kernels)
		if len(ks) > 1 {
			sAll = make([]float32, k0.kv.tokens)
		}
		for hq := lo; hq < hi; hq++ {
			for i := 0; i < k0.mq; i++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				for j := range kws {
					kws[j].setRow(rows[j], i, hq, q)
				}
				if sAll != nil {
					shareScores(kws, rows, sAll)
				}
				for j := range kws {
					if err := kws[j].attendRow(ctx, rows[j]); err != nil {
						return err
					}
				}
				for j := range kws {
					kw, r := &kws[j], rows[j]
					base := (i*kw.QHeads + hq) * kw.VDim
					for a := range r.acc {
						kw.store(r, a, outs[j][a][base:base+kw.VDim])
					}
				}
			}
		}
		return nil
	}
	// Work: every row reads its visible keys; one goroutine below
	// parallelMinElems of it.
	work := len(ks) * k0.mq * k0.QHeads * k0.n * k0.HeadDim
	if err := parallelRangeErr(ctx, k0.QHeads, 1, work, 0, heads); err != nil {
		return nil, err
	}
	return outs, nil
}

// shareScores computes, into sAll, S of the keys that any of the rows
// (one per kernel, set for the same query row) visits, as gemmQK would
// tile by tile, and points each row at it.
func shareScores(ks []kernel, rows []*row, sAll []float32) {
	k0, r0 := &ks[0], rows[0]
	kv := k0.kv
	lo, hi := kv.tokens, 0
	for j := range ks {
		bn, r := ks[j].KBlockN, rows[j]
		if r.nMax > r.nMin {
			lo, hi = min(lo, r.nMin*bn), max(hi, min(r.nMax*bn, kv.tokens))
		}
	}
	if hi > lo {
		accum.DotRows(k0.qk, r0.q, kv.k[(r0.kvh*kv.tokens+lo)*kv.dim:], kv.dim, nil, sAll[lo:hi])
		k0.patchScores(r0, lo, sAll[lo:hi])
		sl := k0.scaleLog2[r0.kvh]
		for j := lo; j < hi; j++ {
			sAll[j] *= sl
		}
	}
	for _, r := range rows {
		r.sAll = sAll
	}
}

// kernel is one validated run: the plan, the cache, and the constants of
// the softmax.
type kernel struct {
	*Plan
	kv         *KV
	promotions []int
	val        []float64      // value of every code of the dtype (Float64 mode)
	vb         vBlock         // V of the tiles P·V reads next, copied tile-major
	vview      *vTiles        // the cache's tile-major V for KBlockN (nil: none, vb instead)
	vasked     bool           // vview was asked for
	vpatched   []uint16       // a tile of vview with the patched tokens written in
	patch      [][]TokenPatch // per KV head, by token: tokens read from patches (RunShared), nil: none
	// Block-scaled caches (kv.bs != nil): the quantizer of Q and P (the
	// cache's format, tensor scale 1).
	bq *tokenQuant
}

func newKernel(cfg Config, promotions []int, q, qScale []float32, kv *KV) (*kernel, error) {
	if kv == nil {
		return nil, fmt.Errorf("attention: no KV cache")
	}
	c := cfg.fromCache(kv) // unset shapes and dtype are the cache's
	row := c.QHeads * c.HeadDim
	if row <= 0 || len(q) == 0 || len(q)%row != 0 {
		return nil, fmt.Errorf("attention: %d query values is not a positive multiple of %d query heads × head_dim %d", len(q), c.QHeads, c.HeadDim)
	}
	p, err := cfg.Plan(len(q)/row, qScale, kv)
	if err != nil {
		return nil, err
	}
	if len(promotions) == 0 {
		return nil, fmt.Errorf("attention: no promotion interval")
	}
	for _, n := range promotions {
		if n < 0 {
			return nil, fmt.Errorf("attention: promotion interval %d is negative (0 never, 1 every tile, N every N tiles)", n)
		}
	}
	k := &kernel{Plan: p, kv: kv, promotions: slices.Clone(promotions)}
	if kv.bs != nil {
		k.bq = newBlockQuant(kv.bs.f)
	}
	if p.Float64 {
		k.val = valueTable(p.DType)
	}
	return k, nil
}

// row is the state of one query row (one query of one query head) through
// the mainloop: FA3's per-row registers.
type row struct {
	q          []uint16 // the query's codes
	kvh, hq    int      // its KV head and query head
	i, pos     int      // its query index and position in the sequence
	nMin, nMax int      // the KV tiles it visits: nMax−1 down to nMin
	m          float32  // running row max of S (log2 units); −inf before any key
	mUse       float32  // the max the exponent subtracts (0 while m is −inf)
	alpha      float32  // exp2(m_old − m_new): the rescale of O and l
	l          float32  // running row sum of the unrounded P
	s, p       []float32
	pc         []uint16    // P cast to the dtype
	cs, outs   [][]float32 // P·V scratch: the accumulators' chain inputs and outputs
	acc        []pvAcc
	// Float64 mode.
	m64, mUse64, alpha64, l64 float64
	s64, p64                  []float64
	b                         *blockRow // block-scaled caches
	lse                       []float32 // split-KV: each split's lse (base 2)
	lse64                     []float64
	sAll                      []float32 // the row's S by token, shared by kernels (RunShared); nil: computed per tile
}

// pvAcc is one P·V accumulation scheme of a row.
type pvAcc struct {
	promote  int         // 0 never, N every N tiles
	o        []float32   // O: the FP32 register (promote 0: the tensor-core chain's accumulator)
	tc       []float32   // every N tiles: the tensor-core accumulator
	accScale float32     // every N tiles: the product of the alphas since the last promotion
	tiles    int         // tiles accumulated since the row started
	c, tmp   []float32   // scratch: the chains' inputs, a tile's products (every tile)
	o64      []float64   // Float64 mode
	split    [][]float32 // split-KV: each split's O_s
	split64  [][]float64
}

// tile is one KV tile: tokens [start, start+kBlockN).
type tile struct{ n, start int }

func (k *kernel) newRow() *row {
	bn, d := k.KBlockN, k.VDim
	r := &row{q: make([]uint16, k.HeadDim), s: make([]float32, bn), p: make([]float32, bn), pc: make([]uint16, bn)}
	for _, n := range k.promotions {
		r.acc = append(r.acc, pvAcc{promote: n, o: make([]float32, d), tc: make([]float32, d), o64: make([]float64, d),
			c: make([]float32, d), tmp: make([]float32, d)})
	}
	if k.Float64 {
		r.s64, r.p64 = make([]float64, bn), make([]float64, bn)
	}
	if k.kv.bs != nil {
		r.b = k.newBlockRow()
	}
	if k.Splits > 1 {
		r.lse, r.lse64 = make([]float32, k.Splits), make([]float64, k.Splits)
		for a := range r.acc {
			acc := &r.acc[a]
			for range k.Splits {
				acc.split = append(acc.split, make([]float32, d))
				acc.split64 = append(acc.split64, make([]float64, d))
			}
		}
	}
	return r
}

// setRow loads query i of query head hq: its codes (q / q_descale cast to
// the dtype), its position and its tile range. The rows of an m-block are
// KBlockM consecutive queries of one query head; the block visits tiles
// from the last one holding a key visible to its last query (causal) down
// to the first one holding a key visible to its first query (window), as
// FA3's get_n_block_min_max does.
func (k *kernel) setRow(r *row, i, hq int, q []float32) {
	r.kvh, r.hq = hq/k.group, hq
	qs := scaleOf(k.qScale, r.kvh)
	base := (i*k.QHeads + hq) * k.HeadDim
	if k.kv.bs != nil {
		k.setQueryBlock(r, q[base:base+k.HeadDim], qs, k.Float64)
	} else {
		for d := range r.q {
			r.q[d] = quantize(q[base+d], qs, k.DType, k.Saturation)
		}
	}
	r.i, r.pos = i, k.position(i)
	r.nMin, r.nMax = k.TileRange(i)
}

// attendRow is FA3's SM90 forward mainloop for one row, the steps in the
// kernel's order (fp8-attention.md §2.2–§3.5; attn_probe.py):
//
//	for each KV tile, newest first:
//	    S     = Q·Kᵀ              QK model, a chain of head_dim/K steps from +0, × scale_log2 in FP32
//	    S     = mask(S)           beyond seqlen_k, causal, sliding window: −inf
//	    m_new = max(m, rowmax S); alpha = exp2(m − m_new)
//	    P     = exp2(S − m_new + 8); l = l·alpha + ΣP   (row sum of the unrounded P)
//	    P     = cast(P)           e4m3/e5m2 RNE satfinite, bf16/fp16 RNE
//	    O     = rescale and P·V   PV model; promotion never / every tile / every N tiles
//	O *= v_descale / l
//
// FA3 pipelines the P·V of tile n+1 with the softmax of tile n and rescales
// O after it; O then enters the next tile's chain already rescaled, which is
// the order written here.
func (k *kernel) attendRow(ctx context.Context, r *row) error {
	if k.Splits <= 1 {
		k.initRow(r)
		if err := k.mainloop(ctx, r, r.nMin, r.nMax); err != nil {
			return err
		}
		k.finalize(r)
		return nil
	}
	// Split-KV: each split runs the mainloop on its own tiles and writes
	// O_s and lse_s; the combine merges them in split order.
	for s := 0; s < k.Splits; s++ {
		lo, hi := k.SplitRange(r.nMin, r.nMax, s)
		k.initRow(r)
		if err := k.mainloop(ctx, r, lo, hi); err != nil {
			return err
		}
		k.finalize(r)
		if k.Float64 {
			r.lse64[s] = lse64(r.m64, r.l64)
		} else {
			r.lse[s] = LSE(r.m, r.l)
		}
		for a := range r.acc {
			acc := &r.acc[a]
			if k.Float64 {
				copy(acc.split64[s], acc.o64)
			} else {
				copy(acc.split[s], acc.o)
			}
		}
	}
	for a := range r.acc {
		acc := &r.acc[a]
		if k.Float64 {
			combine64(acc.o64, acc.split64, r.lse64)
		} else {
			CombineSplits(acc.o, acc.split, r.lse)
		}
	}
	return nil
}

// mainloop runs the tiles hi−1 down to lo of the row (one split, or the
// whole visited range), the steps in the kernel's order.
func (k *kernel) mainloop(ctx context.Context, r *row, lo, hi int) error {
	for n := hi - 1; n >= lo; n-- {
		if (hi-n)%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		t := tile{n: n, start: n * k.KBlockN}
		k.gemmQK(r, t)
		k.mask(r, t)
		k.onlineMax(r)
		k.exp2P(r)
		k.castP(r)
		k.gemmPV(r, t, lo)
	}
	return nil
}

// initRow sets m = −inf, l = 0, O = 0 (and acc_scale = 1).
func (k *kernel) initRow(r *row) {
	negInf := float32(math.Inf(-1))
	r.m, r.l, r.m64, r.l64 = negInf, 0, math.Inf(-1), 0
	for a := range r.acc {
		acc := &r.acc[a]
		clear(acc.o)
		clear(acc.tc)
		clear(acc.o64)
		acc.accScale, acc.tiles = 1, 0
	}
}

// gemmQK computes the tile's scores S = Q·Kᵀ: for each key, the QK model's
// chain over head_dim from +0, times scale_log2 (one FP32 multiply). Keys
// past the end of the cache are left to the mask.
func (k *kernel) gemmQK(r *row, t tile) {
	if k.kv.bs != nil {
		k.gemmQKBlock(r, t)
		return
	}
	kv := k.kv
	sl := k.scaleLog2[r.kvh]
	if !k.Float64 {
		cnt := min(len(r.s), kv.tokens-t.start)
		if r.sAll != nil { // computed once for the kernels that share it (RunShared)
			copy(r.s[:cnt], r.sAll[t.start:t.start+cnt])
			return
		}
		accum.DotRows(k.qk, r.q, kv.k[(r.kvh*kv.tokens+t.start)*kv.dim:], kv.dim, nil, r.s[:cnt])
		k.patchScores(r, t.start, r.s[:cnt])
		for j := range r.s[:cnt] {
			r.s[j] *= sl
		}
		return
	}
	for j := range r.s {
		tok := t.start + j
		if tok >= kv.tokens {
			break
		}
		key := kv.k[(r.kvh*kv.tokens+tok)*kv.dim:][:kv.dim]
		var dot float64
		for d, c := range r.q {
			dot += k.val[c] * k.val[key[d]]
		}
		r.s64[j] = dot * k.scale64[r.kvh]
	}
}

// patchScores puts into s (the dots of the keys from token start on, before
// scale_log2) those of the row's KV head's patched tokens, from their
// patch's codes: what DotRows gives for the key the patch writes.
func (k *kernel) patchScores(r *row, start int, s []float32) {
	if k.patch == nil {
		return
	}
	for _, p := range patchesIn(k.patch[r.kvh], start, start+len(s)) {
		s[p.Pos-start] = k.qk.Dot(r.q, p.K, 0)
	}
}

// mask sets S = −inf for keys past the end of the cache, after the query
// (causal) and before its window.
func (k *kernel) mask(r *row, t tile) {
	negInf := math.Inf(-1)
	for j := range r.s {
		tok := t.start + j
		if tok >= k.n || !k.visible(r.i, r.pos, tok) {
			r.s[j] = float32(negInf)
			if k.Float64 {
				r.s64[j] = negInf
			}
		}
	}
}

// onlineMax updates the running max: m_new = max(m, max_j S_j) and
// alpha = exp2(m − m_new). While every key so far is masked the exponent
// subtracts 0 instead of −inf (FA3's Check_inf), so P = 0 and alpha = 0.
func (k *kernel) onlineMax(r *row) {
	if k.Float64 {
		mNew := r.m64
		for _, s := range r.s64 {
			mNew = max(mNew, s)
		}
		r.mUse64 = mNew
		if math.IsInf(mNew, -1) {
			r.mUse64 = 0
		}
		r.alpha64 = math.Exp2(r.m64 - r.mUse64)
		r.m64 = mNew
		return
	}
	mNew := r.m
	for _, s := range r.s {
		mNew = max(mNew, s)
	}
	r.mUse = mNew
	if math.IsInf(float64(mNew), -1) {
		r.mUse = 0
	}
	r.alpha = exp2f(r.m - r.mUse)
	r.m = mNew
}

// exp2P computes P = exp2((S − m_new) + 8) in FP32, each operation rounded
// (P ∈ [0, 256]), and the row sum l = l·alpha + Σ_j P_j from the unrounded
// P, summed in FP32 in key order.
func (k *kernel) exp2P(r *row) {
	if k.Float64 {
		var sum float64
		for j, s := range r.s64 {
			r.p64[j] = math.Exp2(s - r.mUse64 + 8)
			sum += r.p64[j]
		}
		r.l64 = r.l64*r.alpha64 + sum
		return
	}
	var sum float32
	for j, s := range r.s {
		p := exp2f(float32(s-r.mUse) + 8)
		r.p[j] = p
		sum += p
	}
	r.l = float32(r.l*r.alpha) + sum
}

// castP casts P to the dtype: e4m3/e5m2 round to nearest even with
// satfinite (cvt.rn.satfinite), bf16/fp16 round to nearest even.
func (k *kernel) castP(r *row) {
	if k.Float64 {
		return
	}
	if k.kv.bs != nil {
		k.castPBlock(r)
		return
	}
	for j, p := range r.p {
		r.pc[j] = uint16(k.DType.Encode(p, fp8.SatFinite))
	}
}

// gemmPV accumulates the tile's P·V into each accumulator:
//
//	never:        O = chain(P, V, c = O·alpha)              O stays in the tensor core
//	every tile:   O = O·alpha + chain(P, V, c = 0)           one FP32 add (#104)
//	every N:      O_tc = chain(P, V, c = O_tc·alpha); acc_scale ·= alpha;
//	              after every N-th tile: O = O·acc_scale + O_tc; O_tc = 0; acc_scale = 1  (#122)
//
// Every chain covers the whole tile, kBlockN/K instructions. lo is the
// lowest tile of the range the mainloop visits (the V block copied for t
// reaches down to it, no further).
func (k *kernel) gemmPV(r *row, t tile, lo int) {
	kv, d := k.kv, k.VDim
	if kv.bs != nil && k.Float64 {
		k.gemmPVBlock64(r, t)
		return
	}
	var vt []uint16
	stride := k.KBlockN
	if kv.bs == nil {
		vt = k.vTile(r.kvh, t, lo)
	}
	if k.Float64 {
		for a := range r.acc {
			acc := &r.acc[a]
			for i := 0; i < d; i++ {
				v := vt[i*stride:][:k.KBlockN]
				var sum float64
				for j, p := range r.p64 {
					sum += p * k.val[v[j]]
				}
				acc.o64[i] = acc.o64[i]*r.alpha64 + sum
			}
		}
		return
	}
	// Row i of V (dim-major) starts at vt[off + i·stride]: one DotRowsMulti
	// runs the chains of all d outputs of every accumulator, which share P
	// and V; cs[a] holds accumulator a's chain inputs (nil: from +0).
	cs, outs := r.cs[:0], r.outs[:0]
	for a := range r.acc {
		acc := &r.acc[a]
		acc.tiles++
		switch acc.promote {
		case 0:
			for i := range acc.c {
				acc.c[i] = float32(acc.o[i] * r.alpha)
			}
			cs, outs = append(cs, acc.c), append(outs, acc.o)
		case 1:
			cs, outs = append(cs, nil), append(outs, acc.tmp)
		default:
			acc.accScale *= r.alpha
			for i := range acc.c {
				acc.c[i] = float32(acc.tc[i] * r.alpha)
			}
			cs, outs = append(cs, acc.c), append(outs, acc.tc)
		}
	}
	if kv.bs != nil {
		k.pvBlock(r, t, lo, cs, outs)
	} else {
		accum.DotRowsMulti(k.pv, r.pc, vt, stride, cs, outs)
	}
	for a := range r.acc {
		acc := &r.acc[a]
		switch {
		case acc.promote == 1:
			for i, x := range acc.tmp {
				acc.o[i] = float32(acc.o[i]*r.alpha) + x
			}
		case acc.promote > 1 && acc.tiles%acc.promote == 0:
			k.promote(acc)
		}
	}
}

// promote merges the tensor-core accumulator of the every-N scheme into
// the FP32 O: O = O·acc_scale + O_tc (two FP32 operations), then O_tc = 0
// and acc_scale = 1.
func (k *kernel) promote(acc *pvAcc) {
	for i := range acc.o {
		acc.o[i] = float32(acc.o[i]*acc.accScale) + acc.tc[i]
		acc.tc[i] = 0
	}
	acc.accScale = 1
}

// vBlockBytes bounds the block of V that vTile copies at a time: big
// enough that each of the d rows is read as one long run of consecutive
// codes (which the hardware prefetches), small enough to stay in a core's
// L2 while P·V reads it back.
const vBlockBytes = 512 << 10

// vBlock is V of the tiles lo..hi−1 of KV head h, tile-major: tile n's d
// rows of kBlockN codes at codes[(n−lo)·d·kBlockN:] (block-scaled caches:
// codes8, and their scale codes, kBlockN/Block a row, in scales), +0 past
// the padded cache (block-scaled: the scale of an all-zero block). hi ==
// lo: empty.
type vBlock struct {
	codes          []uint16
	codes8, scales []uint8
	h, lo, hi      int
}

// fill makes the block hold tile n of head h, if it does not: it spans the
// tiles max(lo, n−tiles+1) .. n, which the mainloop visits next (newest
// first). It reports whether the caller has to copy them.
func (b *vBlock) fill(h, n, lo, tiles int) bool {
	if b.h == h && b.lo <= n && n < b.hi {
		return false
	}
	b.h, b.lo, b.hi = h, max(lo, n-tiles+1), n+1
	return true
}

// copyTiles copies the tiles lo..hi−1 of the matrix src (rows rows, row i at
// src[i·stride:], w elements a tile) tile-major into dst, pad past the end
// of each row: each row is read once, front to back, in one run.
func copyTiles[T uint8 | uint16](dst, src []T, rows, stride, w, lo, hi int, pad T) {
	for i := 0; i < rows; i++ {
		var run []T
		if first := lo * w; first < stride {
			run = src[i*stride:][first:min(stride, hi*w)]
		}
		for n := range hi - lo {
			out := dst[(n*rows+i)*w:][:w]
			c := 0
			if n*w < len(run) {
				c = copy(out, run[n*w:])
			}
			for x := range out[c:] {
				out[c+x] = pad
			}
		}
	}
}

// vTile returns V of tile t of KV head h, dim-major and kBlockN wide (row
// i at [i·kBlockN:]), the same codes the cache holds at vt[(h·d+i)·stride +
// t.start + j], +0 past its padded token axis (the tensor core still runs
// kBlockN/K instructions there, with P = 0). lo is the lowest tile the
// mainloop visits.
//
// The cache's V rows are a whole sequence apart (stride tokens): a tile
// read in place is d short runs (kBlockN codes) from d pages, d streams at
// once, which the hardware's prefetchers do not follow, so P·V over the
// cache ran at half the speed of the same chains over contiguous codes
// (128k tokens, d = 128: 42-49 cpu-ms against 20 with this copy, padding
// the stride by 32, 64 or 1024 tokens no better). vTile instead copies,
// when t is not in the block, the next tiles (at most vBlockBytes of them)
// row by row, each row one contiguous read. Only the memory layout
// changes; the chains read the same codes.
//
// Where the cache keeps a tile-major view of V for KBlockN (vtiles.go),
// vTile returns the view's tile itself, or, when patched tokens fall in
// it, a copy with their codes written in (valid until the next call).
func (k *kernel) vTile(h int, t tile, lo int) []uint16 {
	kv, bn, d := k.kv, k.KBlockN, k.kv.vdim
	size, b := d*bn, &k.vb
	if !k.vasked {
		k.vview, k.vasked = kv.vTileView(bn), true
	}
	if w := k.vview; w != nil {
		codes := w.tile(h, t.n, d)
		var ps []TokenPatch
		if k.patch != nil {
			ps = patchesIn(k.patch[h], t.start, t.start+bn)
		}
		if len(ps) == 0 {
			return codes
		}
		if len(k.vpatched) < size {
			k.vpatched = make([]uint16, size)
		}
		out := k.vpatched[:size]
		copy(out, codes)
		patchTiles(out, ps, t.n, bn, d)
		return out
	}
	if tiles := max(1, vBlockBytes/(2*size)); b.fill(h, t.n, lo, tiles) {
		if len(b.codes) < tiles*size {
			b.codes = make([]uint16, tiles*size)
		}
		copyTiles(b.codes, kv.vt[h*d*kv.stride:], d, kv.stride, bn, b.lo, b.hi, 0)
		if k.patch != nil { // the patched tokens' V codes over the copy's
			patchTiles(b.codes, patchesIn(k.patch[h], b.lo*bn, b.hi*bn), b.lo, bn, d)
		}
	}
	return b.codes[(t.n-b.lo)*size:][:size]
}

// patchTiles writes the V codes of the patches ps (tokens of tiles lo
// and up) over tiles, tile-major from tile lo as vTile hands them (d rows
// of bn codes a tile).
func patchTiles(tiles []uint16, ps []TokenPatch, lo, bn, d int) {
	for _, p := range ps {
		n := p.Pos / bn
		col := (n-lo)*d*bn + p.Pos - n*bn
		for i, c := range p.V {
			tiles[col+i*bn] = c
		}
	}
}

// vTileBlock is vTile on a block-scaled cache: the tile's element codes
// (row i at [i·kBlockN:]) and their scale codes (row i at
// [i·kBlockN/Block:]), +0 codes with the scale code of an all-zero block
// past the padded token axis.
func (k *kernel) vTileBlock(h int, t tile, lo int) (codes, scales []uint8) {
	kv, bs, bn, d := k.kv, k.kv.bs, k.KBlockN, k.kv.vdim
	nb := bs.block
	size, ssize, b := d*bn, d*bn/nb, &k.vb
	if tiles := max(1, vBlockBytes/(size+ssize)); b.fill(h, t.n, lo, tiles) {
		if len(b.codes8) < tiles*size {
			b.codes8, b.scales = make([]uint8, tiles*size), make([]uint8, tiles*ssize)
		}
		var zero [1]uint8
		zs := bs.vq.quantBlock(make([]float32, nb), zero[:], 0)
		base := h * d * kv.stride
		copyTiles(b.codes8, bs.vt8[base:], d, kv.stride, bn, b.lo, b.hi, 0)
		copyTiles(b.scales, bs.vs[base/nb:], d, kv.stride/nb, bn/nb, b.lo, b.hi, zs)
	}
	return b.codes8[(t.n-b.lo)*size:][:size], b.scales[(t.n-b.lo)*ssize:][:ssize]
}

// finalize merges what remains of the every-N accumulator and applies
// O *= v_descale / l as FA3's finalize does: scale = (1/l)·v_descale in
// FP32, 0 when l is 0 or NaN.
func (k *kernel) finalize(r *row) {
	vd := k.vDescale[r.kvh]
	if len(k.Sinks) > 0 {
		// The sink's logit is not scaled by softmax_scale: its share of the
		// row sum, in the units of P, is exp2(sink·log2(e) − m + 8).
		sink := k.Sinks[r.hq]
		if k.Float64 {
			r.l64 += math.Exp2(sink*math.Log2E - r.mUse64 + 8)
		} else {
			r.l += exp2f(float32(float32(sink*math.Log2E)-r.mUse) + 8)
		}
	}
	for a := range r.acc {
		acc := &r.acc[a]
		if k.Float64 {
			for i := range acc.o64 {
				if r.l64 == 0 { // every key masked: 0, as FA3's finalize
					acc.o64[i] = 0
					continue
				}
				acc.o64[i] = acc.o64[i] * float64(vd) / r.l64
			}
			continue
		}
		if acc.promote > 1 {
			k.promote(acc)
		}
		var scale float32
		if r.l != 0 && r.l == r.l {
			scale = 1 / r.l * vd
		}
		for i := range acc.o {
			acc.o[i] *= scale
		}
	}
}

// store copies accumulator a's O of the row into out.
func (k *kernel) store(r *row, a int, out []float64) {
	if k.Float64 {
		copy(out, r.acc[a].o64)
		return
	}
	for i, x := range r.acc[a].o {
		out[i] = float64(x)
	}
}

// LSE returns a split's log-sum-exp in base 2 as a split-KV kernel writes
// it, from its running max m (log2 units, scores × scale_log2) and row sum l
// (of P = exp2(S − m + 8)): (m + log2(l)) − 8 in FP32, log2 from
// pmath.Log2f (within an ulp, the same on every platform); −inf when l is
// 0 (an empty split, or every key masked), NaN when l is NaN.
func LSE(m, l float32) float32 {
	if l == 0 {
		return float32(math.Inf(-1))
	}
	return float32(m+pmath.Log2f(l)) - 8
}

func lse64(m, l float64) float64 {
	if l == 0 {
		return math.Inf(-1)
	}
	return m + pmath.Log2(l) - 8
}

// CombineSplits writes into o the combine of the splits' outputs os
// (O_s, each len(o) long) with their lse (base 2), in FP32 and in split
// order: M = max_s lse_s, w_s = exp2(lse_s − M), o_i = (Σ_s w_s·O_s,i) /
// (Σ_s w_s), each product, sum and the quotient rounded to FP32 (the sums
// start from split 0's term). Every lse −inf (no key in any split) gives
// 0; a NaN lse gives NaN. FA3's flash_fwd_combine computes the same merge
// in natural-log units with the weights normalized before the sum (last-bit
// differences).
func CombineSplits(o []float32, os [][]float32, lse []float32) {
	mx := float32(math.Inf(-1))
	for _, x := range lse {
		mx = max(mx, x)
	}
	if math.IsInf(float64(mx), -1) {
		clear(o)
		return
	}
	var den float32
	for s, x := range lse {
		w := exp2f(x - mx)
		if s == 0 {
			den = w
			for i, v := range os[s] {
				o[i] = w * v
			}
			continue
		}
		den += w
		for i, v := range os[s] {
			o[i] += float32(w * v)
		}
	}
	for i := range o {
		o[i] /= den
	}
}

func combine64(o []float64, os [][]float64, lse []float64) {
	mx := math.Inf(-1)
	for _, x := range lse {
		mx = max(mx, x)
	}
	if math.IsInf(mx, -1) {
		clear(o)
		return
	}
	clear(o)
	var den float64
	for s, x := range lse {
		w := math.Exp2(x - mx)
		den += w
		for i, v := range os[s] {
			o[i] += w * v
		}
	}
	for i := range o {
		o[i] /= den
	}
}

// exp2f returns 2^x in FP32: math.Exp2 in float64 (within one float64 ulp)
// rounded once to float32, which is the correctly rounded result except
// when 2^x lies within 2^-52 (relative) of the midpoint between two
// float32 numbers. Integer x give exact powers of two; x = −inf gives 0,
// NaN gives NaN. The H200 computes ex2.approx.ftz.f32 (about 2 ulp), so
// agreement with it is statistical, not bit for bit.
//
// It returns exactly float32(math.Exp2(float64(x))), on every platform,
// without computing math.Exp2 for most x: for x in [−125, 127] a float64
// approximation y (a 64-entry table of 2^(j/64) and a degree-5
// polynomial, relative error below 2^-48) is rounded to float32 from
// y·(1 ± 2^-40); when both give the same float32, so does every value
// in between, math.Exp2's result among them (rounding is monotonic), and
// that is the result. Otherwise (y within 2^-40 of a float32 midpoint,
// about one x in 2^15) and outside the range, math.Exp2 decides.
// TestExp2fIsMathExp2 checks this against math.Exp2 on every float32 of
// a strided sweep of the range, and FuzzExp2f on any x.
func exp2f(x float32) float32 {
	if x >= -125 && x <= 127 {
		xd := float64(x)
		// k/64 nearest x (the sum is positive, so the conversion floors it),
		// and r = x − k/64, |r| <= 1/128, exact: k = 0 when |x| < 1/128,
		// otherwise x and k/64 are multiples of 2^-30 below 2^7.
		k := int(xd*64+8192.5) - 8192
		r := xd - float64(k)*(1.0/64)
		e, j := k>>6, k&63
		// 2^r = Σ (r·ln2)^i / i!, i <= 5: truncation below 2^-54 for |r| <= 1/128.
		t := r * math.Ln2
		p := 1 + t*(1+t*(1.0/2+t*(1.0/6+t*(1.0/24+t*(1.0/120)))))
		y := exp2Table[j] * p * math.Float64frombits(uint64(e+1023)<<52)
		if lo := float32(y * (1 - 0x1p-40)); lo == float32(y*(1+0x1p-40)) {
			return lo
		}
	}
	return float32(math.Exp2(float64(x)))
}

// exp2Table holds 2^(j/64) for j = 0 … 63, each within one float64 ulp.
var exp2Table = func() (t [64]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 64)
	}
	return t
}()
