//go:build js

package wgsl

import (
	"context"
	"fmt"
	"slices"
	"syscall/js"
	"time"

	"github.com/cogentcore/webgpu/jsx"
	"github.com/cogentcore/webgpu/wgpu"
)

// platform is the browser side. The js build of the binding returns nil
// errors from every create call and reports validation errors only on the
// console (a kernel that failed to compile would read back zeros), so scope
// wraps each group of calls in the device's own pushErrorScope /
// popErrorScope and turns a JavaScript exception into an error.
type platform struct {
	dev js.Value
}

func (p *platform) scope(f func() error) (err error) {
	p.dev.Call("pushErrorScope", "validation")
	func() {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("javascript: %v", v)
			}
		}()
		err = f()
	}()
	res, ok := jsx.Await(p.dev.Call("popErrorScope"))
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("popErrorScope failed")
	}
	if res.Truthy() {
		return fmt.Errorf("validation error: %s", res.Get("message").String())
	}
	return nil
}

// Timestamp queries are not available through the js binding (no
// CreateQuerySet): times are wall-clock.
func (p *platform) hasTimestamps() bool                                  { return false }
func (p *platform) timestamp(*wgpu.CommandEncoder, uint32) error         { return nil }
func (p *platform) resolve(*wgpu.CommandEncoder) error                   { return nil }
func (p *platform) elapsed(context.Context, *gpu) (time.Duration, error) { return 0, nil }

// wait blocks (on the promise of onSubmittedWorkDone) until the queue's
// work is done. It must not run inside a js.FuncOf callback.
func (p *platform) wait(g *gpu) { g.queue.OnSubmittedWorkDone(func(wgpu.QueueWorkDoneStatus) {}) }

func (p *platform) close(g *gpu) { p.dev.Call("destroy") }

// upload makes a storage buffer holding the pieces one after another (a
// multiple of 4 bytes in all), mapped at creation with its contents: the
// browser's own staging (several pieces joined into one slice first).
func (p *platform) upload(g *gpu, label string, pieces [][]byte) (b *wgpu.Buffer, err error) {
	data := pieces[0]
	if len(pieces) > 1 {
		data = slices.Concat(pieces...)
	}
	err = p.scope(func() (err error) {
		b, err = g.dev.CreateBufferInit(&wgpu.BufferInitDescriptor{Label: label, Contents: data, Usage: storageUsage})
		return err
	})
	return b, err
}

func endPass(pass *wgpu.ComputePassEncoder) error {
	pass.End()
	return nil
}

// openBackend asks navigator.gpu for a high-performance adapter and a device
// with explicit limits. Options.Adapter is matched against the adapter's
// description; there is only one adapter in a browser.
func openBackend(ctx context.Context, opt Options) (backend, AdapterInfo, error) {
	gpuObj := js.Global().Get("navigator").Get("gpu")
	if !gpuObj.Truthy() {
		return nil, AdapterInfo{}, fmt.Errorf("%w: navigator.gpu is missing (WebGPU is off in this browser)", ErrNoAdapter)
	}
	opts := js.Global().Get("Object").New()
	opts.Set("powerPreference", "high-performance")
	adapter, ok := jsx.Await(gpuObj.Call("requestAdapter", opts))
	if !ok || !adapter.Truthy() {
		return nil, AdapterInfo{}, fmt.Errorf("%w: requestAdapter returned null (Chromium needs --enable-unsafe-webgpu without a GPU)", ErrNoAdapter)
	}
	d := jsAdapterDesc(adapter)
	if want := opt.adapterWanted(); want != "" && !matchAdapter(d.text(), want) {
		return nil, AdapterInfo{}, fmt.Errorf("%w: the browser's adapter %s does not match %q", ErrNoAdapter, d.info(), want)
	}
	al := adapter.Get("limits")
	req := requestLimits(limitSet{
		maxBuffer:           uint64(al.Get("maxBufferSize").Float()),
		maxStorageBinding:   uint64(al.Get("maxStorageBufferBindingSize").Float()),
		maxWorkgroupStorage: uint32(al.Get("maxComputeWorkgroupStorageSize").Int()),
		maxInvocations:      uint32(al.Get("maxComputeInvocationsPerWorkgroup").Int()),
		maxWorkgroupSizeX:   uint32(al.Get("maxComputeWorkgroupSizeX").Int()),
		maxStorageBuffers:   uint32(al.Get("maxStorageBuffersPerShaderStage").Int()),
		minUniformAlign:     uint32(al.Get("minUniformBufferOffsetAlignment").Int()),
		minStorageAlign:     uint32(al.Get("minStorageBufferOffsetAlignment").Int()),
	})
	lim := js.Global().Get("Object").New()
	lim.Set("maxBufferSize", float64(req.maxBuffer))
	lim.Set("maxStorageBufferBindingSize", float64(req.maxStorageBinding))
	lim.Set("maxComputeWorkgroupStorageSize", req.maxWorkgroupStorage)
	lim.Set("maxComputeInvocationsPerWorkgroup", req.maxInvocations)
	lim.Set("maxComputeWorkgroupSizeX", req.maxWorkgroupSizeX)
	lim.Set("maxStorageBuffersPerShaderStage", req.maxStorageBuffers)
	desc := js.Global().Get("Object").New()
	desc.Set("requiredLimits", lim)
	if f := adapter.Get("features"); f.Truthy() && f.Call("has", "shader-f16").Bool() {
		desc.Set("requiredFeatures", js.ValueOf([]any{"shader-f16"}))
	}
	dev, ok := jsx.Await(adapter.Call("requestDevice", desc))
	if !ok || !dev.Truthy() {
		return nil, AdapterInfo{}, fmt.Errorf("%w (%s)", errNoDevice, d.info())
	}
	g, info := newJSBackend(dev, d, req)
	return g, info, nil
}

