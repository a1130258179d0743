package fp8

import (
	"fmt"
	"math"
)

// Granularity says which elements of a [tokens][heads][dim] tensor share a
// scale.
type Granularity uint8

// The granularities of vLLM's KV-cache and query scales.
const (
	PerTensor Granularity = iota // one scale (vLLM's default)
	PerHead                      // one scale per KV head (vLLM #30141, FA3's (batch, num_heads_k) descales)
	PerToken                     // one scale per token (all heads)
)

// String returns "tensor", "head" or "token".
func (g Granularity) String() string {
	switch g {
	case PerHead:
		return "head"
	case PerToken:
		return "token"
	}
	return "tensor"
}

// ParseGranularity reads "tensor", "head" or "token".
func ParseGranularity(s string) (Granularity, error) {
	switch s {
	case "tensor", "per-tensor":
		return PerTensor, nil
	case "head", "per-head":
		return PerHead, nil
	case "token", "per-token":
		return PerToken, nil
	}
	return 0, fmt.Errorf("unknown scale granularity %q (want tensor, head or token)", s)
}

// MaxFinite returns the largest finite value of an fp8 format (448 or
// 57344) or of the other formats with codes of at most 8 bits (e2m1 6,
// e2m3 7.5, e3m2 28, ue4m3 448, e4m3fnuz 240, e5m2fnuz 57344, ue8m0 2^127),
// or of fp16; math.MaxFloat32 for bf16, tf32 and f32.
func MaxFinite(f Format) float32 {
	switch f {
	case FormatE4M3:
		return E4M3MaxVal
	case FormatE5M2:
		return E5M2MaxVal
	case FormatFP16:
		return 65504
	}
	if f.Valid() && f.CodeBits() <= 8 {
		return float32(f.MaxValue())
	}
	return math.MaxFloat32
}

// AmaxScale is the calibrated scale amax / max (448 for e4m3), computed in
// float32. An amax of zero, or one that is not finite, gives the
// uncalibrated scale 1.0.
func AmaxScale(amax float32, f Format) float32 {
	if !(amax > 0) || math.IsInf(float64(amax), 0) {
		return 1
	}
	return amax / MaxFinite(f)
}

// Shape is the layout of a KV-cache or query tensor: Tokens × Heads × Dim,
// row major (token outermost).
type Shape struct{ Tokens, Heads, Dim int }

// Len is Tokens·Heads·Dim.
func (s Shape) Len() int { return s.Tokens * s.Heads * s.Dim }

func (s Shape) check(n int) error {
	if s.Tokens < 1 || s.Heads < 1 || s.Dim < 1 {
		return fmt.Errorf("shape %dx%dx%d: every dimension must be at least 1", s.Tokens, s.Heads, s.Dim)
	}
	if s.Len() != n {
		return fmt.Errorf("shape %dx%dx%d holds %d elements, got %d", s.Tokens, s.Heads, s.Dim, s.Len(), n)
	}
	return nil
}

// NumScales is how many scales a tensor of this shape has at granularity g.
func (s Shape) NumScales(g Granularity) int {
	switch g {
	case PerHead:
		return s.Heads
	case PerToken:
		return s.Tokens
	}
	return 1
}

// ScaleIndex returns which scale element (token, head) uses.
func ScaleIndex(g Granularity, token, head int) int {
	switch g {
	case PerHead:
		return head
	case PerToken:
		return token
	}
	return 0
}

// Calibrate returns amax calibrated scales (AmaxScale of each group's largest
// magnitude) for x laid out as shape, at granularity g. NaN elements are
// ignored.
func Calibrate(x []float32, shape Shape, g Granularity, f Format) ([]float32, error) {
	if err := shape.check(len(x)); err != nil {
		return nil, err
	}
	// The largest magnitude of each group as its bits, over the group's
	// contiguous runs (the whole tensor, a token's heads, or a head's row):
	// MaxAbs, which orders magnitudes by their bits (+Inf's 0x7f800000,
	// NaNs above), and for the rare run that holds a NaN the largest of the
	// others.
	runMax := func(run []float32) uint32 {
		m := math.Float32bits(MaxAbs(run))
		if m > 0x7f800000 {
			m = 0
			for _, y := range run {
				if a := math.Float32bits(y) &^ (1 << 31); a <= 0x7f800000 {
					m = max(m, a)
				}
			}
		}
		return m
	}
	bits := make([]uint32, shape.NumScales(g))
	row := shape.Heads * shape.Dim
	// In the js/wasm build one kernel call gives every run's runMax
	// (runMaxesWasm: encode.wat's maxrows, the same bits).
	switch g {
	case PerHead:
		if runs := runMaxesWasm(x, len(x)/shape.Dim, shape.Dim, shape.Dim); runs != nil {
			for r, m := range runs {
				h := r % shape.Heads
				bits[h] = max(bits[h], m)
			}
			break
		}
		for i := 0; i < len(x); i += shape.Dim {
			h := i / shape.Dim % shape.Heads
			bits[h] = max(bits[h], runMax(x[i:i+shape.Dim]))
		}
	case PerToken:
		if runs := runMaxesWasm(x, shape.Tokens, row, row); runs != nil {
			copy(bits, runs)
			break
		}
		for t := range shape.Tokens {
			bits[t] = runMax(x[t*row : (t+1)*row])
		}
	default:
		if runs := runMaxesWasm(x, 1, len(x), len(x)); runs != nil {
			bits[0] = runs[0]
		} else {
			bits[0] = runMax(x)
		}
	}
	amax := make([]float32, len(bits))
	for k, b := range bits {
		amax[k] = AmaxScale(math.Float32frombits(b), f)
	}
	return amax, nil
}

// UnitScales returns the uncalibrated scales (all 1.0) for shape at g.
func UnitScales(shape Shape, g Granularity) []float32 {
	s := make([]float32, shape.NumScales(g))
	for i := range s {
		s[i] = 1
	}
	return s
}

// Quantize converts x / scale (a float32 division, rounded to nearest even)
// to format f with SatFinite, as vLLM's cache write does
// (__nv_cvt_float_to_fp8(x / scale, __NV_SATFINITE, ...)). fp16 and bf16
// round to nearest even and overflow to ±inf.
func Quantize(x, scale float32, f Format) uint32 {
	return f.Encode(x/scale, SatFinite)
}

// QuantizeTensor quantizes x (laid out as shape) with the given scales at
// granularity g into codes of f. It checks that the lengths agree and that
// every scale is positive and finite.
func QuantizeTensor(x []float32, shape Shape, g Granularity, scales []float32, f Format) ([]uint32, error) {
	if err := shape.check(len(x)); err != nil {
		return nil, err
	}
	if n := shape.NumScales(g); len(scales) != n {
		return nil, fmt.Errorf("%s scales for shape %dx%dx%d: want %d, got %d", g, shape.Tokens, shape.Heads, shape.Dim, n, len(scales))
	}
	for i, s := range scales {
		if !(s > 0) || math.IsInf(float64(s), 0) {
			return nil, fmt.Errorf("scale %d is %g: scales must be positive and finite", i, s)
		}
	}
	out := make([]uint32, len(x))
	i := 0
	for t := 0; t < shape.Tokens; t++ {
		for h := 0; h < shape.Heads; h++ {
			s := scales[ScaleIndex(g, t, h)]
			for d := 0; d < shape.Dim; d++ {
				out[i] = Quantize(x[i], s, f)
				i++
			}
		}
	}
	return out, nil
}
