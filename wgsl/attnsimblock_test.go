package wgsl

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/attention"
)

// blockCase is one row of TestSimDecodeBlock: a random block-scaled cache
// and the configurations SimDecode runs on it.
type blockCase struct {
	name       string
	format     attention.KVFormat
	scale      attention.ScaleChoice
	tokens     int
	cfg        attention.Config
	promotions []int
	qScale     []float32 // q_descale (nil: 1)
	special    bool      // NaN and ±inf in some blocks of K and V
	trials     bool      // trials with replaced tokens
}

// blockInputs draws normal Q, K and V (V with a mean, a few large
// channels) and quantizes the cache on PathBlockScaled; special puts NaN
// and ±inf into blocks of V (KV head 0) and K (the last KV head).
func blockInputs(t testing.TB, c blockCase, seed uint64) (q []float32, kv *attention.KV) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 29))
	d, kvh := c.cfg.HeadDim, c.cfg.KVHeads
	qh := max(c.cfg.QHeads, kvh)
	q = make([]float32, qh*d)
	for i := range q {
		q[i] = float32(2 * rng.NormFloat64())
	}
	k, v := make([]float32, c.tokens*kvh*d), make([]float32, c.tokens*kvh*d)
	for i := range k {
		k[i] = float32(rng.NormFloat64())
		v[i] = float32(rng.NormFloat64() + 0.1)
		if i%d == 7 {
			k[i] *= 20 // an outlier channel
		}
	}
	if c.special {
		at := func(t, h, i int) int { return (t*kvh+h)*d + i }
		n := c.tokens
		v[at(n-3, 0, 3)] = float32(math.NaN())
		v[at(n/2, 0, 5)] = float32(math.Inf(1))
		v[at(n/3, 0, 6)] = float32(math.Inf(-1))
		if kvh > 1 { // a NaN row of S: every output of that head NaN
			k[at(n-10, kvh-1, 9)] = float32(math.Inf(1))
		}
	}
	kv, err := attention.QuantizeKV(k, v, attention.KVShape{Tokens: c.tokens, Heads: kvh, KDim: d, VDim: d},
		attention.KVSpec{Format: c.format, Scale: c.scale, Path: attention.PathBlockScaled})
	if err != nil {
		t.Fatal(err)
	}
	return q, kv
}

