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
// the tensor core (every tile, every 4, every 64 tiles, never), in the
// prefill or the decode regime.
type Promotion struct{}

// Name returns "promotion".
func (Promotion) Name() string { return "promotion" }

// Doc describes the experiment.
func (Promotion) Doc() string {
	return `Output error and needle accuracy of FP8 attention vs the promotion interval of P·V (every tile, 4, 64 tiles, never).

The needle task of the needle experiment (same parameters, probes, regimes
and defaults) at one context length. The e4m3 kernel runs with P·V promoted
into an FP32 register every N tiles (1: vLLM's two-level accumulation,
flash-attention #104; N > 1: the lazy acc_scale variant of #122; 0: never,
FA3 as shipped); all intervals of one tile width share each trial's scores
and P. k-block-n 0 is FA3's tile of the regime (prefill 192, the two-level
table of #125, at head_dim 128; decode 96); a list runs each.

Series "kBlockN B": x = tokens accumulated inside the tensor core between
promotions (N·B; for never, the tokens of one split: the context over the
splits), y = relative L2 error of O (%) against the exact attention on the
same quantized inputs; extra acc (retrieval, with its interval), alpha (the
shrinkage <O, O*>/<O*, O*>), residual (%), cosine, interval. Series bf16:
the bf16 kernel at x = the context. Points are emitted as each tile width
finishes. Published (RULER niah_multikey_2, Llama-3.1-8B, 128k): every tile
0.89, every 4 0.88, every 64 0.856 (vllm-project/flash-attention #122);
bf16 0.912 and never 0.13 (vLLM blog 2026-04-22, Fig. 1, scale 1.0) — drawn
as marks on the acc field. -stats llama31-8b draws the haystack with
published Llama-3-8B statistics (docs/real-stats.md).`
}

// Params returns the parameter schema.
func (Promotion) Params() []sim.Param {
	p := []sim.Param{
		{Name: "context", Doc: "context length", Unit: "tokens", Kind: sim.KindInt, Default: 131072, Min: 64, Max: 1 << 20},
		{Name: "trials", Doc: "trials", Kind: sim.KindInt, Default: 96, Min: 1, Max: 1000000},
		{Name: "intervals", Doc: "promotion intervals in tiles (0 = never)", Kind: sim.KindInts, Default: []int{1, 4, 64, 0}, Min: 0, Max: 1 << 20},
		{Name: "k-block-n", Aliases: []string{"kBlockN"}, Doc: "KV tile widths (multiples of 32); 0 is FA3's tile of the regime", Unit: "tokens", Kind: sim.KindInts, Default: []int{0}, Min: 0, Max: attention.MaxKBlockN},
		{Name: "bf16", Doc: "also run the bf16 kernel", Kind: sim.KindBool, Default: true},
		attnRegimeParam(),
	}
	p = append(p, attnSplitParams(0)...)
	return append(p, attnNeedleParams(needleDefaultMargin)...)
}

// promotionRuns builds the kernels: bf16, then one e4m3 run per tile width
// with every interval (the tiles and splits of the regime; prefill tiles
// from FA3's two-level table, the intervals being two-level kernels but
// for never).
func promotionRuns(t attnNeedle, v sim.Values, g attnRegime, n int) ([]attnNeedleRun, error) {
	intervals, blocks := v.Ints("intervals"), v.Ints("k-block-n")
	var runs []attnNeedleRun
	if v.Bool("bf16") {
		cfg := attention.Config{HeadDim: t.d, DType: fp8.FormatBF16}
		if err := g.configure(&cfg, n, nil); err != nil {
			return nil, err
		}
		runs = append(runs, attnNeedleRun{dtype: fp8.FormatBF16, cfg: cfg, promotions: []int{0}, series: []string{"bf16"}})
	}
	for _, b := range blocks {
		if b%32 != 0 {
			return nil, fmt.Errorf("kBlockN %d is not a multiple of 32 (the e4m3 wgmma's K)", b)
		}
		cfg := attention.Config{HeadDim: t.d, DType: fp8.FormatE4M3, KBlockN: b, Promotion: 1}
		if err := g.configure(&cfg, n, nil); err != nil {
			return nil, err
		}
		if cfg.KBlockN == 0 {
			p, err := cfg.Resolve(1, n)
			if err != nil {
				return nil, err
			}
			cfg.KBlockN = p.KBlockN
		}
		r := attnNeedleRun{dtype: fp8.FormatE4M3, cfg: cfg, promotions: slices.Clone(intervals)}
		for _, iv := range intervals {
			r.series = append(r.series, fmt.Sprintf("kBlockN %d/%d", cfg.KBlockN, iv))
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// Run runs the trials at the context length, one kernel run after the
// other, so that each run's points are emitted as it finishes (the
// haystacks are drawn again for each from the same seeds).
func (Promotion) Run(ctx context.Context, run *sim.Run) error {
	t, g, done, err := attnStart(ctx, run)
	if err != nil {
		return err
	}
	defer done()
	n, trials := run.Values.Int("context"), run.Values.Int("trials")
	runs, err := promotionRuns(t, run.Values, g, n)
	if err != nil {
		return err
	}
	calls := make([]attnCall, len(runs))
	for i, r := range runs {
		calls[i] = attnCall{key: fmt.Sprintf("promotion/%d", n), n: n, trials: trials, haystacks: run.Values.Int("haystacks"), runs: []attnNeedleRun{r}}
	}
	// The runs of one cache read the same haystacks: the drawer draws
	// them once (attnDrawer), starting now (while the GPU opens).
	dr := t.newDrawer(ctx, run, calls, t.drawAhead())
	defer dr.stop()
	run.Note(fmt.Sprintf("regime %s, probe %s, %d haystacks; %s", g.name, t.probe, min(run.Values.Int("haystacks"), trials), attnRunsNote(n, runs)))
	run.AddTotal(int64(trials * len(runs)))
	summary := map[string]float64{"chance": 1 / float64(t.m)}
	for i, r := range runs {
		out, err := attnNeedleCall(ctx, run, t, calls[i], dr)
		if err != nil {
			return err
		}
		if i == 0 {
			t.noteSetup(run, runs) // after the first run: the device note waits for the device
		}
		for k, iv := range r.promotions {
			o := out[k]
			x := o.extras()
			x["interval"], x["splits"], x["kBlockN"] = float64(iv), float64(max(r.cfg.Splits, 1)), float64(r.cfg.KBlockN)
			series, at, name := "bf16", float64(n), "bf16"
			if r.dtype == fp8.FormatE4M3 {
				series = fmt.Sprintf("kBlockN %d", r.cfg.KBlockN)
				perSplit := (n + max(r.cfg.Splits, 1) - 1) / max(r.cfg.Splits, 1)
				at = float64(min(perSplit, iv*r.cfg.KBlockN))
				if iv == 0 {
					at = float64(perSplit)
				}
				name = fmt.Sprintf("bn%d_%s", r.cfg.KBlockN, promotionName(iv))
			}
			x["tokens"] = at
			for _, f := range []string{"acc", "acc_lo", "acc_hi", "relerr", "relerr_lo", "relerr_hi", "alpha", "residual"} {
				if v, ok := x[f]; ok {
					summary[f+"_"+name] = v
				}
			}
			if err := run.Emit(sim.Point{Series: series, X: at, Y: x["relerr"], Extra: x}); err != nil {
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
