//go:build !js || !wasm || purego

package pmath

import "math/rand/v2"

// normalKernelOff is normal_wasm.go's switch (no effect here).
var normalKernelOff = false

// fillNormalWasm does nothing outside js/wasm.
func fillNormalWasm(dst []float64, p *rand.PCG) bool { return false }
