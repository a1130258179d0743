package attention

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// Config describes one FlashAttention-3-style forward computation: the
// shapes, the dtype of the cache, the arithmetic of both GEMMs, the tiles
// and the masks. The zero value of every optional field picks FA3's
// behaviour (see each field). Scales are not part of the Config: they
// travel with the tensors they belong to ([KV] and the query scales given
// to [Run]).
type Config struct {
	// HeadDim is the head dimension d of Q and K: 64, 128, 192, 256, 512
	// or 576 (MLA as DeepSeek serves it: 512 latent + 64 rope channels).
	HeadDim int
	// VDim is the head dimension of V and O: 0 means HeadDim; otherwise
	// one of the head dimensions above, at most HeadDim (MLA: 512 with
	// HeadDim 576 and one KV head, V being the first 512 channels of the
	// latent the keys are).
	VDim int
	// Sinks, when set, holds one attention-sink logit per query head
	// (gpt-oss's learned sinks, natural-log units, not scaled by
	// SoftmaxScale): softmax over the keys and the sink, the sink's share
	// dropped. The kernel adds exp2(sink·log2(e) − m + 8) to the row sum
	// l at the end, m the final running max (FP32).
	Sinks []float64
	// KVHeads is the number of KV heads (0 means 1); QHeads the number of
	// query heads (0 means KVHeads), a multiple of KVHeads: query head h
	// reads KV head h / (QHeads/KVHeads) (GQA).
	KVHeads, QHeads int
	// DType is the format of Q, K, V and P: fp8.FormatE4M3, FormatE5M2,
	// FormatBF16 or FormatFP16 (FA3 needs one dtype for all four; P is
	// cast to it). The zero value means e4m3 (for Run, the cache's format).
	// A block-scaled cache (PathBlockScaled) takes its element format:
	// e4m3 for mxfp8, e2m1 for nvfp4 and mxfp4.
	DType fp8.Format
	// Saturation applies to the casts of Q, K and V to an fp8 DType:
	// fp8.SatFinite (the zero value) is vLLM's cache write and query
	// quantization; fp8.NoSat is PyTorch's .to(torch.float8_e4m3fn). P is
	// always cast with SatFinite, as FA3 and Triton do.
	Saturation fp8.Saturation
	// QKModel and PVModel name the accum models of the two GEMMs (any
	// name accum.Lookup knows, or an IEEE baseline such as "fp32" or
	// "exact" for any DType). Empty means the Hopper wgmma model of DType:
	// sm90.wgmma.e4m3.f32, sm90.wgmma.e5m2.f32, sm90.wgmma.bf16.f32 or
	// sm90.wgmma.f16.f32. A tensor-core model must read DType. For a
	// block-scaled cache both name accum Instructions reading the cache's
	// element and scale formats and block (empty: BlockScaledModel of the
	// format); Hopper models are refused (wgmma has no block-scaled kind).
	QKModel, PVModel string
	// KBlockM and KBlockN are the tile sizes (queries × tokens). Zero picks
	// FA3's table (DefaultTiles): decode tiles when FA3's use_one_mma_wg
	// holds (head_dim 64 or 128, no window, queries × q-heads per KV head ≤
	// 64), prefill tiles otherwise. KBlockN must be a multiple of the PV
	// model's instruction width K (32 for fp8, 16 for 16-bit) and at most
	// 256; KBlockM at most 256.
	KBlockM, KBlockN int
	// Promotion is how P·V leaves the tensor core: 0 never (FA3 as
	// shipped: the running O is the chain's accumulator for the whole
	// context), 1 every tile (vLLM's two-level accumulation,
	// flash-attention #104), N > 1 every N tiles with the lazily tracked
	// acc_scale of flash-attention #122.
	Promotion int
	// Splits is the number S of split-KV ranges (FA3's num_splits,
	// flash-decoding): 0 or 1 runs the tiles a query block visits in one
	// range, as today's kernel. S > 1 cuts the visited tiles [nMin, nMax)
	// into S contiguous ranges of tps = ⌈(nMax − nMin)/S⌉ tiles, split s
	// taking [nMin + s·tps, min(nMin + (s+1)·tps, nMax)) (FA3's
	// get_n_block_min_max; empty when it starts past nMax). Each split runs
	// the mainloop on its range alone (tiles newest first, its own m, l and
	// P·V accumulators, promotion counted from its first tile) and writes
	// O_s = acc·((1/l_s)·v_descale) and lse_s = m_s + log2(l_s) − 8 (base 2,
	// FP32; −inf when l_s is 0); the combine, in FP32 and in split order,
	// is w_s = exp2(lse_s − max lse), O = (Σ w_s·O_s) / (Σ w_s)
	// ([CombineSplits]). At most MaxSplits; sinks are refused with S > 1
	// (how FA3 adds them to a split is not modelled). [Plan.AutoSplits] is
	// FA3's heuristic.
	Splits int
	// Causal masks key j for the query at position p when j > p. Queries
	// are the last Mq tokens of the sequence (FA3's bottom-right
	// alignment): query i of Mq sits at position N − Mq + i.
	Causal bool
	// Window, when positive, is a sliding window of that many tokens
	// (the model's sliding_window, FA3's window_size_left = Window − 1):
	// key j is masked for the query at p when j ≤ p − Window.
	Window int
	// Positions, when set, gives each query's position in the sequence
	// (0 … tokens−1), for the causal mask and the window, instead of the
	// bottom-right alignment. The tiles a block of KBlockM queries visits
	// then span the smallest to the largest position of the block.
	Positions []int
	// Mask, when set, holds mq × tokens flags, row major: key j takes part
	// in query i's softmax only where Mask[i·tokens + j] (PyTorch SDPA's
	// boolean attn_mask), on top of the causal mask and the window. A row
	// with no key left gives 0.
	Mask []bool
	// SoftmaxScale multiplies Q·Kᵀ; 0 means 1/√HeadDim.
	SoftmaxScale float64
	// Float64 runs the same tile loop in float64 arithmetic: float64 dot
	// products of the codes' values, exp2 and online softmax in float64,
	// P not rounded, O accumulated in float64; the models and Promotion
	// are then ignored. It checks the loop itself (tile order, masks, GQA,
	// online softmax) against Reference.
	Float64 bool
}

