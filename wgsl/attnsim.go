package wgsl

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
)

// SimDecode runs the decode path of package attention's FA3 simulator on
// the GPU (attnsim.wgsl) and returns what attention.Run returns for the
// same arguments, bit for bit: O laid out [QHeads][HeadDim], each value
// the kernel's FP32 result held in a float64.
//
// q holds one query per query head (QHeads·HeadDim values), qScale its
// descales (nil, one, or one per KV head), kv the cache. cfg is read as
// attention.Run reads it, limited to what the WGSL kernel runs: a dtype
// e4m3, e5m2, bf16 or f16 (the cache's), one emulated tensor-core model for
// both GEMMs (one of [Emulations] reading the dtype: for bf16 and f16 the
// 16-bit step's row of [StepShapes], a T-FDPA model of 16 or 32 elements,
// steps of 8 or 16 products, F <= 25, RZ-FP32 such as sm90.wgmma.bf16.f32,
// sm100.tcgen05.f16.f32 and sm80.mma.sync.bf16.f32; empty means the
// dtype's sm90 wgmma model), head_dim 64, 128 or 256 (V's too), any GQA
// group, per-tensor or per-KV-head scales, no sinks, mask or query
// position other than the last (causal then masks nothing), promotion
// never (0), every tile (1) or every N tiles, kBlockN a
// multiple of 32 up to 256 (0: FA3's default), sliding window, split-KV
// decode (cfg.Splits 0 to attention.MaxSplits, see below), and not
// cfg.Float64. Every default is attention's: the run is cfg.Plan for one
// query over kv (attention.Config.Plan), the plan attention.Run executes.
// The query's cast to the dtype (q / q_descale, the quantization before
// the kernel) is done on the host with package fp8.
//
// A block-scaled cache (attention's PathBlockScaled: mxfp8, nvfp4, mxfp4)
// runs natively: both GEMMs through its tcgen05 block-scaled instruction
// (empty models: attention.BlockScaledModel of the format; the dtype is the
// element format, e4m3 or e2m1), K's and V's block scales read from the
// cache, Q block-quantized on the host (attention.QuantizeBlock), P per
// block of 32/16 tokens of the tile in the shader, kBlockN FA3's fp8 one
// rounded up to the instruction's K (see attnsimblock.go).
//
// Everything the kernel computes is integer arithmetic on FP32 and FP8 bit
// patterns, so that no driver can contract, reassociate or flush it: both
// GEMMs through the T-FDPA functions of tfdpa.wgsl (the same instructions
// as [Runner.Chain]); S × scale_log2, l·alpha, O·alpha, acc_scale
// products, (1/l)·v_descale and the final O scale through an integer FP32
// multiply and divide (round to nearest even, subnormals kept); the
// subtractions, + 8, the row sum and the promotion adds through the
// integer FP32 adder; P's cast through fp8_encode (bf16, f16: half_encode,
// RNE with subnormals, as fp8.Format.Encode); and exp2 through a
// correctly rounded integer exp2 (a 64-bit fixed-point evaluation: two
// 64-entry tables and a degree-4 polynomial, error below about 2^-60
// relative, rounded once). The simulator computes exp2 as
// float32(math.Exp2(float64(x))), which is also correctly rounded except
// where 2^x lies within a float64 rounding error of a midpoint between
// two float32 values: checked on every float32 in [−160, 130] (2.25e9
// inputs, TestSimExp2 with FP8LAB_EXP2_EXHAUSTIVE=1, about 2 minutes on
// lavapipe), the integer exp2 is correctly rounded everywhere and Go's
// expression (amd64, pure-Go math.Exp2) differs from it on exactly two
// inputs (2^x within 1e-16 relative of a midpoint), which the shader
// returns as Go does. So the whole output is bit-exact, not only its
// integer parts. (On arm64 and loong64, math.Exp2 is assembly and may
// round other rare inputs differently.)
// The one exception is the payload of a NaN, always the canonical
// 0x7fffffff here.
//
// One workgroup runs one split of one query head through the split's tiles
// in the simulator's order (newest first, one FP32 step after another, the
// row sum in key order); the tiles are cut into dispatches that carry m,
// l, acc_scale, O and the tensor-core accumulator in a buffer (lavapipe's
// loop limit). Without splits (cfg.Splits 0 or 1) the one split is every
// tile the query visits. With S > 1 splits the tiles are cut as
// attention.Plan.SplitRange cuts them, each split runs from its own m, l
// and accumulators (promotion counted from its first tile, empty splits
// included) and finalizes O_s = acc·((1/l_s)·v_descale) in the shader;
// the host computes lse_s = attention.LSE(m_s, l_s) from the m_s and l_s
// the shader leaves and merges the splits with attention.CombineSplits,
// so the combine is attention's own. The S workgroups of a query head run
// in parallel, which is where a GPU gains from splits on a long context.
func (r *Runner) SimDecode(ctx context.Context, cfg attention.Config, q, qScale []float32, kv *attention.KV) ([]float64, error) {
	out, err := r.SimDecodeTrials(ctx, cfg, qScale, kv, []SimTrial{{Q: q}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// SimTrial is one decode of a batch that [Runner.SimDecodeTrials] runs over
// one shared cache: its query (QHeads·HeadDim values) and the tokens its
// cache holds in place of the shared cache's (a needle, attention sinks).
type SimTrial struct {
	Q      []float32
	Tokens []SimToken
}

// SimToken replaces token Pos of KV head Head by the codes K and V
// (HeadDim each, in the cache's format, as attention.KV.TokenCodes gives
// them).
//
// On a block-scaled cache (mxfp8, nvfp4, mxfp4) a token also carries the
// scales it changes: KScales, its HeadDim/Block K scale codes, and, since
// writing a token re-quantizes V's block of Block consecutive tokens
// holding it, that block: VBlock, per channel its Block element codes
// (channel-major), and VScales, per channel its scale code. [SimTokenOf]
// reads all of it from a cache with the token written in.
type SimToken struct {
	Pos, Head int
	K, V      []uint16
	KScales   []uint8
	VBlock    []uint8
	VScales   []uint8
}

// SimDecodeTrials runs len(trials) decodes at once over the shared cache kv:
// trial i returns, bit for bit, what SimDecode (and so attention.Run) returns
// for trials[i].Q on a copy of kv with trials[i].Tokens written in. The
// batch is one set of dispatches with a workgroup per trial, query head and
// split, so that a GPU runs the trials in parallel without a copy of the
// cache per trial (a needle-in-a-haystack experiment: one haystack, a
// needle per trial); batches hold at most 65535 workgroups (a trial of more
// runs alone, its workgroups over two grid dimensions). Each trial
// replaces at most 256 tokens; cfg, qScale and kv are read as SimDecode
// reads them. It is SimDecodeBatch with one job.
func (r *Runner) SimDecodeTrials(ctx context.Context, cfg attention.Config, qScale []float32, kv *attention.KV, trials []SimTrial) ([][]float64, error) {
	out, err := r.SimDecodeBatch(ctx, []SimJob{{Cfg: cfg, QScale: qScale, KV: kv, Trials: trials}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// SimJob is one SimDecodeTrials call of a [Runner.SimDecodeBatch].
type SimJob struct {
	Cfg    attention.Config
	QScale []float32
	KV     *attention.KV
	Trials []SimTrial
	// Packed, when set, is KV packed ahead by PackSimCache (for example
	// while the GPU runs the jobs before): used instead of packing KV in
	// the call when it was packed from this KV for a plan of the same
	// layout, else ignored (the outputs are the same either way).
	Packed *SimPackedCache
}

// SimPackedCache is a cache packed on the host as SimDecodeBatch packs it
// for the GPU (codes to 32-bit words, V's rows padded to the plan's
// tiles), made ahead by PackSimCache. It holds a copy of the codes: it
// describes the cache as it was when packed.
type SimPackedCache struct {
	kv     *attention.KV
	layout string
	words  []uint32
}

// PackSimCache packs kv for the jobs of configuration cfg (a SimJob's Cfg
// and QScale) ahead of a SimDecodeBatch call, on every core: the host work
// of the call that depends only on the cache. A configuration the
// simulator refuses is refused here too; a block-scaled cache is not
// packed ahead (nil, nil: the call packs it).
func PackSimCache(cfg attention.Config, qScale []float32, kv *attention.KV) (*SimPackedCache, error) {
	if kv == nil {
		return nil, fmt.Errorf("wgsl: PackSimCache: no KV cache")
	}
	pl, err := cfg.Plan(1, qScale, kv)
	if err != nil {
		return nil, fmt.Errorf("wgsl: PackSimCache: %w", err)
	}
	// The plan of a trial with no replaced tokens: the cache's layout does
	// not depend on the trials.
	c := pl.Config
	p, err := planSim(cfg, qScale, kv, []SimTrial{{Q: make([]float32, c.QHeads*c.HeadDim)}})
	if err != nil {
		return nil, err
	}
	if p.blk != nil {
		return nil, nil
	}
	words, _ := p.packCache(packPool.get(p.cacheWords()), kv)
	return &SimPackedCache{kv: kv, layout: p.cacheLayout(), words: words}, nil
}

// Release gives c's words back for a later PackSimCache to reuse (no page
// faults on a fresh buffer): call it once no SimDecodeBatch call that was
// given c is running, and give c to no call after; one that is given it
// packs the cache itself (the outputs are the same). Releasing twice, or
// a nil c, does nothing.
func (c *SimPackedCache) Release() {
	if c == nil || c.words == nil {
		return
	}
	packPool.put(c.words)
	c.words, c.kv = nil, nil
}

// cacheLayout names what packCache's words depend on besides the codes.
func (p *simPlan) cacheLayout() string {
	return fmt.Sprintf("d%d n%d h%d bits%d vs%d", p.d, p.tokens, p.kvHeads, p.e.Bits, p.vStride())
}

// SimDecodeBatch runs several SimDecodeTrials calls at once: out[j][i] is,
// bit for bit, SimDecodeTrials(ctx, jobs[j].Cfg, jobs[j].QScale,
// jobs[j].KV, jobs[j].Trials)[i], and every job is checked as that call
// checks it (the error names the job). Jobs whose plans differ at most in
// the promotion interval, the query and V descales and the cache's
// contents (caches of one shape and format, the same head_dim, heads,
// models, kBlockN, tokens, splits and window), for example the haystacks
// and promotion intervals of a needle experiment, share their dispatches:
// a workgroup per trial, query head and split of all of them, so that a
// GPU of many multiprocessors runs them side by side; each distinct cache
// (by pointer) is packed and uploaded once however many of those jobs
// read it. Other jobs run in turn, in the order given. A submission holds
// at most 65535 workgroups (a trial of more runs alone) and a buffer of
// caches and replacements within the device's storage binding limit
// (Info().MaxStorageBinding; a single cache that does not fit is refused
// by the device); a larger batch is cut between jobs or between the
// trials of one. Calls made at the same time share submissions as the
// jobs of one call do (simqueue.go): a call that arrives while the device
// runs another's waits and goes with every call queued by then. A call
// whose ctx ends returns ctx.Err() once no pack or upload reads its
// inputs. The caches must not change during the call.
func (r *Runner) SimDecodeBatch(ctx context.Context, jobs []SimJob) ([][][]float64, error) {
	if err := r.wait(); err != nil { // r.info below
		return nil, err
	}
	parts := make([]simPart, len(jobs))
	for j, job := range jobs {
		p, err := planSim(job.Cfg, job.QScale, job.KV, job.Trials)
		if err != nil {
			if len(jobs) > 1 {
				err = fmt.Errorf("job %d: %w", j, err)
			}
			return nil, err
		}
		parts[j] = simPart{p: p, kv: job.KV, trials: job.Trials, job: j, packed: job.Packed}
	}
	return r.simRun(ctx, parts, len(jobs))
}

// simPart is the trials of one job of a batch (all of them, or a range)
// with the job's plan and cache.
type simPart struct {
	p      *simPlan
	kv     *attention.KV
	trials []SimTrial
	job    int
	packed *SimPackedCache // the job's cache packed ahead, or nil
	req    *simReq         // the SimDecodeBatch call of the job (simRun), or nil
}

// simChunks cuts the parts into the submissions of a batch: the parts of
// one batchKey together (keys in order of first appearance, parts in the
// jobs' order), at most rows workgroups and words of B (caches, meta words
// and replacements) a chunk unless one trial alone needs more; a part is
// cut between its trials where needed.
func simChunks(parts []simPart, rows, words int) [][]simPart {
	var keys []string
	groups := map[string][]simPart{}
	for _, pt := range parts {
		k := pt.p.batchKey()
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], pt)
	}
	var chunks [][]simPart
	for _, k := range keys {
		var cur []simPart
		curRows, curWords := 0, 0
		seen := map[*attention.KV]bool{}
		for _, pt := range groups[k] {
			per := pt.p.qHeads * pt.p.splits
			lo := 0
			for i, tr := range pt.trials {
				w := simMetaWords + pt.p.trialWords(tr)
				if !seen[pt.kv] {
					w += pt.p.cacheWords()
				}
				if curRows > 0 && (curRows+per > rows || curWords+w > words) {
					if i > lo {
						cut := pt
						cut.trials = pt.trials[lo:i]
						cur = append(cur, cut)
					}
					chunks = append(chunks, cur)
					cur, curRows, curWords, seen, lo = nil, 0, 0, map[*attention.KV]bool{}, i
					w = simMetaWords + pt.p.trialWords(tr) + pt.p.cacheWords()
				}
				seen[pt.kv] = true
				curRows += per
				curWords += w
			}
			if lo < len(pt.trials) {
				cut := pt
				cut.trials = pt.trials[lo:]
				cur = append(cur, cut)
			}
		}
		if len(cur) > 0 {
			chunks = append(chunks, cur)
		}
	}
	return chunks
}

// batchKey identifies the plans whose trials can share dispatches: the
// same kernel (every constant of the module) and the same layout and
// tiles; the promotion interval, the query and V descales and the cache's
// contents may differ.
func (p *simPlan) batchKey() string {
	cs, err := p.consts()
	if err != nil {
		return fmt.Sprintf("%p", p) // consts fails again in simDecode, with its error
	}
	return fmt.Sprint((&kernelSpec{file: "attnsim", include: simIncludes, entry: "decode", consts: cs}).key(), p.tokens, p.nMax, p.nMin, p.winLo, p.splits, p.tps, p.kvHeads, p.qHeads, p.ranges)
}

// maxSimTokens is the most tokens one trial of SimDecodeTrials replaces.
const maxSimTokens = 256

// maxSimRows is the most workgroups (trial × query head × split) of one
// batch of SimDecodeTrials and along x: WebGPU's 65535 workgroups per
// dimension. A variable only so that a test can run the batching and the
// y dimension on a small problem.
var maxSimRows = 65535

// simPlan is a validated SimDecode: attention's Plan and what the WGSL
// kernel takes of it.
type simPlan struct {
	cfg               attention.Config // the plan's config, every default resolved
	e                 *Emulation
	blk               *simBlock // the block-scaled path, or nil
	d, kbn, group     int
	qHeads, kvHeads   int
	tokens            int
	nMax, nMin, winLo int // the visited tiles, the first key in the window
	// splits is the number of split-KV ranges (1: none); ranges holds per
	// split its newest tile + 1 and its tile count (Plan.SplitRange); tps
	// is the most tiles of a split.
	splits, tps         int
	ranges              []uint32
	qScale              []float32 // per KV head
	scaleLog2, vDescale []float32
	// maxTok and maxTiles: the most tokens and V tiles a trial replaces
	// (the kernel searches them per key and per tile).
	maxTok, maxTiles int
}

func scaleAt(s []float32, h int) float32 {
	if len(s) == 1 {
		return s[0]
	}
	return s[h]
}

// SimDecodeSupports reports whether SimDecode runs the configuration cfg,
// whatever the cache: nil, or an error naming every limit cfg passes (the
// limits of SimDecode's doc). HeadDim, KVHeads and DType must be set (they
// are not taken from a cache here); cfg is resolved by attention
// (Config.Resolve, or ResolveSpec for a block-scaled instruction), whose
// defaults (empty models: the dtype's sm90 wgmma model) and limits apply,
// and then checked against the simulator's own limits. A cache of that head_dim, heads and dtype, with per-tensor
// or per-head scales, is then accepted too. A block-scaled instruction
// (sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32, sm100.tcgen05.mxf4.f32,
// sm100.tcgen05.mxf4nvf4.ue4m3.f32, or another reading the same element
// format, scale format and block) with its element format as dtype, or
// dtype e2m1 with empty models, names the native path: a block-scaled
// cache of that instruction's format is accepted. Splits may be 0 to
// attention.MaxSplits (128), each run as SimDecode says.
func SimDecodeSupports(cfg attention.Config) error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if pl, err := resolveAlone(cfg); err != nil {
		bad("%v", err)
	} else {
		cfg = pl.Config // attention's defaults: heads, models, tiles, splits
	}
	simConfig(cfg, bad)
	if len(errs) > 0 {
		return fmt.Errorf("wgsl: SimDecode: %s", strings.Join(errs, "; "))
	}
	return nil
}

// resolveAlone resolves cfg as attention does for one decode query without
// a cache: over the tokens up to its query position (one token when it
// names none), of the block-scaled format its instruction reads, or, for
// dtype e2m1 with empty models, of the first e2m1 block format (the limits
// on the config alone are the same for each).
func resolveAlone(cfg attention.Config) (*attention.Plan, error) {
	n := 1
	if len(cfg.Positions) == 1 {
		n = max(1, cfg.Positions[0]+1)
	}
	if blk, err := simBlockOf(cfg.QKModel); err == nil {
		return cfg.ResolveSpec(1, n, attention.KVSpec{Format: blk.format(), Path: attention.PathBlockScaled})
	}
	if cfg.QKModel == "" && cfg.DType == fp8.FormatE2M1 {
		for _, f := range simBlockFormats() {
			if f.Elem() == cfg.DType {
				return cfg.ResolveSpec(1, n, attention.KVSpec{Format: f, Path: attention.PathBlockScaled})
			}
		}
	}
	return cfg.Resolve(1, n)
}

// simConfig checks what SimDecode needs of cfg alone beyond attention's
// own limits (cfg is resolved: attention.Config.Plan or Resolve filled in
// its defaults and checked it), calling bad for each limit passed, and
// returns the emulation of its model (nil when bad was called for it), or
// on the block-scaled path nil and the instruction (nil when cfg names
// none: the cache's).
func simConfig(cfg attention.Config, bad func(format string, a ...any)) (*Emulation, *simBlock) {
	if cfg.HeadDim != 64 && cfg.HeadDim != 128 && cfg.HeadDim != 256 {
		bad("head_dim %d is not one of 64, 128, 256", cfg.HeadDim)
	}
	qk, pv := cfg.QKModel, cfg.PVModel
	blk, blkErr := simBlockOf(qk)
	if blkErr == nil || (qk == "" && cfg.DType == fp8.FormatE2M1) {
		simCommon(cfg, bad)
		switch {
		case qk != pv:
			bad("QK model %s and PV model %s differ: the WGSL simulator runs one model for both", qk, pv)
		case blk == nil: // e2m1 with the cache's instruction
		case blk.elem != cfg.DType:
			bad("model %s reads %s, the dtype is %s", qk, blk.elem, cfg.DType)
		case cfg.HeadDim%blk.k != 0:
			bad("head_dim %d is not a multiple of %s's K = %d", cfg.HeadDim, qk, blk.k)
		}
		return nil, blk
	}
	switch cfg.DType {
	case fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatBF16, fp8.FormatFP16:
	default:
		bad("dtype %s: the WGSL simulator reads e4m3, e5m2, bf16 or f16, or e4m3/e2m1 block-scaled caches with a block-scaled instruction (%v)", cfg.DType, simBlockModels())
	}
	simCommon(cfg, bad)
	if qk == "" || pv == "" {
		return nil, nil // attention could not resolve the models: its error says why
	}
	switch em, err := LookupEmulation(qk); {
	case qk != pv:
		bad("QK model %s and PV model %s differ: the WGSL simulator runs one model for both", qk, pv)
	case err != nil:
		bad("%v", err)
	case em.In != cfg.DType:
		bad("model %s reads %s, the dtype is %s", qk, em.In, cfg.DType)
	default:
		return em, nil
	}
	return nil, nil
}

// simCommon checks the limits of cfg that do not depend on the dtype and
// that attention itself does not have: what the kernel does not read must
// not be set (it would be ignored).
func simCommon(cfg attention.Config, bad func(format string, a ...any)) {
	if cfg.Float64 {
		bad("Float64 mode is not run on the GPU")
	}
	if len(cfg.Sinks) > 0 {
		bad("attention sinks are not in the WGSL simulator")
	}
	if cfg.Mask != nil {
		bad("a mask is not in the WGSL simulator")
	}
	if cfg.VDim != 0 && cfg.VDim != cfg.HeadDim {
		bad("V head dim %d differs from head_dim %d (MLA): not in the WGSL simulator", cfg.VDim, cfg.HeadDim)
	}
	if len(cfg.Positions) > 1 {
		bad("%d query positions: decode is one query at the last position", len(cfg.Positions))
	}
}

// planSim validates a SimDecodeTrials call and resolves it: attention's
// Plan (cfg.Plan for one query over kv) fills in every default (head dims,
// heads, dtype, models, kBlockN, softmax scale, splits, scale_log2 and
// v_descale per KV head, the tile range) as attention.Run does; planSim
// adds only the WGSL simulator's own limits (simConfig on the plan's
// config, kBlockN a multiple of 32, the decode position, the trials).
func planSim(cfg attention.Config, qScale []float32, kv *attention.KV, trials []SimTrial) (*simPlan, error) {
	if kv == nil {
		return nil, fmt.Errorf("wgsl: SimDecode: no KV cache")
	}
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	fail := func() error { return fmt.Errorf("wgsl: SimDecode: %s", strings.Join(errs, "; ")) }
	// A block-scaled instruction named for a cache it does not read: say
	// which formats differ (the plan refuses it in its own terms too).
	if blk, err := simBlockOf(cfg.QKModel); err == nil {
		blk.checkCache(kv, cfg.QKModel, bad)
	}
	pl, err := cfg.Plan(1, qScale, kv)
	if err != nil {
		bad("%v", err)
		return nil, fail()
	}
	c := pl.Config // every default resolved
	sc := c
	if c.VDim != c.HeadDim { // a V narrower than K: the cache's (named once)
		bad("the cache's V head_dim %d differs from its K head_dim %d: the WGSL simulator runs V as wide as K", c.VDim, c.HeadDim)
		sc.VDim = sc.HeadDim
	}
	e, blk := simConfig(sc, bad)
	if blk != nil {
		e = blockHostEmulation()
	}
	n := pl.Tokens()
	if len(c.Positions) == 1 && c.Positions[0] != n-1 {
		bad("query position %d: decode is the query at the last position, %d", c.Positions[0], n-1)
	}
	if kv.BlockScaled() && blk == nil {
		bad("a block-scaled %s cache is read by its block-scaled instruction (%s), not %s", kv.BlockFormat(), simBlockModels(), c.QKModel)
	}
	if len(trials) == 0 {
		bad("no trials")
	}
	maxTok, maxTiles := 0, 0
	for i, tr := range trials {
		if len(tr.Q) != c.QHeads*c.HeadDim {
			bad("%d query values: decode takes one query per query head (%d × %d)", len(tr.Q), c.QHeads, c.HeadDim)
			break
		}
		if len(tr.Tokens) > maxSimTokens {
			bad("trial %d replaces %d tokens, more than %d", i, len(tr.Tokens), maxSimTokens)
			break
		}
		seen := map[[2]int]bool{}
		for _, tk := range tr.Tokens {
			switch {
			case tk.Pos < 0 || tk.Pos >= n || tk.Head < 0 || tk.Head >= c.KVHeads:
				bad("trial %d replaces token %d of KV head %d, outside the cache's %d tokens × %d heads", i, tk.Pos, tk.Head, n, c.KVHeads)
			case len(tk.K) != c.HeadDim || len(tk.V) != c.HeadDim:
				bad("trial %d token %d: %d K and %d V codes, want %d each", i, tk.Pos, len(tk.K), len(tk.V), c.HeadDim)
			case blk != nil && (len(tk.KScales) != c.HeadDim/blk.b || len(tk.VScales) != c.HeadDim || len(tk.VBlock) != c.HeadDim*blk.b):
				bad("trial %d token %d: %d K scales, %d V block codes and %d V scales, a block-scaled cache wants %d, %d and %d (SimTokenOf)",
					i, tk.Pos, len(tk.KScales), len(tk.VBlock), len(tk.VScales), c.HeadDim/blk.b, c.HeadDim*blk.b, c.HeadDim)
			case seen[[2]int{tk.Pos, tk.Head}]:
				bad("trial %d replaces token %d of KV head %d twice", i, tk.Pos, tk.Head)
			}
			seen[[2]int{tk.Pos, tk.Head}] = true
		}
		maxTok = max(maxTok, len(tr.Tokens))
		maxTiles = max(maxTiles, len(tr.Tokens)) // at most one tile each
	}
	if c.KBlockN < 32 || c.KBlockN%32 != 0 {
		bad("kBlockN %d is not a multiple of 32 in 32..%d", c.KBlockN, attention.MaxKBlockN)
	}
	if len(errs) > 0 {
		return nil, fail()
	}
	p := &simPlan{cfg: c, e: e, blk: blk, d: c.HeadDim, kbn: c.KBlockN, group: pl.Group(), qHeads: c.QHeads, kvHeads: c.KVHeads,
		tokens: n, splits: c.Splits, maxTok: maxTok, maxTiles: maxTiles}
	p.nMin, p.nMax = pl.TileRange(0)
	if c.Window > 0 {
		p.winLo = max(0, n-c.Window) // the first key in the last query's window
	}
	// Each split's tiles as attention's Plan cuts them: the shader reads
	// the newest tile and the count of each.
	for s := 0; s < p.splits; s++ {
		lo, hi := pl.SplitRange(p.nMin, p.nMax, s)
		p.ranges = append(p.ranges, uint32(hi), uint32(max(0, hi-lo)))
		p.tps = max(p.tps, hi-lo)
	}
	for h := 0; h < p.kvHeads; h++ {
		p.qScale = append(p.qScale, pl.QScale(h))
		p.scaleLog2 = append(p.scaleLog2, pl.ScaleLog2(h))
		p.vDescale = append(p.vDescale, pl.VDescale(h))
	}
	return p, nil
}

// simWG is the workgroup size: every key of a tile and every dimension of
// O has an invocation.
func (p *simPlan) wg() int { return max(p.kbn, p.d) }

// simIncludes are the library files of attnsim.wgsl's module: the T-FDPA
// step and the block-scaled path with its step.
var simIncludes = []string{"tfdpa_step", "attnblock", "blockstep"}

func (p *simPlan) consts() ([]constDecl, error) {
	var err error
	spec := e4m3Spec // the block-scaled path quantizes P in bs_quant_p
	if p.blk == nil {
		if spec, err = castSpec(p.cfg.DType); err != nil {
			return nil, err
		}
	}
	var cs []constDecl
	for _, c := range p.e.consts() {
		if c.name != "WG" {
			cs = append(cs, c)
		}
	}
	cs = append(cs, p.blockConsts()...)
	cs = append(cs, cU32("WG", p.wg()), cU32("D", p.d), cU32("KBN", p.kbn), cU32("GROUP", p.group), cU32("QHEADS", p.qHeads),
		cU32("E_MBITS", spec.mbits), cI32("E_EMIN", spec.emin), cU32("E_MAX", spec.maxCode), cU32("E_OVER", spec.overCode), cU32("E_NAN", spec.nanCode))
	for k, c := range exp2Coeffs() {
		cs = append(cs, cU32(fmt.Sprintf("EXC%dH", k+1), int(c>>32)), cU32(fmt.Sprintf("EXC%dL", k+1), int(uint32(c))))
	}
	return cs, nil
}

// castSpec is what the P cast (fp8_encode, or half_encode for 16-bit
// codes, which reads mbits, emin and maxCode) needs of the dtype.
func castSpec(f fp8.Format) (fp8Spec, error) {
	switch f {
	case fp8.FormatBF16, fp8.FormatFP16:
		inf := int(f.MaxCode()) + 1
		return fp8Spec{mbits: f.FracBits(), emin: f.Emin(), maxCode: inf - 1, overCode: inf, nanCode: inf | 1<<(f.FracBits()-1)}, nil
	}
	return specOf(f)
}

// loop iterations of one 32-element instruction in the worst case (as
// Emulation.instrPerDispatch counts them).
func (e *Emulation) instrIterations() int {
	wps, lpw := e.words()
	steps := 32 / e.L
	if e.MMASync {
		steps = 2
	}
	return steps*(wps+2*wps*lpw+32+1) + 2
}

// tilesPerDispatch keeps every invocation's loop iterations per dispatch
// under loopBudget: invocation 0 runs a QK chain, the max and sum loops and
// a PV chain per tile.
func (p *simPlan) tilesPerDispatch() int {
	if p.blk != nil {
		return p.blockTilesPerDispatch()
	}
	tile := (p.d/32+p.kbn/32)*p.e.instrIterations() + 2*p.kbn + 8 + p.maxTok + p.maxTiles
	return max(1, (loopBudget-256/p.wg()-64)/tile)
}

// cpw is the number of codes in a u32 word: 4 FP8 codes, 2 16-bit codes.
func (p *simPlan) cpw() int { return 32 / p.e.Bits }

// Words per query head of A and of the state.
func (p *simPlan) aWords() int {
	w := (p.d + p.kbn) / p.cpw()
	if p.blk != nil {
		w += p.d/p.blk.b + p.kbn/p.blk.b // the scales of Q and P
	}
	return w
}
func (p *simPlan) stWords() int { return 4 + 2*p.d }

// xtable returns XT for the parts of a submission: the exp2 tables
// (2^(j/64) and 2^(j/4096), j < 64, as Q1.63 hi/lo words), the first
// part's scale_log2 and v_descale per KV head (at 256), the block-scaled
// path's tables (at BT = 256 + 2·KV heads), the split ranges at word
// ranges (per split its newest tile + 1 and its tile count), then the
// other parts' scale pairs; xs[k] is the offset of part k's pairs.
func xtable(parts []simPart) (t []uint32, ranges int, xs []int) {
	p := parts[0].p
	t = exp2Tables()
	scales := func(q *simPlan) {
		xs = append(xs, len(t))
		for h := range q.scaleLog2 {
			t = append(t, math.Float32bits(q.scaleLog2[h]), math.Float32bits(q.vDescale[h]))
		}
	}
	scales(p)
	if p.blk != nil {
		t = append(t, p.blk.tables()...) // at BT = len(t)
	}
	ranges = len(t)
	t = append(t, p.ranges...)
	for _, pt := range parts[1:] {
		scales(pt.p)
	}
	return t, ranges, xs
}

// perSplit returns the rows of A (aWords each, one per trial and query
// head) repeated for every split: the workgroup of each split has its own
// P scratch after the query.
func (p *simPlan) perSplit(a []uint32) []uint32 {
	if p.splits == 1 {
		return a
	}
	aw := p.aWords()
	out := make([]uint32, 0, len(a)*p.splits)
	for r := 0; r < len(a)/aw; r++ {
		for range p.splits {
			out = append(out, a[r*aw:(r+1)*aw]...)
		}
	}
	return out
}

// simMetaWords is the META of attnsim.wgsl: the words per trial at
// U.ov_meta (its replacement ranges, promotion interval, cache offsets in
// B and scale offset in XT).
const simMetaWords = 10

// simCache is where one cache lies in B: the word offsets of its K codes,
// V codes and (block-scaled) K and V scales. A cache packed ahead is not
// copied into the slice of B's other words: src holds its words, which
// start at word at of B.
type simCache struct {
	k, v, ks, vs int
	src          []uint32
	at           int
}

// words returns B's words from word off on, b being the slice of B that
// holds the words other than the caches packed ahead (c.src); off lies in
// c when c was packed ahead.
func (c simCache) words(b []uint32, off int) []uint32 {
	if c.src != nil {
		return c.src[off-c.at:]
	}
	return b[off:]
}

// cacheAt is where packCache puts a cache that starts at word off of B:
// K's rows, then V's (the FP8 and 16-bit paths).
func (p *simPlan) cacheAt(off int) simCache {
	return simCache{k: off, v: off + p.kvHeads*p.tokens*p.d/p.cpw()}
}

// vStride is the words of a V row in B: the tiles' padded token axis.
func (p *simPlan) vStride() int { return p.nMax * p.kbn / p.cpw() }

// cacheWords is the size of one packed cache in B, in words.
func (p *simPlan) cacheWords() int {
	d, n := p.d, p.tokens
	w := p.kvHeads*n*d/p.cpw() + p.kvHeads*d*p.vStride()
	if p.blk != nil {
		w += p.kvHeads*n*d/p.blk.b + p.kvHeads*d*(p.nMax*p.kbn/p.blk.b)
	}
	return w
}

// trialWords bounds the words trial tr adds to B after the meta words:
// per replaced token its K row (and K scales) and at most one V tile (and
// its scales), and their table entries.
func (p *simPlan) trialWords(tr SimTrial) int {
	d, kbn, cpw := p.d, p.kbn, p.cpw()
	per := d/cpw + 3 + d*kbn/cpw + 3
	if p.blk != nil {
		per += d/p.blk.b + d*kbn/p.blk.b
	}
	return len(tr.Tokens) * per
}

// parallelRows calls fn(lo, hi) over [0, rows) in ranges on every core
// (GOMAXPROCS) when the work (rows × perRow elements) is large, else once
// on the caller's goroutine. fn must write only the rows of its range.
func parallelRows(rows, perRow int, fn func(lo, hi int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers <= 1 || rows*perRow < 1<<18 || rows < 2 {
		fn(0, rows)
		return
	}
	chunk := max(1, (1<<16)/max(perRow, 1)) // about 64Ki elements a range
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, (rows+chunk-1)/chunk) {
		wg.Go(func() {
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= rows {
					return
				}
				fn(lo, min(lo+chunk, rows))
			}
		})
	}
	wg.Wait()
}

// packQ lays out A's rows of trials (one per trial and query head, aWords
// each): Q's codes (host-side cast, as attention's setRow; block-scaled:
// block-quantized with its scales, as attention's setQueryBlock), then room
// for P.
func (p *simPlan) packQ(trials []SimTrial) ([]uint32, error) {
	if p.blk != nil {
		return p.packQBlock(trials)
	}
	d, cpw, cb := p.d, p.cpw(), uint(p.e.Bits)
	mask := uint32(1)<<cb - 1
	aw := p.aWords()
	a := make([]uint32, len(trials)*p.qHeads*aw)
	for ti, tr := range trials {
		for h := 0; h < p.qHeads; h++ {
			row := ti*p.qHeads + h
			qs := scaleAt(p.qScale, h/p.group)
			for i := 0; i < d; i++ {
				c := uint16(p.cfg.DType.Encode(tr.Q[h*d+i]/qs, p.cfg.Saturation))
				a[row*aw+i/cpw] |= uint32(c) & mask << (cb * uint(i%cpw))
			}
		}
	}
	return a, nil
}

// packCache appends kv's codes to B for the FP8 and 16-bit paths: K
// token-major [kv_head][token][D], then V dim-major [kv_head][D][the
// tiles' padded token axis], cpw codes a word (code i of a row in bits
// cb·(i mod cpw)); rows are packed on every core, each row's words its
// own.
func (p *simPlan) packCache(b []uint32, kv *attention.KV) ([]uint32, simCache) {
	d, n, cpw, cb := p.d, p.tokens, p.cpw(), uint(p.e.Bits)
	mask := uint32(1)<<cb - 1
	vStride := p.vStride()
	c := p.cacheAt(len(b))
	// Every word of the cache is written below (the padding of V's rows
	// too), so b grows without zeroing: from a reused buffer (wordPool)
	// neither a page fault nor a clear of 32 MB on one goroutine.
	b = slices.Grow(b, p.cacheWords())[:len(b)+p.cacheWords()]
	kw, vw := b[c.k:c.v], b[c.v:]
	// Codes cpw to a word, in order: K's rows of a head are contiguous
	// (token-major) as in the cache, V's rows (one per head and channel)
	// as the cache's transposed rows, each padded with zero words to
	// vStride words.
	pack := func(dst []uint32, src []uint16) {
		full := len(src) / cpw
		switch {
		case cpw == 2 && mask == 0xffff && littleEndian && full > 0:
			// 16-bit codes two to a word, the first in the low half: on a
			// little-endian host the words' memory is the codes' own.
			copy(unsafe.Slice((*uint16)(unsafe.Pointer(&dst[0])), 2*full), src[:2*full])
		case cpw == 4 && cb == 8 && littleEndian:
			packBytes(dst[:full], src[:4*full])
		case cpw == 4:
			for w := range full {
				s := src[4*w : 4*w+4]
				dst[w] = uint32(s[0])&mask | (uint32(s[1])&mask)<<8 | (uint32(s[2])&mask)<<16 | (uint32(s[3])&mask)<<24
			}
		default:
			for w := range full {
				dst[w] = uint32(src[2*w])&mask | (uint32(src[2*w+1])&mask)<<16
			}
		}
		rest := dst[full:]
		clear(rest)
		for i := full * cpw; i < len(src); i++ { // a partial last word
			rest[0] |= uint32(src[i]) & mask << (cb * uint(i%cpw))
		}
	}
	parallelRows(p.kvHeads*n, d, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			h, t := r/n, r%n
			pack(kw[r*d/cpw:][:d/cpw], kv.KCodes(h)[t*d:][:d])
		}
	})
	parallelRows(p.kvHeads*d, n, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			pack(vw[r*vStride:][:vStride], kv.VCodes(r/d, r%d))
		}
	})
	return b, c
}