// SimDecode runs block-scaled caches (mxfp8, nvfp4, mxfp4) with the
// format's tcgen05 instruction for both GEMMs bit for bit as
// attention.RunPromotions: several promotion schemes, GQA, a window, NaN
// and ±inf blocks, an NVFP4 tensor scale, q_descale per tensor and per KV
// head, head_dim 64, 128 and 256, contexts that take several
// dispatches, and trials whose replaced tokens re-quantize V's token
// blocks.
func TestSimDecodeBlock(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	for _, c := range []blockCase{
		{name: "mxfp8 hd64 gqa4 specials", format: attention.KVMXFP8, tokens: 1000,
			cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8}, promotions: []int{0, 3}, special: true},
		{name: "mxfp8 hd256 window 700 trials q_descale", format: attention.KVMXFP8, tokens: 1100,
			cfg: attention.Config{HeadDim: 256, KVHeads: 2, QHeads: 4, KBlockN: 128, Window: 700}, promotions: []int{2}, qScale: []float32{0.5, 3}, trials: true},
		{name: "nvfp4 amax hd64 gqa2 specials", format: attention.KVNVFP4, scale: attention.ScaleAmax, tokens: 800,
			cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 4}, promotions: []int{1, 4}, qScale: []float32{0.25}, special: true},
		{name: "nvfp4 hd128 window 500 trials", format: attention.KVNVFP4, tokens: 900,
			cfg: attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 2, Window: 500}, promotions: []int{1}, trials: true},
		{name: "mxfp4 hd64 gqa2 specials", format: attention.KVMXFP4, tokens: 1000,
			cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 4, KBlockN: 192}, promotions: []int{0, 2}, special: true},
		// Long enough for two dispatches.
		{name: "mxfp8 hd64 kbn64 long", format: attention.KVMXFP8, tokens: 4500,
			cfg: attention.Config{HeadDim: 64, KVHeads: 1, KBlockN: 64}, promotions: []int{4}},
		{name: "nvfp4 hd64 kbn64 specials long", format: attention.KVNVFP4, scale: attention.ScaleAmax, tokens: 4700,
			cfg: attention.Config{HeadDim: 64, KVHeads: 1, KBlockN: 64}, promotions: []int{0}, special: true},
		{name: "mxfp4 hd128 trials", format: attention.KVMXFP4, tokens: 700,
			cfg: attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 2}, promotions: []int{3}, trials: true},
	} {
		t0 := time.Now()
		q, kv := blockInputs(t, c, uint64(len(c.name)))
		// RunPromotions with the tiles of each promotion's defaults.
		var want [][]float64
		for _, prom := range c.promotions {
			cfg := c.cfg
			cfg.Promotion = prom
			w, err := attention.RunPromotions(ctx, cfg, []int{prom}, q, c.qScale, kv)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			want = append(want, w[0])
		}
		p, err := planSim(c.cfg, c.qScale, kv, []SimTrial{{Q: q}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		nan, total := 0, 0
		for pi, prom := range c.promotions {
			cfg := c.cfg
			cfg.Promotion = prom
			got, err := r.SimDecode(ctx, cfg, q, c.qScale, kv)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			bad := 0
			for j := range got {
				if total++; math.IsNaN(want[pi][j]) {
					nan++
				}
				if !sameF32(float32(got[j]), float32(want[pi][j])) {
					if bad++; bad <= 3 {
						t.Errorf("%s promotion %d: O[%d] = %g (%#x), attention.Run %g (%#x)", c.name, prom, j, got[j], math.Float32bits(float32(got[j])), want[pi][j], math.Float32bits(float32(want[pi][j])))
					}
				}
			}
			t.Logf("%s promotion %d: %d/%d bit-exact", c.name, prom, len(got)-bad, len(got))
		}
		if c.special && nan == 0 {
			t.Errorf("%s: no NaN output: the NaN and inf blocks were not read", c.name)
		}
		if nan > 3*total/4 {
			t.Errorf("%s: %d of %d outputs NaN: the check is too blind", c.name, nan, total)
		}
		if c.trials {
			checkBlockTrials(t, r, c, q, kv)
		}
		visits := p.nMax - p.nMin
		if per := p.tilesPerDispatch(); strings.HasSuffix(c.name, "long") && (visits+per-1)/per < 2 {
			t.Errorf("%s: %d tiles in one dispatch (%d a dispatch): the state carried between dispatches is not checked", c.name, visits, per)
		}
		t.Logf("%s: kBlockN %d, %d tiles, %d a dispatch, %v", c.name, p.kbn, visits, p.tilesPerDispatch(), time.Since(t0))
	}
}

// checkBlockTrials runs trials that replace tokens (a needle, two tokens
// of one V block, a sink, a token of the partial last block) through
// SimDecodeTrials and compares each with attention.Run on a copy of the
// cache with the tokens written in (SetToken, which re-quantizes their V
// blocks); the cache is patched and restored in place around SimTokenOf.
func checkBlockTrials(t *testing.T, r *Runner, c blockCase, q0 []float32, kv *attention.KV) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	n, d, h := kv.Tokens(), kv.Dim(), kv.Heads()
	b := c.format.Block()
	type tok struct {
		pos, head int
		k, v      []float32
	}
	var trials []SimTrial
	var writes [][]tok
	for i := 0; i < 5; i++ {
		q := make([]float32, len(q0))
		for j := range q {
			q[j] = q0[(j+31*i)%len(q0)]
		}
		var ts []tok
		add := func(pos, head int) {
			k, v := make([]float32, d), make([]float32, d)
			for j := range k {
				k[j] = float32(3 * rng.NormFloat64())
				v[j] = float32(5 * rng.NormFloat64())
			}
			ts = append(ts, tok{pos, head, k, v})
		}
		switch i {
		case 1:
			add(n-1, h-1) // the partial last block and tile
		case 2:
			lo := (n - 200) / b * b
			add(lo+1, 0)
			add(lo+2, 0) // two tokens of one V block
			add(0, h-1)  // a sink (outside a window: changes nothing there)
		case 3:
			add(n-1-rng.IntN(min(n, 400)), 0)
		case 4:
			add(n-5, 0)
			add(n-6, h-1)
		}
		// The tokens as the patched cache holds them: write all, read
		// each, restore in reverse order.
		var saved []attention.TokenState
		for _, x := range ts {
			s, err := kv.SaveToken(x.pos, x.head)
			if err != nil {
				t.Fatal(err)
			}
			saved = append(saved, s)
			if err := kv.SetToken(x.pos, x.head, x.k, x.v); err != nil {
				t.Fatal(err)
			}
		}
		var toks []SimToken
		for _, x := range ts {
			tk, err := SimTokenOf(kv, x.pos, x.head)
			if err != nil {
				t.Fatal(err)
			}
			toks = append(toks, tk)
		}
		for j := len(saved) - 1; j >= 0; j-- {
			if err := kv.RestoreToken(saved[j]); err != nil {
				t.Fatal(err)
			}
		}
		trials = append(trials, SimTrial{Q: q, Tokens: toks})
		writes = append(writes, ts)
	}
	for _, prom := range c.promotions {
		cfg := c.cfg
		cfg.Promotion = prom
		got, err := r.SimDecodeTrials(ctx, cfg, c.qScale, kv, trials)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for i, tr := range trials {
			patched := kv.Clone()
			for _, x := range writes[i] {
				if err := patched.SetToken(x.pos, x.head, x.k, x.v); err != nil {
					t.Fatal(err)
				}
			}
			want, err := attention.Run(ctx, cfg, tr.Q, c.qScale, patched)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := attention.Run(ctx, cfg, tr.Q, c.qScale, kv)
			if err != nil {
				t.Fatal(err)
			}
			bad, differs := 0, 0
			for j := range want {
				if !sameF32(float32(got[i][j]), float32(want[j])) {
					if bad++; bad <= 3 {
						t.Errorf("%s promotion %d trial %d: O[%d] = %g, attention.Run on the patched cache %g", c.name, prom, i, j, got[i][j], want[j])
					}
				}
				if math.Float32bits(float32(want[j])) != math.Float32bits(float32(plain[j])) {
					differs++
				}
			}
			if len(tr.Tokens) > 0 && differs == 0 {
				t.Errorf("%s trial %d: the replaced tokens change nothing: the check is blind", c.name, i)
			}
			t.Logf("%s promotion %d trial %d (%d tokens): %d/%d bit-exact, %d differ from the unpatched cache", c.name, prom, i, len(tr.Tokens), len(want)-bad, len(want), differs)
		}
	}
}

