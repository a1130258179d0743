//go:build js || cgo

package wgsl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cogentcore/webgpu/wgpu"
)

// gpuBuffer is a storage buffer on the device.
type gpuBuffer struct {
	b *wgpu.Buffer
	n uint64
}

func (b *gpuBuffer) size() uint64 { return b.n }

type gpuPipeline struct {
	sm  *wgpu.ShaderModule
	bgl *wgpu.BindGroupLayout
	pl  *wgpu.PipelineLayout
	p   *wgpu.ComputePipeline
	n   int // storage bindings
}

// gpu is the backend over a wgpu device, shared by the native (cgo) and
// js builds; platform.go files provide what differs (opening, error scopes,
// timestamps, waiting).
type gpu struct {
	dev    *wgpu.Device
	queue  *wgpu.Queue
	limits limitSet
	plat   platform
	pipes  map[string]*gpuPipeline
	// lost is set when the device is lost (the js build listens to
	// GPUDevice.lost; the native binding's device-lost callback cannot be
	// used: it hands C a Go pointer, which cgo's checks reject).
	lost atomic.Pointer[string]
}

const storageUsage = wgpu.BufferUsageStorage | wgpu.BufferUsageCopySrc | wgpu.BufferUsageCopyDst

// maxCallsPerSubmit bounds the dispatches of one submission, so that a long
// run can be cancelled between submissions.
const maxCallsPerSubmit = 64

func (g *gpu) checkLost() error {
	if m := g.lost.Load(); m != nil {
		return fmt.Errorf("wgsl: the device was lost: %s", *m)
	}
	return nil
}

func (g *gpu) checkSize(label string, n uint64) error {
	if n > g.limits.maxStorageBinding {
		return fmt.Errorf("wgsl: buffer %s of %d bytes exceeds the device's storage binding limit of %d bytes", label, n, g.limits.maxStorageBinding)
	}
	return nil
}

func (g *gpu) upload(label string, pieces ...[]byte) (buffer, error) {
	var size uint64
	for _, p := range pieces {
		size += uint64(len(p))
	}
	n := (size + 3) &^ 3
	if n == 0 {
		n = 4
	}
	if err := g.checkSize(label, n); err != nil {
		return nil, err
	}
	if size != n {
		pieces = append(slices.Clip(pieces), make([]byte, n-size))
	}
	b, err := g.plat.upload(g, label, pieces)
	if err != nil {
		return nil, fmt.Errorf("wgsl: buffer %s: %w", label, err)
	}
	return &gpuBuffer{b: b, n: n}, nil
}

func (g *gpu) alloc(label string, size uint64) (buffer, error) {
	n := (size + 3) &^ 3
	if n == 0 {
		n = 4
	}
	if err := g.checkSize(label, n); err != nil {
		return nil, err
	}
	var b *wgpu.Buffer
	err := g.plat.scope(func() (err error) {
		b, err = g.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: label, Size: n, Usage: storageUsage})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("wgsl: buffer %s: %w", label, err)
	}
	return &gpuBuffer{b: b, n: n}, nil
}

func (g *gpu) free(b buffer) {
	if gb, ok := b.(*gpuBuffer); ok && gb.b != nil {
		gb.b.Destroy()
		gb.b.Release()
		gb.b = nil
	}
}

// mapRead copies size bytes of src (a buffer with CopySrc usage) to the
// host through a staging buffer.
//
// Every map (here and in upload's staging buffers) is asked for only once
// the queue is idle, so that its callback runs at the very next poll: the
// binding (cogentcore/webgpu v0.23.0, Buffer.MapAsync) gives wgpu a pointer
// to a Go local holding the callback's handle, which the collector may
// free before the callback reads it ("runtime/cgo: misuse of an invalid
// Handle"; seen once when a map waited for a submission's kernels).
func (g *gpu) mapRead(ctx context.Context, src *wgpu.Buffer, size uint64) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := (size + 3) &^ 3
	var st *wgpu.Buffer
	var cb *wgpu.CommandBuffer
	err := g.plat.scope(func() (err error) {
		st, err = g.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "readback", Size: n, Usage: wgpu.BufferUsageMapRead | wgpu.BufferUsageCopyDst})
		if err != nil {
			return err
		}
		enc, err := g.dev.CreateCommandEncoder(nil)
		if err != nil {
			return err
		}
		defer enc.Release()
		if err := enc.CopyBufferToBuffer(src, 0, st, 0, n); err != nil {
			return err
		}
		cb, err = enc.Finish(nil)
		return err
	})
	if err != nil {
		if st != nil {
			st.Release()
		}
		return nil, fmt.Errorf("wgsl: read back: %w", err)
	}
	defer func() { st.Destroy(); st.Release() }()
	g.queue.Submit(cb)
	cb.Release()
	// The copy done before the map is asked for, so that its callback runs
	// at the next poll (see the doc comment).
	g.plat.wait(g)
	status := wgpu.BufferMapAsyncStatus(0xffffffff)
	if err := st.MapAsync(wgpu.MapModeRead, 0, n, func(s wgpu.BufferMapAsyncStatus) { status = s }); err != nil {
		return nil, fmt.Errorf("wgsl: read back: %w", err)
	}
	for status == wgpu.BufferMapAsyncStatus(0xffffffff) {
		g.plat.wait(g)
		if err := g.checkLost(); err != nil {
			return nil, err
		}
	}
	if status != wgpu.BufferMapAsyncStatusSuccess {
		return nil, fmt.Errorf("wgsl: read back: mapping failed (%v)", status)
	}
	out := make([]byte, size)
	copy(out, st.GetMappedRange(0, uint(n))[:size])
	if err := st.Unmap(); err != nil {
		return nil, fmt.Errorf("wgsl: read back: %w", err)
	}
	return out, nil
}

