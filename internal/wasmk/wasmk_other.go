//go:build !js || !wasm || purego

package wasmk

import "unsafe"

// Module is an instantiated kernel module (none outside js/wasm).
type Module struct{}

// Func is one exported kernel.
type Func struct{}

// Load returns ErrUnavailable outside js/wasm.
func Load(code []byte) (*Module, error) { return nil, ErrUnavailable }

// Check returns ErrUnavailable outside js/wasm.
func Check() error { return ErrUnavailable }

// Func returns ErrUnavailable outside js/wasm.
func (m *Module) Func(name string) (Func, error) { return Func{}, ErrUnavailable }

// Call does nothing outside js/wasm (no Func is ever returned there).
func (f Func) Call(addr uint32) int { return 0 }

// Addr returns the address of p, truncated to 32 bits (only meaningful in
// js/wasm, whose memory is 32-bit).
func Addr(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }
