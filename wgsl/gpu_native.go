//go:build !js && cgo

package wgsl

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/cogentcore/webgpu/wgpu"
	"github.com/fp8lab/fp8lab/internal/wgpuinst"
)

// platform is the native side: wgpu-native through cgo. Its create calls
// return validation errors themselves (the binding wraps each in an error
// scope), so scope only runs f.
type platform struct {
	inst     *wgpu.Instance
	adapter  *wgpu.Adapter
	qs       *wgpu.QuerySet
	resolved *wgpu.Buffer
	stage    [2]*wgpu.Buffer // upload's staging buffers (nil until the first upload)
	mapped   [2]bool         // stage[i] is mapped for writing
}

func (p *platform) scope(f func() error) error { return f() }

func (p *platform) hasTimestamps() bool { return p.qs != nil }

func (p *platform) timestamp(enc *wgpu.CommandEncoder, i uint32) error {
	return enc.WriteTimestamp(p.qs, i)
}

func (p *platform) resolve(enc *wgpu.CommandEncoder) error {
	if err := enc.ResolveQuerySet(p.qs, 0, 2, p.resolved, 0); err != nil {
		return err
	}
	return nil
}

// elapsed reads the two resolved timestamps and returns their difference,
// read as nanoseconds.
func (p *platform) elapsed(ctx context.Context, g *gpu) (time.Duration, error) {
	b, err := g.mapRead(ctx, p.resolved, 16)
	if err != nil {
		return 0, err
	}
	t0, t1 := binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])
	if t1 <= t0 {
		return 0, nil
	}
	return time.Duration(t1 - t0), nil
}

// wait blocks until the queue's submitted work is done.
//
// It never calls Poll with wait = true: in the wgpu-native of this binding
// (wgpu-core 22) a waiting poll gives up after 5 s (CLEANUP_WAIT_MS) and then
// treats the newest submission as finished anyway, returning its command
// buffers and staging memory for reuse while the GPU may still be executing
// them. On lavapipe, whose first dispatch of a pipeline includes the LLVM
// compile (seconds for the decode kernels with an empty shader cache, more
// on a loaded machine), that freed the command list under lavapipe's queue
// thread: the segmentation faults of `make test` on a fresh machine
// (TestWaitOutlastsPollTimeout reproduces it). A non-waiting poll reads the
// queue's real progress, so wait polls without blocking until the queue is
// empty: busy for the first millisecond, then with sleeps growing to 1 ms.
func (p *platform) wait(g *gpu) {
	start := time.Now()
	nap := 20 * time.Microsecond
	for !g.dev.Poll(false, nil) {
		if time.Since(start) < time.Millisecond {
			continue
		}
		time.Sleep(nap)
		nap = min(2*nap, time.Millisecond)
	}
}

func (p *platform) close(g *gpu) {
	for _, b := range p.stage {
		if b != nil {
			b.Destroy()
			b.Release()
		}
	}
	if p.qs != nil {
		p.qs.Release()
		p.resolved.Destroy()
		p.resolved.Release()
	}
	g.queue.Release()
	g.dev.Release()
	p.adapter.Release()
	p.inst.Release()
}

func endPass(pass *wgpu.ComputePassEncoder) error { return pass.End() }

// stageBytes is the size of each of upload's two staging buffers (a
// variable for the test of pieces, TestUploadPieces; read when they are made).
var stageBytes uint64 = 32 << 20

