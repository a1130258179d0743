package wgsl

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/simcase"
)

// BenchmarkSimDecode times one SimDecode of a 16k-token context (head_dim
// 128, 8 query heads over 2 KV heads, promotion never) per dtype, with
// FA3's default kBlockN (e4m3 96, bf16 and f16 128) and with 128 for all, the cache and queries uploaded each time as SimDecode does; the
// shader is compiled before the timer starts. products/s counts the
// products of both GEMMs (2 · query heads · tokens · head_dim).
func BenchmarkSimDecode(b *testing.B) {
	r := testGPU(b)
	ctx := context.Background()
	for _, bc := range []struct {
		f   fp8.Format
		kbn int
	}{{fp8.FormatE4M3, 0}, {fp8.FormatE4M3, 128}, {fp8.FormatBF16, 0}, {fp8.FormatFP16, 0}} {
		name := bc.f.String()
		if bc.kbn > 0 {
			name += fmt.Sprintf("-kbn%d", bc.kbn)
		}
		b.Run(name, func(b *testing.B) {
			c := simcase.Case{Tokens: 16384, Cfg: attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, DType: bc.f, KBlockN: bc.kbn}}
			q, qs, kv, err := simcase.Inputs(c, 1)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.SimDecode(ctx, c.Cfg, q, qs, kv); err != nil { // compile
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.SimDecode(ctx, c.Cfg, q, qs, kv); err != nil {
					b.Fatal(err)
				}
			}
			products := float64(2 * c.Cfg.QHeads * c.Tokens * c.Cfg.HeadDim)
			b.ReportMetric(products*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}

// BenchmarkSimDecodeSplits times one SimDecode of a 32k-token e4m3 context
// (head_dim 128, 8 query heads over 2 KV heads, promotion never, FA3's
// kBlockN 96: 342 tiles) with 1, 4, 16 and 128 splits: the same tiles, cut
// into more workgroups that run in parallel (8, 32, 128, 1024 of them).
func BenchmarkSimDecodeSplits(b *testing.B) {
	r := testGPU(b)
	ctx := context.Background()
	c := simcase.Case{Tokens: 32768, Cfg: attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8}}
	q, qs, kv, err := simcase.Inputs(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range []int{1, 4, 16, 128} {
		b.Run(fmt.Sprintf("splits%d", s), func(b *testing.B) {
			cfg := c.Cfg
			cfg.Splits = s
			if _, err := r.SimDecode(ctx, cfg, q, qs, kv); err != nil { // compile
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.SimDecode(ctx, cfg, q, qs, kv); err != nil {
					b.Fatal(err)
				}
			}
			products := float64(2 * cfg.QHeads * c.Tokens * cfg.HeadDim)
			b.ReportMetric(products*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}

// BenchmarkSimPack is the host's part of a needle haystack's GPU batch:
// planning and packing one 128k-token cache (one KV head, head_dim 128,
// e4m3 or bf16) and 12 trials of one replaced token each into A, B and the
// state (no GPU needed). wN packs on GOMAXPROCS goroutines, w1 on one.
func BenchmarkSimPack(b *testing.B) {
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatBF16} {
		c := simcase.Case{Tokens: 131072, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 1, DType: f, KBlockN: 96}}
		q, _, kv, err := simcase.Inputs(c, 1)
		if err != nil {
			b.Fatal(err)
		}
		trials := make([]SimTrial, 12)
		for i := range trials {
			tk, err := SimTokenOf(kv, 1000*i, 0)
			if err != nil {
				b.Fatal(err)
			}
			trials[i] = SimTrial{Q: q, Tokens: []SimToken{tk}}
		}
		benchPackSim(b, f.String()+"/", c.Cfg, kv, trials, nil)
	}
}

// BenchmarkSimPackTrials is packSim of 384 trials of two replaced tokens
// each (a needle and a sink) over a 16k-token e4m3 cache packed ahead:
// the trials' words and tables, which a GPU batch packs before its first
// submission, on one goroutine (w1) and on every core (wN).
func BenchmarkSimPackTrials(b *testing.B) {
	c := simcase.Case{Tokens: 16384, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 1, DType: fp8.FormatE4M3, KBlockN: 96}}
	q, _, kv, err := simcase.Inputs(c, 1)
	if err != nil {
		b.Fatal(err)
	}
	trials := make([]SimTrial, 384)
	for i := range trials {
		needle, err := SimTokenOf(kv, (37*i+500)%c.Tokens, 0)
		if err != nil {
			b.Fatal(err)
		}
		sink, err := SimTokenOf(kv, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		trials[i] = SimTrial{Q: q, Tokens: []SimToken{sink, needle}}
	}
	pc, err := PackSimCache(c.Cfg, nil, kv)
	if err != nil {
		b.Fatal(err)
	}
	benchPackSim(b, "", c.Cfg, kv, trials, pc)
}

// benchPackSim times planSim and packSim of trials over kv (its cache
// packed ahead when pc is not nil) on one goroutine (sub-benchmark
// prefix+"w1") and on every core (prefix+"wN").
func benchPackSim(b *testing.B, prefix string, cfg attention.Config, kv *attention.KV, trials []SimTrial, pc *SimPackedCache) {
	for _, w := range []struct {
		name string
		n    int
	}{{"w1", 1}, {"wN", runtime.GOMAXPROCS(0)}} {
		b.Run(prefix+w.name, func(b *testing.B) {
			prev := runtime.GOMAXPROCS(w.n)
			defer runtime.GOMAXPROCS(prev)
			for b.Loop() {
				p, err := planSim(cfg, nil, kv, trials)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := packSim([]simPart{{p: p, kv: kv, trials: trials, packed: pc}}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
