package attention

import (
	"context"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// BenchmarkDecode is one simulated decode on one core: one query head over
// 128k tokens, head_dim 128, with the given cache dtype (both GEMMs through
// the dtype's sm90 wgmma model). The target for e4m3 is 150 ms.
// Numbers on the shared 2-core machine are noisy.
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
	} {
		kv, err := NewKV(p.k, p.v, p.shape, bc.f, fp8.SatFinite, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Run(context.Background(), bc.cfg, p.q, nil, kv); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(2*n*128)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}