// upload makes a storage buffer holding the pieces one after another (a
// multiple of 4 bytes in all) through two staging buffers made once and
// reused: each stretch of at most stageBytes is gathered from the pieces
// into a mapped staging buffer (by several goroutines when large), which
// is then copied into the buffer on the GPU, the other staging buffer
// filled meanwhile. On the H200 a buffer mapped at creation
// (CreateBufferInit) moved about 1 GB/s for a 256 MB cache, the cost of
// fresh host-visible memory each time (BenchmarkUpload). The staging
// buffers are the device's: upload runs under the Runner's lock, as every
// backend call does.
func (p *platform) upload(g *gpu, label string, pieces [][]byte) (*wgpu.Buffer, error) {
	var n uint64
	for _, pc := range pieces {
		n += uint64(len(pc))
	}
	dst, err := g.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Size: n, Usage: storageUsage})
	if err != nil {
		return nil, err
	}
	size := min(stageBytes, g.limits.maxBuffer)
	if p.stage[0] != nil {
		size = p.stage[0].GetSize()
	}
	for i := range p.stage {
		if p.stage[i] == nil {
			if p.stage[i], err = g.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "upload staging", Size: size,
				Usage: wgpu.BufferUsageMapWrite | wgpu.BufferUsageCopySrc, MappedAtCreation: true}); err != nil {
				dst.Release()
				return nil, err
			}
			p.mapped[i] = true
		}
	}
	fail := func(err error) (*wgpu.Buffer, error) { dst.Destroy(); dst.Release(); return nil, err }
	src := gather{pieces: pieces}
	for k, off := 0, uint64(0); off < n; k, off = k+1, off+size {
		m := min(size, n-off)
		i := k % 2
		st := p.stage[i]
		if !p.mapped[i] { // waits for its last copy to end
			p.wait(g) // the queue idle first: the map's callback runs at the next poll (see mapRead)
			status := wgpu.BufferMapAsyncStatus(0xffffffff)
			if err := st.MapAsync(wgpu.MapModeWrite, 0, size, func(s wgpu.BufferMapAsyncStatus) { status = s }); err != nil {
				return fail(err)
			}
			for status == wgpu.BufferMapAsyncStatus(0xffffffff) {
				p.wait(g)
				if err := g.checkLost(); err != nil {
					return fail(err)
				}
			}
			if status != wgpu.BufferMapAsyncStatusSuccess {
				return fail(fmt.Errorf("mapping the staging buffer failed (%v)", status))
			}
			p.mapped[i] = true
		}
		dm := st.GetMappedRange(0, uint(m))
		for len(dm) > 0 {
			c := src.next(len(dm))
			if len(c) == 0 {
				break // not reached: the pieces hold n bytes
			}
			parallelCopy(dm, c)
			dm = dm[len(c):]
		}
		if err := st.Unmap(); err != nil {
			return fail(err)
		}
		p.mapped[i] = false
		enc, err := g.dev.CreateCommandEncoder(nil)
		if err != nil {
			return fail(err)
		}
		err = enc.CopyBufferToBuffer(st, 0, dst, off, m)
		var cb *wgpu.CommandBuffer
		if err == nil {
			cb, err = enc.Finish(nil)
		}
		enc.Release()
		if err != nil {
			return fail(err)
		}
		g.queue.Submit(cb)
		cb.Release()
	}
	return dst, nil
}

// gather reads pieces one after another as one stream.
type gather struct {
	pieces [][]byte
	at     int // bytes of pieces[0] read
}

// next returns the next at most max bytes of the stream, from one piece
// (fewer where that piece ends; empty at the end).
func (s *gather) next(max int) []byte {
	for len(s.pieces) > 0 && s.at == len(s.pieces[0]) {
		s.pieces, s.at = s.pieces[1:], 0
	}
	if len(s.pieces) == 0 {
		return nil
	}
	c := s.pieces[0][s.at:]
	c = c[:min(len(c), max)]
	s.at += len(c)
	return c
}

// parallelCopy copies src into dst (len(dst) ≥ len(src)) on every core
// when src is large (parallelRows over 64 KiB rows).
func parallelCopy(dst, src []byte) {
	const row = 64 << 10
	parallelRows((len(src)+row-1)/row, row, func(lo, hi int) {
		copy(dst[lo*row:], src[lo*row:min(hi*row, len(src))])
	})
}

var hexName = regexp.MustCompile(`^(0x)?[0-9a-fA-F]*$`)

func describe(a *wgpu.Adapter) adapterDesc {
	in := a.GetInfo()
	// wgpu-native puts the device's name in the description and hex IDs
	// in the name and vendor fields.
	name := in.DriverDescription
	if name == "" || hexName.MatchString(name) {
		name = in.Name
	}
	d := adapterDesc{name: name, vendor: in.VendorName, backend: backendName(in.BackendType), typ: typeName(in.AdapterType)}
	if in.Name != "" && !hexName.MatchString(in.Name) && in.Name != name {
		d.driver = in.Name
	}
	return d
}

func backendName(b wgpu.BackendType) string {
	switch b {
	case wgpu.BackendTypeVulkan:
		return "vulkan"
	case wgpu.BackendTypeMetal:
		return "metal"
	case wgpu.BackendTypeD3D12:
		return "d3d12"
	case wgpu.BackendTypeD3D11:
		return "d3d11"
	case wgpu.BackendTypeOpenGL:
		return "opengl"
	case wgpu.BackendTypeOpenGLES:
		return "opengles"
	case wgpu.BackendTypeWebGPU:
		return "webgpu"
	}
	return "unknown"
}

func typeName(t wgpu.AdapterType) string {
	switch t {
	case wgpu.AdapterTypeDiscreteGPU:
		return "discrete-gpu"
	case wgpu.AdapterTypeIntegratedGPU:
		return "integrated-gpu"
	case wgpu.AdapterTypeCPU:
		return "cpu"
	}
	if t.String() == "" {
		return "virtual-gpu" // the binding's enum has no name for WGPUAdapterType_VirtualGPU
	}
	return "unknown"
}

