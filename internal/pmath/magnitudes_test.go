package pmath

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// magnitudeCases are float32 values every magnitude test draws from: the
// boundaries of the bits' order (zeros, the smallest subnormal, the
// largest finite, ±Inf, quiet and signalling NaNs of both signs) and
// random bits.
func magnitudeCases(r *rand.Rand, n int) []float32 {
	specials := []uint32{0, 1 << 31, 1, 0x80000001, 0x007fffff, 0x00800000, 0x3f800000, 0xbf800000,
		0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0xffffffff}
	x := make([]float32, n)
	for i := range x {
		if r.IntN(4) == 0 {
			x[i] = math.Float32frombits(specials[r.IntN(len(specials))])
		} else {
			x[i] = math.Float32frombits(r.Uint32())
		}
	}
	return x
}

// countAbsAboveLoop is the definition: per element, its |x| compared as a
// float (NaN by its bits).
func countAbsAboveLoop(x []float32, t [4]uint32) [4]int {
	var c [4]int
	for _, y := range x {
		for k, v := range t {
			switch {
			case v > absInf: // a threshold among the NaNs' bits: the bits decide
				if math.Float32bits(y)&^(1<<31) > v {
					c[k]++
				}
			case math.IsNaN(float64(y)) || math.Abs(float64(y)) > float64(math.Float32frombits(v)):
				c[k]++
			}
		}
	}
	return c
}

func TestCountAbsAbove(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := range 70 {
		for range 20 {
			x := magnitudeCases(r, n)
			var th [4]uint32
			for k := range th {
				switch r.IntN(3) {
				case 0: // an element's own magnitude: the boundary
					if n > 0 {
						th[k] = math.Float32bits(x[r.IntN(n)]) &^ (1 << 31)
					}
				case 1:
					th[k] = []uint32{0, absInf, absInf - 1, 0x7fffffff, 0x3f800000}[r.IntN(5)]
				default:
					th[k] = r.Uint32() >> 1
				}
			}
			if got, want := CountAbsAbove(x, th), countAbsAboveLoop(x, th); got != want {
				t.Fatalf("n=%d thresholds %x: %v, want %v", n, th, got, want)
			}
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("a threshold of 2^31 did not panic")
		}
	}()
	CountAbsAbove([]float32{1}, [4]uint32{0, 0, 1 << 31, 0})
}

func FuzzMagnitudes(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x7f, 1, 0, 0xc0, 0xff}, uint32(0x3f800000), uint32(0x7f800000))
	f.Fuzz(func(t *testing.T, b []byte, t0, t1 uint32) {
		x := make([]float32, len(b)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		th := [4]uint32{t0 >> 1, t1 >> 1, absInf, 0}
		if got, want := CountAbsAbove(x, th), countAbsAboveLoop(x, th); got != want {
			t.Fatalf("thresholds %x: %v, want %v", th, got, want)
		}
	})
}

func BenchmarkMagnitudes(b *testing.B) {
	x := magnitudeCases(rand.New(rand.NewPCG(1, 2)), 1<<20)
	b.Run("CountAbsAbove", func(b *testing.B) {
		b.SetBytes(4 << 20)
		for b.Loop() {
			CountAbsAbove(x, [4]uint32{0x3f800000, absInf, 0x00800000, 0x01000000})
		}
	})
}
