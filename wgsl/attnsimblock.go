package wgsl

import (
	"fmt"
	"math"
	"sync"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
)

// The block-scaled (native) path of SimDecode: attention's PathBlockScaled
// on mxfp8, nvfp4 and mxfp4 caches, both GEMMs through the cache format's
// tcgen05 block-scaled instruction (blockstep.wgsl's block_step, the
// arithmetic of scaled.wgsl). Q is block-quantized on the host
// (attention.QuantizeBlock, as attention's setQueryBlock), P in the shader
// per block of Block consecutive tokens of the tile (bs_quant_p, the rule
// of attention/blockscaled.go). K's codes and scales are the cache's (blocks
// along head_dim), V's are its token blocks (per channel, Block consecutive
// tokens from token 0); tiles reaching past the cache's padded token axis
// read +0 codes with the scale of an all-zero block, as attention's
// vTileBlock fills them.

// simBlock is a block-scaled instruction the WGSL simulator runs.
type simBlock struct {
	name  string
	em    *scaledEmulation
	elem  fp8.Format // e4m3 or e2m1
	scale fp8.Format // ue8m0 or ue4m3
	k, b  int        // the step's K and the elements per scale
}

// simBlockFormats are the cache formats of the native path, the rows of
// attention.KVFormatTable with block scales: element format, scale format
// and block of each.
func simBlockFormats() []attention.KVFormat {
	var out []attention.KVFormat
	for _, f := range attention.KVFormats() {
		if f.Block() > 0 {
			out = append(out, f)
		}
	}
	return out
}

// simBlockModels names the default instruction of every block format.
func simBlockModels() []string {
	var names []string
	for _, f := range simBlockFormats() {
		if n, err := attention.BlockScaledModel(f); err == nil {
			names = append(names, n)
		}
	}
	return names
}

// simBlockOf returns the simBlock of the instruction name, or an error when
// name is not a block-scaled instruction reading one of simBlockFormats
// (same element format on both sides, its scale format and block, FP32
// accumulator) that scaled.wgsl's arithmetic runs.
func simBlockOf(name string) (*simBlock, error) {
	if name == "" {
		return nil, fmt.Errorf("wgsl: no model named")
	}
	m, err := accum.LookupInstruction(name)
	if err != nil {
		return nil, err
	}
	info := m.Info()
	if info.Kind != accum.KindScaled || info.Scale == "" || info.A != info.B {
		return nil, fmt.Errorf("wgsl: %s is not a block-scaled instruction reading one element format", name)
	}
	em, err := scaledEmulationOf(info)
	if err != nil {
		return nil, err
	}
	for _, f := range simBlockFormats() {
		if f.Elem() == em.a && f.BlockScale() == em.scale && f.Block() == info.Block {
			return &simBlock{name: name, em: em, elem: em.a, scale: em.scale, k: info.K, b: info.Block}, nil
		}
	}
	return nil, fmt.Errorf("wgsl: %s reads %s with %s scales per %d: no block-scaled KV format (mxfp8, nvfp4, mxfp4) is stored so", name, info.A, info.Scale, info.Block)
}

// checkCache calls bad unless kv is a block-scaled cache that the
// instruction reads: its element format, scale format and block.
func (s *simBlock) checkCache(kv *attention.KV, model string, bad func(format string, a ...any)) {
	f := kv.BlockFormat()
	switch {
	case f == attention.KVInvalid:
		bad("model %s reads block-scaled codes, the cache holds %s codes without block scales", model, kv.Format())
	case f.Elem() != s.elem || f.BlockScale() != s.scale || f.Block() != s.b:
		bad("model %s reads %s with %s scales per %d, the cache is %s (%s with %s scales per %d)", model, s.elem, s.scale, s.b, f, f.Elem(), f.BlockScale(), f.Block())
	}
}

