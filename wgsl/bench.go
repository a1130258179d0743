package wgsl

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
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
	// Source "timestamp" or "wall"; Measurement has the warm-up and every
	// timed run.
	Time        time.Duration
	Source      string
	Measurement Measurement
	// Rate is Products / Time, in products per second (at the median).
	Rate float64
	// Checked outputs were compared with accum; Equal of them were equal
	// bit for bit.
	Checked, Equal int
}

// BenchChain times the WGSL emulation of model over a GEMM of M×N outputs
// with contraction K (e4m3 codes of normal(0,1) values, c = 0, no
// promotion): each output is one invocation running the whole chain. It
// warms up by the runner's rule (Warmup), times reps runs, returns their
// median (and Measurement) and checks `check` random outputs of the last
// against accum.
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
	// The rows are packed and uploaded once; the timed repetitions run the
	// same dispatches back to back, so that the GPU is not left idle (and
	// clocking down) while the host packs and copies between them.
	rowWords := (K + 3) / 4
	pa, pb := packRows(in.A, M, K, rowWords), packRows(in.B, N, K, rowWords)
	if err := r.lock(); err != nil {
		return ChainBench{}, err
	}
	defer r.mu.Unlock()
	pc, err := r.prepareChainLocked(e, pa, pb, rowWords, K, in.C, 0, N)
	if err != nil {
		return ChainBench{}, err
	}
	defer pc.free()
	meas, err := measure(ctx, r.warmupLocked(), reps, func() (Timing, error) { return r.be.run(ctx, pc.calls, true) })
	if err != nil {
		return ChainBench{}, err
	}
	// The outputs checked are those of one chain from the initial state.
	if err := pc.reset(); err != nil {
		return ChainBench{}, err
	}
	if _, err := r.be.run(ctx, pc.calls, false); err != nil {
		return ChainBench{}, err
	}
	out, err := pc.read(ctx)
	if err != nil {
		return ChainBench{}, err
	}
	res.Measurement = meas
	res.Source, res.Time = meas.Source, meas.Median
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

// yardstick times yardstick.wgsl over in's rows (gemmN columns of B, one
// output per invocation, as the chain kernel lays them out): a fixed
// reference workload for speed ratios (TestStepSpeedRatio). e gives the
// code table.
func (r *Runner) yardstick(ctx context.Context, e *Emulation, in ChainInput, gemmN int) (time.Duration, error) {
	rows := len(in.A) / in.K
	n := rows * gemmN
	rw := (in.K + 3) / 4
	pack := func(codes []uint8, rows int) []uint32 {
		w := make([]uint32, rows*rw)
		for i, c := range codes {
			row, k := i/in.K, i%in.K
			w[row*rw+k/4] |= uint32(c) << (8 * uint(k%4))
		}
		return w
	}
	if err := r.lock(); err != nil {
		return 0, err
	}
	defer r.mu.Unlock()
	var bufs []buffer
	defer func() {
		for _, b := range bufs {
			r.be.free(b)
		}
	}()
	tab := make([]uint32, 256)
	copy(tab, e.table[:])
	for _, d := range [][]uint32{tab, pack(in.A, rows), pack(in.B, len(in.B)/in.K), make([]uint32, n)} {
		b, err := r.be.upload("yardstick", u32View(d))
		if err != nil {
			return 0, err
		}
		bufs = append(bufs, b)
	}
	x, y, stride := grid(n, chainWG)
	k := &kernelSpec{file: "yardstick", entry: "yardstick", consts: []constDecl{cU32("WG", chainWG)}, storage: []access{readOnly, readOnly, readOnly, readWrite}}
	t, err := r.be.run(ctx, []call{{k: k, bufs: bufs, params: []uint32{uint32(n), uint32(rw), uint32(gemmN), stride}, x: x, y: y}}, true)
	return t.Best(), err
}
