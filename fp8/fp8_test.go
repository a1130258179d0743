package fp8

import (
	"math"
	"testing"
)

func TestE4M3Values(t *testing.T) {
	tests := []struct {
		code E4M3
		want float64
	}{
		{0x00, 0}, {0x01, math.Ldexp(1, -9)}, {0x07, 7 * math.Ldexp(1, -9)}, {0x08, math.Ldexp(1, -6)},
		{0x38, 1}, {0x39, 1.125}, {0x7e, 448}, {0xfe, -448}, {0x80, 0}, {0xb8, -1},
	}
	for _, tt := range tests {
		if got := tt.code.Float64(); got != tt.want {
			t.Errorf("E4M3(%#02x) = %g, want %g", uint8(tt.code), got, tt.want)
		}
	}
	if !E4M3(0x7f).IsNaN() || !E4M3(0xff).IsNaN() || E4M3(0x7e).IsNaN() {
		t.Error("IsNaN wrong")
	}
	if b := math.Float32bits(E4M3(0x80).Float32()); b != 0x80000000 {
		t.Errorf("0x80 decodes to %08x, want -0", b)
	}
}

func TestE5M2Values(t *testing.T) {
	tests := []struct {
		code E5M2
		want float64
	}{
		{0x01, math.Ldexp(1, -16)}, {0x04, math.Ldexp(1, -14)}, {0x3c, 1}, {0x7b, 57344},
		{0x7c, math.Inf(1)}, {0xfc, math.Inf(-1)},
	}
	for _, tt := range tests {
		if got := tt.code.Float64(); got != tt.want {
			t.Errorf("E5M2(%#02x) = %g, want %g", uint8(tt.code), got, tt.want)
		}
	}
	for _, c := range []E5M2{0x7d, 0x7e, 0x7f, 0xfd} {
		if !c.IsNaN() || c.IsInf() {
			t.Errorf("%#02x should be NaN", uint8(c))
		}
	}
}

// TestEncodeBoundaries checks rounding at ties and the saturation rules.
func TestEncodeBoundaries(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	tests := []struct {
		x         float32
		sat, nosa E4M3
	}{
		{0, 0, 0},
		{float32(math.Ldexp(1, -10)), 0, 0}, // tie between 0 and the smallest subnormal: even (0)
		{math.Nextafter32(float32(math.Ldexp(1, -10)), 1), 1, 1}, // just above the tie
		{1.0625, 0x38, 0x38}, // tie between 1 and 1.125: even (1)
		{1.1875, 0x3a, 0x3a}, // tie between 1.125 and 1.25: even (1.25)
		{448, 0x7e, 0x7e},
		{464, 0x7e, 0x7e},                         // tie between 448 and (480): even (448)
		{math.Nextafter32(464, 1000), 0x7e, 0x7f}, // rounds to 480: NaN without saturation
		{1e30, 0x7e, 0x7f}, {inf, 0x7e, 0x7f}, {-inf, 0xfe, 0xff},
		{nan, 0x7f, 0x7f},
		{-1, 0xb8, 0xb8},
	}
	for _, tt := range tests {
		if got := EncodeE4M3(tt.x, SatFinite); got != tt.sat {
			t.Errorf("EncodeE4M3(%g, satfinite) = %#02x, want %#02x", tt.x, uint8(got), uint8(tt.sat))
		}
		if got := EncodeE4M3(tt.x, NoSat); got != tt.nosa {
			t.Errorf("EncodeE4M3(%g, nosat) = %#02x, want %#02x", tt.x, uint8(got), uint8(tt.nosa))
		}
	}
	e5 := []struct {
		x         float32
		sat, nosa E5M2
	}{
		{57344, 0x7b, 0x7b},
		{61440, 0x7b, 0x7c}, // tie between 57344 and 65536: even is 65536 = inf
		{math.Nextafter32(61440, 0), 0x7b, 0x7b},
		{inf, 0x7b, 0x7c}, {-inf, 0xfb, 0xfc}, {nan, 0x7f, 0x7f},
		{float32(math.Ldexp(1, -17)), 0, 0},
	}
	for _, tt := range e5 {
		if got := EncodeE5M2(tt.x, SatFinite); got != tt.sat {
			t.Errorf("EncodeE5M2(%g, satfinite) = %#02x, want %#02x", tt.x, uint8(got), uint8(tt.sat))
		}
		if got := EncodeE5M2(tt.x, NoSat); got != tt.nosa {
			t.Errorf("EncodeE5M2(%g, nosat) = %#02x, want %#02x", tt.x, uint8(got), uint8(tt.nosa))
		}
	}
}

// TestRoundTrip: every finite code decodes and re-encodes to itself under
// both saturation modes, and the decoded value agrees with Format.Value.
func TestRoundTrip(t *testing.T) {
	for c := 0; c < 256; c++ {
		e4 := E4M3(c)
		if !e4.IsNaN() {
			for _, s := range []Saturation{SatFinite, NoSat} {
				if got := EncodeE4M3(e4.Float32(), s); got != e4 {
					t.Errorf("e4m3 %#02x -> %g -> %#02x (%v)", c, e4.Float32(), uint8(got), s)
				}
			}
			if v := FormatE4M3.Value(uint32(c)); v != e4.Float64() {
				t.Errorf("e4m3 %#02x: Format.Value %g, Float64 %g", c, v, e4.Float64())
			}
		}
		e5 := E5M2(c)
		if !e5.IsNaN() {
			if got := EncodeE5M2(e5.Float32(), NoSat); got != e5 {
				t.Errorf("e5m2 %#02x -> %g -> %#02x", c, e5.Float32(), uint8(got))
			}
			if v := FormatE5M2.Value(uint32(c)); v != e5.Float64() {
				t.Errorf("e5m2 %#02x: Format.Value %g, Float64 %g", c, v, e5.Float64())
			}
		}
	}
}

