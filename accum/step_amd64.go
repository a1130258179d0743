//go:build amd64 && !purego

package accum

// The AVX2 kernels of tableStep (step_amd64.s), chosen at run time: they
// are used when the CPU has AVX2 and the OS saves the YMM registers;
// otherwise, on other architectures and with the purego build tag, the
// pure-Go step runs. TestStepAsmEqualsPureGo and FuzzStepAsm check that
// the two agree bit for bit.

// haveStepAsm reports whether the AVX2 step kernels can run here.
var haveStepAsm = detectAVX2()

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

// detectAVX2 reports AVX2 in CPUID leaf 7 and YMM state enabled by the OS
// (OSXSAVE, then XCR0 bits 1 and 2), as internal/cpu does.
func detectAVX2() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	return ebx7&(1<<5) != 0
}

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
