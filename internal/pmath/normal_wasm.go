//go:build js && wasm && !purego

package pmath

import (
	_ "embed"
	"math/rand/v2"
	"runtime"
	"sync"
	"unsafe"

	"github.com/fp8lab/fp8lab/internal/wasmk"
)

// normalWasm is wasmk/normal.wat built by wat2wasm (make wasm-kernels;
// internal/wasmk's TestWasmKernelsBuilt checks that it is).
//
//go:embed wasmk/normal.wasm
var normalWasm []byte

// normalKernels are normal.wat's fill, pairs, alias and heads, loaded on first
// use; an error (no WebAssembly API to load them with) leaves the Go loops
// in charge.
var normalKernels = wasmk.Funcs(normalWasm, "fill", "pairs", "alias", "heads")

// pairsParams is a pairs call's parameter block (on the heap: package
// wasmk): 4 words, then as, bs, bm.
type pairsParams struct {
	w [4]uint32
	f [3]float64
}

var pairsParamsPool = sync.Pool{New: func() any { return new(pairsParams) }}

// pairsWasm is PairsToF32's loop for the n = len(a) pairs of z through
// normal.wat's pairs, false (having done nothing) when the kernel is not
// loaded or normalKernelOff is set.
func pairsWasm(a, b []float32, z []float64, as, bs, bm float64) bool {
	if len(a) == 0 || normalKernelOff {
		return false
	}
	fs, err := normalKernels()
	if err != nil {
		return false
	}
	k := fs[1]
	_, _ = b[len(a)-1], z[2*len(a)-1]
	p := pairsParamsPool.Get().(*pairsParams)
	defer pairsParamsPool.Put(p)
	p.w = [4]uint32{wasmk.Addr(unsafe.Pointer(&a[0])), wasmk.Addr(unsafe.Pointer(&b[0])), wasmk.Addr(unsafe.Pointer(&z[0])), uint32(len(a))}
	p.f = [3]float64{as, bs, bm}
	k.Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(z)
	return true
}

// normalKernelOff turns the kernels off (the tests that compare them with
// the Go loops).
var normalKernelOff = false

// normalConsts are expNear's and wedgeBelow's constants as the kernel
// reads them: the same float64 values the Go code's constant expressions
// round to.
var normalConsts = [4]float64{1.0 / 6, 1.0 / 24, 1.0 / 120, wedgeMargin}

// normalParams is a fill call's parameter block (on the heap: package
// wasmk): 8 words, then the state.
type normalParams struct {
	w  [8]uint32
	st [2]uint64 // hi, lo
}

var normalParamsPool = sync.Pool{New: func() any { return new(normalParams) }}

// fillNormalWasm is FillNormalPCG through normal.wat's kernel: the draws
// it leaves (the tail, an undecided wedge) through zigSlow, from the state
// it stopped at. It returns false, having done nothing, when the kernel is
// not loaded.
func fillNormalWasm(dst []float64, p *rand.PCG) bool {
	if len(dst) == 0 || normalKernelOff {
		return false
	}
	fs, err := normalKernels()
	if err != nil {
		return false
	}
	k := fs[0]
	w := normalParamsPool.Get().(*normalParams)
	defer normalParamsPool.Put(w)
	cur := pcgOf(p)
	for j := 0; j < len(dst); {
		rest := dst[j:]
		w.w = [8]uint32{wasmk.Addr(unsafe.Pointer(&rest[0])), uint32(len(rest)),
			wasmk.Addr(unsafe.Pointer(&zk[0])), wasmk.Addr(unsafe.Pointer(&zw[0])), wasmk.Addr(unsafe.Pointer(&zf[0])),
			wasmk.Addr(unsafe.Pointer(&expTable[0])), wasmk.Addr(unsafe.Pointer(&normalConsts[0])), 0}
		w.st = [2]uint64{cur.hi, cur.lo}
		done := k.Call(wasmk.Addr(unsafe.Pointer(w)))
		cur = pcgState{w.st[0], w.st[1]}
		if j += done; j < len(dst) {
			// The draw the kernel left, from its current Uint64.
			dst[j] = zigSlow(pcgOut(cur.hi, cur.lo), &cur)
			j++
		}
	}
	runtime.KeepAlive(dst)
	p.Seed(cur.hi, cur.lo)
	return true
}

// aliasParams is an alias call's parameter block (on the heap: package
// wasmk): 4 words, then the state.
type aliasParams struct {
	w  [4]uint32
	st [2]uint64 // hi, lo
}

var aliasParamsPool = sync.Pool{New: func() any { return new(aliasParams) }}

// aliasWasm is AliasPCG through normal.wat's alias, false (having done
// nothing) when the kernel is not loaded or normalKernelOff is set.
func aliasWasm(dst []uint16, p *rand.PCG, s *AliasTable) bool {
	if normalKernelOff {
		return false
	}
	fs, err := normalKernels()
	if err != nil {
		return false
	}
	w := aliasParamsPool.Get().(*aliasParams)
	defer aliasParamsPool.Put(w)
	cur := pcgOf(p)
	w.w = [4]uint32{wasmk.Addr(unsafe.Pointer(&dst[0])), uint32(len(dst)),
		wasmk.Addr(unsafe.Pointer(&s.Thr[0])), wasmk.Addr(unsafe.Pointer(&s.Alias[0]))}
	w.st = [2]uint64{cur.hi, cur.lo}
	fs[2].Call(wasmk.Addr(unsafe.Pointer(w)))
	runtime.KeepAlive(dst)
	runtime.KeepAlive(s)
	p.Seed(w.st[0], w.st[1])
	return true
}

// headsParams is a heads call's parameter block (on the heap: package
// wasmk): 7 words and one unused, then bm.
type headsParams struct {
	w  [8]uint32
	bm float64
}

var headsParamsPool = sync.Pool{New: func() any { return new(headsParams) }}

// pairsHeadsWasm is PairsToF32Heads's loop through normal.wat's heads,
// false (having done nothing) when the kernel is not loaded or
// normalKernelOff is set.
func pairsHeadsWasm(a, b []float32, z, mags []float64, d int, bm float64) bool {
	if len(a) == 0 || normalKernelOff {
		return false
	}
	fs, err := normalKernels()
	if err != nil {
		return false
	}
	_, _ = b[len(a)-1], z[2*len(a)-1]
	p := headsParamsPool.Get().(*headsParams)
	defer headsParamsPool.Put(p)
	p.w = [8]uint32{wasmk.Addr(unsafe.Pointer(&a[0])), wasmk.Addr(unsafe.Pointer(&b[0])), wasmk.Addr(unsafe.Pointer(&z[0])), uint32(len(a)),
		wasmk.Addr(unsafe.Pointer(&mags[0])), uint32(len(mags)), uint32(d), 0}
	p.bm = bm
	fs[3].Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(z)
	runtime.KeepAlive(mags)
	return true
}
