// Package wasmk runs hand-written WebAssembly kernels from the js/wasm
// build of fp8lab, on the Go program's own memory.
//
// Go's WebAssembly code for a hot loop runs 2–3× slower than its amd64
// code for the same source (BENCHMARKS.md, "The browser against one native
// core"), and Go has no WebAssembly assembler. A kernel here is a small
// module written in the WebAssembly text format (a .wat file beside the
// package that uses it, built into a .wasm file by wat2wasm and embedded),
// which imports the Go program's linear memory as env.mem, so that it
// reads and writes Go slices in place: no copy in or out.
//
// The contract:
//   - Load compiles and instantiates a module; Funcs does it on first use
//     and keeps the exports, once per program. Either returns an error,
//     never panics, when the host has no WebAssembly API, the program's
//     memory cannot be found (Check says why) or the module does not
//     instantiate; the caller then keeps its Go code, which computes the
//     same bits.
//   - A kernel is called with Func.Call and the address of a parameter
//     block the caller fills (Addr), and returns an i32 or nothing; the
//     call is synchronous and runs no Go code, so nothing else touches the
//     memory it reads. The module imports the memory object itself, so it
//     sees the memory grow when Go grows it.
//   - What a kernel reads or writes must be heap or static memory: a
//     goroutine's stack can move while Call converts its argument (Go
//     copies a growing stack), and an address taken before would then
//     point at the old one. Addr records its argument in a package
//     variable, which makes the compiler allocate every object passed to
//     it on the heap (the pointer escapes); neither the heap nor static
//     data moves.
//
// Outside js/wasm, and with the purego build tag, Load always returns
// ErrUnavailable.
package wasmk

import "errors"

// ErrUnavailable is Load's error where no WebAssembly kernel can run.
var ErrUnavailable = errors.New("wasmk: WebAssembly kernels run only in the js/wasm build")
