package wgsl

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/simcase"
)

// The 16-bit models SimDecode runs, and 16-bit models it refuses.
var (
	sim16Models    = []string{"sm90.wgmma.bf16.f32", "sm90.wgmma.f16.f32", "sm100.tcgen05.f16.f32", "sm100.mma.sync.bf16.f32", "sm80.mma.sync.bf16.f32", "sm80.mma.sync.f16.f32"}
	sim16Refused   = []string{"sm90.mma.sync.f16.f16", "sm70.mma.f16.f32", "sm80.mma.sync.f16.f16"}
	code16Kinds    = []string{"any", "finite", "normal", "tiny", "large", "bottom", "zeros"}
	code16Specials = map[string]bool{"any": true}
)

// code16 draws a code of the 16-bit format f (bf16 or f16) of one kind:
// any pattern (inf and NaN included), any finite code, normal(0,1)
// rounded, tiny (subnormals and the lowest binades), large (the top
// binades), big (bf16 2^30..2^50, f16 2^8..2^15: products far from 1 that
// stay below FP32's overflow), bottom (exponents whose products lie around 2^EZERO = 2^-133
// for bf16; f16 products never get there), ±0.
func code16(rng *rand.Rand, f fp8.Format, kind string) uint16 {
	mb := f.FracBits()
	emask := 1<<(15-mb) - 1
	sign := uint16(rng.IntN(2)) << 15
	frac := uint16(rng.IntN(1 << mb))
	field := func(e int) uint16 { return sign | uint16(e)<<mb | frac }
	switch kind {
	case "any":
		return uint16(rng.Uint32())
	case "finite":
		return field(rng.IntN(emask))
	case "normal":
		return uint16(f.Encode(float32(rng.NormFloat64()), fp8.SatFinite))
	case "tiny":
		return field(rng.IntN(4))
	case "large":
		return field(emask - 1 - rng.IntN(6))
	case "big":
		if f == fp8.FormatBF16 {
			return field(127 + 30 + rng.IntN(21))
		}
		return field(15 + 8 + rng.IntN(8))
	case "bottom":
		if f == fp8.FormatBF16 {
			return field(127 - 60 - rng.IntN(16)) // 2^-60 .. 2^-75: products 2^-120 .. 2^-150
		}
		return field(rng.IntN(3))
	}
	return sign
}

// The 16-bit T-FDPA step (tfdpa_step16, run through the chain kernel with
// 2 codes a word) equals accum's model bit for bit on every kind of code,
// alone and mixed with normal ones, c of every kind, promotion never and
// every 32.
func TestStep16(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	total := 0
	for _, model := range emulated(t, 16) {
		m := accum.MustLookup(model)
		f := m.Info().In
		for _, kind := range code16Kinds {
			for _, mixed := range []bool{false, true} {
				for _, K := range []int{32, 128} {
					for _, promote := range []int{0, 32} {
						rng := rand.New(rand.NewPCG(uint64(K+promote), uint64(len(model)+len(kind))))
						n := 200
						a, b := make([]uint16, n*K), make([]uint16, n*K)
						for i := range a {
							ka, kb := kind, kind
							if mixed && rng.IntN(2) == 0 {
								ka = "normal"
							}
							if mixed && rng.IntN(2) == 0 {
								kb = "normal"
							}
							a[i], b[i] = code16(rng, f, ka), code16(rng, f, kb)
						}
						c := make([]float32, n)
						for i := range c {
							c[i] = randomC(rng)
						}
						got, err := r.Chain(ctx, model, ChainInput{K: K, A16: a, B16: b, C: c}, promote)
						if err != nil {
							t.Fatal(err)
						}
						bad := 0
						for i := range c {
							want := accum.Chain(m, a[i*K:(i+1)*K], b[i*K:(i+1)*K], c[i], promote)
							if !sameF32(got[i], want) {
								if bad++; bad <= 3 {
									t.Errorf("%s %s mixed=%v K=%d promote=%d row %d: got %#08x, accum %#08x (c %#08x)", model, kind, mixed, K, promote, i,
										math.Float32bits(got[i]), math.Float32bits(want), math.Float32bits(c[i]))
								}
							}
						}
						total += n
					}
				}
			}
		}
		t.Logf("%s: every kind of code equal to accum", model)
	}
	t.Logf("%d 16-bit dot products compared", total)
}

