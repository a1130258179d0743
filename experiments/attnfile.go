package experiments

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/tensorfile"
	"github.com/fp8lab/fp8lab/wgsl"
)

func init() { sim.Register(AttentionFile{}) }

// AttentionFile is the `attention-file` experiment: the simulator on the
// user's own Q, K and V (and optional query positions and mask), read from
// .npy or .safetensors files, in any KV format, path and arithmetic, its
// error against exact float64 attention on the unquantized tensors
// reported per query head and overall.
//
// The files are not parameters (sim parameters have no free-text kind):
// `lab run attention-file -q q.npy -k k.npy -v v.npy` sets Files through
// WithFiles, and the lab sets them to files inside its tensors folder.
type AttentionFile struct {
	// Files names the tensors by role: q, k, v (required), positions, mask
	// (optional). A name is a path, or path:tensor for a .safetensors file
	// holding several tensors.
	Files map[string]string
	// Root, when set, is the folder every file must lie in (the lab's
	// tensors folder): a name is then relative to it and may not leave it.
	Root string
	// MaxElements bounds each tensor (0: tensorfile.DefaultMaxElements).
	MaxElements int64
	// OutDir, when set, receives the simulated O of each promotion as
	// o_promotion{N}.npy (float32, [query tokens, query heads, V head dim])
	// and the exact attention on the unquantized tensors as o_exact.npy.
	OutDir string
}

// FileRole is one input file of an experiment that reads files: its flag
// name and doc.
type FileRole struct{ Name, Doc string }

// FileExperiment is an experiment whose inputs include files named outside
// its parameters (cmd/lab gives each role a flag, -NAME path).
type FileExperiment interface {
	sim.Experiment
	FileRoles() []FileRole
	// WithFiles returns the experiment reading files (role → name).
	WithFiles(files map[string]string) (sim.Experiment, error)
	// WithOutDir returns the experiment writing its outputs into dir.
	WithOutDir(dir string) sim.Experiment
}

// FileRoles returns AttentionFileRoles.
func (AttentionFile) FileRoles() []FileRole { return AttentionFileRoles }

// WithOutDir returns the experiment writing O into dir (see OutDir).
func (e AttentionFile) WithOutDir(dir string) sim.Experiment { e.OutDir = dir; return e }

// AttentionFileRoles are the file roles of attention-file, with their doc.
var AttentionFileRoles = []FileRole{
	{"q", "queries: [tokens, heads, dim] or [heads, tokens, dim]; 2-D: one head"},
	{"k", "keys: [tokens, kv heads, dim] or [kv heads, tokens, dim]"},
	{"v", "values: as k, with V's head dim (512 for MLA)"},
	{"positions", "optional: each query token's position in the sequence"},
	{"mask", "optional: [query tokens, tokens], nonzero where a key takes part"},
}

// WithFiles returns the experiment reading files (role → name).
func (e AttentionFile) WithFiles(files map[string]string) (sim.Experiment, error) {
	for role := range files {
		ok := false
		for _, r := range AttentionFileRoles {
			ok = ok || r.Name == role
		}
		if !ok {
			return nil, fmt.Errorf("attention-file: unknown file role %q (want q, k, v, positions, mask)", role)
		}
	}
	e.Files = files
	return e, nil
}

// Name returns "attention-file".
func (AttentionFile) Name() string { return "attention-file" }

