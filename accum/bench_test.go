package accum

import (
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/internal/cputime"
)

// pvInputs returns a P·V-like pair of e4m3 vectors: softmax-like weights
// scaled into e4m3, and N(0,1) values.
func pvInputs(k int, seed uint64) (a, b []uint16) {
	r := rand.New(rand.NewPCG(seed, 99))
	a, b = make([]uint16, k), make([]uint16, k)
	for i := range a {
		a[i] = uint16(fp8.EncodeE4M3(float32(256*r.ExpFloat64()/8), fp8.SatFinite))
		b[i] = uint16(fp8.EncodeE4M3(float32(r.NormFloat64()), fp8.SatFinite))
	}
	return
}

var sink float32

// BenchmarkChain runs one long chain (K = 65536) per iteration on one core
// and reports FP8 products per second.
func BenchmarkChain(b *testing.B) {
	const K = 1 << 16
	x, y := pvInputs(K, 1)
	for _, name := range []string{"sm90.wgmma.e4m3.f32", "sm90.mma.sync.e4m3.f32", "sm100.tcgen05.f8f6f4.f32", "sm89.mma.sync.e4m3.f32", "fp32", "exact"} {
		m := MustLookup(name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = m.Dot(x, y, 0)
			}
			b.ReportMetric(float64(K)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}

// BenchmarkChainImpl is BenchmarkChain for the models of the table step
// through the assembly kernels, their table entries fetched by gathers
// (impl=gathers) and by scalar loads (impl=loads, the default:
// scalarLoads), and through the pure-Go step
// (impl=purego), in one run, for the A/B ratios; it reports products per
// second of wall time and of the thread's CPU time (less disturbed by
// other tenants of a shared machine).
func BenchmarkChainImpl(b *testing.B) {
	const K = 1 << 16
	x, y := pvInputs(K, 1)
	for _, name := range []string{"sm90.wgmma.e4m3.f32", "sm100.tcgen05.f8f6f4.f32", "sm89.mma.sync.e4m3.f32", "sm90.wgmma.f16.f32"} {
		m := MustLookup(name).(*tfdpa)
		pure := *m
		fast := *m.fast
		fast.ent = nil
		pure.fast = &fast
		for _, impl := range []struct {
			name  string
			m     Model
			loads bool
		}{{"gathers", m, false}, {"loads", m, true}, {"purego", &pure, false}} {
			if impl.m == Model(m) && m.fast.ent == nil {
				continue // no assembly step on this build
			}
			b.Run(name+"/impl="+impl.name, func(b *testing.B) {
				def := scalarLoads
				defer func() { scalarLoads = def }()
				scalarLoads = impl.loads
				cpu := cputime.Start()
				for b.Loop() {
					sink = impl.m.Dot(x, y, 0)
				}
				b.ReportMetric(float64(K)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
				cpu.Report(b, K)
			})
		}
	}
}

// BenchmarkChainParallel computes many independent outputs (K = 4096 each)
// on all cores.
func BenchmarkChainParallel(b *testing.B) {
	const K = 1 << 12
	x, y := pvInputs(K, 2)
	for _, name := range []string{"sm90.wgmma.e4m3.f32", "sm90.mma.sync.e4m3.f32", "sm100.tcgen05.f8f6f4.f32"} {
		m := MustLookup(name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				var s float32
				for pb.Next() {
					s += m.Dot(x, y, 0)
				}
				sink = s
			})
			b.ReportMetric(float64(K)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}

// BenchmarkRefStep runs chains (K = 4096) of models whose every step is the
// reference step (Params.Step): FP16 accumulators, which no fast path
// covers.
func BenchmarkRefStep(b *testing.B) {
	const K = 1 << 12
	x, y := pvInputs(K, 3)
	for _, name := range []string{"sm90.wgmma.e4m3.f16", "sm90.mma.sync.e4m3.f16"} {
		m := MustLookup(name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = m.Dot(x, y, 0)
			}
			b.ReportMetric(float64(K)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}