// Models the 16-bit step cannot run are refused by SimDecodeSupports with
// the reason, and the chain kernel refuses every 16-bit model.
func TestSim16Refused(t *testing.T) {
	for _, model := range sim16Refused {
		m := accum.MustLookup(model)
		cfg := attention.Config{HeadDim: 128, KVHeads: 1, DType: m.Info().In, QKModel: model, PVModel: model}
		if err := SimDecodeSupports(cfg); err == nil {
			t.Errorf("%s: SimDecode accepts it", model)
		} else {
			t.Logf("%s: %v", model, err)
		}
	}
	// The chain reads a 16-bit model's codes from A16 and B16 only.
	for _, model := range sim16Models {
		in := ChainInput{K: 32, A: make([]uint8, 32), B: make([]uint8, 32), C: []float32{0}}
		if _, err := (&Runner{}).Chain(context.Background(), model, in, 0); err == nil || !strings.Contains(err.Error(), "A16 and B16") {
			t.Errorf("%s: Chain on 8-bit codes gives %v", model, err)
		}
	}
}

// setCodes16 overwrites every token of kv with codes of the given kinds,
// drawn with weights: kinds[i] with probability weights[i].
func setCodes16(t *testing.T, kv *attention.KV, rng *rand.Rand, kinds []string, weights []float64) {
	t.Helper()
	draw := func() uint16 {
		x := rng.Float64()
		for i, w := range weights {
			if x < w {
				return code16(rng, kv.Format(), kinds[i])
			}
			x -= w
		}
		return code16(rng, kv.Format(), "normal")
	}
	k, v := make([]uint16, kv.Dim()), make([]uint16, kv.Dim())
	for tok := 0; tok < kv.Tokens(); tok++ {
		for h := 0; h < kv.Heads(); h++ {
			for i := range k {
				k[i], v[i] = draw(), draw()
			}
			if err := kv.SetTokenCodes(tok, h, k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// SimDecode equals attention.Run on bf16 and f16 caches at the edges of
// the formats: codes from the subnormals to the top binades (scores that
// overflow to inf, products below 2^-133 that EZERO truncates away),
// queries that round to subnormals or overflow the dtype, and inf and NaN
// in K and V; contexts that cross dispatch boundaries.
func TestSimDecode16Edges(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	type edgeCase struct {
		name    string
		c       simcase.Case
		kinds   []string
		weights []float64
		specs   bool // a few inf and NaN codes
	}
	// The configurations of simcase.Cases' 16-bit rows, so that no new shader
	// variant is compiled (about a second each on lavapipe).
	var cases []edgeCase
	for _, c := range simcase.Cases(8192) {
		if c.Cfg.DType.CodeBits() != 16 {
			continue
		}
		c.PerHead = false
		ext := c
		ext.Tokens = 1500
		cases = append(cases, edgeCase{c.Name + ": extreme exponents", ext, []string{"tiny", "bottom", "big", "zeros"}, []float64{0.1, 0.15, 0.05, 0.1}, false})
		if c.Cfg.HeadDim == 128 {
			sp := c
			sp.Tokens = 700
			cases = append(cases, edgeCase{c.Name + ": inf and NaN", sp, []string{"tiny", "zeros"}, []float64{0.1, 0.1}, true})
		}
		if c.Cfg.HeadDim == 128 && c.Cfg.DType == fp8.FormatBF16 {
			long := c
			long.Tokens = 12000
			cases = append(cases, edgeCase{c.Name + ": long, several dispatches", long, []string{"tiny", "bottom", "zeros"}, []float64{0.05, 0.05, 0.05}, false})
		}
	}
	if len(cases) != 7 {
		t.Fatalf("%d edge cases from simcase.Cases' 16-bit rows, want 7", len(cases))
	}
	for ci, ec := range cases {
		q, qs, kv, err := simcase.Inputs(ec.c, 300+uint64(ci))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(uint64(ci), 99))
		setCodes16(t, kv, rng, ec.kinds, ec.weights)
		// Queries: some elements tiny (below the dtype's subnormals, or
		// rounding to them), some large; the last query head has one
		// element of 1e6 (f16: beyond 65504, cast to inf: a NaN row).
		for i := range q {
			switch rng.IntN(10) {
			case 0:
				q[i] *= float32(math.Ldexp(1, -60-rng.IntN(100)))
			case 1:
				q[i] *= float32(math.Ldexp(1, 2+rng.IntN(6)))
			}
		}
		if !ec.specs {
			q[len(q)-1] = 1e6
		}
		if ec.specs {
			// head 0 meets K = +inf at dim 3 with a negative query: a score
			// of -inf, a row that stays finite.
			q[3] = -1 - float32(math.Abs(float64(q[3])))
			f := kv.Format()
			inf := uint16(f.MaxCode()) + 1
			nan := inf | 1<<(f.FracBits()-1)
			for _, s := range []struct {
				tok, head, dim int
				k, val         bool
				code           uint16
			}{
				{5, 0, 3, true, false, inf},            // K +inf: S = ±inf or NaN
				{300, 1, 7, true, false, inf | 0x8000}, // K -inf
				{400, 0, 9, false, true, nan},          // V NaN: one O element NaN
				{600, 1, 11, false, true, inf},         // V +inf
				{650, 1, 12, false, true, inf | 0x8000},
			} {
				k, v := kv.TokenCodes(s.tok, s.head)
				if s.k {
					k[s.dim] = s.code
				} else {
					v[s.dim] = s.code
				}
				if err := kv.SetTokenCodes(s.tok, s.head, k, v); err != nil {
					t.Fatal(err)
				}
			}
		}
		p, err := planSim(ec.c.Cfg, qs, kv, []SimTrial{{Q: q}})
		if err != nil {
			t.Fatal(err)
		}
		dispatches := (p.nMax - p.nMin + p.tilesPerDispatch() - 1) / p.tilesPerDispatch()
		got, err := r.SimDecode(ctx, ec.c.Cfg, q, qs, kv)
		if err != nil {
			t.Fatalf("%s: %v", ec.name, err)
		}
		want, err := attention.Run(ctx, ec.c.Cfg, q, qs, kv)
		if err != nil {
			t.Fatal(err)
		}
		bad, nan, inf, zero := 0, 0, 0, 0
		for j := range got {
			w := float32(want[j])
			switch {
			case w != w:
				nan++
			case math.IsInf(float64(w), 0):
				inf++
			case w == 0:
				zero++
			}
			if !sameF32(float32(got[j]), w) {
				if bad++; bad <= 3 {
					t.Errorf("%s: O[%d] = %g (%#08x), attention.Run %g (%#08x)", ec.name, j, got[j], f32bits(float32(got[j])), want[j], f32bits(w))
				}
			}
		}
		finite := len(got) - nan - inf
		if finite == 0 || (ec.specs && nan == 0) {
			t.Errorf("%s: %d finite, %d NaN outputs: the case does not test what it says", ec.name, finite, nan)
		}
		if ec.c.Tokens > 10000 && dispatches < 2 {
			t.Errorf("%s: one dispatch: the case does not cross a dispatch boundary", ec.name)
		}
		t.Logf("%s, %d tokens, %d dispatches: %d/%d bit-exact (%d NaN, %d inf, %d zero)", ec.name, ec.c.Tokens, dispatches, len(got)-bad, len(got), nan, inf, zero)
	}
}

// The KV-format experiments' caches from attention.QuantizeKV: bf16 and f16
// stored directly, and e4m3 (per-channel K, per-token-head V), MXFP8 and
// NVFP4 dequantized to bf16 (vLLM's Triton path: the MMA reads bf16 K, V,
// Q and P) run through SimDecode bit for bit with attention.RunPromotions
// (in the configurations of simcase.Cases' hd128 rows).
func TestSimDecodeQuantizedKV(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	const tokens, heads, d = 700, 2, 128
	rng := rand.New(rand.NewPCG(31, 41))
	k, v := make([]float32, tokens*heads*d), make([]float32, tokens*heads*d)
	for i := range k {
		k[i] = float32(rng.NormFloat64() * (1 + 3*float64(i%d%7))) // channels of different ranges
		v[i] = float32(rng.NormFloat64() + 0.2)
	}
	q := make([]float32, 8*d)
	for i := range q {
		q[i] = float32(rng.NormFloat64() * 2)
	}
	for _, spec := range []attention.KVSpec{
		{Format: attention.KVBF16},
		{Format: attention.KVFP16},
		{Format: attention.KVE4M3, KScales: attention.PerChannel, VScales: attention.PerTokenHead, Scale: attention.ScaleAmax, Path: attention.PathDequantBF16, Saturation: fp8.SatFinite},
		{Format: attention.KVMXFP8, Path: attention.PathDequantBF16},
		{Format: attention.KVNVFP4, Scale: attention.ScaleAmax, Path: attention.PathDequantBF16},
	} {
		kv, err := attention.QuantizeKV(k, v, attention.KVShape{Tokens: tokens, Heads: heads, KDim: d}, spec)
		if err != nil {
			t.Fatalf("%v: %v", spec, err)
		}
		// simcase.Cases' hd128 configuration of the dtype: no new shader variant.
		var cfg attention.Config
		for _, c := range simcase.Cases(8192) {
			if c.Cfg.DType == spec.DType() && c.Cfg.HeadDim == d {
				cfg = c.Cfg
			}
		}
		if err := SimDecodeSupports(cfg); err != nil {
			t.Fatalf("%v: %v", spec, err)
		}
		promotions := []int{cfg.Promotion}
		want, err := attention.RunPromotions(ctx, cfg, promotions, q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		for i, pr := range promotions {
			c := cfg
			c.Promotion = pr
			got, err := r.SimDecode(ctx, c, q, nil, kv)
			if err != nil {
				t.Fatalf("%v: %v", spec, err)
			}
			bad := 0
			for j := range got {
				if !sameF32(float32(got[j]), float32(want[i][j])) {
					if bad++; bad <= 3 {
						t.Errorf("%v promotion %d: O[%d] = %g, attention.RunPromotions %g", spec, pr, j, got[j], want[i][j])
					}
				}
			}
			t.Logf("%v, promotion %d: %d/%d bit-exact", spec, pr, len(got)-bad, len(got))
		}
	}
	// A V narrower than K (attention runs it; the WGSL simulator does not).
	kv, err := attention.QuantizeKV(k, v[:tokens*heads*64], attention.KVShape{Tokens: tokens, Heads: heads, KDim: d, VDim: 64}, attention.KVSpec{Format: attention.KVBF16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.SimDecode(ctx, attention.Config{HeadDim: d, KVHeads: heads, QHeads: 8}, q, nil, kv); err == nil || !strings.Contains(err.Error(), "V head_dim 64") {
		t.Errorf("a cache with V head_dim 64 under K head_dim 128: %v", err)
	}
	if err := SimDecodeSupports(attention.Config{HeadDim: d, VDim: 64, KVHeads: 1, DType: fp8.FormatBF16}); err == nil {
		t.Error("SimDecodeSupports accepts VDim 64 under head_dim 128")
	}
}

// half_encode, the P cast of 16-bit caches, equals fp8.Format.Encode for
// bf16 and f16 on every float32 edge, ±2 ulps around every rounding
// boundary of both formats (midpoints between neighbouring codes, the
// overflow threshold, the subnormal range) and on 2^20 random patterns.
func TestHalfEncode(t *testing.T) {
	r := testGPU(t)
	rng := rand.New(rand.NewPCG(12, 13))
	for fi, f := range []fp8.Format{fp8.FormatBF16, fp8.FormatFP16} {
		xs := edgeF32()
		// Midpoints between neighbouring finite codes (and the one past the
		// largest), each ±2 float32 ulps.
		for c := uint32(0); c <= f.MaxCode(); c += 1 + uint32(rng.IntN(3)) {
			lo, hi := f.Value(c), f.Value(c+1)
			if c == f.MaxCode() {
				hi = 2*lo - f.Value(c-1)
			}
			mid := math.Float32bits(float32((lo + hi) / 2))
			for d := -2; d <= 2; d++ {
				b := uint32(int(mid) + d)
				xs = append(xs, b, b|0x80000000)
			}
		}
		for i := 0; i < 1<<20; i++ {
			xs = append(xs, rng.Uint32())
		}
		pairs := make([]uint32, 2*len(xs))
		for i, x := range xs {
			pairs[2*i], pairs[2*i+1] = x, uint32(fi)
		}
		got, err := r.simOp(context.Background(), 3, pairs)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, x := range xs {
			if w := f.Encode(math.Float32frombits(x), fp8.SatFinite); got[i] != w {
				if bad++; bad <= 5 {
					t.Errorf("%v: half_encode(%#08x) = %#04x, fp8 %#04x", f, x, got[i], w)
				}
			}
		}
		t.Logf("%v: %d/%d equal to fp8.Format.Encode", f, len(xs)-bad, len(xs))
	}
}
