package wgsl

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/simcase"
)

func f32bits(x float32) uint32 { return math.Float32bits(x) }

// edgeF32 lists float32 patterns at the edges: zeros, subnormals, the
// normal range's ends, inf, NaN, both signs.
func edgeF32() []uint32 {
	var e []uint32
	for _, b := range []uint32{0, 1, 2, 3, 0x7fff, 0x400000, 0x7ffffe, 0x7fffff, 0x800000, 0x800001, 0xffffff,
		0x3f800000, 0x3f800001, 0x3f7fffff, 0x3fffffff, 0x33800000, 0x34000000, 0x0c800000, 0x1f800000, 0x20000000,
		0x5f800000, 0x60000000, 0x7effffff, 0x7f7fffff, 0x7f800000, 0x7fc00000, 0x7f800001, 0x43000000, 0x43160000} {
		e = append(e, b, b|0x80000000)
	}
	return e
}

// randF32 draws float32 patterns: random bits, and values of random
// exponent near 1 (where products and quotients stay normal).
func randF32(rng *rand.Rand) uint32 {
	switch rng.IntN(3) {
	case 0:
		return rng.Uint32()
	case 1:
		return rng.Uint32()&0x807fffff | uint32(100+rng.IntN(56))<<23
	}
	return rng.Uint32()&0x807fffff | uint32(rng.IntN(8))<<23 // subnormals and tiny normals
}

func sameBits(got, want uint32) bool {
	if want&0x7fffffff > 0x7f800000 {
		return got&0x7fffffff > 0x7f800000
	}
	return got == want
}

// The integer FP32 multiply and divide equal Go's float32 * and / on
// every edge pair and on random pairs, subnormals included.
func TestSimMulDiv(t *testing.T) {
	r := testGPU(t)
	rng := rand.New(rand.NewPCG(1, 2))
	edges := edgeF32()
	var pairs []uint32
	for _, x := range edges {
		for _, y := range edges {
			pairs = append(pairs, x, y)
		}
	}
	for i := 0; i < 400000; i++ {
		x, y := randF32(rng), randF32(rng)
		if rng.IntN(4) == 0 { // products near the subnormal boundary
			y = y&0x807fffff | (uint32(254-int((x>>23)&0xff)+rng.IntN(30)-15)&0xff)<<23
		}
		pairs = append(pairs, x, y)
	}
	ctx := context.Background()
	for op, name := range []string{"mul", "div"} {
		got, err := r.simOp(ctx, op, pairs)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i := range got {
			x, y := math.Float32frombits(pairs[2*i]), math.Float32frombits(pairs[2*i+1])
			var w float32
			if op == 0 {
				w = x * y
			} else {
				w = x / y
			}
			if !sameBits(got[i], f32bits(w)) {
				if bad++; bad <= 5 {
					t.Errorf("%s(%#08x, %#08x) = %#08x, Go %#08x", name, pairs[2*i], pairs[2*i+1], got[i], f32bits(w))
				}
			}
		}
		t.Logf("f32_%s: %d/%d equal to Go", name, len(got)-bad, len(got))
	}
}

func goExp2(b uint32) uint32 {
	return f32bits(float32(math.Exp2(float64(math.Float32frombits(b)))))
}

func checkExp2(t *testing.T, r *Runner, xs []uint32) (bad int) {
	t.Helper()
	pairs := make([]uint32, 2*len(xs))
	for i, x := range xs {
		pairs[2*i] = x
	}
	got, err := r.simOp(context.Background(), 2, pairs)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range xs {
		if w := goExp2(x); !sameBits(got[i], w) {
			if bad++; bad <= 5 {
				t.Errorf("exp2(%g = %#08x) = %#08x, Go %#08x", math.Float32frombits(x), x, got[i], w)
			}
		}
	}
	return bad
}

