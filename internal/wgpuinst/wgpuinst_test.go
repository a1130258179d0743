//go:build !js && cgo

package wgpuinst

import (
	"testing"
	"unsafe"

	"github.com/cogentcore/webgpu/wgpu"
)

// TestCreate: wgpu.Instance has instanceLayout's size (one handle), and
// an instance of the primary backends lists adapters with no OpenGL one
// among them, where one of every backend may list some (under -race too,
// where the binding's own descriptor path panicked).
func TestCreate(t *testing.T) {
	if unsafe.Sizeof(wgpu.Instance{}) != unsafe.Sizeof(instanceLayout{}) {
		t.Fatalf("wgpu.Instance is %d bytes, instanceLayout %d: the binding changed", unsafe.Sizeof(wgpu.Instance{}), unsafe.Sizeof(instanceLayout{}))
	}
	all := wgpu.CreateInstance(nil)
	want := 0 // adapters of the primary backends that every backend's instance lists
	for _, a := range all.EnumerateAdapters(nil) {
		if b := a.GetInfo().BackendType; b != wgpu.BackendTypeOpenGL && b != wgpu.BackendTypeOpenGLES {
			want++
		}
		a.Release()
	}
	all.Release()
	for range 3 {
		inst := Create(wgpu.InstanceBackendPrimary)
		if inst == nil {
			t.Fatal("no instance")
		}
		as := inst.EnumerateAdapters(nil)
		if len(as) != want {
			t.Errorf("%d adapters from the primary backends, %d of them from every backend", len(as), want)
		}
		for _, a := range as {
			if b := a.GetInfo().BackendType; b == wgpu.BackendTypeOpenGL || b == wgpu.BackendTypeOpenGLES {
				t.Errorf("adapter %q of backend %v from the primary backends", a.GetInfo().Name, b)
			}
			a.Release()
		}
		inst.Release()
	}
}
