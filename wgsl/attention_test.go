package wgsl

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
)

func randNormal(rng *rand.Rand, n int, scale float64) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * scale)
	}
	return x
}

// TestDecodeAttentionAccuracy compares the native decode kernel with a
// float64 attention over the same FP16 / e4m3 cache values.
func TestDecodeAttentionAccuracy(t *testing.T) {
	r := testGPU(t)
	for _, tc := range []DecodeConfig{
		{Batch: 2, KVHeads: 2, QHeads: 8, HeadDim: 128, Context: 1, KV: KVFP16},
		{Batch: 2, KVHeads: 2, QHeads: 8, HeadDim: 128, Context: 100, KV: KVFP16},
		{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 1500, KV: KVFP16},
		{Batch: 3, KVHeads: 1, QHeads: 1, HeadDim: 128, Context: 513, KV: KVE4M3, KScale: 0.01, VScale: 0.02},
		{Batch: 1, KVHeads: 2, QHeads: 16, HeadDim: 128, Context: 2100, KV: KVE4M3, KScale: 0.0125, VScale: 0.0125},
		// scales this large put many values in e4m3's subnormal range
		{Batch: 1, KVHeads: 1, QHeads: 2, HeadDim: 128, Context: 300, KV: KVE4M3, KScale: 8, VScale: 16},
	} {
		rng := rand.New(rand.NewPCG(uint64(tc.Context), uint64(tc.KV)))
		nkv := tc.Batch * tc.KVHeads * tc.Context * tc.HeadDim
		q := randNormal(rng, tc.Batch*tc.QHeads*tc.HeadDim, 1)
		k, v := randNormal(rng, nkv, 1), randNormal(rng, nkv, 1)
		got, err := r.DecodeAttention(context.Background(), tc, q, k, v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeReference(tc, q, k, v)
		if err != nil {
			t.Fatal(err)
		}
		var num, den, maxAbs float64
		for i := range want {
			d := float64(got[i]) - want[i]
			num += d * d
			den += want[i] * want[i]
			maxAbs = max(maxAbs, math.Abs(d))
		}
		rel := math.Sqrt(num / den)
		t.Logf("%s B=%d Hkv=%d Hq=%d L=%d: relative L2 error %.2e, max abs %.2e", tc.KV, tc.Batch, tc.KVHeads, tc.QHeads, tc.Context, rel, maxAbs)
		if !(rel < 1e-5) {
			t.Errorf("%+v: relative error %g against float64", tc, rel)
		}
	}
}

func TestDecodeConfigErrors(t *testing.T) {
	for _, c := range []DecodeConfig{
		{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 64, Context: 10},
		{Batch: 1, KVHeads: 8, QHeads: 12, HeadDim: 128, Context: 10},
		{Batch: 1, KVHeads: 1, QHeads: 16, HeadDim: 128, Context: 10},
		{Batch: 0, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 10},
	} {
		if err := c.check(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

func TestBenchDecodeRuns(t *testing.T) {
	r := testGPU(t)
	for _, kv := range []KVFormat{KVFP16, KVE4M3} {
		b, err := r.BenchDecode(context.Background(), DecodeConfig{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 4096, KV: kv}, 3)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s L=4096: %v (%s), %.2f GB/s", kv, b.Time, b.Source, b.Bandwidth/1e9)
		if b.Time <= 0 || b.Bytes != 2*8*4096*128*int64(kv.Bytes()) {
			t.Errorf("implausible bench %+v", b)
		}
	}
}

func TestDecodePlan(t *testing.T) {
	c := DecodeConfig{Batch: 1, KVHeads: 8, QHeads: 32, HeadDim: 128, Context: 5000}
	for _, tc := range []struct {
		q     int
		limit uint32
		want  int
	}{{32, 32768, 1024}, {32, 16384, 512}, {64, 32768, 512}, {64, 16384, 256}, {32, 4096, 0}} {
		c.QHeads = tc.q
		p, err := c.plan(tc.limit)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("G=%d limit %d: no error", tc.q/8, tc.limit)
			}
			continue
		}
		if err != nil || p.T != tc.want {
			t.Errorf("G=%d limit %d: T=%d (%v), want %d", tc.q/8, tc.limit, p.T, err, tc.want)
		}
	}
}
