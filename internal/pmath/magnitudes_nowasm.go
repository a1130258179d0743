//go:build !js || !wasm || purego

package pmath

// countKernelOff is magnitudes_wasm.go's switch (no effect here).
var countKernelOff = false

// countRowsWasm does nothing outside js/wasm.
func countRowsWasm(x []float32, rowStride, rows, cols int, t *[4]uint32, c *[4]int) bool {
	return false
}
