package wgsl

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

func TestDecodeAllCodes(t *testing.T) {
	r := testGPU(t)
	codes := make([]uint8, 256)
	for i := range codes {
		codes[i] = uint8(i)
	}
	for _, tc := range []struct {
		f    fp8.Format
		want func(c uint8) uint32
	}{
		{fp8.FormatE4M3, func(c uint8) uint32 { return math.Float32bits(fp8.E4M3(c).Float32()) }},
		{fp8.FormatE5M2, func(c uint8) uint32 { return math.Float32bits(fp8.E5M2(c).Float32()) }},
	} {
		got, err := r.DecodeFP8(context.Background(), tc.f, codes)
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for c := range codes {
			if w := tc.want(uint8(c)); got[c] != w {
				bad++
				if bad <= 5 {
					t.Errorf("%v decode %#02x: got %#08x, want %#08x", tc.f, c, got[c], w)
				}
			}
		}
		t.Logf("%v: %d/256 codes equal to package fp8", tc.f, 256-bad)
	}
}

// encodeInputs returns float32 inputs that exercise every rounding boundary
// of f: for each pair of neighbouring finite codes, ±2 ulps around their
// midpoint and around each code; the overflow threshold, the smallest
// subnormal and half of it, with both signs; specials; and random bit
// patterns.
func encodeInputs(f fp8.Format, nRandom int) []float32 {
	var vals []float64
	for c := 0; c < 0x80; c++ {
		v := f.Value(uint32(c))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		vals = append(vals, v)
	}
	maxv := vals[len(vals)-1]
	ulp := math.Ldexp(1, int(math.Floor(math.Log2(maxv)))-f.FracBits())
	points := append([]float64{}, vals...)
	for i := 0; i+1 < len(vals); i++ {
		points = append(points, (vals[i]+vals[i+1])/2)
	}
	points = append(points, maxv+ulp/2, maxv+ulp, math.Ldexp(1, f.Emin()-f.FracBits()-1), 1e30, 3e38)
	var xs []float32
	for _, p := range points {
		b := math.Float32bits(float32(p))
		for d := -2; d <= 2; d++ {
			if int64(b)+int64(d) < 0 {
				continue
			}
			x := math.Float32frombits(uint32(int64(b) + int64(d)))
			xs = append(xs, x, -x)
		}
	}
	xs = append(xs, float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00001),
		math.Float32frombits(0x7f800001), math.Float32frombits(1), math.Float32frombits(0x80000001), math.Float32frombits(0x007fffff),
		math.MaxFloat32, -math.MaxFloat32, 0, float32(math.Copysign(0, -1)))
	rng := rand.New(rand.NewPCG(1, uint64(f)))
	for i := 0; i < nRandom; i++ {
		xs = append(xs, math.Float32frombits(rng.Uint32()))
	}
	// Random values in the format's range, where rounding matters most.
	for i := 0; i < nRandom; i++ {
		xs = append(xs, float32(rng.NormFloat64()*math.Ldexp(1, rng.IntN(40)-20)))
	}
	return xs
}

func TestEncodeBoundariesAndRandom(t *testing.T) {
	r := testGPU(t)
	for _, f := range []fp8.Format{fp8.FormatE4M3, fp8.FormatE5M2} {
		xs := encodeInputs(f, 100000)
		for _, sat := range []fp8.Saturation{fp8.SatFinite, fp8.NoSat} {
			got, err := r.EncodeFP8(context.Background(), f, sat, xs)
			if err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i, x := range xs {
				w := uint8(f.Encode(x, sat))
				if got[i] != w {
					bad++
					if bad <= 5 {
						t.Errorf("%v %v encode %#08x (%g): got %#02x, want %#02x", f, sat, math.Float32bits(x), x, got[i], w)
					}
				}
			}
			t.Logf("%v %v: %d/%d inputs equal to package fp8", f, sat, len(xs)-bad, len(xs))
		}
	}
}

func TestAddF32(t *testing.T) {
	r := testGPU(t)
	rng := rand.New(rand.NewPCG(2, 3))
	special := []uint32{0, 0x80000000, 1, 0x80000001, 0x007fffff, 0x00800000, 0x80800000, 0x7f7fffff, 0xff7fffff,
		0x7f800000, 0xff800000, 0x7fc00000, 0x3f800000, 0xbf800000, 0x33800000, 0x34000000, 0x3f800001, 0xb3800000}
	var x, y []uint32
	for _, a := range special {
		for _, b := range special {
			x, y = append(x, a), append(y, b)
		}
	}
	for i := 0; i < 200000; i++ {
		a := rng.Uint32()
		var b uint32
		switch i % 4 {
		case 0:
			b = rng.Uint32()
		case 1: // close exponents: cancellation and carries
			b = a ^ (rng.Uint32() & 0x807fffff)
		case 2: // exponents a few apart: sticky bits
			b = (a & 0xff800000) - uint32(rng.IntN(30))<<23 | rng.Uint32()&0x807fffff
		default: // subnormal range
			a &= 0x80ffffff
			b = rng.Uint32() & 0x80ffffff
		}
		x, y = append(x, a), append(y, b)
	}
	got, err := r.AddF32(context.Background(), x, y)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for i := range x {
		w := math.Float32bits(math.Float32frombits(x[i]) + math.Float32frombits(y[i]))
		ok := got[i] == w
		if w&0x7fffffff > 0x7f800000 {
			ok = got[i] == 0x7fffffff
		}
		if !ok {
			bad++
			if bad <= 5 {
				t.Errorf("%#08x + %#08x: got %#08x, want %#08x", x[i], y[i], got[i], w)
			}
		}
	}
	t.Logf("%d/%d sums equal to Go's float32 addition (NaN results: the canonical 0x7fffffff)", len(x)-bad, len(x))
}
