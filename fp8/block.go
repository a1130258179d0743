package fp8

import (
	"fmt"
	"math"
	"math/bits"
)

// Block-scaled formats: MX (OCP Microscaling Formats v1.0) and NVFP4.
//
// Codes are returned one per byte, right-aligned (an e2m1 code in the low 4
// bits, e2m3/e3m2 in the low 6); PackE2M1 packs FP4 codes two per byte as
// the tensor cores read them. Element i belongs to block i/BlockSize and is
// scaled by scales[i/BlockSize].

// Block sizes.
const (
	MXBlockSize    = 32 // elements per ue8m0 scale (OCP MX v1.0)
	NVFP4BlockSize = 16 // elements per ue4m3 scale (NVIDIA NVFP4)
)

// MXElement reports whether f is an element format of OCP MX v1.0 with a
// floating-point element: e4m3, e5m2 (MXFP8), e2m3, e3m2 (MXFP6), e2m1
// (MXFP4).
func MXElement(f Format) bool {
	switch f {
	case FormatE4M3, FormatE5M2, FormatE2M3, FormatE3M2, FormatE2M1:
		return true
	}
	return false
}

// MXScale returns the ue8m0 scale code OCP MX v1.0 (§6.3) gives a block
// whose largest magnitude is amax, for element format elem:
//
//	X = 2^(floor(log2(amax)) − emax_elem),
//
// emax_elem the exponent of elem's largest normal (e4m3 8, e5m2 15, e2m3 2,
// e3m2 4, e2m1 2), clamped below at 2^−127 (code 0), as the reference
// implementation microsoft/microxcaling (mx/mx_ops.py, _quantize_mx) does;
// amax = 0 gives code 0 (microxcaling takes log2 of the smallest normal
// float32 for an all-zero block, which the clamp then maps to 2^−127).
// A NaN or infinite amax gives 0xff (NaN): microxcaling's shared exponent
// is then NaN (log2 of inf exceeds the scale's emax), and OCP defines a NaN
// scale as making every element of its block NaN. A negative amax is read
// as its magnitude.
func MXScale(elem Format, amax float32) uint8 {
	b := math.Float32bits(amax) &^ 0x80000000
	if b >= 0x7f800000 {
		return 0xff
	}
	if b == 0 {
		return 0
	}
	e := int(b>>23) - 127 // floor(log2(amax)) for normals
	if b < 0x800000 {
		e = -127 - (23 - bits.Len32(b)) // subnormal: position of the leading bit
	}
	s := e - elem.Emax()
	return uint8(max(s, -127) + 127)
}

// MXScaleRule selects how a block's ue8m0 scale is derived from its
// largest magnitude.
type MXScaleRule uint8

// The MX scale rules.
const (
	// MXScaleOCP is OCP MX v1.0 §6.3 (MXScale): X = 2^(floor(log2 amax) −
	// emax_elem). The largest elements can exceed the element format's
	// largest value and saturate. A NaN or ±inf anywhere in the block
	// gives the NaN scale.
	MXScaleOCP MXScaleRule = iota
	// MXScaleRoundUp is NVIDIA TransformerEngine's MXFP8 recipe
	// (transformer_engine/common/utils.cuh, float_to_e8m0 and exp2f_rcp):
	// X = ue8m0 rounded up (cvt.rp.satfinite.ue8m0x2.f32) of
	// amax · float32(1/max_elem), so no element saturates. amax ignores NaN
	// (fmaxf); an infinite amax gives 0xfe (satfinite). Elements are
	// x · 2^(127 − code), except that code 0 scales by 1 (TransformerEngine's
	// exp2f_rcp(0) returns 1), which flushes blocks with amax below about
	// max_elem·2^−127 to zero.
	MXScaleRoundUp
)

// String returns "ocp" or "roundup".
func (r MXScaleRule) String() string {
	if r == MXScaleRoundUp {
		return "roundup"
	}
	return "ocp"
}

