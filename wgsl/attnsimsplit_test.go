package wgsl

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/attention"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/simcase"
)

// splitRow is one row of TestSimDecodeSplits: a configuration (its
// shader one that the other SimDecode tests compile, but for two) and its
// inputs.
type splitRow struct {
	name   string
	cfg    attention.Config
	inputs func(t *testing.T) (q, qScale []float32, kv *attention.KV)
	long   bool // a split's tiles take more than one dispatch
}

// simRow is a splitRow on simcase.Inputs' cache.
func simRow(name string, tokens int, cfg attention.Config, perHead bool, gain float32, long bool) splitRow {
	return splitRow{name, cfg, func(t *testing.T) ([]float32, []float32, *attention.KV) {
		q, qs, kv, err := simcase.Inputs(simcase.Case{Name: name, Tokens: tokens, Cfg: cfg, PerHead: perHead, QGain: gain}, uint64(tokens))
		if err != nil {
			t.Fatal(err)
		}
		return q, qs, kv
	}, long}
}

// SimDecode runs split-KV decode (Config.Splits) bit for bit as
// attention.Run: 2, 3 and 16 splits and more splits than tiles (empty
// splits), each with promotion never, every tile and every 4 tiles, on
// e4m3 (GQA 4, per-head scales, a window; a context whose splits take
// two dispatches each), bf16 (GQA 4, a window) and the native NVFP4 path
// (GQA 2 with NaN and ±inf blocks, a window); each split count's output
// differs from the unsplit one's, so the check sees the splits.
func TestSimDecodeSplits(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	nv := func(tokens int, cfg attention.Config, qScale []float32, special bool) func(t *testing.T) ([]float32, []float32, *attention.KV) {
		return func(t *testing.T) ([]float32, []float32, *attention.KV) {
			q, kv := blockInputs(t, blockCase{format: attention.KVNVFP4, scale: attention.ScaleAmax, tokens: tokens, cfg: cfg, special: special}, uint64(tokens))
			return q, qScale, kv
		}
	}
	e4 := attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8}
	bf := attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 128, DType: fp8.FormatBF16}
	nvc := attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 4}
	with := func(c attention.Config, f func(*attention.Config)) attention.Config { f(&c); return c }
	rows := []splitRow{
		// simcase.Cases' e4m3 hd128 shaders.
		simRow("e4m3 gqa4 never kbn96 long", 9000, with(e4, func(c *attention.Config) { c.KBlockN = 96 }), false, 1, true),
		simRow("e4m3 gqa4 every-tile kbn128 per-head", 2500, with(e4, func(c *attention.Config) { c.KBlockN, c.Promotion = 128, 1 }), true, 2, false),
		simRow("e4m3 gqa4 every-4 kbn96 per-head", 2500, with(e4, func(c *attention.Config) { c.KBlockN, c.Promotion = 96, 4 }), true, 1, false),
		// simcase.Cases' e4m3 hd64 window shader: the window's first tile is
		// split 0's.
		simRow("e4m3 hd64 gqa4 every-4 window 700", 2500, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, Promotion: 4, Window: 700}, false, 1, false),
		// bf16: simcase.Cases' hd64 window and hd128 every-4 shaders, and every
		// tile (a new shader).
		simRow("bf16 hd64 gqa4 never sm100 window 900", 2500, attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, DType: fp8.FormatBF16, Window: 900,
			QKModel: "sm100.mma.sync.bf16.f32", PVModel: "sm100.mma.sync.bf16.f32"}, false, 1, false),
		simRow("bf16 gqa4 every-tile kbn128", 2000, with(bf, func(c *attention.Config) { c.Promotion = 1 }), false, 2, false),
		simRow("bf16 gqa4 every-4 kbn128 per-head", 2000, with(bf, func(c *attention.Config) { c.Promotion = 4 }), true, 2, false),
		// NVFP4 natively: TestSimDecodeBlock's shaders (gqa2 every tile
		// and every 4, hd128 window) and never (a new shader).
		{"nvfp4 gqa2 never specials", nvc, nv(1500, nvc, []float32{0.25}, true), false},
		{"nvfp4 gqa2 every-tile specials", with(nvc, func(c *attention.Config) { c.Promotion = 1 }), nv(1500, nvc, []float32{0.25}, true), false},
		{"nvfp4 gqa2 every-4", with(nvc, func(c *attention.Config) { c.Promotion = 4 }), nv(1500, nvc, nil, false), false},
		{"nvfp4 hd128 every-tile window 500", attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 2, Window: 500, Promotion: 1},
			nv(1200, attention.Config{HeadDim: 128, KVHeads: 1, QHeads: 2}, nil, false), false},
	}
	proms := map[string]map[int]bool{}
	for _, row := range rows {
		t0 := time.Now()
		q, qs, kv := row.inputs(t)
		p, err := planSim(row.cfg, qs, kv, []SimTrial{{Q: q}})
		if err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		tiles, per := p.nMax-p.nMin, p.tilesPerDispatch()
		one, err := attention.Run(ctx, row.cfg, q, qs, kv)
		if err != nil {
			t.Fatalf("%s: %v", row.name, err)
		}
		nan := 0
		for _, x := range one {
			if math.IsNaN(x) {
				nan++
			}
		}
		if nan == len(one) {
			t.Errorf("%s: every output NaN: the check is blind", row.name)
		}
		f := kv.Format().String()
		if proms[f] == nil {
			proms[f] = map[int]bool{}
		}
		proms[f][row.cfg.Promotion] = true
		for _, S := range []int{2, 3, 16, tiles + 5} {
			cfg := row.cfg
			cfg.Splits = S
			got, err := r.SimDecode(ctx, cfg, q, qs, kv)
			if err != nil {
				t.Fatalf("%s, %d splits: %v", row.name, S, err)
			}
			want, err := attention.Run(ctx, cfg, q, qs, kv)
			if err != nil {
				t.Fatal(err)
			}
			bad, differs := 0, 0
			for j := range want {
				if !sameF32(float32(got[j]), float32(want[j])) {
					if bad++; bad <= 3 {
						t.Errorf("%s, %d splits: O[%d] = %g (%#08x), attention.Run %g (%#08x)", row.name, S, j, got[j], f32bits(float32(got[j])), want[j], f32bits(float32(want[j])))
					}
				}
				if !sameF32(float32(want[j]), float32(one[j])) {
					differs++
				}
			}
			if differs == 0 {
				t.Errorf("%s, %d splits: the same O as one split: the check cannot see the splits", row.name, S)
			}
			ps, err := planSim(cfg, qs, kv, []SimTrial{{Q: q}})
			if err != nil {
				t.Fatal(err)
			}
			if row.long && S == 2 && ps.tps <= per {
				t.Errorf("%s: %d tiles a split, %d a dispatch: the state carried between dispatches is not checked with splits", row.name, ps.tps, per)
			}
			t.Logf("%s, %d splits (%d tiles each): %d/%d bit-exact, %d differ from one split", row.name, S, ps.tps, len(want)-bad, len(want), differs)
		}
		t.Logf("%s: %d tiles, %d a dispatch, %d NaN outputs, %v", row.name, tiles, per, nan, time.Since(t0).Round(time.Millisecond))
	}
	for _, f := range []string{"e4m3", "bf16", "e2m1"} {
		if len(proms[f]) != 3 || !proms[f][0] || !proms[f][1] || !proms[f][4] {
			t.Errorf("%s rows run promotions %v, want 0, 1 and 4", f, proms[f])
		}
	}
}

