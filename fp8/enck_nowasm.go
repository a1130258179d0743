//go:build !js || !wasm || purego

package fp8

// encKernelsOff is enck_wasm.go's switch (no effect here).
var encKernelsOff = false

// encodeRowsWasm does nothing outside js/wasm.
func (f Format) encodeRowsWasm(dst []uint16, dstRow, dstCol int, src []float32, srcRow, rows, cols int, scale float32, sat Saturation) bool {
	return false
}

// runMaxesWasm does nothing outside js/wasm.
func runMaxesWasm(x []float32, rows, cols, rowStride int) []uint32 { return nil }
