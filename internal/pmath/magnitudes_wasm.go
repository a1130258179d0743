//go:build js && wasm && !purego

package pmath

import (
	_ "embed"
	"runtime"
	"sync"
	"unsafe"

	"github.com/fp8lab/fp8lab/internal/wasmk"
)

// magnitudesWasm is wasmk/magnitudes.wat built by wat2wasm (make
// wasm-kernels; internal/wasmk's TestWasmKernelsBuilt checks that it is).
//
//go:embed wasmk/magnitudes.wasm
var magnitudesWasm []byte

// countKernel is magnitudes.wat's count, loaded on first use; an error (no
// WebAssembly API to load it with) leaves the Go loop in charge.
var countKernel = wasmk.Funcs(magnitudesWasm, "count")

// countKernelOff turns the kernel off (the tests that compare it with the
// Go loop).
var countKernelOff = false

// countParams is a count call's parameter block (on the heap: package
// wasmk): 8 words, then the four counts.
type countParams struct {
	w [8]uint32
	c [4]uint32
}

var countParamsPool = sync.Pool{New: func() any { return new(countParams) }}

// countAbsAboveWasm counts the first n&^3 elements of x (n = len(x), below
// 2^30) as CountAbsAbove's loop does, through magnitudes.wat's kernel, and
// returns how many it counted (0 when the kernel is not loaded or x is
// shorter than a kernel call pays for).
func countAbsAboveWasm(x []float32, t *[4]uint32, c *[4]int) int {
	n := len(x) &^ 3
	if n < 256 || countKernelOff {
		return 0
	}
	fs, err := countKernel()
	if err != nil {
		return 0
	}
	k := fs[0]
	p := countParamsPool.Get().(*countParams)
	defer countParamsPool.Put(p)
	p.w = [8]uint32{wasmk.Addr(unsafe.Pointer(&x[0])), uint32(n), t[0], t[1], t[2], t[3], 0, 0}
	k.Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(x)
	for i := range c {
		c[i] += int(p.c[i])
	}
	return n
}