// packBytes packs 8-bit codes (src, each below 256 in its low byte; the
// high byte is dropped) four to a word, the first in the low byte: dst[w]
// holds src[4w … 4w+3]. Little-endian hosts only. On amd64 with AVX2 the
// words of whole 32-code blocks are packed by packBytesAsm (masks, then
// unsigned saturating packs: 32 codes in a handful of instructions), the
// rest by packBytesGo.
func packBytes(dst []uint32, src []uint16) {
	src = src[:4*len(dst)]
	if havePackAsm && len(dst) >= 8 {
		blocks := len(dst) / 8
		packBytesAsm(&dst[0], &src[0], blocks)
		dst, src = dst[8*blocks:], src[32*blocks:]
	}
	packBytesGo(dst, src)
}

// packBytesGo is packBytes in Go: four codes are read as one 64-bit word
// and their bytes gathered with shifts and masks.
func packBytesGo(dst []uint32, src []uint16) {
	src = src[:4*len(dst)]
	for w := range dst {
		x := *(*uint64)(unsafe.Pointer(&src[4*w])) & 0x00ff00ff00ff00ff
		x = (x | x>>8) & 0x0000ffff0000ffff
		dst[w] = uint32(x) | uint32(x>>16)
	}
}

// packTrial writes trial tr's replacements into B at word at for the FP8
// and 16-bit paths (b[at:] zero, trialSize(tr) words long with the
// tables that writeAt puts after them): per replaced token its K row, and
// one V tile per (tile, KV head) the trial touches, the codes of the
// trial's cache (at c) with its tokens written in. It returns the trial's
// tables and the word after its replacements. Trials write disjoint
// stretches of b and only read the caches, so that several run at once.
func (p *simPlan) packTrial(b []uint32, at int, c simCache, tr SimTrial) (trialTables, int) {
	d, kbn, cpw, cb := p.d, p.kbn, p.cpw(), uint(p.e.Bits)
	mask := uint32(1)<<cb - 1
	put := func(w *uint32, i int, code uint16) { *w |= uint32(code) & mask << (cb * uint(i%cpw)) }
	vStride := p.vStride()
	tw := kbn / cpw // words per dimension of a V tile
	var tt trialTables
	// Token entries (token, KV head, K row offset) with the K rows.
	for _, tk := range tr.Tokens {
		off := at
		at += d / cpw
		for i := 0; i < d; i++ {
			put(&b[off+i/cpw], i, tk.K[i])
		}
		tt.toks = append(tt.toks, simEntry{tk.Pos, tk.Head, off})
	}
	for _, tk := range tr.Tokens {
		start := tk.Pos / kbn * kbn
		off := tt.tile(start, tk.Head, func() int {
			off := at
			at += d * tw
			for i := 0; i < d; i++ {
				copy(b[off+i*tw:off+(i+1)*tw], c.words(b, c.v+(tk.Head*d+i)*vStride+start/cpw))
			}
			return off
		})
		t := tk.Pos - start
		for i := 0; i < d; i++ {
			w := &b[off+i*tw+t/cpw]
			*w &^= mask << (cb * uint(t%cpw))
			put(w, t, tk.V[i])
		}
	}
	return tt, at
}