func (g *gpu) read(ctx context.Context, b buffer, size uint64) ([]byte, error) {
	gb := b.(*gpuBuffer)
	if size > gb.n {
		return nil, fmt.Errorf("wgsl: read of %d bytes from a buffer of %d", size, gb.n)
	}
	return g.mapRead(ctx, gb.b, size)
}

// pipeline compiles k once: a shader module, an explicit bind group layout
// (the js build cannot use an implicit one) and the compute pipeline.
// Compilation and validation errors are returned, with the WGSL message.
func (g *gpu) pipeline(k *kernelSpec) (*gpuPipeline, error) {
	key := k.key()
	if p := g.pipes[key]; p != nil {
		return p, nil
	}
	src, err := k.source()
	if err != nil {
		return nil, err
	}
	p := &gpuPipeline{n: len(k.storage)}
	err = g.plat.scope(func() (err error) {
		p.sm, err = g.dev.CreateShaderModule(&wgpu.ShaderModuleDescriptor{Label: k.file + ".wgsl", WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: src}})
		if err != nil {
			return err
		}
		entries := []wgpu.BindGroupLayoutEntry{{Binding: 0, Visibility: wgpu.ShaderStageCompute,
			Buffer: wgpu.BufferBindingLayout{Type: wgpu.BufferBindingTypeUniform, HasDynamicOffset: true}}}
		for i, a := range k.storage {
			t := wgpu.BufferBindingTypeReadOnlyStorage
			if a == readWrite {
				t = wgpu.BufferBindingTypeStorage
			}
			entries = append(entries, wgpu.BindGroupLayoutEntry{Binding: uint32(i + 1), Visibility: wgpu.ShaderStageCompute,
				Buffer: wgpu.BufferBindingLayout{Type: t}})
		}
		p.bgl, err = g.dev.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Entries: entries})
		if err != nil {
			return err
		}
		p.pl, err = g.dev.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{BindGroupLayouts: []*wgpu.BindGroupLayout{p.bgl}})
		if err != nil {
			return err
		}
		p.p, err = g.dev.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{Layout: p.pl,
			Compute: wgpu.ProgrammableStageDescriptor{Module: p.sm, EntryPoint: k.entry}})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("wgsl: kernel %s.wgsl entry %s: %w", k.file, k.entry, err)
	}
	g.pipes[key] = p
	return p, nil
}

