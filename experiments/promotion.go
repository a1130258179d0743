package experiments

import (
	"context"
	"fmt"
	"slices"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
)

func init() { sim.Register(Promotion{}) }

// Promotion is the `promotion` experiment: needle retrieval accuracy and
// output error of FP8 attention against how often P·V is promoted out of
// the tensor core (every tile, every 4, every 64 tiles, never), for the
// decode and the prefill KV tile widths.
type Promotion struct{}

// Name returns "promotion".
func (Promotion) Name() string { return "promotion" }

// Doc describes the experiment.
func (Promotion) Doc() string {
	return `Needle accuracy and output error of FP8 attention vs the promotion interval of P·V (every tile, 4, 64 tiles, never) and the KV tile width.

The needle task of the needle experiment (same parameters and defaults) at one
context length. For each kBlockN (96: FA3's head_dim-128 decode tile; 192: its
two-level prefill tile; they round differently) the e4m3 kernel runs with P·V
promoted into an FP32 register every N tiles (1: vLLM's two-level
accumulation, flash-attention #104; N > 1: the lazy acc_scale variant of #122;
0: never, FA3 as shipped). All intervals of one tile width share each trial's
scores and P.

Series "kBlockN B": x = tokens accumulated inside the tensor core between
promotions (N·B; the context length for never), y = retrieval accuracy; extra:
interval (tiles, 0 = never), relerr (mean relative L2 error of O against the
exact attention on the same quantized inputs), se. Series bf16: the bf16
kernel at x = context. Published (RULER niah_multikey_2, Llama-3.1-8B, 128k):
every tile 0.89, every 4 0.88, every 64 0.856 (vllm-project/flash-attention
#122); bf16 0.912 and never 0.13 (vLLM blog 2026-04-22, Fig. 1, scale 1.0).
-stats llama31-8b draws the haystack with published Llama-3-8B statistics
(docs/real-stats.md).`
}

// Params returns the parameter schema.
func (Promotion) Params() []sim.Param {
	p := []sim.Param{
		{Name: "context", Doc: "context length", Unit: "tokens", Kind: sim.KindInt, Default: 131072, Min: 64, Max: 1 << 20},
		{Name: "trials", Doc: "trials", Kind: sim.KindInt, Default: 100, Min: 1, Max: 1000000},
		{Name: "intervals", Doc: "promotion intervals in tiles (0 = never)", Kind: sim.KindInts, Default: []int{1, 4, 64, 0}, Min: 0, Max: 1 << 20},
		{Name: "k-block-n", Aliases: []string{"kBlockN"}, Doc: "KV tile widths (multiples of 32)", Unit: "tokens", Kind: sim.KindInts, Default: []int{96, 192}, Min: 32, Max: attention.MaxKBlockN},
		{Name: "bf16", Doc: "also run the bf16 kernel", Kind: sim.KindBool, Default: true},
	}
	return append(p, attnNeedleParams(needleDefaultMargin)...)
}

// Run runs the trials at the context length.
func (Promotion) Run(ctx context.Context, run *sim.Run) error {
	t := attnNeedleFromValues(run.Values)
	done, err := t.useDevice(ctx, run.Values)
	if err != nil {
		return err
	}
	defer done()
	n, trials := run.Values.Int("context"), run.Values.Int("trials")
	intervals, blocks := run.Values.Ints("intervals"), run.Values.Ints("k-block-n")
	for _, b := range blocks {
		if b%32 != 0 {
			return fmt.Errorf("kBlockN %d is not a multiple of 32 (the e4m3 wgmma's K)", b)
		}
	}
	var runs []attnNeedleRun
	if run.Values.Bool("bf16") {
		runs = append(runs, attnNeedleRun{dtype: fp8.FormatBF16, cfg: attention.Config{HeadDim: t.d, DType: fp8.FormatBF16},
			promotions: []int{0}, series: []string{"bf16"}})
	}
	for _, b := range blocks {
		r := attnNeedleRun{dtype: fp8.FormatE4M3, cfg: attention.Config{HeadDim: t.d, DType: fp8.FormatE4M3, KBlockN: b},
			promotions: slices.Clone(intervals)}
		for _, iv := range intervals {
			r.series = append(r.series, fmt.Sprintf("kBlockN %d/%d", b, iv))
		}
		runs = append(runs, r)
	}
	t.noteSetup(run, runs)
	run.AddTotal(int64(trials))
	out, err := attnNeedleContext(ctx, run, fmt.Sprintf("promotion/%d", n), t, n, trials, run.Values.Int("haystacks"), runs, true)
	if err != nil {
		return err
	}
	summary := map[string]float64{"chance": 1 / float64(t.m)}
	k := 0
	for _, r := range runs {
		for _, iv := range r.promotions {
			o := out[k]
			k++
			acc, relerr := o.Accuracy(), o.errSum/float64(o.trials)
			extra := map[string]float64{"interval": float64(iv), "relerr": relerr, "se": attnBinomialSE(acc, o.trials)}
			series, x, name := "bf16", float64(n), "bf16"
			if r.dtype == fp8.FormatE4M3 {
				series = fmt.Sprintf("kBlockN %d", r.cfg.KBlockN)
				x = float64(min(n, iv*r.cfg.KBlockN))
				if iv == 0 {
					x = float64(n)
				}
				name = fmt.Sprintf("bn%d_%s", r.cfg.KBlockN, promotionName(iv))
			}
			summary["acc_"+name] = acc
			summary["relerr_"+name] = relerr
			if err := run.Emit(sim.Point{Series: series, X: x, Y: acc, Extra: extra}); err != nil {
				return err
			}
		}
	}
	run.Summary(summary)
	return nil
}

// promotionName names an interval in summary keys: every1, every4, never.
func promotionName(iv int) string {
	if iv == 0 {
		return "never"
	}
	return fmt.Sprintf("every%d", iv)
}