// trialSize is the words packTrial and writeAt take in B for tr: a K row
// per replaced token, a V tile per distinct (tile, KV head) its tokens
// touch, and three words per entry of its tables.
func (p *simPlan) trialSize(tr SimTrial) int {
	var tiles [][2]int
	for _, tk := range tr.Tokens {
		if key := [2]int{tk.Pos / p.kbn * p.kbn, tk.Head}; !slices.Contains(tiles, key) {
			tiles = append(tiles, key)
		}
	}
	return len(tr.Tokens)*(p.d/p.cpw()+3) + len(tiles)*(p.d*(p.kbn/p.cpw())+3)
}

// simEntry is one entry of a trial's tables that the kernel searches: a
// replaced token (its position, KV head and the word offset in B of its K
// row) or a V tile the trial patches (the tile's first token, KV head and
// the offset of its words).
type simEntry struct{ pos, head, off int }

// trialTables are one trial's replaced tokens and patched V tiles.
type trialTables struct{ toks, tiles []simEntry }

// tile returns the word offset of the trial's V tile starting at token
// start of KV head head; the first time, add appends the tile's words to B
// and returns their offset.
func (t *trialTables) tile(start, head int, add func() int) int {
	for _, e := range t.tiles {
		if e.pos == start && e.head == head {
			return e.off
		}
	}
	off := add()
	t.tiles = append(t.tiles, simEntry{start, head, off})
	return off
}

