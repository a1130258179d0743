package attention

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// encodeNearest equals the package fp8 encoder on e4m3 (every float32 of a
// dense sweep and random values) and a brute-force search on e2m1/ue4m3.
func TestEncodeNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	xs := []float32{0, float32(math.Copysign(0, -1)), 0.25, 0.75, 1.25, 5, 7, 1e9, -1e9, 2.5, 3.5, -2.5}
	for i := 0; i < 20000; i++ {
		xs = append(xs, float32(r.NormFloat64()*math.Exp2(float64(r.IntN(30)-15))))
	}
	for _, x := range xs {
		if got, want := encodeNearest(fp8.FormatE4M3, x), uint32(fp8.EncodeE4M3(x, fp8.SatFinite)); got != want {
			t.Fatalf("e4m3 %g: got %#x, want %#x", x, got, want)
		}
		for _, f := range []fp8.Format{fp8.FormatE2M1, fp8.FormatUE4M3} {
			c := encodeNearest(f, x)
			got := f.Value(c)
			a := math.Abs(float64(x))
			if !f.Signed() {
				a = float64(x)
				if a < 0 {
					a = 0
				}
			}
			// Brute force: the nearest finite non-negative value.
			best, bestC := math.Inf(1), uint32(0)
			for cc := uint32(0); cc < 1<<f.CodeBits(); cc++ {
				if f.Signed() && cc&f.SignBit() != 0 {
					continue
				}
				v := f.Value(cc)
				if math.IsNaN(v) {
					continue
				}
				if d := math.Abs(v - a); d < best || (d == best && cc&1 == 0) {
					best, bestC = d, cc
				}
			}
			if math.Abs(got) != f.Value(bestC) {
				t.Fatalf("%s %g: got %g, want %g", f, x, got, f.Value(bestC))
			}
			if f.Signed() && (got < 0) != (x < 0) && got != 0 {
				t.Fatalf("%s %g: sign of %g", f, x, got)
			}
		}
	}
}

func TestMXScale(t *testing.T) {
	for _, tc := range []struct {
		a    float32
		f    fp8.Format
		want float32
	}{
		{448, fp8.FormatE4M3, 1}, {256, fp8.FormatE4M3, 1}, {255.9, fp8.FormatE4M3, 0.5}, {6, fp8.FormatE2M1, 1}, {4, fp8.FormatE2M1, 1},
		{3.9, fp8.FormatE2M1, 0.5}, {0, fp8.FormatE2M1, 1}, {1, fp8.FormatE4M3, 1.0 / 256},
	} {
		if got := mxScale(tc.a, tc.f); got != tc.want {
			t.Errorf("mxScale(%g, %s) = %g, want %g", tc.a, tc.f, got, tc.want)
		}
	}
}

// The direct path of an e4m3 cache with per-tensor/per-head scales is the
// cache NewKV builds from the same scales, code for code.
func TestQuantizeKVDirectEqualsNewKV(t *testing.T) {
	p := newProblem(5, 1, 300, 2, 2, 64, 0.5)
	for _, g := range []Granularity{PerTensor, PerHead} {
		for _, sc := range []ScaleChoice{ScaleOne, ScaleAmax} {
			spec := KVSpec{Format: KVE4M3, KScales: g, VScales: g, Scale: sc}
			kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: 300, Heads: 2, KDim: 64}, spec)
			if err != nil {
				t.Fatal(err)
			}
			ks, vs := kv.KScales(), kv.VScales()
			if sc == ScaleOne && (ks[0] != 1 || vs[0] != 1) || sc == ScaleAmax && ks[0] == 1 {
				t.Fatalf("%s: scales %v %v", spec, ks, vs)
			}
			ref := p.kv(t, fp8.FormatE4M3, ks, vs)
			for tok := 0; tok < 300; tok++ {
				for h := 0; h < 2; h++ {
					for d := 0; d < 64; d++ {
						if kv.KCode(tok, h, d) != ref.KCode(tok, h, d) || kv.VCode(tok, h, d) != ref.VCode(tok, h, d) {
							t.Fatalf("%s: codes of token %d head %d dim %d differ", spec, tok, h, d)
						}
					}
				}
			}
		}
	}
}

