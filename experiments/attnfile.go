package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strings"
	"sync"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/tensorfile"
	"github.com/fp8lab/fp8lab/wgsl"
)

func init() { sim.Register(AttentionFile{}) }

// AttentionFile is the `attention-file` experiment: the simulator on the
// user's own Q, K and V (and optional query positions and mask), read from
// .npy or .safetensors files, or on every layer of a model's dump (the
// dump role; layout in attnfile_dump.go, written by tools/dump_qkv.py), in
// any KV format, path, arithmetic and split count, its error against exact
// float64 attention on the unquantized tensors reported per query head
// (and layer), decomposed into shrinkage and residual, with a verdict per
// promotion.
//
// The files are not parameters (sim parameters have no free-text kind):
// `lab run attention-file -q q.npy -k k.npy -v v.npy` (or `-dump DIR`)
// sets Files through WithFiles, and the lab sets them to files inside its
// tensors folder.
type AttentionFile struct {
	// Files names the tensors by role: q, k, v (required), positions, mask
	// (optional), or dump (a folder or .safetensors holding every layer's
	// q, k, v and positions, instead of them). A name is a path, or
	// path:tensor for a .safetensors file holding several tensors.
	Files map[string]string
	// Root, when set, is the folder every file must lie in (the lab's
	// tensors folder): a name is then relative to it and may not leave it.
	Root string
	// MaxElements bounds each tensor (0: tensorfile.DefaultMaxElements).
	MaxElements int64
	// MaxTotalElements bounds the elements of Q, K and V over all the
	// layers of a dump (0: MaxDumpElements).
	MaxTotalElements int64
	// OutDir, when set, receives the simulated O of each promotion as
	// o_promotion{N}.npy (float32, [query tokens, query heads, V head dim])
	// and the exact attention on the unquantized tensors as o_exact.npy
	// (for a dump layer{L}_o_promotion{N}.npy and layer{L}_o_exact.npy),
	// and heads.csv, every head's figures. The folder is created before
	// anything is computed.
	OutDir string
}

// FileRoles returns AttentionFileRoles (sim.FileExperiment).
func (AttentionFile) FileRoles() []sim.FileRole { return AttentionFileRoles }

// WithRoot returns the experiment reading files only inside root, each
// tensor at most maxElements elements (see Root and MaxElements).
func (e AttentionFile) WithRoot(root string, maxElements int64) sim.FileExperiment {
	e.Root, e.MaxElements = root, maxElements
	return e
}

// WithOutDir returns the experiment writing O into dir (see OutDir).
func (e AttentionFile) WithOutDir(dir string) sim.Experiment { e.OutDir = dir; return e }

// AttentionFileRoles are the file roles of attention-file, with their doc.
var AttentionFileRoles = []sim.FileRole{
	{Name: "q", Doc: "queries: [tokens, heads, dim] or [heads, tokens, dim]; 2-D: one head", Dir: false},
	{Name: "k", Doc: "keys: [tokens, kv heads, dim] or [kv heads, tokens, dim]", Dir: false},
	{Name: "v", Doc: "values: as k, with V's head dim (512 for MLA)", Dir: false},
	{Name: "positions", Doc: "optional: each query token's position in the sequence", Dir: false},
	{Name: "mask", Doc: "optional: [query tokens, tokens], nonzero where a key takes part", Dir: false},
	{Name: "dump", Doc: "every layer of a model: a folder of layer{L}_{q,k,v}.npy or one .safetensors", Dir: true},
}

