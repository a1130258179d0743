package attention

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/fp8lab/fp8lab/internal/cputime"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// TestReferenceQuantizedTrials: the reference of several trials over one
// cache equals, bit for bit, ReferenceQuantizedPatched of each trial alone:
// each trial with its own query and its own patches (none; at the first and
// the last token; at block boundaries of sixteen keys and of the sums'
// chunks; repeated; masked; outside the window), GQA groups, causal prefill
// of several rows, a mask, sinks, per-head scales, every 8- and 16-bit
// format, caches not a multiple of sixteen tokens, with and without the
// cache's vector view built (the two decodes), and a block-scaled cache
// (trial by trial). The shared path runs where the vector kernels run;
// every build runs the trials alone. Dropping a trial's patches, or sharing
// the first trial's patches with all, fails it (checked by hand).
func TestReferenceQuantizedTrials(t *testing.T) {
	defer func(s bool) { sharedTrials = s }(sharedTrials)
	ctx := context.Background()
	for i, tc := range []struct {
		name              string
		mq, n, qh, kvh, d int
		cfg               Config
		f                 fp8.Format
		trials            int
		specials          bool // e5m2 patches with ±∞ and NaN codes: scores and weights of ±∞ and NaN
	}{
		{"decode", 1, 1001, 1, 1, 128, Config{}, fp8.FormatE4M3, 7, false},
		{"decode one trial", 1, 777, 1, 1, 64, Config{}, fp8.FormatE4M3, 1, false},
		{"decode long", 1, 3000, 1, 1, 128, Config{}, fp8.FormatE4M3, 9, false},
		{"decode GQA", 1, 517, 8, 2, 128, Config{}, fp8.FormatE4M3, 3, false},
		{"decode window, sinks", 1, 1000, 4, 2, 64, Config{Window: 200}, fp8.FormatE5M2, 4, false},
		{"prefill causal window", 20, 257, 6, 3, 64, Config{Causal: true, Window: 37}, fp8.FormatE4M3, 3, false},
		{"prefill mask", 9, 101, 2, 1, 64, Config{}, fp8.FormatE4M3, 5, false},
		{"bf16", 3, 203, 8, 2, 128, Config{Causal: true}, fp8.FormatBF16, 2, false},
		{"fp16 hd 576", 2, 99, 2, 2, 576, Config{}, fp8.FormatFP16, 3, false},
		{"bf16 decode", 1, 4100, 1, 1, 128, Config{}, fp8.FormatBF16, 6, false},
		{"e5m2 specials", 1, 600, 1, 1, 64, Config{}, fp8.FormatE5M2, 6, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProblem(uint64(90+i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
			cfg, kv := refTestSetup(t, p, tc.cfg, tc.f, tc.name == "prefill mask", tc.name == "decode window, sinks", tc.kvh > 1)
			r := rand.New(rand.NewPCG(uint64(i), 3))
			qs := make([][]float32, tc.trials)
			patches := make([][]TokenPatch, tc.trials)
			for tr := range qs {
				qs[tr] = make([]float32, len(p.q))
				for x := range qs[tr] {
					qs[tr][x] = float32(r.NormFloat64())
				}
				if tr == 1 {
					continue // a trial without patches
				}
				pos := []int{0, tc.n - 1, 15, 16, 255, 256, 257, r.IntN(tc.n), r.IntN(tc.n)}
				pos = pos[:1+r.IntN(len(pos))]
				pos = append(pos, pos[len(pos)-1]) // repeated: the last wins
				for x, tok := range pos {
					if tok >= tc.n {
						continue
					}
					kc, vc := kv.TokenCodes(r.IntN(tc.n), x%tc.kvh)
					if tc.specials && x%2 == 0 {
						kc[x%tc.d], vc[(x+3)%tc.d] = []uint16{0x7c, 0xfc, 0x7e}[x%3], []uint16{0x7c, 0xfc, 0x7e}[(x+1)%3]
					}
					patches[tr] = append(patches[tr], TokenPatch{Pos: tok, Head: x % tc.kvh, K: kc, V: vc})
				}
			}
			want := make([][]float64, tc.trials)
			for tr := range qs {
				w, err := ReferenceQuantizedPatched(ctx, cfg, qs[tr], nil, kv, patches[tr])
				if err != nil {
					t.Fatal(err)
				}
				want[tr] = w
			}
			check := func(what string) {
				t.Helper()
				got, err := ReferenceQuantizedTrials(ctx, cfg, qs, kv, patches)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d trials, want %d", what, len(got), len(want))
				}
				for tr := range want {
					sameBits(t, fmt.Sprintf("%s: trial %d", what, tr), got[tr], want[tr])
				}
			}
			// The references above read the cache as many times as there
			// are trials: where the vector kernels run, at most a view's
			// threshold of them left the cache without one.
			hasView := func() bool { kv.views.mu.Lock(); defer kv.views.mu.Unlock(); return kv.views.v != nil }
			kv.dropViews()
			sharedTrials = haveRefAsm
			check("from the codes")
			if haveRefAsm && tc.trials < refViewAfter(tc.f) && hasView() {
				t.Fatalf("%d trials built a view (threshold %d)", tc.trials, refViewAfter(tc.f))
			}
			check("again")
			sharedTrials = false // each trial alone, side by side: the builds without the vector kernels
			check("alone")
			sharedTrials = haveRefAsm
			if haveRefAsm && 2*tc.trials >= refViewAfter(tc.f) && !hasView() {
				t.Fatalf("%d reads built no view (threshold %d)", 2*tc.trials, refViewAfter(tc.f))
			}
		})
	}
	// A block-scaled cache: trial by trial, patches refused as alone.
	p := newProblem(5, 1, 300, 1, 1, 64, 0.5)
	bs, err := QuantizeKV(p.k, p.v, KVShape{Tokens: 300, Heads: 1, KDim: 64}, KVSpec{Format: KVMXFP8, Scale: ScaleAmax, Path: PathBlockScaled})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{HeadDim: 64}
	q2 := [][]float32{p.q, append([]float32(nil), p.q[32:]...)}
	q2[1] = append(q2[1], p.q[:32]...)
	got, err := ReferenceQuantizedTrials(ctx, cfg, q2, bs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for tr, q := range q2 {
		want, err := ReferenceQuantizedPatched(ctx, cfg, q, nil, bs, nil)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, fmt.Sprintf("block-scaled trial %d", tr), got[tr], want)
	}
}