// writeAt writes the token and tile tables into b at word at (three
// words an entry), sets the first four of the trial's meta words at
// b[meta:] (tokens from, tiles from, tiles from, end) and returns the word
// after the tables.
func (t *trialTables) writeAt(b []uint32, at, meta int) int {
	e0 := at
	for _, e := range t.toks {
		b[at], b[at+1], b[at+2] = uint32(e.pos), uint32(e.head), uint32(e.off)
		at += 3
	}
	f0 := at
	for _, e := range t.tiles {
		b[at], b[at+1], b[at+2] = uint32(e.pos), uint32(e.head), uint32(e.off)
		at += 3
	}
	b[meta], b[meta+1], b[meta+2], b[meta+3] = uint32(e0), uint32(f0), uint32(f0), uint32(at)
	return at
}

// appendTo is writeAt at the end of b, which it grows by the tables.
func (t *trialTables) appendTo(b []uint32, meta int) []uint32 {
	at := len(b)
	b = append(b, make([]uint32, 3*(len(t.toks)+len(t.tiles)))...)
	t.writeAt(b, at, meta)
	return b
}

// simPacked is one submission of a batch packed on the host: its
// buffers' words, its module and the parameters of its dispatches.
type simPacked struct {
	p                 *simPlan
	parts             []simPart
	total, rows       int
	cs                []constDecl
	tab, a, b, st, xt []uint32
	pieces            [][]uint32 // B's words after b: the caches packed ahead
	ranges, meta      int
	vsStride, per, gx int
	dispatches, gy    int
}

