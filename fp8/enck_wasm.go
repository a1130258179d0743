//go:build js && wasm && !purego

package fp8

import (
	_ "embed"
	"math"
	"runtime"
	"sync"
	"unsafe"

	"github.com/fp8lab/fp8lab/internal/wasmk"
)

// encodeWasm is wasmk/encode.wat built by wat2wasm (make wasm-kernels;
// internal/wasmk's TestWasmKernelsBuilt checks that it is).
//
//go:embed wasmk/encode.wasm
var encodeWasm []byte

// encKernels are encode.wat's table, bf16 and maxrows, loaded on first
// use; an error (no WebAssembly API to load them with) leaves the Go loops
// in charge.
var encKernels = wasmk.Funcs(encodeWasm, "table", "bf16", "maxrows")

// encKernelsOff turns the kernels off (the tests that compare them with
// the Go loops).
var encKernelsOff = false

// encScratch is a kernel call's parameter block and slow list (on the
// heap: package wasmk).
type encScratch struct {
	p    [12]uint32
	slow []int32
}

var encScratchPool = sync.Pool{New: func() any { return new(encScratch) }}

// encodeRowsWasm is EncodeScaledRows through encode.wat's kernels, for
// bfloat16 and for the formats encodeScalar converts through its table
// (the elements the kernel leaves, as the Go loops convert them); false,
// having done nothing, for the other formats and saturations or when the
// kernels are not loaded.
func (f Format) encodeRowsWasm(dst []uint16, dstRow, dstCol int, src []float32, srcRow, rows, cols int, scale float32, sat Saturation) bool {
	if encKernelsOff {
		return false
	}
	var p *encParams
	k := 1 // bf16
	if f != FormatBF16 {
		if f >= numFormats {
			return false
		}
		if p = encTable[f]; p == nil || !p.tabled(sat) {
			return false
		}
		k = 0
	}
	fs, err := encKernels()
	if err != nil {
		return false
	}
	n := rows * cols
	w := encScratchPool.Get().(*encScratch)
	defer encScratchPool.Put(w)
	if cap(w.slow) < n {
		w.slow = make([]int32, n)
	}
	tab := uint32(0)
	if p != nil {
		t := p.codes(sat)
		tab = wasmk.Addr(unsafe.Pointer(&t[0]))
	}
	div := uint32(0)
	if scale != 1 {
		div = 1
	}
	w.p = [12]uint32{wasmk.Addr(unsafe.Pointer(&src[0])), uint32(srcRow), uint32(rows), uint32(cols),
		wasmk.Addr(unsafe.Pointer(&dst[0])), uint32(dstRow), uint32(dstCol), tab,
		div, math.Float32bits(scale), wasmk.Addr(unsafe.Pointer(&w.slow[0])), 0}
	ns := fs[k].Call(wasmk.Addr(unsafe.Pointer(&w.p)))
	runtime.KeepAlive(src)
	runtime.KeepAlive(dst)
	if p != nil {
		runtime.KeepAlive(p.tab[sat&1].t)
	}
	for _, e := range w.slow[:ns] {
		r, c := int(e)/cols, int(e)%cols
		d, s := r*dstRow+c*dstCol, r*srcRow+c
		if p != nil {
			p.encodeLoop(dst[d:d+1], 1, src[s:s+1], scale, true, sat)
		} else {
			encodeBF16Loop(dst[d:d+1], 1, src[s:s+1], scale, true)
		}
	}
	return true
}

// runMaxesWasm returns Calibrate's runMax of every row of x (rows of cols
// elements, rowStride apart) through encode.wat's maxrows; nil when the
// kernels are not loaded.
func runMaxesWasm(x []float32, rows, cols, rowStride int) []uint32 {
	if rows <= 0 || cols <= 0 || encKernelsOff {
		return nil
	}
	fs, err := encKernels()
	if err != nil {
		return nil
	}
	_ = x[(rows-1)*rowStride+cols-1]
	out := make([]uint32, rows)
	w := encScratchPool.Get().(*encScratch)
	defer encScratchPool.Put(w)
	w.p = [12]uint32{wasmk.Addr(unsafe.Pointer(&x[0])), uint32(rows), uint32(cols), uint32(rowStride),
		wasmk.Addr(unsafe.Pointer(&out[0]))}
	fs[2].Call(wasmk.Addr(unsafe.Pointer(&w.p)))
	runtime.KeepAlive(x)
	return out
}
