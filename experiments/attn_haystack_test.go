package experiments

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/internal/pmath"
	"github.com/fp8lab/fp8lab/sim"
)

// haystackRef is attnNeedle.haystack's draw as it was written before the
// normals came in chunks (commit f924dda): element by element, k[i] then
// v[i], the band added per element.
func haystackRef(t attnNeedle, n int, rng *rand.Rand) (k, v []float32) {
	k, v = make([]float32, n*t.d), make([]float32, n*t.d)
	band := t.bandOffset()
	for i := range k {
		k[i] = float32(t.scoreStd * pmath.NormFloat64(rng))
		v[i] = float32(t.valueMean + float64(t.valueStd*pmath.NormFloat64(rng)))
		if band != nil {
			k[i] += band[i%t.d]
		}
	}
	return k, v
}

// TestHaystackMatchesElementwise checks the chunked haystack against the
// element-by-element draw, bit for bit, and that the generator is left at
// the same place: sizes that are and are not multiples of the chunk, with
// and without the band, from sim.TrialRand (a PCG) and from another source.
func TestHaystackMatchesElementwise(t *testing.T) {
	base := attnNeedle{d: 64, m: 8, margin: 6, scoreStd: 1.5, valueMean: 0.2, valueStd: 0.35, amp: 1, sinks: 1, sinkLogit: 5, sinkValue: 0.04}
	band := base
	band.kBand, band.kBandMean = 24, 8
	d128 := base
	d128.d, d128.kBand, d128.kBandMean = 128, 16, 2
	cases := []struct {
		name string
		t    attnNeedle
		n    int
	}{
		{"d64 n1", base, 1}, {"d64 n64", base, 64}, {"d64 n500", base, 500},
		{"band n500", band, 500}, {"band n1000", band, 1000},
		{"d128 band n4096", d128, 4096}, {"d128 band n333", d128, 333},
	}
	for _, c := range cases {
		for _, src := range []string{"pcg", "chacha8"} {
			mk := func() rand.Source {
				if src == "chacha8" {
					return rand.NewChaCha8([32]byte{byte(c.n), 7})
				}
				return sim.TrialSource(uint64(c.n), "test/haystack", 3)
			}
			r0, r1 := rand.New(mk()), mk()
			wk, wv := haystackRef(c.t, c.n, r0)
			h, err := c.t.haystack(context.Background(), c.n, r1, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := range wk {
				if math.Float32bits(h.k[i]) != math.Float32bits(wk[i]) || math.Float32bits(h.v[i]) != math.Float32bits(wv[i]) {
					t.Fatalf("%s, %s: element %d is k %v, v %v; element by element k %v, v %v", c.name, src, i, h.k[i], h.v[i], wk[i], wv[i])
				}
			}
			if a, b := r1.Uint64(), r0.Uint64(); a != b {
				t.Errorf("%s, %s: the generator gives %#x after the haystack, %#x after the element-by-element draw", c.name, src, a, b)
			}
		}
	}
}

// BenchmarkAttnHaystack draws one haystack of the default needle (128k
// tokens, head_dim 128: 2^24 elements of k and of v), without quantizing
// it.
func BenchmarkAttnHaystack(b *testing.B) {
	v, err := sim.ParseValues(Needle{}.Params(), map[string]string{"head_dim": "128"})
	if err != nil {
		b.Fatal(err)
	}
	tk := attnNeedleFromValues(v)
	const n = 128 << 10
	for i := 0; b.Loop(); i++ {
		if _, err := tk.haystack(context.Background(), n, sim.TrialSource(1, "bench/haystack", i), nil); err != nil {
			b.Fatal(err)
		}
	}
}
