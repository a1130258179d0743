//go:build !js || !wasm || purego

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
