//go:build !js || !wasm || purego

package pmath

// countKernelOff is magnitudes_wasm.go's switch (no effect here).
var countKernelOff = false

// countAbsAboveWasm does nothing outside js/wasm.
func countAbsAboveWasm(x []float32, t *[4]uint32, c *[4]int) int { return 0 }
