//go:build !amd64 || purego

package accum

// haveFMAAsm is false: no assembly FMA chain on this build.
const haveFMAAsm = false

func fmaChain32(a, b *uint32, n int, c float32) float32 {
	panic("accum: no assembly FMA chain on this build")
}

func fdpaPairs8(entA, entB *[1 << 16]uint64, a, b *uint8, groups int, sums *float64, exps *int32) {
	panic("accum: no assembly FDPA kernel on this build")
}

func fdpaSums16(entA, entB *[1 << 16]uint64, a, b *uint16, groups int, sums *float64, exps *int32) {
	panic("accum: no assembly FDPA kernel on this build")
}

func xf32Sums4(a, b *uint32, groups int, sums *float64, exps *int32) {
	panic("accum: no assembly FDPA kernel on this build")
}