// Doc describes the experiment.
func (AttentionFile) Doc() string {
	return `The simulator on your own Q, K, V tensors (.npy or .safetensors): error per query head against exact attention.

Files (lab run attention-file -q q.npy -k k.npy -v v.npy [-positions p.npy]
[-mask m.npy]; a safetensors file holding several tensors is named
file.safetensors:tensor): float32, float16, bfloat16 (safetensors BF16, or
.npy '<V2' with void2=bfloat16) and float8_e4m3fn (safetensors F8_E4M3, or
.npy '|V1'). Layout thd is [tokens, heads, dim], htd [heads, tokens, dim]; a
leading batch dimension of 1 is dropped, a 2-D tensor is one head. Query
heads must be a multiple of KV heads (GQA); K's head dim 64, 128, 192, 256,
512 or 576 (MLA, with V's 512). Queries are the last tokens of the sequence
unless positions are given.

The cache is stored in format (with k/v scale granularities, the scale
choice and the saturation), fed to the MMA by path (direct, dequant-bf16,
dequant-e4m3, or block-scaled: mxfp8/nvfp4/mxfp4 read natively by tcgen05
kind::mxf8f6f4/mxf4/mxf4nvf4, blackwell only) with the arithmetic of arch (hopper wgmma or blackwell
tcgen05), P·V promoted as each of promotions says (0 never, 1 every tile,
N every N tiles). Every input must be finite. device gpu runs the kernels
through WebGPU (bit for bit with cpu) for a decode (one query token) whose
MMA reads e4m3, e5m2, bf16 or f16, or the block-scaled codes natively, with
head_dim 64, 128 or 256 and no mask.

y: relative L2 error (%) of O of each query head (x) against exact float64
attention on the unquantized tensors, one series per promotion; extra
vs_quantized is the error against exact attention on the quantized inputs.
The summary gives the same over all heads.`
}

// Params returns the parameter schema.
func (AttentionFile) Params() []sim.Param {
	var formats []string
	for _, f := range attention.KVFormats() {
		formats = append(formats, f.String())
	}
	return []sim.Param{
		{Name: "layout", Doc: "axis order of the files: thd [tokens, heads, dim] or htd [heads, tokens, dim]", Kind: sim.KindChoice, Default: "thd", Choices: []string{"thd", "htd"}},
		{Name: "format", Doc: "KV-cache format", Kind: sim.KindChoice, Default: "e4m3", Choices: formats},
		{Name: "k-scales", Aliases: []string{"kScales"}, Doc: "K scale granularity (e4m3/e5m2)", Kind: sim.KindChoice, Default: "tensor", Choices: []string{"tensor", "head", "token-head", "channel"}},
		{Name: "v-scales", Aliases: []string{"vScales"}, Doc: "V scale granularity (e4m3/e5m2)", Kind: sim.KindChoice, Default: "tensor", Choices: []string{"tensor", "head", "token-head"}},
		{Name: "scale", Doc: "static scales: 1.0, amax of the cache, amax of a calibration prefix", Kind: sim.KindChoice, Default: "one", Choices: []string{"one", "amax", "prefix"}},
		{Name: "prefix", Doc: "calibration prefix of scale=prefix", Unit: "tokens", Kind: sim.KindInt, Default: 1024, Min: 1, Max: 1 << 24},
		{Name: "path", Doc: "how the MMA reads the cache", Kind: sim.KindChoice, Default: "direct", Choices: []string{"direct", "dequant-bf16", "dequant-e4m3", "block-scaled"}},
		{Name: "arch", Doc: "tensor-core arithmetic of both GEMMs", Kind: sim.KindChoice, Default: "hopper", Choices: []string{"hopper", "blackwell"}},
		{Name: "saturation", Doc: "cast of Q, K, V to fp8: satfinite (vLLM) or nosat (PyTorch .to())", Kind: sim.KindChoice, Default: "satfinite", Choices: []string{"satfinite", "nosat"}},
		{Name: "promotions", Doc: "P·V promotion intervals (0 never, 1 every tile, N every N tiles)", Kind: sim.KindInts, Default: []int{0, 1}, Min: 0, Max: 1 << 20},
		{Name: "k-block-m", Aliases: []string{"kBlockM"}, Doc: "query tile; 0 is FA3's", Kind: sim.KindInt, Default: 0, Min: 0, Max: attention.MaxKBlockM},
		{Name: "k-block-n", Aliases: []string{"kBlockN"}, Doc: "KV tile; 0 is FA3's", Unit: "tokens", Kind: sim.KindInt, Default: 0, Min: 0, Max: attention.MaxKBlockN},
		{Name: "causal", Doc: "causal mask (queries at the end, or at their positions)", Kind: sim.KindBool, Default: false},
		{Name: "window", Doc: "sliding window; 0 none", Unit: "tokens", Kind: sim.KindInt, Default: 0, Min: 0, Max: 1 << 24},
		{Name: "softmax-scale", Aliases: []string{"softmaxScale"}, Doc: "multiplies Q·Kᵀ; 0 is 1/sqrt(head dim)", Kind: sim.KindFloat, Default: 0.0, Min: 0, Max: 1e6},
		{Name: "void2", Doc: "type of .npy '<V2' elements (ml_dtypes)", Kind: sim.KindChoice, Default: "bfloat16", Choices: []string{"bfloat16", "float16"}},
		{Name: "device", Kind: sim.KindChoice, Default: deviceCPU, Choices: []string{deviceCPU, deviceGPU},
			Doc: "where the kernel runs: cpu (package attention) or gpu (wgsl.SimDecode, bit for bit: a decode, one query token, " +
				"whose MMA reads e4m3/e5m2/bf16/f16 or block-scaled codes, head_dim 64/128/256, no mask; the references stay on the CPU)"},
	}
}

