package fp8

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// The reference conversion of these tests is nearest-by-search over the
// values of the format (refValue, written independently of the table), with
// ties to the even code, and the edge rules written out per format.

// narrow lists the formats the generic rounding routine converts to.
var narrow = []Format{FormatE4M3, FormatE5M2, FormatE2M1, FormatE2M3, FormatE3M2, FormatUE4M3, FormatE4M3FNUZ, FormatE5M2FNUZ}

// refFormat is the sorted list of non-negative finite values of a format
// with their magnitude codes, plus one virtual code beyond the largest (the
// value the next code would have), which means overflow.
type refFormat struct {
	f      Format
	vals   []float64
	codes  []uint32
	max    float64
	sign   uint32
	nan    func(neg bool) uint32 // code of a NaN input
	over   func(neg bool, sat Saturation) uint32
	negZ   bool // whether −0 (and tiny negatives) keep the sign bit
	unsign bool
}

func newRef(f Format) *refFormat {
	r := &refFormat{f: f}
	bitsN := f.CodeBits()
	signBit := uint32(0)
	switch f {
	case FormatUE4M3:
		r.unsign = true
	default:
		signBit = 1 << (bitsN - 1)
	}
	r.sign = signBit
	for c := uint32(0); c < 1<<bitsN; c++ {
		if c&signBit != 0 {
			continue
		}
		v, ok := refValue(f, c)
		if !ok || math.IsInf(v, 0) {
			continue
		}
		r.vals = append(r.vals, v)
		r.codes = append(r.codes, c)
	}
	sort.Slice(r.codes, func(i, j int) bool { return r.vals[i] < r.vals[j] })
	sort.Float64s(r.vals)
	n := len(r.vals)
	r.max = r.vals[n-1]
	// Virtual next value: one ulp of the top binade further.
	r.vals = append(r.vals, r.max+(r.vals[n-1]-r.vals[n-2]))
	r.codes = append(r.codes, r.codes[n-1]+1)
	maxCode := r.codes[n-1]
	sgn := func(neg bool) uint32 {
		if neg {
			return signBit
		}
		return 0
	}
	switch f {
	case FormatE4M3, FormatUE4M3:
		r.nan = func(neg bool) uint32 { return sgn(neg) | 0x7f }
		r.over = func(neg bool, s Saturation) uint32 {
			if s == SatFinite {
				return sgn(neg) | maxCode
			}
			return sgn(neg) | 0x7f
		}
		r.negZ = f == FormatE4M3
	case FormatE5M2:
		r.nan = func(neg bool) uint32 { return sgn(neg) | 0x7f }
		r.over = func(neg bool, s Saturation) uint32 {
			if s == SatFinite {
				return sgn(neg) | maxCode
			}
			return sgn(neg) | 0x7c
		}
		r.negZ = true
	case FormatE4M3FNUZ, FormatE5M2FNUZ:
		r.nan = func(bool) uint32 { return 0x80 }
		r.over = func(neg bool, s Saturation) uint32 {
			if s == SatFinite {
				return sgn(neg) | maxCode
			}
			return 0x80
		}
	default: // e2m1, e2m3, e3m2: saturate always, NaN gives +max
		r.nan = func(bool) uint32 { return maxCode }
		r.over = func(neg bool, s Saturation) uint32 { return sgn(neg) | maxCode }
		r.negZ = true
	}
	return r
}