// Every format stores Gaussian values with about the error its element
// bits allow, the finer block formats beat the coarser ones, and outlier
// channels need per-channel scales.
func TestQuantizeKVErrors(t *testing.T) {
	const n, d = 256, 128
	p := newProblem(9, 1, n, 1, 1, d, 0)
	// Two outlier channels 10^4 times larger: with one amax scale the
	// other channels fall below e4m3's normal range.
	k := append([]float32(nil), p.k...)
	for tok := 0; tok < n; tok++ {
		k[tok*d+3] *= 1e4
		k[tok*d+77] *= 1e4
	}
	relErr := func(spec KVSpec, x []float32) float64 { // over the channels but 3 and 77
		kv, err := QuantizeKV(x, p.v, KVShape{Tokens: n, Heads: 1, KDim: d}, spec)
		if err != nil {
			t.Fatal(err)
		}
		kd, _ := kv.Dequantize()
		var got, ref []float64
		for i, y := range x {
			if i%d != 3 && i%d != 77 {
				got, ref = append(got, kd[i]), append(ref, float64(y))
			}
		}
		return Compare(got, ref).RelL2
	}
	e := map[string]float64{}
	for _, tc := range []struct {
		name string
		spec KVSpec
	}{
		{"bf16", KVSpec{Format: KVBF16}},
		{"e4m3", KVSpec{Format: KVE4M3, Scale: ScaleAmax}},
		{"e4m3 channel", KVSpec{Format: KVE4M3, KScales: PerChannel, Scale: ScaleAmax, Path: PathDequantBF16}},
		{"e4m3 token-head", KVSpec{Format: KVE4M3, KScales: PerTokenHead, Path: PathDequantBF16}},
		{"mxfp8", KVSpec{Format: KVMXFP8, Path: PathDequantBF16}},
		{"nvfp4", KVSpec{Format: KVNVFP4, Scale: ScaleAmax, Path: PathDequantBF16}},
		{"mxfp4", KVSpec{Format: KVMXFP4, Path: PathDequantBF16}},
		{"mxfp4 e4m3", KVSpec{Format: KVMXFP4, Path: PathDequantE4M3}},
	} {
		e[tc.name] = relErr(tc.spec, p.k)
		e[tc.name+" outliers"] = relErr(tc.spec, k)
	}
	t.Log(e)
	// Relative rounding error of a uniform-ish mantissa: bf16 ~2^-9, e4m3 ~2^-5, e2m1 ~2^-2.5.
	for name, lim := range map[string][2]float64{"bf16": {1e-3, 3e-3}, "e4m3": {0.015, 0.04}, "mxfp8": {0.015, 0.04}, "nvfp4": {0.06, 0.14}, "mxfp4": {0.07, 0.2}} {
		if x := e[name]; x < lim[0] || x > lim[1] {
			t.Errorf("%s: relative error %.4g outside [%g, %g]", name, x, lim[0], lim[1])
		}
	}
	if !(e["nvfp4"] < e["mxfp4"]) {
		t.Errorf("nvfp4 %.4g not below mxfp4 %.4g", e["nvfp4"], e["mxfp4"])
	}
	if e["mxfp4 e4m3"] != e["mxfp4"] { // e2m1 × 2^k is exact in e4m3 here (no underflow at N(0,1))
		t.Errorf("mxfp4 through e4m3 %.6g differs from through bf16 %.6g", e["mxfp4 e4m3"], e["mxfp4"])
	}
	// Per-channel scales keep the ordinary channels' error where it is
	// without outliers; one scale for the tensor does not.
	if !(e["e4m3 channel outliers"] < 1.05*e["e4m3"] && e["e4m3 outliers"] > 1.4*e["e4m3"]) {
		t.Errorf("per-channel scales do not help with outlier channels: %.4g vs per-tensor %.4g", e["e4m3 channel outliers"], e["e4m3 outliers"])
	}
}

func TestQuantizeKVRefusals(t *testing.T) {
	p := newProblem(1, 1, 64, 1, 1, 64, 0)
	sh := KVShape{Tokens: 64, Heads: 1, KDim: 64}
	for _, tc := range []struct {
		spec KVSpec
		msg  string
	}{
		{KVSpec{Format: KVE4M3, KScales: PerChannel}, "cannot be applied outside an fp8 MMA"},
		{KVSpec{Format: KVNVFP4}, "block-scaled MMA"},
		{KVSpec{Format: KVE4M3, Path: PathBlockScaled}, "a e4m3 cache has no block scales"},
		{KVSpec{Format: KVE4M3, VScales: PerChannel, Path: PathDequantBF16}, "V takes tensor, head or token-head"},
		{KVSpec{Format: KVE4M3, Scale: ScalePrefix, PrefixTokens: 65}, "calibration prefix of 65 tokens"},
		{KVSpec{}, "KV format invalid"},
	} {
		_, err := QuantizeKV(p.k, p.v, sh, tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want %q", tc.spec, err, tc.msg)
		}
	}
}

