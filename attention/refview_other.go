//go:build !amd64 || purego

package attention

// Without the AVX2 kernels (another architecture, the purego tag) the
// quantized reference reads the cache's own layout (referenceCodes) and
// builds no view.
const haveRefAsm = false

func refDots(out, q []float64, codes []uint16, dec *refDecoder) {
	panic("attention: refDots without the vector kernels")
}

func refSums(acc *[refLanes]float64, w []float64, codes []uint16, dec *refDecoder) {
	panic("attention: refSums without the vector kernels")
}

func refDecode(dst []float64, codes []uint16, dec *refDecoder) {
	panic("attention: refDecode without the vector kernels")
}

func refDotsDecoded(out, q, vals []float64) {
	panic("attention: refDotsDecoded without the vector kernels")
}

func refSumsDecoded(acc *[refLanes]float64, w, vals []float64) {
	panic("attention: refSumsDecoded without the vector kernels")
}

func transpose16(dst, src *uint16, stride, tiles int) {
	panic("attention: transpose16 without the vector kernels")
}