// encode is the reference conversion of x / 2^scaleExp.
func (r *refFormat) encode(x float32, scaleExp int, sat Saturation) uint32 {
	if x != x {
		return r.nan(math.Signbit(float64(x)))
	}
	neg := math.Signbit(float64(x))
	if neg && r.unsign {
		return 0
	}
	a := math.Abs(float64(x))
	if math.IsInf(a, 0) {
		if r.f == FormatE4M3FNUZ || r.f == FormatE5M2FNUZ {
			return 0x80 // HIP: inf is not clamped and gives NaN
		}
		return r.over(neg, sat)
	}
	a = math.Ldexp(a, -scaleExp) // exact in float64 for every float32 and |scaleExp| ≤ 300
	// Smallest value ≥ a.
	i := sort.SearchFloat64s(r.vals, a)
	var code uint32
	switch {
	case i == len(r.vals):
		return r.over(neg, sat)
	case r.vals[i] == a || i == 0:
		code = r.codes[i]
	default:
		lo, hi := r.vals[i-1], r.vals[i]
		// 2a against lo+hi: both exact in float64.
		switch d := 2*a - (lo + hi); {
		case d < 0:
			code = r.codes[i-1]
		case d > 0:
			code = r.codes[i]
		case r.codes[i-1]&1 == 0:
			code = r.codes[i-1]
		default:
			code = r.codes[i]
		}
	}
	if code > r.codes[len(r.codes)-2] {
		return r.over(neg, sat)
	}
	if code == 0 && !r.negZ {
		return 0
	}
	if neg {
		code |= r.sign
	}
	return code
}

// sweepInputs returns float32 inputs covering every rounding case of a
// format with mbits fraction bits at every exponent: for each float32
// exponent and sign, all combinations of the top mbits+3 mantissa bits with
// low parts 0, 1, half−1, half, half+1 and all ones, plus the specials.
func sweepInputs(mbits int) []float32 {
	top := uint(mbits + 3)
	lowBits := 23 - top
	half := uint32(1) << (lowBits - 1)
	lows := []uint32{0, 1, half - 1, half, half + 1, 1<<lowBits - 1}
	var xs []float32
	for exp := uint32(0); exp < 255; exp++ {
		for t := uint32(0); t < 1<<top; t++ {
			for _, l := range lows {
				b := exp<<23 | t<<lowBits | l
				xs = append(xs, math.Float32frombits(b), math.Float32frombits(b|0x80000000))
			}
		}
	}
	inf := float32(math.Inf(1))
	xs = append(xs, inf, -inf, float32(math.NaN()), -float32(math.NaN()), math.Float32frombits(0x7f800001), math.Float32frombits(0xffc00000))
	return xs
}

// TestEncodeAgainstReference compares the generic conversion of every
// ≤8-bit format with the reference, in both saturation modes, on the
// structured sweep and on float32 of the binades of the largest value and
// of the smallest subnormal of each format (every one of e2m1's top binade).
func TestEncodeAgainstReference(t *testing.T) {
	for _, f := range narrow {
		r := newRef(f)
		xs := sweepInputs(f.FracBits())
		for _, sat := range []Saturation{SatFinite, NoSat} {
			bad := 0
			check := func(x float32) {
				got, want := EncodeFloat32(f, x, sat), r.encode(x, 0, sat)
				if got != want && bad < 10 {
					bad++
					t.Errorf("%v(%g = %#08x, %v) = %#x, want %#x", f, x, math.Float32bits(x), sat, got, want)
				}
			}
			for _, x := range xs {
				check(x)
			}
			// Every 7th float32 of the binade holding the largest value
			// (every one for e2m1), and every 17th of the one holding the
			// smallest subnormal.
			for i, e := range []int{f.Emax(), f.Emin() - f.FracBits()} {
				step := uint32(7 + 10*i)
				if f == FormatE2M1 && i == 0 {
					step = 1
				}
				base := uint32(e+127) << 23
				for m := uint32(0); m < 1<<23; m += step {
					check(math.Float32frombits(base | m))
				}
			}
		}
	}
}

// TestLegacyEncode: the generic routine reproduces the e4m3/e5m2 routine
// verified on the H200 captures, on the structured sweep and 2^22 random
// bit patterns, in both modes.
func TestLegacyEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	xs := sweepInputs(2)
	for i := 0; i < 1<<22; i++ {
		xs = append(xs, math.Float32frombits(rng.Uint32()))
	}
	for _, sat := range []Saturation{SatFinite, NoSat} {
		for _, x := range xs {
			b := math.Float32bits(x)
			if got, want := uint32(EncodeE4M3(x, sat)), legacyEncode(b, 3, -6, 0x7e, 0x7f, 0x7f, sat); got != want {
				t.Fatalf("e4m3 %#08x %v: %#x, legacy %#x", b, sat, got, want)
			}
			if got, want := uint32(EncodeE5M2(x, sat)), legacyEncode(b, 2, -14, 0x7b, 0x7c, 0x7f, sat); got != want {
				t.Fatalf("e5m2 %#08x %v: %#x, legacy %#x", b, sat, got, want)
			}
		}
	}
}