// format is the cache format the instruction reads.
func (s *simBlock) format() attention.KVFormat {
	for _, f := range simBlockFormats() {
		if f.Elem() == s.elem && f.BlockScale() == s.scale && f.Block() == s.b {
			return f
		}
	}
	return attention.KVInvalid
}

// blockHostEmulation is the FP8 emulation whose (unused) T-FDPA functions
// complete attnsim.wgsl's module on the block-scaled path: it fixes 8-bit
// codes, four a word.
func blockHostEmulation() *Emulation {
	e, _ := LookupEmulation(attention.DefaultModel(fp8.FormatE4M3))
	return e
}

// blockConsts are attnblock.wgsl's constants (placeholders off the
// block-scaled path, so that the module compiles) and the names under which
// blockstep.wgsl reads them.
func (p *simPlan) blockConsts() []constDecl {
	s := p.blk
	var cs []constDecl
	if s == nil {
		cs = []constDecl{cBool("BLK", false), cU32("BK", 32), cU32("BB", 32), cU32("BF", 25), cI32("BEZERO", 0),
			cU32("BFE", 3), cU32("BFS", 0), cU32("BGROUP", 0), cBool("BNV", false), cBool("BE4M3", true), cI32("BEMAX", 8),
			cU32("BSNAN", 0xff), cU32("BT", 0), cU32("A_SCALES", 0), cU32("BTAB_N", 1)}
	} else {
		info := s.em.info
		cs = []constDecl{cBool("BLK", true), cU32("BK", s.k), cU32("BB", s.b), cU32("BF", info.F), cI32("BEZERO", info.EZero),
			cU32("BFE", s.elem.FracBits()), cU32("BFS", s.scale.FracBits()), cU32("BGROUP", info.Group),
			cBool("BNV", s.scale == fp8.FormatUE4M3), cBool("BE4M3", s.elem == fp8.FormatE4M3), cI32("BEMAX", s.elem.Emax()),
			cU32("BSNAN", int(s.scale.MaxCode())+1), cU32("BT", 256+2*p.kvHeads), cU32("A_SCALES", p.d/s.b+p.kbn/s.b), cU32("BTAB_N", 768)}
	}
	return append(cs, blockStepConsts("BK", "BF", "BEZERO", "BFE", "BFE", "BFS", "true", "BB", "BGROUP")...)
}

// tables returns what attnblock.wgsl reads at XT[BT:]: the element and
// scale decode tables (scaled.wgsl's entries) and the ue4m3 values as
// float32 bits.
func (s *simBlock) tables() []uint32 {
	t := make([]uint32, 0, 768)
	t = append(t, s.em.table[:256]...)
	t = append(t, s.em.table[512:768]...)
	for c := 0; c < 256; c++ {
		v := float32(math.NaN())
		if c < 1<<fp8.FormatUE4M3.CodeBits() {
			v = float32(fp8.FormatUE4M3.Value(uint32(c)))
		}
		t = append(t, math.Float32bits(v))
	}
	return t
}

// blockTilesPerDispatch is tilesPerDispatch for the block-scaled path: a
// step loops at most 3·K + 4 times (terms, max exponent, sum), the P
// quantization of a block 3·Block times plus f32_div's 26 per element and
// for the NVFP4 scale.
func (p *simPlan) blockTilesPerDispatch() int {
	s := p.blk
	tile := (p.d/s.k+p.kbn/s.k)*(3*s.k+4) + 768/p.wg() + 2*p.kbn + 8 + 3*s.b + 26*(s.b+1) + p.maxTok + p.maxTiles
	return max(1, (loopBudget-256/p.wg()-64)/tile)
}

