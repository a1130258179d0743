package attention

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// refViewsAgainstCodes checks that the reference read from the cache's
// view (the vector kernels) equals the one read from its own layout
// (referenceCodes) bit for bit, a NaN matching any NaN (sameBits).
func refViewsAgainstCodes(t *testing.T, what string, cfg Config, q []float32, kv *KV, patch []TokenPatch) {
	t.Helper()
	k, err := newKernel(cfg, []int{0}, q, nil, kv)
	if err != nil {
		t.Fatal(err)
	}
	by, err := kv.patchesByHead(patch)
	if err != nil {
		t.Fatal(err)
	}
	var vw *refView
	for range refViewAfter(kv.Format()) { // the refViewAfter-th read builds it
		vw = kv.refView()
	}
	if vw == nil {
		t.Fatalf("%s: no view of a %s cache", what, kv.format)
	}
	qv := k.dequantizedQuery(q)
	want, err := k.referenceCodes(context.Background(), qv, by)
	if err != nil {
		t.Fatal(err)
	}
	got, err := k.referenceViews(context.Background(), qv, by, vw)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, what, got, want)
}

// TestReferenceViewsBits: the vector path equals the scalar path bit for
// bit over every format the kernels decode (e4m3 saturating and not, so
// with NaN codes; e5m2; bf16; f16; tiny values, so subnormal codes),
// per-head descales != 1, GQA groups of 1 and 3, token counts that are
// not multiples of 16 (a partial block of keys), head dims 64 to 576, patches at the edges of the
// sixteen-key blocks and of the sums' chunks of keys (refViewChunk),
// adjacent patches and patches outside a window, a mask, causal prefill
// and a window.
func TestReferenceViewsBits(t *testing.T) {
	if !haveRefAsm {
		t.Skip("the vector kernels need amd64 with AVX2 and F16C, without the purego tag: not this build or CPU")
	}
	for i, tc := range []struct {
		name              string
		mq, n, qh, kvh, d int
		f                 fp8.Format
		sat               fp8.Saturation
		scale             float32 // of the inputs: large ones overflow e4m3 to NaN without saturation
		cfg               Config
		mask, patches     bool
	}{
		{"e4m3 g1", 1, 203, 2, 2, 64, fp8.FormatE4M3, fp8.SatFinite, 1, Config{}, false, true},
		{"e4m3 nosat NaN g3", 1, 117, 6, 2, 192, fp8.FormatE4M3, fp8.NoSat, 300, Config{}, false, true},
		{"e4m3 tiny (subnormals)", 1, 100, 1, 1, 64, fp8.FormatE4M3, fp8.SatFinite, 1.0 / 64, Config{}, false, false},
		{"e5m2 g3 mask", 3, 150, 3, 1, 128, fp8.FormatE5M2, fp8.SatFinite, 1, Config{}, true, true},
		{"bf16 causal window", 7, 99, 4, 2, 64, fp8.FormatBF16, fp8.SatFinite, 1, Config{Causal: true, Window: 20}, false, true},
		{"f16 g1 hd 576", 2, 61, 1, 1, 576, fp8.FormatFP16, fp8.SatFinite, 1, Config{}, true, true},
		{"f16 tiny (subnormals)", 1, 77, 2, 1, 64, fp8.FormatFP16, fp8.SatFinite, 1.0 / 8192, Config{}, false, false},
		{"bf16 sinks g3", 1, 45, 3, 1, 256, fp8.FormatBF16, fp8.SatFinite, 1, Config{}, false, true},
		{"e4m3 g3 long (chunks of V)", 2, 777, 6, 2, 128, fp8.FormatE4M3, fp8.SatFinite, 1, Config{}, true, true},
		{"bf16 g1 long", 1, 600, 1, 1, 64, fp8.FormatBF16, fp8.SatFinite, 1, Config{Window: 450}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProblem(uint64(90+i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
			for x := range p.k {
				p.k[x] *= tc.scale
				p.v[x] *= tc.scale
			}
			ks, vs := make([]float32, tc.kvh), make([]float32, tc.kvh)
			for h := range ks {
				ks[h], vs[h] = 0.75+0.5*float32(h), 1.25/float32(h+1)
			}
			if tc.f == fp8.FormatBF16 || tc.f == fp8.FormatFP16 {
				ks[0] = 1 // one head without a descale, the others with
			}
			kv, err := NewKV(p.k, p.v, p.shape, tc.f, tc.sat, ks, vs)
			if err != nil {
				t.Fatal(err)
			}
			cfg := tc.cfg
			cfg.HeadDim, cfg.QHeads, cfg.KVHeads, cfg.DType = tc.d, tc.qh, tc.kvh, tc.f
			if tc.mask {
				cfg.Mask = make([]bool, tc.mq*tc.n)
				for x := range cfg.Mask {
					cfg.Mask[x] = x%5 != 2 && x%13 != 0
				}
			}
			if tc.name == "bf16 sinks g3" {
				cfg.Sinks = []float64{0.5, -1, 2}
			}
			var patch []TokenPatch
			if tc.patches {
				for _, pos := range []int{0, 15, 16, 17, 31, 32, 40, 41, 255, 256, 257, 511, 512, tc.n - 2, tc.n - 1} {
					if pos >= tc.n {
						continue
					}
					for h := 0; h < tc.kvh; h++ {
						src := (pos*7 + 3 + h) % tc.n
						kc, vc := kv.TokenCodes(src, h)
						patch = append(patch, TokenPatch{Pos: pos, Head: h, K: kc, V: vc})
					}
				}
			}
			refViewsAgainstCodes(t, tc.name, cfg, p.q, kv, nil)
			if patch != nil {
				refViewsAgainstCodes(t, tc.name+" patched", cfg, p.q, kv, patch)
			}
		})
	}
}

// TestReferenceViewsFollowWrites: a cache's view, once built, follows
// SetTokenCodes and SetToken (and a Clone starts its own): the reference
// after each write equals the scalar one on the written cache.
func TestReferenceViewsFollowWrites(t *testing.T) {
	if !haveRefAsm {
		t.Skip("the vector kernels need amd64 with AVX2 and F16C, without the purego tag: not this build or CPU")
	}
	p := newProblem(7, 1, 70, 2, 2, 64, 0.5)
	kv, err := NewKV(p.k, p.v, p.shape, fp8.FormatE4M3, fp8.SatFinite, nil, []float32{0.5, 2})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{HeadDim: 64, QHeads: 2, KVHeads: 2, DType: fp8.FormatE4M3}
	for r := 1; r < refViewAfter(kv.Format()); r++ {
		if kv.refView() != nil {
			t.Fatalf("a view after %d reads, want it on read %d", r, refViewAfter(kv.Format()))
		}
	}
	refViewsAgainstCodes(t, "fresh", cfg, p.q, kv, nil) // builds the view
	c := kv.Clone()
	kc, vc := kv.TokenCodes(5, 1)
	if err := kv.SetTokenCodes(17, 1, kc, vc); err != nil {
		t.Fatal(err)
	}
	refViewsAgainstCodes(t, "after SetTokenCodes", cfg, p.q, kv, nil)
	big := make([]float32, 64)
	for x := range big {
		big[x] = float32(x)/4 - 8
	}
	if err := kv.SetToken(69, 0, big, big); err != nil {
		t.Fatal(err)
	}
	refViewsAgainstCodes(t, "after SetToken", cfg, p.q, kv, nil)
	if err := c.SetToken(0, 0, big, big); err != nil {
		t.Fatal(err)
	}
	refViewsAgainstCodes(t, "the clone, written", cfg, p.q, c, nil)
	refViewsAgainstCodes(t, "the original, after its clone's write", cfg, p.q, kv, nil)
}

// FuzzReferenceViews: for any shape, format, descale, mask and patches
// the fuzzer picks, the vector path equals the scalar path bit for bit.
func FuzzReferenceViews(f *testing.F) {
	if !haveRefAsm {
		f.Skip("the vector kernels need amd64 with AVX2 and F16C, without the purego tag: not this build or CPU")
	}
	f.Add(uint64(1), uint8(33), uint8(20), uint8(0), uint8(1), float32(1), uint64(0x8001), uint8(16))
	f.Add(uint64(2), uint8(16), uint8(16), uint8(1), uint8(3), float32(200), uint64(0), uint8(0))
	f.Add(uint64(3), uint8(1), uint8(1), uint8(2), uint8(2), float32(0.001), uint64(5), uint8(1))
	f.Fuzz(func(t *testing.T, seed uint64, n8, d8, fmt8, g8 uint8, scale float32, maskBits uint64, patchAt uint8) {
		formats := []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatBF16, fp8.FormatFP16}
		n, d, g := 1+3*int(n8), []int{64, 128, 192, 576}[int(d8)%4], 1+int(g8)%3
		f := formats[int(fmt8)%len(formats)]
		if math.IsNaN(float64(scale)) || math.IsInf(float64(scale), 0) || scale == 0 || math.Abs(float64(scale)) > 1e4 || math.Abs(float64(scale)) < 1e-6 {
			scale = 1
		}
		p := newProblem(seed, 1, n, g, 1, d, 0.5)
		for x := range p.k {
			p.k[x] *= scale
			p.v[x] *= scale
		}
		sat := fp8.SatFinite
		if fmt8&0x80 != 0 {
			sat = fp8.NoSat
		}
		kv, err := NewKV(p.k, p.v, p.shape, f, sat, []float32{0.5 + float32(fmt8%7)}, []float32{1.5})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{HeadDim: d, QHeads: g, KVHeads: 1, DType: f}
		if maskBits != 0 {
			cfg.Mask = make([]bool, n)
			for j := range cfg.Mask {
				cfg.Mask[j] = maskBits>>(j%64)&1 == 0
			}
		}
		var patch []TokenPatch
		if patchAt != 0 {
			pos := 3 * int(patchAt) % n
			kc, vc := kv.TokenCodes((pos+1)%n, 0)
			patch = append(patch, TokenPatch{Pos: pos, K: kc, V: vc})
		}
		refViewsAgainstCodes(t, "fuzz", cfg, p.q, kv, patch)
	})
}

