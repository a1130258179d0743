package accum

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// ratDot is c + Σ a_k·b_k as an exact rational, independent of exactSum:
// the values come from Format.Value, the rounding from big.Rat.
func ratDot(in fp8.Format, a, b []uint16, c float32) *big.Rat {
	s := new(big.Rat).SetFloat64(float64(c))
	for i := range a {
		p := new(big.Rat).SetFloat64(in.Value(uint32(a[i])))
		s.Add(s, p.Mul(p, new(big.Rat).SetFloat64(in.Value(uint32(b[i])))))
	}
	return s
}

// TestExactSingleRounding: the "exact" baseline rounds the exact sum once
// to FP32. K = 342393 products 448·448 (2^36 + 2^23·… lands half-way
// between two floats) plus 2^-9·2^-9 is just above the half-way point:
// rounding first to float64 loses 2^-18 and then ties to even (0x51800014);
// one rounding gives 0x51800015.
func TestExactSingleRounding(t *testing.T) {
	e4m3 := fp8.FormatE4M3
	const K = 342393
	a := make([]uint16, K+1)
	for i := range K {
		a[i] = uint16(e4m3.Encode(448, fp8.NoSat))
	}
	a[K] = uint16(e4m3.Encode(0x1p-9, fp8.NoSat))
	for _, m := range []Model{MustLookup("exact")} {
		got := math.Float32bits(m.Dot(a, a, 0))
		if got != 0x51800015 {
			t.Errorf("%s: %#08x, want 0x51800015 (one rounding of the exact sum)", m.Name(), got)
		}
	}
	if got := math.Float32bits(ExactDot32(e4m3, a, a, 0)); got != 0x51800015 {
		t.Errorf("ExactDot32: %#08x, want 0x51800015", got)
	}
	if got, want := ExactDot(e4m3, a, a, 0), float64(K)*448*448+0x1p-18; got != want {
		t.Errorf("ExactDot: %v, want %v", got, want)
	}
}

// TestExactAgainstRat compares ExactDot32 and ExactDot with big.Rat's
// correctly rounded conversions on random vectors of every 8- and 16-bit
// input format, with a c that often sits near a rounding boundary.
func TestExactAgainstRat(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 11))
	for _, in := range []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatFP16, fp8.FormatBF16} {
		n := 0
		for trial := range 1000 {
			k := 1 + rng.IntN(64)
			a, b := make([]uint16, k), make([]uint16, k)
			finite := func() uint16 {
				for {
					x := uint16(rng.Uint32() & (1<<in.CodeBits() - 1))
					if cl := in.Decompose(uint32(x)).Class; cl == fp8.Finite || cl == fp8.Zero {
						return x
					}
				}
			}
			for i := range a {
				a[i], b[i] = finite(), finite()
			}
			var c float32
			switch trial % 3 {
			case 1: // c = minus the rounded sum: the result is the rounding error
				c = -float32(ExactDot(in, a, b, 0))
				if math.IsInf(float64(c), 0) {
					c = 0 // bf16 sums can pass the float32 range
				}
			case 2:
				c = math.Float32frombits(rng.Uint32()&^(0xff<<23) | uint32(rng.IntN(254)+1)<<23)
			}
			r := ratDot(in, a, b, c)
			want32, _ := r.Float32()
			want64, _ := r.Float64()
			if r.Sign() == 0 {
				want32, want64 = 0, 0 // +0
			}
			got32, got64 := ExactDot32(in, a, b, c), ExactDot(in, a, b, c)
			if math.Float32bits(got32) != math.Float32bits(want32) || math.Float64bits(got64) != math.Float64bits(want64) {
				t.Fatalf("%s %v·%v + %v: %v %v, want %v %v", in, a, b, c, got32, got64, want32, want64)
			}
			n++
		}
		t.Logf("%s: %d sums agree", in, n)
	}
}

