package attention

import (
	"math"
	"math/bits"
	"sync"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// fast16 runs a T-FDPA model over 16-bit inputs (bf16, f16) with an RZ-FP32
// output and F ≤ 30 (sm90.wgmma.bf16.f32, sm90.wgmma.f16.f32, sm80 …)
// about 20 times faster than accum's reference path, which these models
// take because accum's fast path covers 8-bit inputs only. It computes the
// same bits by the same observation as accum's fp8 fast path: a product of
// two 16-bit values has at most 22 significant bits, so p·2^(F − e_max) is
// exact in float64 and Go's float64 → int64 conversion truncates it toward
// zero exactly as the step truncates each term; c (FP32) likewise. The
// integer sum and the final RZ conversion to FP32 are the reference's.
// Steps with a NaN or infinite input or c, and exact zero sums (whose sign
// needs every term), go to the wrapped model. TestFast16 checks it bit for
// bit against accum on random, subnormal, cancelling and special inputs.
//
// It belongs in accum; it lives here until accum grows a 16-bit fast path.
type fast16 struct {
	accum.Model
	l, f  int
	ezero int32
	t     *tables16
}

// tables16 holds the exponent read by the step (Emin for subnormals;
// sentinels for zero and specials) and the exact value of every code.
type tables16 struct {
	exp [1 << 16]int32
	val [1 << 16]float64
}

const (
	exp16Zero    = -1000 // a product with a zero factor sums below −700
	exp16Special = 5000  // a product with a NaN or inf factor sums above 4000
)

var (
	tables16Once [8]sync.Once
	tables16By   [8]*tables16
)

func tablesFor16(f fp8.Format) *tables16 {
	tables16Once[f].Do(func() {
		t := &tables16{}
		for c := range t.exp {
			d := f.Decompose(uint32(c))
			switch d.Class {
			case fp8.Zero:
				t.exp[c] = exp16Zero
			case fp8.Inf, fp8.NaN:
				t.exp[c] = exp16Special
			default:
				t.exp[c] = int32(d.E)
				t.val[c] = f.Value(uint32(c))
			}
		}
		tables16By[f] = t
	})
	return tables16By[f]
}

// withFastPath returns m, or m with the 16-bit fast path when it applies.
func withFastPath(m accum.Model) accum.Model {
	info := m.Info()
	p := info.Step
	if info.Kind != accum.KindTFDPA || (info.In != fp8.FormatBF16 && info.In != fp8.FormatFP16) ||
		p.Rho != accum.RZFP32 || p.F > 30 || p.L < 1 || p.L > 64 {
		return m
	}
	return &fast16{Model: m, l: p.L, f: p.F, ezero: int32(p.EZero), t: tablesFor16(info.In)}
}

// Dot chains steps of L elements over a, as the wrapped model does.
func (m *fast16) Dot(a, b []uint16, c float32) float32 {
	b = b[:len(a)]
	for i := 0; i < len(a); i += m.l {
		j := min(i+m.l, len(a))
		if d, ok := m.step(a[i:j], b[i:j], c); ok {
			c = d
		} else {
			c = m.Model.Dot(a[i:j], b[i:j], c)
		}
	}
	return c
}

// step is one T-FDPA step; ok is false when the wrapped model must take it.
func (m *fast16) step(a, b []uint16, c float32) (float32, bool) {
	ex := &m.t.exp
	emax := int32(math.MinInt32 / 2)
	zero := false
	for i, x := range a {
		e := ex[x] + ex[b[i]]
		if e < -700 {
			zero = true
		}
		emax = max(emax, e)
	}
	if emax > 1000 {
		return 0, false
	}
	cb := math.Float32bits(c)
	switch ce := int32(cb >> 23 & 0xff); {
	case ce == 0xff:
		return 0, false
	case cb&0x7fffffff == 0:
		zero = true
	case ce == 0:
		emax = max(emax, -126)
	default:
		emax = max(emax, ce-127)
	}
	if zero {
		emax = max(emax, m.ezero)
	}
	scale := math.Float64frombits(uint64(1023+int32(m.f)-emax) << 52)
	val := &m.t.val
	sum := int64(float64(c) * scale)
	for i, x := range a {
		sum += int64(val[x] * val[b[i]] * scale)
	}
	if sum == 0 {
		return 0, false
	}
	neg := sum < 0
	mag := uint64(sum)
	if neg {
		mag = uint64(-sum)
	}
	v := roundRZ32(mag, int(emax)-m.f)
	if neg {
		v |= 0x80000000
	}
	return math.Float32frombits(v), true
}

// roundRZ32 truncates mag × 2^sx (mag > 0) toward zero to FP32 and returns
// the magnitude bits (+inf from 2^128 up, subnormals below 2^-126).
func roundRZ32(mag uint64, sx int) uint32 {
	e := bits.Len64(mag) - 1 + sx
	if e >= 128 {
		return 0x7f800000
	}
	qe := max(e, -126) - 23
	if s := sx - qe; s >= 0 {
		mag <<= uint(s)
	} else if s > -64 {
		mag >>= uint(-s)
	} else {
		mag = 0
	}
	if e >= -126 {
		return uint32(e+127)<<23 | uint32(mag-1<<23)
	}
	return uint32(mag)
}
