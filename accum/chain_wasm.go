//go:build js && wasm && !purego

package accum

import (
	_ "embed"
	"runtime"
	"sync"
	"unsafe"

	"github.com/fp8lab/fp8lab/internal/wasmk"
)

// chainWasm is wasmk/chain.wat built by wat2wasm (make wasm-kernels;
// internal/wasmk's TestWasmKernelsBuilt checks that it is).
//
//go:embed wasmk/chain.wasm
var chainWasm []byte

// wasmDotRows is chain.wat's dotrows and emurows kernels, loaded on first
// use; an error (no WebAssembly API to load them with) leaves the Go steps
// in charge.
var wasmDotRows = wasmk.Funcs(chainWasm, "dotrows", "emurows")

// wasmRowsReady reports whether dotRowsWasm runs (the kernel loaded).
func wasmRowsReady() bool {
	_, err := wasmDotRows()
	return err == nil && !wasmRowsOff
}

// wasmRowsOff turns the kernel off (the tests that compare it with the Go
// step).
var wasmRowsOff = false

// wasmRowsScratch is one dotRowsWasm call's parameter block, a's exponents
// and values (the kernel writes them) and the rows' progress: on the heap
// (a kernel reads only heap memory: package wasmk), reused through
// wasmRowsPool.
type wasmRowsScratch struct {
	params [16]uint32
	expA   [maxRowsA]int32
	valA   [maxRowsA]float64
	ents   [64]uint64 // one step's gathered entries (L <= 64)
	done   []int32
}

// wasmEnts holds, per exponent table (*[1 << 16]int32), the entry table
// the kernel gathers from (packEntries: the value's float64 bits with the
// exponent in the low 32; nil where the tables cannot be packed, and the
// Go step runs): built on first use, as the assembly step's are natively.
var wasmEnts sync.Map

func wasmEnt(s *tableStep) *[1 << 16]uint64 {
	if v, ok := wasmEnts.Load(s.exp); ok {
		return v.(*[1 << 16]uint64)
	}
	v, _ := wasmEnts.LoadOrStore(s.exp, packEntries(s.exp, s.val))
	return v.(*[1 << 16]uint64)
}

var wasmRowsPool = sync.Pool{New: func() any { return new(wasmRowsScratch) }}

// call runs the rows kernel k (dotrows or emurows: one parameter block)
// over a against len(out) rows of b, stride apart, with steps of L
// elements and the fast step s's F, fb and ezero, from c (nil: +0), and
// returns, per row, where its run stopped (w's, valid until w goes back
// to the pool). It writes the chains' values to out.
func (w *wasmRowsScratch) call(k wasmk.Func, ent *[1 << 16]uint64, s *tableStep, a, b []uint16, stride, L int, c, out []float32) []int32 {
	if cap(w.done) < len(out) {
		w.done = make([]int32, len(out))
	}
	done := w.done[:len(out)]
	p := &w.params
	*p = [16]uint32{wasmk.Addr(unsafe.Pointer(ent)), wasmk.Addr(unsafe.Pointer(&w.ents[0])), wasmk.Addr(unsafe.Pointer(&w.expA[0])),
		wasmk.Addr(unsafe.Pointer(&w.valA[0])), wasmk.Addr(unsafe.Pointer(&b[0])), uint32(stride), uint32(len(out)), uint32(len(a)),
		uint32(L), uint32(s.f), uint32(s.fb), uint32(s.ezero), 0, wasmk.Addr(unsafe.Pointer(&out[0])), wasmk.Addr(unsafe.Pointer(&done[0])),
		wasmk.Addr(unsafe.Pointer(&a[0]))} // the kernel fills expA and valA from a's codes
	if c != nil {
		p[12] = wasmk.Addr(unsafe.Pointer(&c[0]))
	}
	k.Call(wasmk.Addr(unsafe.Pointer(p)))
	runtime.KeepAlive(a)
	runtime.KeepAlive(b)
	runtime.KeepAlive(c)
	runtime.KeepAlive(out)
	runtime.KeepAlive(ent)
	return done
}

