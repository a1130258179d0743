package wgslcheck

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/wgsl"
)

// narrowInputs are float32 bit patterns where a conversion to f can go
// wrong: every code's value and the midpoints between neighbouring values,
// each ±2 ulps, both signs; zeros, subnormals, the float32 extremes, ±inf,
// NaNs; and random patterns.
func narrowInputs(f fp8.Format, rng *rand.Rand, random int) []uint32 {
	var in []uint32
	add := func(b uint32) {
		for d := -2; d <= 2; d++ {
			x := int64(b&0x7fffffff) + int64(d)
			if x < 0 || x > 0x7f800000 {
				continue
			}
			in = append(in, uint32(x), uint32(x)|0x80000000)
		}
	}
	t := fp8.DecodeTable(f)
	var vals []float64
	for _, v := range t {
		if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) && v >= 0 {
			vals = append(vals, float64(v))
		}
	}
	for i, v := range vals {
		add(math.Float32bits(float32(v)))
		for _, w := range vals[i+1:] {
			if w > v {
				add(math.Float32bits(float32((v + w) / 2)))
				break
			}
		}
		add(math.Float32bits(float32(2 * v))) // past the largest value, too
	}
	for _, b := range []uint32{0, 1, 0x7fffff, 0x800000, 0x7f7fffff, 0x7f800000, 0x7f800001, 0x7fc00000, 0x7fffffff, 0x3f800000} {
		add(b)
	}
	for i := 0; i < random; i++ {
		in = append(in, rng.Uint32())
		// magnitudes near the format's range
		in = append(in, rng.Uint32()&0x807fffff|uint32(100+rng.IntN(60))<<23)
	}
	return in
}

// CheckNarrow checks the narrow-format conversions in WGSL against package
// fp8, one Check per format and mode: the encoder of every ≤8-bit format
// (satfinite and nosat) on every code's value and midpoint ±2 ulps, both
// signs, the float32 specials and 2·random random inputs; the decoder on
// every code; ue8m0's encoder in each rounding mode.
func CheckNarrow(ctx context.Context, r *wgsl.Runner, seed uint64, random int) ([]Check, error) {
	rng := rand.New(rand.NewPCG(seed, 9))
	var checks []Check
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatE2M1, fp8.FormatE2M3, fp8.FormatE3M2,
		fp8.FormatUE4M3, fp8.FormatE4M3FNUZ, fp8.FormatE5M2FNUZ} {
		in := narrowInputs(f, rng, random)
		x := make([]float32, len(in))
		for i, b := range in {
			x[i] = math.Float32frombits(b)
		}
		for _, sat := range []fp8.Saturation{fp8.SatFinite, fp8.NoSat} {
			got, err := r.EncodeNarrow(ctx, f, sat, x)
			if err != nil {
				return nil, err
			}
			c := Check{Name: fmt.Sprintf("encode %v %v", f, sat), Total: len(x), EqualHW: -1}
			for i, v := range x {
				if got[i] == uint8(fp8.EncodeFloat32(f, v, sat)) {
					c.EqualModel++
				}
			}
			checks = append(checks, c)
		}
	}
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatE2M1, fp8.FormatE2M3, fp8.FormatE3M2,
		fp8.FormatUE8M0, fp8.FormatUE4M3, fp8.FormatE4M3FNUZ, fp8.FormatE5M2FNUZ} {
		codes := make([]uint8, 1<<f.CodeBits())
		for i := range codes {
			codes[i] = uint8(i)
		}
		dec, err := r.DecodeNarrow(ctx, f, codes)
		if err != nil {
			return nil, err
		}
		c := Check{Name: fmt.Sprintf("decode %v (every code)", f), Total: len(codes), EqualHW: -1}
		for i, code := range codes {
			if dec[i] == math.Float32bits(f.Float32(uint32(code))) {
				c.EqualModel++
			}
		}
		checks = append(checks, c)
	}
	// ue8m0: powers of two, 1.25·2^k, 1.5·2^k and 1.75·2^k ±2 ulps, both
	// signs, specials, random patterns.
	var in []uint32
	for e := uint32(0); e < 255; e++ {
		for _, b := range []uint32{e << 23, e<<23 | 0x200000, e<<23 | 0x400000, e<<23 | 0x600000} {
			for d := uint32(0); d < 3; d++ {
				in = append(in, b+d, b-d, (b+d)|0x80000000)
			}
		}
	}
	for i := 0; i < random; i++ {
		in = append(in, rng.Uint32())
	}
	in = append(in, 0x7f800000, 0xff800000, 0x7fc00000, 0, 0x80000000, 1, 0x7fffff)
	x := make([]float32, len(in))
	for i, b := range in {
		x[i] = math.Float32frombits(b)
	}
	for _, rnd := range []fp8.Rounding{fp8.RoundNearestEven, fp8.RoundNearestAway, fp8.RoundZero, fp8.RoundUp} {
		for _, sat := range []fp8.Saturation{fp8.SatFinite, fp8.NoSat} {
			got, err := r.EncodeUE8M0(ctx, rnd, sat, x)
			if err != nil {
				return nil, err
			}
			c := Check{Name: fmt.Sprintf("encode ue8m0 %v %v", rnd, sat), Total: len(x), EqualHW: -1}
			for i, v := range x {
				if got[i] == fp8.EncodeUE8M0(v, rnd, sat) {
					c.EqualModel++
				}
			}
			checks = append(checks, c)
		}
	}
	return checks, nil
}
