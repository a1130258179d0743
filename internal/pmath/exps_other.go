//go:build !amd64 || purego

package pmath

// haveExpAsm is false: no vector exp on this architecture or with the
// purego build tag; Exps runs its pure-Go chains.
const haveExpAsm = false

func expBlocks(dst, x *float64, blocks int) int {
	panic("pmath: no assembly exp on this build")
}
