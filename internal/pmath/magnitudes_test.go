package pmath

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
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

// TestCountAbsAboveRows: the counts of a matrix's rows (strides wider than
// a row, rows of lengths that are and are not multiples of four, one row,
// none) equal CountAbsAbove row by row summed, and the definition; bad
// arguments panic. Under node (TestWasmKernels) this is the kernel's rows.
func TestCountAbsAboveRows(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, sh := range []struct{ rows, cols, stride int }{{0, 5, 5}, {1, 300, 300}, {17, 128, 640}, {9, 131, 131}, {40, 7, 9}, {3, 1000, 1003}} {
		x := magnitudeCases(r, max(1, (sh.rows-1)*sh.stride+sh.cols))
		th := [4]uint32{0, absInf, uint32(r.Uint32() >> 1), math.Float32bits(x[r.IntN(len(x))]) &^ (1 << 31)}
		var want [4]int
		for row := range sh.rows {
			d := countAbsAboveLoop(x[row*sh.stride:][:sh.cols], th)
			for k := range want {
				want[k] += d[k]
			}
		}
		if got := CountAbsAboveRows(x, sh.stride, sh.rows, sh.cols, th); got != want {
			t.Fatalf("%d rows of %d, stride %d: %v, the definition %v", sh.rows, sh.cols, sh.stride, got, want)
		}
	}
	for _, c := range []struct {
		name                  string
		n, stride, rows, cols int
		th                    uint32
		want                  string
	}{
		{"short", 100, 10, 10, 11, 0, "reads x[:101] of 100"},
		{"negative", 100, -1, 2, 2, 0, "negative size or stride"},
		{"threshold", 100, 10, 2, 2, 1 << 31, "threshold of 2^31"},
	} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), c.want) {
					t.Errorf("%s: panic %v, want %q", c.name, p, c.want)
				}
			}()
			CountAbsAboveRows(make([]float32, c.n), c.stride, c.rows, c.cols, [4]uint32{c.th})
		}()
	}
}
