//go:build !amd64 || purego

package pmath

// haveExpAsm is false: no vector exp on this architecture or with the
// purego build tag; Exps runs its pure-Go chains.
const haveExpAsm = false

func expBlocks(dst, x *float64, blocks int) int {
	panic("pmath: no assembly exp on this build")
}

func axpyF32x4(o *float64, w *[4]float64, v0, v1, v2, v3 *float32, n int) {
	panic("pmath: no assembly axpy on this build")
}

func axpyF64x4(o *float64, w *[4]float64, v0, v1, v2, v3 *float64, n int) {
	panic("pmath: no assembly axpy on this build")
}

func dotsF32x8(out *[8]float64, q *float64, n int, k *[8]*float32) {
	panic("pmath: no assembly dot products on this build")
}

func dotsF64x8(out *[8]float64, q *float64, n int, k *[8]*float64) {
	panic("pmath: no assembly dot products on this build")
}

func pairsToF32(a, b *float32, z *float64, n int, as, bs, bm float64) {
	panic("pmath: no assembly pairs on this build")
}

func countAbsAbove(x *float32, n int, t *[4]uint32, out *[4]int) {
	panic("pmath: no assembly magnitudes on this build")
}