// attnFileInputs are the tensors of one run in the simulator's layout.
type attnFileInputs struct {
	q, k, v     []float32 // [tokens][heads][dim]
	mq, n       int
	qh, kvh     int
	d, dv       int
	positions   []int
	mask        []bool
	names       map[string]string // role → file name, for messages
	sourceTypes map[string]tensorfile.DType
}

// attnFileOpen resolves a file name against root (when set), refusing
// names that leave it.
func attnFileOpen(root, name string) (path, tensor string, err error) {
	path = name
	if i := strings.LastIndex(name, ".safetensors:"); i >= 0 {
		path, tensor = name[:i+len(".safetensors")], name[i+len(".safetensors:"):]
	}
	if root != "" {
		if !filepath.IsLocal(path) {
			return "", "", fmt.Errorf("%s: not a name inside the tensors folder", name)
		}
		path = filepath.Join(root, path)
		if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
			return "", "", fmt.Errorf("%s: not a regular file of the tensors folder (links are refused)", name)
		}
	}
	return path, tensor, nil
}

// read reads one role's tensor.
func (e AttentionFile) read(role string, opt tensorfile.Options) (*tensorfile.Tensor, error) {
	name, ok := e.Files[role]
	if !ok || name == "" {
		return nil, nil
	}
	path, tensor, err := attnFileOpen(e.Root, name)
	if err != nil {
		return nil, err
	}
	if e.MaxElements > 0 {
		opt.MaxElements = e.MaxElements
	}
	t, err := tensorfile.ReadFile(path, tensor, opt)
	if err != nil {
		return nil, fmt.Errorf("%s file: %w", role, err)
	}
	if err := t.CheckFinite(); err != nil {
		return nil, fmt.Errorf("%s file: %w", role, err)
	}
	return t, nil
}

// attnFileLayout returns t as [tokens][heads][dim] with its sizes.
func attnFileLayout(role string, t *tensorfile.Tensor, layout string) (x []float32, tokens, heads, dim int, err error) {
	sh := slices.Clone(t.Shape)
	if len(sh) == 4 && sh[0] == 1 {
		sh = sh[1:]
	}
	switch len(sh) {
	case 2:
		return t.Data, sh[0], 1, sh[1], nil
	case 3:
	default:
		return nil, 0, 0, 0, fmt.Errorf("%s file %s: shape %v: want [tokens, heads, dim] or [heads, tokens, dim] (2-D: one head; 4-D with a batch of 1)", role, t.File, t.Shape)
	}
	if layout == "thd" {
		return t.Data, sh[0], sh[1], sh[2], nil
	}
	heads, tokens, dim = sh[0], sh[1], sh[2]
	x = make([]float32, len(t.Data))
	for h := 0; h < heads; h++ {
		for tok := 0; tok < tokens; tok++ {
			copy(x[(tok*heads+h)*dim:][:dim], t.Data[(h*tokens+tok)*dim:][:dim])
		}
	}
	return x, tokens, heads, dim, nil
}

