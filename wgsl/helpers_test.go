package wgsl

import (
	"math"

	"github.com/fp8lab/fp8lab/accum"
)

// sameF32 reports whether got is want's bits, any NaN want being the
// kernels' canonical NaN.
func sameF32(got float32, want float32) bool {
	if math.IsNaN(float64(want)) {
		return math.Float32bits(got) == accum.NaN32
	}
	return math.Float32bits(got) == math.Float32bits(want)
}

// modelChain is what Chain computes, with accum: accum.Chain of each row
// of 8-bit codes.
func modelChain(m accum.Model, in ChainInput, promote int) []float32 {
	out := make([]float32, len(in.C))
	a, b := make([]uint16, in.K), make([]uint16, in.K)
	for i := range out {
		for k := 0; k < in.K; k++ {
			a[k], b[k] = uint16(in.A[i*in.K+k]), uint16(in.B[i*in.K+k])
		}
		out[i] = accum.Chain(m, a, b, in.C[i], promote)
	}
	return out
}
