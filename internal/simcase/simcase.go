// Package simcase holds the decode problems on which the WGSL attention
// simulator (wgsl.Runner.SimDecode) is checked against attention.Run: the
// configurations of wgslcheck.CheckSimDecode (gpucheck's attention decode
// checks), which the tests of package wgsl reuse, and the random inputs of
// each. It is a test fixture, internal to the module.
package simcase

import (
	"math"
	"math/rand/v2"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
)

// Case is one decode configuration with a context length.
type Case struct {
	Name   string
	Tokens int
	Cfg    attention.Config
	// PerHead gives calibrated per-KV-head scales (amax/448) to K, V and
	// Q; otherwise the uncalibrated per-tensor 1.0.
	PerHead bool
	// QGain multiplies the random queries (peakier softmax above 1).
	QGain float32
}

// Cases lists the configurations wgslcheck.CheckSimDecode runs (and the
// wgsl tests reuse, so that no new shader variant is compiled) with
// contexts up to maxTokens: head_dim 128 and 64, GQA 4 (8 query heads over 2 KV
// heads), promotion never / every tile / every 4 tiles, kBlockN 96 and
// 128, per-tensor and per-head scales, a partial last tile, a window, e4m3
// caches and bf16 and f16 ones (sm90 wgmma, sm100 mma.sync and tcgen05
// models);
// and, when maxTokens reaches them, 16k-token block-scaled caches (mxfp8,
// nvfp4, mxfp4 read natively by their tcgen05 instruction), 32k and 128k
// tokens, and split-KV decode (Config.Splits): 16 splits at 128k tokens,
// 32 on bf16 and 7 with a window at 32k, 16 on native mxfp8, and 128
// splits over 105 tiles (the last 23 empty).
func Cases(maxTokens int) []Case {
	cases := []Case{
		{"hd128 gqa4 never kbn96", 8192, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 96}, false, 1},
		{"hd128 gqa4 every-tile kbn128 per-head", 4096, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 128, Promotion: 1}, true, 2},
		{"hd128 gqa4 every-4 kbn96 per-head", 5000, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 96, Promotion: 4}, true, 1},
		{"hd64 gqa4 never kbn128", 3001, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, KBlockN: 128}, false, 3},
		{"hd64 gqa4 every-tile kbn96 per-head", 1024, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, KBlockN: 96, Promotion: 1}, true, 1},
		{"hd64 gqa4 every-4 default tiles window 700", 2500, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, Promotion: 4, Window: 700}, false, 1},
		{"bf16 hd128 gqa4 every-4 kbn128 per-head", 4096, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 128, Promotion: 4, DType: fp8.FormatBF16}, true, 2},
		{"bf16 hd64 gqa4 never sm100 window 900", 3000, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, DType: fp8.FormatBF16, Window: 900,
			QKModel: "sm100.mma.sync.bf16.f32", PVModel: "sm100.mma.sync.bf16.f32"}, false, 1},
		{"f16 hd128 gqa4 every-tile kbn96", 2500, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 96, Promotion: 1, DType: fp8.FormatFP16}, false, 3},
		{"f16 hd64 gqa4 every-4 kbn128 per-head tcgen05", 2000, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, KBlockN: 128, Promotion: 4, DType: fp8.FormatFP16,
			QKModel: "sm100.tcgen05.f16.f32", PVModel: "sm100.tcgen05.f16.f32"}, true, 1},
	}
	var out []Case
	for _, c := range cases {
		c.Tokens = min(c.Tokens, maxTokens)
		out = append(out, c)
	}
	// Long contexts, only where maxTokens reaches them (a GPU).
	for _, c := range []Case{
		{"hd128 gqa4 never kbn96 long", 32768, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 96}, true, 1},
		{"hd128 gqa4 every-tile kbn128 long", 131072, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 128, Promotion: 1}, false, 2},
		{"bf16 hd128 gqa4 every-4 kbn128 long", 32768, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 128, Promotion: 4, DType: fp8.FormatBF16}, false, 1},
		// Block-scaled caches read natively (Inputs builds the cache of
		// the instruction's format): 16k tokens, so that only a GPU's
		// gpucheck runs them (lavapipe's are TestSimDecodeBlock).
		{"mxfp8 native hd128 gqa4 every-4 long", 16384, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, Promotion: 4, DType: fp8.FormatE4M3,
			QKModel: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", PVModel: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32"}, true, 1},
		{"nvfp4 native hd128 gqa4 never long", 16384, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, DType: fp8.FormatE2M1,
			QKModel: "sm100.tcgen05.mxf4nvf4.ue4m3.f32", PVModel: "sm100.tcgen05.mxf4nvf4.ue4m3.f32"}, false, 2},
		{"mxfp4 native hd64 gqa4 every-tile window 9000 long", 16384, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, Promotion: 1, Window: 9000, DType: fp8.FormatE2M1,
			QKModel: "sm100.tcgen05.mxf4.f32", PVModel: "sm100.tcgen05.mxf4.f32"}, false, 1},
		// Split-KV decode (lavapipe's are TestSimDecodeSplits).
		{"hd128 gqa4 every-tile kbn128 16 splits long", 131072, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 128, Promotion: 1, Splits: 16}, false, 2},
		{"bf16 hd128 gqa4 every-4 kbn128 32 splits per-head long", 32768, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 128, Promotion: 4, DType: fp8.FormatBF16, Splits: 32}, true, 1},
		{"hd64 gqa4 never window 9000 7 splits per-head long", 32768, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, Window: 9000, Splits: 7}, true, 1},
		{"mxfp8 native hd128 gqa4 every-4 16 splits long", 16384, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, Promotion: 4, DType: fp8.FormatE4M3, Splits: 16,
			QKModel: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", PVModel: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32"}, true, 1},
		{"hd128 gqa4 never kbn96 128 splits long", 10000, attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 96, Splits: attention.MaxSplits}, false, 1},
	} {
		if c.Tokens <= maxTokens {
			out = append(out, c)
		}
	}
	return out
}

