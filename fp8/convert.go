package fp8

import (
	"math"
	"math/bits"
)

// Conversions from float32 to the formats of the table with at most 8-bit
// codes (e4m3, e5m2, e2m1, e2m3, e3m2, ue4m3, e4m3fnuz, e5m2fnuz) share one
// rounding routine, driven by each format's row (encParams, derived from
// Spec at start-up). They round to nearest, ties to even, in one step from
// the exact input; what they do at the edges is a property of the format:
//
//	format         NaN in         overflow: SatFinite | NoSat   ±inf: SatFinite | NoSat   −0, tiny negative
//	e4m3           ±0x7f (NaN)    ±max              | ±NaN    ±max            | ±NaN    −0
//	ue4m3          0x7f (NaN)     448               | 0x7f    +inf: 448       | 0x7f    0 (every negative input)
//	e5m2           ±0x7f (NaN)    ±max              | ±inf    ±max            | ±inf    −0
//	e4m3fnuz,      0x80 (NaN)     ±max              | 0x80    0x80            | 0x80    +0 (no −0)
//	 e5m2fnuz
//	e2m1, e2m3,    +max (0x7,     ±max              | ±max    ±max            | ±max    −0
//	 e3m2          0x1f)
//
// Sources, row by row:
//
//   - e4m3, e5m2: CUDA __nv_cvt_float_to_fp8 (__NV_SATFINITE, __NV_NOSAT);
//     NoSat is PyTorch's cast, checked bit for bit on the H200 captures.
//   - e4m3fnuz, e5m2fnuz: NoSat is PyTorch's float8_e4m3fnuz/float8_e5m2fnuz
//     cast (c10/util/Float8_e4m3fnuz.h: every magnitude that rounds past the
//     largest finite value, ±inf and NaN give 0x80; results that round to
//     zero are +0). SatFinite is HIP's __hip_cvt_float_to_fp8(x,
//     __HIP_SATFINITE, __HIP_E4M3_FNUZ) (amd_hip_fp8.h, from rocBLAS): finite
//     values are clamped to ±max (on MI300 with v_med3 before the RNE
//     v_cvt_pk_fp8_f32), while ±inf and NaN are not clamped and give 0x80.
//     HIP's own non-saturating host path returns sign|0x78 (the IEEE
//     infinity pattern, which is the finite ±128 in e4m3fnuz) on overflow;
//     PyTorch's 0x80 is followed here instead.
//   - e2m1, e2m3, e3m2: OCP MX v1.0 has no inf or NaN in these formats and
//     saturates to ±max normal; NVIDIA's only conversions are
//     cvt.rn.satfinite.{e2m1x2,e2m3x2,e3m2x2}.f32, and CUDA's
//     __nv_cvt_float_to_fp4/__nv_cvt_float_to_fp6 (cuda_fp4.hpp,
//     cuda_fp6.hpp, CUDA 12.8) document "NaN converts to positive MAXNORM".
//     NoSat therefore equals SatFinite for these formats.
//   - ue4m3: the NVFP4 scale, converted in practice as e4m3 from a
//     non-negative value (TensorRT-LLM: "SFValue is always positive, so E4M3
//     is the same as UE4M3"). Negative inputs (−0 and −inf included),
//     which no scale computation produces, give 0, the nearest
//     representable value.
//
// The ue8m0 scale format has its own conversion (EncodeUE8M0), with PTX's
// rounding modes.

// encParams is the rounding description of one ≤8-bit format.
type encParams struct {
	mbits     uint   // fraction bits
	emin      int32  // exponent of the smallest normal
	emax      int32  // exponent of the largest finite value
	maxCode   uint32 // largest finite magnitude code
	overNoSat uint32 // magnitude code NoSat gives beyond max
	nanCode   uint32 // code a NaN input gives (sign added when nanSigned)
	nanSigned bool
	sign      uint32 // sign bit, 0 for unsigned formats
	negZero   bool   // −0 exists
	unsigned  bool
	infNaN    bool // ±inf gives the NaN code in both modes (fnuz)
	// vp is the row as the vector kernel reads it, for SatFinite and
	// NoSat (encvec.go).
	vp [2]vecParams
	// tab holds the scalar path's code tables, for SatFinite and NoSat
	// (enctable.go).
	tab [2]codeTable
}

