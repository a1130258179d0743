package pmath

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// expsCases returns Exp's arguments that the batch exp must match: random
// arguments over the whole range and random bit patterns, and every branch
// boundary with its neighbours: NaN, ±Inf, ±0, Exp's cut-offs 710 and
// −745.13…, ±2^-54, the fast path's ±708, the points where k changes
// ((k ± ½)·ln 2 for every k of a finite result), and subnormal results.
func expsCases() []float64 {
	around := func(x float64) []float64 {
		lo, hi := x, x
		out := []float64{x}
		for range 3 {
			lo, hi = math.Nextafter(lo, math.Inf(-1)), math.Nextafter(hi, math.Inf(1))
			out = append(out, lo, hi)
		}
		return out
	}
	var x []float64
	for _, b := range []float64{math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 710, -710, 709.782712893384, -745.1332191019412,
		0x1p-54, -0x1p-54, 708, -708, 1, -1, 0.5, -0.5, 0x1p-1074, -0x1p-1074, math.MaxFloat64, -math.MaxFloat64, -708.3964185322641, -744.44007192138122} {
		x = append(x, around(b)...)
	}
	x = append(x, math.NaN(), math.Float64frombits(0x7ff8000000000001), math.Float64frombits(0xfff0000000000001))
	for k := -1076; k <= 1025; k++ {
		x = append(x, around((float64(k)+0.5)*ln2)...)
		x = append(x, around((float64(k)-0.5)*ln2)...)
	}
	r := rand.New(rand.NewPCG(7, 8))
	for range 1 << 16 {
		x = append(x, r.Float64()*1500-750)
	}
	for range 1 << 14 {
		x = append(x, r.Float64()*40-745) // subnormal and near-subnormal results
		x = append(x, math.Float64frombits(r.Uint64()))
		x = append(x, math.Ldexp(r.Float64()-0.5, -r.IntN(70))) // small |x|
	}
	return x
}

// expsPaths are the batch exp's paths: Exps (the AVX2 blocks where the
// CPU has them) and the pure-Go chains that other builds run.
var expsPaths = []struct {
	name string
	f    func(dst, x []float64)
}{{"Exps", Exps}, {"exps4", exps4}}

func sameBits(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || a != a && b != b
}

// TestExpsEqualsExp checks every path of the batch exp against Exp bit
// for bit (NaN as NaN), on expsCases in several orders, so that special
// elements fall at every position of a block and of the tail, and in
// place.
func TestExpsEqualsExp(t *testing.T) {
	x := expsCases()
	r := rand.New(rand.NewPCG(9, 10))
	shuffled := append([]float64(nil), x...)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	// Mostly fast-path arguments, a special one now and then.
	sparse := make([]float64, 1<<14)
	for i := range sparse {
		sparse[i] = -r.Float64() * 30
		if r.IntN(40) == 0 {
			sparse[i] = x[r.IntN(len(x))]
		}
	}
	t.Logf("AVX2 exp: %v", haveExpAsm)
	for _, p := range expsPaths {
		for _, in := range [][]float64{x, shuffled, sparse} {
			for _, off := range []int{0, 1, 3, 5, 15} { // lengths and block alignments
				src := in[off:]
				got := make([]float64, len(src))
				p.f(got, src)
				inPlace := append([]float64(nil), src...)
				p.f(inPlace, inPlace)
				bad := 0
				for i, v := range src {
					want := Exp(v)
					if !sameBits(got[i], want) || !sameBits(inPlace[i], want) {
						if bad++; bad <= 5 {
							t.Errorf("%s: x = %v (%#x): got %v, in place %v, Exp %v", p.name, v, math.Float64bits(v), got[i], inPlace[i], want)
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d differ", p.name, bad, len(src))
				}
			}
		}
	}
}

// TestExpsShort checks the lengths below one block and one vector, and
// that a dst shorter than x panics.
func TestExpsShort(t *testing.T) {
	for n := 0; n <= 2*expBlock+1; n++ {
		x := make([]float64, n)
		for i := range x {
			x[i] = -float64(i) * 0.37
		}
		for _, p := range expsPaths {
			got := make([]float64, n)
			p.f(got, x)
			for i, v := range x {
				if !sameBits(got[i], Exp(v)) {
					t.Errorf("%s, n %d: Exp(%v) = %v, want %v", p.name, n, v, got[i], Exp(v))
				}
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Exps with a short dst did not panic")
		}
	}()
	Exps(make([]float64, 3), make([]float64, 4))
}

// FuzzExps checks the batch exp against Exp on 16-float64 vectors made of
// the fuzzer's bytes (one full block and a tail).
func FuzzExps(f *testing.F) {
	seed := make([]byte, 8*(expBlock+3))
	for i := range expBlock + 3 {
		binary.LittleEndian.PutUint64(seed[8*i:], math.Float64bits(-float64(i)*1.7))
	}
	f.Add(seed)
	binary.LittleEndian.PutUint64(seed[40:], math.Float64bits(math.NaN()))
	f.Add(seed)
	f.Fuzz(func(t *testing.T, b []byte) {
		x := make([]float64, len(b)/8)
		for i := range x {
			x[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		for _, p := range expsPaths {
			got := make([]float64, len(x))
			p.f(got, x)
			for i, v := range x {
				if !sameBits(got[i], Exp(v)) {
					t.Fatalf("%s: Exp(%v) (%#x) = %v, want %v", p.name, v, math.Float64bits(v), got[i], Exp(v))
				}
			}
		}
	})
}

// expsBenchArgs are the arguments of a softmax over 128k keys: s − max
// with scores ~N(0, 1).
func expsBenchArgs() []float64 {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float64, 128<<10)
	for i := range x {
		x[i] = r.NormFloat64() - 4.5
	}
	return x
}

// BenchmarkExps is Exp over the 128k arguments of one softmax: one call a
// value (Exp), the batch (Exps: AVX2 where the CPU has it) and its
// pure-Go chains (exps4); ns/op is per 128k values.
func BenchmarkExps(b *testing.B) {
	x := expsBenchArgs()
	dst := make([]float64, len(x))
	b.Run("Exp", func(b *testing.B) {
		for b.Loop() {
			for i, v := range x {
				dst[i] = Exp(v)
			}
		}
	})
	for _, p := range expsPaths {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				p.f(dst, x)
			}
		})
	}
}
