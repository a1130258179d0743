package accum

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// randC draws an accumulator over a wide range, with zeros, signed zeros,
// subnormals and (when specials) infinities and NaN.
func randC(r *rand.Rand, specials bool) float32 {
	switch r.IntN(20) {
	case 0:
		return 0
	case 1:
		return float32(math.Copysign(0, -1))
	case 2:
		return math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
	case 3:
		if specials {
			return float32(math.Inf(1 - 2*r.IntN(2)))
		}
	case 4:
		if specials {
			return float32(math.NaN())
		}
	}
	return float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
}

// TestFastPathMatchesReference checks the table-driven FP8 step against the
// reference Params.Step on random codes (every code, specials included).
func TestFastPathMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"sm90.wgmma.e4m3.f32", "sm90.wgmma.e5m2.f32", "sm100.tcgen05.f8f6f4.f32", "sm89.mma.sync.e4m3.f32"} {
		m := MustLookup(name).(*tfdpa)
		p := m.info.Step
		for n := 0; n < 20000; n++ {
			L := p.L
			if n%7 == 0 {
				L = 1 + r.IntN(p.L)
			}
			a, b := make([]uint16, L), make([]uint16, L)
			a32, b32 := make([]uint32, L), make([]uint32, L)
			specials := n%10 == 0
			for i := range a {
				a[i], b[i] = uint16(r.IntN(256)), uint16(r.IntN(256))
				if !specials {
					for fp8.FormatE5M2.Decompose(uint32(a[i])).Class >= fp8.Inf && p.In == fp8.FormatE5M2 || p.In == fp8.FormatE4M3 && a[i]&0x7f == 0x7f {
						a[i] = uint16(r.IntN(256))
					}
					for fp8.FormatE5M2.Decompose(uint32(b[i])).Class >= fp8.Inf && p.In == fp8.FormatE5M2 || p.In == fp8.FormatE4M3 && b[i]&0x7f == 0x7f {
						b[i] = uint16(r.IntN(256))
					}
				}
				if r.IntN(10) == 0 {
					a[i] &= 0x80
				}
				a32[i], b32[i] = uint32(a[i]), uint32(b[i])
			}
			c := randC(r, specials)
			want := p.Step(a32, b32, math.Float32bits(c))
			got := math.Float32bits(m.step(a, b, c))
			if got != want && !(want == NaN32 && math.IsNaN(float64(math.Float32frombits(got)))) {
				t.Fatalf("%s: a=%02x b=%02x c=%08x: fast %08x, reference %08x", name, a, b, math.Float32bits(c), got, want)
			}
		}
	}
}

// TestMMASyncFastMatchesReference checks the FP16-emulation fast path of
// sm90.mma.sync.e4m3.f32 against the reference step on FP16 codes.
func TestMMASyncFastMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m := MustLookup("sm90.mma.sync.e4m3.f32").(*mmaSyncEmu)
	for n := 0; n < 20000; n++ {
		a, b := make([]uint16, 16), make([]uint16, 16)
		a16, b16 := make([]uint32, 16), make([]uint32, 16)
		for i := range a {
			a[i], b[i] = uint16(r.IntN(256)), uint16(r.IntN(256))
			if n%10 != 0 {
				a[i] &^= uint16(a[i]&0x7f) & 0x01 // keep most codes, some NaN survive only in the special batch
				if a[i]&0x7f == 0x7f {
					a[i] = 0x7e
				}
				if b[i]&0x7f == 0x7f {
					b[i] = 0x7e
				}
			}
			a16[i] = uint32(fp8.FP16FromFloat32(fp8.E4M3(a[i]).Float32()))
			b16[i] = uint32(fp8.FP16FromFloat32(fp8.E4M3(b[i]).Float32()))
		}
		c := randC(r, false)
		got, ok := m.fast.step(a, b, c)
		want := m.ref.Step(a16, b16, math.Float32bits(c))
		if !ok {
			if want != NaN32 {
				t.Fatalf("fast path refused finite inputs a=%02x b=%02x", a, b)
			}
			continue
		}
		if math.Float32bits(got) != want {
			t.Fatalf("a=%02x b=%02x c=%08x: fast %08x, reference %08x", a, b, math.Float32bits(c), math.Float32bits(got), want)
		}
	}
}

// TestChainPromotion checks Chain's promotion against a hand-written loop.
func TestChainPromotion(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m := MustLookup("sm90.wgmma.e4m3.f32").(*tfdpa)
	K := 1000
	a, b := make([]uint16, K), make([]uint16, K)
	for i := range a {
		a[i] = uint16(fp8.EncodeE4M3(float32(r.Float64()*10), fp8.SatFinite))
		b[i] = uint16(fp8.EncodeE4M3(float32(r.NormFloat64()), fp8.SatFinite))
	}
	for _, promote := range []int{0, 32, 128, 96, 4096} {
		var want float32
		if promote == 0 || promote >= K {
			for i := 0; i < K; i += 32 {
				want = m.step(a[i:min(i+32, K)], b[i:min(i+32, K)], want)
			}
		} else {
			for i := 0; i < K; i += promote {
				var t32 float32
				for j := i; j < min(i+promote, K); j += 32 {
					e := min(j+32, i+promote, K)
					t32 = m.step(a[j:e], b[j:e], t32)
				}
				want += t32
			}
		}
		if got := Chain(m, a, b, 0, promote); got != want {
			t.Errorf("promote %d: got %v want %v", promote, got, want)
		}
	}
	if err := CheckPromotion(m, 48); err == nil {
		t.Error("CheckPromotion accepted 48 for K = 32")
	}
	if err := CheckPromotion(m, 64); err != nil {
		t.Error(err)
	}
}

