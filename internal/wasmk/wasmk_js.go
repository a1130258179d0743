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

// Load compiles and instantiates the module code with the Go program's
// memory as env.mem (each call anew: Funcs keeps a module's exports).
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

// emptyModule is the smallest module a kernel module is: it imports the
// program's memory as env.mem and does nothing ((module (import "env"
// "mem" (memory 0))), 22 bytes).
var emptyModule = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x02, 0x0c, 0x01, 0x03,
	0x65, 0x6e, 0x76, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, 0x00}

// Check reports whether kernels run in this program: nil when its memory
// is found and a module importing it instantiates, else why not (the Go
// loops then compute everything, the same bits).
func Check() error {
	_, err := Load(emptyModule)
	return err
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
// that this package can cause is _makeFuncWrapper (js.FuncOf). So the Go
// class's _makeFuncWrapper is replaced, for one js.FuncOf, by a Go
// function, which JavaScript calls with the Go object as this: it reads
// the memory there and hands the call on to the original. (No JavaScript
// is evaluated from text: the lab's page forbids that, script-src 'self'
// 'wasm-unsafe-eval'.)
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
		var mem js.Value
		wrap := js.FuncOf(func(this js.Value, args []js.Value) any {
			if inst := this.Get("_inst"); inst.Type() == js.TypeObject {
				mem = inst.Get("exports").Get("mem")
			}
			return orig.Call("apply", this, argsOf(args))
		})
		defer wrap.Release()
		proto.Set("_makeFuncWrapper", wrap)
		f := js.FuncOf(func(js.Value, []js.Value) any { return nil })
		proto.Set("_makeFuncWrapper", orig)
		f.Release()
		if mem.Type() != js.TypeObject || !mem.InstanceOf(js.Global().Get("WebAssembly").Get("Memory")) {
			memErr = fmt.Errorf("wasmk: wasm_exec.js's Go object holds no WebAssembly.Memory")
			return
		}
		memVal = mem
	})
	return memVal, memErr
}

// argsOf returns args as []any for js.ValueOf.
func argsOf(args []js.Value) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = a
	}
	return out
}
