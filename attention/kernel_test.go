package attention

import (
	"fmt"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// vTile hands P·V the codes the cache holds for the tile, +0 past the
// padded token axis, whatever the block it copies: tiles visited newest
// first down to lo (with refills when a block spans fewer tiles than the
// range), a second head, and a second pass over the same tiles.
func TestVTileIsTheCachesV(t *testing.T) {
	for _, tc := range []struct {
		tokens, d, bn, lo int
	}{
		{1000, 64, 96, 0},   // one block holds every tile; the last tile reaches past stride 1024
		{5000, 128, 256, 0}, // 8 tiles per block, 20 tiles: refills
		{5000, 128, 256, 7}, // a range that does not start at tile 0
		{4100, 128, 224, 3}, // a last tile past the padded 4128 tokens, 9 tiles per block
		{33, 64, 64, 0},     // one tile, past the cache
	} {
		t.Run(fmt.Sprintf("n%d_d%d_bn%d_lo%d", tc.tokens, tc.d, tc.bn, tc.lo), func(t *testing.T) {
			p := newProblem(3, 1, tc.tokens, 2, 2, tc.d, 0.5)
			kv := p.kv(t, fp8.FormatE4M3, []float32{1, 1}, []float32{1, 1})
			k, err := newKernel(Config{HeadDim: tc.d, KBlockN: tc.bn}, []int{0}, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			tiles := (tc.tokens + tc.bn - 1) / tc.bn
			for pass := range 2 {
				for h := range 2 {
					for n := tiles - 1; n >= tc.lo; n-- {
						got := k.vTile(h, tile{n: n, start: n * tc.bn}, tc.lo)
						if len(got) != tc.d*tc.bn {
							t.Fatalf("tile %d: %d codes, want %d", n, len(got), tc.d*tc.bn)
						}
						for i := range tc.d {
							for j := range tc.bn {
								var want uint16
								if tok := n*tc.bn + j; tok < kv.stride {
									want = kv.vt[(h*tc.d+i)*kv.stride+tok]
								}
								if g := got[i*tc.bn+j]; g != want {
									t.Fatalf("pass %d head %d tile %d: V[%d][%d] = %#x, the cache holds %#x", pass, h, n, i, j, g, want)
								}
							}
						}
						if k.vb.lo < tc.lo {
							t.Fatalf("tile %d: block starts at tile %d, below the range's lowest %d", n, k.vb.lo, tc.lo)
						}
					}
				}
			}
		})
	}
}
