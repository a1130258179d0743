//go:build !js || !wasm || purego

package accum

// wasmRowsReady is false outside js/wasm: no WebAssembly kernel.
func wasmRowsReady() bool { return false }

// wasmRowsOff is chain_wasm.go's switch (no effect here).
var wasmRowsOff = false

// dotRowsWasm does nothing outside js/wasm.
func (m *tfdpa) dotRowsWasm(a, b []uint16, stride int, c, out []float32) bool { return false }

// dotWasm does nothing outside js/wasm.
func (m *tfdpa) dotWasm(a, b []uint16, c float32) (float32, bool) { return 0, false }

// wasmBaselineOff is baseline_wasm.go's switch (no effect here).
var wasmBaselineOff = false

// dotRowsKernel does nothing outside js/wasm (a constant false: DotRows's
// branch compiles away).
func dotRowsKernel(m Model, a, b []uint16, stride int, c, out []float32) bool { return false }