func limitsOf(l wgpu.Limits) limitSet {
	return limitSet{
		maxBuffer: l.MaxBufferSize, maxStorageBinding: l.MaxStorageBufferBindingSize,
		maxWorkgroupStorage: l.MaxComputeWorkgroupStorageSize, maxInvocations: l.MaxComputeInvocationsPerWorkgroup,
		maxWorkgroupSizeX: l.MaxComputeWorkgroupSizeX, maxStorageBuffers: l.MaxStorageBuffersPerShaderStage,
		minUniformAlign: l.MinUniformBufferOffsetAlignment, minStorageAlign: l.MinStorageBufferOffsetAlignment,
	}
}

// deviceLimits spells out every limit of the device request with an
// explicit number: WebGPU's defaults, and fp8lab's raised values from r.
// (Requesting the adapter's whole Limits struct fails on lavapipe, and the
// H200's maximum buffer size, 2^64-1, reads as "undefined" in this binding.)
func deviceLimits(r limitSet) wgpu.Limits {
	return wgpu.Limits{
		MaxTextureDimension1D:                     8192,
		MaxTextureDimension2D:                     8192,
		MaxTextureDimension3D:                     2048,
		MaxTextureArrayLayers:                     256,
		MaxBindGroups:                             4,
		MaxBindingsPerBindGroup:                   1000,
		MaxDynamicUniformBuffersPerPipelineLayout: 8,
		MaxDynamicStorageBuffersPerPipelineLayout: 4,
		MaxSampledTexturesPerShaderStage:          16,
		MaxSamplersPerShaderStage:                 16,
		MaxStorageBuffersPerShaderStage:           r.maxStorageBuffers,
		MaxStorageTexturesPerShaderStage:          4,
		MaxUniformBuffersPerShaderStage:           12,
		MaxUniformBufferBindingSize:               uint64(r.maxUniformBuffer),
		MaxStorageBufferBindingSize:               r.maxStorageBinding,
		MinUniformBufferOffsetAlignment:           r.minUniformAlign,
		MinStorageBufferOffsetAlignment:           r.minStorageAlign,
		MaxVertexBuffers:                          8,
		MaxBufferSize:                             r.maxBuffer,
		MaxVertexAttributes:                       16,
		MaxVertexBufferArrayStride:                2048,
		MaxInterStageShaderComponents:             60,
		MaxInterStageShaderVariables:              16,
		MaxColorAttachments:                       8,
		MaxColorAttachmentBytesPerSample:          32,
		MaxComputeWorkgroupStorageSize:            r.maxWorkgroupStorage,
		MaxComputeInvocationsPerWorkgroup:         r.maxInvocations,
		MaxComputeWorkgroupSizeX:                  r.maxWorkgroupSizeX,
		MaxComputeWorkgroupSizeY:                  256,
		MaxComputeWorkgroupSizeZ:                  64,
		MaxComputeWorkgroupsPerDimension:          r.maxWorkgroupsPerDim,
		MaxPushConstantSize:                       0,
	}
}

func init() {
	// wgpu-native logs warnings (no window system, and so on) on stderr;
	// errors come back as Go errors. FP8LAB_WGPU_LOG=1 keeps its log.
	if os.Getenv("FP8LAB_WGPU_LOG") == "" {
		wgpu.SetLogLevel(wgpu.LogLevelOff)
	}
}

