package main

import (
	"context"
	"fmt"
	"math"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/experiments"
	"github.com/fp8lab/fp8lab/sim"
)

// attentionParams is the schema of fp8lab_attention's parameters: those of
// the attention-file experiment, taken from its schema (the files, layout,
// void2, device and the whole-model verdict's threshold are not parameters
// here: the tensors are the arguments, the kernel runs on the CPU, one
// layer a call), plus sms, the SM count for splits=auto (0: the arch's, as
// attention-file takes it).
func attentionParams() []sim.Param {
	var out []sim.Param
	for _, p := range (experiments.AttentionFile{}).Params() {
		switch p.Name {
		case "layout", "void2", "device", "threshold":
			continue
		}
		out = append(out, p)
	}
	return append(out, sim.Param{Name: "sms", Doc: "streaming multiprocessors for splits=auto; 0 is the arch's (attention.Arches: 132 for hopper, 148 for blackwell)",
		Kind: sim.KindInt, Default: 0, Min: 0, Max: 1 << 16})
}

// attnInputs are the tensors of one call, in the simulator's layout
// ([tokens][heads][dim]).
type attnInputs struct {
	q, k, v   []float32
	mq, n     int
	qh, kvh   int
	d, dv     int
	positions []int64 // nil: the last mq tokens
	mask      []uint8 // nil: none; else mq × n
}

// errorsJSON is attention.Errors for the Python side (NaN as null).
type errorsJSON struct {
	RelL2    *float64 `json:"rel_l2"`
	MaxAbs   *float64 `json:"max_abs"`
	Cosine   *float64 `json:"cosine"`
	Alpha    *float64 `json:"alpha"`
	Residual *float64 `json:"residual"`
}