// simSubmit uploads the packed submission pk, runs it and reads its
// outputs back, per part.
func (r *Runner) simSubmit(ctx context.Context, pk *simPacked, uploaded func()) ([][][]float64, error) {
	reg := trace.StartRegion(ctx, "wgsl: wait for the device")
	err := r.lock()
	reg.End()
	if err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	if err := ctx.Err(); err != nil { // every caller stopped waiting while the device was busy
		return nil, err
	}
	reg = trace.StartRegion(ctx, "wgsl: upload a batch")
	bufs, calls, err := r.uploadSim(pk)
	reg.End()
	if err == nil && uploaded != nil {
		uploaded()
	}
	defer func() {
		for _, x := range bufs {
			r.be.free(x)
		}
	}()
	if err != nil {
		return nil, err
	}
	reg = trace.StartRegion(ctx, "wgsl: run a batch's kernels (pipelines compiled on first use)")
	_, err = r.be.run(ctx, calls, false)
	reg.End()
	if err != nil {
		return nil, err
	}
	reg = trace.StartRegion(ctx, "wgsl: read back")
	raw, err := r.be.read(ctx, bufs[3], uint64(4*len(pk.st)))
	reg.End()
	if err != nil {
		return nil, err
	}
	all := pk.p.combine(bytesU32(raw), pk.total)
	out := make([][][]float64, len(pk.parts))
	for k, pt := range pk.parts {
		out[k], all = all[:len(pt.trials)], all[len(pt.trials):]
	}
	return out, nil
}

