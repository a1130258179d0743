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

// newBaseline returns the baseline of kind (named "fp32", "fp32.fma", "fp64",
// "kahan", "pairwise", "exact") over inputs of format in. The registered
// baselines read e4m3; BaselineByName is the exported way to other input
// formats.
func newBaseline(kind baselineKind, in fp8.Format) Model {
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
			return newBaseline(baselineKind(k), in), nil
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
	b = sameLen(a, b)
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
	return ExactDot32(m.info.In, a, b, c)
}

// pairwise sums the float32 products of a and b over the tree that halves
// a range of n into n/2 and n − n/2 until single products. The subtrees of
// two to four products are written out (the same sums in the same order),
// so that the recursion makes a quarter of the calls: in WebAssembly a call
// per product was three quarters of the baseline's time.
func (m *baseline) pairwise(a, b []uint16) float32 {
	val := m.val
	switch len(a) {
	case 0:
		return 0
	case 1:
		return float32(val[a[0]] * val[b[0]])
	case 2:
		b = b[:2]
		return float32(float32(val[a[0]]*val[b[0]]) + float32(val[a[1]]*val[b[1]]))
	case 3: // 1 + (1 + 1)
		b = b[:3]
		return float32(float32(val[a[0]]*val[b[0]]) + float32(float32(val[a[1]]*val[b[1]])+float32(val[a[2]]*val[b[2]])))
	case 4: // (1 + 1) + (1 + 1)
		b = b[:4]
		return float32(float32(float32(val[a[0]]*val[b[0]])+float32(val[a[1]]*val[b[1]])) +
			float32(float32(val[a[2]]*val[b[2]])+float32(val[a[3]]*val[b[3]])))
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

// ExactDot returns c + Σ a_k·b_k computed exactly and rounded once to
// float64 (round to nearest even). A zero exact sum is +0, whatever the signs
// of its terms (as the T-FDPA step). Special values follow IEEE 754: a NaN
// input, a NaN c, or infinities of both signs give NaN; otherwise an infinite
// input or c gives that infinity. len(b) must equal len(a); ExactDot panics
// otherwise (a programming error, as for [Model.Dot]).
func ExactDot(in fp8.Format, a, b []uint16, c float32) float64 {
	if s, ok := e4m3Sum(in, a, b, c); ok {
		return math.Ldexp(float64(s), -18) // one rounding: int64 to float64, then exact scaling
	}
	f, special, ok := exactSum(in, a, b, c)
	if !ok {
		return special
	}
	v, _ := f.Float64()
	return v
}

// ExactDot32 is [ExactDot] rounded once to float32 (round to nearest even,
// subnormals and overflow to ±Inf included): the correctly rounded FP32
// result, never a float64 rounded again. The "exact" baseline returns it.
func ExactDot32(in fp8.Format, a, b []uint16, c float32) float32 {
	if s, ok := e4m3Sum(in, a, b, c); ok {
		// One rounding: int64 to float32; the scaling by 2^-18 is exact
		// (|s|·2^-18 >= 2^-18 is normal, |s| < 2^61 cannot overflow).
		return float32(s) * 0x1p-18
	}
	f, special, ok := exactSum(in, a, b, c)
	if !ok {
		return float32(special)
	}
	v, _ := f.Float32()
	return v
}

// e4m3Sum is the common case without allocation: e4m3 inputs, no NaN,
// c = 0. It returns Σ a_k·b_k in units of 2^-18.
func e4m3Sum(in fp8.Format, a, b []uint16, c float32) (int64, bool) {
	if in != fp8.FormatE4M3 || c != 0 || len(a) >= 1<<25 || len(b) != len(a) {
		return 0, false
	}
	var s int64
	for i, x := range a {
		pa, pb := e4m3Fixed[x&0xff], e4m3Fixed[b[i]&0xff]
		if pa.nan || pb.nan {
			return 0, false
		}
		s += pa.v * pb.v
	}
	return s, true
}

// exactSum returns c + Σ a_k·b_k as an exact big.Float (rounding mode
// ToNearestEven), or, when an input or c is not finite, ok = false and the
// IEEE result (NaN or ±Inf) as special.
func exactSum(in fp8.Format, a, b []uint16, c float32) (f *big.Float, special float64, ok bool) {
	if len(b) != len(a) {
		panic(fmt.Sprintf("accum: ExactDot of %d and %d elements (the lengths must be equal)", len(a), len(b)))
	}
	var pinf, ninf, nan bool
	note := func(v float64) {
		switch {
		case math.IsNaN(v):
			nan = true
		case math.IsInf(v, 1):
			pinf = true
		case math.IsInf(v, -1):
			ninf = true
		}
	}
	note(float64(c))
	if in == fp8.FormatE4M3 && len(a) < 1<<25 {
		// e4m3 has no infinities: every value is an integer multiple of
		// 2^-9, and the sum fits an int64 in units of 2^-18.
		var s int64
		for i, x := range a {
			pa, pb := e4m3Fixed[x&0xff], e4m3Fixed[b[i]&0xff]
			if pa.nan || pb.nan {
				return nil, math.NaN(), false
			}
			s += pa.v * pb.v
		}
		if nan || pinf || ninf {
			return nil, float64(c), false
		}
		f = new(big.Float).SetInt64(s)
		f.SetMantExp(f, -18)
		if c != 0 {
			// 512 bits hold every bit from 2^128 down to 2^-149: exact.
			f.SetPrec(512).Add(f, new(big.Float).SetFloat64(float64(c)))
		}
		return f, 0, true
	}
	// Any format: an integer accumulator in units of 2^u, u the exponent of
	// the smallest product or of the smallest float32, whichever is less.
	u := min(2*(in.Emin()-in.FracBits()), -149)
	acc, t := new(big.Int), new(big.Int)
	add := func(neg bool, m uint64, e int) { // ± m·2^e, e >= u
		t.SetUint64(m)
		t.Lsh(t, uint(e-u))
		if neg {
			acc.Sub(acc, t)
		} else {
			acc.Add(acc, t)
		}
	}
	for i, x := range a {
		pa, pb := in.Decompose(uint32(x)), in.Decompose(uint32(b[i]))
		if pa.Class == fp8.NaN || pb.Class == fp8.NaN {
			return nil, math.NaN(), false
		}
		if pa.Class == fp8.Inf || pb.Class == fp8.Inf {
			if pa.Class == fp8.Zero || pb.Class == fp8.Zero {
				return nil, math.NaN(), false // 0·∞
			}
			if pa.Neg != pb.Neg {
				ninf = true
			} else {
				pinf = true
			}
			continue
		}
		if pa.Class == fp8.Zero || pb.Class == fp8.Zero {
			continue
		}
		add(pa.Neg != pb.Neg, pa.M*pb.M, pa.E+pb.E-2*in.FracBits())
	}
	switch {
	case nan || pinf && ninf:
		return nil, math.NaN(), false
	case pinf:
		return nil, math.Inf(1), false
	case ninf:
		return nil, math.Inf(-1), false
	}
	if c != 0 {
		pc := fp8.FormatFP32.Decompose(math.Float32bits(c)) // ±M·2^(E-23), E-23 >= -149
		add(pc.Neg, pc.M, pc.E-fp8.FormatFP32.FracBits())
	}
	f = new(big.Float).SetInt(acc) // exact: the precision is the integer's
	f.SetMantExp(f, u)
	return f, 0, true
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
