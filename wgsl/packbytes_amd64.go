//go:build amd64 && !purego

package wgsl

import "github.com/fp8lab/fp8lab/internal/cpufeat"

// havePackAsm is whether packBytesAsm runs here (AVX2, YMM state saved).
var havePackAsm = cpufeat.AVX2

// packBytesAsm packs the 32·blocks codes at src into 8·blocks words at
// dst as packBytesGo does.
//
//go:noescape
func packBytesAsm(dst *uint32, src *uint16, blocks int)