func num(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func errJSON(e attention.Errors) errorsJSON {
	return errorsJSON{num(e.RelL2), num(e.MaxAbs), num(e.Cosine), num(e.Alpha), num(e.Residual)}
}

type promotionJSON struct {
	Promotion   int          `json:"promotion"`
	VsExact     errorsJSON   `json:"vs_exact"`
	VsQuantized errorsJSON   `json:"vs_quantized"`
	PerHead     []errorsJSON `json:"per_head"`
	PerHeadQ    []errorsJSON `json:"per_head_vs_quantized"`
}

type attnResultJSON struct {
	Params          map[string]any  `json:"params"`
	KV              string          `json:"kv"`
	DType           string          `json:"dtype"`
	QKModel         string          `json:"qk_model"`
	PVModel         string          `json:"pv_model"`
	KBlockM         int             `json:"k_block_m"`
	KBlockN         int             `json:"k_block_n"`
	Splits          int             `json:"splits"`
	Decode          bool            `json:"decode"`
	Promotions      []promotionJSON `json:"promotions"`
	QuantizedInputs errorsJSON      `json:"quantized_inputs"`
}

// runAttention runs the simulator as the attention-file experiment does
// (the same spec, config, tiles, positions and query blocks, hence the same
// bits), with the parameter values vals (names of attentionParams, values as
// `lab run` takes them; missing ones take their defaults). It writes O of
// each promotion into o (promotions × mq × qh × dv, the kernel's FP32
// values), exact float64 attention on the unquantized tensors into exact and
// on the quantized inputs into qref (mq × qh × dv each; either may be nil)
// and returns the error decomposition.
func runAttention(ctx context.Context, vals map[string]string, in *attnInputs, o []float32, exact, qref []float64, threads int) (*attnResultJSON, error) {
	values, err := sim.ParseValues(attentionParams(), vals)
	if err != nil {
		return nil, err
	}
	switch {
	case in.mq < 1 || in.n < 1 || in.qh < 1 || in.kvh < 1 || in.d < 1 || in.dv < 1:
		return nil, fmt.Errorf("attention: shapes must be positive: q %d tokens × %d heads × %d, k/v %d tokens × %d heads × %d/%d", in.mq, in.qh, in.d, in.n, in.kvh, in.d, in.dv)
	case len(in.q) != in.mq*in.qh*in.d || len(in.k) != in.n*in.kvh*in.d || len(in.v) != in.n*in.kvh*in.dv:
		return nil, fmt.Errorf("attention: arrays of %d, %d, %d elements for the shapes given", len(in.q), len(in.k), len(in.v))
	case in.qh%in.kvh != 0:
		return nil, fmt.Errorf("q has %d heads, not a multiple of k's %d (GQA)", in.qh, in.kvh)
	case in.mq > in.n && in.positions == nil:
		return nil, fmt.Errorf("q has %d tokens, more than k's %d: give positions", in.mq, in.n)
	}
	for _, t := range []struct {
		name string
		x    []float32
	}{{"q", in.q}, {"k", in.k}, {"v", in.v}} {
		for i, x := range t.x {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%s: element %d is %v: every input must be finite", t.name, i, x)
			}
		}
	}
	var positions []int
	if in.positions != nil {
		if len(in.positions) != in.mq {
			return nil, fmt.Errorf("positions holds %d values for %d query tokens", len(in.positions), in.mq)
		}
		for i, p := range in.positions {
			if p < 0 || p >= int64(in.n) {
				return nil, fmt.Errorf("positions: element %d is %d, not a position 0 … %d", i, p, in.n-1)
			}
			positions = append(positions, int(p))
		}
	}
	var mask []bool
	if in.mask != nil {
		if len(in.mask) != in.mq*in.n {
			return nil, fmt.Errorf("mask holds %d flags, want %d (query tokens × tokens)", len(in.mask), in.mq*in.n)
		}
		mask = make([]bool, len(in.mask))
		for i, x := range in.mask {
			mask[i] = x != 0
		}
	}
	promotions := values.Ints("promotions")
	if len(promotions) == 0 {
		return nil, fmt.Errorf("parameter \"promotions\": give at least one promotion interval")
	}
	orow := in.qh * in.dv
	if o != nil && len(o) != len(promotions)*in.mq*orow {
		return nil, fmt.Errorf("o holds %d values, want %d (promotions × query tokens × query heads × V head dim)", len(o), len(promotions)*in.mq*orow)
	}
	if exact != nil && len(exact) != in.mq*orow || qref != nil && len(qref) != in.mq*orow {
		return nil, fmt.Errorf("the reference outputs hold %d and %d values, want %d", len(exact), len(qref), in.mq*orow)
	}

	shape := attention.KVShape{Tokens: in.n, Heads: in.kvh, KDim: in.d, VDim: in.dv}
	spec, cfg, err := experiments.AttentionFileSpec(values, experiments.AttentionFileShape{Tokens: in.n, KVHeads: in.kvh, QHeads: in.qh, HeadDim: in.d, VHeadDim: in.dv}, positions, mask)
	if err != nil {
		return nil, err
	}
	cfg.Promotion = promotions[0]
	kv, err := attention.QuantizeKV(in.k, in.v, shape, spec)
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
	splits := values.Int("splits")
	if splits == 0 {
		p, err := cfg.Plan(in.mq, nil, kv)
		if err != nil {
			return nil, err
		}
		sms := values.Int("sms")
		if sms == 0 {
			a, err := attention.LookupArch(values.String("arch"))
			if err != nil {
				return nil, err
			}
			sms = a.SMs
		}
		splits = p.AutoSplits(sms, values.Int("batch")*in.kvh)
	}
	cfg.Splits = splits
	plan, err := cfg.Plan(in.mq, nil, kv)
	if err != nil {
		return nil, err
	}

	ex, err := attention.ReferenceF32(ctx, cfg, in.q, in.k, in.v, in.mq, in.n)
	if err != nil {
		return nil, err
	}
	qr, err := attention.ReferenceQuantized(ctx, cfg, in.q, nil, kv)
	if err != nil {
		return nil, err
	}
	blocks := (in.mq + bm - 1) / bm
	row := in.qh * in.d
	outs := make([][]float64, len(promotions))
	for a := range outs {
		outs[a] = make([]float64, in.mq*orow)
	}
	err = parallelRows(ctx, blocks, threads, func(lo, hi int) error {
		for blk := lo; blk < hi; blk++ {
			r0, r1 := blk*bm, min(in.mq, (blk+1)*bm)
			c := cfg
			c.Positions = cfg.Positions[r0:r1]
			if cfg.Mask != nil {
				c.Mask = cfg.Mask[r0*in.n : r1*in.n]
			}
			res, err := attention.RunPromotions(ctx, c, promotions, in.q[r0*row:r1*row], nil, kv)
			if err != nil {
				return err
			}
			for a := range promotions {
				copy(outs[a][r0*orow:], res[a])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}

	res := &attnResultJSON{Params: values.Map(), KV: spec.String(), DType: plan.DType.String(), QKModel: plan.QKModel, PVModel: plan.PVModel,
		KBlockM: plan.KBlockM, KBlockN: plan.KBlockN, Splits: max(plan.Splits, 1), Decode: plan.Decode(),
		QuantizedInputs: errJSON(attention.Compare(qr, ex))}
	for a, p := range promotions {
		pj := promotionJSON{Promotion: p, VsExact: errJSON(attention.Compare(outs[a], ex)), VsQuantized: errJSON(attention.Compare(outs[a], qr))}
		for h := 0; h < in.qh; h++ {
			oh := head(outs[a], in.mq, in.qh, in.dv, h)
			pj.PerHead = append(pj.PerHead, errJSON(attention.Compare(oh, head(ex, in.mq, in.qh, in.dv, h))))
			pj.PerHeadQ = append(pj.PerHeadQ, errJSON(attention.Compare(oh, head(qr, in.mq, in.qh, in.dv, h))))
		}
		res.Promotions = append(res.Promotions, pj)
		if o != nil {
			dst := o[a*in.mq*orow : (a+1)*in.mq*orow]
			for i, x := range outs[a] {
				dst[i] = float32(x) // exact: the kernel's FP32 values
			}
		}
	}
	copy(exact, ex)
	copy(qref, qr)
	return res, nil
}

// head gathers query head h of o ([mq][qh][dv]).
func head(o []float64, mq, qh, dv, h int) []float64 {
	out := make([]float64, 0, mq*dv)
	for i := 0; i < mq; i++ {
		out = append(out, o[(i*qh+h)*dv:][:dv]...)
	}
	return out
}
