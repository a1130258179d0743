package attention

import (
	"context"
	"math"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/cputime"
)

// BenchmarkReferenceQuantized is the exact reference of one decode query
// over 128k tokens, head_dim 128, e4m3 cache, for one KV head with 1 and
// with 4 query heads (Llama's GQA group): the float64 reference every
// accuracy point computes beside the simulated kernel, on one core
// (cpu-ms/op is the thread's CPU time).
func BenchmarkReferenceQuantized(b *testing.B) {
	const n = 128 << 10
	for _, g := range []int{1, 4} {
		p := newProblem(1, 1, n, g, 1, 128, 0.5)
		kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: 128}, KVSpec{Format: KVE4M3})
		if err != nil {
			b.Fatal(err)
		}
		cfg := Config{HeadDim: 128, QHeads: g, KVHeads: 1, DType: kv.Format()}
		b.Run(map[int]string{1: "group1", 4: "group4"}[g], func(b *testing.B) {
			cpu := cputime.Start()
			for b.Loop() {
				if _, err := ReferenceQuantized(context.Background(), cfg, p.q, nil, kv); err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report(b, float64(2*n*128*g))
		})
	}
}

// TestReferenceCodesBits: the reference read from the codes (grouped
// query heads, four keys and four output elements side by side) equals
// Reference on the dequantized cache bit for bit: GQA groups of 1, 2, 3
// and 4, token counts that are not multiples of four,
// windows, causal prefill, a mask, sinks, per-head scales, every 8-bit
// and 16-bit cache format.
func TestReferenceCodesBits(t *testing.T) {
	ctx := context.Background()
	mask := func(mq, n int) []bool {
		m := make([]bool, mq*n)
		for i := range m {
			m[i] = i%7 != 3 && i%11 != 5
		}
		return m
	}
	for i, tc := range []struct {
		name               string
		mq, n, qh, kvh, d  int
		cfg                Config
		f                  fp8.Format
		perHeadScale, sink bool
	}{
		{"decode", 1, 1001, 4, 1, 128, Config{}, fp8.FormatE4M3, false, false},
		{"decode GQA 3, hd 192", 1, 517, 6, 2, 192, Config{}, fp8.FormatE4M3, true, false},
		{"decode window, sinks", 1, 1000, 4, 2, 128, Config{Window: 200}, fp8.FormatE5M2, true, true},
		{"prefill causal GQA window", 50, 257, 6, 3, 64, Config{Causal: true, Window: 37}, fp8.FormatE4M3, false, false},
		{"prefill mask", 9, 101, 2, 1, 64, Config{}, fp8.FormatE4M3, false, false},
		{"bf16", 3, 203, 8, 2, 128, Config{Causal: true}, fp8.FormatBF16, true, true},
		{"fp16 hd 576", 2, 99, 2, 2, 576, Config{}, fp8.FormatFP16, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProblem(uint64(40+i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
			cfg := tc.cfg
			cfg.HeadDim, cfg.QHeads, cfg.KVHeads, cfg.DType = tc.d, tc.qh, tc.kvh, tc.f
			if tc.name == "prefill mask" {
				cfg.Mask = mask(tc.mq, tc.n)
			}
			if tc.sink {
				cfg.Sinks = make([]float64, tc.qh)
				for h := range cfg.Sinks {
					cfg.Sinks[h] = 0.5 * float64(h)
				}
			}
			var ks, vs []float32
			if tc.perHeadScale {
				for h := 0; h < tc.kvh; h++ {
					ks, vs = append(ks, 0.5+0.25*float32(h)), append(vs, 2-0.5*float32(h))
				}
			}
			kv := p.kv(t, tc.f, ks, vs)
			k, err := newKernel(cfg, []int{0}, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			qv := k.dequantizedQuery(p.q)
			kd, vd := kv.Dequantize()
			want, err := Reference(ctx, k.Config, qv, kd, vd, k.mq, k.n)
			if err != nil {
				t.Fatal(err)
			}
			got, err := k.referenceCodes(ctx, qv)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d outputs, want %d", len(got), len(want))
			}
			for x := range want {
				if math.Float64bits(got[x]) != math.Float64bits(want[x]) {
					t.Fatalf("output %d: %v, Reference %v", x, got[x], want[x])
				}
			}
		})
	}
}