// HeadDims are the head dimensions the simulator accepts.
var HeadDims = []int{64, 128, 192, 256, 512, 576}

func validHeadDim(d int) bool {
	for _, x := range HeadDims {
		if d == x {
			return true
		}
	}
	return false
}

// Limits of a Config.
const (
	MaxKBlockN = 256
	MaxKBlockM = 256
	// MaxSplits is FA3's largest num_splits (its combine kernel takes at
	// most 2^7 splits; get_num_splits caps the heuristic at 128).
	MaxSplits = 128
)

// Plan is one run resolved: its Config with every default filled in (head
// dims, heads, dtype, model names, tiles, softmax scale, splits) and what
// the kernel derives from the cache and the query scales (the FP32 softmax
// scale and v_descale per KV head), for mq queries over the cache's tokens.
// Both the CPU kernel ([Run]) and the WGSL simulator execute a Plan, so
// that every default lives here once. A Plan is read-only.
type Plan struct {
	Config
	mq, n  int
	group  int // query heads per KV head
	decode bool
	qk, pv accum.Model
	// bqk and bpv are the block-scaled instructions of a block-scaled
	// cache (qk and pv are then nil).
	bqk, bpv accum.Instruction
	// Per KV head: softmax_scale·log2(e)·q_descale·k_descale in FP32 (and
	// in float64 for Float64 mode) and v_descale; the query descales.
	scaleLog2 []float32
	scale64   []float64
	vDescale  []float32
	qScale    []float32
}