// TestReferenceQuantizedTrialsRefuses: bad arguments are errors.
func TestReferenceQuantizedTrialsRefuses(t *testing.T) {
	ctx := context.Background()
	p := newProblem(3, 1, 64, 1, 1, 64, 0.5)
	cfg := Config{HeadDim: 64, DType: fp8.FormatE4M3}
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	kc, vc := kv.TokenCodes(0, 0)
	for _, tc := range []struct {
		name    string
		qs      [][]float32
		patches [][]TokenPatch
	}{
		{"patches of another count", [][]float32{p.q, p.q}, [][]TokenPatch{nil}},
		{"a query of the wrong length", [][]float32{p.q, p.q[:10]}, nil},
		{"a query of more rows", [][]float32{p.q, append(append([]float32(nil), p.q...), p.q...)}, nil},
		{"a patch past the end", [][]float32{p.q}, [][]TokenPatch{{{Pos: 64, K: kc, V: vc}}}},
	} {
		if _, err := ReferenceQuantizedTrials(ctx, cfg, tc.qs, kv, tc.patches); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if got, err := ReferenceQuantizedTrials(ctx, cfg, nil, kv, nil); err != nil || got != nil {
		t.Errorf("no trials: %v, %v", got, err)
	}
}

// BenchmarkReferenceQuantizedTrials is the exact reference of the needle's
// trials that share a haystack (12 at the defaults: 96 trials over 8
// haystacks): 128k tokens, head_dim 128, one head, each trial with its
// needle patched in, for the e4m3 and bf16 caches: "singles" is a
// ReferenceQuantizedPatched per trial (the cache's view built, as the
// needle's trials built it), "trials" one ReferenceQuantizedTrials for all
// (the cache's view dropped before each: "trials-view" builds it, a
// threshold's worth of trials; "trials-codes" decodes the codes, the path of
// too few trials; without the vector kernels both are singles too).
// cpu-ms/op is the CPU time of the whole batch; run with -cpu 1 for one
// core.
func BenchmarkReferenceQuantizedTrials(b *testing.B) {
	const n, d, trials = 128 << 10, 128, 12
	ctx := context.Background()
	p := newProblem(1, 1, n, 1, 1, d, 0.5)
	r := rand.New(rand.NewPCG(2, 3))
	qs := make([][]float32, trials)
	for t := range qs {
		qs[t] = make([]float32, d)
		for x := range qs[t] {
			qs[t][x] = float32(r.NormFloat64())
		}
	}
	for _, f := range []KVFormat{KVE4M3, KVBF16} {
		kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: d}, KVSpec{Format: f})
		if err != nil {
			b.Fatal(err)
		}
		cfg := Config{HeadDim: d, QHeads: 1, KVHeads: 1, DType: kv.Format()}
		patches := make([][]TokenPatch, trials)
		for t := range patches {
			kc, vc := kv.TokenCodes(r.IntN(n), 0)
			patches[t] = []TokenPatch{{Pos: r.IntN(n), K: kc, V: vc}}
		}
		for _, path := range []string{"trials-codes", "singles", "trials-view"} {
			b.Run(fmt.Sprintf("%s/%s", f, path), func(b *testing.B) {
				cpu := cputime.Start()
				for b.Loop() {
					kv.dropViews()
					if path == "trials-codes" {
						kv.views.reads = -1 << 30 // no view however many read
					}
					if path == "singles" {
						for t, q := range qs {
							if _, err := ReferenceQuantizedPatched(ctx, cfg, q, nil, kv, patches[t]); err != nil {
								b.Fatal(err)
							}
						}
						continue
					}
					if _, err := ReferenceQuantizedTrials(ctx, cfg, qs, kv, patches); err != nil {
						b.Fatal(err)
					}
				}
				cpu.Report(b, float64(2*n*d*trials))
			})
		}
	}
}