// packSim packs a submission's buffers on the host.
func packSim(parts []simPart) (*simPacked, error) {
	p := parts[0].p
	cs, err := p.consts()
	if err != nil {
		return nil, err
	}
	pk := &simPacked{p: p, parts: parts, cs: cs}
	for _, pt := range parts {
		pk.total += len(pt.trials)
	}
	// B is the caches packed now, the meta words and the trials' words,
	// padded to their bound (tail words), then the caches packed ahead,
	// uploaded from where they lie (pieces): their offsets are known
	// before the trials are packed, and appending never copies.
	tail := simMetaWords * pk.total
	counted := map[*attention.KV]bool{}
	var ahead []*SimPackedCache
	for _, pt := range parts {
		if !counted[pt.kv] {
			counted[pt.kv] = true
			if pk := pt.packed; p.blk == nil && pk != nil && pk.kv == pt.kv && pk.layout == p.cacheLayout() {
				ahead = append(ahead, pk)
			} else {
				tail += p.cacheWords()
			}
		}
		for _, tr := range pt.trials {
			tail += p.trialWords(tr)
		}
	}
	b := make([]uint32, 0, tail)
	caches := map[*attention.KV]simCache{}
	at := tail
	for _, a := range ahead {
		// The same words packCache appends, at their place after the tail.
		c := p.cacheAt(at)
		c.src, c.at = a.words, at
		caches[a.kv] = c
		pk.pieces = append(pk.pieces, a.words)
		at += len(a.words)
	}
	for _, pt := range parts {
		if _, ok := caches[pt.kv]; ok {
			continue
		}
		var c simCache
		if p.blk != nil {
			b, c, err = p.packBlockCache(b, pt.kv)
			if err != nil {
				return nil, err
			}
		} else {
			b, c = p.packCache(b, pt.kv)
		}
		caches[pt.kv] = c
	}
	xt, ranges, xs := xtable(parts)
	meta := len(b)
	b = append(b, make([]uint32, simMetaWords*pk.total)...)
	var a []uint32
	for _, pt := range parts {
		qa, err := pt.p.packQ(pt.trials)
		if err != nil {
			return nil, err
		}
		a = append(a, qa...)
	}
	metaRest := func(m, k int, c simCache) {
		copy(b[m+4:m+simMetaWords], []uint32{uint32(parts[k].p.cfg.Promotion), uint32(c.k), uint32(c.v), uint32(c.ks), uint32(c.vs), uint32(xs[k])})
	}
	if p.blk != nil {
		g := 0
		for k, pt := range parts {
			c := caches[pt.kv]
			for _, tr := range pt.trials {
				var tt trialTables
				b, tt = p.packTrialBlock(b, c, tr)
				m := meta + simMetaWords*g
				b = tt.appendTo(b, m)
				metaRest(m, k, c)
				g++
			}
		}
	} else {
		// Each trial's words and tables at the offset the ones before it
		// end at (trialSize), packed on every core: the same words as
		// packing them one after another.
		type slot struct{ k, g, at, n int }
		var slots []slot
		var trials []SimTrial
		at := len(b)
		for k, pt := range parts {
			for _, tr := range pt.trials {
				n := p.trialSize(tr)
				slots = append(slots, slot{k, len(slots), at, n})
				trials = append(trials, tr)
				at += n
			}
		}
		if at > tail {
			return nil, fmt.Errorf("wgsl: internal error: a submission's trials need B up to word %d, more than the %d counted", at, tail)
		}
		b = b[:at]
		var bad atomic.Bool
		parallelRows(len(slots), max(1, (at-meta)/max(1, len(slots))), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				sl := slots[i]
				c := caches[parts[sl.k].kv]
				clear(b[sl.at : sl.at+sl.n])
				tt, end := p.packTrial(b, sl.at, c, trials[i])
				m := meta + simMetaWords*sl.g
				if tt.writeAt(b, end, m) != sl.at+sl.n {
					bad.Store(true)
					continue
				}
				metaRest(m, sl.k, c)
			}
		})
		if bad.Load() {
			return nil, errors.New("wgsl: internal error: a trial's words differ from trialSize")
		}
	}
	if len(b) > tail {
		return nil, fmt.Errorf("wgsl: internal error: a submission's B holds %d words before its caches packed ahead, more than the %d counted", len(b), tail)
	}
	b = b[:tail] // zeros up to the bound: the caches packed ahead start there
	pk.a, pk.b, pk.xt, pk.ranges, pk.meta = p.perSplit(a), b, xt, ranges, meta
	// Workgroups: trial × query head × split, in that order.
	pk.rows = pk.total * p.qHeads * p.splits
	sw := p.stWords()
	pk.st = make([]uint32, pk.rows*sw)
	for row := 0; row < pk.rows; row++ {
		s := pk.st[row*sw:]
		s[0], s[1], s[2] = 0xff800000, 0, math.Float32bits(1)
	}
	if p.blk != nil {
		pk.vsStride = p.nMax * p.kbn / p.blk.b
	}
	// Every split runs its tiles (at most tps) a dispatch of per tiles at
	// a time (the parts' fewest: their replacements differ); the last
	// dispatch finalizes. Workgroups beyond 65535 go on along y.
	pk.per = p.tilesPerDispatch()
	for _, pt := range parts[1:] {
		pk.per = min(pk.per, pt.p.tilesPerDispatch())
	}
	pk.dispatches = (max(p.tps, 1) + pk.per - 1) / pk.per
	pk.gx = min(pk.rows, maxSimRows)
	pk.gy = (pk.rows + pk.gx - 1) / pk.gx
	pk.tab = make([]uint32, 256)
	copy(pk.tab, p.e.table[:])
	return pk, nil
}