// Queries returns the number of query rows per query head (query tokens).
func (p *Plan) Queries() int { return p.mq }

// Tokens returns the number of tokens of the cache.
func (p *Plan) Tokens() int { return p.n }

// Group returns the query heads per KV head.
func (p *Plan) Group() int { return p.group }

// Decode reports whether FA3's use_one_mma_wg picked the decode tiles.
func (p *Plan) Decode() bool { return p.decode }

// ScaleLog2 returns KV head h's FP32 softmax_scale·log2(e)·q_descale·k_descale,
// computed as the host and FA3 compute it: softmax_scale·log2(e) in double
// rounded once to float, times q_descale, times k_descale in FP32.
func (p *Plan) ScaleLog2(h int) float32 { return p.scaleLog2[h] }

// VDescale returns KV head h's v_descale.
func (p *Plan) VDescale(h int) float32 { return p.vDescale[h] }

// QScale returns the query descale of KV head h (FA3's q_descale is per KV
// head).
func (p *Plan) QScale(h int) float32 { return scaleOf(p.qScale, h) }

// PVWidth returns the P·V instruction's K (32 for fp8, 16 for 16-bit).
func (p *Plan) PVWidth() int {
	if p.bpv != nil {
		return p.bpv.Info().K
	}
	return max(p.pv.Info().K, 1)
}

// TileRange returns the KV tiles query i's m-block visits, nMax−1 down to
// nMin: from the last tile holding a key visible to the block's last query
// (causal) down to the first holding a key visible to its first query
// (window), as FA3's get_n_block_min_max.
func (p *Plan) TileRange(i int) (nMin, nMax int) {
	mb := i / p.KBlockM
	first, last := p.n-p.mq+mb*p.KBlockM, min(p.n-p.mq+mb*p.KBlockM+p.KBlockM-1, p.n-1)
	if p.Positions != nil {
		first, last = p.n, 0
		for _, x := range p.Positions[mb*p.KBlockM : min(p.mq, (mb+1)*p.KBlockM)] {
			first, last = min(first, x), max(last, x)
		}
	}
	end := p.n
	if p.Causal {
		end = last + 1
	}
	nMax = (end + p.KBlockN - 1) / p.KBlockN
	if p.Window > 0 {
		nMin = max(0, first-p.Window+1) / p.KBlockN
	}
	return nMin, nMax
}

// SplitRange returns split s's tiles [lo, hi) of the visited tiles [nMin,
// nMax): tps = ⌈(nMax − nMin)/S⌉ tiles a split, lo = nMin + s·tps,
// hi = min(lo + tps, nMax); lo ≥ hi is an empty split.
func (p *Plan) SplitRange(nMin, nMax, s int) (lo, hi int) {
	S := max(p.Splits, 1)
	if nMax <= nMin {
		return nMin, nMin
	}
	tps := (nMax - nMin + S - 1) / S
	lo = nMin + s*tps
	return lo, min(lo+tps, nMax)
}

// IsDecode reports whether FA3's use_one_mma_wg heuristic picks the decode
// tiles: head_dim 64 or 128, no sliding window, and mq queries × q-heads
// per KV head ≤ 64 (fp8-attention.md §2.3, hopper/heuristics.h).
func IsDecode(headDim, window, mq, group int) bool {
	return (headDim == 64 || headDim == 128) && window == 0 && mq*group <= 64
}

