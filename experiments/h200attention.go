package experiments

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(H200Attention{}) }

// H200Attention is the `h200-attention` experiment: the simulator on the
// inputs and settings of the real FP8 attention kernel measured on an H200
// (../shared/docs/h200-attention.md), its error figures beside the
// hardware's.
//
// The zero value looks for the H200 outputs itself and writes nothing (see
// the fields).
type H200Attention struct {
	// CapturesDir holds the H200's outputs (N{N}_fp8_bn{B}_mode{M}.f32,
	// N{N}_bf16_bn128_mode0.f32) for the element-wise comparison. Empty
	// means $FP8LAB_H200_ATTENTION if set, else testdata/h200-attention
	// under the module root; missing files only skip that comparison.
	CapturesDir string
	// OutDir, when set (or $FP8LAB_H200_OUT when the out parameter is
	// true), receives the simulated O of every series as raw little-endian
	// float32, 64 × 128 row major, named like the captures. sim parameters
	// have no free-text kind, so the folder cannot be a parameter.
	OutDir string
}

// Environment variables of the experiment.
const (
	h200AttentionCapturesEnv = "FP8LAB_H200_ATTENTION"
	h200AttentionOutEnv      = "FP8LAB_H200_OUT"
)

// h200AttentionH200 holds the figures measured on the H200 — relative L2
// error of O against the exact float64 attention on the same quantized
// inputs, and the retrieval accuracy over the 64 queries — keyed by N and
// by the probe's series key. They are the comparison target only, never an
// input. Source: testdata/h200-attention/attn_log.json (attn_probe.py on
// an NVIDIA H200, 2026-11-29), the full-precision values behind the table
// of ../shared/docs/h200-attention.md. "ref" is the accuracy of the exact
// attention.
var h200AttentionH200 = map[int]map[string][2]float64{
	4096: {
		"ref":              {0, 0.953125},
		"fp8_bn128_mode0":  {0.018580941466344456, 0.953125},
		"fp8_bn128_mode1":  {0.0015538107858501275, 0.953125},
		"fp8_bn128_mode4":  {0.0030212338687005684, 0.953125},
		"fp8_bn64_mode0":   {0.018619917168453303, 0.953125},
		"fp8_bn64_mode1":   {0.001452761210601367, 0.953125},
		"fp8_bn64_mode4":   {0.0020719276621521876, 0.953125},
		"bf16_bn128_mode0": {1.4207753493438045e-05, 0.953125},
	},
	16384: {
		"ref":              {0, 1.0},
		"fp8_bn128_mode0":  {0.06602294002675027, 1.0},
		"fp8_bn128_mode1":  {0.00246667651068095, 1.0},
		"fp8_bn128_mode4":  {0.003365042565121527, 1.0},
		"fp8_bn64_mode0":   {0.06605245009585974, 1.0},
		"fp8_bn64_mode1":   {0.0024013643485143064, 1.0},
		"fp8_bn64_mode4":   {0.0026976476703820438, 1.0},
		"bf16_bn128_mode0": {5.617241379171157e-05, 1.0},
	},
	65536: {
		"ref":              {0, 1.0},
		"fp8_bn128_mode0":  {0.24160579687871428, 0.921875},
		"fp8_bn128_mode1":  {0.0040973143135931605, 1.0},
		"fp8_bn128_mode4":  {0.0046460423086536525, 1.0},
		"fp8_bn64_mode0":   {0.2415918903429293, 0.921875},
		"fp8_bn64_mode1":   {0.004071343009405069, 1.0},
		"fp8_bn64_mode4":   {0.004222145849144698, 1.0},
		"bf16_bn128_mode0": {0.0002141442320114894, 1.0},
	},
	131072: {
		"ref":              {0, 1.0},
		"fp8_bn128_mode0":  {0.35766553720798855, 0.703125},
		"fp8_bn128_mode1":  {0.005276625585771586, 1.0},
		"fp8_bn128_mode4":  {0.0056331951484239785, 1.0},
		"fp8_bn64_mode0":   {0.35766434965550126, 0.703125},
		"fp8_bn64_mode1":   {0.00524053478607243, 1.0},
		"fp8_bn64_mode4":   {0.005331427971248792, 1.0},
		"bf16_bn128_mode0": {0.0003638675013759555, 1.0},
	},
}

