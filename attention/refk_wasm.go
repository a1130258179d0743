//go:build js && wasm && !purego

package attention

import (
	_ "embed"
	"runtime"
	"sync"
	"unsafe"

	"github.com/fp8lab/fp8lab/internal/wasmk"
)

// refWasm is wasmk/ref.wat built by wat2wasm (make wasm-kernels;
// internal/wasmk's TestWasmKernelsBuilt checks that it is).
//
//go:embed wasmk/ref.wasm
var refWasm []byte

// refKernels are ref.wat's dots4, sum4 and dotsf32, loaded on first use; an error
// (no WebAssembly API to load them with) leaves the Go loops in charge.
var refKernels = wasmk.Funcs(refWasm, "dots4", "sum4", "dotsf32")

// refKernelsBuilt is true: this build has the kernels (they may still
// fail to load).
const refKernelsBuilt = true

// refKernelsOff turns the kernels off (the tests that compare them with
// the Go loops).
var refKernelsOff = false

func refKernelsReady() bool {
	_, err := refKernels()
	return err == nil && !refKernelsOff
}

// refParams is a kernel call's parameter block: 8 words, then 4 float64s
// (on the heap: package wasmk).
type refParams struct {
	w [8]uint32
	f [4]float64
}

var refParamsPool = sync.Pool{New: func() any { return new(refParams) }}

// dots4Wasm writes s[t] = scale·Σ_x q[x]·kt[codes[t·stride+x]] (each sum in
// order over x) for keys t < len(s), a multiple of 4: dot4's bits, four
// keys at a time, in one kernel call. It returns false, having done
// nothing, when the kernel is not loaded.
func dots4Wasm(q []float64, codes []uint16, stride int, kt []float64, scale float64, s []float64) bool {
	if len(s) == 0 || len(s)&3 != 0 || len(q) == 0 || !refKernelsReady() {
		return false
	}
	_ = codes[(len(s)-1)*stride+len(q)-1]
	fs, _ := refKernels()
	p := refParamsPool.Get().(*refParams)
	defer refParamsPool.Put(p)
	p.w = [8]uint32{wasmk.Addr(unsafe.Pointer(&q[0])), uint32(len(q)), wasmk.Addr(unsafe.Pointer(&codes[0])), uint32(len(s)),
		wasmk.Addr(unsafe.Pointer(&kt[0])), wasmk.Addr(unsafe.Pointer(&s[0])), uint32(stride), 0}
	p.f[0] = scale
	fs[0].Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(q)
	runtime.KeepAlive(codes)
	runtime.KeepAlive(kt)
	runtime.KeepAlive(s)
	return true
}

// sum4Wasm is sum4 in one kernel call (the same bits); ok false, having
// done nothing, when the kernel is not loaded.
func sum4Wasm(w []float64, r0, r1, r2, r3 []uint16, vt []float64, a0, a1, a2, a3 float64) (float64, float64, float64, float64, bool) {
	if len(w) == 0 || !refKernelsReady() {
		return a0, a1, a2, a3, len(w) == 0
	}
	r0, r1, r2, r3 = r0[:len(w)], r1[:len(w)], r2[:len(w)], r3[:len(w)]
	fs, _ := refKernels()
	p := refParamsPool.Get().(*refParams)
	defer refParamsPool.Put(p)
	p.w = [8]uint32{wasmk.Addr(unsafe.Pointer(&w[0])), uint32(len(w)),
		wasmk.Addr(unsafe.Pointer(&r0[0])), wasmk.Addr(unsafe.Pointer(&r1[0])), wasmk.Addr(unsafe.Pointer(&r2[0])), wasmk.Addr(unsafe.Pointer(&r3[0])),
		wasmk.Addr(unsafe.Pointer(&vt[0])), 0}
	p.f = [4]float64{a0, a1, a2, a3}
	fs[1].Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(w)
	runtime.KeepAlive(r0)
	runtime.KeepAlive(r1)
	runtime.KeepAlive(r2)
	runtime.KeepAlive(r3)
	runtime.KeepAlive(vt)
	return p.f[0], p.f[1], p.f[2], p.f[3], true
}

// dotsF32Wasm writes s[t] = scale·Σ_x q[x]·float64(k[t·stride+x]) (each sum
// in order over x) for keys t < len(s), a multiple of 4: referenceRow's
// bits on float32 keys, four keys at a time, in one kernel call. It
// returns false, having done nothing, when the kernel is not loaded.
func dotsF32Wasm(q []float64, k []float32, stride int, scale float64, s []float64) bool {
	if len(s) == 0 || len(s)&3 != 0 || len(q) == 0 || !refKernelsReady() {
		return false
	}
	_ = k[(len(s)-1)*stride+len(q)-1]
	fs, _ := refKernels()
	p := refParamsPool.Get().(*refParams)
	defer refParamsPool.Put(p)
	p.w = [8]uint32{wasmk.Addr(unsafe.Pointer(&q[0])), uint32(len(q)), wasmk.Addr(unsafe.Pointer(&k[0])), uint32(len(s)),
		0, wasmk.Addr(unsafe.Pointer(&s[0])), uint32(stride), 0}
	p.f[0] = scale
	fs[2].Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(q)
	runtime.KeepAlive(k)
	runtime.KeepAlive(s)
	return true
}