// DefaultTiles returns FA3's SM90 forward tile (kBlockM, kBlockN) for
// head_dim d (fp8-attention.md §2.3, hopper/tile_size.h on the vLLM fork's
// main). For fp8 dtypes: decode 64×128 (d ≤ 96) or 64×96; prefill with
// two-level accumulation (#125) 192×128 (d ≤ 64), 128×128 (≤ 96), 128×192
// (≤ 128), 128×96 (≤ 192), 128×128 (≤ 256, 64 when local); prefill
// without it (the pre-#125 table of the single-level kernel) 192×160,
// 192×128, 128×224, 128×160, 128×128 (64 when local). For 16-bit dtypes
// the notes give only hd128 (decode 64×128/176, prefill 128×128/160): this
// returns 64×128 for decode and 128×128 for prefill at every head_dim, an
// approximation; pass explicit tiles where it matters. FA3 stops at
// head_dim 256: for 512 and 576 (MLA) this returns FlashMLA's 64×64
// (BLOCK_SIZE_M 64, page block 64) for every dtype.
func DefaultTiles(d int, dtype fp8.Format, decode, local, twoLevel bool) (kBlockM, kBlockN int) {
	if d > 256 {
		return 64, 64
	}
	if dtype != fp8.FormatE4M3 && dtype != fp8.FormatE5M2 {
		if decode {
			return 64, 128
		}
		return 128, 128
	}
	if decode {
		if d <= 96 {
			return 64, 128
		}
		return 64, 96
	}
	type row struct{ d, m, n2, m1, n1 int } // two-level (m, n2); single-level (m1, n1)
	for _, r := range []row{{64, 192, 128, 192, 160}, {96, 128, 128, 192, 128}, {128, 128, 192, 128, 224}, {192, 128, 96, 128, 160}} {
		if d <= r.d {
			if twoLevel {
				return r.m, r.n2
			}
			return r.m1, r.n1
		}
	}
	if local {
		return 128, 64
	}
	return 128, 128
}

// lookupModel resolves a model name for inputs of format f: tensor-core
// models must read f; IEEE baselines are built for f.
func lookupModel(which, name string, f fp8.Format) (accum.Model, error) {
	if name == "" {
		name = DefaultModel(f)
	}
	if m, ok := baselines.Load(baselineKey{name, f}); ok {
		return m.(accum.Model), nil
	}
	if m, err := accum.BaselineByName(name, f); err == nil {
		m, _ := baselines.LoadOrStore(baselineKey{name, f}, m)
		return m.(accum.Model), nil
	}
	m, err := accum.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%s model: %w", which, err)
	}
	if in := m.Info().In; in != f {
		return nil, fmt.Errorf("%s model %s reads %s, but the dtype is %s (use a %s model or an IEEE baseline)", which, name, in, f, f)
	}
	return m, nil
}

type baselineKey struct {
	name string
	f    fp8.Format
}

// baselines caches the IEEE baselines built for each input format (each
// holds a 256 KiB decode table).
var baselines sync.Map

// resolve validates c for mq queries over n tokens and fills in defaults.
// Every error names the limit it breaks.
func (c Config) resolve(mq, n int) (*Plan, error) { return c.resolveWith(mq, n, nil) }

// ResolveSpec is Resolve for a cache of the spec's format and path, which
// a block-scaled path needs (its dtype is the format's element, its models
// the block-scaled instructions, its tile FA3's fp8 one rounded up to the
// instruction's K); other specs resolve as Resolve with the spec's dtype
// where c leaves it unset.
func (c Config) ResolveSpec(mq, n int, spec KVSpec) (*Plan, error) {
	if c.DType == fp8.FormatInvalid {
		c.DType = spec.DType()
	}
	if spec.Path != PathBlockScaled {
		return c.Resolve(mq, n)
	}
	f := spec.Format
	bs := &blockCache{f: f, elem: f.Elem(), scale: f.BlockScale(), block: f.Block()}
	p, err := c.resolveWith(mq, n, bs)
	if err != nil {
		return nil, err
	}
	p.qScale = []float32{1}
	base := float32(p.SoftmaxScale * math.Log2E)
	for h := 0; h < p.KVHeads; h++ {
		p.scaleLog2, p.scale64, p.vDescale = append(p.scaleLog2, base), append(p.scale64, p.SoftmaxScale*math.Log2E), append(p.vDescale, 1)
	}
	return p, nil
}