// dotRowsKernel is DotRows through the js/wasm kernel of a model that has
// one for its whole rows (the IEEE baselines, the emulated mma.sync); false,
// having done nothing, for the others or where the kernel does not run.
// (The T-FDPA models reach chain.wat through tfdpa.dotRows.)
func dotRowsKernel(m Model, a, b []uint16, stride int, c, out []float32) bool {
	switch m := m.(type) {
	case *baseline:
		return m.dotRowsWasm(a, b, stride, c, out)
	case *mmaSyncEmu:
		return m.dotRowsWasm(a, b, stride, c, out)
	}
	return false
}

// dotRowsWasm is dotRows through chain.wat's kernel: every row's whole
// steps up to its first special there, the rest (a step with a NaN or inf,
// a partial step at the end) here with the Go step, as dotRowsAsm does. It
// returns false, having done nothing, when the kernel is not loaded or
// the step's length is not a multiple of 4 up to 64 (the kernel's four
// lanes, and its float64 sum's exactness).
func (m *tfdpa) dotRowsWasm(a, b []uint16, stride int, c, out []float32) bool {
	if len(a) == 0 || len(out) == 0 || m.info.Step.L&3 != 0 || m.info.Step.L > 64 || !wasmRowsReady() {
		return false
	}
	fs, _ := wasmDotRows()
	s := m.fast
	ent := wasmEnt(s)
	if ent == nil {
		return false
	}
	w := wasmRowsPool.Get().(*wasmRowsScratch)
	defer wasmRowsPool.Put(w)
	n := len(a)
	done := w.call(fs[0], ent, s, a, b, stride, m.info.Step.L, c, out)
	for r, d := range done {
		if int(d) >= n {
			continue
		}
		cr := out[r]
		row := b[r*stride:][:n]
		for i := int(d); i < n; {
			cr, i = m.goStep(a, row, i, cr)
		}
		out[r] = cr
	}
	return true
}

// dotWasm is tfdpa.Dot through the kernel for a long vector: chunks of
// maxRowsA elements (whole steps: L divides it), each one DotRows row from
// the chain's value so far, which is the chain's own order. It returns
// false, having done nothing, for a vector shorter than a kernel call pays
// for, or where dotRowsWasm would not run.
func (m *tfdpa) dotWasm(a, b []uint16, c float32) (float32, bool) {
	L := m.info.Step.L
	if len(a) < 256 || m.fast == nil || maxRowsA%L != 0 || !wasmRowsReady() {
		return 0, false
	}
	cr, out := []float32{c}, []float32{0}
	for i := 0; i < len(a); i += maxRowsA {
		j := min(i+maxRowsA, len(a))
		if !m.dotRowsWasm(a[i:j], b[i:j], j-i, cr, out) {
			return 0, false // only before the first chunk: the kernel's conditions do not change
		}
		cr[0] = out[0]
	}
	return cr[0], true
}

// dotRowsWasm is DotRows for the emulated mma.sync through chain.wat's
// emurows: every row's whole instructions up to its first special there
// (dotAsm's instructions: two 16-element steps from +0, added to the row's
// accumulator), the rest here with Step, as Dot does. It returns false,
// having done nothing, without the FP32 accumulator's fast step, for an a
// longer than maxRowsA, or when the kernel is not loaded.
func (m *mmaSyncEmu) dotRowsWasm(a, b []uint16, stride int, c, out []float32) bool {
	s := m.fast
	if len(a) == 0 || len(out) == 0 || len(a) > maxRowsA || s == nil || m.ref.Rho == RNEFP16 || !wasmRowsReady() {
		return false
	}
	ent := wasmEnt(s)
	if ent == nil {
		return false
	}
	fs, _ := wasmDotRows()
	w := wasmRowsPool.Get().(*wasmRowsScratch)
	defer wasmRowsPool.Put(w)
	n := len(a)
	done := w.call(fs[1], ent, s, a, b, stride, 16, c, out)
	for r, d := range done {
		cr := out[r]
		row := b[r*stride:][:n]
		for i := int(d); i < n; i += 32 {
			j := min(i+32, n)
			cr = m.Step(a[i:j], row[i:j], cr)
		}
		out[r] = cr
	}
	return true
}
