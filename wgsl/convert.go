package wgsl

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/fp8lab/fp8lab/fp8"
)

// fp8Spec holds the parameters of an FP8 format for convert.wgsl.
type fp8Spec struct {
	ebits, mbits               int
	ieee                       bool
	emin                       int
	maxCode, overCode, nanCode int
}

var (
	e4m3Spec = fp8Spec{ebits: 4, mbits: 3, ieee: false, emin: -6, maxCode: 0x7e, overCode: 0x7f, nanCode: 0x7f}
	e5m2Spec = fp8Spec{ebits: 5, mbits: 2, ieee: true, emin: -14, maxCode: 0x7b, overCode: 0x7c, nanCode: 0x7f}
)

const convertWG = 64

func specOf(f fp8.Format) (fp8Spec, error) {
	switch f {
	case fp8.FormatE4M3:
		return e4m3Spec, nil
	case fp8.FormatE5M2:
		return e5m2Spec, nil
	}
	return fp8Spec{}, fmt.Errorf("wgsl: %v is not an FP8 format (e4m3 or e5m2)", f)
}

func convertConsts(s fp8Spec) []constDecl {
	return []constDecl{
		cU32("EBITS", s.ebits), cU32("MBITS", s.mbits), cBool("IEEE", s.ieee), cI32("EMIN", s.emin),
		cU32("MAXCODE", s.maxCode), cU32("OVERCODE", s.overCode), cU32("NANCODE", s.nanCode), cU32("WG", convertWG),
	}
}

func u32Bytes(v []uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

// u32View returns the bytes of v in little-endian order for an upload: v's
// own memory on a little-endian host (no copy; the caller must not change
// v while the bytes are in use), else a copy (u32Bytes).
func u32View(v []uint32) []byte {
	if !littleEndian || len(v) == 0 {
		return u32Bytes(v)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// littleEndian is true on a little-endian host (amd64, arm64, wasm).
var littleEndian = binary.NativeEndian.Uint32([]byte{1, 0, 0, 0}) == 1

func bytesU32(b []byte) []uint32 {
	v := make([]uint32, len(b)/4)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return v
}

// elementwise runs a convert.wgsl entry over n outputs from the words src.
func (r *Runner) elementwise(ctx context.Context, entry string, spec fp8Spec, src []uint32, n int, sat uint32) ([]uint32, error) {
	if err := r.lock(); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	if n == 0 {
		return nil, nil
	}
	in, err := r.be.upload("convert.src", u32Bytes(src))
	if err != nil {
		return nil, err
	}
	defer r.be.free(in)
	out, err := r.be.alloc("convert.dst", uint64(4*n))
	if err != nil {
		return nil, err
	}
	defer r.be.free(out)
	k := &kernelSpec{file: "convert", entry: entry, consts: convertConsts(spec), storage: []access{readOnly, readWrite}}
	x, y, stride := grid(n, convertWG)
	if _, err := r.be.run(ctx, []call{{k: k, bufs: []buffer{in, out}, params: []uint32{uint32(n), sat, stride, 0}, x: x, y: y}}, false); err != nil {
		return nil, err
	}
	b, err := r.be.read(ctx, out, uint64(4*n))
	if err != nil {
		return nil, err
	}
	return bytesU32(b), nil
}

// DecodeFP8 decodes FP8 codes of format f (e4m3 or e5m2) on the GPU and
// returns float32 bit patterns. The result equals package fp8's decoding bit
// for bit, NaN patterns included: e4m3 NaN gives sign|0x7ff00000, e5m2 NaN
// sign|0x7fffffff; the kernel is integer-only.
func (r *Runner) DecodeFP8(ctx context.Context, f fp8.Format, codes []uint8) ([]uint32, error) {
	spec, err := specOf(f)
	if err != nil {
		return nil, err
	}
	src := make([]uint32, len(codes))
	for i, c := range codes {
		src[i] = uint32(c)
	}
	return r.elementwise(ctx, "decode", spec, src, len(codes), 0)
}

// EncodeFP8 converts float32 values to format f (e4m3 or e5m2) on the GPU
// with round to nearest, ties to even, and saturation sat, bit for bit as
// fp8.EncodeE4M3 / fp8.EncodeE5M2 do (NaN gives 0x7f with the input's sign;
// satfinite clamps to ±max, inf included; nosat gives NaN for e4m3 and ±inf
// for e5m2). The kernel reads the input's bits: no float arithmetic.
func (r *Runner) EncodeFP8(ctx context.Context, f fp8.Format, sat fp8.Saturation, x []float32) ([]uint8, error) {
	spec, err := specOf(f)
	if err != nil {
		return nil, err
	}
	src := make([]uint32, len(x))
	for i, v := range x {
		src[i] = math.Float32bits(v)
	}
	s := uint32(0)
	if sat == fp8.SatFinite {
		s = 1
	}
	out, err := r.elementwise(ctx, "encode", spec, src, len(x), s)
	if err != nil {
		return nil, err
	}
	codes := make([]uint8, len(out))
	for i, c := range out {
		codes[i] = uint8(c)
	}
	return codes, nil
}

// AddF32 returns x[i] + y[i] for float32 bit patterns, computed by the
// shaders' integer FP32 adder (the FADD of promotion and of the mma.sync
// emulation): round to nearest even, subnormals kept, canonical NaN
// 0x7fffffff for any NaN result.
func (r *Runner) AddF32(ctx context.Context, x, y []uint32) ([]uint32, error) {
	if len(x) != len(y) {
		return nil, fmt.Errorf("wgsl: AddF32 of %d and %d values", len(x), len(y))
	}
	src := make([]uint32, 2*len(x))
	for i := range x {
		src[2*i], src[2*i+1] = x[i], y[i]
	}
	return r.elementwise(ctx, "add", e4m3Spec, src, len(x), 0)
}