// Resolve returns the plan of c for mq queries over n tokens of a cache
// of c's shapes and dtype (HeadDim must be set; KVHeads and QHeads default
// to 1; the dtype to e4m3), without the cache: its tiles, splits and model
// names, for choosing a run's parameters before the cache exists (the
// split count of Plan.AutoSplits). The per-KV-head descales of a Plan from
// Resolve are 1.0. Block-scaled caches resolve through [Config.Plan].
func (c Config) Resolve(mq, n int) (*Plan, error) {
	p, err := c.resolve(mq, n)
	if err != nil {
		return nil, err
	}
	p.qScale = []float32{1}
	base := float32(p.SoftmaxScale * math.Log2E)
	for h := 0; h < p.KVHeads; h++ {
		p.scaleLog2 = append(p.scaleLog2, base)
		p.scale64 = append(p.scale64, p.SoftmaxScale*math.Log2E)
		p.vDescale = append(p.vDescale, 1)
	}
	return p, nil
}

// resolveWith is resolve for a cache whose block-scaled side is bs (nil
// for the other paths): the dtype is then the cache's element format (e4m3
// or e2m1), the models block-scaled instructions (lookupBlockInstr), and
// the default kBlockN FA3's fp8 one rounded up to the instruction's K.
func (c Config) resolveWith(mq, n int, bs *blockCache) (*Plan, error) {
	p := &Plan{Config: c, mq: mq, n: n}
	if p.KVHeads == 0 {
		p.KVHeads = 1
	}
	if p.QHeads == 0 {
		p.QHeads = p.KVHeads
	}
	if p.DType == fp8.FormatInvalid {
		p.DType = fp8.FormatE4M3
	}
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if !validHeadDim(p.HeadDim) {
		bad("head_dim %d is not one of %v", p.HeadDim, HeadDims)
	}
	if p.VDim == 0 {
		p.VDim = p.HeadDim
	}
	if validHeadDim(p.HeadDim) && (!validHeadDim(p.VDim) || p.VDim > p.HeadDim) {
		bad("V head_dim %d is not one of %v at most head_dim %d", p.VDim, HeadDims, p.HeadDim)
	}
	if len(p.Sinks) != 0 && len(p.Sinks) != p.QHeads {
		bad("%d sink logits for %d query heads (want none or one per query head)", len(p.Sinks), p.QHeads)
	}
	for i, x := range p.Sinks {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			bad("sink logit %d is %g (must be finite)", i, x)
		}
	}
	if p.KVHeads < 1 || p.QHeads < 1 {
		bad("heads must be positive (got %d query heads, %d KV heads)", p.QHeads, p.KVHeads)
	} else if p.QHeads%p.KVHeads != 0 {
		bad("%d query heads is not a multiple of %d KV heads", p.QHeads, p.KVHeads)
	} else {
		p.group = p.QHeads / p.KVHeads
	}
	switch {
	case bs != nil:
		if p.DType != bs.elem {
			bad("a block-scaled %s cache holds %s codes, the config's dtype is %s", bs.f, bs.elem, p.DType)
		}
	case p.DType == fp8.FormatE4M3, p.DType == fp8.FormatE5M2, p.DType == fp8.FormatBF16, p.DType == fp8.FormatFP16:
	default:
		bad("dtype %s is not one of e4m3, e5m2, bf16, f16", p.DType)
	}
	if p.Saturation != fp8.SatFinite && p.Saturation != fp8.NoSat {
		bad("unknown saturation %d", p.Saturation)
	}
	if n < 1 {
		bad("the KV cache holds %d tokens (at least 1)", n)
	}
	if mq < 1 || mq > n {
		bad("%d queries over %d tokens: queries are the last tokens of the sequence (1 ≤ queries ≤ tokens)", mq, n)
	}
	if p.Positions != nil {
		if len(p.Positions) != mq {
			bad("%d query positions for %d queries", len(p.Positions), mq)
		}
		for i, x := range p.Positions {
			if x < 0 || x >= n {
				bad("query %d at position %d is outside the %d tokens", i, x, n)
				break
			}
		}
	}
	if p.Mask != nil && len(p.Mask) != mq*n {
		bad("a mask of %d flags for %d queries × %d tokens", len(p.Mask), mq, n)
	}
	if p.Promotion < 0 {
		bad("promotion interval %d is negative (0 never, 1 every tile, N every N tiles)", p.Promotion)
	}
	if p.Window < 0 {
		bad("window %d is negative (0 means no sliding window)", p.Window)
	}
	if p.Splits < 0 || p.Splits > MaxSplits {
		bad("%d splits is outside 0..%d (0 and 1: one split)", p.Splits, MaxSplits)
	}
	if p.Splits == 0 {
		p.Splits = 1
	}
	if p.Splits > 1 && len(p.Sinks) > 0 {
		bad("attention sinks with %d splits: how a split-KV kernel adds the sink is not modelled (use one split)", p.Splits)
	}
	if p.SoftmaxScale == 0 && p.HeadDim > 0 {
		p.SoftmaxScale = 1 / math.Sqrt(float64(p.HeadDim))
	}
	if !(p.SoftmaxScale > 0) || math.IsInf(p.SoftmaxScale, 0) {
		bad("softmax scale %g must be positive and finite", p.SoftmaxScale)
	}
	var err error
	k, pvName := 1, ""
	if bs != nil {
		if p.bqk, err = lookupBlockInstr("QK", p.QKModel, bs); err != nil {
			bad("%v", err)
		}
		if p.bpv, err = lookupBlockInstr("PV", p.PVModel, bs); err != nil {
			bad("%v", err)
		} else {
			k, pvName = p.bpv.Info().K, p.bpv.Name()
		}
	} else {
		if p.qk, err = lookupModel("QK", p.QKModel, p.DType); err != nil {
			bad("%v", err)
		}
		if p.pv, err = lookupModel("PV", p.PVModel, p.DType); err != nil {
			bad("%v", err)
		} else {
			k, pvName = max(p.pv.Info().K, 1), p.pv.Name()
		}
	}
	if len(errs) == 0 {
		// The plan names the models it runs.
		if bs != nil {
			p.QKModel, p.PVModel = p.bqk.Name(), p.bpv.Name()
		} else {
			p.QKModel, p.PVModel = p.qk.Name(), p.pv.Name()
		}
		p.decode = IsDecode(p.HeadDim, p.Window, mq, p.group)
		dt := p.DType
		if bs != nil {
			dt = fp8.FormatE4M3
		}
		m, nb := DefaultTiles(p.HeadDim, dt, p.decode, p.Window > 0, p.Promotion > 0)
		if bs != nil {
			nb = (nb + k - 1) / k * k
		}
		if p.KBlockM == 0 {
			p.KBlockM = m
		}
		if p.KBlockN == 0 {
			p.KBlockN = nb
		}
		if p.KBlockM < 1 || p.KBlockM > MaxKBlockM {
			bad("kBlockM %d is outside 1..%d", p.KBlockM, MaxKBlockM)
		}
		if p.KBlockN < 1 || p.KBlockN > MaxKBlockN {
			bad("kBlockN %d is outside 1..%d", p.KBlockN, MaxKBlockN)
		} else if p.KBlockN%k != 0 {
			bad("kBlockN %d is not a multiple of %s's instruction width K = %d", p.KBlockN, pvName, k)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("attention: %s", strings.Join(errs, "; "))
	}
	return p, nil
}

