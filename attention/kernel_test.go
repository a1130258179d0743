package attention

import (
	"fmt"
	"math"
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

// vTileBlock hands the block-scaled P·V the cache's element codes and
// scale codes of the tile, +0 with the scale of an all-zero block past the
// padded token axis, through refills, two heads and two passes.
func TestVTileBlockIsTheCachesV(t *testing.T) {
	for _, tc := range []struct {
		f                 KVFormat
		tokens, d, bn, lo int
	}{
		{KVMXFP8, 1000, 64, 96, 0},
		{KVMXFP8, 9000, 128, 256, 5}, // 15 tiles per block, 36 tiles: refills
		{KVNVFP4, 4100, 128, 128, 2},
		{KVMXFP4, 5000, 128, 256, 0},
	} {
		t.Run(fmt.Sprintf("%s_n%d_d%d_bn%d_lo%d", tc.f, tc.tokens, tc.d, tc.bn, tc.lo), func(t *testing.T) {
			p := newProblem(4, 1, tc.tokens, 2, 2, tc.d, 0.5)
			spec := KVSpec{Format: tc.f, Path: PathBlockScaled}
			if tc.f == KVNVFP4 {
				spec.Scale = ScaleAmax
			}
			kv, err := QuantizeKV(p.k, p.v, KVShape{Tokens: tc.tokens, Heads: 2, KDim: tc.d}, spec)
			if err != nil {
				t.Fatal(err)
			}
			k, err := newKernel(Config{HeadDim: tc.d, KBlockN: tc.bn}, []int{0}, p.q, nil, kv)
			if err != nil {
				t.Fatal(err)
			}
			bs := kv.bs
			nb := bs.block
			var zero [1]uint8
			zs := bs.vq.quantBlock(make([]float32, nb), zero[:], 0)
			tiles := (tc.tokens + tc.bn - 1) / tc.bn
			for pass := range 2 {
				for h := range 2 {
					for n := tiles - 1; n >= tc.lo; n-- {
						codes, scales := k.vTileBlock(h, tile{n: n, start: n * tc.bn}, tc.lo)
						if len(codes) != tc.d*tc.bn || len(scales) != tc.d*tc.bn/nb {
							t.Fatalf("tile %d: %d codes and %d scales, want %d and %d", n, len(codes), len(scales), tc.d*tc.bn, tc.d*tc.bn/nb)
						}
						for i := range tc.d {
							base := (h*tc.d + i) * kv.stride
							for j := range tc.bn {
								var want uint8
								wantS := zs
								if tok := n*tc.bn + j; tok < kv.stride {
									want, wantS = bs.vt8[base+tok], bs.vs[(base+tok)/nb]
								}
								if g := codes[i*tc.bn+j]; g != want {
									t.Fatalf("pass %d head %d tile %d: V[%d][%d] = %#x, the cache holds %#x", pass, h, n, i, j, g, want)
								}
								if g := scales[(i*tc.bn+j)/nb]; g != wantS {
									t.Fatalf("pass %d head %d tile %d: V[%d][%d]'s scale = %#x, the cache holds %#x", pass, h, n, i, j, g, wantS)
								}
							}
						}
					}
				}
			}
		})
	}
}

// exp2f is float32(math.Exp2(x)) bit for bit: on a sweep of every 251st
// float32 of its fast range [−125, 127] (about 9 million values),
// around each j/64 boundary of its table, at the ends of the range, and
// on the specials.
func TestExp2fIsMathExp2(t *testing.T) {
	check := func(x float32) {
		want := float32(math.Exp2(float64(x)))
		if got := exp2f(x); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("exp2f(%v = %#08x) = %v (%#08x), math.Exp2 gives %v (%#08x)", x, math.Float32bits(x), got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	for _, hi := range []float32{127, 125} { // positive x up to 127, negative down to −125
		sign := uint32(0)
		if hi == 125 {
			sign = 1 << 31
		}
		for b := uint32(0); b <= math.Float32bits(hi); b += 251 {
			check(math.Float32frombits(sign | b))
		}
	}
	for k := -125 * 64; k <= 127*64; k++ {
		x := float32(k) / 64
		check(x)
		for i, y, z := 0, x, x; i < 4; i++ {
			y, z = math.Nextafter32(y, float32(math.Inf(1))), math.Nextafter32(z, float32(math.Inf(-1)))
			check(y)
			check(z)
		}
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 1e-45, -1e-45, 1e-30, -1e-30,
		-125.00001, -126, -149, -149.5, -150, -151, -1e30, 127.00001, 127.5, 128, 1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		check(x)
	}
}

func FuzzExp2f(f *testing.F) {
	for _, x := range []float32{0, 8, -8, 0.5, -0.7, -125, 127, -149.5, 1e-40} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float32) {
		got, want := exp2f(x), float32(math.Exp2(float64(x)))
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("exp2f(%v) = %v, math.Exp2 gives %v", x, got, want)
		}
	})
}

func BenchmarkExp2f(b *testing.B) {
	xs := make([]float32, 1024)
	for i := range xs {
		xs[i] = 8 - float32(i)*0.0371 // P's exponents: (S − m) + 8, from 8 down
	}
	b.Run("exp2f", func(b *testing.B) {
		var s float32
		for b.Loop() {
			for _, x := range xs {
				s += exp2f(x)
			}
		}
		sink32 = s
	})
	b.Run("math.Exp2", func(b *testing.B) {
		var s float32
		for b.Loop() {
			for _, x := range xs {
				s += float32(math.Exp2(float64(x)))
			}
		}
		sink32 = s
	})
}

var sink32 float32
