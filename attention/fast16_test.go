package attention

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// The 16-bit fast path gives accum's bits, for every 16-bit T-FDPA model,
// on inputs of many kinds: normal, wide exponent ranges, subnormals,
// zeros of both signs, exact cancellation, NaN and inf, and chains.
func TestFast16(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var models []accum.Model
	for _, m := range accum.Models() {
		if f := withFastPath(m); f != m {
			models = append(models, m)
		}
	}
	if len(models) < 4 {
		t.Fatalf("only %d models take the fast path", len(models))
	}
	enc := func(f fp8.Format, x float32) uint16 { return uint16(f.Encode(x, fp8.SatFinite)) }
	gen := []struct {
		name string
		x    func(f fp8.Format) uint16
	}{
		{"normal", func(f fp8.Format) uint16 { return enc(f, float32(r.NormFloat64())) }},
		{"wide", func(f fp8.Format) uint16 {
			return enc(f, float32(math.Ldexp(r.NormFloat64(), r.IntN(60)-30)))
		}},
		{"any code", func(f fp8.Format) uint16 { return uint16(r.Uint32()) }},
		{"below e_zero", func(f fp8.Format) uint16 { // bf16 products under 2^-133, next to zeros
			if r.IntN(4) == 0 {
				return 0
			}
			return enc(f, float32(math.Ldexp(r.NormFloat64(), -62-r.IntN(16))))
		}},
		{"tiny", func(f fp8.Format) uint16 { return uint16(r.IntN(8)) | uint16(r.IntN(2))<<15 }},
		{"sparse", func(f fp8.Format) uint16 {
			if r.IntN(3) > 0 {
				return uint16(r.IntN(2)) << 15
			}
			return enc(f, float32(r.NormFloat64()))
		}},
	}
	for _, m := range models {
		fast := withFastPath(m)
		f := m.Info().In
		for _, g := range gen {
			for trial := 0; trial < 3000; trial++ {
				n := 1 + r.IntN(80)
				a, b := make([]uint16, n), make([]uint16, n)
				for i := range a {
					a[i], b[i] = g.x(f), g.x(f)
				}
				if trial%7 == 0 { // exact cancellation
					copy(b[n/2:], b[:n/2])
					for i := 0; i < n/2; i++ {
						a[n/2+i] = a[i] ^ 0x8000
					}
				}
				var c float32
				switch trial % 5 {
				case 1:
					c = float32(r.NormFloat64() * 100)
				case 2:
					c = math.Float32frombits(r.Uint32())
				case 3:
					c = float32(math.Copysign(0, -1))
				}
				want, got := m.Dot(a, b, c), fast.Dot(a, b, c)
				if math.Float32bits(want) != math.Float32bits(got) && !(want != want && got != got && math.Float32bits(want) == math.Float32bits(got)) {
					t.Fatalf("%s %s: Dot(%x, %x, %v) = %v (%#x), accum gives %v (%#x)", m.Name(), g.name, a, b, c, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}