// ReproduceFlags returns the file flags of the run for its reproduce line
// (sim.Reproduce): -role PATH for every file, the path absolute (inside
// the lab's tensors folder when Root is set), so that the line runs from
// any folder.
func (e AttentionFile) ReproduceFlags() []string {
	var out []string
	for _, r := range AttentionFileRoles {
		name := e.Files[r.Name]
		if name == "" {
			continue
		}
		path := name
		if e.Root != "" {
			path = filepath.Join(e.Root, name)
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		out = append(out, "-"+r.Name, path)
	}
	return out
}

// WithFiles returns the experiment reading files (role → name).
func (e AttentionFile) WithFiles(files map[string]string) (sim.Experiment, error) {
	for role := range files {
		ok := false
		for _, r := range AttentionFileRoles {
			ok = ok || r.Name == role
		}
		if !ok {
			return nil, fmt.Errorf("attention-file: unknown file role %q (want q, k, v, positions, mask, dump)", role)
		}
	}
	e.Files = files
	return e, nil
}

// Name returns "attention-file".
func (AttentionFile) Name() string { return "attention-file" }

// Doc describes the experiment.
func (AttentionFile) Doc() string {
	return `The simulator on your own Q, K, V tensors or a model's every layer (.npy or .safetensors): error, shrinkage and residual per query head, and a verdict.

Files (lab run attention-file -q q.npy -k k.npy -v v.npy [-positions p.npy]
[-mask m.npy]; a safetensors file holding several tensors is named
file.safetensors:tensor): float32, float16, bfloat16 (safetensors BF16, or
.npy '<V2' with void2=bfloat16) and float8_e4m3fn (safetensors F8_E4M3, or
.npy '|V1'); integer tensors are refused for q, k and v. Layout thd is
[tokens, heads, dim], htd [heads, tokens, dim]; a leading batch dimension
of 1 is dropped, a 2-D tensor is one head. Query heads must be a multiple
of KV heads (GQA); K's head dim 64, 128, 192, 256, 512 or 576 (MLA, with
V's 512). Queries are the last tokens of the sequence unless positions are
given.

A whole model (-dump DIR or -dump model.safetensors, which
tools/dump_qkv.py writes): a folder holding layer{L}_q.npy, layer{L}_k.npy,
layer{L}_v.npy for each layer L (0, 1, …, no leading zeros; any subset of
layers) and optionally positions.npy shared by every layer, other .npy
names refused and other files ignored; or one .safetensors holding tensors
layer{L}.q, layer{L}.k, layer{L}.v and optionally positions, nothing else.
Every header is checked before any layer runs; the layers then run one at
a time. Limits: 1024 layers, 2^35 elements of Q, K and V in all, and each
tensor's own limit.

The cache is stored in format (with k/v scale granularities, the scale
choice and the saturation), fed to the MMA by path (direct, dequant-bf16,
dequant-e4m3, or block-scaled: mxfp8/nvfp4/mxfp4 read natively by tcgen05
kind::mxf8f6f4/mxf4/mxf4nvf4, blackwell only) with the arithmetic of arch (hopper wgmma or blackwell
tcgen05), P·V promoted as each of promotions says (0 never, 1 every tile,
N every N tiles), the KV tiles cut into splits ranges (FA3's split-KV,
flash-decoding: each split's O and base-2 LSE in FP32, combined in FP32 in
split order); splits auto is FA3's num_splits heuristic for the SM count of
arch (hopper: H100/H200 SXM, 132; blackwell: B200, 148) with batch × the
file's KV heads sequence-heads at once; the notes give the splits used.
Every input must be finite. device gpu runs the kernels through WebGPU
(bit for bit with cpu) for a decode (one query token) whose MMA reads
e4m3, e5m2, bf16 or f16, or the block-scaled codes natively, with head_dim
64, 128 or 256, no mask and one split.

y: relative L2 error (%) of O of each query head against exact float64
attention O* on the unquantized tensors, one point per head (x: the head,
counted over the layers of a dump: heads of the earlier layers + head), one
series per promotion. Each point also carries the shrinkage alpha =
<O,O*>/<O*,O*> (1: none), the residual |O - alpha O*| / |O*| (%; relerr² =
(1 - alpha)² + residual²), the cosine, and the same against exact attention
on the quantized inputs (vs_quantized: the kernel's arithmetic alone). The
summary gives them over all heads (all layers), every relative error in %
as on the points, and relerr_quantized_inputs, what quantizing the inputs
alone costs.

Verdict, per promotion: PASS when the worst head's relative error is at
most threshold (%), FAIL otherwise; the fraction of heads above the
threshold and the worst heads are given either way. The threshold is the
reader's tolerance, not a fitted figure: compare it with
relerr_quantized_inputs, the floor the format sets. -o DIR writes O per
promotion and layer, the exact O, and heads.csv (every head's figures).`
}

// Params returns the parameter schema.
func (AttentionFile) Params() []sim.Param {
	formats := attention.KVFormatNames()
	return []sim.Param{
		{Name: "layout", Doc: "axis order of the files: thd [tokens, heads, dim] or htd [heads, tokens, dim]", Kind: sim.KindChoice, Default: "thd", Choices: []string{"thd", "htd"}},
		{Name: "format", Doc: "KV-cache format", Kind: sim.KindChoice, Default: "e4m3", Choices: formats},
		{Name: "k-scales", Aliases: []string{"kScales"}, Doc: "K scale granularity (e4m3/e5m2)", Kind: sim.KindChoice, Default: "tensor", Choices: []string{"tensor", "head", "token-head", "channel"}},
		{Name: "v-scales", Aliases: []string{"vScales"}, Doc: "V scale granularity (e4m3/e5m2)", Kind: sim.KindChoice, Default: "tensor", Choices: []string{"tensor", "head", "token-head"}},
		{Name: "scale", Doc: "static scales: 1.0, amax of the cache, amax of a calibration prefix", Kind: sim.KindChoice, Default: "one", Choices: []string{"one", "amax", "prefix"}},
		{Name: "prefix", Doc: "calibration prefix of scale=prefix", Unit: "tokens", Kind: sim.KindInt, Default: 1024, Min: 1, Max: 1 << 24},
		{Name: "path", Doc: "how the MMA reads the cache", Kind: sim.KindChoice, Default: "direct", Choices: []string{"direct", "dequant-bf16", "dequant-e4m3", "block-scaled"}},
		{Name: "arch", Doc: "tensor-core arithmetic of both GEMMs", Kind: sim.KindChoice, Default: "hopper", Choices: attention.ArchNames()},
		{Name: "saturation", Doc: "cast of Q, K, V to fp8: satfinite (vLLM) or nosat (PyTorch .to())", Kind: sim.KindChoice, Default: "satfinite", Choices: []string{"satfinite", "nosat"}},
		{Name: "promotions", Doc: "P·V promotion intervals (0 never, 1 every tile, N every N tiles)", Kind: sim.KindInts, Default: []int{0, 1}, Min: 0, Max: 1 << 20},
		{Name: "splits", Doc: "split-KV ranges (FA3's num_splits); auto: FA3's heuristic for arch's SM count and batch × KV heads", Kind: sim.KindInt, Default: 1, Min: 1, Max: attention.MaxSplits, Named: []sim.Named{{Name: "auto", Value: 0}}},
		{Name: "batch", Doc: "sequences decoded at once, for splits auto (bhk = batch × KV heads)", Unit: "sequences", Kind: sim.KindInt, Default: 1, Min: 1, Max: 1 << 16},
		{Name: "threshold", Doc: "verdict: a head fails when its relative L2 error exceeds this", Unit: "%", Kind: sim.KindFloat, Default: 5.0, Min: 0, Max: 1000},
		{Name: "k-block-m", Aliases: []string{"kBlockM"}, Doc: "query tile; 0 is FA3's", Kind: sim.KindInt, Default: 0, Min: 0, Max: attention.MaxKBlockM},
		{Name: "k-block-n", Aliases: []string{"kBlockN"}, Doc: "KV tile; 0 is FA3's", Unit: "tokens", Kind: sim.KindInt, Default: 0, Min: 0, Max: attention.MaxKBlockN},
		{Name: "causal", Doc: "causal mask (queries at the end, or at their positions)", Kind: sim.KindBool, Default: false},
		{Name: "window", Doc: "sliding window; 0 none", Unit: "tokens", Kind: sim.KindInt, Default: 0, Min: 0, Max: 1 << 24},
		{Name: "softmax-scale", Aliases: []string{"softmaxScale"}, Doc: "multiplies Q·Kᵀ; 0 is 1/sqrt(head dim)", Kind: sim.KindFloat, Default: 0.0, Min: 0, Max: 1e6},
		{Name: "void2", Doc: "type of .npy '<V2' elements (ml_dtypes)", Kind: sim.KindChoice, Default: "bfloat16", Choices: []string{"bfloat16", "float16"}},
		deviceParamDoc("where the kernel runs: cpu (package attention) or gpu (wgsl.SimDecode, bit for bit: a decode, one query token, " +
			"whose MMA reads e4m3/e5m2/bf16/f16 or block-scaled codes, head_dim 64/128/256, no mask, one split; the references stay on the CPU)"),
	}
}

// attnFileInputs are the tensors of one layer in the simulator's layout.
type attnFileInputs struct {
	attnDims
	q, k, v     []float32 // [tokens][heads][dim]
	positions   []int
	mask        []bool
	names       map[string]string // role → file name, for messages
	sourceTypes map[string]tensorfile.DType
}

// read reads one tensor of a layer, with the types its role accepts.
func (e AttentionFile) read(role string, ref attnRef, opt tensorfile.Options) (*tensorfile.Tensor, error) {
	opt.MaxElements = e.maxElements()
	opt.Accept = attnRoleTypes(role)
	t, err := tensorfile.ReadFile(ref.path, ref.tensor, opt)
	if err != nil {
		return nil, fmt.Errorf("%s file: %w", role, err)
	}
	if err := t.CheckFinite(); err != nil {
		return nil, fmt.Errorf("%s file: %w", role, err)
	}
	return t, nil
}

// attnFileLayout returns x, a tensor of tokens × heads × dim in layout, as
// [tokens][heads][dim].
func attnFileLayout(x []float32, layout string, tokens, heads, dim int) []float32 {
	if layout == "thd" || heads == 1 {
		return x
	}
	out := make([]float32, len(x))
	for h := 0; h < heads; h++ {
		for tok := 0; tok < tokens; tok++ {
			copy(out[(tok*heads+h)*dim:][:dim], x[(h*tokens+tok)*dim:][:dim])
		}
	}
	return out
}

// readOptions are the tensorfile options of the values (the .npy void types).
func attnReadOptions(vals sim.Values) tensorfile.Options {
	opt := tensorfile.Options{Void1: tensorfile.F8E4M3, Void2: tensorfile.BF16}
	if vals.String("void2") == "float16" {
		opt.Void2 = tensorfile.F16
	}
	return opt
}

// inputs reads and checks one layer's files.
func (e AttentionFile) inputs(vals sim.Values, l attnLayer) (*attnFileInputs, error) {
	opt := attnReadOptions(vals)
	layout := vals.String("layout")
	in := &attnFileInputs{names: map[string]string{}, sourceTypes: map[string]tensorfile.DType{}}
	ts := map[string]*tensorfile.Tensor{}
	shapes := map[string][]int{}
	// The roles' files are read side by side (parsing and the finiteness
	// check are CPU work); the first error in role order is returned.
	read := make([]*tensorfile.Tensor, len(attnRoles))
	errs := make([]error, len(attnRoles))
	var wg sync.WaitGroup
	for i, role := range attnRoles {
		if ref, ok := l.refs[role]; ok {
			wg.Go(func() { read[i], errs[i] = e.read(role, ref, opt) })
		}
	}
	wg.Wait()
	for i, role := range attnRoles {
		if _, ok := l.refs[role]; !ok {
			continue
		}
		if errs[i] != nil {
			return nil, errs[i]
		}
		t := read[i]
		ts[role], shapes[role] = t, t.Shape
		in.names[role], in.sourceTypes[role] = t.File, t.DType
		if t.Name != "" {
			in.names[role] = t.File + ":" + t.Name
		}
	}
	dm, err := attnFileDims(layout, shapes, in.names)
	if err != nil {
		return nil, err
	}
	in.attnDims = dm
	in.q = attnFileLayout(ts["q"].Data, layout, dm.mq, dm.qh, dm.d)
	in.k = attnFileLayout(ts["k"].Data, layout, dm.n, dm.kvh, dm.d)
	in.v = attnFileLayout(ts["v"].Data, layout, dm.n, dm.kvh, dm.dv)
	if p := ts["positions"]; p != nil {
		for i, x := range p.Data {
			if float64(x) != math.Trunc(float64(x)) || x < 0 || int(x) >= in.n {
				return nil, fmt.Errorf("positions file %s: element %d is %g, not a position 0 … %d", in.names["positions"], i, x, in.n-1)
			}
			in.positions = append(in.positions, int(x))
		}
	}
	if m := ts["mask"]; m != nil {
		in.mask = make([]bool, len(m.Data))
		for i, x := range m.Data {
			in.mask[i] = x != 0
		}
	}
	return in, nil
}

// attnFileSpec builds the KV spec and kernel config of a layer from the
// values (AttentionFileSpec with the layer's shapes).
func attnFileSpec(vals sim.Values, in *attnFileInputs) (attention.KVSpec, attention.Config, error) {
	return AttentionFileSpec(vals, AttentionFileShape{Tokens: in.n, KVHeads: in.kvh, QHeads: in.qh, HeadDim: in.d, VHeadDim: in.dv}, in.positions, in.mask)
}

// AttentionFileShape is the shape of one layer of attention-file's inputs.
type AttentionFileShape struct{ Tokens, KVHeads, QHeads, HeadDim, VHeadDim int }

// AttentionFileSpec builds the KV spec (format, scale granularities and
// choice, calibration prefix, path, saturation; checked against the shape)
// and the kernel config (shapes, dtype, the arch's models, tiles, causal
// mask, window, softmax scale, positions, mask) of a run from values
// holding attention-file's parameters; the C ABI (capi) builds its runs
// with it, so both read the parameters alike. Errors name the parameter's
// fault.
func AttentionFileSpec(vals sim.Values, sh AttentionFileShape, positions []int, mask []bool) (attention.KVSpec, attention.Config, error) {
	var spec attention.KVSpec
	var err error
	if spec.Format, err = attention.ParseKVFormat(vals.String("format")); err != nil {
		return spec, attention.Config{}, err
	}
	if spec.KScales, err = attention.ParseGranularity(vals.String("k-scales")); err != nil {
		return spec, attention.Config{}, err
	}
	if spec.VScales, err = attention.ParseGranularity(vals.String("v-scales")); err != nil {
		return spec, attention.Config{}, err
	}
	if spec.Scale, err = attention.ParseScaleChoice(vals.String("scale")); err != nil {
		return spec, attention.Config{}, err
	}
	spec.PrefixTokens = min(vals.Int("prefix"), sh.Tokens)
	if spec.Path, err = attention.ParsePath(vals.String("path")); err != nil {
		return spec, attention.Config{}, err
	}
	if vals.String("saturation") == "nosat" {
		spec.Saturation = fp8.NoSat
	}
	if err := spec.Check(attention.KVShape{Tokens: sh.Tokens, Heads: sh.KVHeads, KDim: sh.HeadDim, VDim: sh.VHeadDim}); err != nil {
		return spec, attention.Config{}, err
	}
	dt := spec.DType()
	qk, pv, err := spec.Models(vals.String("arch"))
	if err != nil {
		return spec, attention.Config{}, err
	}
	cfg := attention.Config{HeadDim: sh.HeadDim, VDim: sh.VHeadDim, KVHeads: sh.KVHeads, QHeads: sh.QHeads, DType: dt, Saturation: spec.Saturation,
		QKModel: qk, PVModel: pv, KBlockM: vals.Int("k-block-m"), KBlockN: vals.Int("k-block-n"),
		Causal: vals.Bool("causal"), Window: vals.Int("window"), SoftmaxScale: vals.Float("softmax-scale"),
		Positions: positions, Mask: mask}
	return spec, cfg, nil
}

// attnFileResult is the outputs of one layer.
type attnFileResult struct {
	exact, quantRef []float64   // float64 attention on the unquantized / quantized inputs
	out             [][]float64 // one O per promotion, [mq][QHeads][VDim]
	splits          int         // the splits the kernel ran
	splitsNote      string      // how they were chosen
}

// attnFileSplits resolves the splits parameter for the run of cfg (its
// tiles set) over kv: the number given, or for auto FA3's heuristic on
// arch's GPU with bhk = batch × KV heads.
func attnFileSplits(vals sim.Values, cfg attention.Config, in *attnFileInputs, kv *attention.KV) (int, string, error) {
	if s := vals.Int("splits"); s > 0 {
		return s, fmt.Sprintf("splits %d (given)", s), nil
	}
	gpu, err := attention.LookupArch(vals.String("arch"))
	if err != nil {
		return 0, "", err
	}
	plan, err := cfg.Plan(in.mq, nil, kv)
	if err != nil {
		return 0, "", err
	}
	bhk := vals.Int("batch") * in.kvh
	s := plan.AutoSplits(gpu.SMs, bhk)
	return s, fmt.Sprintf("splits %d (auto: FA3's num_splits heuristic for %d SMs, %s, bhk = batch %d × %d KV heads = %d, kBlockN %d)",
		s, gpu.SMs, gpu.GPUs, vals.Int("batch"), in.kvh, bhk, plan.KBlockN), nil
}

// compute runs the simulator on one layer: the query tokens are split
// into blocks of kBlockM rows run in parallel (sim.Trials) with the tiles,
// positions and splits of the whole run, which gives the outputs of one
// run. gpu, when set, runs the kernels instead (a decode).
func (e AttentionFile) compute(ctx context.Context, run *sim.Run, vals sim.Values, in *attnFileInputs, gpu *wgsl.Runner) (*attnFileResult, error) {
	spec, cfg, err := attnFileSpec(vals, in)
	if err != nil {
		return nil, err
	}
	promotions := vals.Ints("promotions")
	cfg.Promotion = promotions[0]
	reg := trace.StartRegion(ctx, "attention-file: quantize a layer")
	kv, err := attention.QuantizeKV(in.k, in.v, attention.KVShape{Tokens: in.n, Heads: in.kvh, KDim: in.d, VDim: in.dv}, spec)
	reg.End()
	if err != nil {
		return nil, err
	}
	bm, bn, err := cfg.TilesFor(in.mq, kv)
	if err != nil {
		return nil, err
	}
	cfg.KBlockM, cfg.KBlockN = bm, bn
	if cfg.Positions == nil {
		cfg.Positions = make([]int, in.mq)
		for i := range cfg.Positions {
			cfg.Positions[i] = in.n - in.mq + i
		}
	}
	res := &attnFileResult{}
	if res.splits, res.splitsNote, err = attnFileSplits(vals, cfg, in, kv); err != nil {
		return nil, err
	}
	cfg.Splits = res.splits
	// The two references and the kernels read only the inputs and the
	// cache: they run side by side (the references on every core, the
	// kernels on the GPU or every core); errors in the order they were
	// checked one after another.
	var exactErr, quantErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		defer trace.StartRegion(ctx, "attention-file: the exact reference").End()
		res.exact, exactErr = attnFileExact(ctx, cfg, in)
	})
	wg.Go(func() {
		defer trace.StartRegion(ctx, "attention-file: the reference on the quantized inputs").End()
		res.quantRef, quantErr = attention.ReferenceQuantized(ctx, cfg, in.q, nil, kv)
	})
	reg = trace.StartRegion(ctx, "attention-file: the kernels")
	out, kernErr := e.kernels(ctx, run, cfg, promotions, in, kv, bm, gpu)
	reg.End()
	wg.Wait()
	for _, err := range []error{exactErr, quantErr, kernErr} {
		if err != nil {
			return nil, err
		}
	}
	res.out = out
	return res, nil
}

