//go:build amd64 && !purego

package accum

import "github.com/fp8lab/fp8lab/internal/cpufeat"

// The AVX2 kernels of tableStep (step_amd64.s), chosen at run time: they
// are used when the CPU has AVX2 and the OS saves the YMM registers;
// otherwise, on other architectures and with the purego build tag, the
// pure-Go step runs. TestStepAsmEqualsPureGo and FuzzStepAsm check that
// the two agree bit for bit.

// haveStepAsm reports whether the AVX2 step kernels can run here.
var haveStepAsm = cpufeat.AVX2

// scalarLoads makes every AVX2 kernel of the package (the step, chain,
// scaled and CDNA3 kernels) fetch its table entries with scalar loads
// instead of VPGATHERDQ. It is true: on both CPUs measured (a Zen 4 EPYC
// and the H200 host's Intel Xeon, BENCHMARKS.md "Gathers or scalar
// loads") the loads were as fast or faster, 2× on the EPYC. The gather
// loops stay for the A/B (BenchmarkChainImpl). Both ways fetch the same
// entries, so the results are the same bits (TestScalarLoadsEqualGathers).
// The kernels read it at every step; tests and benchmarks that flip it
// restore it before returning.
var scalarLoads = true

// stepGG is one step over codes a and b (n a multiple of 4), both looked up
// in ent; see step_amd64.s for the contract.
//
//go:noescape
func stepGG(ent *[1 << 16]uint64, a, b *uint16, n int, ce, f int32, c float64) (sum float64, emax int32)

// stepLG is stepGG with the first operand's entries looked up beforehand.
//
//go:noescape
func stepLG(ent *[1 << 16]uint64, a *uint64, b *uint16, n int, ce, f int32, c float64) (sum float64, emax int32)

// chainGG runs steps whole steps of l codes from c and stops before the
// first that holds a NaN or inf; see step_amd64.s.
//
//go:noescape
func chainGG(ent *[1 << 16]uint64, a, b *uint16, steps, l int, f, fb, ezero int32, c float32) (d float32, done int)

// chainLG is chainGG with the first operand's entries looked up beforehand.
//
//go:noescape
func chainLG(ent *[1 << 16]uint64, a *uint64, b *uint16, steps, l int, f, fb, ezero int32, c float32) (d float32, done int)
