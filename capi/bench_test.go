package main

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// pvRows returns rows × k P·V-like e4m3 codes as accum's BenchmarkChain
// draws them (softmax-like weights 32·Exp(1) times N(0,1) values).
func pvRows(rows, k int) (a, b []uint8) {
	r := rand.New(rand.NewPCG(1, 99))
	a, b = make([]uint8, rows*k), make([]uint8, rows*k)
	for i := range a {
		a[i] = uint8(fp8.EncodeE4M3(float32(256*r.ExpFloat64()/8), fp8.SatFinite))
		b[i] = uint8(fp8.EncodeE4M3(float32(r.NormFloat64()), fp8.SatFinite))
	}
	return a, b
}

// BenchmarkChainRows is the batched call fp8lab.chain makes, without cgo:
// 64 output elements of K = 65536 on one thread, from 8-bit codes.
func BenchmarkChainRows(b *testing.B) {
	const rows, k = 64, 1 << 16
	x, y := pvRows(rows, k)
	out := make([]float32, rows)
	for b.Loop() {
		if err := chainModel(context.Background(), "sm90.wgmma.e4m3.f32", x, y, rows, 0, k, false, nil, out, 0, false, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(rows*k)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
}