// Name returns "h200-attention".
func (H200Attention) Name() string { return "h200-attention" }

// Doc describes the experiment.
func (H200Attention) Doc() string {
	return `The simulator on the inputs and kernel settings of a real FP8 attention measured on an H200, beside the H200's figures.

Inputs: attn_inputs.make(N) regenerated bit for bit (NumPy's PCG64 and
Irwin-Hall normals; 64 queries, head_dim 128, one KV head; Q, K ~ N(0,1),
V ~ N(0.5,1); each query's needle key 0.9·q at a random position with a ±2
sign code as its value). Kernel (attn_probe.py): Q, K, V cast to e4m3 with
PyTorch's nosat cast, scale 1/sqrt(128); KV tiles of blockN tokens newest
first; S through sm90.wgmma.e4m3.f32 from zero; P = exp2(s - m + 8) cast to
e4m3; P·V through sm90.wgmma.e4m3.f32, single-level (mode 0), promoted every
tile (1) or every 4 tiles (4); and the same kernel in bf16 (block-n 128,
single-level, sm90.wgmma.bf16.f32).

y: relative L2 error of O against the exact float64 attention on the same
quantized inputs, in percent. Extra: h200 (the H200's figure, %), diff_pct
(relative difference of the simulated figure from the H200's, %), acc and
h200_acc (needle retrieval: the sign code with the largest <O_r - 0.5, code>),
vs_h200 (relative L2 distance between the simulated and the H200's O, when
testdata/h200-attention holds them). The H200 figures are hard-coded from
testdata/h200-attention/attn_log.json as the comparison target only, and
drawn beside the simulation as the measured series "H200 <series>" (y: the
H200's relative L2 error in percent, acc its retrieval). Summary:
relerr_pct_N_KEY (%, as y), acc_N_KEY, diff_pct_N_KEY.

The out parameter writes every simulated O (raw float32, 64x128) into
$FP8LAB_H200_OUT (default ./h200-attention-sim), named like the captures.`
}

// Params returns the parameter schema.
func (H200Attention) Params() []sim.Param {
	return []sim.Param{
		{Name: "N", Doc: "context lengths (multiples of 128, as the probe's num_tiles = N // BLOCK_N drops a remainder)", Unit: "tokens",
			Kind: sim.KindInts, Default: []int{4096, 16384, 65536, 131072}, Min: 128, Max: 1 << 20},
		{Name: "block-n", Aliases: []string{"blockN"}, Doc: "KV tile widths of the fp8 kernel (multiples of 32)", Unit: "tokens",
			Kind: sim.KindInts, Default: []int{128, 64}, Min: 32, Max: 256},
		{Name: "modes", Doc: "P·V promotion of the fp8 kernel: 0 single-level, 1 every tile, N every N tiles",
			Kind: sim.KindInts, Default: []int{0, 1, 4}, Min: 0, Max: 4096},
		{Name: "bf16", Doc: "also run the bf16 kernel (block-n 128, single-level)", Kind: sim.KindBool, Default: true},
		{Name: "out", Doc: "write each simulated O as raw float32 into $" + h200AttentionOutEnv + " (default ./h200-attention-sim)",
			Kind: sim.KindBool, Default: false},
	}
}

// h200AttentionSeries is one kernel of the probe.
type h200AttentionSeries struct {
	key    string // the probe's key, e.g. fp8_bn128_mode0
	label  string
	dtype  fp8.Format
	blockN int
	mode   int
}

func h200AttentionLabel(dtype fp8.Format, blockN, mode int) string {
	name := "fp8"
	if dtype == fp8.FormatBF16 {
		name = "bf16"
	}
	switch mode {
	case 0:
		return fmt.Sprintf("%s bn%d single-level", name, blockN)
	case 1:
		return fmt.Sprintf("%s bn%d every tile", name, blockN)
	}
	return fmt.Sprintf("%s bn%d every %d tiles", name, blockN, mode)
}