// QuantizeMX quantizes x into MX blocks of 32 elements of format elem (e4m3,
// e5m2, e2m3, e3m2 or e2m1) with one ue8m0 scale each, as OCP MX v1.0 §6.3
// describes: the scale is MXScale of the block's largest magnitude, and each
// element is the conversion of x[i]/X to elem, rounding to nearest even and
// saturating to ±max normal (SatFinite), computed exactly (X is a power of
// two: no intermediate rounding, float32 subnormal inputs included).
// A block holding a NaN or an infinity gets the NaN scale 0xff and every
// element is the conversion of NaN (e4m3/e5m2: 0x7f; FP6/FP4, which have no
// NaN: +max, as NVIDIA's satfinite conversion gives).
//
// len(x) must be a multiple of 32. codes has len(x) entries, scales
// len(x)/32. QuantizeMX is QuantizeMXRule with MXScaleOCP.
func QuantizeMX(elem Format, x []float32) (codes, scales []uint8, err error) {
	return QuantizeMXRule(elem, x, MXScaleOCP)
}

// QuantizeMXRule is QuantizeMX with the scale rule r (see MXScaleRule).
// Under MXScaleRoundUp a NaN element converts on its own (e4m3/e5m2 0x7f,
// FP6/FP4 +max) and does not change the block's scale.
func QuantizeMXRule(elem Format, x []float32, r MXScaleRule) (codes, scales []uint8, err error) {
	if !MXElement(elem) {
		return nil, nil, fmt.Errorf("MX element format %v: want e4m3, e5m2, e2m3, e3m2 or e2m1", elem)
	}
	if len(x)%MXBlockSize != 0 {
		return nil, nil, fmt.Errorf("MX quantization of %d elements: the length must be a multiple of the block size %d", len(x), MXBlockSize)
	}
	if r > MXScaleRoundUp {
		return nil, nil, fmt.Errorf("MX scale rule %d: want MXScaleOCP or MXScaleRoundUp", r)
	}
	p := encTable[elem]
	codes = make([]uint8, len(x))
	scales = make([]uint8, len(x)/MXBlockSize)
	nanCode := uint8(p.encode(0x7fc00000, 0, SatFinite))
	rcp := float32(1 / elem.MaxValue())
	for blk := range scales {
		xs := x[blk*MXBlockSize : (blk+1)*MXBlockSize]
		out := codes[blk*MXBlockSize : (blk+1)*MXBlockSize]
		var sc uint8
		var shift int32
		if r == MXScaleOCP {
			var amax uint32 // largest |x| bits; NaN and inf compare above every finite
			for _, v := range xs {
				amax = max(amax, math.Float32bits(v)&^0x80000000)
			}
			sc = MXScale(elem, math.Float32frombits(amax))
			if sc == 0xff {
				for i := range out {
					out[i] = nanCode
				}
				scales[blk] = sc
				continue
			}
			shift = int32(sc) - 127
		} else {
			var amax float32
			for _, v := range xs {
				if a := float32(math.Abs(float64(v))); a > amax { // false for NaN
					amax = a
				}
			}
			sc = EncodeUE8M0(amax*rcp, RoundUp, SatFinite)
			if sc != 0 {
				shift = int32(sc) - 127
			}
		}
		scales[blk] = sc
		for i, v := range xs {
			out[i] = uint8(p.encode(math.Float32bits(v), shift, SatFinite))
		}
	}
	return codes, scales, nil
}

