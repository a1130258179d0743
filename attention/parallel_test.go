package attention

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// kvSame reports where two caches differ ("" when they hold the same bits:
// codes, descales and, for a block-scaled cache, every code, scale and raw
// value).
func kvSame(a, b *KV) string {
	switch {
	case a.tokens != b.tokens || a.heads != b.heads || a.dim != b.dim || a.vdim != b.vdim || a.format != b.format:
		return "shape or format"
	case !slices.Equal(a.k, b.k):
		return "K codes"
	case !slices.Equal(a.vt, b.vt):
		return "V codes"
	case !slices.Equal(a.kScale, b.kScale) || !slices.Equal(a.vScale, b.vScale):
		return "descales"
	case (a.bs == nil) != (b.bs == nil):
		return "block-scaled or not"
	case a.bs != nil && (!slices.Equal(a.bs.k8, b.bs.k8) || !slices.Equal(a.bs.ks, b.bs.ks) || !slices.Equal(a.bs.vt8, b.bs.vt8) ||
		!slices.Equal(a.bs.vs, b.bs.vs) || !slices.Equal(a.bs.vraw, b.bs.vraw)):
		return "block codes or scales"
	}
	return ""
}

// Quantizing on several goroutines gives the same cache, bit for bit, as
// on one, for NewKV's formats and every KVSpec kind (static scales per
// tensor, head and channel, per-token-head scales, the three paths, the
// block formats native and dequantized, a calibration prefix), on a cache
// of several chunks with a short last one and two heads.
func TestQuantizeParallelEqualsSerial(t *testing.T) {
	const n, kvh, d = 3*quantChunk + 77, 2, 64
	p := newProblem(5, 1, n, 2, kvh, d, 0.5)
	for i := range p.k { // an outlier channel and a wide range, so that scales matter
		if i%d == 3 {
			p.k[i] *= 40
		}
		p.v[i] *= float32(1 + i%7)
	}
	ctx := context.Background()
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatBF16, fp8.FormatFP16} {
		for _, sc := range [][]float32{nil, {0.5, 2}} {
			kS, vS := sc, sc
			if kS == nil {
				kS, vS = []float32{1}, []float32{1}
			}
			one, many := newKV(n, kvh, d, d, f, fp8.SatFinite, kS, vS), newKV(n, kvh, d, d, f, fp8.SatFinite, kS, vS)
			if err := one.setTokens(ctx, p.k, p.v, 1); err != nil {
				t.Fatal(err)
			}
			if err := many.setTokens(ctx, p.k, p.v, 5); err != nil {
				t.Fatal(err)
			}
			if diff := kvSame(one, many); diff != "" {
				t.Errorf("NewKV %s scales %v: %s differ between 1 and 5 goroutines", f, sc, diff)
			}
			// And the token-by-token store (SetToken's) gives the same.
			each := newKV(n, kvh, d, d, f, fp8.SatFinite, kS, vS)
			for tok := 0; tok < n; tok++ {
				for h := 0; h < kvh; h++ {
					each.setToken(tok, h, p.k[(tok*kvh+h)*d:][:d], p.v[(tok*kvh+h)*d:][:d])
				}
			}
			if diff := kvSame(one, each); diff != "" {
				t.Errorf("NewKV %s scales %v: %s differ between the blocked and the token-by-token store", f, sc, diff)
			}
		}
	}
	T, H, TH, C := PerTensor, PerHead, PerTokenHead, PerChannel
	specs := []KVSpec{
		{Format: KVBF16}, {Format: KVFP16},
		{Format: KVE4M3, KScales: T, VScales: T, Scale: ScaleAmax},
		{Format: KVE4M3, KScales: H, VScales: H, Scale: ScaleAmax},
		{Format: KVE4M3, KScales: C, VScales: T, Scale: ScaleAmax, Path: PathDequantBF16},
		{Format: KVE4M3, KScales: TH, VScales: TH, Path: PathDequantBF16},
		{Format: KVE5M2, KScales: T, VScales: T, Scale: ScalePrefix, PrefixTokens: 500},
		{Format: KVMXFP8, Path: PathDequantBF16}, {Format: KVMXFP8, Path: PathDequantE4M3}, {Format: KVMXFP8, Path: PathBlockScaled},
		{Format: KVNVFP4, Scale: ScaleAmax, Path: PathDequantE4M3}, {Format: KVNVFP4, Scale: ScaleAmax, Path: PathBlockScaled},
		{Format: KVMXFP4, Path: PathDequantBF16}, {Format: KVMXFP4, Path: PathBlockScaled},
	}
	shape := KVShape{Tokens: n, Heads: kvh, KDim: d}
	for _, spec := range specs {
		one, err := quantizeKV(ctx, p.k, p.v, shape, spec, 1)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		many, err := quantizeKV(ctx, p.k, p.v, shape, spec, 5)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		if diff := kvSame(one, many); diff != "" {
			t.Errorf("QuantizeKV %s: %s differ between 1 and 5 goroutines", spec, diff)
		}
		if spec.Path != PathBlockScaled { // the token-by-token store (SetToken's)
			each := newKV(n, kvh, d, d, one.format, one.sat, one.kScale, one.vScale)
			each.kq, each.vq = one.kq, one.vq
			for tok := 0; tok < n; tok++ {
				for h := 0; h < kvh; h++ {
					each.setToken(tok, h, p.k[(tok*kvh+h)*d:][:d], p.v[(tok*kvh+h)*d:][:d])
				}
			}
			if diff := kvSame(one, each); diff != "" {
				t.Errorf("QuantizeKV %s: %s differ between the blocked and the token-by-token store", spec, diff)
			}
		}
	}
}

