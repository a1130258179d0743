package wgsl

import (
	"errors"
	"strings"
	"testing"
)

// chooseAdapter takes the best-ranked adapter (type, then backend), the
// best one matching a name when asked, and never an OpenGL one unless it
// is asked for by name: only GL adapters give ErrNoAdapter, naming them.
func TestChooseAdapter(t *testing.T) {
	lavapipe := adapterDesc{name: "llvmpipe (LLVM 15.0.6, 256 bits)", backend: "vulkan", typ: "cpu"}
	glpipe := adapterDesc{name: "llvmpipe (LLVM 15.0.6, 256 bits)", backend: "opengl", typ: "cpu"}
	h200 := adapterDesc{name: "NVIDIA H200", vendor: "NVIDIA", backend: "vulkan", typ: "discrete-gpu"}
	glGPU := adapterDesc{name: "NVIDIA H200", backend: "opengl", typ: "discrete-gpu"}
	for _, tc := range []struct {
		name    string
		list    []adapterDesc
		want    string
		got     int    // index, or -1 for an error
		errText string // in the error
	}{
		{"the discrete GPU first", []adapterDesc{lavapipe, h200}, "", 1, ""},
		{"Vulkan before GL of one type", []adapterDesc{glpipe, lavapipe}, "", 1, ""},
		{"a GL GPU is not taken over lavapipe", []adapterDesc{glGPU, lavapipe}, "", 1, ""},
		{"by name", []adapterDesc{h200, lavapipe}, "llvmpipe", 1, ""},
		{"GL by name", []adapterDesc{glpipe, lavapipe}, "opengl", 0, ""},
		{"only GL", []adapterDesc{glpipe}, "", -1, "only OpenGL adapters (llvmpipe"},
		{"none", nil, "", -1, "lists no adapter"},
		{"no match", []adapterDesc{h200}, "amd", -1, `no adapter matches "amd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chooseAdapter(tc.list, tc.want)
			if tc.got < 0 {
				if err == nil || !errors.Is(err, ErrNoAdapter) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("chose %d, err %v: want ErrNoAdapter with %q", got, err, tc.errText)
				}
				return
			}
			if err != nil || got != tc.got {
				t.Fatalf("chose %d (err %v), want %d", got, err, tc.got)
			}
		})
	}
}
