//go:build !amd64 || purego

package fp8

// No vector kernel on this build (other architectures, WebAssembly, the
// purego tag): haveEncodeAsm is false and EncodeScaled's Go loops run.
const haveEncodeAsm = false

func encodeVecAsm(dst *uint16, stride int, src *float32, n int, scale float32, div int, vp *vecParams) (done int) {
	panic("fp8: no vector kernel on this build")
}

func encodeBF16Asm(dst *uint16, stride int, src *float32, n int, scale float32, div int) (done int) {
	panic("fp8: no vector kernel on this build")
}

func maxAbsAsm(x *float32, n int) uint32 {
	panic("fp8: no vector kernel on this build")
}