// kernels runs the layer's kernels: on the GPU (a decode) or in blocks of
// bm query rows on every core.
func (e AttentionFile) kernels(ctx context.Context, run *sim.Run, cfg attention.Config, promotions []int, in *attnFileInputs, kv *attention.KV, bm int, gpu *wgsl.Runner) ([][]float64, error) {
	if gpu != nil {
		return attnFileGPU(ctx, gpu, cfg, promotions, in, kv)
	}
	blocks := (in.mq + bm - 1) / bm
	row := in.qh * in.d
	rows, err := sim.Trials(ctx, run, "attention-file", blocks, func(b int, _ *rand.Rand) attnRows {
		lo, hi := b*bm, min(in.mq, (b+1)*bm)
		c := cfg
		c.Positions = cfg.Positions[lo:hi]
		if cfg.Mask != nil {
			c.Mask = cfg.Mask[lo*in.n : hi*in.n]
		}
		o, err := attention.RunPromotions(ctx, c, promotions, in.q[lo*row:hi*row], nil, kv)
		return attnRows{o, err}
	})
	if err := attnFirstErr(ctx, rows, err); err != nil {
		return nil, err
	}
	orow := in.qh * in.dv
	out := make([][]float64, len(promotions))
	for a := range promotions {
		out[a] = make([]float64, in.mq*orow)
		for b, r := range rows {
			copy(out[a][b*bm*orow:], r.o[a])
		}
	}
	return out, nil
}