// position returns the position of query i.
func (p *Plan) position(i int) int {
	if p.Positions != nil {
		return p.Positions[i]
	}
	return p.n - p.mq + i
}

// visible reports whether query i (at position pos) sees key j, for j in
// [0, n).
func (p *Plan) visible(i, pos, j int) bool {
	return !(p.Causal && j > pos) && !(p.Window > 0 && j <= pos-p.Window) && (p.Mask == nil || p.Mask[i*p.n+j])
}

// checkScales checks one tensor's descales: one value (per tensor) or one
// per KV head, each positive and finite.
func checkScales(name string, s []float32, heads int) error {
	if len(s) != 1 && len(s) != heads {
		return fmt.Errorf("attention: %d %s scales: want 1 (per tensor) or %d (per KV head)", len(s), name, heads)
	}
	for i, x := range s {
		if !(x > 0) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("attention: %s scale %d is %g: scales must be positive and finite", name, i, x)
		}
	}
	return nil
}

// scaleOf returns the scale of KV head h.
func scaleOf(s []float32, h int) float32 {
	if len(s) == 1 {
		return s[0]
	}
	return s[h]
}

// Tiles returns the tiles (kBlockM, kBlockN) a run of c with mq queries
// over n tokens uses, its defaults resolved, or the error Run would give.
// Splitting the queries of one run into several runs of the same tiles and
// explicit Positions gives the same outputs.
func (c Config) Tiles(mq, n int) (kBlockM, kBlockN int, err error) {
	p, err := c.resolve(mq, n)
	if err != nil {
		return 0, 0, err
	}
	return p.KBlockM, p.KBlockN, nil
}