// TestEncodeEdges pins the documented edge cases with literal numbers.
func TestEncodeEdges(t *testing.T) {
	nan := float32(math.NaN())
	negNaN := math.Float32frombits(0xffc00000)
	inf := float32(math.Inf(1))
	tests := []struct {
		f        Format
		x        float32
		sat, nos uint32
	}{
		{FormatE2M1, 0.25, 0x0, 0x0}, {FormatE2M1, 0.2500001, 0x1, 0x1}, {FormatE2M1, 0.75, 0x2, 0x2},
		{FormatE2M1, 1.25, 0x2, 0x2}, {FormatE2M1, 1.75, 0x4, 0x4}, {FormatE2M1, 2.5, 0x4, 0x4},
		{FormatE2M1, 3.5, 0x6, 0x6}, {FormatE2M1, 5, 0x6, 0x6}, {FormatE2M1, 5.0001, 0x7, 0x7},
		{FormatE2M1, 100, 0x7, 0x7}, {FormatE2M1, -inf, 0xf, 0xf}, {FormatE2M1, nan, 0x7, 0x7},
		{FormatE2M1, negNaN, 0x7, 0x7}, {FormatE2M1, float32(math.Copysign(0, -1)), 0x8, 0x8}, {FormatE2M1, -0.1, 0x8, 0x8},
		{FormatE2M3, 7.5, 0x1f, 0x1f}, {FormatE2M3, 7.75, 0x1f, 0x1f}, {FormatE2M3, 1.0 / 16, 0x0, 0x0}, {FormatE2M3, -0.125, 0x21, 0x21},
		{FormatE3M2, 28, 0x1f, 0x1f}, {FormatE3M2, 30, 0x1f, 0x1f}, {FormatE3M2, 1.0 / 32, 0x0, 0x0}, {FormatE3M2, 0.0625, 0x1, 0x1},
		{FormatE4M3FNUZ, 240, 0x7f, 0x7f}, {FormatE4M3FNUZ, 247.99, 0x7f, 0x7f}, {FormatE4M3FNUZ, 248, 0x7f, 0x80},
		{FormatE4M3FNUZ, -248, 0xff, 0x80}, {FormatE4M3FNUZ, inf, 0x80, 0x80}, {FormatE4M3FNUZ, -inf, 0x80, 0x80}, {FormatE4M3FNUZ, nan, 0x80, 0x80},
		{FormatE4M3FNUZ, 0x1p-11, 0x00, 0x00}, {FormatE4M3FNUZ, -0x1p-11, 0x00, 0x00}, {FormatE4M3FNUZ, -0x1p-10, 0x81, 0x81},
		{FormatE4M3FNUZ, float32(math.Copysign(0, -1)), 0x00, 0x00}, {FormatE4M3FNUZ, 1, 0x40, 0x40},
		{FormatE5M2FNUZ, 57344, 0x7f, 0x7f}, {FormatE5M2FNUZ, 61440, 0x7f, 0x80}, {FormatE5M2FNUZ, -1e30, 0xff, 0x80}, {FormatE5M2FNUZ, 1, 0x40, 0x40},
		{FormatE5M2FNUZ, -0x1p-17, 0x84&^0x04 | 0x81, 0x81},
		{FormatUE4M3, 448, 0x7e, 0x7e}, {FormatUE4M3, 464, 0x7e, 0x7e}, {FormatUE4M3, 465, 0x7e, 0x7f},
		{FormatUE4M3, -1, 0, 0}, {FormatUE4M3, -inf, 0, 0}, {FormatUE4M3, nan, 0x7f, 0x7f}, {FormatUE4M3, 1, 0x38, 0x38},
	}
	for _, tt := range tests {
		if got := EncodeFloat32(tt.f, tt.x, SatFinite); got != tt.sat {
			t.Errorf("%v(%g, satfinite) = %#x, want %#x", tt.f, tt.x, got, tt.sat)
		}
		if got := EncodeFloat32(tt.f, tt.x, NoSat); got != tt.nos {
			t.Errorf("%v(%g, nosat) = %#x, want %#x", tt.f, tt.x, got, tt.nos)
		}
	}
	if EncodeE2M1(5.0001) != 7 || EncodeE2M3(-100) != 0x3f || EncodeE3M2(nan) != 0x1f ||
		EncodeE4M3FNUZ(-240, SatFinite) != 0xff || EncodeE5M2FNUZ(nan, SatFinite) != 0x80 || EncodeUE4M3(2, NoSat) != 0x40 {
		t.Error("typed wrappers disagree with EncodeFloat32")
	}
}

