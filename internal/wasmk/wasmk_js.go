//go:build js && wasm && !purego

package wasmk

import (
	"fmt"
	"sync"
	"syscall/js"
	"unsafe"
)

// Module is an instantiated kernel module.
type Module struct{ exports js.Value }

// Func is one exported kernel.
type Func struct{ f js.Value }

// Load compiles and instantiates the module code (once per program for the
// same code: the caller keeps the Module) with the Go program's memory as
// env.mem.
func Load(code []byte) (m *Module, err error) {
	defer func() {
		if p := recover(); p != nil { // a JavaScript exception
			m, err = nil, fmt.Errorf("wasmk: instantiating the kernel module: %v", p)
		}
	}()
	mem, err := goMemory()
	if err != nil {
		return nil, err
	}
	wa := js.Global().Get("WebAssembly")
	if wa.Type() != js.TypeObject {
		return nil, fmt.Errorf("wasmk: this host has no WebAssembly object")
	}
	bytes := js.Global().Get("Uint8Array").New(len(code))
	js.CopyBytesToJS(bytes, code)
	env := js.Global().Get("Object").New()
	env.Set("mem", mem)
	imports := js.Global().Get("Object").New()
	imports.Set("env", env)
	// Synchronous compilation: the modules are a few KB (browsers allow
	// that on the main thread below 4 KB, and at any size in a worker,
	// where the lab runs its WebAssembly).
	inst := wa.Get("Instance").New(wa.Get("Module").New(bytes), imports)
	return &Module{exports: inst.Get("exports")}, nil
}

// Func returns the exported function name.
func (m *Module) Func(name string) (Func, error) {
	f := m.exports.Get(name)
	if f.Type() != js.TypeFunction {
		return Func{}, fmt.Errorf("wasmk: the module exports no function %q", name)
	}
	return Func{f}, nil
}

// Call runs the kernel with the parameter block at addr (from Addr) and
// returns its result, an i32 (0 for a kernel without one).
func (f Func) Call(addr uint32) int {
	if v := f.f.Invoke(addr); v.Type() == js.TypeNumber {
		return v.Int()
	}
	return 0
}

// escaped holds what Addr was given last: a pointer stored in a package
// variable escapes, so whatever is passed to Addr lives on the heap.
var escaped unsafe.Pointer

// Addr returns the address of p in the program's linear memory (an offset
// a kernel reads at). p must stay alive until the kernel returns (the
// caller holds the slice it points into).
func Addr(p unsafe.Pointer) uint32 {
	escaped = p
	return uint32(uintptr(p))
}

var (
	memOnce sync.Once
	memVal  js.Value
	memErr  error
)

// goMemory returns the WebAssembly.Memory of this Go program. wasm_exec.js
// keeps it in the Go object that runs the program (its _inst.exports.mem),
// which syscall/js does not expose; the one call from Go into that object
// that this package can cause is _makeFuncWrapper (js.FuncOf), so it wraps
// that method of the Go class for one js.FuncOf and reads this._inst there.
func goMemory() (js.Value, error) {
	memOnce.Do(func() {
		defer func() {
			if p := recover(); p != nil {
				memErr = fmt.Errorf("wasmk: finding the program's memory: %v", p)
			}
		}()
		goClass := js.Global().Get("Go")
		if goClass.Type() != js.TypeFunction {
			memErr = fmt.Errorf("wasmk: no Go class (wasm_exec.js) in this host")
			return
		}
		proto := goClass.Get("prototype")
		orig := proto.Get("_makeFuncWrapper")
		if orig.Type() != js.TypeFunction {
			memErr = fmt.Errorf("wasmk: wasm_exec.js's Go class has no _makeFuncWrapper")
			return
		}
		box := js.Global().Get("Object").New()
		wrap := js.Global().Get("Function").New("orig", "box",
			"return function(id) { if (this._inst) box.mem = this._inst.exports.mem; return orig.call(this, id); };").Invoke(orig, box)
		proto.Set("_makeFuncWrapper", wrap)
		f := js.FuncOf(func(js.Value, []js.Value) any { return nil })
		proto.Set("_makeFuncWrapper", orig)
		f.Release()
		mem := box.Get("mem")
		if mem.Type() != js.TypeObject || !mem.InstanceOf(js.Global().Get("WebAssembly").Get("Memory")) {
			memErr = fmt.Errorf("wasmk: wasm_exec.js's Go object holds no WebAssembly.Memory")
			return
		}
		memVal = mem
	})
	return memVal, memErr
}
