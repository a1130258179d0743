package wgsl

import "context"

// The kernel plumbing every noun of the runner (emulation kernels,
// simulator, native arithmetic and decode) dispatches through: a kernel's
// module and bindings (kernelSpec, assembled by kernelSpec.source), its
// dispatches (call) and the backend that runs them (gpu.go natively and in
// the browser).

// access says how a kernel binds a storage buffer.
type access uint8

const (
	readOnly access = iota
	readWrite
)

// kernelSpec describes one compute pipeline: binding 0 is a uniform buffer
// of at most paramBytes bytes with a dynamic offset (one slot per dispatch),
// bindings 1..n the storage buffers.
// The module is assembled by source (shaders.go): consts, the include
// files, the kernel file.
type kernelSpec struct {
	file    string
	include []string
	entry   string
	consts  []constDecl
	storage []access
}

// paramBytes is the size of one dispatch's uniform slot (the largest
// minUniformBufferOffsetAlignment WebGPU allows).
const paramBytes = 256

// call is one dispatch: its kernel, the storage buffers it binds to
// bindings 1..n, its uniform parameters (u32 words) and its workgroup grid.
type call struct {
	k      *kernelSpec
	bufs   []buffer
	params []uint32
	x, y   uint32
}

// buffer is a device buffer usable as a storage buffer, copy source and
// copy destination.
type buffer interface {
	size() uint64
}

// backend is what a build of this package (native through cgo, js in the
// browser) provides.
type backend interface {
	// upload makes a buffer holding the pieces one after another (B of a
	// simulator submission references caches packed ahead instead of
	// copying them into one slice first).
	upload(label string, pieces ...[]byte) (buffer, error)
	alloc(label string, size uint64) (buffer, error)
	read(ctx context.Context, b buffer, size uint64) ([]byte, error)
	free(b buffer)
	// run compiles (once) each call's kernel, dispatches the calls in
	// order (each sees the writes of the ones before) and waits for the
	// result. With timed, the timing is measured with timestamp queries
	// when the device has them.
	run(ctx context.Context, calls []call, timed bool) (Timing, error)
	close()
}

// grid spreads n invocations of workgroups of wg over a 2D grid: x groups
// per row (at most 32768), y rows; stride is the number of invocations per
// row, which the kernels use to number invocations.
func grid(n, wg int) (x, y uint32, stride uint32) {
	groups := (n + wg - 1) / wg
	if groups == 0 {
		groups = 1
	}
	gx := min(groups, 32768)
	gy := (groups + gx - 1) / gx
	return uint32(gx), uint32(gy), uint32(gx * wg)
}