func (g *gpu) run(ctx context.Context, calls []call, timed bool) (Timing, error) {
	if err := ctx.Err(); err != nil {
		return Timing{}, err
	}
	if err := g.checkLost(); err != nil {
		return Timing{}, err
	}
	if len(calls) == 0 {
		return Timing{}, nil
	}
	pipes := make([]*gpuPipeline, len(calls))
	params := make([]byte, len(calls)*paramBytes)
	for i, c := range calls {
		p, err := g.pipeline(c.k)
		if err != nil {
			return Timing{}, err
		}
		if len(c.bufs) != p.n {
			return Timing{}, fmt.Errorf("wgsl: kernel %s binds %d buffers, the call gives %d", c.k.entry, p.n, len(c.bufs))
		}
		pipes[i] = p
		if len(c.params)*4 > paramBytes {
			return Timing{}, fmt.Errorf("wgsl: %d parameter words do not fit a %d-byte uniform slot", len(c.params), paramBytes)
		}
		for j, w := range c.params {
			binary.LittleEndian.PutUint32(params[i*paramBytes+4*j:], w)
		}
	}
	var ubuf *wgpu.Buffer
	groups := make([]*wgpu.BindGroup, len(calls))
	var made []*wgpu.BindGroup
	defer func() {
		for _, bg := range made {
			bg.Release()
		}
		if ubuf != nil {
			ubuf.Destroy()
			ubuf.Release()
		}
	}()
	err := g.plat.scope(func() (err error) {
		ubuf, err = g.dev.CreateBufferInit(&wgpu.BufferInitDescriptor{Label: "params", Contents: params,
			Usage: wgpu.BufferUsageUniform | wgpu.BufferUsageCopyDst})
		if err != nil {
			return err
		}
		// One bind group per distinct (pipeline, buffers).
		cache := map[string]*wgpu.BindGroup{}
		for i, c := range calls {
			key := fmt.Sprintf("%p", pipes[i])
			for _, b := range c.bufs {
				key += fmt.Sprintf("|%p", b)
			}
			if bg := cache[key]; bg != nil {
				groups[i] = bg
				continue
			}
			entries := []wgpu.BindGroupEntry{{Binding: 0, Buffer: ubuf, Size: paramBytes}}
			for j, b := range c.bufs {
				gb := b.(*gpuBuffer)
				entries = append(entries, wgpu.BindGroupEntry{Binding: uint32(j + 1), Buffer: gb.b, Size: gb.n})
			}
			bg, err := g.dev.CreateBindGroup(&wgpu.BindGroupDescriptor{Layout: pipes[i].bgl, Entries: entries})
			if err != nil {
				return err
			}
			made = append(made, bg)
			cache[key] = bg
			groups[i] = bg
		}
		return nil
	})
	if err != nil {
		return Timing{}, fmt.Errorf("wgsl: kernel %s: %w", calls[0].k.entry, err)
	}
	ts := timed && g.plat.hasTimestamps()
	// Each submission of at most maxCallsPerSubmit dispatches is encoded
	// while the one before runs (the GPU idles only between one's end and
	// the next's submit), and waited for before the next is submitted, so
	// that ctx is honoured between them.
	encode := func(start int) (*wgpu.CommandBuffer, error) {
		end := min(start+maxCallsPerSubmit, len(calls))
		var cb *wgpu.CommandBuffer
		err := g.plat.scope(func() error {
			enc, err := g.dev.CreateCommandEncoder(nil)
			if err != nil {
				return err
			}
			defer enc.Release()
			if ts && start == 0 {
				if err := g.plat.timestamp(enc, 0); err != nil {
					return err
				}
			}
			pass := enc.BeginComputePass(nil)
			var cur *gpuPipeline
			for i := start; i < end; i++ {
				c := calls[i]
				if pipes[i] != cur {
					cur = pipes[i]
					pass.SetPipeline(cur.p)
				}
				pass.SetBindGroup(0, groups[i], []uint32{uint32(i * paramBytes)})
				pass.DispatchWorkgroups(c.x, max(c.y, 1), 1)
			}
			err = endPass(pass)
			pass.Release()
			if err != nil {
				return err
			}
			if ts && end == len(calls) {
				if err := g.plat.timestamp(enc, 1); err != nil {
					return err
				}
				if err := g.plat.resolve(enc); err != nil {
					return err
				}
			}
			cb, err = enc.Finish(nil)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("wgsl: kernel %s: %w", calls[start].k.entry, err)
		}
		return cb, nil
	}
	cb, err := encode(0)
	if err != nil {
		return Timing{}, err
	}
	t0 := time.Now()
	for start := 0; start < len(calls); start += maxCallsPerSubmit {
		g.queue.Submit(cb)
		cb.Release()
		cb = nil
		var next error
		if n := start + maxCallsPerSubmit; n < len(calls) && ctx.Err() == nil {
			cb, next = encode(n)
		}
		g.plat.wait(g)
		if err := g.checkLost(); err != nil {
			if cb != nil {
				cb.Release()
			}
			return Timing{}, err
		}
		if next != nil {
			return Timing{}, next
		}
		if err := ctx.Err(); err != nil {
			if cb != nil {
				cb.Release()
			}
			return Timing{}, err
		}
	}
	wall := time.Since(t0)
	t := Timing{Wall: wall}
	if ts {
		d, err := g.plat.elapsed(ctx, g)
		if err != nil {
			return Timing{}, err
		}
		// Timestamps count nanoseconds on the drivers seen (Vulkan on
		// NVIDIA and lavapipe: timestampPeriod 1); a value above the wall
		// time is not plausible and is dropped.
		if d > 0 && d <= wall+time.Millisecond {
			t.GPU = d
		}
	}
	return t, nil
}

func (g *gpu) close() {
	for _, p := range g.pipes {
		p.p.Release()
		p.pl.Release()
		p.bgl.Release()
		p.sm.Release()
	}
	g.pipes = nil
	g.plat.close(g)
}

// errNoDevice is returned when a device request fails.
var errNoDevice = errors.New("wgsl: the adapter refused the device request")
