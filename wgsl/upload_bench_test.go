//go:build !js

package wgsl

import (
	"context"
	"fmt"
	"testing"

	"github.com/cogentcore/webgpu/wgpu"
)

// BenchmarkUpload times getting size bytes from the host into a storage
// buffer, up to the GPU holding them (each iteration ends with a 4-byte
// read back of the buffer), four ways: CreateBufferInit (a buffer mapped
// at creation, one copy, unmap: upload before); upload (two staging
// buffers made once, pieces copied through them); a buffer mapped at
// creation filled on every core (parallelCopy); one buffer made once and
// refilled with Queue.WriteBuffer. GB/s is size over the time per
// iteration.
func BenchmarkUpload(b *testing.B) {
	r := testGPU(b)
	g, ok := r.be.(*gpu)
	if !ok {
		b.Skip("not the native backend")
	}
	ctx := context.Background()
	for _, mb := range []int{64, 256, 1024} {
		size := mb << 20
		if uint64(size) > r.info.MaxStorageBinding {
			continue
		}
		data := uploadData(size)
		check := func(b *testing.B, buf *wgpu.Buffer) {
			out, err := g.mapRead(ctx, buf, 4)
			if err != nil {
				b.Fatal(err)
			}
			if out[1] != data[1] {
				b.Fatalf("read back %d, want %d", out[1], data[1])
			}
		}
		report := func(b *testing.B) {
			b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		}
		b.Run(fmt.Sprintf("init/%dMB", mb), func(b *testing.B) {
			for b.Loop() {
				buf, err := g.dev.CreateBufferInit(&wgpu.BufferInitDescriptor{Label: "bench", Contents: data, Usage: storageUsage})
				if err != nil {
					b.Fatal(err)
				}
				check(b, buf)
				buf.Destroy()
				buf.Release()
			}
			report(b)
		})
		b.Run(fmt.Sprintf("upload/%dMB", mb), func(b *testing.B) {
			for b.Loop() {
				x, err := g.upload("bench", data)
				if err != nil {
					b.Fatal(err)
				}
				check(b, x.(*gpuBuffer).b)
				g.free(x)
			}
			report(b)
		})
		b.Run(fmt.Sprintf("mapped-parallel/%dMB", mb), func(b *testing.B) {
			for b.Loop() {
				buf, err := g.dev.CreateBuffer(&wgpu.BufferDescriptor{Label: "bench", Size: uint64(size), Usage: storageUsage, MappedAtCreation: true})
				if err != nil {
					b.Fatal(err)
				}
				parallelCopy(buf.GetMappedRange(0, uint(size)), data)
				if err := buf.Unmap(); err != nil {
					b.Fatal(err)
				}
				check(b, buf)
				buf.Destroy()
				buf.Release()
			}
			report(b)
		})
		b.Run(fmt.Sprintf("pooled-write/%dMB", mb), func(b *testing.B) {
			x, err := g.alloc("bench", uint64(size))
			if err != nil {
				b.Fatal(err)
			}
			defer g.free(x)
			buf := x.(*gpuBuffer).b
			for b.Loop() {
				if err := g.queue.WriteBuffer(buf, 0, data); err != nil {
					b.Fatal(err)
				}
				check(b, buf)
			}
			report(b)
		})
	}
}

// BenchmarkUploadStage is upload's throughput against the size of its two
// staging buffers (stageBytes, 32 MB since 2026-12-02): GB/s of a buffer
// of each size until a 4-byte read back of it returns, a runner opened
// per staging size (its staging buffers are made at its first upload).
func BenchmarkUploadStage(b *testing.B) {
	testGPU(b) // skips where there is no adapter
	ctx := context.Background()
	for _, stage := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("stage%dMB", stage), func(b *testing.B) {
			r, g := stagedGPU(b, uint64(stage)<<20)
			for _, mb := range []int{16, 128, 512} {
				size := mb << 20
				if uint64(size) > r.info.MaxStorageBinding {
					continue
				}
				data := uploadData(size)
				b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
					for b.Loop() {
						x, err := g.upload("bench", data)
						if err != nil {
							b.Fatal(err)
						}
						out, err := g.mapRead(ctx, x.(*gpuBuffer).b, 4)
						if err != nil {
							b.Fatal(err)
						}
						if out[1] != data[1] {
							b.Fatalf("read back %d, want %d", out[1], data[1])
						}
						g.free(x)
					}
					b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		})
	}
}

// uploadData is the upload benchmarks' size bytes (byte i is i·7 mod 256).
func uploadData(size int) []byte {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	return data
}
