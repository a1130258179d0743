//go:build js && wasm && !purego

package accum

import (
	_ "embed"
	"runtime"
	"sync"
	"unsafe"

	"github.com/fp8lab/fp8lab/internal/wasmk"
)

// baselineWasmCode is wasmk/baseline.wat built by wat2wasm (make
// wasm-kernels; internal/wasmk's TestWasmKernelsBuilt checks that it is).
//
//go:embed wasmk/baseline.wasm
var baselineWasmCode []byte

// wasmBaselineRows is baseline.wat's rows kernel, loaded on first use; an
// error (no WebAssembly API to load it with) leaves the Go loops in charge.
var wasmBaselineRows = wasmk.Funcs(baselineWasmCode, "rows")

// wasmBaselineOff turns the kernel off (the tests that compare it with the
// Go loops).
var wasmBaselineOff = false

// wasmBaselineParams is one rows call's parameter block: on the heap (a
// kernel reads only heap memory: package wasmk), reused through a pool.
type wasmBaselineParams struct{ w [9]uint32 }

var wasmBaselinePool = sync.Pool{New: func() any { return new(wasmBaselineParams) }}

// dotRowsWasm is DotRows for a baseline through baseline.wat's kernel:
// out[r] = m.Dot(a, row r of b, c[r]) for every row in one call, the same
// bits. It returns false, having done nothing, for the exact baseline (its
// sum is the Go code's), an empty call, or when the kernel is not loaded.
func (m *baseline) dotRowsWasm(a, b []uint16, stride int, c, out []float32) bool {
	if m.kind == baseExact || len(a) == 0 || len(out) == 0 || wasmBaselineOff {
		return false
	}
	fs, err := wasmBaselineRows()
	if err != nil {
		return false
	}
	p := wasmBaselinePool.Get().(*wasmBaselineParams)
	defer wasmBaselinePool.Put(p)
	p.w = [9]uint32{uint32(m.kind), wasmk.Addr(unsafe.Pointer(m.val)), wasmk.Addr(unsafe.Pointer(&a[0])),
		wasmk.Addr(unsafe.Pointer(&b[0])), uint32(stride), uint32(len(out)), uint32(len(a)), 0,
		wasmk.Addr(unsafe.Pointer(&out[0]))}
	if c != nil {
		p.w[7] = wasmk.Addr(unsafe.Pointer(&c[0]))
	}
	fs[0].Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	runtime.KeepAlive(out)
	return true
}
