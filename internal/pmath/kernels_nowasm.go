//go:build !js || !wasm || purego

// The stand-ins, outside js/wasm (and with the purego tag), of the
// WebAssembly kernels of normal_wasm.go, magnitudes_wasm.go and
// exps_wasm.go: each does nothing (false, or 0 blocks), and the Go loops
// run.

package pmath

import "math/rand/v2"

// normalKernelOff is normal_wasm.go's switch (no effect here).
var normalKernelOff = false

// fillNormalWasm does nothing outside js/wasm.
func fillNormalWasm(dst []float64, p *rand.PCG) bool { return false }

// pairsWasm does nothing outside js/wasm.
func pairsWasm(a, b []float32, z []float64, as, bs, bm float64) bool { return false }

// aliasWasm does nothing outside js/wasm.
func aliasWasm(dst []uint16, p *rand.PCG, s *AliasTable) bool { return false }

// pairsHeadsWasm does nothing outside js/wasm.
func pairsHeadsWasm(a, b []float32, z, mags []float64, d int, bm float64) bool { return false }

// expKernelOff is exps_wasm.go's switch (no effect here).
var expKernelOff = false

// expBlocksWasm does nothing outside js/wasm.
func expBlocksWasm(dst, x []float64) int { return 0 }

// countKernelOff is magnitudes_wasm.go's switch (no effect here).
var countKernelOff = false

// countRowsWasm does nothing outside js/wasm.
func countRowsWasm(x []float32, rowStride, rows, cols int, t *[4]uint32, c *[4]int) bool {
	return false
}
