package wgsl

import (
	"fmt"
	"strings"
)

// adapterDesc is what adapter choice needs to know of an adapter.
type adapterDesc struct {
	name, vendor, driver, backend, typ string
}

func (d adapterDesc) info() AdapterInfo {
	return AdapterInfo{Name: d.name, Vendor: d.vendor, Driver: d.driver, Backend: d.backend, Type: d.typ,
		Hardware: d.typ == "discrete-gpu" || d.typ == "integrated-gpu" || d.typ == "virtual-gpu"}
}

// text is what Options.Adapter is matched against.
func (d adapterDesc) text() string {
	return strings.Join([]string{d.name, d.vendor, d.driver, d.backend, d.typ}, " ")
}

// rank orders adapters: the type first (discrete > integrated > virtual >
// cpu > unknown), then the backend (Vulkan, Metal, D3D12 > others).
func (d adapterDesc) rank() int {
	r := 0
	switch d.typ {
	case "discrete-gpu":
		r = 40
	case "integrated-gpu":
		r = 30
	case "virtual-gpu":
		r = 20
	case "cpu":
		r = 10
	}
	switch d.backend {
	case "vulkan", "metal", "d3d12":
		r += 2
	case "opengl", "opengles":
		r += 1
	}
	return r
}

// chooseAdapter returns the index of the adapter to use: the best-ranked one
// whose text contains want (case-insensitively); with want empty, the
// best-ranked one that is not OpenGL. An OpenGL adapter is used only when
// asked for by name: the shaders are checked on Vulkan (lavapipe, the
// H200), and on the GL backend llvmpipe ran one of the wgsl tests' decode
// benchmarks for over seven minutes on one core, where lavapipe takes
// seconds. Ties keep the enumeration order.
func chooseAdapter(list []adapterDesc, want string) (int, error) {
	best := -1
	var gl []string
	for i, d := range list {
		if want != "" && !matchAdapter(d.text(), want) {
			continue
		}
		if want == "" && (d.backend == "opengl" || d.backend == "opengles") {
			gl = append(gl, d.info().String())
			continue
		}
		if best < 0 || d.rank() > list[best].rank() {
			best = i
		}
	}
	if best >= 0 {
		return best, nil
	}
	if len(list) == 0 {
		return -1, fmt.Errorf("%w: the WebGPU instance lists no adapter (is a Vulkan driver installed? on Debian: apt-get install mesa-vulkan-drivers libvulkan1)", ErrNoAdapter)
	}
	if len(gl) == len(list) {
		return -1, fmt.Errorf("%w: only OpenGL adapters (%s), which are used only when asked for by name (%s=opengl): install a Vulkan driver (on Debian: apt-get install mesa-vulkan-drivers libvulkan1)",
			ErrNoAdapter, strings.Join(gl, "; "), EnvAdapter)
	}
	var names []string
	for _, d := range list {
		names = append(names, d.info().String())
	}
	return -1, fmt.Errorf("%w: no adapter matches %q (from %s or the option); adapters: %s",
		ErrNoAdapter, want, EnvAdapter, strings.Join(names, "; "))
}

// limitSet holds the limits fp8lab raises above WebGPU's defaults, as the
// adapter reports them or as requested.
type limitSet struct {
	maxBuffer, maxStorageBinding          uint64
	maxWorkgroupStorage, maxInvocations   uint32
	maxWorkgroupSizeX, maxStorageBuffers  uint32
	minUniformAlign, minStorageAlign      uint32
	maxWorkgroupsPerDim, maxUniformBuffer uint32
}

// WebGPU's default limits for the fields fp8lab raises
// (https://www.w3.org/TR/webgpu/#limits).
var defaultLimits = limitSet{
	maxBuffer:           256 << 20,
	maxStorageBinding:   128 << 20,
	maxWorkgroupStorage: 16384,
	maxInvocations:      256,
	maxWorkgroupSizeX:   256,
	maxStorageBuffers:   8,
	minUniformAlign:     256,
	minStorageAlign:     256,
	maxWorkgroupsPerDim: 65535,
	maxUniformBuffer:    65536,
}

// What fp8lab would like: large buffers (the KV cache of decode-bw at
// long context), 32 KiB of workgroup memory.
const (
	wantMaxBuffer          = 8 << 30
	wantMaxStorageBinding  = 4<<30 - 4
	wantWorkgroupStorage   = 32768
	wantMaxStorageBuffers  = 8
	wantMaxInvocations     = 1024
	wantMaxWorkgroupSizeX  = 1024
	undefinedLimit64       = ^uint64(0)
	undefinedLimit32       = ^uint32(0)
	plausibleAdapterMaxBuf = 1 << 50
)

// requestLimits returns the limits to request from an adapter that reports
// ad: each raised field is min(what fp8lab wants, what the adapter offers);
// a value the adapter reports as "undefined"
// (2^64-1, which the H200 reports for its buffer size and the binding reads
// as "use the default") or as 0 counts as "anything". Alignments (where lower
// is better) take max(default, adapter).
func requestLimits(ad limitSet) limitSet {
	up64 := func(_, want, have uint64) uint64 {
		if have == 0 || have == undefinedLimit64 || have > plausibleAdapterMaxBuf {
			return want
		}
		return min(want, have)
	}
	up32 := func(_, want, have uint32) uint32 {
		if have == 0 || have == undefinedLimit32 {
			return want
		}
		return min(want, have)
	}
	down32 := func(def, have uint32) uint32 {
		if have == undefinedLimit32 {
			return def
		}
		return max(def, have)
	}
	r := limitSet{
		maxBuffer:           up64(defaultLimits.maxBuffer, wantMaxBuffer, ad.maxBuffer),
		maxStorageBinding:   up64(defaultLimits.maxStorageBinding, wantMaxStorageBinding, ad.maxStorageBinding),
		maxWorkgroupStorage: up32(defaultLimits.maxWorkgroupStorage, wantWorkgroupStorage, ad.maxWorkgroupStorage),
		maxInvocations:      up32(defaultLimits.maxInvocations, wantMaxInvocations, ad.maxInvocations),
		maxWorkgroupSizeX:   up32(defaultLimits.maxWorkgroupSizeX, wantMaxWorkgroupSizeX, ad.maxWorkgroupSizeX),
		maxStorageBuffers:   up32(defaultLimits.maxStorageBuffers, wantMaxStorageBuffers, ad.maxStorageBuffers),
		minUniformAlign:     down32(defaultLimits.minUniformAlign, ad.minUniformAlign),
		minStorageAlign:     down32(defaultLimits.minStorageAlign, ad.minStorageAlign),
		maxWorkgroupsPerDim: defaultLimits.maxWorkgroupsPerDim,
		maxUniformBuffer:    defaultLimits.maxUniformBuffer,
	}
	r.maxStorageBinding = min(r.maxStorageBinding, r.maxBuffer)
	return r
}
