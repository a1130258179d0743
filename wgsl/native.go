package wgsl

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/fp8lab/fp8lab/accum"
)

// Shape is the order in which the GPU's own f32 arithmetic sums a dot
// product in [Runner.NativeDot].
type Shape int

const (
	// Sequential is s = c; s = s + x[k]*y[k] for k = 0, 1, …, written as a
	// kernel author writes it: a driver that contracts a*b+c computes each
	// step as one FMA (accum's "fp32.fma"), one that does not rounds the
	// product and the sum ("fp32").
	Sequential Shape = iota
	// Pairwise rounds each product to f32, sums them in a balanced binary
	// tree of f32 adds (adjacent pairs, level by level: for a power-of-two
	// K the same tree as accum's "pairwise" recursive halving), then adds
	// c.
	Pairwise
)

// String returns "sequential" or "pairwise".
func (s Shape) String() string {
	if s == Pairwise {
		return "pairwise"
	}
	return "sequential"
}

const nativeWG = 64

func nativeKernel(entry string) *kernelSpec {
	return &kernelSpec{file: "native", entry: entry, consts: []constDecl{cU32("WG", nativeWG)},
		storage: []access{readOnly, readOnly, readWrite}}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func bytesF32(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// nativeSeqPerDispatch bounds the loop of one invocation of the seq kernel
// per dispatch (lavapipe's loop limit).
const nativeSeqPerDispatch = 30000

// NativeDot computes n = len(c) dot products of length K on the GPU with its
// own f32 arithmetic, in the given shape: out[i] = c[i] + Σ x[iK+k]·y[iK+k].
// x and y hold n rows of K values. Pairwise needs K to be a power of two.
// The results are what the device computes: compare them with accum's
// baselines to see which it matches (the GPU may contract a*b+c into an
// FMA; see [Runner.ProbeFMA]).
func (r *Runner) NativeDot(ctx context.Context, shape Shape, x, y, c []float32, K int) ([]float32, error) {
	n := len(c)
	if K <= 0 || len(x) != n*K || len(y) != n*K {
		return nil, fmt.Errorf("wgsl: NativeDot with K=%d, %d accumulators, %d and %d values", K, n, len(x), len(y))
	}
	if shape == Pairwise && bits.OnesCount(uint(K)) != 1 {
		return nil, fmt.Errorf("wgsl: the pairwise shape needs a power-of-two K, not %d", K)
	}
	if err := r.lock(); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	var bufs []buffer
	defer func() {
		for _, b := range bufs {
			r.be.free(b)
		}
	}()
	up := func(label string, data []byte) (buffer, error) {
		b, err := r.be.upload(label, data)
		if err == nil {
			bufs = append(bufs, b)
		}
		return b, err
	}
	xb, err := up("native.x", f32Bytes(x))
	if err != nil {
		return nil, err
	}
	yb, err := up("native.y", f32Bytes(y))
	if err != nil {
		return nil, err
	}
	if shape == Sequential {
		rb, err := up("native.r", f32Bytes(c))
		if err != nil {
			return nil, err
		}
		gx, gy, stride := grid(n, nativeWG)
		var calls []call
		for k := 0; k < K; k += nativeSeqPerDispatch {
			calls = append(calls, call{k: nativeKernel("seq"), bufs: []buffer{xb, yb, rb},
				params: []uint32{uint32(n), uint32(K), uint32(k), uint32(min(k+nativeSeqPerDispatch, K)), 0, stride}, x: gx, y: gy})
		}
		if _, err := r.be.run(ctx, calls, false); err != nil {
			return nil, err
		}
		raw, err := r.be.read(ctx, rb, uint64(4*n))
		if err != nil {
			return nil, err
		}
		return bytesF32(raw), nil
	}
	t0, err := up("native.t0", make([]byte, 4*n*K))
	if err != nil {
		return nil, err
	}
	t1, err := up("native.t1", make([]byte, 4*n*K))
	if err != nil {
		return nil, err
	}
	cb, err := up("native.c", f32Bytes(c))
	if err != nil {
		return nil, err
	}
	out, err := up("native.out", make([]byte, 4*n))
	if err != nil {
		return nil, err
	}
	gx, gy, stride := grid(n*K, nativeWG)
	calls := []call{{k: nativeKernel("products"), bufs: []buffer{xb, yb, t0}, params: []uint32{uint32(n), uint32(K), 0, 0, 0, stride}, x: gx, y: gy}}
	// Levels ping-pong between t0 and t1.
	src, dst := t0, t1
	for half := K / 2; half >= 1; half /= 2 {
		gx, gy, stride := grid(n*half, nativeWG)
		calls = append(calls, call{k: nativeKernel("level"), bufs: []buffer{src, yb, dst}, params: []uint32{uint32(n), uint32(K), 0, 0, uint32(half), stride}, x: gx, y: gy})
		src, dst = dst, src
	}
	gx, gy, stride = grid(n, nativeWG)
	calls = append(calls, call{k: nativeKernel("root"), bufs: []buffer{src, cb, out}, params: []uint32{uint32(n), uint32(K), 0, 0, 0, stride}, x: gx, y: gy})
	if _, err := r.be.run(ctx, calls, false); err != nil {
		return nil, err
	}
	raw, err := r.be.read(ctx, out, uint64(4*n))
	if err != nil {
		return nil, err
	}
	return bytesF32(raw), nil
}

// FMAReport says whether the device computes a*b+c with one rounding.
type FMAReport struct {
	// Vectors is the number of (a, b, c) probes, each chosen so that the
	// fused result (one rounding, accum.FMA32) and the unfused one
	// (float32(float32(a*b)+c)) differ.
	Vectors int
	// MulAddFused and MulAddUnfused count the probes where the kernel's
	// `a * b + c` equals the fused and the unfused result.
	MulAddFused, MulAddUnfused int
	// FMAFused and FMAUnfused count the same for WGSL's fma(a, b, c).
	FMAFused, FMAUnfused int
}

// Contracts reports whether the driver contracts `a * b + c` into an FMA:
// every probe fused.
func (f FMAReport) Contracts() bool { return f.Vectors > 0 && f.MulAddFused == f.Vectors }

// FMAIsFused reports whether WGSL's fma() rounds once on every probe.
func (f FMAReport) FMAIsFused() bool { return f.Vectors > 0 && f.FMAFused == f.Vectors }

// Verdict says in words what the device does with a*b+c and fma().
func (f FMAReport) Verdict() string {
	word := func(fused, unfused int) string {
		switch {
		case fused == f.Vectors:
			return "fused (one rounding, an FMA)"
		case unfused == f.Vectors:
			return "not fused (product rounded, then the sum)"
		}
		return fmt.Sprintf("inconsistent (%d fused, %d unfused, %d neither, of %d)", fused, unfused, f.Vectors-fused-unfused, f.Vectors)
	}
	return fmt.Sprintf("a*b+c %s; fma() %s; %d probe vectors where the two differ", word(f.MulAddFused, f.MulAddUnfused), word(f.FMAFused, f.FMAUnfused), f.Vectors)
}

// fmaProbes returns n (a, b, c) triples whose fused and unfused results
// differ: the first is a = b = 1 + 2^-12, c = -(1 + 2^-11) (fused 2^-24,
// unfused 0), the rest random.
func fmaProbes(n int) [][3]float32 {
	p := [][3]float32{{1 + 1.0/4096, 1 + 1.0/4096, -(1 + 1.0/2048)}}
	rng := rand.New(rand.NewPCG(11, 13))
	for len(p) < n {
		a := float32(rng.Float64() + 0.5)
		b := float32(rng.Float64() + 0.5)
		c := -float32(float64(a) * float64(b) * (1 + (rng.Float64()-0.5)*1e-3))
		if accum.FMA32(a, b, c) != float32(float32(a*b)+c) {
			p = append(p, [3]float32{a, b, c})
		}
	}
	return p
}

// ProbeFMA runs a*b+c and fma(a,b,c) on the device for probe vectors where
// fused and unfused arithmetic differ and counts which each matches. NVIDIA
// drivers contract a*b+c; lavapipe computes both unfused.
func (r *Runner) ProbeFMA(ctx context.Context) (FMAReport, error) {
	probes := fmaProbes(64)
	n := len(probes)
	x := make([]float32, 0, 3*n)
	for _, p := range probes {
		x = append(x, p[0], p[1], p[2])
	}
	if err := r.lock(); err != nil {
		return FMAReport{}, err
	}
	defer r.mu.Unlock()
	xb, err := r.be.upload("fma.x", f32Bytes(x))
	if err != nil {
		return FMAReport{}, err
	}
	defer r.be.free(xb)
	yb, err := r.be.upload("fma.y", make([]byte, 4))
	if err != nil {
		return FMAReport{}, err
	}
	defer r.be.free(yb)
	rb, err := r.be.alloc("fma.r", uint64(8*n))
	if err != nil {
		return FMAReport{}, err
	}
	defer r.be.free(rb)
	gx, gy, stride := grid(n, nativeWG)
	if _, err := r.be.run(ctx, []call{{k: nativeKernel("muladd"), bufs: []buffer{xb, yb, rb}, params: []uint32{uint32(n), 0, 0, 0, 0, stride}, x: gx, y: gy}}, false); err != nil {
		return FMAReport{}, err
	}
	raw, err := r.be.read(ctx, rb, uint64(8*n))
	if err != nil {
		return FMAReport{}, err
	}
	got := bytesF32(raw)
	rep := FMAReport{Vectors: n}
	for i, p := range probes {
		fused, unfused := accum.FMA32(p[0], p[1], p[2]), float32(float32(p[0]*p[1])+p[2])
		same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
		if same(got[i], fused) {
			rep.MulAddFused++
		}
		if same(got[i], unfused) {
			rep.MulAddUnfused++
		}
		if same(got[n+i], fused) {
			rep.FMAFused++
		}
		if same(got[n+i], unfused) {
			rep.FMAUnfused++
		}
	}
	return rep, nil
}

// LoopIterations runs one loop of n iterations in one invocation and returns
// how many iterations it ran: n on a conforming device, at most about 65535
// on lavapipe, which ends longer loops silently.
func (r *Runner) LoopIterations(ctx context.Context, n int) (int, error) {
	if err := r.lock(); err != nil {
		return 0, err
	}
	defer r.mu.Unlock()
	xb, err := r.be.upload("loop.x", make([]byte, 4))
	if err != nil {
		return 0, err
	}
	defer r.be.free(xb)
	rb, err := r.be.alloc("loop.r", 4)
	if err != nil {
		return 0, err
	}
	defer r.be.free(rb)
	if _, err := r.be.run(ctx, []call{{k: nativeKernel("loopcount"), bufs: []buffer{xb, xb, rb}, params: []uint32{1, uint32(n), 0, 0, 0, 1}, x: 1, y: 1}}, false); err != nil {
		return 0, err
	}
	raw, err := r.be.read(ctx, rb, 4)
	if err != nil {
		return 0, err
	}
	return int(bytesF32(raw)[0]), nil
}

// ReadBandwidth times a streaming read of a buffer of the given size (16-byte
// loads, four in flight per invocation, a grid of groups×256 invocations)
// and returns bytes per second: the memory bandwidth a WGSL kernel reaches on
// this device, the ceiling for decode attention. It returns the median of
// reps timed runs after the runner's warm-up rule (Warmup).
func (r *Runner) ReadBandwidth(ctx context.Context, bytes uint64, groups, reps int) (float64, Timing, error) {
	if err := r.lock(); err != nil {
		return 0, Timing{}, err
	}
	defer r.mu.Unlock()
	n := bytes / 16
	src, err := r.be.alloc("bw.src", n*16)
	if err != nil {
		return 0, Timing{}, err
	}
	defer r.be.free(src)
	const wg = 256
	gx := min(groups, 32768)
	gy := (groups + gx - 1) / gx
	dst, err := r.be.alloc("bw.dst", uint64(4*gx*gy*wg))
	if err != nil {
		return 0, Timing{}, err
	}
	defer r.be.free(dst)
	k := &kernelSpec{file: "probe", entry: "stream", consts: []constDecl{cU32("WG", wg)}, storage: []access{readOnly, readWrite}}
	c := []call{{k: k, bufs: []buffer{src, dst}, params: []uint32{uint32(n), uint32(gx * gy * wg), 0, 0}, x: uint32(gx), y: uint32(gy)}}
	meas, err := measure(ctx, r.warmupLocked(), reps, func() (Timing, error) { return r.be.run(ctx, c, true) })
	if err != nil {
		return 0, Timing{}, err
	}
	t := Timing{Wall: meas.Median}
	if meas.Source == "timestamp" {
		t.GPU = meas.Median
	}
	return float64(n*16) / t.Best().Seconds(), t, nil
}