// attnFileGPUCheck returns why device gpu cannot run a layer, or nil.
func attnFileGPUCheck(cfg attention.Config, in *attnFileInputs) error {
	if in.mq != 1 {
		return fmt.Errorf("device gpu runs a decode: one query token, the q file %s has %d (use device cpu)", in.names["q"], in.mq)
	}
	if err := wgsl.SimDecodeSupports(cfg); err != nil {
		return fmt.Errorf("device gpu: %w (use device cpu)", err)
	}
	return nil
}

// attnFileGPU runs the kernel of each promotion on the GPU
// (wgsl.SimDecode): a decode, one query token, in a configuration the WGSL
// simulator runs, else an error naming what it does not run.
func attnFileGPU(ctx context.Context, g *wgsl.Runner, cfg attention.Config, promotions []int, in *attnFileInputs, kv *attention.KV) ([][]float64, error) {
	if in.positions == nil {
		cfg.Positions = nil // the last position, SimDecode's
	}
	if err := attnFileGPUCheck(cfg, in); err != nil {
		return nil, err
	}
	out := make([][]float64, len(promotions))
	var err error
	for a, p := range promotions {
		cfg.Promotion = p
		if out[a], err = g.SimDecode(ctx, cfg, in.q, nil, kv); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// attnFileExact is attention.Reference of cfg on the layer's unquantized
// tensors, read where they lie (attention.ReferenceF32: the bits of
// Reference on their float64 copies, TestAttnFileExactEqualsReference,
// without the copies: 256 MB a KV head at 128k tokens and head_dim 128),
// its query heads on every core.
func attnFileExact(ctx context.Context, cfg attention.Config, in *attnFileInputs) ([]float64, error) {
	return attention.ReferenceF32(ctx, cfg, in.q, in.k, in.v, in.mq, in.n)
}

func f64s(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// f32s rounds to float32 (exact for the kernel's FP32 outputs).
func f32s(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// attnFileHead gathers query head h of o ([mq][QHeads][dv]).
func attnFileHead(o []float64, mq, qh, dv, h int) []float64 {
	out := make([]float64, 0, mq*dv)
	for i := 0; i < mq; i++ {
		out = append(out, o[(i*qh+h)*dv:][:dv]...)
	}
	return out
}

// attnCmp is Compare's figures of one head with the sums that merge heads.
type attnCmp struct {
	attention.Errors
	ref2, o2 float64 // ‖O*‖², ‖O‖²
}

// attnCompare compares o with ref, keeping the norms.
func attnCompare(o, ref []float64) attnCmp {
	c := attnCmp{Errors: attention.Compare(o, ref)}
	for i, x := range o {
		c.ref2 += ref[i] * ref[i]
		c.o2 += x * x
	}
	return c
}

// attnMerge returns the figures of the concatenation of the heads cs, as
// one Compare of it gives them (up to rounding): relerr² and the
// residual² are ‖O*‖²-weighted, with each head's residual moved to the
// common α (‖o − α r‖² = ‖o − α_c r‖² + (α_c − α)²‖r‖², o − α_c r ⟂ r).
func attnMerge(cs []attnCmp) attention.Errors {
	var ref2, o2, dot, diff2, maxAbs float64
	for _, c := range cs {
		ref2 += c.ref2
		o2 += c.o2
		dot += c.Alpha * c.ref2
		diff2 += c.RelL2 * c.RelL2 * c.ref2
		if c.MaxAbs > maxAbs || c.MaxAbs != c.MaxAbs {
			maxAbs = c.MaxAbs
		}
	}
	alpha := dot / ref2
	var res2 float64
	for _, c := range cs {
		res2 += c.ref2 * (c.Residual*c.Residual + (c.Alpha-alpha)*(c.Alpha-alpha))
	}
	return attention.Errors{RelL2: math.Sqrt(diff2 / ref2), MaxAbs: maxAbs, Cosine: dot / math.Sqrt(o2*ref2),
		Alpha: alpha, Residual: math.Sqrt(res2 / ref2)}
}

// attnHead is one query head's figures for one promotion.
type attnHead struct {
	layer, head, x, splits int
	exact, quant           attnCmp
}

// worse orders heads by descending error (NaN first: a head whose exact
// output is zero has no relative error, and is named).
func worse(a, b attnHead) int {
	x, y := a.exact.RelL2, b.exact.RelL2
	switch {
	case x != x && y != y:
		return 0
	case x != x:
		return -1
	case y != y:
		return 1
	case x > y:
		return -1
	case x < y:
		return 1
	}
	return 0
}

// attnFileOutDir returns the folder the run writes into ("" for none),
// created, or an error before anything is computed: a runner that chose
// where runs write (the lab) gets the files there.
func (e AttentionFile) attnFileOutDir(run *sim.Run) (string, error) {
	dir := e.OutDir
	if fd, set := run.FilesDir(); set && dir != "" {
		if fd == "" {
			return "", errors.New("-o: this runner keeps no files of its runs (the lab needs a data folder)")
		}
		dir = fd
	}
	if dir == "" {
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("-o %s: %w (nothing was computed)", dir, err)
	}
	return dir, nil
}

// Run checks every file's header, records each input's path and SHA-256,
// then runs the layers one at a time, emitting each head's point as its
// layer ends, and reports over all heads with a verdict per promotion.
func (e AttentionFile) Run(ctx context.Context, run *sim.Run) error {
	vals := run.Values
	layers, dump, err := e.layers()
	if err != nil {
		return err
	}
	dims, err := e.check(layers, vals.String("layout"), attnReadOptions(vals))
	if err != nil {
		return err
	}
	outDir, err := e.attnFileOutDir(run)
	if err != nil {
		return err
	}
	var csv *os.File
	if outDir != "" {
		if csv, err = os.Create(filepath.Join(outDir, "heads.csv")); err != nil {
			return fmt.Errorf("-o %s: %w (nothing was computed)", outDir, err)
		}
		defer csv.Close()
		fmt.Fprintln(csv, "layer,head,kv_head,promotion,splits,relerr_pct,alpha,residual_pct,cosine,vs_quantized_pct,alpha_vs_quantized,residual_vs_quantized_pct,cosine_vs_quantized")
	}
	// Each layer's files are read while the one before is computed (the
	// first while the inputs are hashed): at most two layers' inputs are
	// held at once. A read that is no longer wanted ends on its own.
	type layerIn struct {
		in  *attnFileInputs
		err error
	}
	prefetch := func(l attnLayer) chan layerIn {
		ch := make(chan layerIn, 1)
		go func() {
			defer trace.StartRegion(ctx, "attention-file: read a layer").End()
			in, err := e.inputs(vals, l)
			ch <- layerIn{in, err}
		}()
		return ch
	}
	next := prefetch(layers[0])
	gpu, closeGPU := openDevice(ctx, vals) // opens while the inputs are read and hashed
	defer closeGPU()
	// The inputs are hashed while the first layer is read and computed;
	// they are recorded before its first point (a run that fails to hash
	// one emits nothing).
	type hashResult struct {
		h   *attnHashes
		err error
	}
	hashed := make(chan hashResult, 1)
	go func() {
		defer trace.StartRegion(ctx, "attention-file: hash the inputs").End()
		h, err := e.hashInputs(ctx, layers, dump)
		hashed <- hashResult{h, err}
	}()
	recorded := false
	record := func() error {
		if recorded {
			return nil
		}
		recorded = true
		hr := <-hashed
		if hr.err != nil {
			return hr.err
		}
		if err := hr.h.record(run); err != nil {
			return err
		}
		if gpu != nil {
			if err := deviceErr(gpu); err != nil {
				return err
			}
			run.Note(fmt.Sprintf("device gpu: the kernels ran on %s (the references on the CPU)", gpu.Info().Name))
		}
		return nil
	}
	defer func() {
		if !recorded {
			<-hashed // no hashing goroutine outlives the run
		}
	}()
	promotions := vals.Ints("promotions")
	heads := make([][]attnHead, len(promotions))
	var quantIn []attnCmp // the quantized-input reference against the exact, per head
	var splitNotes []string
	x0 := 0
	for li, l := range layers {
		got := <-next
		if li+1 < len(layers) {
			next = prefetch(layers[li+1])
		}
		in, err := got.in, got.err
		var res *attnFileResult
		if err == nil {
			res, err = e.compute(ctx, run, vals, in, gpu)
		}
		if rerr := record(); err == nil {
			err = rerr
		}
		if err != nil {
			if dump && ctx.Err() == nil {
				return fmt.Errorf("layer %d: %w", l.index, err)
			}
			return err
		}
		splitNotes = append(splitNotes, res.splitsNote)
		if outDir != "" {
			if err := attnFileWrite(outDir, dump, l.index, in, promotions, res); err != nil {
				return err
			}
		}
		for h := 0; h < in.qh; h++ {
			ex := attnFileHead(res.exact, in.mq, in.qh, in.dv, h)
			qr := attnFileHead(res.quantRef, in.mq, in.qh, in.dv, h)
			quantIn = append(quantIn, attnCompare(qr, ex))
			for a, p := range promotions {
				o := attnFileHead(res.out[a], in.mq, in.qh, in.dv, h)
				hd := attnHead{layer: l.index, head: h, x: x0 + h, splits: res.splits, exact: attnCompare(o, ex), quant: attnCompare(o, qr)}
				heads[a] = append(heads[a], hd)
				if err := run.Emit(attnFilePoint(p, hd)); err != nil {
					return err
				}
				if csv != nil {
					c, q := hd.exact, hd.quant
					fmt.Fprintf(csv, "%d,%d,%d,%d,%d,%.9g,%.9g,%.9g,%.12g,%.9g,%.9g,%.9g,%.12g\n", l.index, h, h/(in.qh/in.kvh), p, hd.splits,
						100*c.RelL2, c.Alpha, 100*c.Residual, c.Cosine, 100*q.RelL2, q.Alpha, 100*q.Residual, q.Cosine)
				}
			}
		}
		x0 += in.qh
	}
	if csv != nil {
		if err := csv.Close(); err != nil {
			return fmt.Errorf("-o %s: heads.csv: %w", outDir, err)
		}
	}
	e.report(run, layers, dims, dump, promotions, heads, quantIn, splitNotes)
	return nil
}

// attnFilePoint is the point of one head and promotion: y the relative
// error against the exact output on the unquantized tensors (%), with its
// decomposition and the same against the quantized inputs.
func attnFilePoint(p int, hd attnHead) sim.Point {
	c, q := hd.exact, hd.quant
	return sim.Point{Series: fmt.Sprintf("promotion %d", p), X: float64(hd.x), Y: 100 * c.RelL2,
		Extra: map[string]float64{"layer": float64(hd.layer), "head": float64(hd.head), "splits": float64(hd.splits),
			"alpha": c.Alpha, "residual": 100 * c.Residual, "cosine": c.Cosine,
			"vs_quantized": 100 * q.RelL2, "alpha_vs_quantized": q.Alpha, "residual_vs_quantized": 100 * q.Residual, "cosine_vs_quantized": q.Cosine}}
}

// attnFileWrite writes one layer's O per promotion and the exact O.
func attnFileWrite(dir string, dump bool, layer int, in *attnFileInputs, promotions []int, res *attnFileResult) error {
	prefix := ""
	if dump {
		prefix = fmt.Sprintf("layer%d_", layer)
	}
	shape := []int{in.mq, in.qh, in.dv}
	if err := tensorfile.WriteNPY(filepath.Join(dir, prefix+"o_exact.npy"), shape, f32s(res.exact)); err != nil {
		return err
	}
	for a, p := range promotions {
		if err := tensorfile.WriteNPY(filepath.Join(dir, fmt.Sprintf("%so_promotion%d.npy", prefix, p)), shape, f32s(res.out[a])); err != nil {
			return err
		}
	}
	return nil
}

// attnHashes is every file a run reads (once, with the roles it serves)
// and its SHA-256, to record (sim.Run.Input).
type attnHashes struct {
	paths []string
	roles map[string][]string
	sums  []string
}

// hashInputs hashes every file the layers read, a few side by side; the
// first error in the files' order is returned, ctx's once it is
// cancelled (within a read of hashChunk bytes).
func (e AttentionFile) hashInputs(ctx context.Context, layers []attnLayer, dump bool) (*attnHashes, error) {
	h := &attnHashes{roles: map[string][]string{}}
	for _, l := range layers {
		for _, role := range attnRoles {
			ref, ok := l.refs[role]
			if !ok {
				continue
			}
			if dump {
				role = "dump"
			}
			if _, seen := h.roles[ref.path]; !seen {
				h.paths = append(h.paths, ref.path)
			}
			if !slices.Contains(h.roles[ref.path], role) {
				h.roles[ref.path] = append(h.roles[ref.path], role)
			}
		}
	}
	h.sums = make([]string, len(h.paths))
	errs := make([]error, len(h.paths))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, p := range h.paths {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			h.sums[i], errs[i] = fileSHA256(ctx, p)
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return h, nil
}

// record records the files in order with their absolute paths.
func (h *attnHashes) record(run *sim.Run) error {
	for i, p := range h.paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		if err := run.Input(sim.Input{Role: strings.Join(h.roles[p], ","), Path: abs, SHA256: h.sums[i]}); err != nil {
			return err
		}
	}
	return nil
}

// attnAbs returns path made absolute (as given when that fails).
func attnAbs(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// dumpPath is the dump's path (under Root when set).
func (e AttentionFile) dumpPath() string {
	p, _, _ := attnFileOpen(e.Root, e.Files["dump"], true)
	return p
}

// attnVerdictMaxTable bounds the cells of the layer × head table of the notes.
const attnVerdictMaxTable = 8192

// report writes the summary and the notes: the files, the splits, the
// figures over all heads, the verdict and the worst heads per promotion,
// and a layer × head table of a dump.
func (e AttentionFile) report(run *sim.Run, layers []attnLayer, dims []attnDims, dump bool, promotions []int, heads [][]attnHead, quantIn []attnCmp, splitNotes []string) {
	vals := run.Values
	threshold := vals.Float("threshold")
	d0 := dims[0]
	summary := map[string]float64{"layers": float64(len(layers)), "query_tokens": float64(d0.mq), "tokens": float64(d0.n),
		"query_heads": float64(d0.qh), "kv_heads": float64(d0.kvh), "threshold": threshold, "heads": float64(len(quantIn))}
	var notes []string
	if dump {
		same := !slices.ContainsFunc(dims, func(d attnDims) bool { return d != d0 })
		shape := fmt.Sprintf("every layer %d query tokens × %d heads over %d tokens × %d KV heads, head dim %d/%d", d0.mq, d0.qh, d0.n, d0.kvh, d0.d, d0.dv)
		if !same {
			shape = "the layers' shapes differ (the first: " + shape[len("every layer "):] + ")"
		}
		notes = append(notes, fmt.Sprintf("dump %s: %d layers (%d … %d), %d query heads in all; %s", map[bool]string{true: e.Files["dump"], false: attnAbs(e.dumpPath())}[e.Root != ""], len(layers), layers[0].index, layers[len(layers)-1].index, len(quantIn), shape))
	} else {
		var files []string
		for _, role := range attnRoles {
			if r, ok := layers[0].refs[role]; ok {
				name := r.name // in the tensors folder, its name there
				if e.Root == "" {
					name = attnAbs(r.path) + map[bool]string{true: ":" + r.tensor, false: ""}[r.tensor != ""]
				}
				files = append(files, fmt.Sprintf("%s=%s", role, name))
			}
		}
		notes = append(notes, fmt.Sprintf("%s; %d query tokens × %d heads over %d tokens × %d KV heads, head dim %d/%d", strings.Join(files, ", "), d0.mq, d0.qh, d0.n, d0.kvh, d0.d, d0.dv))
	}
	lo, hi := heads[0][0].splits, heads[0][0].splits
	for _, h := range heads[0] {
		lo, hi = min(lo, h.splits), max(hi, h.splits)
	}
	if lo == hi {
		summary["splits"] = float64(lo)
		notes = append(notes, splitNotes[0]+map[bool]string{true: ", every layer", false: ""}[dump])
	} else {
		summary["splits_min"], summary["splits_max"] = float64(lo), float64(hi)
		for i, n := range splitNotes {
			notes = append(notes, fmt.Sprintf("layer %d: %s", layers[i].index, n))
		}
	}
	qi := attnMerge(quantIn)
	summary["relerr_quantized_inputs"] = 100 * qi.RelL2
	summary["alpha_quantized_inputs"] = qi.Alpha
	notes = append(notes, fmt.Sprintf("quantizing the inputs alone (exact attention on the quantized Q, K, V against the unquantized): relative L2 %.4g%% (α %.6g) — the floor the format sets", 100*qi.RelL2, qi.Alpha))
	setup := fmt.Sprintf("%s, scale %s, path %s, %s", vals.String("format"), vals.String("scale"), vals.String("path"), vals.String("arch"))
	for a, p := range promotions {
		hs := heads[a]
		ex, qs := make([]attnCmp, len(hs)), make([]attnCmp, len(hs))
		for i, h := range hs {
			ex[i], qs[i] = h.exact, h.quant
		}
		all, vq := attnMerge(ex), attnMerge(qs)
		key := func(k string) string { return fmt.Sprintf("%s_p%d", k, p) }
		summary[key("relerr")], summary[key("alpha")], summary[key("residual")], summary[key("cosine")] = 100*all.RelL2, all.Alpha, 100*all.Residual, all.Cosine
		summary[key("relerr_vs_quantized")], summary[key("alpha_vs_quantized")], summary[key("residual_vs_quantized")], summary[key("cosine_vs_quantized")] = 100*vq.RelL2, vq.Alpha, 100*vq.Residual, vq.Cosine
		sorted := slices.Clone(hs)
		slices.SortStableFunc(sorted, worse)
		w := sorted[0]
		above := 0
		for _, h := range hs {
			if !(100*h.exact.RelL2 <= threshold) { // NaN counts as above
				above++
			}
		}
		pass := 100*w.exact.RelL2 <= threshold
		summary[key("worst_relerr")], summary[key("worst_layer")], summary[key("worst_head")] = 100*w.exact.RelL2, float64(w.layer), float64(w.head)
		summary[key("frac_heads_above")] = float64(above) / float64(len(hs))
		summary[key("pass")] = map[bool]float64{true: 1, false: 0}[pass]
		notes = append(notes, fmt.Sprintf("promotion %d: relative L2 %.4g%% over all heads = shrinkage α %.6g (1 − α = %.4g%%) and residual %.4g%% (relerr² = (1 − α)² + residual²), cosine %.9f; against exact attention on the quantized inputs %.4g%% (α %.6g, residual %.4g%%)",
			p, 100*all.RelL2, all.Alpha, 100*(1-all.Alpha), 100*all.Residual, all.Cosine, 100*vq.RelL2, vq.Alpha, 100*vq.Residual))
		verdict := "PASS"
		if !pass {
			verdict = "FAIL"
		}
		where := fmt.Sprintf("head %d", w.head)
		if dump {
			where = fmt.Sprintf("layer %d head %d", w.layer, w.head)
		}
		notes = append(notes, fmt.Sprintf("verdict, promotion %d (%s): %s — the worst head (%s) has %.4g%% against the threshold %.4g%%; %d of %d heads (%.1f%%) are above it (rule: PASS when the worst head is at most the threshold)",
			p, setup, verdict, where, 100*w.exact.RelL2, threshold, above, len(hs), 100*float64(above)/float64(len(hs))))
		var worst []string
		for _, h := range sorted[:min(5, len(sorted))] {
			name := fmt.Sprintf("head %d", h.head)
			if dump {
				name = fmt.Sprintf("layer %d head %d", h.layer, h.head)
			}
			worst = append(worst, fmt.Sprintf("%s %.4g%% (α %.6g, residual %.4g%%)", name, 100*h.exact.RelL2, h.exact.Alpha, 100*h.exact.Residual))
		}
		notes = append(notes, fmt.Sprintf("worst heads, promotion %d: %s", p, strings.Join(worst, "; ")))
		if dump {
			notes = append(notes, attnLayerTable(p, layers, hs))
		}
	}
	run.Summary(summary)
	run.Note(strings.Join(notes, "\n"))
}

// attnLayerTable is the layer × head table of relative errors (%) of one
// promotion, or a line saying where the figures are when it is too large.
func attnLayerTable(p int, layers []attnLayer, hs []attnHead) string {
	if len(hs) > attnVerdictMaxTable {
		return fmt.Sprintf("layer × head table, promotion %d: %d heads, more than the %d a note shows: every head is a point (and a row of heads.csv with -o)", p, len(hs), attnVerdictMaxTable)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "relative L2 error (%%) per layer (rows) and query head (columns), promotion %d:", p)
	i := 0
	for _, l := range layers {
		fmt.Fprintf(&b, "\n  layer %3d:", l.index)
		for ; i < len(hs) && hs[i].layer == l.index; i++ {
			fmt.Fprintf(&b, " %.3g", 100*hs[i].exact.RelL2)
		}
	}
	return b.String()
}

// attnFileFields are the point quantities of attention-file, each with
// its axis and unit.
var attnFileFields = []sim.Field{
	{Key: "y", Axis: sim.Axis{Quantity: "relative L2 error of O vs exact float64 on the unquantized tensors", Unit: "%"}},
	{Key: "x", Axis: sim.Axis{Quantity: "query head (a dump: heads of the earlier layers + head)", Unit: "index"}},
	{Key: "layer", Axis: sim.Axis{Quantity: "layer", Unit: "index"}},
	{Key: "head", Axis: sim.Axis{Quantity: "query head within its layer", Unit: "index"}},
	{Key: "splits", Axis: sim.Axis{Quantity: "split-KV ranges the kernel ran", Unit: "splits"}},
	{Key: "alpha", Axis: sim.Axis{Quantity: "shrinkage α = ⟨O, O*⟩ / ⟨O*, O*⟩ (1: none)", Unit: "ratio"}},
	{Key: "residual", Axis: sim.Axis{Quantity: "residual ‖O − αO*‖ / ‖O*‖", Unit: "%"}},
	{Key: "cosine", Axis: sim.Axis{Quantity: "cosine of O and O*", Unit: "cosine"}},
	{Key: "vs_quantized", Axis: sim.Axis{Quantity: "relative L2 error of O vs exact float64 on the quantized inputs", Unit: "%"}},
	{Key: "alpha_vs_quantized", Axis: sim.Axis{Quantity: "shrinkage α vs exact on the quantized inputs", Unit: "ratio"}},
	{Key: "residual_vs_quantized", Axis: sim.Axis{Quantity: "residual vs exact on the quantized inputs", Unit: "%"}},
	{Key: "cosine_vs_quantized", Axis: sim.Axis{Quantity: "cosine of O and exact on the quantized inputs", Unit: "cosine"}},
}

// Chart declares attention-file's chart: the error of each query head,
// drawn as points (heads are categories), every point field declared, the
// verdict's threshold as a line.
func (AttentionFile) Chart() sim.Chart {
	return sim.Chart{
		X: attnFileFields[1].Axis,
		Y: attnFileFields[0].Axis,
		Styles: []sim.Style{
			{Match: "promotion 0", Family: "never promoted (FA3 as shipped)", Points: true},
			{Match: "promotion 1", Family: "promoted every tile (two-level)", Points: true},
			{Match: "promotion *", Family: "promoted every N tiles", Points: true},
		},
		Fields: attnFileFields,
		Summary: []sim.SummaryField{
			{Match: "relerr_vs_quantized_*", Axis: sim.Axis{Quantity: "relative L2 error of O vs exact on the quantized inputs, over all heads", Unit: "%", Log: true}},
			{Match: "relerr_quantized_inputs", Axis: sim.Axis{Quantity: "relative L2 error of exact attention on the quantized inputs vs on the unquantized ones", Unit: "%", Log: true}},
			{Match: "relerr_*", Axis: sim.Axis{Quantity: "relative L2 error of O vs exact on the unquantized tensors, over all heads", Unit: "%", Log: true}},
			{Match: "residual_*", Axis: sim.Axis{Quantity: "residual ‖O − αO*‖/‖O*‖, over all heads", Unit: "%", Log: true}},
			{Match: "alpha_*", Axis: sim.Axis{Quantity: "shrinkage α = ⟨O, O*⟩/⟨O*, O*⟩, over all heads", Unit: "ratio"}},
			{Match: "cosine_*", Axis: sim.Axis{Quantity: "cosine of O and O*, over all heads", Unit: "ratio"}},
			{Match: "worst_relerr_*", Axis: sim.Axis{Quantity: "relative L2 error of the worst head", Unit: "%", Log: true}},
			{Match: "worst_layer_*", Axis: sim.Axis{Quantity: "layer of the worst head", Unit: "index"}},
			{Match: "worst_head_*", Axis: sim.Axis{Quantity: "query head of the worst head", Unit: "index"}},
			{Match: "frac_heads_above_*", Axis: sim.Axis{Quantity: "heads whose error is above the threshold", Unit: "fraction of heads"}},
			{Match: "pass_*", Axis: sim.Axis{Quantity: "verdict: the worst head within the threshold (1) or not (0)", Unit: "boolean"}},
			{Match: "threshold", Axis: sim.Axis{Quantity: "verdict threshold on the worst head's error", Unit: "%"}},
			{Match: "splits*", Axis: sim.Axis{Quantity: "split-KV ranges", Unit: "splits"}},
			{Match: "layers", Axis: sim.Axis{Quantity: "layers", Unit: "layers"}},
			{Match: "heads", Axis: sim.Axis{Quantity: "query heads over all layers", Unit: "heads"}},
			{Match: "query_heads", Axis: sim.Axis{Quantity: "query heads", Unit: "heads"}},
			{Match: "kv_heads", Axis: sim.Axis{Quantity: "KV heads", Unit: "heads"}},
			{Match: "query_tokens", Axis: sim.Axis{Quantity: "query tokens", Unit: "tokens"}},
			{Match: "tokens", Axis: sim.Axis{Quantity: "tokens of the cache", Unit: "tokens"}},
		},
		Refs: []sim.Ref{{Axis: "y", Summary: "threshold", Label: "verdict threshold"}},
	}
}

// Cost estimates attention-file from the headers of its files (the sizes
// of every layer, read without the data): per layer the exact and the
// quantized references and one kernel per promotion over every query row
// and token, the quantization of K and V, and hashing and reading every
// byte; the memory of the largest layer (K and V as float32 and float64,
// the cache, Q and the outputs). A file whose header cannot be read counts
// its size in bytes as its elements (the run then fails on it).
func (e AttentionFile) Cost(v sim.Values) sim.Cost {
	prom := int64(len(v.Ints("promotions")))
	layers, _, err := e.layers()
	if err != nil {
		return sim.Cost{Memory: costBase, Work: 1e6} // the run stops at its first check
	}
	ix := attnIndex{}
	opt := attnReadOptions(v)
	opt.MaxElements = e.maxElements()
	var work, mem, device int64
	sized := map[string]bool{}
	for _, l := range layers {
		shapes, names := map[string][]int{}, map[string]string{}
		var bytes int64
		for _, role := range attnRoles {
			ref, ok := l.refs[role]
			if !ok {
				continue
			}
			if info, err := os.Stat(ref.path); err == nil && !sized[ref.path] {
				sized[ref.path] = true
				bytes += info.Size()
			}
			if in, err := ix.info(ref, opt); err == nil {
				shapes[role], names[role] = in.Shape, attnInfoName(in)
			}
		}
		dm, err := attnFileDims(v.String("layout"), shapes, names)
		if err != nil { // sizes in bytes, an upper bound on the elements
			size := func(role string) int64 {
				if info, err := os.Stat(l.refs[role].path); err == nil {
					return info.Size()
				}
				return 0
			}
			dm = attnDims{mq: 1, qh: int(min(size("q"), 1<<40)), n: int(min(size("k"), 1<<40)), kvh: 1, d: 1, dv: 1}
		}
		rows := sim.MulSat(int64(dm.mq), int64(dm.qh))
		kvElems := sim.MulSat(int64(dm.n), int64(dm.kvh), int64(dm.d+dv1(dm)))
		w := sim.MulSat(rows, int64(dm.n), int64(dm.d), prom*costKernel+2*costRef)
		w = sim.AddSat(w, sim.MulSat(kvElems, 2*costQuant))
		work = sim.AddSat(work, sim.AddSat(w, sim.MulSat(bytes, 3)))
		m := sim.AddSat(costBase, sim.MulSat(kvElems, 4+8+2))
		m = sim.AddSat(m, sim.MulSat(rows, int64(dm.d), 4+8))
		m = sim.AddSat(m, sim.MulSat(rows, int64(dv1(dm)), 8*(prom+2)))
		if _, ok := l.refs["mask"]; ok {
			m = sim.AddSat(m, sim.MulSat(int64(dm.mq), int64(dm.n), 5))
		}
		mem = max(mem, m)
		device = max(device, sim.MulSat(kvElems, 5)) // a layer's cache packed on the device (as scales counts it)
	}
	return withGPU(v, sim.Cost{Memory: mem, Work: max(work, 1e6)}, device) // reading and checking the files: at least a millisecond
}

// dv1 is the V head dim, at least 1.
func dv1(d attnDims) int { return max(d.dv, 1) }
