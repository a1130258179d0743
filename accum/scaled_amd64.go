//go:build amd64 && !purego

package accum

// The AVX2 chain kernels of scaledFast (scaled_amd64.s), used when
// haveStepAsm says the CPU has AVX2 (cpufeat.AVX2, step_amd64.go); otherwise,
// on other architectures and with the purego build tag, scaledFast's Go
// steps run. TestScaledAsmEqualsGo and FuzzScaledAsm check that the two
// agree bit for bit.

// chainST8 runs steps whole ST steps of l 8-bit codes from c, stopping
// before the first that holds a NaN or inf operand, an es[k] above 1000
// (a NaN or zero scale) or a NaN or inf c; see scaled_amd64.s.
//
//go:noescape
func chainST8(entA, entB *[256]uint64, a, b *uint8, es *int32, steps, l int, f, fb, ezero int32, c float32) (d float32, done int)

// chainTF32 runs steps whole TF32 steps of l float32 bit patterns from c,
// stopping before the first that holds a NaN or inf; see scaled_amd64.s.
//
//go:noescape
func chainTF32(a, b *uint32, steps, l int, f, fb, ezero int32, c float32) (d float32, done int)