// Run runs every context length.
func (e H200Attention) Run(ctx context.Context, run *sim.Run) error {
	ns, blocks, modes := run.Values.Ints("N"), run.Values.Ints("block-n"), run.Values.Ints("modes")
	for _, n := range ns {
		if n%128 != 0 {
			return fmt.Errorf("N = %d is not a multiple of 128", n)
		}
		for _, b := range blocks {
			if b%32 != 0 || n%b != 0 {
				return fmt.Errorf("block-n = %d must be a multiple of 32 dividing N = %d", b, n)
			}
		}
	}
	outDir := e.OutDir
	if outDir == "" && run.Values.Bool("out") {
		if outDir = os.Getenv(h200AttentionOutEnv); outDir == "" {
			outDir = "h200-attention-sim"
		}
	}
	if dir, set := run.FilesDir(); set && outDir != "" {
		// A runner that chose where runs write (the lab: its data folder)
		// gets the files there, whatever the environment says.
		if dir == "" {
			return errors.New(`parameter "out": this runner keeps no files of its runs (the lab needs a data folder)`)
		}
		outDir = dir
	}
	if outDir != "" {
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return err
		}
	}
	capDir := e.capturesDir()

	var series []h200AttentionSeries
	for _, b := range blocks {
		for _, m := range modes {
			series = append(series, h200AttentionSeries{fmt.Sprintf("fp8_bn%d_mode%d", b, m), h200AttentionLabel(fp8.FormatE4M3, b, m), fp8.FormatE4M3, b, m})
		}
	}
	if run.Values.Bool("bf16") {
		series = append(series, h200AttentionSeries{"bf16_bn128_mode0", "bf16", fp8.FormatBF16, 128, 0})
	}
	var total int64
	for range ns {
		total += int64(attention.H200Queries * (len(blocks) + 1))
	}
	run.AddTotal(total)

	summary := map[string]float64{}
	var worst float64
	within, figures := 0, 0
	var table []string
	for _, n := range ns {
		res, err := h200AttentionOne(ctx, run, n, blocks, modes, run.Values.Bool("bf16"))
		if err != nil {
			return err
		}
		h200 := h200AttentionH200[n]
		exact := map[string]float64{"acc": res.refAcc}
		if fig, ok := h200["ref"]; ok {
			exact["h200_acc"] = fig[1]
		}
		if err := run.Emit(sim.Point{Series: "exact attention", X: float64(n), Y: 0, Extra: exact}); err != nil {
			return err
		}
		for _, s := range series {
			o := res.out[s.key]
			if outDir != "" {
				if err := attnWriteF32(filepath.Join(outDir, fmt.Sprintf("N%d_%s.f32", n, s.key)), o.o); err != nil {
					return err
				}
			}
			extra := map[string]float64{"acc": o.acc}
			cell := fmt.Sprintf(" %.4g%% (%.2f)", 100*o.err, o.acc)
			if fig, ok := h200[s.key]; ok {
				diff := 100 * (o.err - fig[0]) / fig[0]
				extra["h200"], extra["h200_acc"], extra["diff_pct"] = 100*fig[0], fig[1], diff
				cell = fmt.Sprintf(" %.4g%% vs %.4g%% (%+.2f%%), acc %.2f/%.2f", 100*o.err, 100*fig[0], diff, o.acc, fig[1])
				summary[fmt.Sprintf("diff_pct_%d_%s", n, s.key)] = diff
				worst = max(worst, math.Abs(diff))
				figures++
				if math.Abs(diff) <= 1 {
					within++
				}
			}
			if hw, err := attnReadF32(filepath.Join(capDir, fmt.Sprintf("N%d_%s.f32", n, s.key)), len(o.o)); err == nil {
				ref := make([]float64, len(hw))
				for i, x := range hw {
					ref[i] = float64(x)
				}
				extra["vs_h200"] = attention.Compare(o.o, ref).RelL2
				cell += fmt.Sprintf(", O vs H200's O %.2g", extra["vs_h200"])
			}
			summary[fmt.Sprintf("relerr_pct_%d_%s", n, s.key)] = 100 * o.err
			summary[fmt.Sprintf("acc_%d_%s", n, s.key)] = o.acc
			if err := run.Emit(sim.Point{Series: s.label, X: float64(n), Y: 100 * o.err, Extra: extra}); err != nil {
				return err
			}
			if fig, ok := h200[s.key]; ok {
				// The H200's own figure, as a measured series beside the
				// simulated one (the comparison the experiment is about).
				if err := run.Emit(sim.Point{Series: h200AttentionMeasured + s.label, X: float64(n), Y: 100 * fig[0],
					Extra: map[string]float64{"acc": fig[1]}}); err != nil {
					return err
				}
			}
			table = append(table, fmt.Sprintf("  N %6d  %-24s%s", n, s.label, cell))
		}
		summary[fmt.Sprintf("acc_%d_ref", n)] = res.refAcc
	}
	summary["figures_compared"] = float64(figures)
	summary["figures_within_1pct"] = float64(within)
	summary["max_abs_diff_pct"] = worst
	run.Summary(summary)
	run.Note("simulated relative L2 error vs the H200's (relative difference), retrieval accuracy simulated/H200:\n" + strings.Join(table, "\n"))
	return nil
}