// Inputs draws a random decode problem for c (normal Q, K, V; seeded;
// a cache of c.Cfg.DType, e4m3 when unset, with SatFinite; when
// c.Cfg.QKModel is a block-scaled instruction, a PathBlockScaled cache of
// its format) and returns the queries, their descales and the quantized
// cache.
func Inputs(c Case, seed uint64) (q, qScale []float32, kv *attention.KV, err error) {
	rng := rand.New(rand.NewPCG(seed, 11))
	d, kvh, qh := c.Cfg.HeadDim, max(c.Cfg.KVHeads, 1), max(c.Cfg.QHeads, c.Cfg.KVHeads, 1)
	gain := c.QGain
	if gain == 0 {
		gain = 1
	}
	q = make([]float32, qh*d)
	for i := range q {
		q[i] = gain * float32(rng.NormFloat64())
	}
	k, v := make([]float32, c.Tokens*kvh*d), make([]float32, c.Tokens*kvh*d)
	for i := range k {
		k[i] = float32(rng.NormFloat64())
		v[i] = float32(rng.NormFloat64() + 0.1)
	}
	var ks, vs []float32
	if c.PerHead {
		amax := func(x []float32, h, stride int) float32 {
			var m float32
			for t := 0; t < len(x)/stride; t++ {
				for _, y := range x[t*stride+h*d:][:d] {
					m = max(m, float32(math.Abs(float64(y))))
				}
			}
			return m / 448
		}
		for h := 0; h < kvh; h++ {
			ks = append(ks, amax(k, h, kvh*d))
			vs = append(vs, amax(v, h, kvh*d))
			qScale = append(qScale, amax(q, h*(qh/kvh), qh*d)) // one query head of the group
		}
	}
	if f := blockFormat(c.Cfg.QKModel); f != attention.KVInvalid {
		// A block-scaled cache of the instruction's format (NVFP4 with the
		// amax tensor scale); per-head scales give Q's descales only.
		spec := attention.KVSpec{Format: f, Path: attention.PathBlockScaled}
		if spec.Format.TensorScale() {
			spec.Scale = attention.ScaleAmax
		}
		kv, err = attention.QuantizeKV(k, v, attention.KVShape{Tokens: c.Tokens, Heads: kvh, KDim: d, VDim: d}, spec)
		return q, qScale, kv, err
	}
	dtype := c.Cfg.DType
	if dtype == fp8.FormatInvalid {
		dtype = fp8.FormatE4M3
	}
	kv, err = attention.NewKV(k, v, fp8.Shape{Tokens: c.Tokens, Heads: kvh, Dim: d}, dtype, fp8.SatFinite, ks, vs)
	return q, qScale, kv, err
}

// blockFormat is the block-scaled cache format that the block-scaled
// instruction name reads (the format whose default instruction reads the
// same element format, scale format and block), or KVInvalid.
func blockFormat(name string) attention.KVFormat {
	m, err := accum.LookupInstruction(name)
	if err != nil || m.Info().Kind != accum.KindScaled {
		return attention.KVInvalid
	}
	in := m.Info()
	for _, f := range attention.KVFormats() {
		def, err := attention.BlockScaledModel(f)
		if err != nil {
			continue
		}
		d, err := accum.LookupInstruction(def)
		if err != nil {
			continue
		}
		if di := d.Info(); di.A == in.A && di.B == in.B && di.Scale == in.Scale && di.Block == in.Block {
			return f
		}
	}
	return attention.KVInvalid
}
