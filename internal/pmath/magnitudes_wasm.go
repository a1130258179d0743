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

// countRowsWasm adds to c the counts of rows rows of cols elements,
// rowStride apart in x (rows·cols at most 2^30), as CountAbsAbove's loop
// counts them, through magnitudes.wat's kernel, and reports whether it ran
// (false when the kernel is not loaded or the rows are fewer elements than
// a kernel call pays for: 256).
func countRowsWasm(x []float32, rowStride, rows, cols int, t *[4]uint32, c *[4]int) bool {
	if rows*cols < 256 || countKernelOff {
		return false
	}
	fs, err := countKernel()
	if err != nil {
		return false
	}
	_ = x[(rows-1)*rowStride+cols-1]
	p := countParamsPool.Get().(*countParams)
	defer countParamsPool.Put(p)
	p.w = [8]uint32{wasmk.Addr(unsafe.Pointer(&x[0])), uint32(cols), t[0], t[1], t[2], t[3], uint32(rows), uint32(rowStride)}
	fs[0].Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(x)
	for i := range c {
		c[i] += int(p.c[i])
	}
	return true
}