// SimTokenOf returns token pos of KV head head of kv as a SimToken: its K
// and V codes and, on a block-scaled cache, its K scales and V's block of
// tokens holding it (codes and scales). Write the token into the cache
// (attention.KV.SetToken), take SimTokenOf, and restore the cache: the
// block is the one the written cache holds.
func SimTokenOf(kv *attention.KV, pos, head int) (SimToken, error) {
	if kv == nil {
		return SimToken{}, fmt.Errorf("wgsl: SimTokenOf: no KV cache")
	}
	k, v := kv.TokenCodes(pos, head)
	if k == nil {
		return SimToken{}, fmt.Errorf("wgsl: SimTokenOf: token %d of KV head %d is outside the cache (%d tokens, %d heads)", pos, head, kv.Tokens(), kv.Heads())
	}
	tk := SimToken{Pos: pos, Head: head, K: k, V: v}
	f := kv.BlockFormat()
	if f == attention.KVInvalid {
		return tk, nil
	}
	ks, vs, err := kv.BlockScales(pos, head)
	if err != nil {
		return SimToken{}, fmt.Errorf("wgsl: SimTokenOf: %w", err)
	}
	b := f.Block()
	lo := pos / b * b
	tk.KScales, tk.VScales = ks, vs
	tk.VBlock = make([]uint8, kv.VDim()*b)
	for i := 0; i < kv.VDim(); i++ {
		for j := 0; j < b; j++ {
			if lo+j < kv.Tokens() { // +0 codes past the cache
				tk.VBlock[i*b+j] = uint8(kv.VCode(lo+j, head, i))
			}
		}
	}
	return tk, nil
}

// The block-scaled path lays out A and B with 8-bit codes four a word and
// scales one a word:
//
//	A per row: Q codes [D], P codes [KBN], Q scales [D/BB], P scales [KBN/BB]
//	B per cache: K codes [kv_head][token][D], V codes [kv_head][D][padded
//	   tokens], K scales [kv_head][token][D/BB], V scales [kv_head][D][padded/BB];
//	   then the trials' meta words, then per trial its tokens (K codes,
//	   then K scales) and V tiles (codes [D][KBN], then scales [D][KBN/BB]).

// packQBlock is packQ on the block-scaled path: Q block-quantized
// (attention.QuantizeBlock of q / q_descale, as attention's
// setQueryBlock), its codes and scales.
func (p *simPlan) packQBlock(trials []SimTrial) ([]uint32, error) {
	f := p.blk.format()
	d, kbn, bb := p.d, p.kbn, p.blk.b
	put := func(w []uint32, i int, c uint8) { w[i/4] |= uint32(c) << (8 * uint(i%4)) }
	aw := p.aWords()
	a := make([]uint32, len(trials)*p.qHeads*aw)
	qf, codes := make([]float32, bb), make([]uint8, bb)
	for ti, tr := range trials {
		for h := 0; h < p.qHeads; h++ {
			row := a[(ti*p.qHeads+h)*aw:][:aw]
			qs := scaleAt(p.qScale, h/p.group)
			for lo := 0; lo < d; lo += bb {
				for j := range qf {
					qf[j] = tr.Q[h*d+lo+j] / qs
				}
				sc, err := attention.QuantizeBlock(f, qf, codes)
				if err != nil {
					return nil, err
				}
				for j, c := range codes {
					put(row, lo+j, c)
				}
				row[(d+kbn)/4+lo/bb] = uint32(sc)
			}
		}
	}
	return a, nil
}