var encTable [numFormats]*encParams

func init() {
	for f := FormatInvalid + 1; f < numFormats; f++ {
		s := f.spec()
		if s.CodeBits > 8 || !s.Subnormals {
			continue
		}
		p := &encParams{
			mbits:    uint(s.FracBits),
			emin:     int32(f.Emin()),
			emax:     int32(f.Emax()),
			maxCode:  f.MaxCode(),
			sign:     f.SignBit(),
			negZero:  s.Signed && s.NaN != NaNNegZero,
			unsigned: !s.Signed,
		}
		magAll := uint32(1)<<(s.CodeBits-1) - 1
		if !s.Signed {
			magAll = uint32(1)<<s.CodeBits - 1
		}
		switch s.NaN {
		case NaNIEEE:
			p.overNoSat = (uint32(1)<<s.ExpBits - 1) << s.FracBits // inf
			p.nanCode, p.nanSigned = magAll, true
		case NaNAllOnes:
			p.overNoSat = magAll
			p.nanCode, p.nanSigned = magAll, s.Signed
		case NaNNegZero:
			p.overNoSat = p.sign // 0x80: NaN
			p.nanCode = p.sign
			p.infNaN = true
		case NaNNone:
			p.overNoSat = p.maxCode
			p.nanCode = p.maxCode
		}
		p.initVec(s.CodeBits)
		encTable[f] = p
	}
}

// over is the magnitude code beyond the largest finite value.
func (p *encParams) over(sat Saturation) uint32 {
	if sat == SatFinite {
		return p.maxCode
	}
	return p.overNoSat
}

// encode rounds the float32 with bits b, divided by 2^scaleExp (exactly:
// the division is an exponent shift, never a rounding), to a code.
func (p *encParams) encode(b uint32, scaleExp int32, sat Saturation) uint32 {
	abs := b & 0x7fffffff
	sign := b >> 31 * p.sign // branch-free: the sign bit of the code, 0 if unsigned
	if abs >= 0x7f800000 || abs < 0x800000 || (p.unsigned && b>>31 != 0) {
		return p.encodeSpecial(b, scaleExp, sat)
	}
	// abs = m × 2^(e−23) with bit 23 of m set.
	return p.round(sign, abs&0x7fffff|0x800000, int32(abs>>23)-127-scaleExp, sat)
}

// encodeSpecial handles NaN, ±inf, ±0, float32 subnormals and negative
// inputs of unsigned formats.
func (p *encParams) encodeSpecial(b uint32, scaleExp int32, sat Saturation) uint32 {
	neg := b>>31 == 1
	abs := b & 0x7fffffff
	if abs > 0x7f800000 {
		if p.nanSigned && neg {
			return p.nanCode | p.sign
		}
		return p.nanCode
	}
	if neg && p.unsigned {
		return 0
	}
	sign := b >> 31 * p.sign
	if abs == 0x7f800000 {
		if p.infNaN {
			return p.nanCode
		}
		return sign | p.over(sat)
	}
	if abs == 0 {
		return p.zero(sign)
	}
	if abs >= 0x800000 { // a normal positive input of an unsigned format
		return p.round(sign, abs&0x7fffff|0x800000, int32(abs>>23)-127-scaleExp, sat)
	}
	// float32 subnormal: normalize so that bit 23 of m is set.
	lz := int32(bits.LeadingZeros32(abs)) - 8
	return p.round(sign, abs<<uint(lz), -126-lz-scaleExp, sat)
}