func TestBF16(t *testing.T) {
	tests := []struct {
		x    float32
		want BF16
	}{
		{1, 0x3f80},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, even
		{math.Float32frombits(0x3f808001), 0x3f81},
		{float32(math.Inf(-1)), 0xff80},
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // max float32 rounds to inf
	}
	for _, tt := range tests {
		if got := BF16FromFloat32(tt.x); got != tt.want {
			t.Errorf("BF16FromFloat32(%08x) = %04x, want %04x", math.Float32bits(tt.x), uint16(got), uint16(tt.want))
		}
	}
	if got := BF16FromFloat32(float32(math.NaN())); got.Float32() == got.Float32() {
		t.Error("NaN did not stay NaN")
	}
}

func TestFormatDecompose(t *testing.T) {
	for _, f := range []Format{FormatE4M3, FormatE5M2, FormatFP16, FormatBF16} {
		n := 1 << f.CodeBits()
		for c := 0; c < n; c++ {
			v := f.Value(uint32(c))
			var want float64
			switch f {
			case FormatE4M3:
				want = E4M3(c).Float64()
			case FormatE5M2:
				want = E5M2(c).Float64()
			case FormatFP16:
				want = float64(FP16(c).Float32())
			case FormatBF16:
				want = float64(BF16(c).Float32())
			}
			if v != want && !(v != v && want != want) {
				t.Fatalf("%v code %#x: Value %g, want %g", f, c, v, want)
			}
		}
	}
}

func TestQuantizers(t *testing.T) {
	x := []float32{1, -2, 3, 900, 0.5, -0.25} // 2 tokens x 1 head x 3 dims
	sh := Shape{Tokens: 2, Heads: 1, Dim: 3}
	s, err := Calibrate(x, sh, PerToken, FormatE4M3)
	if err != nil {
		t.Fatal(err)
	}
	if s[0] != 3.0/448 || s[1] != float32(900)/448 {
		t.Errorf("per-token scales %v", s)
	}
	q, err := QuantizeTensor(x, sh, PerTensor, UnitScales(sh, PerTensor), FormatE4M3)
	if err != nil {
		t.Fatal(err)
	}
	if E4M3(q[3]) != E4M3Max {
		t.Errorf("900 with scale 1 gives %#x, want saturation to 448", q[3])
	}
	if _, err := QuantizeTensor(x, sh, PerHead, []float32{0}, FormatE4M3); err == nil {
		t.Error("zero scale accepted")
	}
	if _, err := QuantizeTensor(x[:5], sh, PerTensor, []float32{1}, FormatE4M3); err == nil {
		t.Error("wrong length accepted")
	}
	if AmaxScale(0, FormatE4M3) != 1 {
		t.Error("amax 0 should give the uncalibrated scale 1")
	}
}

func FuzzEncodeE4M3(f *testing.F) {
	for _, x := range []float32{0, 1, 448, 464, 1e-3, -3.5} {
		f.Add(math.Float32bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint32) {
		x := math.Float32frombits(bits)
		for _, s := range []Saturation{SatFinite, NoSat} {
			c := EncodeE4M3(x, s)
			if x != x {
				if !c.IsNaN() {
					t.Fatalf("NaN %08x gave %#02x", bits, uint8(c))
				}
				continue
			}
			if c.IsNaN() {
				if s == SatFinite || math.Abs(float64(x)) <= 464 {
					t.Fatalf("%g (%v) gave NaN", x, s)
				}
				continue
			}
			// The code is the nearest: no other code is closer.
			v := c.Float64()
			d := math.Abs(v - float64(x))
			for o := 0; o < 256; o++ {
				if E4M3(o).IsNaN() {
					continue
				}
				if od := math.Abs(E4M3(o).Float64() - float64(x)); od < d && math.Abs(float64(x)) <= 448 {
					t.Fatalf("%g -> %g but %g is closer", x, v, E4M3(o).Float64())
				}
			}
			// Round trip.
			if EncodeE4M3(c.Float32(), s) != c && !(v == 0) {
				t.Fatalf("round trip of %#02x failed", uint8(c))
			}
			if math.Signbit(float64(x)) != (c&0x80 != 0) {
				t.Fatalf("sign of %g lost: %#02x", x, uint8(c))
			}
		}
	})
}

func FuzzEncodeE5M2(f *testing.F) {
	for _, x := range []float32{0, 1, 57344, 61440, 1e-5, -3.5} {
		f.Add(math.Float32bits(x))
	}
	f.Fuzz(func(t *testing.T, bits uint32) {
		x := math.Float32frombits(bits)
		c := EncodeE5M2(x, NoSat)
		if x != x {
			if !c.IsNaN() {
				t.Fatalf("NaN gave %#02x", uint8(c))
			}
			return
		}
		if c.IsInf() {
			if math.Abs(float64(x)) < 61440 {
				t.Fatalf("%g overflowed", x)
			}
			return
		}
		v := c.Float64()
		d := math.Abs(v - float64(x))
		for o := 0; o < 256; o++ {
			oc := E5M2(o)
			if oc.IsNaN() || oc.IsInf() {
				continue
			}
			if od := math.Abs(oc.Float64() - float64(x)); od < d {
				t.Fatalf("%g -> %g but %g is closer", x, v, oc.Float64())
			}
		}
		if sc := EncodeE5M2(x, SatFinite); sc != c {
			t.Fatalf("in range, satfinite %#02x and nosat %#02x differ", uint8(sc), uint8(c))
		}
	})
}