// TestRoundTripAll: every finite code of every ≤8-bit format decodes
// (Float32) and re-encodes to itself in both modes, except the −0 codes of
// unsigned-zero formats (none exist) and ue4m3's ignored bit 7.
func TestRoundTripAll(t *testing.T) {
	for _, f := range append(narrow, FormatUE8M0) {
		for c := uint32(0); c < 1<<f.CodeBits(); c++ {
			v := f.Float32(c)
			want, ok := refValue(f, c)
			if !ok {
				if v == v {
					t.Errorf("%v %#x decodes to %g, want NaN", f, c, v)
				}
				continue
			}
			if float64(v) != want || math.Signbit(float64(v)) != math.Signbit(want) {
				t.Errorf("%v %#x decodes to %g, want %g", f, c, v, want)
			}
			if math.IsInf(want, 0) {
				continue
			}
			for _, sat := range []Saturation{SatFinite, NoSat} {
				if got := f.Encode(v, sat); got != c {
					t.Errorf("%v %#x -> %g -> %#x (%v)", f, c, v, got, sat)
				}
			}
		}
		if tab := DecodeTable(f); len(tab) != 1<<f.CodeBits() {
			t.Errorf("%v: decode table of %d entries", f, len(tab))
		}
	}
	if DecodeTable(FormatFP16) != nil {
		t.Error("DecodeTable(f16) should be nil")
	}
	if b := math.Float32bits(FormatE4M3.Float32(0x7f)); b != 0x7ff00000 {
		t.Errorf("e4m3 NaN decodes to %#x, want the H200 pattern 0x7ff00000", b)
	}
}

func TestEncodeUE8M0(t *testing.T) {
	inf := float32(math.Inf(1))
	tests := []struct {
		x          float32
		rz, rp, rn uint8 // SatFinite
		rzNo, rpNo uint8 // NoSat
		comment    string
	}{
		{1, 127, 127, 127, 127, 127, "exact"},
		{1.5, 127, 128, 128, 127, 128, "tie goes up under rn"},
		{1.4999999, 127, 128, 127, 127, 128, ""},
		{-4, 129, 129, 129, 129, 129, "sign ignored"},
		{0, 0, 0, 0, 0, 0, "no zero: 2^-127"},
		{0x1p-127, 0, 0, 0, 0, 0, "subnormal float32, exact"},
		{0x1p-130, 0, 0, 0, 0, 0, "below the smallest value"},
		{0x1.8p-127, 0, 1, 1, 0, 1, "1.5*2^-127"},
		{0x1.7p-127, 0, 1, 0, 0, 1, ""},
		{0x1p127, 254, 254, 254, 254, 254, "largest"},
		{math.MaxFloat32, 254, 254, 254, 254, 255, "rounds beyond 2^127"},
		{inf, 254, 254, 254, 255, 255, ""},
		{float32(math.NaN()), 255, 255, 255, 255, 255, ""},
	}
	for _, tt := range tests {
		got := [5]uint8{EncodeUE8M0(tt.x, RoundZero, SatFinite), EncodeUE8M0(tt.x, RoundUp, SatFinite), EncodeUE8M0(tt.x, RoundNearestEven, SatFinite),
			EncodeUE8M0(tt.x, RoundZero, NoSat), EncodeUE8M0(tt.x, RoundUp, NoSat)}
		want := [5]uint8{tt.rz, tt.rp, tt.rn, tt.rzNo, tt.rpNo}
		if got != want {
			t.Errorf("ue8m0(%g) %s: rz rp rn rz/nosat rp/nosat = %v, want %v", tt.x, tt.comment, got, want)
		}
	}
	// Against the definition: floor/ceil of log2|x| on random float32.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 1<<17; i++ {
		x := math.Float32frombits(rng.Uint32() &^ 0x80000000)
		if x != x || math.IsInf(float64(x), 0) || x == 0 {
			continue
		}
		fl, ce := refLog2(float64(x))
		if got := EncodeUE8M0(x, RoundZero, NoSat); int(got) != clampE8(fl) {
			t.Fatalf("rz(%g) = %d, want %d", x, got, clampE8(fl))
		}
		if got := EncodeUE8M0(x, RoundUp, SatFinite); int(got) != min(clampE8(ce), 254) {
			t.Fatalf("rp(%g) = %d, want %d", x, got, clampE8(ce))
		}
	}
}