// DequantizeMX returns the values of MX blocks: element value × 2^(scale −
// 127), computed exactly and rounded once to float32 (nearest even; a value
// beyond float32 range gives ±inf, one below it a subnormal or ±0). A NaN
// scale (0xff) makes its whole block NaN, as OCP MX v1.0 defines; a NaN
// element code (e4m3 0x7f/0xff, e5m2 NaN codes) gives NaN and e5m2 ±inf
// gives ±inf. len(codes) must be len(scales)·32.
func DequantizeMX(elem Format, codes, scales []uint8) ([]float32, error) {
	if !MXElement(elem) {
		return nil, fmt.Errorf("MX element format %v: want e4m3, e5m2, e2m3, e3m2 or e2m1", elem)
	}
	if len(codes) != len(scales)*MXBlockSize {
		return nil, fmt.Errorf("MX dequantization: %d codes for %d scales, want %d (block size %d)", len(codes), len(scales), len(scales)*MXBlockSize, MXBlockSize)
	}
	tab := decodeTables[elem]
	mask := uint8(1<<elem.CodeBits() - 1)
	out := make([]float32, len(codes))
	for blk, sc := range scales {
		o := out[blk*MXBlockSize : (blk+1)*MXBlockSize]
		cs := codes[blk*MXBlockSize : (blk+1)*MXBlockSize]
		if sc == 0xff {
			for i := range o {
				o[i] = math.Float32frombits(canonicalNaN)
			}
			continue
		}
		for i, c := range cs {
			o[i] = float32(math.Ldexp(float64(tab[c&mask]), int(sc)-127))
		}
	}
	return out, nil
}

// NVFP4TensorScale is the FP32 per-tensor (global) decode scale NVIDIA's
// NVFP4 recipe uses: amax / (448 · 6), so that the largest block scale fits
// e4m3's 448 and the largest element e2m1's 6 (TensorRT-LLM, ModelOpt:
// global encode scale 448·6/amax). Computed in float32. An amax of zero, or
// one that is not finite, gives 1.
func NVFP4TensorScale(amax float32) float32 {
	a := float32(math.Abs(float64(amax)))
	if !(a > 0) || math.IsInf(float64(a), 0) {
		return 1
	}
	return a / (448 * 6)
}

// sixth is 1/6 rounded to float32 (0x3e2aaaab), the factor of the NVFP4
// block scale (vLLM's variant of the kernel writes it as 0.16666666666666666f).
var sixth = float32(1.0 / 6.0)

// QuantizeNVFP4 quantizes x into NVFP4 blocks of 16 e2m1 elements with one
// ue4m3 scale each and the FP32 per-tensor decode scale tensorScale (see
// NVFP4TensorScale), following the recipe of NVIDIA's quantization kernel
// (TensorRT-LLM cvt_warp_fp16_to_fp4, also in vLLM, SGLang and FlashInfer),
// step by step in float32:
//
//	vecMax = max |x| over the block (NaN ignored, as __hmax does)
//	sf     = (1/tensorScale) · (vecMax · float32(1/6))
//	scale  = e4m3(sf), RNE, satfinite (sf ≥ 0, so e4m3 = ue4m3)
//	out    = scale ≠ 0 ? 1 / (float32(scale) · tensorScale) : 0
//	code_i = e2m1(x_i · out), cvt.rn.satfinite (±6 beyond, NaN → +6)
//
// The kernel computes the reciprocals with rcp.approx.ftz.f32 and uses
// rcp(1/tensorScale) for tensorScale; here they are IEEE float32 divisions,
// so a scale or an element can differ from a GPU's where the approximate
// reciprocal is off by an ulp at a rounding boundary. TransformerEngine
// groups the block scale as block_amax·(S_enc·(1/6)) instead, which can
// also differ in the last bit before the e4m3 rounding. An all-zero block gets
// scale 0 and ±0 elements; a block holding ±inf gets scale 448 (0x7e).
//
// len(x) must be a multiple of 16 and tensorScale positive and finite, with
// a finite reciprocal.
// codes has len(x) entries (e2m1 in the low 4 bits), scales len(x)/16.
func QuantizeNVFP4(x []float32, tensorScale float32) (codes, scales []uint8, err error) {
	if len(x)%NVFP4BlockSize != 0 {
		return nil, nil, fmt.Errorf("NVFP4 quantization of %d elements: the length must be a multiple of the block size %d", len(x), NVFP4BlockSize)
	}
	if !(tensorScale > 0) || math.IsInf(float64(tensorScale), 0) {
		return nil, nil, fmt.Errorf("NVFP4 tensor scale %g: must be positive and finite", tensorScale)
	}
	enc := 1 / tensorScale
	if math.IsInf(float64(enc), 0) {
		return nil, nil, fmt.Errorf("NVFP4 tensor scale %g: its reciprocal overflows float32", tensorScale)
	}
	fp4 := encTable[FormatE2M1]
	codes = make([]uint8, len(x))
	scales = make([]uint8, len(x)/NVFP4BlockSize)
	for blk := range scales {
		xs := x[blk*NVFP4BlockSize : (blk+1)*NVFP4BlockSize]
		var vecMax float32
		for _, v := range xs {
			a := float32(math.Abs(float64(v)))
			if a > vecMax { // false for NaN
				vecMax = a
			}
		}
		sf := enc * (vecMax * sixth)
		sc := EncodeE4M3(sf, SatFinite)
		scales[blk] = uint8(sc)
		var out float32
		if q := sc.Float32(); q != 0 {
			out = 1 / (q * tensorScale)
		}
		o := codes[blk*NVFP4BlockSize : (blk+1)*NVFP4BlockSize]
		for i, v := range xs {
			o[i] = uint8(fp4.encode(math.Float32bits(v*out), 0, SatFinite))
		}
	}
	return codes, scales, nil
}