// Head dims 192, 512 and MLA's 576/512 with sinks, GQA and causal prefill:
// the float64 tile loop equals the reference, and the FP32 kernel is near it.
func TestShapesAndSinks(t *testing.T) {
	ctx := context.Background()
	for i, tc := range []struct {
		name                  string
		mq, n, qh, kvh, d, dv int
		cfg                   Config
	}{
		{"hd192 GQA causal prefill", 40, 300, 4, 2, 192, 192, Config{Causal: true}},
		{"hd512 decode window", 1, 400, 2, 1, 512, 512, Config{Window: 150}},
		{"MLA decode 128 heads", 1, 300, 16, 1, 576, 512, Config{}},
		{"MLA prefill sinks", 20, 200, 4, 1, 576, 512, Config{Causal: true, Sinks: []float64{0, 2, -1, 5}}},
		{"hd64 sinks GQA", 1, 500, 4, 2, 64, 64, Config{Sinks: []float64{1, 1, 3, -2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(i), 3))
			q := make([]float32, tc.mq*tc.qh*tc.d)
			k := make([]float32, tc.n*tc.kvh*tc.d)
			v := make([]float32, tc.n*tc.kvh*tc.dv)
			for _, x := range [][]float32{q, k, v} {
				for j := range x {
					x[j] = float32(r.NormFloat64())
				}
			}
			for _, spec := range []KVSpec{{Format: KVE4M3}, {Format: KVNVFP4, Scale: ScaleAmax, Path: PathDequantBF16},
				{Format: KVMXFP8, Path: PathBlockScaled}, {Format: KVNVFP4, Scale: ScaleAmax, Path: PathBlockScaled}} {
				kv, err := QuantizeKV(k, v, KVShape{Tokens: tc.n, Heads: tc.kvh, KDim: tc.d, VDim: tc.dv}, spec)
				if err != nil {
					t.Fatal(err)
				}
				cfg := tc.cfg
				cfg.HeadDim, cfg.VDim, cfg.QHeads, cfg.KVHeads, cfg.DType = tc.d, tc.dv, tc.qh, tc.kvh, spec.DType()
				ref, err := ReferenceQuantized(ctx, cfg, q, nil, kv)
				if err != nil {
					t.Fatal(err)
				}
				if len(ref) != tc.mq*tc.qh*tc.dv {
					t.Fatalf("reference has %d values", len(ref))
				}
				c64 := cfg
				c64.Float64 = true
				o64, err := Run(ctx, c64, q, nil, kv)
				if err != nil {
					t.Fatal(err)
				}
				if d := relDiff(o64, ref); !(d < 1e-12) {
					t.Errorf("%s: float64 loop vs reference %g", spec, d)
				}
				cfg.Promotion = 1
				o, err := Run(ctx, cfg, q, nil, kv)
				if err != nil {
					t.Fatal(err)
				}
				// An FP4 P (block-scaled nvfp4) rounds each weight by up to
				// 1/6 of its block's scale: about 9% of these mean-zero
				// outputs (O is a small average of V), against < 3% for e4m3
				// and mxfp8 P.
				tol := 0.03
				if spec.Path == PathBlockScaled && spec.Format.Elem() == fp8.FormatE2M1 {
					tol = 0.15
				}
				if d := relDiff(o, ref); !(d < tol) {
					t.Errorf("%s: kernel vs reference %g", spec, d)
				}
				if len(tc.cfg.Sinks) > 0 {
					c := c64
					c.Sinks = nil
					o2, _ := Run(ctx, c, q, nil, kv)
					if relDiff(o2, o64) < 1e-3 {
						t.Errorf("sinks change nothing")
					}
				}
			}
		})
	}
}

