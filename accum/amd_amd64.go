//go:build amd64 && !purego

package accum

// haveFMAAsm reports whether fmaChain32 can run here: the AVX2 step's
// checks (detectAVX2: AVX and YMM state saved by the OS) and FMA
// (CPUID leaf 1, ECX bit 12).
var haveFMAAsm = haveStepAsm && func() bool {
	_, _, ecx, _ := cpuid(1, 0)
	return ecx&(1<<12) != 0
}()

// fmaChain32 returns c after c = fma(a[i], b[i], c) for i < n in float32
// (IEEE, round to nearest even): chainFMA32 in hardware (amd_amd64.s).
// NaN payloads are the hardware's; chainFMA32 redoes a chain that ends in
// NaN with FMA32 for the reference's bits.
//
//go:noescape
func fmaChain32(a, b *uint32, n int, c float32) float32