// The block instructions are accepted by SimDecodeSupports; planSim
// checks that a cache's format is the instruction's and refuses block
// tokens without their scales.
func TestSimDecodeBlockSupports(t *testing.T) {
	for _, f := range []attention.KVFormat{attention.KVMXFP8, attention.KVNVFP4, attention.KVMXFP4} {
		name, _ := attention.BlockScaledModel(f)
		cfg := attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, DType: f.Elem(), QKModel: name, PVModel: name}
		if err := SimDecodeSupports(cfg); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		cfg.PVModel = "" // the format's instruction, as attention reads it
		if err := SimDecodeSupports(cfg); err != nil {
			t.Errorf("%s for QK, empty PV: %v", name, err)
		}
		cfg.QKModel, cfg.PVModel = "", ""
		if f.Elem().String() == "e2m1" {
			if err := SimDecodeSupports(cfg); err != nil {
				t.Errorf("e2m1 with the cache's instruction: %v", err)
			}
		}
	}
	mx8, _ := attention.BlockScaledModel(attention.KVMXFP8)
	nv4, _ := attention.BlockScaledModel(attention.KVNVFP4)
	for _, tc := range []struct {
		name string
		cfg  attention.Config
		want []string
	}{
		{"e2m1 dtype, mxfp8 model", attention.Config{HeadDim: 128, KVHeads: 1, DType: attention.KVMXFP4.Elem(), QKModel: mx8, PVModel: mx8}, []string{"reads e4m3", "dtype is e2m1"}},
		{"sm120 QK, empty PV (sm100's)", attention.Config{HeadDim: 128, KVHeads: 1, DType: attention.KVMXFP8.Elem(), QKModel: "sm120.mma.sync.mxf8f6f4.e4m3.e4m3.f32"}, []string{"differ"}},
		{"block and plain models", attention.Config{HeadDim: 128, KVHeads: 1, DType: attention.KVMXFP8.Elem(), QKModel: mx8, PVModel: "sm90.wgmma.e4m3.f32"}, []string{"differ"}},
		{"nvfp4 with sinks", attention.Config{HeadDim: 64, KVHeads: 1, DType: attention.KVNVFP4.Elem(), QKModel: nv4, PVModel: nv4, Sinks: []float64{1}}, []string{"sinks"}},
	} {
		err := SimDecodeSupports(tc.cfg)
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
	// planSim with caches: the format must match the instruction.
	q, nv := blockInputs(t, blockCase{format: attention.KVNVFP4, tokens: 40, cfg: attention.Config{HeadDim: 64, KVHeads: 1}}, 1)
	_, mx := blockInputs(t, blockCase{format: attention.KVMXFP4, tokens: 40, cfg: attention.Config{HeadDim: 64, KVHeads: 1}}, 1)
	mx4, _ := attention.BlockScaledModel(attention.KVMXFP4)
	if _, err := planSim(attention.Config{QKModel: mx4, PVModel: mx4}, nil, nv, []SimTrial{{Q: q}}); err == nil || !strings.Contains(err.Error(), "the cache is nvfp4") {
		t.Errorf("an mxfp4 instruction on an nvfp4 cache: %v", err)
	}
	if _, err := planSim(attention.Config{}, nil, mx, []SimTrial{{Q: q}}); err != nil {
		t.Errorf("an mxfp4 cache with its default instruction: %v", err)
	}
	if _, err := planSim(attention.Config{QKModel: "sm90.wgmma.e4m3.f32", PVModel: "sm90.wgmma.e4m3.f32"}, nil, mx, []SimTrial{{Q: q}}); err == nil {
		t.Error("an e4m3 wgmma model on an mxfp4 cache: no error")
	}
	if _, err := SimTokenOf(mx, 40, 0); err == nil || !strings.Contains(err.Error(), "outside") {
		t.Errorf("SimTokenOf past the cache: %v", err)
	}
	if _, err := SimTokenOf(nil, 0, 0); err == nil {
		t.Error("SimTokenOf of no cache: no error")
	}
	if tk, err := SimTokenOf(mx, 39, 0); err != nil || len(tk.KScales) != 2 || len(tk.VScales) != 64 || len(tk.VBlock) != 64*32 {
		t.Errorf("SimTokenOf of the last token: %d K scales, %d V scales, %d V block codes, %v", len(tk.KScales), len(tk.VScales), len(tk.VBlock), err)
	}
	k, v := mx.TokenCodes(3, 0)
	if _, err := planSim(attention.Config{}, nil, mx, []SimTrial{{Q: q, Tokens: []SimToken{{Pos: 3, K: k, V: v}}}}); err == nil || !strings.Contains(err.Error(), "SimTokenOf") {
		t.Errorf("a block token without scales: %v", err)
	}
}