// A cancelled context stops the quantizing with its error.
func TestQuantizeCancelled(t *testing.T) {
	const n, d = 4 * quantChunk, 64
	p := newProblem(6, 1, n, 1, 1, d, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := NewKVContext(ctx, p.k, p.v, p.shape, fp8.FormatE4M3, fp8.SatFinite, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("NewKVContext: %v, want context.Canceled", err)
	}
	for _, spec := range []KVSpec{{Format: KVE4M3}, {Format: KVMXFP8, Path: PathBlockScaled}} {
		if _, err := QuantizeKVContext(ctx, p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: d}, spec); !errors.Is(err, context.Canceled) {
			t.Errorf("QuantizeKVContext %s: %v, want context.Canceled", spec, err)
		}
	}
}

// TestSetTokensBlocks: the blocked V store of every block size
// (vBlockTokens: 4, 2 and 1 times padTokens by the number of transposed
// rows), whole blocks and a partial one, gives the token-by-token store's
// cache, with a token's heads at a time or a head's block in one
// EncodeScaledRows call (encodeBlocks), with unit scales and with others.
func TestSetTokensBlocks(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ kvh, d, m int }{{1, 128, 4}, {8, 128, 4}, {16, 128, 2}, {12, 128, 2}, {32, 128, 1}, {20, 256, 1}} {
		if got := vBlockTokens(c.kvh * c.d); got != c.m {
			t.Fatalf("%d heads of %d: block of %d×padTokens, want %d", c.kvh, c.d, got, c.m)
		}
		n := quantChunk + 4*padTokens + 37 // whole blocks, then a partial one in the second range
		p := newProblem(9, 1, n, c.kvh, c.kvh, c.d, 0.5)
		for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatBF16} {
			for _, sc := range [][2]float32{{1, 1}, {0.37, 2.5}} {
				for _, rows := range []bool{false, true} { // token by token, or a head's block in one call (encodeBlocks)
					defer func(b bool) { encodeBlocks = b }(encodeBlocks)
					encodeBlocks = rows
					blocked := newKV(n, c.kvh, c.d, c.d, f, fp8.SatFinite, []float32{sc[0]}, []float32{sc[1]})
					if err := blocked.setTokens(ctx, p.k, p.v, 2); err != nil {
						t.Fatal(err)
					}
					each := newKV(n, c.kvh, c.d, c.d, f, fp8.SatFinite, []float32{sc[0]}, []float32{sc[1]})
					for tok := 0; tok < n; tok++ {
						for h := 0; h < c.kvh; h++ {
							each.setToken(tok, h, p.k[(tok*c.kvh+h)*c.d:][:c.d], p.v[(tok*c.kvh+h)*c.d:][:c.d])
						}
					}
					if diff := kvSame(blocked, each); diff != "" {
						t.Errorf("%d heads of %d, %s, scales %v, head blocks %v (blocks of %d tokens): %s differ between the blocked and the token-by-token store", c.kvh, c.d, f, sc, rows, c.m*padTokens, diff)
					}
				}
			}
		}
	}
}