// round rounds m × 2^(e−23) (bit 23 of m set) to nearest even.
func (p *encParams) round(sign, m uint32, e int32, sat Saturation) uint32 {
	if e > p.emax {
		return sign | p.over(sat)
	}
	te := max(e, p.emin)
	// Value in units of the target quantum 2^(te−mbits): m >> shift.
	shift := uint32(23 - int32(p.mbits) + (te - e))
	var q uint32
	if shift < 32 {
		// Round to nearest, ties to even, without a branch on the
		// discarded bits (a data-dependent branch mispredicts on about
		// half of random inputs): m + (half − 1) + lsb carries into the
		// kept bits exactly when the discarded part exceeds half, or
		// equals it and the kept value is odd. m < 2^24 and shift ≥ 1
		// (mbits ≤ 22), so the sum cannot overflow.
		q = (m + (uint32(1)<<(shift-1) - 1) + (m>>shift)&1) >> shift
	}
	// Exponent field and fraction in one sum: a carry out of the
	// fraction increments the exponent, and q < 2^mbits at te == emin is
	// a subnormal code.
	code := uint32(te-p.emin)<<p.mbits + q
	if code > p.maxCode {
		return sign | p.over(sat)
	}
	if code == 0 && !p.negZero {
		return 0
	}
	return sign | code
}

func (p *encParams) zero(sign uint32) uint32 {
	if p.negZero {
		return sign
	}
	return 0
}

// EncodeFloat32 converts x to a code of f, rounding to nearest with ties to
// even, with the overflow, NaN and signed-zero rules of f's row (see the
// table at the top of convert.go and the package documentation):
// e4m3, e5m2, e2m1, e2m3, e3m2, ue4m3, e4m3fnuz, e5m2fnuz. For the other
// formats it is Format.Encode. The code is right-aligned in the result.
func EncodeFloat32(f Format, x float32, sat Saturation) uint32 {
	if f < numFormats {
		if p := encTable[f]; p != nil {
			return p.encode(math.Float32bits(x), 0, sat)
		}
	}
	return f.Encode(x, sat)
}

// EncodeScaled stores the code of each src[i]/scale (the quotient rounded
// to float32, then converted as Encode converts it) at dst[i*stride]:
// exactly dst[i*stride] = uint16(f.Encode(src[i]/scale, sat)) for every i,
// with f's conversion looked up once for the slice instead of once an
// element (in WebAssembly a call costs several times what it costs
// natively, and a quantizing loop of Encode calls was a third of a run).
// stride must be at least 1 and dst must hold (len(src)−1)·stride+1 codes;
// otherwise it panics, as an index out of range does.
//
// How it gets there (encvec.go): bf16 rounds the float32 bits in the loop;
// a scale of exactly 1 skips the division for every quotient that is not
// NaN (x/1 == x for those; a NaN still takes x/scale, so its payload is
// what the division gives); the formats of at most 8 bits convert 8
// elements at a time with AVX2 where the CPU has it (amd64 without the
// purego tag), any vector holding an inf, NaN or, for an unsigned format,
// negative quotient taking the scalar loop.
func (f Format) EncodeScaled(dst []uint16, stride int, src []float32, scale float32, sat Saturation) {
	f.encodeScaled(dst, stride, src, scale, true, sat)
}

// EncodeSlice stores the code of each src[i] at dst[i*stride]: exactly
// dst[i*stride] = uint16(f.Encode(src[i], sat)) for every i, NaN payloads
// included (no division happens at all). It is EncodeScaled's loop without
// a scale, with the same stride rules and panics.
func (f Format) EncodeSlice(dst []uint16, stride int, src []float32, sat Saturation) {
	f.encodeScaled(dst, stride, src, 1, false, sat)
}