func TestFMA32(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 200000; i++ {
		a := math.Float32frombits(r.Uint32())
		b := math.Float32frombits(r.Uint32())
		c := math.Float32frombits(r.Uint32())
		got := FMA32(a, b, c)
		// Reference: math.FMA in float64 is exact for a*b; compare
		// against big-free reasoning: fma64 then check that rounding
		// the exact value gives got via the nextafter bracket.
		want := fmaRef(a, b, c)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("FMA32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
}

// fmaRef computes a*b+c exactly with math/big and rounds once to float32.
func fmaRef(a, b, c float32) float32 {
	for _, x := range []float32{a, b, c} {
		if math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
			return float32(math.FMA(float64(a), float64(b), float64(c)))
		}
	}
	x := new(big.Float).SetPrec(400).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(400).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(400).SetFloat64(float64(c)))
	f, _ := x.Float32()
	if x.Sign() == 0 {
		return float32(math.FMA(float64(a), float64(b), float64(c)))
	}
	return f
}

// TestTableStepAllModels checks the fast path of every T-FDPA model that has
// one (8- and 16-bit inputs) against the reference Params.Step, on inputs of
// many kinds: normal, wide exponent ranges, any code (specials included),
// products below e_zero beside zeros, subnormals, sparse vectors, exact
// cancellation, and accumulators of every kind.
func TestTableStepAllModels(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var models []*tfdpa
	for _, m := range Models() {
		if tm, ok := m.(*tfdpa); ok && tm.fast != nil {
			models = append(models, tm)
		}
	}
	if len(models) < 9 {
		t.Fatalf("only %d models take the fast path", len(models))
	}
	gen := []struct {
		name string
		x    func(f fp8.Format) uint16
	}{
		{"normal", func(f fp8.Format) uint16 { return uint16(f.Encode(float32(r.NormFloat64()), fp8.SatFinite)) }},
		{"wide", func(f fp8.Format) uint16 {
			return uint16(f.Encode(float32(math.Ldexp(r.NormFloat64(), r.IntN(60)-30)), fp8.SatFinite))
		}},
		{"any code", func(f fp8.Format) uint16 { return uint16(r.Uint32() & (1<<f.CodeBits() - 1)) }},
		{"below e_zero", func(f fp8.Format) uint16 {
			if r.IntN(4) == 0 {
				return 0
			}
			return uint16(f.Encode(float32(math.Ldexp(r.NormFloat64(), -62-r.IntN(16))), fp8.SatFinite))
		}},
		{"tiny", func(f fp8.Format) uint16 { return uint16(r.IntN(8)) | uint16(r.IntN(2))<<(f.CodeBits()-1) }},
		{"sparse", func(f fp8.Format) uint16 {
			if r.IntN(3) > 0 {
				return uint16(r.IntN(2)) << (f.CodeBits() - 1)
			}
			return uint16(f.Encode(float32(r.NormFloat64()), fp8.SatFinite))
		}},
	}
	for _, m := range models {
		p := m.info.Step
		sign := uint16(1) << (p.In.CodeBits() - 1)
		for _, g := range gen {
			for trial := 0; trial < 1500; trial++ {
				n := 1 + r.IntN(p.L)
				a, b := make([]uint16, n), make([]uint16, n)
				a32, b32 := make([]uint32, n), make([]uint32, n)
				for i := range a {
					a[i], b[i] = g.x(p.In), g.x(p.In)
				}
				if trial%7 == 0 { // exact cancellation
					copy(b[n/2:], b[:n/2])
					for i := 0; i < n/2; i++ {
						a[n/2+i] = a[i] ^ sign
					}
				}
				for i := range a {
					a32[i], b32[i] = uint32(a[i]), uint32(b[i])
				}
				var c float32
				switch trial % 5 {
				case 1:
					c = float32(r.NormFloat64() * 100)
				case 2:
					c = math.Float32frombits(r.Uint32())
				case 3:
					c = float32(math.Copysign(0, -1))
				case 4:
					c = randC(r, true)
				}
				want := p.Step(a32, b32, math.Float32bits(c))
				got := math.Float32bits(m.step(a, b, c))
				if got != want && !(want == NaN32 && math.IsNaN(float64(math.Float32frombits(got)))) {
					t.Fatalf("%s %s: a=%x b=%x c=%08x: fast %08x, reference %08x", m.Name(), g.name, a, b, math.Float32bits(c), got, want)
				}
			}
		}
	}
}

// TestMMASyncDotEqualsSteps: the emulated mma.sync models' Dot, whose whole
// instructions take the assembly chain kernel where the CPU runs it, gives
// the bits of Step chained instruction by instruction, on chains of every
// length up to seven instructions with NaN, inf, zero and subnormal codes
// and accumulators of every kind.
func TestMMASyncDotEqualsSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 7))
	for _, name := range []string{"sm90.mma.sync.e4m3.f32", "sm90.mma.sync.e5m2.f32", "sm100.mma.sync.e4m3.f32", "sm90.mma.sync.e4m3.f16"} {
		m := MustLookup(name).(*mmaSyncEmu)
		for trial := 0; trial < 3000; trial++ {
			n := r.IntN(7*32 + 1)
			if trial%2 == 0 {
				n -= n % 32
			}
			a, b := stepCodes(r, m.in, trial%5, n)
			c := randC(r, trial%7 == 0)
			got := m.Dot(a, b, c)
			want := c
			for i := 0; i < n; i += 32 {
				j := min(i+32, n)
				want = m.Step(a[i:j], b[i:j], want)
			}
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("%s n=%d c=%08x: Dot %08x, Step by Step %08x\na=%x\nb=%x", name, n, math.Float32bits(c), math.Float32bits(got), math.Float32bits(want), a, b)
			}
		}
	}
}
