package attention

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// Split-KV in float64 arithmetic equals the float64 reference whatever the
// number of splits (more splits than tiles leaves some empty): the split
// ranges cover the visited tiles once, and the combine is the softmax merge.
func TestSplitsFloat64EqualsReference(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name              string
		mq, n, qh, kvh, d int
		cfg               Config
	}{
		{"decode", 1, 1000, 1, 1, 128, Config{}},
		{"decode GQA", 1, 777, 8, 2, 64, Config{}},
		{"decode window", 1, 1000, 4, 2, 128, Config{Window: 200}},
		{"prefill causal", 70, 300, 2, 1, 64, Config{Causal: true, KBlockM: 32, KBlockN: 64}},
		{"prefill causal window", 50, 257, 6, 3, 128, Config{Causal: true, Window: 37, KBlockM: 16, KBlockN: 32}},
	}
	for i, tc := range tests {
		p := newProblem(uint64(i)+40, tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
		kv := p.kv(t, fp8.FormatE4M3, nil, nil)
		cfg := tc.cfg
		cfg.HeadDim, cfg.QHeads, cfg.KVHeads, cfg.Float64 = tc.d, tc.qh, tc.kvh, true
		ref, err := ReferenceQuantized(ctx, cfg, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []int{1, 2, 3, 7, 16, 100} {
			cfg.Splits = s
			o, err := Run(ctx, cfg, p.q, nil, kv)
			if err != nil {
				t.Fatalf("%s, %d splits: %v", tc.name, s, err)
			}
			if d := relDiff(o, ref); d > 1e-12 {
				t.Errorf("%s, %d splits: float64 loop differs from the reference by %.3g", tc.name, s, d)
			}
		}
	}
}

// The FP32 kernel with S splits: split s's output is, bit for bit, the
// kernel of one split on a cache holding only its tokens (the same tiles
// from the split's first), its lse is log2 of its exact row sum to within
// the QK chain's truncation, and the row's output is RunPromotions'.
func TestSplitsAreSubCacheRuns(t *testing.T) {
	ctx := context.Background()
	const n, d, bn = 5000, 128, 96
	p := newProblem(51, 1, n, 2, 1, d, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	for _, promotions := range [][]int{{0}, {1}, {4}} {
		for _, S := range []int{2, 5, 13, 60} {
			cfg := Config{HeadDim: d, QHeads: 2, KVHeads: 1, KBlockN: bn, Splits: S}
			k, err := newKernel(cfg, promotions, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			r := k.newRow()
			k.setRow(r, 0, 1, p.q)
			if err := k.attendRow(ctx, r); err != nil {
				t.Fatal(err)
			}
			got, err := RunPromotions(ctx, cfg, promotions, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range r.acc[0].o {
				if float64(x) != got[0][d+i] {
					t.Fatalf("S=%d: the row's combined O differs from RunPromotions at %d", S, i)
				}
			}
			sub := Config{HeadDim: d, KBlockN: bn}
			for s := 0; s < S; s++ {
				lo, hi := k.SplitRange(0, (n+bn-1)/bn, s)
				if lo >= hi {
					if !math.IsInf(float64(r.lse[s]), -1) {
						t.Errorf("S=%d split %d is empty, lse %g (want -inf)", S, s, r.lse[s])
					}
					continue
				}
				t0, t1 := lo*bn, min(hi*bn, n)
				skv, err := NewKV(p.k[t0*d:t1*d], p.v[t0*d:t1*d], fp8.Shape{Tokens: t1 - t0, Heads: 1, Dim: d}, fp8.FormatE4M3, fp8.SatFinite, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, err := RunPromotions(ctx, sub, promotions, p.q[d:2*d], nil, skv)
				if err != nil {
					t.Fatal(err)
				}
				for i, x := range r.acc[0].split[s] {
					if float64(x) != want[0][i] {
						t.Fatalf("S=%d split %d (tokens %d..%d), promotion %v: O_s[%d] = %g, the kernel on its tokens alone %g", S, s, t0, t1, promotions, i, x, want[0][i])
					}
				}
				// lse_s ≈ log2 Σ_j 2^(S_j) over the split's keys (S in log2
				// units, exact scores of the codes): the kernel's scores come
				// through the 14-bit QK chain, about 1e-4 off each.
				mx := math.Inf(-1)
				sc := make([]float64, t1-t0)
				val := valueTable(fp8.FormatE4M3)
				q := k.dequantizedQuery(p.q)[d : 2*d]
				for j := range sc {
					key := kv.k[(t0+j)*d:][:d]
					var dot float64
					for x, c := range key {
						dot += q[x] * val[c]
					}
					sc[j] = dot * float64(k.ScaleLog2(0))
					mx = max(mx, sc[j])
				}
				var l float64
				for _, x := range sc {
					l += math.Exp2(x - mx)
				}
				want2 := mx + math.Log2(l)
				if diff := math.Abs(float64(r.lse[s]) - want2); diff > 1e-3 {
					t.Errorf("S=%d split %d: lse %g, exact %g", S, s, r.lse[s], want2)
				}
			}
		}
	}
}

func TestCombineSplits(t *testing.T) {
	inf := float32(math.Inf(-1))
	o := make([]float32, 2)
	CombineSplits(o, [][]float32{{1, -0.5}}, []float32{3.25})
	if o[0] != 1 || o[1] != -0.5 {
		t.Errorf("one split: %v, want the split's output", o)
	}
	// Two splits of equal weight average; an empty split (-inf) weighs 0.
	CombineSplits(o, [][]float32{{1, 2}, {0, 0}, {3, 4}}, []float32{5, inf, 5})
	if o[0] != 2 || o[1] != 3 {
		t.Errorf("equal weights: %v, want [2 3]", o)
	}
	// lse 1 vs 0: weights 1 and 1/2.
	CombineSplits(o, [][]float32{{3, 0}, {0, 3}}, []float32{1, 0})
	if o[0] != 2 || o[1] != 1 {
		t.Errorf("weights 1 and 1/2: %v, want [2 1]", o)
	}
	CombineSplits(o, [][]float32{{1, 1}, {1, 1}}, []float32{inf, inf})
	if o[0] != 0 || o[1] != 0 {
		t.Errorf("every split empty: %v, want 0", o)
	}
	CombineSplits(o, [][]float32{{1, 1}, {1, 1}}, []float32{float32(math.NaN()), 0})
	if o[0] == o[0] {
		t.Errorf("a NaN lse: %v, want NaN", o)
	}
	if l := LSE(2, 256); l != 2 {
		t.Errorf("LSE(2, 256) = %g, want 2 (m + log2 256 − 8)", l)
	}
	if l := LSE(2, 0); !math.IsInf(float64(l), -1) {
		t.Errorf("LSE of an empty split = %g, want -inf", l)
	}
}

// AutoSplits against FA3's heuristic worked by hand: Llama-3.1-8B-like
// decode (head_dim 128, GQA 4, kBlockN 96) on 132 SMs.
func TestAutoSplits(t *testing.T) {
	mk := func(n, mq, group int, causal bool) *Plan {
		t.Helper()
		p, err := Config{HeadDim: 128, KVHeads: 1, QHeads: group, Causal: causal}.resolve(mq, n)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name          string
		p             *Plan
		sms, bhk, got int
	}{
		// 1366 tiles; total m-blocks 1: efficiency s/132, best 128/132 at
		// s = 128; the first s ≥ 0.85·128 = 108.8.
		{"128k decode, batch×KV heads 1", mk(131072, 1, 4, false), 132, 1, 109},
		// total 8: 8s/132 ≥ 0.85 first at s = 15 (best 1.0 at s = 33).
		{"128k decode, 8", mk(131072, 1, 4, false), 132, 8, 15},
		// total 60: s = 2 gives 120/132 = 0.91 (best 1.0 at s = 11).
		{"128k decode, 60", mk(131072, 1, 4, false), 132, 60, 2},
		{"128k decode, 132 (full)", mk(131072, 1, 4, false), 132, 132, 1},
		// 4 tiles: never split.
		{"384 tokens", mk(384, 1, 4, false), 132, 1, 1},
		// 8 on a B200's 148 SMs: 8s/148 ≥ 0.85·(144/148)? best at s=37: 296/148 = 2 → 1.0; first s ≥ 0.85·148/8 = 15.7 → 16.
		{"128k decode on 148 SMs, 8", mk(131072, 1, 4, false), 148, 8, 16},
		// A causal prefill of 8192 queries × GQA 4 (256 m-blocks of 128) × 8 KV heads fills the GPU.
		{"8k-query causal prefill", mk(131072, 8192, 4, true), 132, 8, 1},
	}
	for _, tc := range tests {
		if got := tc.p.AutoSplits(tc.sms, tc.bhk); got != tc.got {
			t.Errorf("%s: %d splits, want %d", tc.name, got, tc.got)
		}
	}
}

func TestSplitsRefused(t *testing.T) {
	p := newProblem(3, 1, 300, 1, 1, 64, 0)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{HeadDim: 64, Splits: -1}, "splits is outside 0..128"},
		{Config{HeadDim: 64, Splits: 129}, "splits is outside 0..128"},
		{Config{HeadDim: 64, Splits: 2, Sinks: []float64{1}}, "sinks with 2 splits"},
	} {
		_, err := Run(context.Background(), c.cfg, p.q, nil, kv)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.want)
		}
	}
}

// ReferenceQuantized's in-place path gives the bits of Reference on the
// dequantized cache (masks, windows, GQA, per-head scales, sinks).
func TestReferenceCodesEqualsDequantized(t *testing.T) {
	ctx := context.Background()
	p := newProblem(77, 9, 333, 4, 2, 64, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, []float32{0.5, 2}, []float32{1.5, 0.25})
	mask := make([]bool, 9*333)
	for i := range mask {
		mask[i] = i%7 != 0
	}
	for _, cfg := range []Config{
		{HeadDim: 64, QHeads: 4, KVHeads: 2},
		{HeadDim: 64, QHeads: 4, KVHeads: 2, Causal: true, Window: 50},
		{HeadDim: 64, QHeads: 4, KVHeads: 2, Mask: mask, Sinks: []float64{1, -2, 3, 0}},
	} {
		got, err := ReferenceQuantized(ctx, cfg, p.q, []float32{0.75, 1}, kv)
		if err != nil {
			t.Fatal(err)
		}
		k, err := newKernel(cfg, []int{0}, p.q, []float32{0.75, 1}, kv)
		if err != nil {
			t.Fatal(err)
		}
		kd, vd := kv.Dequantize()
		want, err := Reference(ctx, k.Config, k.dequantizedQuery(p.q), kd, vd, k.mq, k.n)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("%+v: element %d: %v, dequantized %v", cfg, i, got[i], want[i])
			}
		}
	}
}