// encodeScaled is EncodeScaled (divide) or EncodeSlice (!divide, scale 1).
func (f Format) encodeScaled(dst []uint16, stride int, src []float32, scale float32, divide bool, sat Saturation) {
	if len(src) == 0 {
		return
	}
	if stride < 1 {
		panic("fp8: EncodeScaled with a stride below 1")
	}
	_ = dst[(len(src)-1)*stride]
	var p *encParams // nil: the formats Encode converts otherwise
	switch {
	case f == FormatBF16:
		encodeBF16(dst, stride, src, scale, divide)
		return
	case f == FormatFP16, f == FormatTF32, f == FormatUE8M0:
	case f < numFormats:
		p = encTable[f]
	}
	if p == nil {
		if !divide {
			for i, x := range src {
				dst[i*stride] = uint16(f.Encode(x, sat))
			}
			return
		}
		for i, x := range src {
			dst[i*stride] = uint16(f.Encode(x/scale, sat))
		}
		return
	}
	if haveEncodeAsm && len(src) >= vecLanes {
		p.encodeVec(dst, stride, src, scale, divide, sat)
		return
	}
	p.encodeScalar(dst, stride, src, scale, divide, sat)
}

// EncodeE2M1 converts x to FP4 e2m1 (cvt.rn.satfinite.e2m1x2.f32): round to
// nearest even, magnitudes beyond 6 and ±inf give ±6, NaN gives +6 (0x7).
func EncodeE2M1(x float32) uint8 {
	return uint8(encTable[FormatE2M1].encode(math.Float32bits(x), 0, SatFinite))
}

// EncodeE2M3 converts x to FP6 e2m3 (cvt.rn.satfinite.e2m3x2.f32): round to
// nearest even, beyond ±7.5 and ±inf give ±7.5, NaN gives +7.5 (0x1f).
func EncodeE2M3(x float32) uint8 {
	return uint8(encTable[FormatE2M3].encode(math.Float32bits(x), 0, SatFinite))
}

// EncodeE3M2 converts x to FP6 e3m2 (cvt.rn.satfinite.e3m2x2.f32): round to
// nearest even, beyond ±28 and ±inf give ±28, NaN gives +28 (0x1f).
func EncodeE3M2(x float32) uint8 {
	return uint8(encTable[FormatE3M2].encode(math.Float32bits(x), 0, SatFinite))
}

// EncodeUE4M3 converts x to the NVFP4 scale format: e4m3 rounding (nearest
// even) of a non-negative x; beyond 448 gives 448 (SatFinite) or NaN 0x7f
// (NoSat); NaN gives 0x7f; negative inputs, −0 and −inf give 0.
func EncodeUE4M3(x float32, sat Saturation) uint8 {
	return uint8(encTable[FormatUE4M3].encode(math.Float32bits(x), 0, sat))
}

// EncodeE4M3FNUZ converts x to AMD fp8 (e4m3fnuz): round to nearest even;
// NoSat (PyTorch's cast) gives 0x80 (NaN) for NaN, ±inf and magnitudes that
// round beyond 240; SatFinite (HIP __HIP_SATFINITE) gives ±240 for finite
// magnitudes beyond 240, and 0x80 for NaN and ±inf. Results that round to
// zero are +0 (0x00).
func EncodeE4M3FNUZ(x float32, sat Saturation) uint8 {
	return uint8(encTable[FormatE4M3FNUZ].encode(math.Float32bits(x), 0, sat))
}

// EncodeE5M2FNUZ converts x to AMD bf8 (e5m2fnuz), with the rules of
// EncodeE4M3FNUZ and largest value 57344.
func EncodeE5M2FNUZ(x float32, sat Saturation) uint8 {
	return uint8(encTable[FormatE5M2FNUZ].encode(math.Float32bits(x), 0, sat))
}

// Rounding is a rounding direction of the conversions that offer more than
// round to nearest even (tf32, ue8m0), named as PTX names them.
type Rounding uint8

// The rounding directions.
const (
	RoundNearestEven Rounding = iota // .rn
	RoundNearestAway                 // .rna: to nearest, ties away from zero
	RoundZero                        // .rz: toward zero
	RoundUp                          // .rp: toward +inf
)

// String returns "rn", "rna", "rz" or "rp".
func (r Rounding) String() string {
	switch r {
	case RoundNearestAway:
		return "rna"
	case RoundZero:
		return "rz"
	case RoundUp:
		return "rp"
	}
	return "rn"
}