// inputs reads and checks every file.
func (e AttentionFile) inputs(vals sim.Values) (*attnFileInputs, error) {
	for _, role := range []string{"q", "k", "v"} {
		if e.Files[role] == "" {
			return nil, fmt.Errorf("attention-file needs q, k and v files (lab run attention-file -q q.npy -k k.npy -v v.npy; in the lab, upload or pick them): no %s file", role)
		}
	}
	opt := tensorfile.Options{Void1: tensorfile.F8E4M3, Void2: tensorfile.BF16}
	if vals.String("void2") == "float16" {
		opt.Void2 = tensorfile.F16
	}
	layout := vals.String("layout")
	in := &attnFileInputs{names: map[string]string{}, sourceTypes: map[string]tensorfile.DType{}}
	var err error
	ts := map[string]*tensorfile.Tensor{}
	for _, role := range []string{"q", "k", "v", "positions", "mask"} {
		t, err := e.read(role, opt)
		if err != nil {
			return nil, err
		}
		if t != nil {
			ts[role] = t
			in.names[role], in.sourceTypes[role] = t.File, t.DType
		}
	}
	var qt, kt, vt int
	if in.q, qt, in.qh, in.d, err = attnFileLayout("q", ts["q"], layout); err != nil {
		return nil, err
	}
	var kd int
	if in.k, kt, in.kvh, kd, err = attnFileLayout("k", ts["k"], layout); err != nil {
		return nil, err
	}
	var vh int
	if in.v, vt, vh, in.dv, err = attnFileLayout("v", ts["v"], layout); err != nil {
		return nil, err
	}
	in.mq, in.n = qt, kt
	switch {
	case kd != in.d:
		return nil, fmt.Errorf("q file %s has head dim %d, k file %s %d: they must agree", in.names["q"], in.d, in.names["k"], kd)
	case vt != kt || vh != in.kvh:
		return nil, fmt.Errorf("v file %s has %d tokens × %d heads, k file %s %d × %d: they must agree (layout %s)", in.names["v"], vt, vh, in.names["k"], kt, in.kvh, layout)
	case in.qh%in.kvh != 0:
		return nil, fmt.Errorf("q file %s has %d heads, not a multiple of k's %d (GQA)", in.names["q"], in.qh, in.kvh)
	case in.mq > in.n && ts["positions"] == nil:
		return nil, fmt.Errorf("q file %s has %d tokens, more than k's %d: give positions", in.names["q"], in.mq, in.n)
	}
	if p := ts["positions"]; p != nil {
		if len(p.Data) != in.mq {
			return nil, fmt.Errorf("positions file %s holds %d values for %d query tokens", p.File, len(p.Data), in.mq)
		}
		for i, x := range p.Data {
			if float64(x) != math.Trunc(float64(x)) || x < 0 || int(x) >= in.n {
				return nil, fmt.Errorf("positions file %s: element %d is %g, not a position 0 … %d", p.File, i, x, in.n-1)
			}
			in.positions = append(in.positions, int(x))
		}
	}
	if m := ts["mask"]; m != nil {
		if len(m.Data) != in.mq*in.n {
			return nil, fmt.Errorf("mask file %s has shape %v: want [%d, %d] (query tokens × tokens)", m.File, m.Shape, in.mq, in.n)
		}
		in.mask = make([]bool, len(m.Data))
		for i, x := range m.Data {
			in.mask[i] = x != 0
		}
	}
	return in, nil
}

// attnFileSpec builds the KV spec and kernel config from the values.
func attnFileSpec(vals sim.Values, in *attnFileInputs) (attention.KVSpec, attention.Config, error) {
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
	spec.PrefixTokens = min(vals.Int("prefix"), in.n)
	if spec.Path, err = attention.ParsePath(vals.String("path")); err != nil {
		return spec, attention.Config{}, err
	}
	if vals.String("saturation") == "nosat" {
		spec.Saturation = fp8.NoSat
	}
	if err := spec.Check(attention.KVShape{Tokens: in.n, Heads: in.kvh, KDim: in.d, VDim: in.dv}); err != nil {
		return spec, attention.Config{}, err
	}
	dt := spec.DType()
	qk, pv, err := spec.Models(vals.String("arch"))
	if err != nil {
		return spec, attention.Config{}, err
	}
	cfg := attention.Config{HeadDim: in.d, VDim: in.dv, KVHeads: in.kvh, QHeads: in.qh, DType: dt, Saturation: spec.Saturation,
		QKModel: qk, PVModel: pv, KBlockM: vals.Int("k-block-m"), KBlockN: vals.Int("k-block-n"),
		Causal: vals.Bool("causal"), Window: vals.Int("window"), SoftmaxScale: vals.Float("softmax-scale"),
		Positions: in.positions, Mask: in.mask}
	return spec, cfg, nil
}

