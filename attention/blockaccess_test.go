package attention

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// The accessors of a block-scaled cache give what the cache stands for:
// code × BlockScales' scale × tensor scale is Dequantize's value for K
// and V, and QuantizeBlock (tensor scale 1) gives K's stored codes and
// scales on caches whose tensor scale is 1.
func TestBlockAccess(t *testing.T) {
	const tokens, heads, d = 70, 2, 64
	rng := rand.New(rand.NewPCG(3, 4))
	k, v := make([]float32, tokens*heads*d), make([]float32, tokens*heads*d)
	for i := range k {
		k[i], v[i] = float32(rng.NormFloat64()*4), float32(rng.NormFloat64())
	}
	k[5] = float32(math.NaN())
	for _, f := range []KVFormat{KVMXFP8, KVNVFP4, KVMXFP4} {
		kv, err := QuantizeKV(k, v, KVShape{Tokens: tokens, Heads: heads, KDim: d, VDim: d}, KVSpec{Format: f, Path: PathBlockScaled})
		if err != nil {
			t.Fatal(err)
		}
		if kv.BlockFormat() != f {
			t.Errorf("%s: BlockFormat %s", f, kv.BlockFormat())
		}
		dk, dv := kv.Dequantize()
		b, elem, sf := f.Block(), f.Elem(), f.BlockScale()
		val := func(c uint16, s uint8) float64 { return valueTable(elem)[c] * scaleValues(sf)[s] }
		codes := make([]uint8, b)
		for tk := 0; tk < tokens; tk++ {
			for h := 0; h < heads; h++ {
				ks, vs, err := kv.BlockScales(tk, h)
				if err != nil {
					t.Fatal(err)
				}
				if len(ks) != d/b || len(vs) != d {
					t.Fatalf("%s: %d K and %d V scales", f, len(ks), len(vs))
				}
				for i := 0; i < d; i++ {
					x := (tk*heads+h)*d + i
					gk := val(kv.KCode(tk, h, i), ks[i/b]) * float64(kv.KScales()[0])
					gv := val(kv.VCode(tk, h, i), vs[i]) * float64(kv.VScales()[0])
					if !same64(gk, dk[x]) || !same64(gv, dv[x]) {
						t.Fatalf("%s token %d head %d dim %d: K %g V %g from the accessors, Dequantize %g %g", f, tk, h, i, gk, gv, dk[x], dv[x])
					}
				}
				for lo := 0; lo < d; lo += b {
					s, err := QuantizeBlock(f, k[(tk*heads+h)*d+lo:][:b], codes)
					if err != nil {
						t.Fatal(err)
					}
					if s != ks[lo/b] {
						t.Fatalf("%s token %d head %d block %d: QuantizeBlock scale %#x, the cache %#x", f, tk, h, lo/b, s, ks[lo/b])
					}
					for j, c := range codes {
						if uint16(c) != kv.KCode(tk, h, lo+j) {
							t.Fatalf("%s token %d head %d dim %d: QuantizeBlock code %#x, the cache %#x", f, tk, h, lo+j, c, kv.KCode(tk, h, lo+j))
						}
					}
				}
			}
		}
		if _, _, err := kv.BlockScales(tokens, 0); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("%s: token %d: %v", f, tokens, err)
		}
	}
	plain, err := NewKV(k, v, fp8.Shape{Tokens: tokens, Heads: heads, Dim: d}, fp8.FormatE4M3, fp8.SatFinite, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if plain.BlockFormat() != KVInvalid {
		t.Errorf("an e4m3 cache: BlockFormat %s", plain.BlockFormat())
	}
	if _, _, err := plain.BlockScales(0, 0); err == nil || !strings.Contains(err.Error(), "no block scales") {
		t.Errorf("BlockScales of an e4m3 cache: %v", err)
	}
	if _, err := QuantizeBlock(KVE4M3, make([]float32, 32), make([]uint8, 32)); err == nil || !strings.Contains(err.Error(), "no block scales") {
		t.Errorf("QuantizeBlock e4m3: %v", err)
	}
	if _, err := QuantizeBlock(KVNVFP4, make([]float32, 32), make([]uint8, 32)); err == nil || !strings.Contains(err.Error(), "holds 16") {
		t.Errorf("QuantizeBlock of 32 nvfp4 values: %v", err)
	}
}

// same64 is equality with NaN equal to NaN.
func same64(a, b float64) bool { return a == b || (a != a && b != b) }
