package wgsl

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// ChainBench is the throughput of the emulated tensor-core chain.
type ChainBench struct {
	Model   string
	M, N, K int
	// Products is M·N·K, the FP8 products of one run.
	Products int64
	// Time is the median of the timed runs (all dispatches of the K loop),
	// Source "timestamp" or "wall".
	Time   time.Duration
	Source string
	// Rate is Products / Time, in products per second.
	Rate float64
	// Checked outputs were compared with accum; Equal of them were equal
	// bit for bit.
	Checked, Equal int
}

// BenchChain times the WGSL emulation of model over a GEMM of M×N outputs
// with contraction K (e4m3 codes of normal(0,1) values, c = 0, no
// promotion): each output is one invocation running the whole chain. It
// checks `check` random outputs against accum and returns the median of
// reps timed runs.
func (r *Runner) BenchChain(ctx context.Context, model string, M, N, K, reps, check int) (ChainBench, error) {
	e, err := emulation(model)
	if err != nil {
		return ChainBench{}, err
	}
	if M < 1 || N < 1 || K < 1 || int64(M)*int64(N) > 1<<26 {
		return ChainBench{}, fmt.Errorf("wgsl: BenchChain with M=%d N=%d K=%d", M, N, K)
	}
	rng := rand.New(rand.NewPCG(uint64(M), uint64(N)*31+uint64(K)))
	in := ChainInput{K: K, A: make([]uint8, M*K), B: make([]uint8, N*K), C: make([]float32, M*N)}
	enc := func() uint8 {
		if e.In == fp8.FormatE5M2 {
			return uint8(fp8.EncodeE5M2(float32(rng.NormFloat64()), fp8.SatFinite))
		}
		return uint8(fp8.EncodeE4M3(float32(rng.NormFloat64()), fp8.SatFinite))
	}
	for i := range in.A {
		in.A[i] = enc()
	}
	for i := range in.B {
		in.B[i] = enc()
	}
	res := ChainBench{Model: model, M: M, N: N, K: K, Products: int64(M) * int64(N) * int64(K)}
	var times []time.Duration
	var out []float32
	allGPU := true
	for i := 0; i <= max(reps, 1); i++ { // run 0 warms up (compiles)
		cr, err := r.chain(ctx, e, in, 0, N, true)
		if err != nil {
			return ChainBench{}, err
		}
		out = cr.out
		if i > 0 {
			times = append(times, cr.timing.Best())
			allGPU = allGPU && cr.timing.GPU > 0
		}
	}
	res.Source = "wall"
	if allGPU {
		res.Source = "timestamp"
	}
	slices.Sort(times)
	res.Time = times[len(times)/2]
	res.Rate = float64(res.Products) / res.Time.Seconds()
	m := accum.MustLookup(model)
	a16, b16 := make([]uint16, K), make([]uint16, K)
	for c := 0; c < check; c++ {
		o := rng.IntN(M * N)
		i, j := o/N, o%N
		for k := 0; k < K; k++ {
			a16[k], b16[k] = uint16(in.A[i*K+k]), uint16(in.B[j*K+k])
		}
		want := m.Dot(a16, b16, 0)
		res.Checked++
		if math.Float32bits(want) == math.Float32bits(out[o]) {
			res.Equal++
		}
	}
	return res, nil
}
