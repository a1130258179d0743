//go:build !amd64 || purego

package accum

// haveFMAAsm is false: no assembly FMA chain on this build.
const haveFMAAsm = false

func fmaChain32(a, b *uint32, n int, c float32) float32 {
	panic("accum: no assembly FMA chain on this build")
}
