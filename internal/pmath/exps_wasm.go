//go:build js && wasm && !purego

package pmath

import (
	_ "embed"
	"runtime"
	"sync"
	"unsafe"

	"github.com/fp8lab/fp8lab/internal/wasmk"
)

// expWasm is wasmk/exp.wat built by wat2wasm (make wasm-kernels;
// internal/wasmk's TestWasmKernelsBuilt checks that it is).
//
//go:embed wasmk/exp.wasm
var expWasm []byte

// expKernels is exp.wat's blocks, loaded on first use; an error (no
// WebAssembly API to load it with) leaves the Go chains in charge.
var expKernels = wasmk.Funcs(expWasm, "blocks")

// expKernelOff turns the kernel off (the tests that compare it with the Go
// chains).
var expKernelOff = false

// expParams is a blocks call's parameter block (on the heap: package
// wasmk): 4 words, then the constants.
type expParams struct {
	w [4]uint32
	f [5]float64
}

var expParamsPool = sync.Pool{New: func() any { return new(expParams) }}

// expBlocksWasm is expBlocks through exp.wat's kernel: Exp of the whole
// blocks of expBlock elements of x into dst, up to the first block with an
// element outside the fast-path domain; it returns the number of blocks
// done (0, having done nothing, when the kernel is not loaded).
func expBlocksWasm(dst, x []float64) int {
	blocks := len(x) / expBlock
	if blocks == 0 || expKernelOff {
		return 0
	}
	fs, err := expKernels()
	if err != nil {
		return 0
	}
	_ = dst[blocks*expBlock-1]
	p := expParamsPool.Get().(*expParams)
	defer expParamsPool.Put(p)
	p.w = [4]uint32{wasmk.Addr(unsafe.Pointer(&dst[0])), wasmk.Addr(unsafe.Pointer(&x[0])), uint32(blocks), 0}
	p.f = [5]float64{log2e, lnHi, lnLo, expFastMin, expFastMax}
	done := fs[0].Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(dst)
	runtime.KeepAlive(x)
	return int(done)
}
