package attention

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// RunPromotions runs query heads side by side: its outputs are the bits of
// the same call on one goroutine (GOMAXPROCS 1), for one and several
// queries, grouped heads, split-KV, Float64 mode and a block-scaled cache.
func TestRunHeadsParallel(t *testing.T) {
	type tc struct {
		name              string
		mq, n, qh, kvh, d int
		cfg               Config
		spec              *KVSpec
		dtype             fp8.Format
		promotions        []int
	}
	cases := []tc{
		{name: "decode_e4m3_gqa", mq: 1, n: 3000, qh: 8, kvh: 2, d: 64, cfg: Config{}, dtype: fp8.FormatE4M3, promotions: []int{0, 1, 4}},
		{name: "decode_splits", mq: 1, n: 5000, qh: 4, kvh: 4, d: 128, cfg: Config{Splits: 3}, dtype: fp8.FormatE4M3, promotions: []int{0, 1}},
		{name: "prefill_bf16", mq: 40, n: 700, qh: 4, kvh: 1, d: 64, cfg: Config{Causal: true}, dtype: fp8.FormatBF16, promotions: []int{0}},
		{name: "float64", mq: 2, n: 2000, qh: 6, kvh: 3, d: 64, cfg: Config{Float64: true}, dtype: fp8.FormatE4M3, promotions: []int{0, 1}},
		{name: "mxfp8", mq: 1, n: 2500, qh: 4, kvh: 2, d: 128, cfg: Config{}, spec: &KVSpec{Format: KVMXFP8, Path: PathBlockScaled}, promotions: []int{0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProblem(11, c.mq, c.n, c.qh, c.kvh, c.d, 0.5)
			kv := p.cache(t, c.spec, c.dtype)
			cfg := c.cfg
			cfg.HeadDim, cfg.QHeads, cfg.KVHeads = c.d, c.qh, c.kvh
			run := func(procs int) [][]float64 {
				old := runtime.GOMAXPROCS(procs)
				defer runtime.GOMAXPROCS(old)
				out, err := RunPromotions(context.Background(), cfg, c.promotions, p.q, nil, kv)
				if err != nil {
					t.Fatal(err)
				}
				return out
			}
			one, many := run(1), run(8)
			for a := range one {
				for i := range one[a] {
					if math.Float64bits(one[a][i]) != math.Float64bits(many[a][i]) {
						t.Fatalf("promotion %d, element %d: %v on one goroutine, %v on several", c.promotions[a], i, one[a][i], many[a][i])
					}
				}
			}
		})
	}
}

// A cancelled context stops RunPromotions with its error on either path.
func TestRunHeadsParallelCancelled(t *testing.T) {
	p := newProblem(3, 1, 4000, 8, 8, 64, 0)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, procs := range []int{1, 8} {
		t.Run(fmt.Sprint(procs), func(t *testing.T) {
			old := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(old)
			if _, err := RunPromotions(ctx, Config{HeadDim: 64, QHeads: 8, KVHeads: 8}, []int{0}, p.q, nil, kv); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
		})
	}
}

// TestReferenceHeadsParallel: the quantized reference (from the codes and
// from the vector view, with patches) gives the same bits on one goroutine
// as on several, its KV heads side by side.
func TestReferenceHeadsParallel(t *testing.T) {
	const n, qh, kvh, d = 6000, 8, 4, 128
	p := newProblem(41, 1, n, qh, kvh, d, 0.5)
	cfg := Config{HeadDim: d, QHeads: qh, KVHeads: kvh}
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatBF16} {
		kv := p.kv(t, f, nil, nil)
		kc, vc, err := kv.QuantizeToken(2, p.k[:d], p.v[:d])
		if err != nil {
			t.Fatal(err)
		}
		patch := []TokenPatch{{Pos: 77, Head: 2, K: kc, V: vc}, {Pos: n - 1, Head: 0, K: kc, V: vc}}
		run := func(procs int) []float64 {
			old := runtime.GOMAXPROCS(procs)
			defer runtime.GOMAXPROCS(old)
			out, err := ReferenceQuantizedPatched(context.Background(), cfg, p.q, nil, kv, patch)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		for read := 0; read < 2*refViewAfter(f)+2; read++ { // the codes, then (past the threshold) the view
			one, many := run(1), run(8)
			for i := range one {
				if math.Float64bits(one[i]) != math.Float64bits(many[i]) {
					t.Fatalf("%s, read %d, element %d: %v on one goroutine, %v on several", f, read, i, one[i], many[i])
				}
			}
		}
		if kv.refView() == nil && haveRefAsm {
			t.Errorf("%s: no view after %d reads", f, 2*refViewAfter(f)+2)
		}
	}
}
