//go:build !amd64 || purego

package accum

// haveStepAsm is false: no assembly step on this architecture or with the
// purego build tag; tableStep runs its pure-Go step.
const haveStepAsm = false

func stepGG(ent *[1 << 16]uint64, a, b *uint16, n int, ce, f int32, c float64) (sum float64, emax int32) {
	panic("accum: no assembly step on this build")
}

func stepLG(ent *[1 << 16]uint64, a *uint64, b *uint16, n int, ce, f int32, c float64) (sum float64, emax int32) {
	panic("accum: no assembly step on this build")
}

func chainGG(ent *[1 << 16]uint64, a, b *uint16, steps, l int, f, fb, ezero int32, c float32) (d float32, done int) {
	panic("accum: no assembly step on this build")
}

func chainLG(ent *[1 << 16]uint64, a *uint64, b *uint16, steps, l int, f, fb, ezero int32, c float32) (d float32, done int) {
	panic("accum: no assembly step on this build")
}

// scalarLoads has no kernel to steer on this build.
var scalarLoads = false
