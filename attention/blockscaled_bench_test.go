package attention

import (
	"context"
	"testing"

	"github.com/fp8lab/fp8lab/internal/cputime"
)

// BenchmarkDecodeBlockScaled is one simulated decode on one core: one query
// head over 16k tokens, head_dim 128, on the block-scaled (native) path
// (tcgen05 block-scaled instructions for both GEMMs, the scaled fast path),
// beside the e4m3 direct path (sm90 wgmma) for scale. The caches are made
// once, outside the loop.
func BenchmarkDecodeBlockScaled(b *testing.B) {
	const n = 16 << 10
	p := newProblem(1, 1, n, 1, 1, 128, 0.5)
	sh := KVShape{Tokens: n, Heads: 1, KDim: 128}
	for _, bc := range []struct {
		name string
		spec KVSpec
	}{
		{"e4m3-direct", KVSpec{Format: KVE4M3}},
		{"mxfp8-block-scaled", KVSpec{Format: KVMXFP8, Path: PathBlockScaled}},
		{"nvfp4-block-scaled", KVSpec{Format: KVNVFP4, Scale: ScaleAmax, Path: PathBlockScaled}},
		{"mxfp4-block-scaled", KVSpec{Format: KVMXFP4, Path: PathBlockScaled}},
	} {
		kv, err := QuantizeKV(p.k, p.v, sh, bc.spec)
		if err != nil {
			b.Fatal(err)
		}
		cfg := Config{HeadDim: 128, DType: kv.Format()}
		b.Run(bc.name, func(b *testing.B) {
			cpu := cputime.Start()
			for b.Loop() {
				if _, err := Run(context.Background(), cfg, p.q, nil, kv); err != nil {
					b.Fatal(err)
				}
			}
			cpu.Report(b, float64(2*n*128))
		})
	}
}