// SimDecodeTrials with splits: trials with replaced tokens (a needle in
// some split, sinks in split 0) equal attention.Run on the patched caches,
// in batches of one trial whose workgroups go over x and y (maxSimRows
// lowered), and on the native MXFP8 path (checkBlockTrials).
func TestSimDecodeTrialsSplits(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	cfg := attention.Config{HeadDim: 128, KVHeads: 2, QHeads: 8, KBlockN: 96, Splits: 16} // simcase.Cases' first shader
	q0, qs, kv, err := simcase.Inputs(simcase.Case{Tokens: 2000, Cfg: cfg, PerHead: true, QGain: 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	n, d := kv.Tokens(), kv.Dim()
	needle := func(pos, head int, seed int) SimToken {
		k, v := make([]uint16, d), make([]uint16, d)
		for j := range k {
			k[j], v[j] = uint16((j*7+seed)%0x7e), uint16((j*13+seed)%0x7e)|uint16(j%2)<<7
		}
		return SimToken{Pos: pos, Head: head, K: k, V: v}
	}
	trials := []SimTrial{
		{Q: q0},
		{Q: q0, Tokens: []SimToken{needle(n/3, 0, 1)}},
		{Q: q0, Tokens: []SimToken{needle(0, 1, 2), needle(1, 0, 3), needle(n-1, 1, 4)}},
	}
	for _, limit := range []int{maxSimRows, 50} {
		saved := maxSimRows
		maxSimRows = limit
		got, err := r.SimDecodeTrials(ctx, cfg, qs, kv, trials)
		maxSimRows = saved
		if err != nil {
			t.Fatalf("maxSimRows %d: %v", limit, err)
		}
		for i, tr := range trials {
			patched := kv.Clone()
			for _, tk := range tr.Tokens {
				if err := patched.SetTokenCodes(tk.Pos, tk.Head, tk.K, tk.V); err != nil {
					t.Fatal(err)
				}
			}
			want, err := attention.Run(ctx, cfg, tr.Q, qs, patched)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := attention.Run(ctx, cfg, tr.Q, qs, kv)
			if err != nil {
				t.Fatal(err)
			}
			bad, differs := 0, 0
			for j := range want {
				if !sameF32(float32(got[i][j]), float32(want[j])) {
					if bad++; bad <= 3 {
						t.Errorf("maxSimRows %d trial %d: O[%d] = %g, attention.Run on the patched cache %g", limit, i, j, got[i][j], want[j])
					}
				}
				if float32(want[j]) != float32(plain[j]) {
					differs++
				}
			}
			if len(tr.Tokens) > 0 && differs == 0 {
				t.Errorf("trial %d: the replaced tokens change nothing: the check is blind", i)
			}
			t.Logf("maxSimRows %d trial %d (%d tokens replaced): %d/%d bit-exact, %d differ from the unpatched cache", limit, i, len(tr.Tokens), len(want)-bad, len(want), differs)
		}
	}
	// The native path's trials re-quantize V blocks; TestSimDecodeBlock's
	// mxfp8 hd64 gqa4 shader (promotion 0), 5 splits.
	c := blockCase{name: "mxfp8 hd64 gqa4 5 splits trials", format: attention.KVMXFP8, tokens: 1000,
		cfg: attention.Config{HeadDim: 64, KVHeads: 2, QHeads: 8, Splits: 5}, promotions: []int{0}}
	q, bkv := blockInputs(t, c, 9)
	checkBlockTrials(t, r, c, q, bkv)
}

// SimDecodeSupports and SimDecode take 0 to 128 splits and refuse others
// with attention's limit named.
func TestSimDecodeSplitsLimits(t *testing.T) {
	for _, tc := range []struct {
		splits int
		ok     bool
	}{{0, true}, {1, true}, {2, true}, {attention.MaxSplits, true}, {-1, false}, {attention.MaxSplits + 1, false}} {
		cfg := attention.Config{HeadDim: 128, KVHeads: 1, DType: fp8.FormatE4M3, Splits: tc.splits}
		err := SimDecodeSupports(cfg)
		if (err == nil) != tc.ok {
			t.Errorf("SimDecodeSupports with %d splits: %v", tc.splits, err)
		}
		if err != nil && !tc.ok && !strings.Contains(err.Error(), fmt.Sprintf("%d splits", tc.splits)) {
			t.Errorf("SimDecodeSupports with %d splits: %q does not name the splits", tc.splits, err)
		}
		q, qs, kv, err := simcase.Inputs(simcase.Case{Tokens: 100, Cfg: cfg}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := planSim(cfg, qs, kv, []SimTrial{{Q: q}}); (err == nil) != tc.ok {
			t.Errorf("planSim with %d splits: %v", tc.splits, err)
		}
	}
}
