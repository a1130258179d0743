package fp8

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refValue is the definition of each format written out independently of
// the format table: sign, exponent and fraction fields with the constants of
// the OCP MX v1.0 spec (e2m1, e2m3, e3m2, e8m0), the PTX ISA (ue4m3) and
// PyTorch's c10 headers (fnuz: bias one larger, 0x80 the only NaN).
// ok is false for NaN codes.
func refValue(f Format, c uint32) (v float64, ok bool) {
	field := func(sbit, ebits, mbits uint, bias int, subnormals bool) float64 {
		neg := sbit > 0 && c>>(sbit)&1 == 1
		e := int(c >> mbits & (1<<ebits - 1))
		m := float64(c & (1<<mbits - 1))
		var a float64
		switch {
		case e == 0 && subnormals:
			a = math.Ldexp(m, 1-bias-int(mbits))
		default:
			a = math.Ldexp(1+m/float64(int(1)<<mbits), e-bias)
		}
		if neg {
			a = -a
		}
		return a
	}
	switch f {
	case FormatE2M1:
		vals := []float64{0, 0.5, 1, 1.5, 2, 3, 4, 6}
		v = vals[c&7]
		if c&8 != 0 {
			v = -v
		}
		return v, true
	case FormatE2M3:
		return field(5, 2, 3, 1, true), true
	case FormatE3M2:
		return field(5, 3, 2, 3, true), true
	case FormatUE8M0:
		if c&0xff == 0xff {
			return 0, false
		}
		return math.Ldexp(1, int(c&0xff)-127), true
	case FormatUE4M3:
		c &= 0x7f
		if c == 0x7f {
			return 0, false
		}
		return field(0, 4, 3, 7, true), true
	case FormatE4M3FNUZ:
		if c&0xff == 0x80 {
			return 0, false
		}
		return field(7, 4, 3, 8, true), true
	case FormatE5M2FNUZ:
		if c&0xff == 0x80 {
			return 0, false
		}
		return field(7, 5, 2, 16, true), true
	case FormatE4M3:
		if c&0x7f == 0x7f {
			return 0, false
		}
		return field(7, 4, 3, 7, true), true
	case FormatE5M2:
		if c&0x7c == 0x7c && c&3 != 0 {
			return 0, false
		}
		if c&0x7f == 0x7c {
			return math.Copysign(math.Inf(1), -float64(c>>7&1)*2+1), true
		}
		return field(7, 5, 2, 15, true), true
	case FormatFP16:
		return float64(FP16(c).Float32()), FP16(c).Float32() == FP16(c).Float32()
	case FormatBF16:
		return float64(BF16(c).Float32()), BF16(c).Float32() == BF16(c).Float32()
	}
	return 0, false
}

// TestDecomposeAllCodes checks Decompose and Value for every code of every
// format with at most 16 bits against refValue, and the class of each code.
func TestDecomposeAllCodes(t *testing.T) {
	wantBits := map[Format]int{FormatE4M3: 8, FormatE5M2: 8, FormatFP16: 16, FormatBF16: 16, FormatE2M1: 4, FormatE2M3: 6,
		FormatE3M2: 6, FormatUE8M0: 8, FormatUE4M3: 7, FormatE4M3FNUZ: 8, FormatE5M2FNUZ: 8}
	for f, bits := range wantBits {
		if f.CodeBits() != bits {
			t.Errorf("%v: CodeBits %d, want %d", f, f.CodeBits(), bits)
		}
		for c := uint32(0); c < 1<<bits; c++ {
			want, ok := refValue(f, c)
			got := f.Value(c)
			p := f.Decompose(c)
			if !ok {
				if p.Class != NaN || got == got {
					t.Errorf("%v %#x: %+v (%g), want NaN", f, c, p, got)
				}
				continue
			}
			if got != want || math.Signbit(got) != math.Signbit(want) {
				t.Errorf("%v %#x: Value %g, want %g", f, c, got, want)
			}
			switch {
			case math.IsInf(want, 0):
				if p.Class != Inf {
					t.Errorf("%v %#x: class %v, want Inf", f, c, p.Class)
				}
			case want == 0:
				if p.Class != Zero || p.M != 0 {
					t.Errorf("%v %#x: %+v, want Zero", f, c, p)
				}
			default:
				// Finite: M fits in FracBits+1 bits, E within [Emin, Emax],
				// subnormals (M without hidden bit) only at Emin.
				if p.Class != Finite || p.M == 0 || p.M >= 2<<f.FracBits() || p.E < f.Emin() || p.E > f.Emax() ||
					(p.M < 1<<f.FracBits() && p.E != f.Emin()) {
					t.Errorf("%v %#x: %+v out of shape (Emin %d Emax %d)", f, c, p, f.Emin(), f.Emax())
				}
			}
			if p.Neg != math.Signbit(want) {
				t.Errorf("%v %#x: Neg %v for %g", f, c, p.Neg, want)
			}
			// Bits above CodeBits are ignored.
			if q := f.Decompose(c | ^uint32(0)<<bits); q != p {
				t.Errorf("%v %#x: high bits changed %+v to %+v", f, c, p, q)
			}
		}
	}
}