// h200AttentionMeasured prefixes the series of the H200's figures.
const h200AttentionMeasured = "H200 "

// capturesDir is where the H200's outputs are looked for.
func (e H200Attention) capturesDir() string {
	if e.CapturesDir != "" {
		return e.CapturesDir
	}
	if d := os.Getenv(h200AttentionCapturesEnv); d != "" {
		return d
	}
	root, err := moduleRoot()
	if err != nil {
		return ""
	}
	return filepath.Join(root, "testdata", "h200-attention")
}

// h200AttentionOutput is one simulated kernel's O and its figures.
type h200AttentionOutput struct {
	o   []float64 // 64 × 128
	err float64   // relative L2 against the exact attention
	acc float64   // retrieval accuracy
}

type h200AttentionResult struct {
	refAcc float64
	out    map[string]h200AttentionOutput
}

// h200AttentionOne simulates every kernel on the inputs of one N: the 64
// queries are independent rows (one block of 64, no mask), run in parallel
// as Trials; each fp8 row runs every mode at once (RunPromotions: the
// modes share S and P).
func h200AttentionOne(ctx context.Context, run *sim.Run, n int, blocks, modes []int, bf16 bool) (*h200AttentionResult, error) {
	in, err := attention.MakeH200Inputs(n)
	if err != nil {
		return nil, err
	}
	const m, d = attention.H200Queries, attention.H200HeadDim
	shape := fp8.Shape{Tokens: n, Heads: 1, Dim: d}
	res := &h200AttentionResult{out: map[string]h200AttentionOutput{}}
	retrieve := func(o []float64) float64 {
		hits := 0
		for r := 0; r < m; r++ {
			if attnRetrieve(o[r*d:(r+1)*d], attention.H200Mu, in.Signs, d) == r {
				hits++
			}
		}
		return float64(hits) / m
	}
	for _, dtype := range []fp8.Format{fp8.FormatE4M3, fp8.FormatBF16} {
		if dtype == fp8.FormatBF16 && !bf16 {
			continue
		}
		kv, err := attention.NewKVContext(ctx, in.K, in.V, shape, dtype, fp8.NoSat, nil, nil)
		if err != nil {
			return nil, err
		}
		base := attention.Config{HeadDim: d, DType: dtype, Saturation: fp8.NoSat, KBlockM: m,
			SoftmaxScale: 1 / math.Sqrt(d)}
		ref, err := attention.ReferenceQuantized(ctx, base, in.Q, nil, kv)
		if err != nil {
			return nil, err
		}
		if dtype == fp8.FormatE4M3 {
			res.refAcc = retrieve(ref)
		}
		bs, ms := blocks, modes
		if dtype == fp8.FormatBF16 {
			bs, ms = []int{128}, []int{0}
		}
		for _, bn := range bs {
			cfg := base
			cfg.KBlockN = bn
			rows, err := sim.Trials(ctx, run, fmt.Sprintf("h200-attention/%d/%s/%d", n, dtype, bn), m,
				func(r int, _ *rand.Rand) attnRows {
					out, err := attention.RunPromotions(ctx, cfg, ms, in.Q[r*d:(r+1)*d], nil, kv)
					return attnRows{out, err}
				})
			if err := attnFirstErr(ctx, rows, err); err != nil {
				return nil, err
			}
			for i, mode := range ms {
				o := make([]float64, m*d)
				for r := range rows {
					copy(o[r*d:], rows[r].o[i])
				}
				key := fmt.Sprintf("fp8_bn%d_mode%d", bn, mode)
				if dtype == fp8.FormatBF16 {
					key = "bf16_bn128_mode0"
				}
				res.out[key] = h200AttentionOutput{o: o, err: attention.Compare(o, ref).RelL2, acc: retrieve(o)}
			}
		}
	}
	return res, nil
}
