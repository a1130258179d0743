package accum

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// peerBenchInputs returns K operand codes of formats fa and fb drawn from
// N(0,1) (rounded to the format; FP4 also N(0,1)·2), and one ue8m0/ue4m3
// scale per block as an MX/NVFP4 quantizer would pick them.
func peerBenchInputs(fa, fb string, K int, seed uint64) (a, b []uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	enc := func(f string) uint64 {
		x := r.NormFloat64()
		switch f {
		case "f64":
			return math.Float64bits(x)
		case "f32", "tf32":
			return uint64(math.Float32bits(float32(x)))
		case "e2m1":
			// nearest e2m1 value of 2x
			v := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
			best, ax := 0, math.Abs(2*x)
			for i := range v {
				if math.Abs(v[i]-ax) < math.Abs(v[best]-ax) {
					best = i
				}
			}
			c := uint64(best)
			if x < 0 {
				c |= 8
			}
			return c
		}
		// the nearest finite code (the new formats' encoders are not
		// needed for a benchmark input)
		ff := mustFormat(f)
		if ff.CodeBits() > 8 {
			return uint64(ff.Encode(float32(x), fp8.SatFinite))
		}
		best, bd := uint64(0), math.Inf(1)
		for c := range 1 << ff.CodeBits() {
			v := ff.Value(uint32(c))
			if d := math.Abs(v - x); d < bd {
				best, bd = uint64(c), d
			}
		}
		return best
	}
	a, b = make([]uint64, K), make([]uint64, K)
	for i := range a {
		a[i], b[i] = enc(fa), enc(fb)
	}
	return
}

// BenchmarkPeerChain runs one output element of a K = 65536 chain of each
// instruction on one core (operands in their natural width, through
// ChainCodes) and reports products per second of wall time and of the
// thread's CPU time. BenchmarkChain/sm100.tcgen05.f8f6f4.f32 is the same
// measurement for the FP8 T-FDPA fast path, for scale.
func BenchmarkPeerChain(b *testing.B) {
	const K = 1 << 16
	{
		// the FP8 T-FDPA fast path, on the same inputs, for scale
		m := MustLookup("sm100.tcgen05.f8f6f4.f32")
		a, bb := peerBenchInputs("e4m3", "e4m3", K, 1)
		x, y := narrow[uint16](a), narrow[uint16](bb)
		b.Run("T-FDPA:sm100.tcgen05.f8f6f4.f32", func(b *testing.B) {
			lockThread()
			defer unlockThread()
			cpu0 := threadCPU()
			for b.Loop() {
				sink = m.Dot(x, y, 0)
			}
			b.ReportMetric(float64(K)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
			if cpu := threadCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(K)*float64(b.N)/cpu.Seconds(), "products/cpu-s")
			}
		})
	}
	for _, name := range []string{
		"sm100.tcgen05.f8f6f4.e4m3.e4m3.f32", "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", "sm120.mma.sync.mxf8f6f4.e5m2.e2m1.f32",
		"sm100.tcgen05.mxf4nvf4.ue4m3.f32", "sm100.tcgen05.mxf4.f32",
		"sm80.mma.sync.tf32.f32", "sm90.wgmma.tf32.f32", "sm100.tcgen05.tf32.f32",
		"cdna3.mfma.f32.f32", "cdna2.mfma.f64.f64", "cdna1.mfma.f16.f32", "cdna2.mfma.bf16.f32",
		"cdna3.mfma.f16.f32", "cdna3.mfma.xf32.f32", "cdna3.mfma.fp8.bf8.f32",
	} {
		m, err := LookupInstruction(name)
		if err != nil {
			b.Fatal(err)
		}
		in := m.Info()
		b.Run(name, func(b *testing.B) {
			a, bb := peerBenchInputs(in.A, in.B, K, 1)
			var sa, sb []uint8
			if in.Scale != "" {
				sa, sb = make([]uint8, K/in.Block), make([]uint8, K/in.Block)
				for i := range sa {
					sa[i], sb[i] = 127, 126
					if in.Scale == "ue4m3" {
						sa[i], sb[i] = 0x38, 0x3a
					}
				}
			}
			var run func() (uint64, error)
			switch codeBits[in.A] {
			case 4, 6, 8:
				x, y := narrow[uint8](a), narrow[uint8](bb)
				run = func() (uint64, error) { return ChainCodes(m, x, y, sa, sb, 0, 0) }
			case 16:
				x, y := narrow[uint16](a), narrow[uint16](bb)
				run = func() (uint64, error) { return ChainCodes(m, x, y, sa, sb, 0, 0) }
			case 32:
				x, y := narrow[uint32](a), narrow[uint32](bb)
				run = func() (uint64, error) { return ChainCodes(m, x, y, sa, sb, 0, 0) }
			default:
				run = func() (uint64, error) { return ChainCodes(m, a, bb, sa, sb, 0, 0) }
			}
			b.ReportAllocs()
			lockThread()
			defer unlockThread()
			cpu0 := threadCPU()
			for b.Loop() {
				if _, err := run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(K)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
			// On a shared machine wall time counts other processes' time
			// too: products per second of this thread's CPU time (Linux).
			if cpu := threadCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(K)*float64(b.N)/cpu.Seconds(), "products/cpu-s")
			}
		})
	}
}

func narrow[T Code](x []uint64) []T {
	out := make([]T, len(x))
	for i, v := range x {
		out[i] = T(v)
	}
	return out
}
