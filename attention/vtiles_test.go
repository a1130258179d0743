package attention

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// The kernels' tile-major view of V gives the same bits as the block copy
// it replaces: vTile hands P·V the cache's codes (and a patched token's)
// from the view, the view follows SetToken and RestoreToken, a bulk write
// drops it, and RunShared's outputs are the same bits for the runs before
// the view is built as for those after.
func TestVTileViewIsTheCachesV(t *testing.T) {
	for _, tc := range []struct {
		tokens, d, bn int
	}{
		{1000, 64, 96},   // a last tile past the padded 1024 tokens
		{5000, 128, 224}, // FA3's prefill tile
		{4100, 128, 192},
		{33, 64, 64}, // one tile, past the cache
	} {
		t.Run(fmt.Sprintf("n%d_d%d_bn%d", tc.tokens, tc.d, tc.bn), func(t *testing.T) {
			p := newProblem(5, 1, tc.tokens, 2, 2, tc.d, 0.5)
			kv := p.kv(t, fp8.FormatE4M3, []float32{1, 1}, []float32{1, 1})
			kc, vc, err := kv.QuantizeToken(1, p.k[:tc.d], p.v[:tc.d])
			if err != nil {
				t.Fatal(err)
			}
			pos := tc.tokens - 1
			patch := [][]TokenPatch{nil, {{Pos: pos, Head: 1, K: kc, V: vc}}}
			check := func(what string, withView bool, patched bool) {
				t.Helper()
				k, err := newKernel(Config{HeadDim: tc.d, KBlockN: tc.bn}, []int{0}, p.q, nil, kv)
				if err != nil {
					t.Fatal(err)
				}
				if patched {
					k.patch = patch
				}
				tiles := (tc.tokens + tc.bn - 1) / tc.bn
				for h := range 2 {
					for n := tiles - 1; n >= 0; n-- {
						got := k.vTile(h, tile{n: n, start: n * tc.bn}, 0)
						for i := range tc.d {
							for j := range tc.bn {
								var want uint16
								if tok := n*tc.bn + j; tok < kv.stride {
									want = kv.vt[(h*tc.d+i)*kv.stride+tok]
									if patched && h == 1 && tok == pos {
										want = vc[i]
									}
								}
								if g := got[i*tc.bn+j]; g != want {
									t.Fatalf("%s: head %d tile %d: V[%d][%d] = %#x, want %#x", what, h, n, i, j, g, want)
								}
							}
						}
					}
				}
				if (k.vview != nil) != withView {
					t.Fatalf("%s: kernel read the view: %v, want %v", what, k.vview != nil, withView)
				}
			}
			for r := 1; r < vTilesAfter; r++ {
				check(fmt.Sprintf("kernel %d", r), false, r%2 == 0)
			}
			check("the view's builder", true, false)
			check("patched over the view", true, true)
			// A token written and restored: the view follows both.
			st, err := kv.SaveToken(pos, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := kv.SetToken(pos, 0, p.k[:tc.d], p.v[tc.d:2*tc.d]); err != nil {
				t.Fatal(err)
			}
			check("after SetToken", true, false)
			if err := kv.RestoreToken(st); err != nil {
				t.Fatal(err)
			}
			check("after RestoreToken", true, true)
			if kv.Clone().views.vt != nil {
				t.Fatal("a clone starts with the view")
			}
		})
	}
}

// RunShared over a cache with patches gives the same bits while the
// kernels copy V's tiles (before the view) as after, when they read the
// view in place.
func TestVTileViewRunSharedBits(t *testing.T) {
	const n, d = 3000, 128
	p := newProblem(9, 1, n, 4, 2, d, 0.5)
	kv := p.kv(t, fp8.FormatE4M3, nil, nil)
	kc, vc, err := kv.QuantizeToken(0, p.k[:d], p.v[:d])
	if err != nil {
		t.Fatal(err)
	}
	patch := []TokenPatch{{Pos: 0, K: kc, V: vc}, {Pos: 1500, Head: 1, K: kc, V: vc}}
	cfgs := []Config{{HeadDim: d, QHeads: 4, KVHeads: 2, KBlockN: 224}, {HeadDim: d, QHeads: 4, KVHeads: 2, KBlockN: 192}}
	proms := [][]int{{0}, {1}}
	var first [][][]float64
	for r := range vTilesAfter + 2 {
		out, err := RunShared(context.Background(), cfgs, proms, p.q, nil, kv, patch)
		if err != nil {
			t.Fatal(err)
		}
		if r == 0 {
			first = out
			continue
		}
		for i := range out {
			for j := range out[i] {
				for x := range out[i][j] {
					if math.Float64bits(out[i][j][x]) != math.Float64bits(first[i][j][x]) {
						t.Fatalf("run %d, config %d, output %d[%d]: %v, the first run %v", r, i, j, x, out[i][j][x], first[i][j][x])
					}
				}
			}
		}
	}
	for _, bn := range []int{224, 192} {
		if kv.views.vt[bn] == nil {
			t.Errorf("no view for width %d after %d runs", bn, vTilesAfter+2)
		}
	}
}
