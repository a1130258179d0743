//go:build !amd64 || purego

package wgsl

// Without the AVX2 kernel (another architecture, the purego tag)
// packBytes is packBytesGo.
const havePackAsm = false

func packBytesAsm(dst *uint32, src *uint16, blocks int) { panic("wgsl: packBytesAsm without AVX2") }
