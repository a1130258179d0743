package wgslcheck

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/wgsl"
)

// scaledModelSteps computes what ScaledStep computes with accum, for the
// checks.
func scaledModelSteps(name string, in wgsl.ScaledInput) ([]uint32, error) {
	m, err := accum.LookupInstruction(name)
	if err != nil {
		return nil, err
	}
	info := m.Info()
	nsc := 0
	if info.Scale != "" {
		nsc = in.K / info.Block
	}
	out := make([]uint32, len(in.C))
	a, b := make([]uint64, in.K), make([]uint64, in.K)
	for i := range out {
		for k := 0; k < in.K; k++ {
			a[k], b[k] = uint64(in.A[i*in.K+k]), uint64(in.B[i*in.K+k])
		}
		var sa, sb []uint8
		if nsc > 0 {
			sa, sb = in.SA[i*nsc:(i+1)*nsc], in.SB[i*nsc:(i+1)*nsc]
		}
		out[i] = uint32(m.Step(a, b, sa, sb, uint64(in.C[i])))
	}
	return out, nil
}

// randomScaledInput draws n outputs for instruction info: codes of every
// kind (zeros, NaN and inf where the format has them, the largest values),
// scales over the whole range (zero, NaN among them), accumulators over
// 2^-40..2^40 with zeros and a few infinities.
func randomScaledInput(info accum.InstrInfo, n int, seed uint64) wgsl.ScaledInput {
	rng := rand.New(rand.NewPCG(seed, 3))
	in := wgsl.ScaledInput{K: info.K, A: make([]uint8, n*info.K), B: make([]uint8, n*info.K), C: make([]uint32, n)}
	fa, _ := fp8.ParseFormat(info.A)
	fb, _ := fp8.ParseFormat(info.B)
	code := func(f fp8.Format) uint8 {
		bits := f.CodeBits()
		switch rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return uint8(1 << (bits - 1)) // -0
		}
		return uint8(rng.IntN(1 << bits))
	}
	for i := range in.A {
		in.A[i], in.B[i] = code(fa), code(fb)
	}
	for i := range in.C {
		switch rng.IntN(10) {
		case 0:
			in.C[i] = 0
		case 1:
			in.C[i] = 0x80000000
		case 2:
			if rng.IntN(20) == 0 {
				in.C[i] = 0x7f800000 | uint32(rng.IntN(2))<<31
				continue
			}
			fallthrough
		default:
			in.C[i] = math.Float32bits(float32((rng.Float64()*2 - 1) * math.Ldexp(1, rng.IntN(81)-40)))
		}
	}
	if info.Scale != "" {
		nsc := info.K / info.Block
		in.SA, in.SB = make([]uint8, n*nsc), make([]uint8, n*nsc)
		sf, _ := fp8.ParseFormat(info.Scale)
		sc := func() uint8 {
			if rng.IntN(40) == 0 {
				return uint8(1<<sf.CodeBits() - 1) // NaN (ue8m0 0xff, ue4m3 0x7f)
			}
			if sf == fp8.FormatUE8M0 {
				return uint8(127 + rng.IntN(41) - 20) // 2^-20 .. 2^20, mostly
			}
			return uint8(rng.IntN(1 << sf.CodeBits()))
		}
		for i := range in.SA {
			in.SA[i], in.SB[i] = sc(), sc()
		}
		// One output in eight with tiny ue8m0 scales (about 2^-75 each)
		// and c = 0: the products then lie near or below e_zero, where the
		// exponent of a zero term sets the alignment.
		if sf == fp8.FormatUE8M0 {
			for o := 0; o < n; o++ {
				if rng.IntN(8) != 0 {
					continue
				}
				for j := o * nsc; j < (o+1)*nsc; j++ {
					in.SA[j], in.SB[j] = uint8(52+rng.IntN(12)), uint8(52+rng.IntN(12))
				}
				in.C[o] = 0
			}
		}
	}
	return in
}

// CheckScaled runs n random steps of every instruction of
// [wgsl.ScaledInstructions] through the GPU and compares them with accum, one
// Check per instruction.
func CheckScaled(ctx context.Context, r *wgsl.Runner, seed uint64, n int) ([]Check, error) {
	var checks []Check
	for i, name := range wgsl.ScaledInstructions() {
		m, err := accum.LookupInstruction(name)
		if err != nil {
			return nil, err
		}
		in := randomScaledInput(m.Info(), n, seed+uint64(i))
		got, err := r.ScaledStep(ctx, name, in)
		if err != nil {
			return nil, err
		}
		want, err := scaledModelSteps(name, in)
		if err != nil {
			return nil, err
		}
		c := Check{Name: name, Total: n, EqualHW: -1}
		for j := range got {
			if sameF32(math.Float32frombits(got[j]), math.Float32frombits(want[j])) {
				c.EqualModel++
			}
		}
		checks = append(checks, c)
	}
	return checks, nil
}
