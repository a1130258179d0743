package attention

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// problem is a random attention problem: mq queries of qh heads over n
// tokens of kvh heads, head_dim d; V has mean mu.
type problem struct {
	q, k, v []float32
	mq, n   int
	shape   fp8.Shape
}

func newProblem(seed uint64, mq, n, qh, kvh, d int, mu float64) problem {
	r := rand.New(rand.NewPCG(seed, 7))
	p := problem{mq: mq, n: n, shape: fp8.Shape{Tokens: n, Heads: kvh, Dim: d}}
	p.q = make([]float32, mq*qh*d)
	for i := range p.q {
		p.q[i] = float32(r.NormFloat64())
	}
	p.k, p.v = make([]float32, n*kvh*d), make([]float32, n*kvh*d)
	for i := range p.k {
		p.k[i] = float32(r.NormFloat64())
		p.v[i] = float32(r.NormFloat64() + mu)
	}
	return p
}

func (p problem) kv(t *testing.T, f fp8.Format, ks, vs []float32) *KV {
	t.Helper()
	kv, err := NewKV(p.k, p.v, p.shape, f, fp8.SatFinite, ks, vs)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// cache is p's cache quantized by spec (QuantizeKV) or, with spec nil,
// cast to f (NewKV, SatFinite, descales 1).
func (p problem) cache(t *testing.T, spec *KVSpec, f fp8.Format) *KV {
	t.Helper()
	if spec == nil {
		return p.kv(t, f, nil, nil)
	}
	kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: p.shape.Tokens, Heads: p.shape.Heads, KDim: p.shape.Dim}, *spec)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func relDiff(a, b []float64) float64 { return Compare(a, b).RelL2 }

