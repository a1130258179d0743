package fp8

import "math"

// The loops behind Format.EncodeScaled and Format.EncodeSlice. Each gives,
// for every element, exactly the code Encode gives for x/scale (divide) or
// x (!divide): TestEncodeScaled, TestEncodeVecEqualsScalar and
// FuzzEncodeScaledSlice check it bit for bit.
//
// A scale of exactly 1 skips the division for every element that is not
// NaN: x/1 == x for every non-NaN float32 (subnormals included: Go does
// not flush them). A NaN element still takes x/scale, so that its payload
// is the one the division gives, as before.

// vecLanes is the number of float32 the vector kernel converts at a time.
const vecLanes = 8

// encodeBF16 is the bf16 loop: BF16FromFloat32 of each quotient, 8 at a
// time with AVX2 where the build has it (a vector holding a NaN quotient,
// and the last len(src) mod 8, take encodeBF16Loop).
func encodeBF16(dst []uint16, stride int, src []float32, scale float32, divide bool) {
	if !haveEncodeAsm || len(src) < vecLanes {
		encodeBF16Loop(dst, stride, src, scale, divide)
		return
	}
	div := 0
	if divide && scale != 1 {
		div = 1
	}
	for i := 0; i < len(src); {
		n := len(src) - i
		if n < vecLanes {
			encodeBF16Loop(dst[i*stride:], stride, src[i:], scale, divide)
			return
		}
		done := encodeBF16Asm(&dst[i*stride], stride, &src[i], n, scale, div)
		i += done
		if done < n&^(vecLanes-1) {
			encodeBF16Loop(dst[i*stride:], stride, src[i:i+vecLanes], scale, divide)
			i += vecLanes
		}
	}
}

// encodeBF16Loop is BF16FromFloat32 of each quotient, inlined.
func encodeBF16Loop(dst []uint16, stride int, src []float32, scale float32, divide bool) {
	skip := !divide || scale == 1
	k := 0
	for _, x := range src {
		q := x
		if !skip {
			q = x / scale
		}
		b := math.Float32bits(q)
		if b&0x7fffffff > 0x7f800000 { // NaN: the division's own NaN, if any
			if divide {
				q = x / scale
			}
			dst[k] = uint16(BF16FromFloat32(q))
		} else {
			// Round to nearest even on the top 16 bits; a carry out of
			// the largest finite binade gives ±inf, as BF16FromFloat32.
			dst[k] = uint16((b + 0x7fff + (b>>16)&1) >> 16)
		}
		k += stride
	}
}

// encodeLoop is the scalar loop of the formats of at most 8 bits: encode
// and round for a normal float32 quotient, written out so that the loop
// makes no call (two calls an element were most of its time in
// WebAssembly): the same operations as round, in the same order; every
// other quotient (zero, subnormal, inf, NaN, negative for an unsigned
// format) takes encode.
func (p *encParams) encodeLoop(dst []uint16, stride int, src []float32, scale float32, divide bool, sat Saturation) {
	skip := !divide || scale == 1
	mbits, emin, emax, maxCode := p.mbits, p.emin, p.emax, p.maxCode
	over, signBit, negZero, unsigned := p.over(sat), p.sign, p.negZero, p.unsigned
	k := 0
	for _, x := range src {
		q := x
		if !skip {
			q = x / scale
		}
		b := math.Float32bits(q)
		abs := b & 0x7fffffff
		if abs-0x800000 >= 0x7f800000-0x800000 || (unsigned && b>>31 != 0) {
			if divide {
				b = math.Float32bits(x / scale) // a NaN's payload as the division gives it
			}
			dst[k] = uint16(p.encode(b, 0, sat))
			k += stride
			continue
		}
		sign := b >> 31 * signBit
		m, e := abs&0x7fffff|0x800000, int32(abs>>23)-127
		code := over
		if e <= emax {
			te := max(e, emin)
			shift := uint32(23 - int32(mbits) + (te - e))
			var q uint32
			if shift < 32 {
				q = (m + (uint32(1)<<(shift-1) - 1) + (m>>shift)&1) >> shift
			}
			if c := uint32(te-emin)<<mbits + q; c <= maxCode {
				code = c
				if c == 0 && !negZero {
					sign = 0
				}
			}
		}
		dst[k] = uint16(sign | code)
		k += stride
	}
}

// vecParams is a format's row as the vector kernel reads it: each field
// broadcast to 8 lanes (the count fields in lane 0). The indices are the
// offsets (×32 bytes) encvec_amd64.s uses.
type vecParams [vecFields][vecLanes]uint32

