package attention

import (
	"context"
	"fmt"
	"math"
	"slices"
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
			cfg, kv := refTestSetup(t, p, tc.cfg, tc.f, tc.name == "prefill mask", tc.sink, tc.perHeadScale)
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
			got, err := k.referenceCodes(ctx, qv, nil)
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

// TestReferencePatchedBits: the reference and the weights read through
// token patches equal, bit for bit, ReferenceQuantized and
// ReferenceWeights on a copy of the cache with the patches written in by
// SetTokenCodes (in order: a repeated token's last patch wins), and leave
// the cache as it was: patches at the first and the last token, next to
// each other, inside a run of four keys, outside the window, masked,
// repeated, with GQA, causal prefill, sinks, per-head scales, 8- and
// 16-bit formats; an e5m2 patch of ±∞ and NaN codes included.
func TestReferencePatchedBits(t *testing.T) {
	ctx := context.Background()
	for i, tc := range []struct {
		name              string
		mq, n, qh, kvh, d int
		cfg               Config
		f                 fp8.Format
		pos               []int // patched tokens (head: i % kvh)
		specials          bool  // codes of ±∞ and NaN in the patches
	}{
		{"decode", 1, 1001, 1, 1, 128, Config{}, fp8.FormatE4M3, []int{0, 1, 2, 3, 17, 500, 1000, 17, 2}, false},
		{"decode GQA, repeated", 1, 517, 8, 2, 128, Config{}, fp8.FormatE4M3, []int{5, 5, 6, 7, 8, 9, 516, 0, 5, 9}, false},
		{"decode window, sinks", 1, 1000, 4, 2, 64, Config{Window: 200}, fp8.FormatE5M2, []int{0, 1, 2, 3, 4, 5, 850, 999}, false},
		{"e5m2 specials", 1, 300, 2, 1, 64, Config{}, fp8.FormatE5M2, []int{3, 100, 200}, true},
		{"prefill causal window", 20, 257, 6, 3, 64, Config{Causal: true, Window: 37}, fp8.FormatE4M3, []int{0, 230, 231, 250, 256}, false},
		{"prefill mask", 9, 101, 2, 1, 64, Config{}, fp8.FormatE4M3, []int{3, 5, 50, 100}, false},
		{"bf16", 3, 203, 8, 2, 128, Config{Causal: true}, fp8.FormatBF16, []int{0, 1, 100, 202}, false},
		{"fp16 hd 576", 2, 99, 2, 2, 576, Config{}, fp8.FormatFP16, []int{0, 98}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProblem(uint64(70+i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
			cfg, kv := refTestSetup(t, p, tc.cfg, tc.f, tc.name == "prefill mask", tc.name == "decode window, sinks", tc.kvh > 1)
			// The patches: codes of another token of the cache, or for
			// specials e5m2's +∞, −∞ and a NaN in a few elements.
			var patch []TokenPatch
			for x, pos := range tc.pos {
				kc, vc := kv.TokenCodes((pos*31+7+13*x)%tc.n, x%tc.kvh) // a repeated token: other codes
				if tc.specials {
					kc[x%tc.d], kc[(x+1)%tc.d], vc[x%tc.d] = 0x7c, 0xfc, 0x7e
				}
				patch = append(patch, TokenPatch{Pos: pos, Head: x % tc.kvh, K: kc, V: vc})
			}
			before := kv.Clone()
			copyKV := kv.Clone()
			for _, tp := range patch {
				if err := copyKV.SetTokenCodes(tp.Pos, tp.Head, tp.K, tp.V); err != nil {
					t.Fatal(err)
				}
			}
			want, err := ReferenceQuantized(ctx, cfg, p.q, nil, copyKV)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ReferenceQuantizedPatched(ctx, cfg, p.q, nil, kv, patch)
			if err != nil {
				t.Fatal(err)
			}
			sameBits(t, "output", got, want)
			ww, err := ReferenceWeights(ctx, cfg, p.q, nil, copyKV)
			if err != nil {
				t.Fatal(err)
			}
			gw, err := ReferenceWeightsPatched(ctx, cfg, p.q, nil, kv, patch)
			if err != nil {
				t.Fatal(err)
			}
			for r := range ww {
				sameBits(t, fmt.Sprintf("weights of row %d", r), gw[r], ww[r])
			}
			for h := 0; h < tc.kvh; h++ {
				if !slices.Equal(kv.KCodes(h), before.KCodes(h)) {
					t.Fatalf("the patched reference changed K of head %d", h)
				}
				for x := 0; x < tc.d; x++ {
					if !slices.Equal(kv.VCodes(h, x), before.VCodes(h, x)) {
						t.Fatalf("the patched reference changed V of head %d", h)
					}
				}
			}
		})
	}
}

// refTestSetup is a references' test case on problem p: cfg with p's
// shape and format f, refTestMask's mask when mask is set, sinks 0.5·h on
// query head h when sinks is, and p's cache in f, with refTestScales'
// per-head descales when perHeadScales is.
func refTestSetup(t *testing.T, p problem, cfg Config, f fp8.Format, mask, sinks, perHeadScales bool) (Config, *KV) {
	t.Helper()
	qh, kvh := len(p.q)/(p.mq*p.shape.Dim), p.shape.Heads
	cfg.HeadDim, cfg.QHeads, cfg.KVHeads, cfg.DType = p.shape.Dim, qh, kvh, f
	if mask {
		cfg.Mask = refTestMask(p.mq, p.n)
	}
	if sinks {
		cfg.Sinks = make([]float64, qh)
		for h := range cfg.Sinks {
			cfg.Sinks[h] = 0.5 * float64(h)
		}
	}
	var ks, vs []float32
	if perHeadScales {
		ks, vs = refTestScales(kvh)
	}
	return cfg, p.kv(t, f, ks, vs)
}

// refTestMask is the references' tests' mask of mq query rows over n keys:
// every key but those whose flat index is 3 mod 7 or 5 mod 11.
func refTestMask(mq, n int) []bool {
	m := make([]bool, mq*n)
	for x := range m {
		m[x] = x%7 != 3 && x%11 != 5
	}
	return m
}

// refTestScales is the references' tests' per-head descales of kvh KV
// heads: K 0.5 + 0.25h, V 2 − 0.5h.
func refTestScales(kvh int) (ks, vs []float32) {
	for h := 0; h < kvh; h++ {
		ks, vs = append(ks, 0.5+0.25*float32(h)), append(vs, 2-0.5*float32(h))
	}
	return ks, vs
}

// sameBits fails unless got and want hold the same float64 bits, a NaN
// matching any NaN (which NaN's payload a sum of two NaNs keeps depends on
// the order of the operands the compiler picks, which no contract names).
func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for x := range want {
		if math.IsNaN(got[x]) && math.IsNaN(want[x]) {
			continue
		}
		if math.Float64bits(got[x]) != math.Float64bits(want[x]) {
			t.Fatalf("%s: element %d is %v, through the copy %v", what, x, got[x], want[x])
		}
	}
}

// TestReferencePatchedRefuses: a patch outside the cache, of the wrong
// length, or on a block-scaled cache is an error, not a panic.
func TestReferencePatchedRefuses(t *testing.T) {
	ctx := context.Background()
	p := newProblem(3, 1, 64, 1, 1, 64, 0.5)
	cfg := Config{HeadDim: 64, DType: fp8.FormatE4M3}
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	kc, vc := kv.TokenCodes(0, 0)
	bs, err := QuantizeKV(p.k, p.v, KVShape{Tokens: 64, Heads: 1, KDim: 64}, KVSpec{Format: KVMXFP8, Scale: ScaleAmax, Path: PathBlockScaled})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		kv    *KV
		cfg   Config
		patch TokenPatch
	}{
		{"token past the end", kv, cfg, TokenPatch{Pos: 64, K: kc, V: vc}},
		{"negative token", kv, cfg, TokenPatch{Pos: -1, K: kc, V: vc}},
		{"head outside", kv, cfg, TokenPatch{Pos: 1, Head: 1, K: kc, V: vc}},
		{"short K", kv, cfg, TokenPatch{Pos: 1, K: kc[:10], V: vc}},
		{"long V", kv, cfg, TokenPatch{Pos: 1, K: kc, V: append(vc, 0)}},
		{"block-scaled", bs, Config{HeadDim: 64, DType: bs.Format()}, TokenPatch{Pos: 1, K: kc, V: vc}},
	} {
		if _, err := ReferenceQuantizedPatched(ctx, tc.cfg, p.q, nil, tc.kv, []TokenPatch{tc.patch}); err == nil {
			t.Errorf("%s: ReferenceQuantizedPatched accepted it", tc.name)
		}
		if _, err := ReferenceWeightsPatched(ctx, tc.cfg, p.q, nil, tc.kv, []TokenPatch{tc.patch}); err == nil {
			t.Errorf("%s: ReferenceWeightsPatched accepted it", tc.name)
		}
	}
}
