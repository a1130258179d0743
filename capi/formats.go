package main

import (
	"fmt"
	"math"

	"github.com/fp8lab/fp8lab/fp8"
)

// parseSat reads a saturation: 0 satfinite, 1 nosat.
func parseSat(s int) (fp8.Saturation, error) {
	switch s {
	case 0:
		return fp8.SatFinite, nil
	case 1:
		return fp8.NoSat, nil
	}
	return 0, fmt.Errorf("saturation %d: want 0 (satfinite) or 1 (nosat)", s)
}

// encode converts x to codes of the named format. rounding < 0 is the
// format's default conversion (fp8.EncodeFloat32: round to nearest even,
// with f's overflow, NaN and signed-zero rules; tf32 the truncation of the
// tensor cores' read, ue8m0 toward zero); rounding ≥ 0 is an fp8.Rounding
// (rn, rna, rz, rp) and applies to tf32 (fp8.TF32Round, the cvt
// instruction) and ue8m0 (fp8.EncodeUE8M0) only. out gets one code per
// element, right-aligned.
func encode(format string, x []float32, out []uint32, sat, rounding int) error {
	f, err := fp8.ParseFormat(format)
	if err != nil {
		return err
	}
	s, err := parseSat(sat)
	if err != nil {
		return err
	}
	if len(out) != len(x) {
		return fmt.Errorf("encode: %d outputs for %d inputs", len(out), len(x))
	}
	if rounding >= 0 {
		r := fp8.Rounding(rounding)
		if rounding > int(fp8.RoundUp) {
			return fmt.Errorf("rounding %d: want 0 rn, 1 rna, 2 rz or 3 rp", rounding)
		}
		switch f {
		case fp8.FormatTF32:
			for i, v := range x {
				out[i] = fp8.TF32Round(v, r, s)
			}
		case fp8.FormatUE8M0:
			for i, v := range x {
				out[i] = uint32(fp8.EncodeUE8M0(v, r, s))
			}
		default:
			if r != fp8.RoundNearestEven {
				return fmt.Errorf("rounding %s: only tf32 and ue8m0 conversions have other directions than rn (%s rounds to nearest even)", r, f)
			}
			for i, v := range x {
				out[i] = fp8.EncodeFloat32(f, v, s)
			}
		}
		return nil
	}
	for i, v := range x {
		out[i] = fp8.EncodeFloat32(f, v, s)
	}
	return nil
}

// decode returns the float32 value of every code (fp8.Format.Float32: bits
// above the format's width are ignored, NaN codes give the H200's
// patterns for e4m3/e5m2 and 0x7fc00000 for the other narrow formats).
func decode(format string, codes []uint32, out []float32) error {
	f, err := fp8.ParseFormat(format)
	if err != nil {
		return err
	}
	if len(out) != len(codes) {
		return fmt.Errorf("decode: %d outputs for %d codes", len(out), len(codes))
	}
	if b := f.CodeBits(); b < 32 {
		for i, c := range codes {
			if c>>b != 0 {
				return fmt.Errorf("decode: codes[%d] = %#x is not a %s code (%d bits)", i, c, f, b)
			}
		}
	}
	for i, c := range codes {
		out[i] = f.Float32(c)
	}
	return nil
}

// quantizeMX is fp8.QuantizeMXRule into the caller's arrays.
func quantizeMX(elem string, rule int, x []float32, codes, scales []uint8) error {
	f, err := fp8.ParseFormat(elem)
	if err != nil {
		return err
	}
	if len(codes) != len(x) || len(scales) != len(x)/fp8.MXBlockSize {
		return fmt.Errorf("MX quantization of %d elements: %d codes and %d scales given, want %d and %d", len(x), len(codes), len(scales), len(x), len(x)/fp8.MXBlockSize)
	}
	c, s, err := fp8.QuantizeMXRule(f, x, fp8.MXScaleRule(rule))
	if err != nil {
		return err
	}
	copy(codes, c)
	copy(scales, s)
	return nil
}

// dequantizeMX is fp8.DequantizeMX into out.
func dequantizeMX(elem string, codes, scales []uint8, out []float32) error {
	f, err := fp8.ParseFormat(elem)
	if err != nil {
		return err
	}
	if len(out) != len(codes) {
		return fmt.Errorf("MX dequantization: %d outputs for %d codes", len(out), len(codes))
	}
	v, err := fp8.DequantizeMX(f, codes, scales)
	if err != nil {
		return err
	}
	copy(out, v)
	return nil
}

// quantizeNVFP4 is fp8.QuantizeNVFP4 (tensorScale > 0) or
// fp8.QuantizeNVFP4Tensor (tensorScale NaN: from x's amax); it returns
// the tensor scale used.
func quantizeNVFP4(x []float32, tensorScale float32, codes, scales []uint8) (float32, error) {
	if len(codes) != len(x) || len(scales) != len(x)/fp8.NVFP4BlockSize {
		return 0, fmt.Errorf("NVFP4 quantization of %d elements: %d codes and %d scales given, want %d and %d", len(x), len(codes), len(scales), len(x), len(x)/fp8.NVFP4BlockSize)
	}
	var c, s []uint8
	var err error
	if math.IsNaN(float64(tensorScale)) {
		c, s, tensorScale, err = fp8.QuantizeNVFP4Tensor(x)
	} else {
		c, s, err = fp8.QuantizeNVFP4(x, tensorScale)
	}
	if err != nil {
		return 0, err
	}
	copy(codes, c)
	copy(scales, s)
	return tensorScale, nil
}

// dequantizeNVFP4 is fp8.DequantizeNVFP4 into out.
func dequantizeNVFP4(codes, scales []uint8, tensorScale float32, out []float32) error {
	if len(out) != len(codes) {
		return fmt.Errorf("NVFP4 dequantization: %d outputs for %d codes", len(out), len(codes))
	}
	v, err := fp8.DequantizeNVFP4(codes, scales, tensorScale)
	if err != nil {
		return err
	}
	copy(out, v)
	return nil
}