// packBlockCache appends a block-scaled cache to B: its codes and scales,
// V's token blocks past the cache's (the tiles' padding) +0 codes with
// the scale of an all-zero block; rows are packed on every core, each
// row's words (and its scales) its own.
func (p *simPlan) packBlockCache(b []uint32, kv *attention.KV) ([]uint32, simCache, error) {
	f := p.blk.format()
	d, kbn, n, bb := p.d, p.kbn, p.tokens, p.blk.b
	codes := make([]uint8, bb)
	zs, err := attention.QuantizeBlock(f, make([]float32, bb), codes) // the scale of an all-zero block
	if err != nil {
		return nil, simCache{}, err
	}
	vTokens := p.nMax * kbn
	used := (n + bb - 1) / bb * bb // tokens of the blocks holding the cache's tokens
	vStride, vsStride := vTokens/4, vTokens/bb
	c := simCache{k: len(b)}
	c.v = c.k + p.kvHeads*n*d/4
	c.ks = c.v + p.kvHeads*d*vStride
	c.vs = c.ks + p.kvHeads*n*d/bb
	b = append(b, make([]uint32, c.vs+p.kvHeads*d*vsStride-c.k)...)
	put := func(w []uint32, i int, code uint8) { w[i/4] |= uint32(code) << (8 * uint(i%4)) }
	var mu sync.Mutex
	var firstErr error
	parallelRows(p.kvHeads*n, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			h, t := r/n, r%n
			krow := b[c.k+r*d/4:]
			for i := 0; i < d; i++ {
				put(krow, i, uint8(kv.KCode(t, h, i)))
			}
			ks, vs, err := kv.BlockScales(t, h)
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
				return
			}
			for j, s := range ks {
				b[c.ks+r*d/bb+j] = uint32(s)
			}
			if t%bb == 0 {
				for i, s := range vs {
					b[c.vs+(h*d+i)*vsStride+t/bb] = uint32(s)
				}
			}
		}
	})
	if firstErr != nil {
		return nil, simCache{}, firstErr
	}
	parallelRows(p.kvHeads*d, used, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			h, i := r/d, r%d
			row := b[c.v+r*vStride:]
			for t := 0; t < used; t++ {
				put(row, t, uint8(kv.VCode(t, h, i)))
			}
			for blk := used / bb; blk < vsStride; blk++ {
				b[c.vs+r*vsStride+blk] = uint32(zs)
			}
		}
	})
	return b, c, nil
}

// packTrialBlock is packTrial on the block-scaled path: a replaced token's
// K codes and scales, and per V tile the trial touches the codes and
// scales of the trial's cache (at c) with the token's V block written in.
func (p *simPlan) packTrialBlock(b []uint32, c simCache, tr SimTrial) ([]uint32, trialTables) {
	d, kbn, bb := p.d, p.kbn, p.blk.b
	put := func(w []uint32, i int, code uint8) { w[i/4] |= uint32(code) << (8 * uint(i%4)) }
	vStride, vsStride := p.nMax*kbn/4, p.nMax*kbn/bb
	tw, tsw := kbn/4, kbn/bb // words per dimension of a V tile: codes, scales
	var tt trialTables
	for _, tk := range tr.Tokens {
		off := len(b)
		b = append(b, make([]uint32, d/4+d/bb)...)
		for i := 0; i < d; i++ {
			put(b[off:], i, uint8(tk.K[i]))
		}
		for j, s := range tk.KScales {
			b[off+d/4+j] = uint32(s)
		}
		tt.toks = append(tt.toks, simEntry{tk.Pos, tk.Head, off})
	}
	for _, tk := range tr.Tokens {
		start := tk.Pos / kbn * kbn
		off := tt.tile(start, tk.Head, func() int {
			off := len(b)
			b = append(b, make([]uint32, d*(tw+tsw))...)
			for i := 0; i < d; i++ {
				copy(b[off+i*tw:off+(i+1)*tw], b[c.v+(tk.Head*d+i)*vStride+start/4:])
				copy(b[off+d*tw+i*tsw:off+d*tw+(i+1)*tsw], b[c.vs+(tk.Head*d+i)*vsStride+start/bb:])
			}
			return off
		})
		// The token's V block, every channel: codes and scale.
		lo := tk.Pos/bb*bb - start
		for i := 0; i < d; i++ {
			for j := 0; j < bb; j++ {
				w := &b[off+i*tw+(lo+j)/4]
				sh := 8 * uint((lo+j)%4)
				*w = *w&^(0xff<<sh) | uint32(tk.VBlock[i*bb+j])<<sh
			}
			b[off+d*tw+i*tsw+lo/bb] = uint32(tk.VScales[i])
		}
	}
	return b, tt
}
