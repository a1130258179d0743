package attention

import (
	"context"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/cputime"
)

// BenchmarkDecode is one simulated decode on one core: one query head over
// 128k tokens, head_dim 128, with the given cache dtype (both GEMMs through
// the dtype's sm90 wgmma model). The target for e4m3 is 150 ms.
// Numbers on the shared 2-core machine are noisy: cpu-ms/op is the thread's
// CPU time per decode, which the other tenants disturb far less than the
// wall time. The NVFP4 caches (amax tensor scale) are dequantized to e4m3
// or bf16 when made, as the kernel does before its MMA.
func BenchmarkDecode(b *testing.B) {
	const n = 128 << 10
	p := newProblem(1, 1, n, 1, 1, 128, 0.5)
	for _, bc := range []struct {
		name string
		f    fp8.Format
		cfg  Config
	}{
		{"e4m3-single-level", fp8.FormatE4M3, Config{HeadDim: 128}},
		{"e4m3-two-level", fp8.FormatE4M3, Config{HeadDim: 128, Promotion: 1}},
		{"bf16", fp8.FormatBF16, Config{HeadDim: 128, DType: fp8.FormatBF16}},
		{"nvfp4-dequant-e4m3", fp8.FormatE4M3, Config{HeadDim: 128}},
		{"nvfp4-dequant-bf16", fp8.FormatBF16, Config{HeadDim: 128, DType: fp8.FormatBF16}},
	} {
		kv, err := NewKV(p.k, p.v, p.shape, bc.f, fp8.SatFinite, nil, nil)
		if strings.HasPrefix(bc.name, "nvfp4") {
			path := PathDequantE4M3
			if bc.f == fp8.FormatBF16 {
				path = PathDequantBF16
			}
			kv, err = QuantizeKV(p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: 128}, KVSpec{Format: KVNVFP4, Scale: ScaleAmax, Path: path})
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			cpu := cputime.Start()
			for b.Loop() {
				if _, err := Run(context.Background(), bc.cfg, p.q, nil, kv); err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report(b, float64(2*n*128))
		})
	}
}

// BenchmarkQuantizeKV is writing a cache of 128k tokens (one head,
// head_dim 128) in each format: the cache write, which the decode
// benchmarks leave out (the dequantizing paths store the MMA's codes once,
// as the kernel would compute them tile by tile).
func BenchmarkQuantizeKV(b *testing.B) {
	const n = 128 << 10
	p := newProblem(1, 1, n, 1, 1, 128, 0.5)
	for _, spec := range []KVSpec{
		{Format: KVE4M3},
		{Format: KVE4M3, KScales: PerTokenHead, VScales: PerTokenHead, Path: PathDequantBF16},
		{Format: KVMXFP8, Path: PathDequantBF16},
		{Format: KVNVFP4, Scale: ScaleAmax, Path: PathDequantE4M3},
	} {
		b.Run(strings.ReplaceAll(spec.String(), " ", "_"), func(b *testing.B) {
			cpu := cputime.Start()
			for b.Loop() {
				if _, err := QuantizeKV(p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: 128}, spec); err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report(b, 0)
		})
	}
}