// TilesFor is Tiles for a run of c with mq queries over the cache kv, its
// shapes and dtype defaulting to the cache's as Run's do (a block-scaled
// cache's instruction width included).
func (c Config) TilesFor(mq int, kv *KV) (kBlockM, kBlockN int, err error) {
	if kv == nil {
		return 0, 0, fmt.Errorf("attention: no KV cache")
	}
	c = c.fromCache(kv)
	p, err := c.resolveWith(mq, kv.tokens, kv.bs)
	if err != nil {
		return 0, 0, err
	}
	return p.KBlockM, p.KBlockN, nil
}

// Plan resolves c for mq query tokens over the cache kv with the query
// descales qScale (nil: 1.0; one, or one per KV head): c's unset shapes and
// dtype are the cache's, its unset models, tiles and softmax scale FA3's.
// Every error names the limit it breaks.
func (c Config) Plan(mq int, qScale []float32, kv *KV) (*Plan, error) {
	if kv == nil {
		return nil, fmt.Errorf("attention: no KV cache")
	}
	c = c.fromCache(kv)
	p, err := c.resolveWith(mq, kv.tokens, kv.bs)
	if err != nil {
		return nil, err
	}
	switch {
	case kv.dim != p.HeadDim || kv.vdim != p.VDim:
		return nil, fmt.Errorf("attention: the cache has head_dim %d/%d (K/V), the config %d/%d", kv.dim, kv.vdim, p.HeadDim, p.VDim)
	case kv.heads != p.KVHeads:
		return nil, fmt.Errorf("attention: the cache has %d KV heads, the config %d", kv.heads, p.KVHeads)
	case kv.format != p.DType:
		return nil, fmt.Errorf("attention: the cache holds %s codes, the config's dtype is %s", kv.format, p.DType)
	}
	if qScale == nil {
		qScale = []float32{1}
	}
	if err := checkScales("q", qScale, p.KVHeads); err != nil {
		return nil, err
	}
	p.qScale = slices.Clone(qScale)
	// The host passes softmax_scale·log2(e) computed in double and
	// rounded once to float; the kernel multiplies by the descales in FP32.
	base := float32(p.SoftmaxScale * math.Log2E)
	for h := 0; h < p.KVHeads; h++ {
		qd, kd := scaleOf(qScale, h), scaleOf(kv.kScale, h)
		p.scaleLog2 = append(p.scaleLog2, float32(float32(base*qd)*kd))
		p.scale64 = append(p.scale64, p.SoftmaxScale*math.Log2E*float64(qd)*float64(kd))
		p.vDescale = append(p.vDescale, scaleOf(kv.vScale, h))
	}
	return p, nil
}