// refLog2 returns floor and ceil of log2(x) for x > 0 by comparison with
// powers of two.
func refLog2(x float64) (int, int) {
	fl := -200
	for math.Ldexp(1, fl+1) <= x {
		fl++
	}
	if math.Ldexp(1, fl) == x {
		return fl, fl
	}
	return fl, fl + 1
}

func clampE8(e int) int { return max(e+127, 0) }

func TestTF32Round(t *testing.T) {
	tests := []struct {
		in              uint32
		rn, rna, rz, rp uint32
	}{
		{0x3f801000, 0x3f800000, 0x3f802000, 0x3f800000, 0x3f802000}, // tie, even below
		{0x3f803000, 0x3f804000, 0x3f804000, 0x3f802000, 0x3f804000}, // tie, even above
		{0x3f800fff, 0x3f800000, 0x3f800000, 0x3f800000, 0x3f802000},
		{0xbf801001, 0xbf802000, 0xbf802000, 0xbf800000, 0xbf800000}, // negative: rp truncates
		{0x7f7fffff, 0x7f800000, 0x7f800000, 0x7f7fe000, 0x7f800000}, // overflow to inf (nosat)
		{0x00001000, 0x00000000, 0x00002000, 0x00000000, 0x00002000}, // subnormal tie
		{0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000, 0x7f800000},
		{0x7fc00001, 0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff},
	}
	for _, tt := range tests {
		x := math.Float32frombits(tt.in)
		got := [4]uint32{TF32Round(x, RoundNearestEven, NoSat), TF32Round(x, RoundNearestAway, NoSat), TF32Round(x, RoundZero, NoSat), TF32Round(x, RoundUp, NoSat)}
		if want := [4]uint32{tt.rn, tt.rna, tt.rz, tt.rp}; got != want {
			t.Errorf("tf32(%#08x) rn rna rz rp = %#x, want %#x", tt.in, got, want)
		}
	}
	if got := TF32Round(math.MaxFloat32, RoundNearestEven, SatFinite); got != 0x7f7fe000 {
		t.Errorf("satfinite overflow = %#x", got)
	}
	if got := TF32Round(float32(math.Inf(-1)), RoundZero, SatFinite); got != 0xff7fe000 {
		t.Errorf("satfinite -inf = %#x", got)
	}
	// Against float64 arithmetic on random finite inputs (NoSat).
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 1<<20; i++ {
		b := rng.Uint32()
		x := math.Float32frombits(b)
		if x != x || math.IsInf(float64(x), 0) {
			continue
		}
		v := float64(x)
		e := max(math.Ilogb(v), -126)
		if v == 0 {
			e = -126
		}
		q := math.Ldexp(1, e-10) // tf32 quantum at x
		for _, r := range []Rounding{RoundNearestEven, RoundNearestAway, RoundZero, RoundUp} {
			var w float64
			switch r {
			case RoundNearestEven:
				w = math.RoundToEven(v/q) * q
			case RoundNearestAway:
				w = math.Round(v/q) * q
			case RoundZero:
				w = math.Trunc(v/q) * q
			case RoundUp:
				w = math.Ceil(v/q) * q
			}
			if w > 0x1.ffcp127 {
				w = math.Inf(1)
			}
			got := math.Float32frombits(TF32Round(x, r, NoSat))
			if float64(got) != w && !(w == 0 && got == 0) {
				t.Fatalf("tf32 %v(%#08x) = %g, want %g", r, b, got, w)
			}
		}
	}
}

