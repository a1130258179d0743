package accum

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/internal/cputime"
)

// DotRows gives Dot's bits for every model (fast path, reference fallback
// on specials, baselines), on random codes with NaN/inf/zeros mixed in and
// random accumulators.
func TestDotRowsEqualsDot(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, m := range Models() {
		mask := uint16(1<<m.Info().In.CodeBits() - 1)
		if m.Info().In.CodeBits() > 16 {
			continue
		}
		for _, n := range []int{16, 96, 128, 576} {
			const rows, stride = 9, 600
			a := make([]uint16, n)
			b := make([]uint16, rows*stride)
			for i := range a {
				a[i] = uint16(r.Uint32()) & mask
			}
			for i := range b {
				b[i] = uint16(r.Uint32()) & mask
				if r.IntN(4) == 0 {
					b[i] = 0
				}
			}
			c := make([]float32, rows)
			for i := range c {
				c[i] = float32(r.NormFloat64() * math.Exp2(float64(r.IntN(40)-20)))
			}
			c[3] = float32(math.Inf(1))
			c[4] = 0
			for _, cc := range [][]float32{c, nil} {
				out := make([]float32, rows)
				DotRows(m, a, b, stride, cc, out)
				// DotRowsMulti with three accumulators: cc, zeros, cc halved.
				half := make([]float32, rows)
				for i := range half {
					if cc != nil {
						half[i] = cc[i] / 2
					}
				}
				for _, goOnly := range []bool{false, true} {
					outs := [][]float32{make([]float32, rows), make([]float32, rows), make([]float32, rows)}
					multiGoOnly = goOnly // true: the shared-products Go path, where the kernel would run
					DotRowsMulti(m, a, b, stride, [][]float32{cc, nil, half}, outs)
					multiGoOnly = false
					for row := range out {
						for j, c0 := range []float32{0, 0, half[row]} {
							if j == 0 && cc != nil {
								c0 = cc[row]
							}
							want := m.Dot(a, b[row*stride:][:n], c0)
							if got := outs[j][row]; math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
								t.Fatalf("%s n %d row %d acc %d (Go path %v): DotRowsMulti %g, Dot %g", m.Name(), n, row, j, goOnly, got, want)
							}
						}
					}
				}
				for row := range out {
					var c0 float32
					if cc != nil {
						c0 = cc[row]
					}
					want := m.Dot(a, b[row*stride:][:n], c0)
					if math.Float32bits(out[row]) != math.Float32bits(want) && !(out[row] != out[row] && want != want) {
						t.Fatalf("%s n %d row %d: DotRows %g (%#x), Dot %g (%#x)", m.Name(), n, row, out[row], math.Float32bits(out[row]), want, math.Float32bits(want))
					}
				}
			}
		}
	}
}

// BenchmarkDotRows: attention's QK (one query of 128 against keys) and PV
// (one row of P of 96 against 128 columns of V) inner loops, e4m3 wgmma,
// per row through Dot and through DotRows.
func BenchmarkDotRows(b *testing.B) {
	m := MustLookup("sm90.wgmma.e4m3.f32")
	r := rand.New(rand.NewPCG(1, 1))
	for _, sh := range []struct {
		name      string
		n, stride int
	}{{"qk128", 128, 128}, {"pv96", 96, 4096}} {
		const rows = 128
		a := make([]uint16, sh.n)
		bb := make([]uint16, rows*sh.stride)
		for i := range a {
			a[i] = uint16(r.IntN(0x7e))
		}
		for i := range bb {
			bb[i] = uint16(r.IntN(0x7e)) | uint16(r.IntN(2))<<7
		}
		out := make([]float32, rows)
		b.Run(sh.name+"/Dot", func(b *testing.B) {
			cpu := cputime.Start()
			for b.Loop() {
				for row := range out {
					out[row] = m.Dot(a, bb[row*sh.stride:][:sh.n], 0)
				}
			}
			cpu.Report(b, float64(rows*sh.n))
		})
		outs := [][]float32{make([]float32, rows), make([]float32, rows)}
		c := make([]float32, rows)
		for i := range c {
			c[i] = 100
		}
		b.Run(sh.name+"/2xDotRows", func(b *testing.B) {
			cpu := cputime.Start()
			for b.Loop() {
				DotRows(m, a, bb, sh.stride, c, outs[0])
				DotRows(m, a, bb, sh.stride, nil, outs[1])
			}
			cpu.Report(b, float64(2*rows*sh.n))
		})
		b.Run(sh.name+"/DotRowsMulti2", func(b *testing.B) {
			cpu := cputime.Start()
			for b.Loop() {
				DotRowsMulti(m, a, bb, sh.stride, [][]float32{c, nil}, outs)
			}
			cpu.Report(b, float64(2*rows*sh.n))
		})
		b.Run(sh.name+"/DotRows", func(b *testing.B) {
			cpu := cputime.Start()
			for b.Loop() {
				DotRows(m, a, bb, sh.stride, nil, out)
			}
			cpu.Report(b, float64(rows*sh.n))
		})
	}
}