// The tile loop in float64 arithmetic equals the float64 reference: tile
// order, masks, GQA grouping, windows, m-blocks and the online softmax.
func TestFloat64LoopEqualsReference(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name              string
		mq, n, qh, kvh, d int
		cfg               Config
	}{
		{"decode", 1, 1000, 1, 1, 128, Config{}},
		{"decode GQA", 1, 777, 8, 2, 64, Config{}},
		{"decode hd256", 1, 300, 2, 1, 256, Config{}},
		{"decode window", 1, 1000, 4, 2, 128, Config{Window: 200}},
		{"prefill causal", 70, 300, 2, 1, 64, Config{Causal: true, KBlockM: 32, KBlockN: 64}},
		{"prefill causal GQA window", 50, 257, 6, 3, 128, Config{Causal: true, Window: 37, KBlockM: 16, KBlockN: 32}},
		{"prefill not causal", 9, 100, 1, 1, 64, Config{}},
		{"prefill default tiles", 130, 700, 2, 1, 128, Config{Causal: true}}, // 128×224: two m-blocks, a partial tile
		{"bf16 decode", 1, 500, 1, 1, 128, Config{DType: fp8.FormatBF16}},
		{"e5m2 window prefill", 20, 200, 2, 2, 64, Config{DType: fp8.FormatE5M2, Causal: true, Window: 50}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProblem(uint64(i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
			cfg := tc.cfg
			cfg.HeadDim, cfg.QHeads, cfg.KVHeads, cfg.Float64 = tc.d, tc.qh, tc.kvh, true
			f := cfg.DType
			if f == fp8.FormatInvalid {
				f = fp8.FormatE4M3
			}
			kv := p.kv(t, f, nil, nil)
			o, err := Run(ctx, cfg, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := ReferenceQuantized(ctx, cfg, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			if d := relDiff(o, ref); !(d < 1e-12) {
				t.Errorf("float64 loop vs reference: relative L2 %g, want < 1e-12", d)
			}
		})
	}
}

// A window or causal mask must change the result (so the tests above test
// something), and GQA must route each query head to its KV head.
func TestMasksAndGroupsMatter(t *testing.T) {
	ctx := context.Background()
	p := newProblem(3, 1, 600, 4, 2, 64, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	base := Config{HeadDim: 64, QHeads: 4, KVHeads: 2, Float64: true}
	full, err := Run(ctx, base, p.q, nil, kv)
	if err != nil {
		t.Fatal(err)
	}
	w := base
	w.Window = 100
	win, err := Run(ctx, w, p.q, nil, kv)
	if err != nil {
		t.Fatal(err)
	}
	if relDiff(win, full) < 1e-3 {
		t.Error("a window of 100 of 600 tokens does not change O")
	}
	// GQA: query heads 0, 1 read KV head 0; 2, 3 read KV head 1. Swapping
	// the KV heads of the cache must swap the outputs of the two groups.
	k2, v2 := slices.Clone(p.k), slices.Clone(p.v)
	for tok := 0; tok < p.n; tok++ {
		a, b := k2[tok*128:tok*128+64], k2[tok*128+64:tok*128+128]
		tmp := slices.Clone(a)
		copy(a, b)
		copy(b, tmp)
		a, b = v2[tok*128:tok*128+64], v2[tok*128+64:tok*128+128]
		copy(tmp, a)
		copy(a, b)
		copy(b, tmp)
	}
	kvs, err := NewKV(k2, v2, p.shape, fp8.FormatE4M3, fp8.SatFinite, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	q2 := slices.Concat(p.q[128:256], p.q[0:128]) // heads 2,3,0,1
	sw, err := Run(ctx, base, q2, nil, kvs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sw[:128], full[128:]) || !slices.Equal(sw[128:], full[:128]) {
		t.Error("swapping the KV heads and the query groups does not swap the outputs")
	}
}

// The kernel's FP8 arithmetic stays close to the reference on the same
// quantized inputs, for GQA, windows and causal prefill, per dtype.
func TestKernelNearReference(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name              string
		mq, n, qh, kvh, d int
		cfg               Config
		tol               float64
	}{
		{"e4m3 decode two-level", 1, 2000, 2, 1, 128, Config{Promotion: 1}, 0.02},
		{"e4m3 decode GQA window", 1, 2000, 8, 2, 128, Config{Window: 300, Promotion: 1}, 0.02},
		{"e4m3 prefill causal", 64, 512, 2, 2, 64, Config{Causal: true, Promotion: 1}, 0.03},
		{"e4m3 single-level", 1, 1024, 1, 1, 128, Config{}, 0.05},
		{"bf16 decode", 1, 2000, 1, 1, 128, Config{DType: fp8.FormatBF16}, 0.005},
		{"fp16 prefill", 32, 300, 2, 1, 256, Config{DType: fp8.FormatFP16, Causal: true}, 0.005},
		{"e5m2 decode", 1, 1000, 1, 1, 64, Config{DType: fp8.FormatE5M2, Promotion: 1}, 0.05},
		{"fp32 models", 1, 1000, 1, 1, 128, Config{QKModel: "fp32", PVModel: "fp32"}, 0.02},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newProblem(uint64(100+i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
			cfg := tc.cfg
			cfg.HeadDim, cfg.QHeads, cfg.KVHeads = tc.d, tc.qh, tc.kvh
			f := cfg.DType
			if f == fp8.FormatInvalid {
				f = fp8.FormatE4M3
			}
			kv := p.kv(t, f, nil, nil)
			o, err := Run(ctx, cfg, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := ReferenceQuantized(ctx, cfg, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			if d := relDiff(o, ref); !(d < tc.tol) || d == 0 {
				t.Errorf("relative L2 vs reference %g, want in (0, %g)", d, tc.tol)
			}
		})
	}
}

// With the sm90 model for P·V and a single tile, the kernel's O is a
// hand-composed chain of accum instructions, bit for bit: S from the QK
// model, P = exp2(S − m + 8) cast to e4m3, O = chain of kBlockN/32 wgmma
// steps from 0, times (1/l).
func TestOneTileEqualsHandComposedChain(t *testing.T) {
	for _, n := range []int{96, 70} { // a full tile, and a partial one (zero-padded P)
		p := newProblem(uint64(n), 1, n, 1, 1, 128, 0.5)
		kv := p.kv(t, fp8.FormatE4M3, nil, nil)
		for _, promote := range []int{0, 1, 4} {
			cfg := Config{HeadDim: 128, KBlockN: 96, Promotion: promote}
			o, err := Run(context.Background(), cfg, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			want := handComposed(t, p, kv, 96)
			for d := range want {
				if math.Float32bits(float32(o[d])) != math.Float32bits(want[d]) {
					t.Fatalf("n %d promotion %d: O[%d] = %v, hand-composed chain gives %v", n, promote, d, o[d], want[d])
				}
			}
		}
	}
}

func handComposed(t *testing.T, p problem, kv *KV, bn int) []float32 {
	wg := accum.MustLookup("sm90.wgmma.e4m3.f32").(accum.Stepper)
	q := make([]uint16, 128)
	for d := range q {
		q[d] = uint16(fp8.EncodeE4M3(p.q[d], fp8.SatFinite))
	}
	scale := float32(1 / math.Sqrt(128) * math.Log2E)
	s := make([]float32, bn)
	m := float32(math.Inf(-1))
	for j := range s {
		s[j] = float32(math.Inf(-1))
		if j < p.n {
			k := make([]uint16, 128)
			for d := range k {
				k[d] = uint16(fp8.EncodeE4M3(p.k[j*128+d], fp8.SatFinite))
			}
			var c float32
			for i := 0; i < 128; i += 32 {
				c = wg.Step(q[i:i+32], k[i:i+32], c)
			}
			s[j] = c * scale
		}
		m = max(m, s[j])
	}
	pc := make([]uint16, bn)
	var l float32
	for j := range s {
		pj := float32(math.Exp2(float64(float32(s[j]-m) + 8)))
		l += pj
		pc[j] = uint16(fp8.EncodeE4M3(pj, fp8.SatFinite))
	}
	o := make([]float32, 128)
	for d := range o {
		v := make([]uint16, bn)
		for j := 0; j < p.n && j < bn; j++ {
			v[j] = uint16(fp8.EncodeE4M3(p.v[j*128+d], fp8.SatFinite))
		}
		var c float32
		for i := 0; i < bn; i += 32 {
			c = wg.Step(pc[i:i+32], v[i:i+32], c)
		}
		o[d] = c * (1 / l)
	}
	return o
}

// Promotion schemes agree where they must: every N tiles with N = 1 is
// every tile, N at least the number of tiles is never, bit for bit; and
// RunPromotions equals separate Runs.
func TestPromotionIdentities(t *testing.T) {
	ctx := context.Background()
	p := newProblem(9, 1, 3000, 1, 1, 128, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	cfg := Config{HeadDim: 128, KBlockN: 128}
	tiles := (3000 + 127) / 128
	outs, err := RunPromotions(ctx, cfg, []int{0, 1, 4, tiles, tiles + 5}, p.q, nil, kv)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range []int{0, 1, 4} {
		c := cfg
		c.Promotion = n
		o, err := Run(ctx, c, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(o, outs[i]) {
			t.Errorf("RunPromotions[%d] differs from Run with promotion %d", i, n)
		}
	}
	if !slices.Equal(outs[3], outs[0]) || !slices.Equal(outs[4], outs[0]) {
		t.Error("promotion every ≥ #tiles tiles differs from never")
	}
	if slices.Equal(outs[1], outs[0]) || slices.Equal(outs[2], outs[1]) {
		t.Error("promotion intervals 0, 1, 4 should give different outputs")
	}
	// The lazy scheme with N = 1 is the direct every-tile form.
	k, err := newKernel(cfg, []int{1}, p.q, nil, kv)
	if err != nil {
		t.Fatal(err)
	}
	r := k.newRow()
	r.acc[0].promote = 1
	k.setRow(r, 0, 0, p.q)
	if err := k.attendRow(ctx, r); err != nil {
		t.Fatal(err)
	}
	lazy := newRowLazy1(t, k, p)
	if !slices.Equal(r.acc[0].o, lazy) {
		t.Error("the every-N scheme with N = 1 differs from the every-tile scheme")
	}
}

// newRowLazy1 runs the row through the every-N code path with N = 1.
func newRowLazy1(t *testing.T, k *kernel, p problem) []float32 {
	r := k.newRow()
	r.acc[0].promote = 1
	k.setRow(r, 0, 0, p.q)
	k.initRow(r)
	for n := r.nMax - 1; n >= r.nMin; n-- {
		tl := tile{n: n, start: n * k.KBlockN}
		k.gemmQK(r, tl)
		k.mask(r, tl)
		k.onlineMax(r)
		k.exp2P(r)
		k.castP(r)
		// The every-N branch of gemmPV with N = 1.
		acc := &r.acc[0]
		acc.accScale *= r.alpha
		vt := k.kv.vt
		for i := 0; i < k.HeadDim; i++ {
			end := min(tl.start+k.KBlockN, k.kv.stride)
			v := make([]uint16, k.KBlockN)
			copy(v, vt[i*k.kv.stride+tl.start:i*k.kv.stride+end])
			acc.tc[i] = k.pv.Dot(r.pc, v, acc.tc[i]*r.alpha)
		}
		k.promote(acc)
	}
	k.finalize(r)
	return r.acc[0].o
}

// Runs are deterministic, and scales are applied as descales: scaling Q by
// 4 and K by 1/4 with the same descales gives the same codes and scores;
// scaling V by 4 with v_scale 4 scales O by 4.
func TestDeterminismAndScales(t *testing.T) {
	ctx := context.Background()
	p := newProblem(11, 1, 1500, 2, 2, 128, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	cfg := Config{HeadDim: 128, KVHeads: 2, QHeads: 2, Promotion: 1}
	a, _ := Run(ctx, cfg, p.q, nil, kv)
	b, _ := Run(ctx, cfg, p.q, nil, kv.Clone())
	if !slices.Equal(a, b) {
		t.Fatal("two runs differ")
	}
	k2, v2, q2 := slices.Clone(p.k), slices.Clone(p.v), slices.Clone(p.q)
	for i := range k2 {
		k2[i] /= 4
		v2[i] *= 4
	}
	for i := range q2 {
		q2[i] *= 4
	}
	kvs, err := NewKV(k2, v2, p.shape, fp8.FormatE4M3, fp8.SatFinite, []float32{0.25}, []float32{4, 4})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Run(ctx, cfg, q2, []float32{4, 4}, kvs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range a {
		if c[i] != 4*a[i] {
			t.Fatalf("O[%d] = %g with scaled inputs and descales, want 4 × %g", i, c[i], a[i])
		}
	}
}

func TestBadConfigs(t *testing.T) {
	ctx := context.Background()
	p := newProblem(1, 1, 100, 1, 1, 128, 0)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	tests := []struct {
		cfg    Config
		q      []float32
		qScale []float32
		want   string
	}{
		{Config{HeadDim: 100}, make([]float32, 100), nil, "head_dim 100 is not one of [64 128 192 256 512 576]"},
		{Config{HeadDim: 128, QHeads: 3, KVHeads: 2}, make([]float32, 384), nil, "3 query heads is not a multiple of 2 KV heads"},
		{Config{HeadDim: 128, KBlockN: 100}, p.q, nil, "kBlockN 100 is not a multiple of sm90.wgmma.e4m3.f32's instruction width K = 32"},
		{Config{HeadDim: 128, KBlockN: 512}, p.q, nil, "kBlockN 512 is outside 1..256"},
		{Config{HeadDim: 128, KBlockM: 1000}, p.q, nil, "kBlockM 1000 is outside 1..256"},
		{Config{HeadDim: 128, Promotion: -1}, p.q, nil, "promotion interval -1 is negative"},
		{Config{HeadDim: 128, Window: -5}, p.q, nil, "window -5 is negative"},
		{Config{HeadDim: 128, PVModel: "sm90.wgmma.bf16.f32"}, p.q, nil, "PV model sm90.wgmma.bf16.f32 reads bf16, but the dtype is e4m3"},
		{Config{HeadDim: 128, QKModel: "nope"}, p.q, nil, `unknown accumulation model "nope"`},
		{Config{HeadDim: 128, SoftmaxScale: -1}, p.q, nil, "softmax scale -1 must be positive"},
		{Config{HeadDim: 128}, p.q, []float32{0}, "q scale 0 is 0: scales must be positive and finite"},
		{Config{HeadDim: 128}, p.q, []float32{1, 1}, "2 q scales: want 1 (per tensor) or 1 (per KV head)"},
		{Config{HeadDim: 128}, p.q[:100], nil, "100 query values is not a positive multiple of 1 query heads × head_dim 128"},
		{Config{HeadDim: 128}, make([]float32, 128*101), nil, "101 queries over 100 tokens"},
		{Config{HeadDim: 128, DType: fp8.FormatBF16}, p.q, nil, "the cache holds e4m3 codes, the config's dtype is bf16"},
		{Config{HeadDim: 128, KVHeads: 2, QHeads: 2}, make([]float32, 256), nil, "the cache has 1 KV heads, the config 2"},
	}
	for _, tc := range tests {
		_, err := Run(ctx, tc.cfg, tc.q, tc.qScale, kv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%+v): error %v, want one containing %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := NewKV(p.k, p.v[:5], p.shape, fp8.FormatE4M3, fp8.SatFinite, nil, nil); err == nil {
		t.Error("NewKV accepted values of the wrong length")
	}
	if _, err := NewKV(p.k, p.v, p.shape, fp8.FormatE4M3, fp8.SatFinite, []float32{1, 2}, nil); err == nil {
		t.Error("NewKV accepted 2 k scales for 1 head")
	}
	if err := kv.SetToken(100, 0, p.k[:128], p.v[:128]); err == nil {
		t.Error("SetToken accepted token 100 of 100")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Run(cctx, Config{HeadDim: 128}, p.q, nil, kv); err == nil {
		t.Error("Run ignored a cancelled context")
	}
}

func TestDefaultTiles(t *testing.T) {
	e4, bf := fp8.FormatE4M3, fp8.FormatBF16
	tests := []struct {
		d                       int
		f                       fp8.Format
		decode, local, twoLevel bool
		m, n                    int
	}{
		{128, e4, true, false, true, 64, 96},
		{64, e4, true, false, true, 64, 128},
		{128, e4, false, false, true, 128, 192},
		{128, e4, false, false, false, 128, 224},
		{64, e4, false, false, true, 192, 128},
		{64, e4, false, false, false, 192, 160},
		{256, e4, false, false, true, 128, 128},
		{256, e4, false, true, true, 128, 64},
		{128, bf, true, false, false, 64, 128},
	}
	for _, tc := range tests {
		if m, n := DefaultTiles(tc.d, tc.f, tc.decode, tc.local, tc.twoLevel); m != tc.m || n != tc.n {
			t.Errorf("DefaultTiles(%d, %s, decode %v, local %v, two-level %v) = %d×%d, want %d×%d", tc.d, tc.f, tc.decode, tc.local, tc.twoLevel, m, n, tc.m, tc.n)
		}
	}
	if !IsDecode(128, 0, 1, 8) || IsDecode(256, 0, 1, 1) || IsDecode(128, 128, 1, 1) || IsDecode(128, 0, 16, 8) {
		t.Error("IsDecode does not follow use_one_mma_wg")
	}
}

func TestTokenCodes(t *testing.T) {
	p := newProblem(5, 1, 50, 1, 2, 64, 0)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	k, v := kv.TokenCodes(7, 1)
	if len(k) != 64 || k[3] != kv.KCode(7, 1, 3) || v[5] != kv.VCode(7, 1, 5) {
		t.Fatal("TokenCodes does not return the token's codes")
	}
	c := kv.Clone()
	if err := c.SetToken(7, 1, p.k[:64], p.v[:64]); err != nil {
		t.Fatal(err)
	}
	if c.KCode(7, 1, 0) == kv.KCode(7, 1, 0) && c.VCode(7, 1, 0) == kv.VCode(7, 1, 0) && c.KCode(7, 1, 1) == kv.KCode(7, 1, 1) {
		t.Fatal("SetToken changed nothing")
	}
	if err := c.SetTokenCodes(7, 1, k, v); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.k, kv.k) || !slices.Equal(c.vt, kv.vt) {
		t.Error("SetTokenCodes did not restore the token")
	}
	if err := c.SetTokenCodes(50, 0, k, v); err == nil {
		t.Error("SetTokenCodes accepted token 50 of 50")
	}
	if k, _ := kv.TokenCodes(-1, 0); k != nil {
		t.Error("TokenCodes(-1) returned codes")
	}
}

// ReferenceWeights are the weights of ReferenceQuantized: Σ_j w_j·v_j is its
// output.
func TestReferenceWeights(t *testing.T) {
	ctx := context.Background()
	p := newProblem(21, 3, 300, 4, 2, 64, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, []float32{0.5, 2}, []float32{1, 3})
	cfg := Config{HeadDim: 64, QHeads: 4, KVHeads: 2, Causal: true, Window: 100}
	qs := []float32{2, 0.25}
	w, err := ReferenceWeights(ctx, cfg, p.q, qs, kv)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := ReferenceQuantized(ctx, cfg, p.q, qs, kv)
	if err != nil {
		t.Fatal(err)
	}
	_, vd := kv.Dequantize()
	o := make([]float64, len(ref))
	for r, wr := range w {
		h := r % 4 / 2
		for j, x := range wr {
			for d := 0; d < 64; d++ {
				o[r*64+d] += x * vd[(j*2+h)*64+d]
			}
		}
	}
	if d := relDiff(o, ref); !(d < 1e-12) {
		t.Errorf("Σ w·v differs from ReferenceQuantized by %g", d)
	}
}