// TestFormatTable checks the derived quantities against the published
// figures: largest finite value, smallest subnormal, emin, emax.
func TestFormatTable(t *testing.T) {
	tests := []struct {
		f          Format
		max, minSN float64 // largest finite, smallest positive
		emin, emax int
		maxCode    uint32
	}{
		{FormatE4M3, 448, 0x1p-9, -6, 8, 0x7e},
		{FormatE5M2, 57344, 0x1p-16, -14, 15, 0x7b},
		{FormatFP16, 65504, 0x1p-24, -14, 15, 0x7bff},
		{FormatBF16, 0x1.fep127, 0x1p-133, -126, 127, 0x7f7f},
		{FormatTF32, 0x1.ffcp127, 0x1p-136, -126, 127, 0x7f7fe000},
		{FormatFP32, math.MaxFloat32, 0x1p-149, -126, 127, 0x7f7fffff},
		{FormatE2M1, 6, 0.5, 0, 2, 0x7},
		{FormatE2M3, 7.5, 0.125, 0, 2, 0x1f},
		{FormatE3M2, 28, 0.0625, -2, 4, 0x1f},
		{FormatUE8M0, 0x1p127, 0x1p-127, -127, 127, 0xfe},
		{FormatUE4M3, 448, 0x1p-9, -6, 8, 0x7e},
		{FormatE4M3FNUZ, 240, 0x1p-10, -7, 7, 0x7f},
		{FormatE5M2FNUZ, 57344, 0x1p-17, -15, 15, 0x7f},
	}
	for _, tt := range tests {
		if got := tt.f.MaxValue(); got != tt.max {
			t.Errorf("%v: MaxValue %g, want %g", tt.f, got, tt.max)
		}
		if got := tt.f.MaxCode(); got != tt.maxCode {
			t.Errorf("%v: MaxCode %#x, want %#x", tt.f, got, tt.maxCode)
		}
		low := uint32(1) << tt.f.Spec().TruncBits
		if tt.f == FormatUE8M0 {
			low = 0
		}
		if got := tt.f.Value(low); got != tt.minSN {
			t.Errorf("%v: smallest positive %g, want %g", tt.f, got, tt.minSN)
		}
		if tt.f.Emin() != tt.emin || tt.f.Emax() != tt.emax {
			t.Errorf("%v: emin/emax %d/%d, want %d/%d", tt.f, tt.f.Emin(), tt.f.Emax(), tt.emin, tt.emax)
		}
		s := tt.f.Spec()
		if s.Inf != (s.NaN == NaNIEEE) {
			t.Errorf("%v: Inf %v with NaN encoding %v", tt.f, s.Inf, s.NaN)
		}
		g, err := ParseFormat(tt.f.String())
		if err != nil || g != tt.f {
			t.Errorf("ParseFormat(%q) = %v, %v", tt.f.String(), g, err)
		}
	}
	if len(tests) != len(Formats()) {
		t.Errorf("%d formats tested, %d in the table", len(tests), len(Formats()))
	}
}

func TestParseFormat(t *testing.T) {
	tests := []struct {
		in   string
		want Format
	}{
		{"e4m3", FormatE4M3}, {"E4M3FN", FormatE4M3}, {"float8_e4m3fn", FormatE4M3},
		{"e5m2", FormatE5M2}, {"fp16", FormatFP16}, {"f16", FormatFP16}, {"bf16", FormatBF16},
		{"tf32", FormatTF32}, {"fp32", FormatFP32}, {"f32", FormatFP32},
		{"e2m1", FormatE2M1}, {"fp4", FormatE2M1}, {"float4_e2m1fn_x2", FormatE2M1},
		{"e2m3", FormatE2M3}, {"float6_e2m3fn", FormatE2M3}, {"e3m2", FormatE3M2}, {"float6_e3m2fn", FormatE3M2},
		{"ue8m0", FormatUE8M0}, {"e8m0fnu", FormatUE8M0}, {"float8_e8m0fnu", FormatUE8M0},
		{"ue4m3", FormatUE4M3},
		{"e4m3fnuz", FormatE4M3FNUZ}, {"float8_e4m3fnuz", FormatE4M3FNUZ},
		{"e5m2fnuz", FormatE5M2FNUZ}, {"float8_e5m2fnuz", FormatE5M2FNUZ}, {"bf8", FormatE5M2FNUZ},
	}
	for _, tt := range tests {
		if got, err := ParseFormat(tt.in); err != nil || got != tt.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "invalid", "e3m4", "nvfp4", "fp8"} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("ParseFormat(%q) accepted", bad)
		}
	}
}

// TestDecomposeWide: tf32 and f32 Decompose agree with the float32 value of
// the code (tf32 after clearing the 13 low bits) on random and special codes.
func TestDecomposeWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	codes := []uint32{0, 0x80000000, 1, 0x1fff, 0x2000, 0x7f800000, 0xff800000, 0x7f801fff, 0x7f802000, 0x7f7fffff, 0x807fffff}
	for i := 0; i < 1<<18; i++ {
		codes = append(codes, rng.Uint32())
	}
	for _, c := range codes {
		for _, f := range []Format{FormatTF32, FormatFP32} {
			cc := c
			if f == FormatTF32 {
				cc &^= 0x1fff
			}
			want := float64(math.Float32frombits(cc))
			got := f.Value(c)
			if !(got == want && math.Signbit(got) == math.Signbit(want)) && !(got != got && want != want) {
				t.Fatalf("%v %#08x: Value %g, want %g", f, c, got, want)
			}
			if p := f.Decompose(c); (p.Class == NaN) != (want != want) || (p.Class == Inf) != math.IsInf(want, 0) || (p.Class == Zero) != (want == 0) {
				t.Fatalf("%v %#08x: class %v for %g", f, c, p.Class, want)
			}
		}
	}
}
