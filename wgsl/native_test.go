package wgsl

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

func TestProbeFMA(t *testing.T) {
	r := testGPU(t)
	rep, err := r.ProbeFMA(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s", r.Info().Name, rep.Verdict())
	if rep.MulAddFused+rep.MulAddUnfused != rep.Vectors || rep.FMAFused+rep.FMAUnfused != rep.Vectors {
		t.Errorf("some probes matched neither fused nor unfused arithmetic: %+v", rep)
	}
	if rep.MulAddFused != 0 && rep.MulAddFused != rep.Vectors {
		t.Errorf("a*b+c is fused on some probes only: %+v", rep)
	}
}

// TestNativeDotMatchesBaselines runs e4m3 dot products through the GPU's own
// f32 arithmetic and checks that the sequential shape equals accum's "fp32"
// (= "fp32.fma": e4m3 products are exact in f32) and the pairwise shape
// accum's "pairwise", bit for bit.
func TestNativeDotMatchesBaselines(t *testing.T) {
	r := testGPU(t)
	rng := rand.New(rand.NewPCG(9, 9))
	for _, K := range []int{1, 2, 64, 1024, 65536} {
		n := 16
		codesA, codesB := make([]uint16, n*K), make([]uint16, n*K)
		x, y, c := make([]float32, n*K), make([]float32, n*K), make([]float32, n)
		for i := range codesA {
			codesA[i] = uint16(fp8.EncodeE4M3(float32(rng.NormFloat64()), fp8.SatFinite))
			codesB[i] = uint16(fp8.EncodeE4M3(float32(rng.NormFloat64()*4), fp8.SatFinite))
			x[i], y[i] = fp8.E4M3(codesA[i]).Float32(), fp8.E4M3(codesB[i]).Float32()
		}
		for i := range c {
			c[i] = float32(rng.NormFloat64())
		}
		for _, tc := range []struct {
			shape Shape
			model string
		}{{Sequential, "fp32"}, {Sequential, "fp32.fma"}, {Pairwise, "pairwise"}} {
			got, err := r.NativeDot(context.Background(), tc.shape, x, y, c, K)
			if err != nil {
				t.Fatal(err)
			}
			m := accum.MustLookup(tc.model)
			eq := 0
			for i := range c {
				if w := m.Dot(codesA[i*K:(i+1)*K], codesB[i*K:(i+1)*K], c[i]); math.Float32bits(w) == math.Float32bits(got[i]) {
					eq++
				}
			}
			if eq != n {
				t.Errorf("K=%d %v: %d/%d equal to accum %s", K, tc.shape, eq, n, tc.model)
			}
		}
	}
	if _, err := r.NativeDot(context.Background(), Pairwise, make([]float32, 3), make([]float32, 3), []float32{0}, 3); err == nil {
		t.Error("pairwise with K=3 gave no error")
	}
}

// TestNativeDotFP32Inputs runs FP32 (not FP8) inputs, where a fused
// multiply-add and an unfused one differ, and checks that the sequential
// shape equals the Go chain the FMA probe predicts.
func TestNativeDotFP32Inputs(t *testing.T) {
	r := testGPU(t)
	rep, err := r.ProbeFMA(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	const n, K = 32, 4096
	x, y, c := make([]float32, n*K), make([]float32, n*K), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	got, err := r.NativeDot(context.Background(), Sequential, x, y, c, K)
	if err != nil {
		t.Fatal(err)
	}
	fusedEq, unfusedEq := 0, 0
	for i := 0; i < n; i++ {
		sf, su := c[i], c[i]
		for k := i * K; k < (i+1)*K; k++ {
			sf = accum.FMA32(x[k], y[k], sf)
			su = float32(su + float32(x[k]*y[k]))
		}
		if math.Float32bits(got[i]) == math.Float32bits(sf) {
			fusedEq++
		}
		if math.Float32bits(got[i]) == math.Float32bits(su) {
			unfusedEq++
		}
	}
	t.Logf("FP32 inputs, K=%d: %d/%d equal to a fused chain, %d/%d to an unfused chain; probe: %s", K, fusedEq, n, unfusedEq, n, rep.Verdict())
	want := unfusedEq
	if rep.Contracts() {
		want = fusedEq
	}
	if want != n {
		t.Errorf("the sequential GPU sum does not match the chain its FMA probe predicts (%+v)", rep)
	}
}