// fromCache fills the shapes and dtype c leaves unset with kv's: head
// dims, KV heads (query heads default to them) and the code format.
func (c Config) fromCache(kv *KV) Config {
	if c.HeadDim == 0 {
		c.HeadDim = kv.dim
	}
	if c.VDim == 0 {
		c.VDim = kv.vdim
	}
	if c.KVHeads == 0 {
		c.KVHeads = kv.heads
	}
	if c.QHeads == 0 {
		c.QHeads = c.KVHeads
	}
	if c.DType == fp8.FormatInvalid {
		c.DType = kv.format
	}
	return c
}

// AutoSplits returns the number of splits FA3 picks for this plan
// (get_num_splits, hopper/flash_api.cpp, and num_splits_heuristic,
// hopper/heuristics.h, Dao-AILab/flash-attention and the vLLM fork) on a
// GPU of sms multiprocessors (132 for H100/H200 SXM, 148 for B200) when
// bhk = batch × KV heads (per GPU) run it at once:
//
//	m-blocks       = ⌈queries × (query heads per KV head) / kBlockM⌉   (PackGQA, always on with splits)
//	n-blocks       = ⌈keys loaded / kBlockN⌉, keys loaded = tokens, or min(tokens, window + kBlockM) for a sliding window
//	total m-blocks = bhk × m-blocks
//	if total ≥ 0.8·sms: 1, unless one KV head (tokens × (d + dv) × bytes) exceeds 50 MiB, m-blocks ≥ 2·sms and
//	                    the run is neither causal nor local: then ⌈KV head / 50 MiB⌉ (at most 128)
//	if n-blocks ≤ 4:    1
//	else, for s = 1 … min(128, sms, n-blocks): efficiency(s) = w/⌈w⌉, w = total·s/sms; the smallest s whose
//	                    efficiency is at least 0.85 of the best
//
// A decode (one query token) is never causal for the heuristic (FA3 drops
// the causal flag when seqlen_q is 1). bhk and sms below 1 count as 1.
func (p *Plan) AutoSplits(sms, bhk int) int {
	sms, bhk = max(sms, 1), max(bhk, 1)
	loaded := p.n
	if p.Window > 0 {
		loaded = min(p.n, p.Window+p.KBlockM)
	}
	nBlocks := (loaded + p.KBlockN - 1) / p.KBlockN
	mBlocks := (p.mq*p.group + p.KBlockM - 1) / p.KBlockM
	bytes := 2
	if p.DType.CodeBits() <= 8 {
		bytes = 1
	}
	kvHead := int64(p.n) * int64(p.HeadDim+p.VDim) * int64(bytes)
	causalOrLocal := (p.Causal && p.mq > 1) || p.Window > 0
	return faNumSplits(bhk*mBlocks, sms, nBlocks, mBlocks, kvHead, causalOrLocal, MaxSplits)
}

// faNumSplits is FA3's num_splits_heuristic (see AutoSplits), its float
// arithmetic in float32 as FA3's.
func faNumSplits(total, sms, nBlocks, mBlocks int, kvHead int64, causalOrLocal bool, maxSplits int) int {
	if float32(total) >= 0.8*float32(sms) {
		const l2 = 50 << 20
		if kvHead > l2 && mBlocks >= 2*sms && !causalOrLocal {
			return int(min((kvHead+l2-1)/l2, int64(maxSplits)))
		}
		return 1
	}
	if nBlocks <= 4 {
		return 1
	}
	maxSplits = min(maxSplits, sms, nBlocks)
	eff := make([]float32, maxSplits)
	var best float32
	for s := 1; s <= maxSplits; s++ {
		waves := float32(total*s) / float32(sms)
		eff[s-1] = waves / float32(math.Ceil(float64(waves)))
		best = max(best, eff[s-1])
	}
	for s := 1; s <= maxSplits; s++ {
		if float64(eff[s-1]) >= 0.85*float64(best) {
			return s
		}
	}
	return 1
}