func jsAdapterDesc(adapter js.Value) adapterDesc {
	d := adapterDesc{backend: "webgpu", typ: "unknown"}
	if in := adapter.Get("info"); in.Truthy() {
		d.vendor = in.Get("vendor").String()
		d.name = in.Get("description").String()
		if d.name == "" {
			d.name = in.Get("architecture").String()
		}
		d.driver = in.Get("device").String()
	}
	if d.name == "" {
		d.name = "browser WebGPU adapter"
	}
	if fb := adapter.Get("isFallbackAdapter"); fb.Truthy() {
		d.typ = "cpu"
	} else if in := adapter.Get("info"); in.Truthy() && in.Get("isFallbackAdapter").Truthy() {
		d.typ = "cpu"
	}
	return d
}

func newJSBackend(dev js.Value, d adapterDesc, req limitSet) (*gpu, AdapterInfo) {
	wd := wgpu.NewDevice(dev)
	g := &gpu{dev: &wd, limits: req, pipes: map[string]*gpuPipeline{}, plat: platform{dev: dev}}
	g.queue = g.dev.GetQueue()
	if lost := dev.Get("lost"); lost.Truthy() {
		lost.Call("then", js.FuncOf(func(_ js.Value, args []js.Value) any {
			m := "device lost"
			if len(args) > 0 && args[0].Truthy() {
				m = args[0].Get("message").String()
			}
			g.lost.Store(&m)
			return nil
		}))
	}
	info := d.info()
	info.MaxBuffer, info.MaxStorageBinding, info.MaxWorkgroupStorage = req.maxBuffer, req.maxStorageBinding, req.maxWorkgroupStorage
	if f := dev.Get("features"); f.Truthy() {
		info.ShaderF16 = f.Call("has", "shader-f16").Bool()
	}
	return g, info
}

// OpenDevice returns a Runner over a GPUDevice created in JavaScript (the
// lab page creates it with the features and limits it wants). The device
// must allow storage bindings of at least 128 MiB (WebGPU's default).
func OpenDevice(ctx context.Context, dev js.Value) (*Runner, error) {
	if !dev.Truthy() {
		return nil, fmt.Errorf("%w: no GPUDevice given", ErrNoAdapter)
	}
	l := dev.Get("limits")
	req := limitSet{
		maxBuffer:           uint64(l.Get("maxBufferSize").Float()),
		maxStorageBinding:   uint64(l.Get("maxStorageBufferBindingSize").Float()),
		maxWorkgroupStorage: uint32(l.Get("maxComputeWorkgroupStorageSize").Int()),
	}
	g, info := newJSBackend(dev, adapterDesc{name: "browser WebGPU device", backend: "webgpu", typ: "unknown"}, req)
	return &Runner{be: g, info: info}, nil
}