// fuzzNarrow checks one input of f against the reference in both modes,
// and that the code round-trips through its value.
func fuzzNarrow(t *testing.T, f Format, r *refFormat, bits uint32) {
	x := math.Float32frombits(bits)
	for _, sat := range []Saturation{SatFinite, NoSat} {
		got, want := EncodeFloat32(f, x, sat), r.encode(x, 0, sat)
		if got != want {
			t.Fatalf("%v(%g = %#08x, %v) = %#x, reference %#x", f, x, bits, sat, got, want)
		}
		if v := f.Float32(got); v == v && !math.IsInf(float64(v), 0) && f.Encode(v, sat) != got {
			t.Fatalf("%v: code %#x (from %g) does not round-trip", f, got, x)
		}
	}
}

func fuzzFormat(f *testing.F, fm Format, seeds ...float32) {
	for _, x := range seeds {
		f.Add(math.Float32bits(x))
	}
	f.Add(uint32(0x7fc00000))
	f.Add(uint32(0xff800000))
	r := newRef(fm)
	f.Fuzz(func(t *testing.T, bits uint32) { fuzzNarrow(t, fm, r, bits) })
}

func FuzzEncodeE2M1(f *testing.F) { fuzzFormat(f, FormatE2M1, 0, 0.25, 0.75, 5, 6, 7, -1e-30) }
func FuzzEncodeE2M3(f *testing.F) { fuzzFormat(f, FormatE2M3, 0, 0.0625, 7.5, 7.75, -3.3) }
func FuzzEncodeE3M2(f *testing.F) { fuzzFormat(f, FormatE3M2, 0, 0.03125, 28, 30, -0.7) }
func FuzzEncodeUE4M3(f *testing.F) {
	fuzzFormat(f, FormatUE4M3, 0, 0x1p-10, 448, 464, -2)
}
func FuzzEncodeE4M3FNUZ(f *testing.F) {
	fuzzFormat(f, FormatE4M3FNUZ, 0, 0x1p-11, 240, 248, -0x1p-12)
}
func FuzzEncodeE5M2FNUZ(f *testing.F) {
	fuzzFormat(f, FormatE5M2FNUZ, 0, 0x1p-18, 57344, 61440, -0x1p-18)
}

func FuzzEncodeUE8M0(f *testing.F) {
	for _, x := range []float32{0, 1, 1.5, 0x1p-127, 0x1.8p-127, math.MaxFloat32} {
		f.Add(math.Float32bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint32) {
		x := math.Float32frombits(bits)
		a := math.Abs(float64(x))
		for _, r := range []Rounding{RoundZero, RoundUp, RoundNearestEven} {
			c := EncodeUE8M0(x, r, SatFinite)
			if x != x {
				if c != 0xff {
					t.Fatalf("NaN gave %#x", c)
				}
				continue
			}
			if c == 0xff {
				t.Fatalf("%g (%v, satfinite) gave NaN", x, r)
			}
			v := math.Ldexp(1, int(c)-127)
			// The result brackets |x| as the rounding direction says,
			// unless |x| is out of range.
			lo, hi := v/2, v*2
			switch {
			case math.IsInf(a, 0) || a >= 0x1p127 && c == 0xfe:
			case a <= 0x1p-127 && c == 0:
			case r == RoundZero && !(v <= a && a < hi):
				t.Fatalf("rz(%g) = 2^%d", x, int(c)-127)
			case r == RoundUp && !(lo < a && a <= v):
				t.Fatalf("rp(%g) = 2^%d", x, int(c)-127)
			case r == RoundNearestEven && !(0.75*v <= a && a < 1.5*v):
				t.Fatalf("rn(%g) = 2^%d", x, int(c)-127)
			}
		}
	})
}