// TestTransposeTiles: the vector transpose that builds the views equals
// the transpose written out, for every tile count to 5 and several
// strides, and writes nothing past its tiles.
func TestTransposeTiles(t *testing.T) {
	if !haveRefAsm {
		t.Skip("no vector kernels on this build or CPU")
	}
	r := rand.New(rand.NewPCG(9, 10))
	for _, stride := range []int{16, 48, 64, 128, 1000} {
		for tiles := 0; tiles <= 5 && 16*tiles <= stride; tiles++ {
			src := make([]uint16, 15*stride+16*tiles+r.IntN(3))
			for i := range src {
				src[i] = uint16(r.Uint32())
			}
			dst := make([]uint16, 256*tiles+8)
			for i := range dst {
				dst[i] = 0xdead
			}
			transposeTiles(dst, src, stride, tiles)
			for j := 0; j < tiles; j++ {
				for x := 0; x < 16; x++ {
					for l := 0; l < 16; l++ {
						if got, want := dst[256*j+16*x+l], src[16*j+x+l*stride]; got != want {
							t.Fatalf("stride %d, tile %d of %d: row %d lane %d is %04x, want %04x", stride, j, tiles, x, l, got, want)
						}
					}
				}
			}
			for i := 256 * tiles; i < len(dst); i++ {
				if dst[i] != 0xdead {
					t.Fatalf("stride %d, %d tiles: wrote past the tiles at %d", stride, tiles, i)
				}
			}
		}
	}
}