// Query positions and a boolean mask: the float64 tile loop equals the
// reference (a row with every key masked gives 0 in both), and the mask
// changes the result.
func TestPositionsAndMask(t *testing.T) {
	ctx := context.Background()
	const mq, n, d = 70, 300, 64
	p := newProblem(4, mq, n, 2, 1, d, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	r := rand.New(rand.NewPCG(8, 8))
	pos := make([]int, mq)
	for i := range pos {
		pos[i] = r.IntN(n)
	}
	mask := make([]bool, mq*n)
	for i := range mask {
		mask[i] = r.IntN(4) != 0
	}
	for j := 0; j < n; j++ {
		mask[5*n+j] = false // query 5 sees nothing
	}
	for _, cfg := range []Config{
		{Positions: pos, Causal: true, KBlockM: 32, KBlockN: 64},
		{Positions: pos, Causal: true, Window: 40, Mask: mask, KBlockM: 16, KBlockN: 32},
		{Mask: mask},
	} {
		cfg.HeadDim, cfg.QHeads, cfg.Float64 = d, 2, true
		o, err := Run(ctx, cfg, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := ReferenceQuantized(ctx, cfg, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		if d := relDiff(o, ref); !(d < 1e-12) {
			t.Errorf("float64 loop vs reference: %g", d)
		}
		if cfg.Mask != nil {
			for x := 0; x < 2*d; x++ {
				if o[5*2*d+x] != 0 || ref[5*2*d+x] != 0 {
					t.Fatalf("fully masked row: %g %g", o[5*2*d+x], ref[5*2*d+x])
				}
			}
			c := cfg
			c.Mask = nil
			o2, _ := Run(ctx, c, p.q, nil, kv)
			if relDiff(o2, o) < 1e-3 {
				t.Error("the mask changes nothing")
			}
		}
		cfg.Float64 = false
		if _, err := Run(ctx, cfg, p.q, nil, kv); err != nil {
			t.Fatal(err)
		}
	}
	_, err := Run(ctx, Config{HeadDim: d, QHeads: 2, Positions: []int{1}}, p.q, nil, kv)
	if err == nil || !strings.Contains(err.Error(), "1 query positions for 70 queries") {
		t.Errorf("got %v", err)
	}
}

// SetToken on a QuantizeKV cache stores the token as QuantizeKV stores it
// (static scales fixed, per-token and block scales from the token).
func TestQuantizeKVSetToken(t *testing.T) {
	const n, d = 100, 64
	p := newProblem(2, 1, n, 1, 1, d, 0.5)
	nk, nv := make([]float32, d), make([]float32, d)
	for i := range nk {
		nk[i], nv[i] = float32(i)/7-3, float32(i%5)*3
	}
	k2, v2 := append([]float32(nil), p.k...), append([]float32(nil), p.v...)
	copy(k2[17*d:], nk)
	copy(v2[17*d:], nv)
	for _, spec := range []KVSpec{
		{Format: KVE4M3}, {Format: KVBF16}, {Format: KVE4M3, KScales: PerTokenHead, VScales: PerTokenHead, Path: PathDequantBF16},
		{Format: KVMXFP8, Path: PathDequantBF16}, {Format: KVNVFP4, Path: PathDequantE4M3}, {Format: KVMXFP4, Path: PathDequantBF16},
	} {
		kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: n, Heads: 1, KDim: d}, spec)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := QuantizeKV(k2, v2, KVShape{Tokens: n, Heads: 1, KDim: d}, spec)
		c := kv.Clone()
		if err := c.SetToken(17, 0, nk, nv); err != nil {
			t.Fatal(err)
		}
		for tok := 0; tok < n; tok++ {
			for x := 0; x < d; x++ {
				if c.KCode(tok, 0, x) != want.KCode(tok, 0, x) || c.VCode(tok, 0, x) != want.VCode(tok, 0, x) {
					t.Fatalf("%s: token %d channel %d differs", spec, tok, x)
				}
			}
		}
		if kv.KCode(17, 0, 0) == c.KCode(17, 0, 0) && kv.KCode(17, 0, 63) == c.KCode(17, 0, 63) {
			t.Errorf("%s: SetToken changed nothing", spec)
		}
	}
}

// The branch-free midpoint encoder of a small table (e2m1), and the e2m1
// elements' encoder (fp8's conversion, NaN as +0), return what the table's
// binary search and distance comparison return: on a stride
// through every float32 of magnitude 2^-4 … 2^5 of both signs, at every
// midpoint and magnitude ±2 ulps, and on ±0, ±inf, NaN and huge values.
func TestEncodeNearestMidpoints(t *testing.T) {
	fast := nearestTable(fp8.FormatE2M1)
	slow := &nearest{mag: fast.mag, code: fast.code} // no midpoints: the search
	check := func(x float32) {
		a, b, c := fast.encode(fp8.FormatE2M1, x), slow.encode(fp8.FormatE2M1, x), encodeE2M1(x)
		if a != b || c != b {
			t.Fatalf("e2m1 %g (%#x): midpoints %#x, fp8's conversion %#x, search %#x", x, math.Float32bits(x), a, c, b)
		}
	}
	lo, hi := math.Float32bits(1.0/16), math.Float32bits(32)
	for b := lo; b < hi; b += 7 {
		check(math.Float32frombits(b))
		check(-math.Float32frombits(b))
	}
	for _, v := range append(append([]float64{}, fast.mag...), fast.mid...) {
		b := math.Float32bits(float32(v))
		for d := -2; d <= 2; d++ {
			x := math.Float32frombits(uint32(int64(b) + int64(d)))
			check(x)
			check(-x)
		}
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e30, -1e30, 1e-40} {
		check(x)
	}
}