// QuantizeNVFP4Tensor quantizes x with the per-tensor scale computed from
// x itself: tensorScale = NVFP4TensorScale(amax), amax the largest
// magnitude of x ignoring NaN (an infinite amax, or an all-zero x, gives 1).
// It returns that scale with the codes and block scales of QuantizeNVFP4.
func QuantizeNVFP4Tensor(x []float32) (codes, scales []uint8, tensorScale float32, err error) {
	var amax float32
	for _, v := range x {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax = a
		}
	}
	tensorScale = NVFP4TensorScale(amax)
	codes, scales, err = QuantizeNVFP4(x, tensorScale)
	return codes, scales, tensorScale, err
}

// DequantizeNVFP4 returns the values of NVFP4 blocks: (e2m1 × ue4m3) ×
// tensorScale in float32, the first product exact, the second rounded to
// nearest even. The ue4m3 NaN code 0x7f makes its block NaN; bit 7 of a
// scale code is ignored (MMA-Sim reads |scale|) and bits 4–7 of an element
// code. len(codes) must be len(scales)·16.
func DequantizeNVFP4(codes, scales []uint8, tensorScale float32) ([]float32, error) {
	if len(codes) != len(scales)*NVFP4BlockSize {
		return nil, fmt.Errorf("NVFP4 dequantization: %d codes for %d scales, want %d (block size %d)", len(codes), len(scales), len(scales)*NVFP4BlockSize, NVFP4BlockSize)
	}
	el := decodeTables[FormatE2M1]
	st := decodeTables[FormatUE4M3]
	out := make([]float32, len(codes))
	for blk, sc := range scales {
		s := st[sc&0x7f]
		for i, c := range codes[blk*NVFP4BlockSize : (blk+1)*NVFP4BlockSize] {
			out[blk*NVFP4BlockSize+i] = (el[c&0xf] * s) * tensorScale
		}
	}
	return out, nil
}

// PackE2M1 packs FP4 codes two per byte: element 2t in the low nibble and
// element 2t+1 in the high nibble of byte t, the layout of PTX's e2m1x2
// (cvt.rn.satfinite.e2m1x2.f32 d, a, b puts b, the first of CUDA's float2,
// in the low nibble) and of MMA-Sim's packed operands. len(codes) must be
// even; bits 4–7 of each code are ignored.
func PackE2M1(codes []uint8) ([]byte, error) {
	if len(codes)%2 != 0 {
		return nil, fmt.Errorf("packing %d FP4 codes: the number must be even", len(codes))
	}
	out := make([]byte, len(codes)/2)
	for t := range out {
		out[t] = codes[2*t]&0xf | codes[2*t+1]<<4
	}
	return out, nil
}

// UnpackE2M1 is the inverse of PackE2M1: two codes per byte, low nibble
// first.
func UnpackE2M1(packed []byte) []uint8 {
	out := make([]uint8, 2*len(packed))
	for t, b := range packed {
		out[2*t], out[2*t+1] = b&0xf, b>>4
	}
	return out
}
