package attention

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/pmath"
)

// referenceOneByOne is Reference as it was written before its keys went
// four side by side and its exps through pmath.Exps: one key's dot
// product at a time, pmath.Exp a key, each key's terms added as its
// weight is computed. It pins Reference's bits.
func referenceOneByOne(ctx context.Context, cfg Config, q, k, v []float64, mq, n int) ([]float64, error) {
	if cfg.KVHeads == 0 {
		cfg.KVHeads = 1
	}
	if cfg.QHeads == 0 {
		cfg.QHeads = cfg.KVHeads
	}
	// The dtype, models and tiles play no part: the defaults are resolved
	// instead, so that the config of any path (a block-scaled cache's e2m1
	// dtype and instructions included) gives its reference.
	cfg.DType, cfg.QKModel, cfg.PVModel, cfg.KBlockM, cfg.KBlockN = fp8.FormatInvalid, "", "", 0, 0
	p, err := cfg.resolve(mq, n)
	if err != nil {
		return nil, err
	}
	d, dv := p.HeadDim, p.VDim
	if len(q) != mq*p.QHeads*d || len(k) != n*p.KVHeads*d || len(v) != n*p.KVHeads*dv {
		return nil, fmt.Errorf("attention: Reference with %d query, %d key and %d value elements: want %d, %d, %d (%d queries, %d tokens, %d/%d heads, head_dim %d/%d)",
			len(q), len(k), len(v), mq*p.QHeads*d, n*p.KVHeads*d, n*p.KVHeads*dv, mq, n, p.QHeads, p.KVHeads, d, dv)
	}
	out := make([]float64, mq*p.QHeads*dv)
	s := make([]float64, n)
	for i := 0; i < mq; i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		pos := p.position(i)
		lo, hi := p.keyRange(pos)
		for hq := 0; hq < p.QHeads; hq++ {
			h := hq / p.group
			qr := q[(i*p.QHeads+hq)*d:][:d]
			m := math.Inf(-1)
			for j := lo; j < hi; j++ {
				if p.Mask != nil && !p.Mask[i*n+j] {
					s[j] = math.Inf(-1)
					continue
				}
				kr := k[(j*p.KVHeads+h)*d:][:d]
				var dot float64
				for x := range qr {
					dot += qr[x] * kr[x]
				}
				s[j] = p.SoftmaxScale * dot
				m = max(m, s[j])
			}
			o := out[(i*p.QHeads+hq)*dv:][:dv]
			if hi <= lo || math.IsInf(m, -1) {
				continue
			}
			var l float64
			if len(p.Sinks) > 0 {
				l = pmath.Exp(p.Sinks[hq] - m)
			}
			for j := lo; j < hi; j++ {
				if math.IsInf(s[j], -1) { // masked
					continue
				}
				w := pmath.Exp(s[j] - m)
				l += w
				vr := v[(j*p.KVHeads+h)*dv:][:dv]
				for x := range o {
					o[x] += w * vr[x]
				}
			}
			for x := range o {
				o[x] /= l
			}
		}
	}
	return out, nil
}

// TestReferenceBits: Reference equals referenceOneByOne bit for bit, on
// one goroutine and on several with chunks of one and of a few rows and
// heads (and ReferenceF32 on the float32 inputs): key
// counts that are not multiples of four, GQA, causal prefill, windows, a
// mask (runs of four keys broken by masked ones), sinks, and scores
// spread wide enough that weights underflow (the batch exp's slow path).
func TestReferenceBits(t *testing.T) {
	ctx := context.Background()
	for i, tc := range []struct {
		mq, n, qh, kvh, d int
		cfg               Config
		mask, sinks       bool
		spread            float32
	}{
		{1, 1, 1, 1, 64, Config{}, false, false, 1},
		{1, 1001, 4, 1, 128, Config{}, false, true, 1},
		{3, 203, 6, 2, 64, Config{Causal: true, Window: 37}, false, false, 1},
		{9, 101, 2, 1, 64, Config{}, true, true, 1},
		{2, 517, 2, 2, 128, Config{}, false, false, 60},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p := newProblem(uint64(70+i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
			q, k, v := make([]float64, len(p.q)), make([]float64, len(p.k)), make([]float64, len(p.v))
			for x := range q {
				q[x] = float64(p.q[x] * tc.spread)
			}
			for x := range k {
				k[x], v[x] = float64(p.k[x]), float64(p.v[x])
			}
			cfg := tc.cfg
			cfg.HeadDim, cfg.QHeads, cfg.KVHeads = tc.d, tc.qh, tc.kvh
			if tc.mask {
				cfg.Mask = refTestMask(tc.mq, tc.n)
			}
			if tc.sinks {
				cfg.Sinks = make([]float64, tc.qh)
				for h := range cfg.Sinks {
					cfg.Sinks[h] = 0.5 * float64(h)
				}
			}
			want, err := referenceOneByOne(ctx, cfg, q, k, v, tc.mq, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct{ workers, chunkKeys int }{{0, referenceChunkKeys}, {1, referenceChunkKeys}, {3, 1}, {2, 300}} {
				got, err := reference(ctx, cfg, q, k, v, tc.mq, tc.n, w.workers, w.chunkKeys)
				if err != nil {
					t.Fatal(err)
				}
				for x := range want {
					if math.Float64bits(got[x]) != math.Float64bits(want[x]) {
						t.Fatalf("%d workers, chunks of %d keys: output %d: %v, want %v", w.workers, w.chunkKeys, x, got[x], want[x])
					}
				}
			}
			// ReferenceF32 on the float32 inputs themselves: the same bits.
			q32 := make([]float32, len(p.q))
			for x := range q32 {
				q32[x] = p.q[x] * tc.spread
			}
			got, err := ReferenceF32(ctx, cfg, q32, p.k, p.v, tc.mq, tc.n)
			if err != nil {
				t.Fatal(err)
			}
			for x := range want {
				if math.Float64bits(got[x]) != math.Float64bits(want[x]) {
					t.Fatalf("ReferenceF32: output %d: %v, want %v", x, got[x], want[x])
				}
			}
		})
	}
}

// TestReferenceCancelled: a cancelled context stops Reference with its
// error.
func TestReferenceCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := newProblem(3, 4, 64, 2, 1, 64, 0.5)
	q, k, v := make([]float64, len(p.q)), make([]float64, len(p.k)), make([]float64, len(p.v))
	if _, err := Reference(ctx, Config{HeadDim: 64, QHeads: 2, KVHeads: 1}, q, k, v, 4, 64); err != context.Canceled {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
