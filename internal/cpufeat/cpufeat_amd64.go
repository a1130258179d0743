//go:build amd64 && !purego

package cpufeat

func cpuid(eaxArg, ecxArg uint32) (eax, ebx, ecx, edx uint32)
func xgetbv() (eax, edx uint32)

// AVX2 is AVX2 (CPUID leaf 7) with AVX and the YMM state enabled by the OS
// (OSXSAVE, then XCR0 bits 1 and 2), as the Go runtime's internal/cpu
// decides it; FMA and F16C are those of CPUID leaf 1, reported only with
// AVX2 (every kernel that uses them is an AVX2 kernel).
var AVX2, FMA, F16C = detect()

func detect() (avx2, fma, f16c bool) {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false, false, false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	const fmaBit, osxsave, avx, f16cBit = 1 << 12, 1 << 27, 1 << 28, 1 << 29
	if ecx1&osxsave == 0 || ecx1&avx == 0 {
		return false, false, false
	}
	if xcr0, _ := xgetbv(); xcr0&6 != 6 {
		return false, false, false
	}
	_, ebx7, _, _ := cpuid(7, 0)
	if ebx7&(1<<5) == 0 {
		return false, false, false
	}
	return true, ecx1&fmaBit != 0, ecx1&f16cBit != 0
}
