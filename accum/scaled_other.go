//go:build !amd64 || purego

package accum

// No assembly chain on this build: haveStepAsm is false, so scaledFast
// never builds the tables these would read and its Go steps run.

func chainST8(entA, entB *[256]uint64, a, b *uint8, es *int32, steps, l int, f, fb, ezero int32, c float32) (d float32, done int) {
	panic("accum: no assembly chain on this build")
}

func chainTF32(a, b *uint32, steps, l int, f, fb, ezero int32, c float32) (d float32, done int) {
	panic("accum: no assembly chain on this build")
}
