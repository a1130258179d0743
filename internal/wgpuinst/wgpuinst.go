//go:build !js && cgo

// Package wgpuinst creates wgpu-native instances with a descriptor whose
// every field is set, which the binding fp8lab uses
// (github.com/cogentcore/webgpu v0.23.0) does not do: see [Create]. It is
// cgo, apart from package wgsl, whose Go assembly a cgo package cannot
// hold.
package wgpuinst

/*
#include <stdint.h>

// The declarations of wgpu-native's webgpu.h and wgpu.h (v22, the library
// that github.com/cogentcore/webgpu v0.23.0 links) that createInstance
// needs, under names of fp8lab's own: WGPUChainedStruct,
// WGPUInstanceExtras, WGPUInstanceDescriptor and wgpuCreateInstance.
typedef struct fp8labChained {
	const struct fp8labChained *next;
	uint32_t sType;
} fp8labChained;
typedef struct {
	fp8labChained chain;
	uint32_t backends, flags, dx12ShaderCompiler, gles3MinorVersion;
	const char *dxilPath, *dxcPath;
} fp8labInstanceExtras;
typedef struct {
	const fp8labChained *nextInChain;
} fp8labInstanceDescriptor;

void *wgpuCreateInstance(const fp8labInstanceDescriptor *descriptor);

static void *fp8labCreateInstance(uint32_t backends) {
	fp8labInstanceExtras extras = {0}; // every field set: zero but these
	extras.chain.sType = 0x00030006;   // WGPUSType_InstanceExtras
	extras.backends = backends;
	fp8labInstanceDescriptor desc = {&extras.chain};
	return wgpuCreateInstance(&desc);
}
*/
import "C"

import (
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// Create is wgpu.CreateInstance for the given backends, with a
// descriptor whose every field is set: the binding's own (v0.23.0) passes
// wgpu-native a malloc'd WGPUInstanceExtras whose flags, GLES minor
// version and DXC paths are left as malloc found them (under -race
// wgpu-native panicked: "Unknown gles3 minor version"). nil when
// wgpu-native returns no instance.
func Create(backends wgpu.InstanceBackend) *wgpu.Instance {
	p := C.fp8labCreateInstance(C.uint32_t(backends))
	if p == nil {
		return nil
	}
	// wgpu.Instance is one field, the WGPUInstance handle (instanceLayout
	// is checked against it in TestCreate).
	return (*wgpu.Instance)(unsafe.Pointer(&instanceLayout{ref: p}))
}

// instanceLayout is wgpu.Instance's layout in the binding v0.23.0.
type instanceLayout struct{ ref unsafe.Pointer }