// BenchmarkSimDecodeBlock times one SimDecode of a 4096-token context
// (head_dim 128, 8 query heads over 2 KV heads, promotion never, FA3's
// default tiles) per block-scaled format, and the e4m3 direct path on the
// same inputs for comparison; the shader is compiled before the timer
// starts. products/s counts the products of both GEMMs.
func BenchmarkSimDecodeBlock(b *testing.B) {
	r := testGPU(b)
	ctx := context.Background()
	cfg := attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8}
	const tokens = 4096
	for _, f := range []attention.KVFormat{attention.KVE4M3, attention.KVMXFP8, attention.KVNVFP4, attention.KVMXFP4} {
		b.Run(f.String(), func(b *testing.B) {
			c := blockCase{format: f, tokens: tokens, cfg: cfg}
			rng := rand.New(rand.NewPCG(1, 2))
			q := make([]float32, 8*128)
			for i := range q {
				q[i] = float32(rng.NormFloat64())
			}
			var kv *attention.KV
			if f == attention.KVE4M3 {
				k, v := make([]float32, tokens*2*128), make([]float32, tokens*2*128)
				for i := range k {
					k[i], v[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
				}
				var err error
				if kv, err = attention.QuantizeKV(k, v, attention.KVShape{Tokens: tokens, Heads: 2, KDim: 128, VDim: 128}, attention.KVSpec{Format: f}); err != nil {
					b.Fatal(err)
				}
			} else {
				_, kv = blockInputs(b, c, 1)
			}
			if _, err := r.SimDecode(ctx, cfg, q, nil, kv); err != nil { // compile
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := r.SimDecode(ctx, cfg, q, nil, kv); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(2*8*tokens*128)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}