const (
	vpMask       = iota // 0x7fffffff (signed) or 0xffffffff (unsigned: a negative input is special)
	vpEminB             // emin + 127, the biased float32 exponent of the smallest normal
	vpEmaxB             // emax + 127
	vpMaxCode           // largest finite magnitude code
	vpOver              // magnitude code beyond the largest finite value (for the row's saturation)
	vpSignBit           // sign bit of a code, 0 for unsigned formats
	vpNotNegZero        // all ones when the format has no −0 (a code 0 loses its sign)
	vpShift0            // 23 − mbits
	vpSpecial           // 0xff7fffff: (b&mask) + vpBias above it (signed) is a special lane
	vpHidden            // 0x800000
	vpBias              // 0x80000000
	vpFrac              // 0x7fffff
	vpOne               // 1
	vpMbits             // mbits (lane 0: a shift count)
	vpSignShift         // 32 − CodeBits (lane 0): moves the float32 sign to the code's
	vecFields
)

// vec returns the kernel's parameters for sat, building them once.
func (p *encParams) vec(sat Saturation) *vecParams {
	if sat == SatFinite {
		return &p.vp[0]
	}
	return &p.vp[1]
}

// initVec fills p.vp for a format of codeBits-bit codes.
func (p *encParams) initVec(codeBits int) {
	for i, sat := range []Saturation{SatFinite, NoSat} {
		v := &p.vp[i]
		set := func(field int, x uint32) {
			for l := range v[field] {
				v[field][l] = x
			}
		}
		mask := uint32(0x7fffffff)
		if p.unsigned {
			mask = 0xffffffff
		}
		set(vpMask, mask)
		set(vpEminB, uint32(p.emin+127))
		set(vpEmaxB, uint32(p.emax+127))
		set(vpMaxCode, p.maxCode)
		set(vpOver, p.over(sat))
		set(vpSignBit, p.sign)
		if !p.negZero {
			set(vpNotNegZero, 0xffffffff)
		}
		set(vpShift0, 23-uint32(p.mbits))
		set(vpSpecial, 0xff7fffff)
		set(vpHidden, 0x800000)
		set(vpBias, 0x80000000)
		set(vpFrac, 0x7fffff)
		set(vpOne, 1)
		v[vpMbits][0] = uint32(p.mbits)
		v[vpSignShift][0] = uint32(32 - codeBits)
	}
}

// encodeVec converts src with the vector kernel, 8 elements at a time; a
// vector the kernel stops at (one holding an inf or NaN quotient, or a
// negative one of an unsigned format) and the last len(src) mod 8 take
// encodeLoop.
func (p *encParams) encodeVec(dst []uint16, stride int, src []float32, scale float32, divide bool, sat Saturation) {
	vp := p.vec(sat)
	div := 0
	if divide && scale != 1 {
		div = 1
	}
	for i := 0; i < len(src); {
		n := len(src) - i
		if n < vecLanes {
			p.encodeLoop(dst[i*stride:], stride, src[i:], scale, divide, sat)
			return
		}
		// dst holds (len(src)−1)·stride+1 codes (EncodeScaled checked),
		// all the kernel writes.
		done := encodeVecAsm(&dst[i*stride], stride, &src[i], n, scale, div, vp)
		i += done
		if done < n&^(vecLanes-1) { // stopped at a vector with a special lane
			p.encodeLoop(dst[i*stride:], stride, src[i:i+vecLanes], scale, divide, sat)
			i += vecLanes
		}
	}
}

// MaxAbs returns the largest magnitude in x: the float32 whose bits are the
// largest of x[i]'s with the sign bit cleared, +0 for an empty x. For x
// without NaN it is max |x[i]| (+0 for zeros of either sign); when x holds
// a NaN it is a NaN, the one of largest payload, with the sign bit clear.
// Magnitudes are ordered as their bit patterns are, so no float compare is
// made; on amd64 with AVX2 (without the purego tag) 16 elements at a time.
func MaxAbs(x []float32) float32 {
	var m uint32
	i := 0
	if haveEncodeAsm && len(x) >= vecLanes {
		m = maxAbsAsm(&x[0], len(x))
		i = len(x) &^ (vecLanes - 1)
	}
	for _, y := range x[i:] {
		m = max(m, math.Float32bits(y)&0x7fffffff)
	}
	return math.Float32frombits(m)
}