// TestExactSpecials: NaN and infinities in c or the inputs give the IEEE
// result, never a panic (big.Float panics on NaN).
func TestExactSpecials(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	e4 := func(v float32) uint16 { return uint16(fp8.FormatE4M3.Encode(v, fp8.NoSat)) }
	e5 := func(v float32) uint16 { return uint16(fp8.FormatE5M2.Encode(v, fp8.NoSat)) }
	one4, one5 := []uint16{e4(1)}, []uint16{e5(1)}
	tests := []struct {
		name string
		in   fp8.Format
		a, b []uint16
		c    float32
		want float64 // NaN, ±Inf
	}{
		{"e4m3 NaN c", fp8.FormatE4M3, one4, one4, nan, math.NaN()},
		{"e4m3 +Inf c", fp8.FormatE4M3, one4, one4, inf, math.Inf(1)},
		{"e4m3 -Inf c", fp8.FormatE4M3, one4, one4, -inf, math.Inf(-1)},
		{"e4m3 NaN input", fp8.FormatE4M3, []uint16{0x7f}, one4, 1, math.NaN()},
		{"e5m2 NaN c", fp8.FormatE5M2, one5, one5, nan, math.NaN()},
		{"e5m2 Inf input", fp8.FormatE5M2, []uint16{e5(inf)}, one5, 1, math.Inf(1)},
		{"e5m2 -Inf input", fp8.FormatE5M2, []uint16{e5(-inf)}, one5, 1, math.Inf(-1)},
		{"e5m2 Inf input, -Inf c", fp8.FormatE5M2, []uint16{e5(inf)}, one5, -inf, math.NaN()},
		{"e5m2 Inf·0", fp8.FormatE5M2, []uint16{e5(inf)}, []uint16{0}, 1, math.NaN()},
		{"e5m2 Inf - Inf", fp8.FormatE5M2, []uint16{e5(inf), e5(-inf)}, []uint16{e5(1), e5(1)}, 0, math.NaN()},
	}
	exact := MustLookup("exact")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same := func(got float64) bool {
				return math.IsNaN(got) && math.IsNaN(tt.want) || got == tt.want
			}
			if got := ExactDot(tt.in, tt.a, tt.b, tt.c); !same(got) {
				t.Errorf("ExactDot = %v, want %v", got, tt.want)
			}
			if got := ExactDot32(tt.in, tt.a, tt.b, tt.c); !same(float64(got)) {
				t.Errorf("ExactDot32 = %v, want %v", got, tt.want)
			}
			if tt.in == fp8.FormatE4M3 {
				if got := exact.Dot(tt.a, tt.b, tt.c); !same(float64(got)) {
					t.Errorf("exact.Dot = %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// TestDotLengths: every model, Chain and ExactDot panic (the documented
// contract) when len(b) != len(a), and accept equal lengths.
func TestDotLengths(t *testing.T) {
	panics := func(f func()) (p bool) {
		defer func() { p = recover() != nil }()
		f()
		return false
	}
	a := make([]uint16, 40)
	for _, m := range Models() {
		for _, nb := range []int{39, 41, 80} {
			b := make([]uint16, nb)
			if !panics(func() { m.Dot(a, b, 0) }) {
				t.Errorf("%s: Dot of %d and %d elements did not panic", m.Name(), len(a), nb)
			}
			if !panics(func() { Chain(m, a, b, 0, 32) }) {
				t.Errorf("%s: Chain of %d and %d elements did not panic", m.Name(), len(a), nb)
			}
		}
		if panics(func() { m.Dot(a, make([]uint16, 40), 0) }) {
			t.Errorf("%s: Dot of equal lengths panicked", m.Name())
		}
	}
	for _, nb := range []int{0, 41} {
		if !panics(func() { ExactDot(fp8.FormatE4M3, a, make([]uint16, nb), 0) }) {
			t.Errorf("ExactDot of 40 and %d elements did not panic", nb)
		}
	}
}