func openBackend(ctx context.Context, opt Options) (backend, AdapterInfo, error) {
	t0 := time.Now()
	backends, err := backendsWanted()
	if err != nil {
		return nil, AdapterInfo{}, err
	}
	// The primary backends first: the default choice never takes an
	// OpenGL adapter, and an instance of every backend starts OpenGL's
	// too (on the H100 host, NVIDIA's EGL and GL: kv-formats' default GPU
	// run took 0.59 s against 0.51, medians of four, 2026-12-07; the
	// needle's and scales' did not move). Every backend when asked for
	// (FP8LAB_WGPU_BACKENDS=all) or when no primary adapter fits the
	// request (an adapter named as OpenGL, a machine without Vulkan).
	tries := []string{BackendsPrimary, BackendsAll}
	if backends == BackendsAll {
		tries = tries[1:]
	}
	var inst *wgpu.Instance
	var adapters []*wgpu.Adapter
	var descs []adapterDesc
	var idx int
	var tInst, tEnum time.Duration
	for i, try := range tries {
		t := time.Now()
		if try == BackendsPrimary {
			inst = wgpuinst.Create(wgpu.InstanceBackendPrimary)
		} else {
			inst = wgpu.CreateInstance(nil) // every backend (the binding panics rather than return nil)
		}
		if inst == nil {
			return nil, AdapterInfo{}, fmt.Errorf("%w: wgpu-native could not create an instance (backends: %s)", ErrNoAdapter, try)
		}
		tInst += time.Since(t)
		t = time.Now()
		adapters = inst.EnumerateAdapters(nil)
		tEnum += time.Since(t)
		descs = make([]adapterDesc, len(adapters))
		for j, a := range adapters {
			descs[j] = describe(a)
		}
		if idx, err = chooseAdapter(descs, opt.adapterWanted()); err == nil {
			backends = try
			break
		}
		for _, a := range adapters {
			a.Release()
		}
		inst.Release()
		if i == len(tries)-1 {
			return nil, AdapterInfo{}, err
		}
	}
	info := descs[idx].info()
	info.Backends = backends
	for i, a := range adapters {
		if i != idx {
			info.Others = append(info.Others, descs[i].info().String())
			a.Release()
		}
	}
	a := adapters[idx]
	fail := func(err error) (backend, AdapterInfo, error) {
		a.Release()
		inst.Release()
		return nil, AdapterInfo{}, err
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	req := requestLimits(limitsOf(a.GetLimits().Limits))
	var features []wgpu.FeatureName
	ts := !opt.NoTimestamps && a.HasFeature(wgpu.FeatureNameTimestampQuery)
	if ts {
		features = append(features, wgpu.FeatureNameTimestampQuery)
	}
	// shader-f16 is requested where the adapter has it (optional: a
	// device refused with it is requested again without).
	info.ShaderF16 = a.HasFeature(wgpu.FeatureNameShaderF16)
	g := &gpu{limits: req, pipes: map[string]*gpuPipeline{}}
	request := func(features []wgpu.FeatureName) (*wgpu.Device, error) {
		return a.RequestDevice(&wgpu.DeviceDescriptor{
			Label:            "fp8lab",
			RequiredFeatures: features,
			RequiredLimits:   &wgpu.RequiredLimits{Limits: deviceLimits(req)},
			// No DeviceLostCallback: the binding passes a Go pointer to C for
			// it, which cgo's pointer check rejects with a panic.
		})
	}
	var dev *wgpu.Device
	if info.ShaderF16 {
		dev, err = request(append(slices.Clone(features), wgpu.FeatureNameShaderF16))
	}
	if !info.ShaderF16 || err != nil || dev == nil {
		info.ShaderF16 = false
		dev, err = request(features)
	}
	if err != nil || dev == nil {
		return fail(fmt.Errorf("%w (%s, limits %+v): %v", errNoDevice, info, req, err))
	}
	tDev := time.Since(t0) - tInst - tEnum
	g.dev = dev
	g.queue = dev.GetQueue()
	g.plat = platform{inst: inst, adapter: a}
	if ts {
		qs, err := dev.CreateQuerySet(&wgpu.QuerySetDescriptor{Label: "timing", Type: wgpu.QueryTypeTimestamp, Count: 2})
		if err == nil {
			rb, err2 := dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "timestamps", Size: 16,
				Usage: wgpu.BufferUsageQueryResolve | wgpu.BufferUsageCopySrc})
			if err2 == nil {
				g.plat.qs, g.plat.resolved = qs, rb
			} else {
				qs.Release()
			}
		}
	}
	info.Timestamps = g.plat.qs != nil
	info.MaxBuffer, info.MaxStorageBinding, info.MaxWorkgroupStorage = req.maxBuffer, req.maxStorageBinding, req.maxWorkgroupStorage
	if info.Timestamps {
		if err := g.probeTimestamps(ctx); err != nil {
			g.plat.qs.Release()
			g.plat.resolved.Destroy()
			g.plat.resolved.Release()
			g.plat.qs, g.plat.resolved = nil, nil
			info.Timestamps = false
		}
	}
	info.Open = OpenTimes{Instance: tInst, Adapters: tEnum, Device: tDev, Total: time.Since(t0)}
	return g, info, nil
}

// probeTimestamps checks that timestamps can be written around a pass and
// resolved on this device (some drivers list the feature but fail the
// encoder-level writes); an error turns them off.
func (g *gpu) probeTimestamps(ctx context.Context) error {
	k := &kernelSpec{file: "convert", entry: "decode", consts: convertConsts(e4m3Spec),
		storage: []access{readOnly, readWrite}}
	src, err := g.upload("probe.src", make([]byte, 4*64))
	if err != nil {
		return err
	}
	defer g.free(src)
	dst, err := g.alloc("probe.dst", 4*64)
	if err != nil {
		return err
	}
	defer g.free(dst)
	x, y, stride := grid(64, convertWG)
	_, err = g.run(ctx, []call{{k: k, bufs: []buffer{src, dst}, params: []uint32{64, 0, stride, 0}, x: x, y: y}}, true)
	return err
}