// The integer exp2 equals float32(math.Exp2(float64(x))), the simulator's
// exp2, on the kernel's range [-150, 8] and beyond: every edge, integers
// and their neighbours, 2^22 random values and a dense sweep near 0. With
// FP8LAB_EXP2_EXHAUSTIVE=1, every float32 in [-160, 130] (2.25e9 inputs;
// about 2 minutes on lavapipe here: all equal, two of them through the shader's
// table of Go's double-rounding cases).
func TestSimExp2(t *testing.T) {
	r := testGPU(t)
	rng := rand.New(rand.NewPCG(3, 4))
	xs := append(edgeF32(), 0x3b429d37, 0xbcf3a937) // Go's two double-rounding cases
	for n := -152; n <= 130; n++ {
		b := f32bits(float32(n))
		for d := -3; d <= 3; d++ {
			xs = append(xs, uint32(int(b)+d))
		}
	}
	for i := 0; i < 1<<22; i++ {
		switch i % 4 {
		case 0: // uniform value in [-150, 8]
			xs = append(xs, f32bits(float32(-150+158*rng.Float64())))
		case 1: // any pattern of magnitude below 256
			xs = append(xs, rng.Uint32()&0x83ffffff|uint32(rng.IntN(136))<<23)
		case 2: // (s - m) + 8 with s and m scores of a row: small spread
			xs = append(xs, f32bits(float32(8-math.Abs(rng.NormFloat64()*4))))
		default: // near zero: alpha of a slowly moving max
			xs = append(xs, f32bits(-float32(math.Ldexp(rng.Float64(), -rng.IntN(40)))))
		}
	}
	start := time.Now()
	bad := checkExp2(t, r, xs)
	t.Logf("exp2: %d/%d equal to float32(math.Exp2) (%v)", len(xs)-bad, len(xs), time.Since(start))
	if os.Getenv("FP8LAB_EXP2_EXHAUSTIVE") != "1" {
		return
	}
	total, mism := 0, 0
	for _, rg := range [][2]uint32{{0, f32bits(130)}, {0x80000000, f32bits(-160)}} {
		const chunk = 1 << 22
		for lo := uint64(rg[0]); lo <= uint64(rg[1]); lo += chunk {
			hi := min(lo+chunk, uint64(rg[1])+1)
			xs := make([]uint32, 0, hi-lo)
			for b := lo; b < hi; b++ {
				xs = append(xs, uint32(b))
			}
			mism += checkExp2(t, r, xs)
			total += len(xs)
		}
	}
	t.Logf("exp2 exhaustive: %d/%d equal", total-mism, total)
}

// SimDecode equals attention.Run bit for bit on every case of simcase.Cases
// (contexts 1k–8k, head_dim 128 and 64, GQA 4, promotion 0/1/4, kBlockN
// 96/128, per-tensor and per-head scales, a window).
func TestSimDecode(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	for i, c := range simcase.Cases(8192) {
		q, qs, kv, err := simcase.Inputs(c, 100+uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got, err := r.SimDecode(ctx, c.Cfg, q, qs, kv)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		gpu := time.Since(start)
		start = time.Now()
		want, err := attention.Run(ctx, c.Cfg, q, qs, kv)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for j := range got {
			if !sameF32(float32(got[j]), float32(want[j])) {
				if bad++; bad <= 3 {
					t.Errorf("%s: O[%d] = %g (%#08x), attention.Run %g (%#08x)", c.Name, j, got[j], f32bits(float32(got[j])), want[j], f32bits(float32(want[j])))
				}
			}
		}
		// The comparison is sharp: another promotion scheme differs.
		other := c.Cfg
		other.Promotion = (c.Cfg.Promotion + 1) % 3
		alt, err := attention.Run(ctx, other, q, qs, kv)
		if err != nil {
			t.Fatal(err)
		}
		diff := 0
		for j := range got {
			if float32(got[j]) != float32(alt[j]) {
				diff++
			}
		}
		if diff == 0 {
			t.Errorf("%s: promotion %d gives the same O as %d: the check cannot tell them apart", c.Name, c.Cfg.Promotion, other.Promotion)
		}
		t.Logf("%s, %d tokens: %d/%d bit-exact (promotion %d differs in %d; GPU %v, Go %v)", c.Name, c.Tokens, len(got)-bad, len(got), other.Promotion, diff, gpu.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
}

// A context of one tile, a single token, the sm90 mma.sync model (two
// FP16 half steps and an FP32 add per instruction), and bf16 with one
// token and with sm80's 8-product steps at head_dim 256.
func TestSimDecodeSmall(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	for _, c := range []simcase.Case{
		{Name: "one token", Tokens: 1, Cfg: attention.Config{HeadDim: 64, KVHeads: 1, QHeads: 2, KBlockN: 32, Promotion: 2}},
		{Name: "mma.sync", Tokens: 700, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 4, QKModel: "sm90.mma.sync.e4m3.f32", PVModel: "sm90.mma.sync.e4m3.f32", Promotion: 3}, PerHead: true},
		{Name: "bf16 one token", Tokens: 1, Cfg: attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 128, Promotion: 4, DType: fp8.FormatBF16}},
		{Name: "bf16 sm80 8-product steps", Tokens: 500, Cfg: attention.Config{HeadDim: 256, KVHeads: 1, QHeads: 2, DType: fp8.FormatBF16,
			QKModel: "sm80.mma.sync.bf16.f32", PVModel: "sm80.mma.sync.bf16.f32", Promotion: 1}, PerHead: true},
	} {
		q, qs, kv, err := simcase.Inputs(c, 7)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.SimDecode(ctx, c.Cfg, q, qs, kv)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		want, err := attention.Run(ctx, c.Cfg, q, qs, kv)
		if err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if !sameF32(float32(got[j]), float32(want[j])) {
				t.Fatalf("%s: O[%d] = %g, attention.Run %g", c.Name, j, got[j], want[j])
			}
		}
	}
}