// The encoders' branch-free round to nearest even (encParams.round) equals
// the comparison it replaced, rem > half || (rem == half && q odd), for
// every shift 1 … 31 on every 24-bit m with bit 23 set near each tie
// (half − 2 … half + 2 past a multiple of 2^shift, for 2^12 multiples
// spread over the range) and on a stride through the whole range.
func TestRoundBranchFree(t *testing.T) {
	ref := func(m, shift uint32) uint32 {
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
		return q
	}
	fast := func(m, shift uint32) uint32 { return (m + (uint32(1)<<(shift-1) - 1) + (m>>shift)&1) >> shift }
	n := 0
	check := func(m, shift uint32) {
		if m < 1<<23 || m >= 1<<24 {
			return
		}
		n++
		if a, b := fast(m, shift), ref(m, shift); a != b {
			t.Fatalf("m %#x shift %d: branch-free %#x, reference %#x", m, shift, a, b)
		}
	}
	for shift := uint32(1); shift < 32; shift++ {
		step := max(uint32(1)<<shift, (1<<23)>>12)
		for base := uint32(1 << 23); base < 1<<24; base += step {
			k := base >> shift << shift
			for d := int64(-2); d <= 2; d++ {
				check(uint32(int64(k)+int64(1)<<(shift-1)+d), shift)
			}
		}
		for m := uint32(1 << 23); m < 1<<24; m += 4099 {
			check(m, shift)
		}
	}
	t.Logf("%d cases", n)
}

// TestEncodeScaled: EncodeScaled gives Encode's code of each quotient, for
// every format (the table's rows and the others), both saturations,
// strides 1 and 3 and scales of both directions and non-powers of two,
// over the structured sweep, the specials and random bit patterns.
func TestEncodeScaled(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	xs := append(sweepInputs(3), 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.MaxFloat32, -math.SmallestNonzeroFloat32)
	for range 1 << 12 {
		xs = append(xs, math.Float32frombits(r.Uint32()))
	}
	for _, f := range Formats() {
		xs := xs
		if f.CodeBits() <= 8 {
			xs = append(sweepInputs(f.FracBits()), xs...) // ties and edges of f itself
		}
		for _, sat := range []Saturation{SatFinite, NoSat} {
			for _, scale := range []float32{1, 0.37, 3e-3, 1e4, 0.25, -2} {
				for _, stride := range []int{1, 3} {
					dst := make([]uint16, (len(xs)-1)*stride+1)
					f.EncodeScaled(dst, stride, xs, scale, sat)
					bad := 0
					for i, x := range xs {
						if want := uint16(f.Encode(x/scale, sat)); dst[i*stride] != want && bad < 3 {
							bad++
							t.Errorf("%v %v scale %g stride %d: %g gives %#x, Encode %#x", f, sat, scale, stride, x, dst[i*stride], want)
						}
					}
				}
			}
		}
	}
	FormatE4M3.EncodeScaled(nil, 0, nil, 1, SatFinite) // nothing to encode: no panic
	for _, c := range []struct {
		dst    int
		stride int
	}{{2, 1}, {4, 2}, {3, 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("3 codes into %d at stride %d: no panic", c.dst, c.stride)
				}
			}()
			FormatE4M3.EncodeScaled(make([]uint16, c.dst), c.stride, []float32{1, 2, 3}, 1, SatFinite)
		}()
	}
}

// FuzzEncodeScaled: one input and one scale of any bits, every format.
func FuzzEncodeScaled(f *testing.F) {
	f.Add(math.Float32bits(1.5), math.Float32bits(0.37))
	f.Add(uint32(0x7fc00000), math.Float32bits(1))
	f.Add(math.Float32bits(448), uint32(0))
	f.Fuzz(func(t *testing.T, xb, sb uint32) {
		x, scale := math.Float32frombits(xb), math.Float32frombits(sb)
		var dst [1]uint16
		for _, fm := range Formats() {
			for _, sat := range []Saturation{SatFinite, NoSat} {
				fm.EncodeScaled(dst[:], 1, []float32{x}, scale, sat)
				if want := uint16(fm.Encode(x/scale, sat)); dst[0] != want {
					t.Fatalf("%v %v: %g/%g gives %#x, Encode %#x", fm, sat, x, scale, dst[0], want)
				}
			}
		}
	})
}