// EncodeUE8M0 converts x to the MX scale format ue8m0 (a power of two
// 2^(code−127), code 0..254; 0xff is NaN), as PTX cvt{.rz,.rp}{.satfinite}
// .ue8m0x2.f32 and CUDA __nv_cvt_float_to_e8m0 do. The sign of x is ignored
// (the exponent of |x| is converted).
//
//   - RoundZero: 2^floor(log2|x|); RoundUp: 2^ceil(log2|x|) (PTX .rp on |x|).
//     RoundNearestEven and RoundNearestAway give the nearer of the two, a tie
//     (|x| = 1.5·2^k) going up, as ONNX Cast's round_mode "nearest" does;
//     PTX has no nearest mode for ue8m0.
//   - |x| at or below 2^−127, including ±0, gives code 0 (2^−127), the
//     smallest value: there is no zero (RoundUp: the smallest value ≥ |x|).
//   - Beyond 2^127, and ±inf: SatFinite gives 0xfe (2^127), NoSat 0xff (NaN).
//   - NaN gives 0xff.
func EncodeUE8M0(x float32, r Rounding, sat Saturation) uint8 {
	b := math.Float32bits(x) & 0x7fffffff
	if b > 0x7f800000 {
		return 0xff
	}
	if b == 0x7f800000 {
		if sat == SatFinite {
			return 0xfe
		}
		return 0xff
	}
	var code uint32
	exp := b >> 23
	frac := b & 0x7fffff
	if exp == 0 {
		// Below 2^−126: 2^−127 is code 0 (frac 0x400000); everything up to
		// it rounds up to code 0, above it (to 2^−126) depends on r.
		switch {
		case frac <= 0x400000 || r == RoundZero:
			code = 0
		case r == RoundUp || frac >= 0x600000:
			code = 1
		default:
			code = 0
		}
	} else {
		code = exp
		switch r {
		case RoundUp:
			if frac != 0 {
				code++
			}
		case RoundNearestEven, RoundNearestAway:
			if frac >= 0x400000 { // ≥ 1.5·2^k
				code++
			}
		}
	}
	if code > 0xfe {
		if sat == SatFinite {
			return 0xfe
		}
		return 0xff
	}
	return uint8(code)
}

// TF32Round converts x to TF32 (1 sign, 8 exponent, 10 fraction bits), as
// PTX cvt{.rna,.rn,.rz}{.satfinite}.tf32.f32 do, and returns it as float32
// bits with the 13 low bits zero. RoundNearestAway is cvt.rna (the
// conversion of sm_80), RoundNearestEven cvt.rn, RoundZero cvt.rz,
// RoundUp rounds toward +inf. Overflow: values that round beyond the largest
// finite TF32 (0x7f7fe000) give ±inf (NoSat) or ±max (SatFinite); ±inf give
// ±inf (NoSat) or ±max (SatFinite). NaN gives the canonical NaN 0x7fffffff
// (its low 13 bits not cleared). Subnormal inputs are rounded, not flushed.
// TF32FromFloat32 is the truncation the tensor cores apply when they read
// an FP32 register as TF32, not a conversion instruction.
func TF32Round(x float32, r Rounding, sat Saturation) uint32 {
	b := math.Float32bits(x)
	sign := b & 0x80000000
	abs := b &^ 0x80000000
	if abs > 0x7f800000 {
		return 0x7fffffff
	}
	if abs == 0x7f800000 {
		if sat == SatFinite {
			return sign | 0x7f7fe000
		}
		return b
	}
	const low = 0x1fff
	t := abs &^ low
	rem := abs & low
	switch r {
	case RoundNearestEven:
		if rem > 0x1000 || (rem == 0x1000 && t&0x2000 != 0) {
			t += 0x2000
		}
	case RoundNearestAway:
		if rem >= 0x1000 {
			t += 0x2000
		}
	case RoundUp:
		if rem != 0 && sign == 0 {
			t += 0x2000
		}
	}
	if t >= 0x7f800000 { // rounded up into the infinity encoding
		if sat == SatFinite {
			t = 0x7f7fe000
		} else {
			t = 0x7f800000
		}
	}
	return sign | t
}