// attnFileResult is the outputs of one run.
type attnFileResult struct {
	exact, quantRef []float64   // float64 attention on the unquantized / quantized inputs
	out             [][]float64 // one O per promotion, [mq][QHeads][VDim]
}

// compute runs the simulator on the inputs: the query tokens are split
// into blocks of kBlockM rows run in parallel (sim.Trials) with the tiles
// and positions of the whole run, which gives the outputs of one run.
func (e AttentionFile) compute(ctx context.Context, run *sim.Run, vals sim.Values, in *attnFileInputs) (*attnFileResult, error) {
	spec, cfg, err := attnFileSpec(vals, in)
	if err != nil {
		return nil, err
	}
	promotions := vals.Ints("promotions")
	cfg.Promotion = promotions[0]
	kv, err := attention.QuantizeKV(in.k, in.v, attention.KVShape{Tokens: in.n, Heads: in.kvh, KDim: in.d, VDim: in.dv}, spec)
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
	q64, k64, v64 := f64s(in.q), f64s(in.k), f64s(in.v)
	if res.exact, err = attention.Reference(ctx, cfg, q64, k64, v64, in.mq, in.n); err != nil {
		return nil, err
	}
	if res.quantRef, err = attention.ReferenceQuantized(ctx, cfg, in.q, nil, kv); err != nil {
		return nil, err
	}
	if vals.String("device") == deviceGPU {
		if res.out, err = attnFileGPU(ctx, run, cfg, promotions, in, kv); err != nil {
			return nil, err
		}
		return res, nil
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
	res.out = make([][]float64, len(promotions))
	for a := range promotions {
		res.out[a] = make([]float64, in.mq*orow)
		for b, r := range rows {
			copy(res.out[a][b*bm*orow:], r.o[a])
		}
	}
	return res, nil
}

// attnFileGPU runs the kernel of each promotion on the GPU
// (wgsl.SimDecode): a decode, one query token, in a configuration the WGSL
// simulator runs, else an error naming what it does not run.
func attnFileGPU(ctx context.Context, run *sim.Run, cfg attention.Config, promotions []int, in *attnFileInputs, kv *attention.KV) ([][]float64, error) {
	if in.mq != 1 {
		return nil, fmt.Errorf("device gpu runs a decode: one query token, the q file %s has %d (use device cpu)", in.names["q"], in.mq)
	}
	if in.positions == nil {
		cfg.Positions = nil // the last position, SimDecode's
	}
	if err := wgsl.SimDecodeSupports(cfg); err != nil {
		return nil, fmt.Errorf("device gpu: %w (use device cpu)", err)
	}
	g, err := openDevice(ctx, run.Values)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	run.Note(fmt.Sprintf("device gpu: the kernels ran on %s (the references on the CPU)", g.Info().Name))
	out := make([][]float64, len(promotions))
	for a, p := range promotions {
		cfg.Promotion = p
		if out[a], err = g.SimDecode(ctx, cfg, in.q, nil, kv); err != nil {
			return nil, err
		}
	}
	return out, nil
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

// Run reads the files, runs the simulator and reports per head and overall.
func (e AttentionFile) Run(ctx context.Context, run *sim.Run) error {
	in, err := e.inputs(run.Values)
	if err != nil {
		return err
	}
	res, err := e.compute(ctx, run, run.Values, in)
	if err != nil {
		return err
	}
	promotions := run.Values.Ints("promotions")
	if e.OutDir != "" {
		shape := []int{in.mq, in.qh, in.dv}
		if err := tensorfile.WriteNPY(filepath.Join(e.OutDir, "o_exact.npy"), shape, f32s(res.exact)); err != nil {
			return err
		}
		for a, p := range promotions {
			if err := tensorfile.WriteNPY(filepath.Join(e.OutDir, fmt.Sprintf("o_promotion%d.npy", p)), shape, f32s(res.out[a])); err != nil {
				return err
			}
		}
	}
	summary := map[string]float64{"query_tokens": float64(in.mq), "tokens": float64(in.n), "query_heads": float64(in.qh), "kv_heads": float64(in.kvh)}
	var lines []string
	for a, p := range promotions {
		series := fmt.Sprintf("promotion %d", p)
		for h := 0; h < in.qh; h++ {
			o := attnFileHead(res.out[a], in.mq, in.qh, in.dv, h)
			ex := attnFileHead(res.exact, in.mq, in.qh, in.dv, h)
			qr := attnFileHead(res.quantRef, in.mq, in.qh, in.dv, h)
			err := attention.Compare(o, ex)
			if err2 := run.Emit(sim.Point{Series: series, X: float64(h), Y: 100 * err.RelL2,
				Extra: map[string]float64{"vs_quantized": 100 * attention.Compare(o, qr).RelL2, "cosine": err.Cosine}}); err2 != nil {
				return err2
			}
		}
		all := attention.Compare(res.out[a], res.exact)
		summary[fmt.Sprintf("relerr_p%d", p)] = all.RelL2
		summary[fmt.Sprintf("relerr_vs_quantized_p%d", p)] = attention.Compare(res.out[a], res.quantRef).RelL2
		lines = append(lines, fmt.Sprintf("  promotion %d: relative L2 %.4g%% vs exact on the unquantized tensors, %.4g%% vs exact on the quantized inputs", p, 100*all.RelL2, 100*summary[fmt.Sprintf("relerr_vs_quantized_p%d", p)]))
	}
	summary["relerr_quantized_inputs"] = attention.Compare(res.quantRef, res.exact).RelL2
	run.Summary(summary)
	var files []string
	for _, role := range []string{"q", "k", "v", "positions", "mask"} {
		if n, ok := in.names[role]; ok {
			files = append(files, fmt.Sprintf("%s=%s (%s)", role, n, in.sourceTypes[role]))
		}
	}
	run.Note(fmt.Sprintf("%s; %d query tokens × %d heads over %d tokens × %d KV heads, head dim %d/%d\n%s",
		strings.Join(files, ", "), in.mq, in.qh, in.n, in.kvh, in.d, in.dv, strings.Join(lines, "\n")))
	return nil
}

// Chart declares attention-file's chart: the error of each query head.
func (AttentionFile) Chart() sim.Chart {
	return sim.Chart{
		X: sim.Axis{Quantity: "query head", Unit: "index"},
		Y: sim.Axis{Quantity: "relative L2 error of O vs exact float64 on the unquantized tensors", Unit: "%"},
		Styles: []sim.Style{
			{Match: "promotion 0", Family: "never promoted (FA3 as shipped)"},
			{Match: "promotion 1", Family: "promoted every tile (two-level)"},
			{Match: "promotion *", Family: "promoted every N tiles"},
		},
	}
}

// Cost estimates attention-file from the sizes of its files (every
// element at least one byte, head dim at least 64): the exact and the
// quantized references and one kernel per promotion over every query row
// and token; K and V held as float32 and float64, the cache, Q and O.
func (e AttentionFile) Cost(v sim.Values) sim.Cost {
	size := func(role string) int64 {
		name, ok := e.Files[role]
		if !ok {
			return 0
		}
		path, _, err := attnFileOpen(e.Root, name)
		if err != nil {
			return 0
		}
		info, err := os.Stat(path)
		if err != nil {
			return 0
		}
		return info.Size()
	}
	q, k, vv := size("q"), size("k"), size("v")
	prom := int64(len(v.Ints("promotions")))
	work := sim.MulSat(q, k/64+1, prom*costKernel+2*costRef)
	work = sim.AddSat(work, sim.MulSat(k+vv, 2*costQuant))
	mem := sim.AddSat(costBase, sim.MulSat(k+vv, 4+8+2))
	mem = sim.AddSat(mem, sim.MulSat(q, 4+8+8*(prom+2)))
	mem = sim.AddSat(mem, sim.MulSat(size("mask"), 2))
	return sim.Cost{Memory: mem, Work: max(work, 1e6)} // reading and checking the files: at least a millisecond
}
