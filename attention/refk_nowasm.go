//go:build !js || !wasm || purego

package attention

// refKernelsBuilt is false: no kernel outside js/wasm (a constant, so that
// the reference's loop compiles without the kernel's branch).
const refKernelsBuilt = false

// refKernelsOff is refk_wasm.go's switch (no effect here).
var refKernelsOff = false

// dots4Wasm does nothing outside js/wasm.
func dots4Wasm(q []float64, codes []uint16, stride int, kt []float64, scale float64, s []float64) bool {
	return false
}

// sum4Wasm does nothing outside js/wasm.
func sum4Wasm(w []float64, r0, r1, r2, r3 []uint16, vt []float64, a0, a1, a2, a3 float64) (float64, float64, float64, float64, bool) {
	return a0, a1, a2, a3, false
}

// dotsF32Wasm does nothing outside js/wasm.
func dotsF32Wasm(q []float64, k []float32, stride int, scale float64, s []float64) bool { return false }