// Configurations the kernel does not run are errors.
func TestSimDecodeErrors(t *testing.T) {
	c := simcase.Case{Tokens: 64, Cfg: attention.Config{HeadDim: 64, KVHeads: 1, QHeads: 1}}
	q, qs, kv, err := simcase.Inputs(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	for name, cfg := range map[string]attention.Config{
		"float64":  {Float64: true},
		"fp32 PV":  {PVModel: "fp32"},
		"kbn 48":   {KBlockN: 48},
		"bad dim":  {HeadDim: 96},
		"negative": {Promotion: -1},
	} {
		if _, err := planSim(cfg, qs, kv, []SimTrial{{Q: q}}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := planSim(attention.Config{}, qs, kv, []SimTrial{{Q: q[:10]}}); err == nil {
		t.Error("short q: no error")
	}
	k0, v0 := kv.TokenCodes(0, 0)
	for name, toks := range map[string][]SimToken{
		"token past the end": {{Pos: kv.Tokens(), K: k0, V: v0}},
		"negative head":      {{Pos: 1, Head: -1, K: k0, V: v0}},
		"short K":            {{Pos: 1, K: k0[:3], V: v0}},
		"twice":              {{Pos: 1, K: k0, V: v0}, {Pos: 1, K: k0, V: v0}},
	} {
		if _, err := planSim(attention.Config{}, qs, kv, []SimTrial{{Q: q, Tokens: toks}}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := planSim(attention.Config{}, qs, kv, nil); err == nil {
		t.Error("no trials: no error")
	}
	// A block-scaled cache holds e4m3 codes whose scales an FP8 model
	// would not read: only its block-scaled instruction runs it.
	kf := make([]float32, 64*64)
	for i := range kf {
		kf[i] = float32(i%7) - 3
	}
	bs, err := attention.QuantizeKV(kf, kf, attention.KVShape{Tokens: 64, Heads: 1, KDim: 64}, attention.KVSpec{Format: attention.KVMXFP8, Path: attention.PathBlockScaled})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := planSim(attention.Config{DType: fp8.FormatE4M3, QKModel: "sm90.wgmma.e4m3.f32", PVModel: "sm90.wgmma.e4m3.f32"}, qs, bs, []SimTrial{{Q: q}}); err == nil || !strings.Contains(err.Error(), "block-scaled") {
		t.Errorf("block-scaled cache: %v", err)
	}
	_ = accum.NaN32
}

// SimDecodeTrials equals attention.Run on a patched copy of the cache for
// every trial: each trial with its own query and its own replaced tokens
// (a needle anywhere, sinks at the start, two replacements in one tile,
// none), over two KV heads with GQA, a partial last tile and a window, on
// e4m3, bf16 and f16 caches.
func TestSimDecodeTrials(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	for _, c := range []simcase.Case{
		{Name: "gqa2 every-2", Tokens: 1000, Cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 4, KBlockN: 64, Promotion: 2}, PerHead: true},
		{Name: "window never", Tokens: 700, Cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 1, Window: 500}},
		// simcase.Cases' bf16 hd64 and f16 hd128 shaders (no new variant to compile)
		{Name: "bf16 gqa4 never window 900", Tokens: 1000, Cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, DType: fp8.FormatBF16, Window: 900}, PerHead: true},
		{Name: "f16 gqa4 every-tile kbn96 window 450", Tokens: 700, Cfg: attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 96, Window: 450, Promotion: 1, DType: fp8.FormatFP16}},
	} {
		q0, qs, kv, err := simcase.Inputs(c, 11)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		n, d := kv.Tokens(), kv.Dim()
		var trials []SimTrial
		for i := 0; i < 6; i++ {
			q := make([]float32, len(q0))
			for j := range q {
				q[j] = q0[(j+97*i)%len(q0)] * float32(1+0.1*float64(i))
			}
			var toks []SimToken
			add := func(pos, head int) {
				k, v := make([]uint16, d), make([]uint16, d)
				for j := range k {
					// finite codes of either sign, never NaN
					k[j], v[j] = uint16(rng.IntN(0x7e))|uint16(rng.IntN(2))<<7, uint16(rng.IntN(0x7e))|uint16(rng.IntN(2))<<7
					if f := kv.Format(); f.CodeBits() == 16 { // normal(0, 300²) rounded: a needle that shows
						k[j], v[j] = uint16(f.Encode(float32(rng.NormFloat64()*300), fp8.SatFinite)), uint16(f.Encode(float32(rng.NormFloat64()*300), fp8.SatFinite))
					}
				}
				toks = append(toks, SimToken{Pos: pos, Head: head, K: k, V: v})
			}
			switch i {
			case 1:
				add(n-1, 0) // in the partial newest tile
			case 2:
				add(0, kv.Heads()-1)
				add(1, kv.Heads()-1)
				add(2, 0) // sinks, two heads
			case 3:
				add(rng.IntN(n), 0)
				add(rng.IntN(n), kv.Heads()-1)
			case 4:
				add(130, 0)
				add(131, 0) // one tile, two tokens
			case 5:
				add(rng.IntN(n), 0)
			}
			trials = append(trials, SimTrial{Q: q, Tokens: toks})
		}
		got, err := r.SimDecodeTrials(ctx, c.Cfg, qs, kv, trials)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for i, tr := range trials {
			patched := kv.Clone()
			for _, tk := range tr.Tokens {
				if err := patched.SetTokenCodes(tk.Pos, tk.Head, tk.K, tk.V); err != nil {
					t.Fatal(err)
				}
			}
			want, err := attention.Run(ctx, c.Cfg, tr.Q, qs, patched)
			if err != nil {
				t.Fatal(err)
			}
			unpatched, err := attention.Run(ctx, c.Cfg, tr.Q, qs, kv)
			if err != nil {
				t.Fatal(err)
			}
			bad, differs := 0, 0
			for j := range want {
				if !sameF32(float32(got[i][j]), float32(want[j])) {
					if bad++; bad <= 3 {
						t.Errorf("%s trial %d: O[%d] = %g, attention.Run on the patched cache %g", c.Name, i, j, got[i][j], want[j])
					}
				}
				if float32(want[j]) != float32(unpatched[j]) {
					differs++
				}
			}
			// A replaced token inside the window changes O (else the check
			// would be blind); one outside it must change nothing.
			seen := false
			for _, tk := range tr.Tokens {
				seen = seen || c.Cfg.Window == 0 || tk.Pos >= n-c.Cfg.Window
			}
			if seen && differs == 0 {
				t.Errorf("%s trial %d: the replaced tokens change nothing: the check is blind", c.Name, i)
			}
			if !seen && differs != 0 {
				t.Errorf("%s trial %d: tokens outside the window changed %d outputs", c.Name, i, differs)
			}
			t.Logf("%s trial %d (%d tokens replaced): %d/%d bit-exact, %d outputs differ from the unpatched cache", c.Name, i, len(tr.Tokens), len(want)-bad, len(want), differs)
		}
	}
}

// SimDecodeSupports accepts what SimDecode runs and names each limit of
// what it does not, without a cache.
func TestSimDecodeSupports(t *testing.T) {
	e4 := attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, DType: fp8.FormatE4M3}
	for _, tc := range []struct {
		name string
		cfg  attention.Config
		want []string // substrings of the error; none: supported
	}{
		{"e4m3 sm90", e4, nil},
		{"e5m2 sm90", attention.Config{HeadDim: 64, KVHeads: 1, DType: fp8.FormatE5M2}, nil},
		{"e4m3 tcgen05", attention.Config{HeadDim: 256, KVHeads: 1, DType: fp8.FormatE4M3,
			QKModel: "sm100.tcgen05.f8f6f4.f32", PVModel: "sm100.tcgen05.f8f6f4.f32"}, nil},
		{"bf16 sm90", attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, DType: fp8.FormatBF16}, nil},
		{"f16 tcgen05", attention.Config{HeadDim: 64, KVHeads: 1, DType: fp8.FormatFP16,
			QKModel: "sm100.tcgen05.f16.f32", PVModel: "sm100.tcgen05.f16.f32"}, nil},
		{"bf16 sm80 (8-product steps)", attention.Config{HeadDim: 256, KVHeads: 1, DType: fp8.FormatBF16,
			QKModel: "sm80.mma.sync.bf16.f32", PVModel: "sm80.mma.sync.bf16.f32"}, nil},
		{"bf16 cache, f16 model", attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatBF16,
			QKModel: "sm90.wgmma.f16.f32", PVModel: "sm90.wgmma.f16.f32"}, []string{"reads f16", "dtype is bf16"}},
		{"f16 accumulator", attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatFP16,
			QKModel: "sm90.mma.sync.f16.f16", PVModel: "sm90.mma.sync.f16.f16"}, []string{"RNE-FP16"}},
		{"tf32", attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatTF32}, []string{"dtype tf32"}},
		{"head_dim 192 and float64", attention.Config{HeadDim: 192, KVHeads: 1, DType: fp8.FormatE4M3, Float64: true},
			[]string{"head_dim 192", "Float64"}},
		{"sinks, mask, MLA, positions", attention.Config{HeadDim: 128, VDim: 64, KVHeads: 1, DType: fp8.FormatE4M3,
			Sinks: []float64{1}, Mask: []bool{true}, Positions: []int{3, 4}}, []string{"sinks", "mask", "V head dim 64", "2 query positions"}},
		{"causal decode", attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatE4M3, Causal: true, Positions: []int{9}}, nil},
		{"models differ", attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatE4M3, PVModel: "fp32"}, []string{"differ"}},
		{"group", attention.Config{HeadDim: 128, KVHeads: 3, QHeads: 4, DType: fp8.FormatE4M3}, []string{"multiple of 3"}},
		{"splits", attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatE4M3, Splits: 16}, nil},
		{"too many splits", attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatE4M3, Splits: 129}, []string{"129 splits"}},
		{"mxfp8 tcgen05 block-scaled", attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, DType: fp8.FormatE4M3,
			QKModel: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", PVModel: "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32"}, nil},
		{"nvfp4 tcgen05 block-scaled", attention.Config{HeadDim: 64, KVHeads: 1, DType: fp8.FormatE2M1,
			QKModel: "sm100.tcgen05.mxf4nvf4.ue4m3.f32", PVModel: "sm100.tcgen05.mxf4nvf4.ue4m3.f32"}, nil},
		{"mxfp4 tcgen05 block-scaled, window", attention.Config{HeadDim: 256, KVHeads: 1, DType: fp8.FormatE2M1, Window: 100,
			QKModel: "sm100.tcgen05.mxf4.f32", PVModel: "sm100.tcgen05.mxf4.f32"}, nil},
		{"e2m1 block-scaled, MLA", attention.Config{HeadDim: 128, VDim: 64, KVHeads: 1, DType: fp8.FormatE2M1}, []string{"V head dim 64"}},
		{"mxfp4 model, e4m3 dtype", attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatE4M3,
			QKModel: "sm100.tcgen05.mxf4.f32", PVModel: "sm100.tcgen05.mxf4.f32"}, []string{"reads e2m1", "dtype is e4m3"}},
	} {
		err := SimDecodeSupports(tc.cfg)
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %q", tc.name, err, w)
			}
		}
	}
}