// uploadSim uploads a packed submission (the runner held) and returns its
// buffers (table, A, B, state, XT; the caller frees them, also on error)
// and its dispatches.
func (r *Runner) uploadSim(pk *simPacked) ([]buffer, []call, error) {
	var bufs []buffer
	bp := [][]byte{u32View(pk.b)}
	for _, w := range pk.pieces {
		bp = append(bp, u32View(w))
	}
	for _, u := range []struct {
		label  string
		pieces [][]byte
	}{{"attnsim.table", [][]byte{u32View(pk.tab)}}, {"attnsim.A", [][]byte{u32View(pk.a)}}, {"attnsim.B", bp},
		{"attnsim.state", [][]byte{u32View(pk.st)}}, {"attnsim.exp2", [][]byte{u32View(pk.xt)}}} {
		x, err := r.be.upload(u.label, u.pieces...)
		if err != nil {
			return bufs, nil, err
		}
		bufs = append(bufs, x)
	}
	p := pk.p
	ks := &kernelSpec{file: "attnsim", include: simIncludes, entry: "decode", consts: pk.cs, storage: []access{readOnly, readWrite, readOnly, readWrite, readOnly}}
	var calls []call
	for t0 := 0; t0 < max(p.tps, 1); t0 += pk.per {
		t1 := min(t0+pk.per, p.tps)
		final := uint32(0)
		if t1 >= p.tps {
			final = 1
		}
		calls = append(calls, call{k: ks, bufs: bufs, x: uint32(pk.gx), y: uint32(pk.gy),
			params: []uint32{uint32(p.tokens), uint32(t0), uint32(t1), uint32(p.splits), uint32(pk.ranges), uint32(p.winLo), final,
				uint32(p.kvHeads), uint32(p.vStride()), uint32(pk.meta), uint32(pk.vsStride), uint32(pk.rows), uint32(pk.gx)}})
	}
	return bufs, calls, nil
}

// SimBench is the GPU time of one SimDecodeBatch submission (BenchSimDecode).
type SimBench struct {
	// Trials, Workgroups and Dispatches describe the submission; Products
	// counts the FP8 (or 16-bit) products of both GEMMs over the visited
	// keys, every trial and query head.
	Trials, Workgroups, Dispatches int
	Products                       int64
	// Time is the median of the timed runs (Measurement: the warm-up and
	// every run), Rate Products / Time in products per second. A run is
	// Repeats submissions' dispatches back to back, its time divided by
	// Repeats (BenchSimDecode).
	Time        time.Duration
	Source      string
	Rate        float64
	Repeats     int
	Measurement Measurement
}

