package accum

import (
	"fmt"
	"math"
	"math/big"
	"sync"

	"github.com/fp8lab/fp8lab/fp8"
)

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

type baselineKind uint8

const (
	baseFP32 baselineKind = iota
	baseFMA
	baseFP64
	baseKahan
	basePairwise
	baseExact
)

var baselineNames = [...]string{"fp32", "fp32.fma", "fp64", "kahan", "pairwise", "exact"}
var baselineDocs = [...]string{
	"sequential FP32: p = fl32(a*b), s = fl32(s + p), round to nearest even, unfused",
	"sequential FP32 fused multiply-add: s = fl32(a*b + s) rounded once",
	"sequential FP64 sum of the products from c, rounded to FP32 once at the end",
	"Kahan compensated summation in FP32 from c",
	"pairwise (recursive halving) FP32 sum of the products, then + c",
	"the exact dot product plus c, rounded to FP32 once (round to nearest even)",
}

// baseline is an IEEE accumulation on CUDA cores.
type baseline struct {
	kind baselineKind
	info Info
	val  *[1 << 16]float32 // code -> value, shared by the baselines of one format
}

// NewBaseline returns the baseline named kind ("fp32", "fp32.fma", "fp64",
// "kahan", "pairwise", "exact") over inputs of format in. The registered
// baselines read e4m3; use this for other input formats.
func NewBaseline(kind baselineKind, in fp8.Format) Model {
	b := &baseline{kind: kind, info: Info{Name: baselineNames[kind], Kind: KindIEEE, In: in,
		Doc: baselineDocs[kind], Source: "IEEE 754 binary32/binary64 arithmetic"}}
	b.val = float32Values(in)
	return b
}

var (
	float32ValuesMu    sync.Mutex
	float32ValuesCache = map[fp8.Format]*[1 << 16]float32{}
)

// float32Values returns the value of every code of in as float32 (exact for
// every tensor-core input format; 0 past the codes of an 8-bit format), one
// table per format for all its baselines.
func float32Values(in fp8.Format) *[1 << 16]float32 {
	float32ValuesMu.Lock()
	defer float32ValuesMu.Unlock()
	if t, ok := float32ValuesCache[in]; ok {
		return t
	}
	t := new([1 << 16]float32)
	for c := 0; c < min(1<<in.CodeBits(), len(t)); c++ {
		t[c] = float32(in.Value(uint32(c)))
	}
	float32ValuesCache[in] = t
	return t
}

// BaselineByName returns a baseline for inputs of format in.
func BaselineByName(name string, in fp8.Format) (Model, error) {
	for k, n := range baselineNames {
		if n == name {
			return NewBaseline(baselineKind(k), in), nil
		}
	}
	return nil, fmt.Errorf("unknown baseline %q", name)
}

func (m *baseline) Name() string { return m.info.Name }
func (m *baseline) Info() Info   { return m.info }

// Dot accumulates as the baseline's name says. For FP8, FP16 and BF16
// inputs every product is exact in FP32, so "fp32" and "fp32.fma" give the
// same results; they differ on FP32 inputs (package wgsl's GPU tests).
func (m *baseline) Dot(a, b []uint16, c float32) float32 {
	b = b[:len(a)]
	switch m.kind {
	case baseFP32:
		s := c
		for i, x := range a {
			s = float32(s + float32(m.val[x]*m.val[b[i]]))
		}
		return s
	case baseFMA:
		s := c
		for i, x := range a {
			s = FMA32(m.val[x], m.val[b[i]], s)
		}
		return s
	case baseFP64:
		s := float64(c)
		for i, x := range a {
			s += float64(m.val[x]) * float64(m.val[b[i]])
		}
		return float32(s)
	case baseKahan:
		s, comp := c, float32(0)
		for i, x := range a {
			y := float32(float32(m.val[x]*m.val[b[i]]) - comp)
			t := float32(s + y)
			comp = float32(float32(t-s) - y)
			s = t
		}
		return s
	case basePairwise:
		return float32(c + m.pairwise(a, b))
	}
	return float32(ExactDot(m.info.In, a, b, c))
}

func (m *baseline) pairwise(a, b []uint16) float32 {
	switch len(a) {
	case 0:
		return 0
	case 1:
		return float32(m.val[a[0]] * m.val[b[0]])
	}
	h := len(a) / 2
	return float32(m.pairwise(a[:h], b[:h]) + m.pairwise(a[h:], b[h:]))
}

// FMA32 returns a*b + c rounded once to float32 (round to nearest even), as
// a GPU's FFMA does. It computes the float64 sum with round to odd, which
// then rounds correctly to float32.
func FMA32(a, b, c float32) float32 {
	p := float64(a) * float64(b) // exact: 24+24 bits
	s := float64(c)
	r := p + s
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return float32(r)
	}
	// TwoSum: the exact error of r = p + s.
	bv := r - p
	e := (p - (r - bv)) + (s - bv)
	if e != 0 && math.Float64bits(r)&1 == 0 {
		// Round to odd: r is even, so its neighbour toward the exact
		// value is odd.
		r = math.Nextafter(r, math.Copysign(math.Inf(1), e))
	}
	return float32(r)
}

// ExactDot returns the exact value of c + Σ a_k·b_k rounded to float64 (round
// to nearest even, one rounding). For e4m3 inputs the products are summed in
// an int64 fixed-point accumulator (exact for len(a) < 2^25); other formats
// use math/big. NaN or inf inputs give NaN or inf.
func ExactDot(in fp8.Format, a, b []uint16, c float32) float64 {
	if in == fp8.FormatE4M3 && len(a) < 1<<25 {
		var s int64 // units of 2^-18 = (2^-9)^2
		for i, x := range a {
			pa, pb := e4m3Fixed[x&0xff], e4m3Fixed[b[i]&0xff]
			if pa.nan || pb.nan {
				return math.NaN()
			}
			s += pa.v * pb.v
		}
		if c == 0 {
			return math.Ldexp(float64(s), -18)
		}
		f := new(big.Float).SetPrec(256).SetInt64(s)
		f.SetMantExp(f, -18)
		f.Add(f, new(big.Float).SetPrec(256).SetFloat64(float64(c)))
		v, _ := f.Float64()
		return v
	}
	f := new(big.Float).SetPrec(512)
	if math.IsInf(float64(c), 0) || math.IsNaN(float64(c)) {
		return float64(c)
	}
	f.SetFloat64(float64(c))
	t := new(big.Float).SetPrec(512)
	for i, x := range a {
		va, vb := in.Value(uint32(x)), in.Value(uint32(b[i]))
		p := va * vb // exact for every tensor-core input format
		if math.IsNaN(p) || math.IsInf(p, 0) {
			return p
		}
		t.SetFloat64(p)
		f.Add(f, t)
	}
	v, _ := f.Float64()
	return v
}

type fixed struct {
	v   int64
	nan bool
}

// e4m3Fixed holds every e4m3 value as an integer multiple of 2^-9.
var e4m3Fixed = func() (t [256]fixed) {
	for c := 0; c < 256; c++ {
		v := fp8.FormatE4M3.Value(uint32(c))
		if math.IsNaN(v) {
			t[c].nan = true
			continue
		}
		t[c].v = int64(math.Ldexp(v, 9))
	}
	return
}()
