package attention

import (
	"context"
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// TestRunSharedEqualsRunPromotions: RunShared's outputs are, bit for bit,
// those of RunPromotions for each configuration, whether or not the
// configurations share their scores (the cases say which must), on one
// goroutine and on several.
func TestRunSharedEqualsRunPromotions(t *testing.T) {
	type tc struct {
		name              string
		mq, n, qh, kvh, d int
		dtype             fp8.Format
		spec              *KVSpec
		cfgs              []Config
		promotions        [][]int
		shared            bool // whether cfgs[0] and cfgs[1] share
	}
	two := func(a, b Config) []Config { return []Config{a, b} }
	cases := []tc{
		{name: "prefill tiles 224 and 192", mq: 1, n: 5000, qh: 2, kvh: 1, d: 128, dtype: fp8.FormatE4M3,
			cfgs: two(Config{KBlockN: 224, Causal: true}, Config{KBlockN: 192, Causal: true, Promotion: 1}), promotions: [][]int{{0}, {1}}, shared: true},
		{name: "causal rows, gqa", mq: 37, n: 900, qh: 4, kvh: 2, d: 64, dtype: fp8.FormatE4M3,
			cfgs: two(Config{KBlockN: 96, Causal: true}, Config{KBlockN: 160, Causal: true}), promotions: [][]int{{0, 1}, {4}}, shared: true},
		{name: "splits and a window", mq: 1, n: 7000, qh: 2, kvh: 2, d: 128, dtype: fp8.FormatE5M2,
			cfgs: two(Config{KBlockN: 96, Splits: 3}, Config{KBlockN: 128, Splits: 5, Window: 3000}), promotions: [][]int{{0}, {1}}, shared: true},
		{name: "softmax scales differ", mq: 1, n: 3000, qh: 2, kvh: 1, d: 64, dtype: fp8.FormatE4M3,
			cfgs: two(Config{KBlockN: 96}, Config{KBlockN: 128, SoftmaxScale: 0.3}), promotions: [][]int{{0}, {0}}},
		{name: "float64", mq: 2, n: 2000, qh: 2, kvh: 1, d: 64, dtype: fp8.FormatE4M3,
			cfgs: two(Config{KBlockN: 96, Float64: true}, Config{KBlockN: 128, Float64: true}), promotions: [][]int{{0}, {0}}},
		{name: "bf16, three configurations", mq: 1, n: 4000, qh: 2, kvh: 2, d: 128, dtype: fp8.FormatBF16,
			cfgs: []Config{{KBlockN: 128}, {KBlockN: 96}, {KBlockN: 128, Splits: 2}}, promotions: [][]int{{0}, {0}, {0}}, shared: true},
		{name: "mxfp8", mq: 1, n: 2500, qh: 2, kvh: 1, d: 128, spec: &KVSpec{Format: KVMXFP8, Path: PathBlockScaled},
			cfgs: two(Config{KBlockN: 128}, Config{KBlockN: 64}), promotions: [][]int{{0}, {1}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProblem(21, c.mq, c.n, c.qh, c.kvh, c.d, 0.5)
			kv := p.cache(t, c.spec, c.dtype)
			cfgs := make([]Config, len(c.cfgs))
			for i, cfg := range c.cfgs {
				cfg.HeadDim, cfg.QHeads, cfg.KVHeads = c.d, c.qh, c.kvh
				cfgs[i] = cfg
			}
			k0, err := newKernel(cfgs[0], c.promotions[0], p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			k1, err := newKernel(cfgs[1], c.promotions[1], p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			if got := sameScores(k0, k1); got != c.shared {
				t.Fatalf("sameScores = %v, want %v", got, c.shared)
			}
			for _, procs := range []int{1, 4} {
				old := runtime.GOMAXPROCS(procs)
				got, err := RunShared(context.Background(), cfgs, c.promotions, p.q, nil, kv, nil)
				runtime.GOMAXPROCS(old)
				if err != nil {
					t.Fatal(err)
				}
				for i, cfg := range cfgs {
					want, err := RunPromotions(context.Background(), cfg, c.promotions[i], p.q, nil, kv)
					if err != nil {
						t.Fatal(err)
					}
					for a := range want {
						for x := range want[a] {
							if math.Float64bits(got[i][a][x]) != math.Float64bits(want[a][x]) {
								t.Fatalf("%d goroutines, configuration %d, promotion %d, element %d: %v, RunPromotions %v",
									procs, i, c.promotions[i][a], x, got[i][a][x], want[a][x])
							}
						}
					}
				}
			}
		})
	}
	if _, err := RunShared(context.Background(), []Config{{}}, nil, nil, nil, nil, nil); err == nil {
		t.Error("RunShared with fewer promotion lists than configurations: no error")
	}
}

// TestRunSharedPatched: with token patches, RunShared's outputs are those
// of RunPromotions on a copy of the cache with the patches' codes written
// in, the cache itself left as it was; QuantizeToken's codes are those
// SetToken stores.
func TestRunSharedPatched(t *testing.T) {
	for _, c := range []struct {
		name  string
		dtype fp8.Format
		spec  *KVSpec
		kvh   int
		cfgs  []Config
	}{
		{"e4m3 prefill tiles", fp8.FormatE4M3, nil, 1, []Config{{KBlockN: 224, Causal: true}, {KBlockN: 192, Causal: true, Promotion: 1}}},
		{"bf16 gqa, splits", fp8.FormatBF16, nil, 2, []Config{{KBlockN: 96, Splits: 3}, {KBlockN: 128}}},
		{"one configuration (scores by tile)", fp8.FormatE4M3, nil, 2, []Config{{KBlockN: 128, Splits: 2}}},
		{"scores not shared", fp8.FormatE5M2, nil, 1, []Config{{KBlockN: 96}, {KBlockN: 128, SoftmaxScale: 0.2}}},
		{"nvfp4 dequantized to bf16", 0, &KVSpec{Format: KVNVFP4, Path: PathDequantBF16}, 2, []Config{{KBlockN: 96}, {KBlockN: 64}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n, d = 3000, 128
			p := newProblem(31, 1, n, 2*c.kvh, c.kvh, d, 0.5)
			kv := p.cache(t, c.spec, c.dtype)
			rng := newProblem(32, 1, 8, 1, 1, d, 3) // values for the patched tokens
			var patch []TokenPatch
			for i, pos := range []int{0, 1, 191, 192, 223, 224, 1500, 1500, n - 1} {
				h := i % c.kvh
				kc, vc, err := kv.QuantizeToken(h, rng.k[(i%8)*d:][:d], rng.v[(i%8)*d:][:d])
				if err != nil {
					t.Fatal(err)
				}
				patch = append(patch, TokenPatch{Pos: pos, Head: h, K: kc, V: vc})
			}
			cp := kv.Clone()
			for _, tp := range patch { // the last of a token wins, as in the patch
				if err := cp.SetTokenCodes(tp.Pos, tp.Head, tp.K, tp.V); err != nil {
					t.Fatal(err)
				}
			}
			// QuantizeToken's codes are SetToken's.
			set := kv.Clone()
			if err := set.SetToken(7, 0, rng.k[:d], rng.v[:d]); err != nil {
				t.Fatal(err)
			}
			qk, qv, _ := kv.QuantizeToken(0, rng.k[:d], rng.v[:d])
			sk, sv := set.TokenCodes(7, 0)
			if !slices.Equal(qk, sk) || !slices.Equal(qv, sv) {
				t.Fatal("QuantizeToken's codes differ from SetToken's")
			}
			before := kv.Clone()
			cfgs := make([]Config, len(c.cfgs))
			proms := make([][]int, len(c.cfgs))
			for i, cfg := range c.cfgs {
				cfg.HeadDim, cfg.QHeads, cfg.KVHeads = d, 2*c.kvh, c.kvh
				cfgs[i], proms[i] = cfg, []int{cfg.Promotion}
			}
			got, err := RunShared(context.Background(), cfgs, proms, p.q, nil, kv, patch)
			if err != nil {
				t.Fatal(err)
			}
			for i, cfg := range cfgs {
				want, err := RunPromotions(context.Background(), cfg, proms[i], p.q, nil, cp)
				if err != nil {
					t.Fatal(err)
				}
				for x := range want[0] {
					if math.Float64bits(got[i][0][x]) != math.Float64bits(want[0][x]) {
						t.Fatalf("configuration %d, element %d: %v, on the patched copy %v", i, x, got[i][0][x], want[0][x])
					}
				}
			}
			for h := 0; h < c.kvh; h++ {
				if !slices.Equal(kv.KCodes(h), before.KCodes(h)) {
					t.Fatal("RunShared wrote into the cache")
				}
			}
		})
	}
	p := newProblem(33, 1, 500, 2, 1, 64, 0.5)
	kv, err := NewKV(p.k, p.v, p.shape, fp8.FormatE4M3, fp8.SatFinite, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, vc, _ := kv.QuantizeToken(0, p.k[:64], p.v[:64])
	cfg := Config{HeadDim: 64, QHeads: 2, KVHeads: 1, Float64: true}
	if _, err := RunShared(context.Background(), []Config{cfg}, [][]int{{0}}, p.q, nil, kv, []TokenPatch{{Pos: 3, K: kc, V: vc}}); err == nil {
		t.Error("a patch in Float64 mode: no error")
	}
	if _, err := RunShared(context.Background(), []Config{{HeadDim: 64, QHeads: 2, KVHeads: 1}}, [][]int{{0}}, p.q, nil, kv, []TokenPatch{{Pos: 500, K: kc, V: vc}}); err == nil {
		t.Error("a patch past the cache: no error")
	}
}