// BenchSimDecode times the dispatches of SimDecodeBatch(jobs) on the
// device: the jobs must make one submission (one kernel and layout, within
// its limits). It packs and uploads once, warms up by the runner's rule
// (Warmup) and times reps runs of the dispatches; the runs after the first
// start from the state the one before left (finite values, the same work),
// so only the timing is meaningful: bit-exactness is wgslcheck.CheckSimDecode's.
// A run is the dispatches repeated back to back for about decodeBenchWork
// of GPU time (measureRepeated, rounding up: at least once,
// ceil(decodeBenchWork / one submission's time) after a first one timed
// alone, at most decodeBenchMaxSteps), its time divided by the repeats, as
// BenchDecode's steps: one submission of a few
// milliseconds waited on by the host leaves the GPU idle between runs, and
// its clock may settle low (the H200's decode tile, 16 splits, 3.7 ms:
// 1530 MHz of 1980 at the end of its warm-up in the first gpucheck on a
// fresh machine, and 28 % slower, on 2026-12-07).
func (r *Runner) BenchSimDecode(ctx context.Context, jobs []SimJob, reps int) (SimBench, error) {
	if err := r.wait(); err != nil { // r.info below
		return SimBench{}, err
	}
	parts := make([]simPart, len(jobs))
	for j, job := range jobs {
		p, err := planSim(job.Cfg, job.QScale, job.KV, job.Trials)
		if err != nil {
			return SimBench{}, fmt.Errorf("job %d: %w", j, err)
		}
		parts[j] = simPart{p: p, kv: job.KV, trials: job.Trials, job: j}
	}
	chunks := simChunks(parts, maxSimRows, max(1, int(min(r.info.MaxStorageBinding/4, 1<<31))))
	if len(chunks) != 1 {
		return SimBench{}, fmt.Errorf("wgsl: BenchSimDecode: the jobs make %d submissions, not one", len(chunks))
	}
	pk, err := packSim(chunks[0])
	if err != nil {
		return SimBench{}, err
	}
	res := SimBench{Trials: pk.total, Workgroups: pk.rows, Dispatches: pk.dispatches}
	for _, pt := range pk.parts {
		lo, hi := pt.p.nMin*pt.p.kbn, min(pt.p.nMax*pt.p.kbn, pt.p.tokens)
		keys := int64(max(0, hi-max(lo, pt.p.winLo)))
		res.Products += int64(len(pt.trials)) * int64(pt.p.qHeads) * 2 * keys * int64(pt.p.d)
	}
	if err := r.lock(); err != nil {
		return SimBench{}, err
	}
	defer r.mu.Unlock()
	bufs, calls, err := r.uploadSim(pk)
	defer func() {
		for _, x := range bufs {
			r.be.free(x)
		}
	}()
	if err != nil {
		return SimBench{}, err
	}
	m, n, err := r.measureRepeated(ctx, calls, reps, true)
	if err != nil {
		return SimBench{}, err
	}
	res.Measurement, res.Time, res.Source, res.Repeats = m, m.Median, m.Source, n
	res.Rate = float64(res.Products) / res.Time.Seconds()
	return res, nil
}

// combine returns each trial's O from the state the shader left (per
// workgroup m, l, acc_scale, unused, O[D]): with one split its O; with
// more, attention.CombineSplits of the splits' O_s with lse_s =
// attention.LSE(m_s, l_s), so that the merge is attention's own, a NaN
// given as the shader's canonical 0x7fffffff.
func (p *simPlan) combine(res []uint32, trials int) [][]float64 {
	d, sw, S := p.d, p.stWords(), p.splits
	f32 := func(w uint32) float32 { return math.Float32frombits(w) }
	os, lse := make([][]float32, S), make([]float32, S)
	for s := range os {
		os[s] = make([]float32, d)
	}
	o32 := make([]float32, d)
	out := make([][]float64, trials)
	for ti := range out {
		o := make([]float64, p.qHeads*d)
		for h := 0; h < p.qHeads; h++ {
			row := (ti*p.qHeads + h) * S
			for s := 0; s < S; s++ {
				st := res[(row+s)*sw:]
				lse[s] = attention.LSE(f32(st[0]), f32(st[1]))
				for i := range os[s] {
					os[s][i] = f32(st[4+i])
				}
			}
			if S == 1 {
				copy(o32, os[0])
			} else {
				attention.CombineSplits(o32, os, lse)
			}
			for i, x := range o32 {
				if x != x {
					x = math.Float32frombits(accum.NaN32)
				}
				o[h*d+i] = float64(x)
			}
		}
		out[ti] = o
	}
	return out
}

// simOp runs one of attnsim.wgsl's scalar functions on pairs (x, y) of
// float32 bit patterns: 0 f32_mul, 1 f32_div, 2 f32_exp2 (of x), 3
// half_encode (of x, to bf16 for y = 0, else to f16).
func (r *Runner) simOp(ctx context.Context, op int, pairs []uint32) ([]uint32, error) {
	n := len(pairs) / 2
	if n == 0 {
		return nil, nil
	}
	p := &simPlan{cfg: attention.Config{DType: fp8.FormatE4M3}, d: 128, kbn: 128, group: 1}
	var err error
	if p.e, err = LookupEmulation(attention.DefaultModel(fp8.FormatE4M3)); err != nil {
		return nil, err
	}
	cs, err := p.consts()
	if err != nil {
		return nil, err
	}
	if err := r.lock(); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	var bufs []buffer
	defer func() {
		for _, x := range bufs {
			r.be.free(x)
		}
	}()
	for _, u := range []struct {
		label string
		data  []uint32
	}{{"ops.table", make([]uint32, 256)}, {"ops.A", make([]uint32, 4)}, {"ops.B", pairs}, {"ops.out", make([]uint32, n)}, {"ops.exp2", exp2Tables()}} {
		x, err := r.be.upload(u.label, u32Bytes(u.data))
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, x)
	}
	ks := &kernelSpec{file: "attnsim", include: simIncludes, entry: "ops", consts: cs, storage: []access{readOnly, readWrite, readOnly, readWrite, readOnly}}
	x, y, stride := grid(n, 64)
	c := call{k: ks, bufs: bufs, x: x, y: y, params: []uint32{uint32(n), uint32(op), 0, 0, 0, stride}}
	if _, err := r.be.run(ctx, []call{c}, false); err != nil {
		return nil, err
	}
	raw, err := r.be.read(ctx, bufs[3], uint64(4*n))
	if err != nil {
		return nil, err
	}
	return bytesU32(raw), nil
}

var (
	exp2Once  sync.Once
	exp2Tab   []uint32
	exp2Coefs [4]uint64
)

// ln2 to 160 bits.
const ln2Digits = "0.693147180559945309417232121458176568075500134360255254120680009493393621969694715605863326996418687542"

func exp2Init() {
	const prec = 200
	ln2, ok := new(big.Float).SetPrec(prec).SetString(ln2Digits)
	if !ok {
		ln2 = new(big.Float).SetPrec(prec).SetFloat64(math.Ln2) // unreachable: the digits parse
	}
	// exp(x) by its Taylor series, x in [0, 0.7].
	exp := func(x *big.Float) *big.Float {
		sum := new(big.Float).SetPrec(prec).SetInt64(1)
		term := new(big.Float).SetPrec(prec).SetInt64(1)
		for k := 1; k < 80; k++ {
			term.Mul(term, x)
			term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k)))
			sum.Add(sum, term)
		}
		return sum
	}
	fixed := func(x *big.Float, frac uint) uint64 {
		y := new(big.Float).SetPrec(prec).SetMantExp(x, int(frac))
		y.Add(y, big.NewFloat(0.5))
		i, _ := y.Int(nil)
		return i.Uint64()
	}
	for _, div := range []int64{64, 4096} {
		for j := int64(0); j < 64; j++ {
			x := new(big.Float).SetPrec(prec).Mul(ln2, new(big.Float).SetPrec(prec).SetInt64(j))
			x.Quo(x, new(big.Float).SetPrec(prec).SetInt64(div))
			v := fixed(exp(x), 63)
			exp2Tab = append(exp2Tab, uint32(v>>32), uint32(v))
		}
	}
	c := new(big.Float).SetPrec(prec).SetInt64(1)
	for k := 1; k <= 4; k++ {
		c.Mul(c, ln2)
		c.Quo(c, new(big.Float).SetPrec(prec).SetInt64(int64(k)))
		exp2Coefs[k-1] = fixed(c, 64)
	}
}

// exp2Tables returns 2^(j/64) then 2^(j/4096) for j < 64, each rounded to
// Q1.63 and given as (hi, lo) words.
func exp2Tables() []uint32 {
	exp2Once.Do(exp2Init)
	return append([]uint32(nil), exp2Tab...)
}

// exp2Coeffs returns ln2^k/k!, k = 1..4, rounded to 64-bit fractions.
func exp2Coeffs() [4]uint64 {
	exp2Once.Do(exp2Init)
	return exp2Coefs
}
