package attention

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// elementwiseCodes is tokenQuant.quantize as it was written before the
// slice conversions: one element at a time through Encode, elemCode and
// put, the rule the faster code must give bit for bit.
func (q *tokenQuant) elementwiseCodes(x []float32, h int) []uint16 {
	out := make([]uint16, len(x))
	elem := q.f.Elem()
	switch {
	case !q.f.Scaled() && q.f.Block() == 0:
		for i, y := range x {
			c := elem.Encode(y, fp8.SatFinite)
			if q.dt != elem {
				c = q.dt.Encode(float32(elem.Value(c)), fp8.SatFinite)
			}
			out[i] = uint16(c)
		}
	case q.f.Scaled():
		tokenScale := float32(0)
		if q.g == PerTokenHead {
			var a float32
			for _, y := range x {
				a = max(a, abs32(y))
			}
			tokenScale = fp8.AmaxScale(a, elem)
		}
		for i, y := range x {
			s := tokenScale
			if q.g != PerTokenHead {
				s = q.static[q.group(h, i)]
			}
			q.put(out, i, elem.Encode(y/s, q.sat), s)
		}
	default:
		b := q.f.Block()
		for lo := 0; lo < len(x); lo += b {
			var a float32
			for _, y := range x[lo : lo+b] {
				a = max(a, abs32(y))
			}
			s, _ := q.blockScale(a)
			for j, y := range x[lo : lo+b] {
				q.put(out, lo+j, q.elemCode(y, s*q.tensor), s)
			}
		}
	}
	return out
}

// TestQuantizeKVCodesElementwise checks the codes of every KV format on
// every path it has but the block-scaled one, every granularity and both
// saturations, against the element-wise rule, on data with magnitudes
// over many binades, overflowing values, zeros, subnormals, infs and NaNs;
// and quantBlock's element codes (the block-scaled path) against
// elemCode.
func TestQuantizeKVCodesElementwise(t *testing.T) {
	const n, heads, dim = 70, 2, 64
	r := rand.New(rand.NewPCG(21, 2))
	mk := func() []float32 {
		x := make([]float32, n*heads*dim)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(24)-12))
			switch r.IntN(40) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = float32(math.Copysign(0, -1))
			case 2:
				x[i] = math.Float32frombits(r.Uint32() & 0x807fffff) // subnormal
			case 3:
				x[i] = float32(math.Inf(1 - 2*r.IntN(2)))
			case 4:
				x[i] = math.Float32frombits(0x7f800001 + r.Uint32()&0x7fffff | r.Uint32()&0x80000000) // NaN
			case 5:
				x[i] *= 1e6
			}
		}
		return x
	}
	k, v := mk(), mk()
	// A few tokens without any special element, so that whole tokens
	// also take the vector kernel's runs.
	for i := 0; i < 8*heads*dim; i++ {
		if b := math.Float32bits(k[i]) & 0x7fffffff; b < 0x800000 || b >= 0x7f800000 {
			k[i] = 1.25
		}
		if b := math.Float32bits(v[i]) & 0x7fffffff; b < 0x800000 || b >= 0x7f800000 {
			v[i] = -3.5
		}
	}
	shape := KVShape{Tokens: n, Heads: heads, KDim: dim}
	var specs []KVSpec
	for _, f := range KVFormats() {
		for _, path := range []Path{PathDirect, PathDequantBF16, PathDequantE4M3} {
			if !f.Scaled() {
				specs = append(specs, KVSpec{Format: f, Scale: ScaleAmax, Path: path})
				continue
			}
			for _, g := range []Granularity{PerTensor, PerHead, PerTokenHead, PerChannel} {
				for _, sat := range []fp8.Saturation{fp8.SatFinite, fp8.NoSat} {
					for _, sc := range []ScaleChoice{ScaleOne, ScaleAmax} {
						vg := g
						if vg == PerChannel {
							vg = PerHead
						}
						specs = append(specs, KVSpec{Format: f, KScales: g, VScales: vg, Scale: sc, Path: path, Saturation: sat})
					}
				}
			}
		}
	}
	// The same data with the infs and NaNs made finite: the amax tensor
	// scale of NVFP4 is then not 1.
	finite := func(x []float32) []float32 {
		y := append([]float32(nil), x...)
		for i, e := range y {
			if math.IsInf(float64(e), 0) || e != e {
				y[i] = 7
			}
		}
		return y
	}
	type data struct{ k, v []float32 }
	checked := 0
	for _, dd := range []data{{k, v}, {finite(k), finite(v)}} {
		for _, spec := range specs {
			if spec.Check(shape) != nil {
				continue
			}
			k, v := dd.k, dd.v
			kv, err := QuantizeKV(k, v, shape, spec)
			if err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			checked++
			for tok := 0; tok < n; tok++ {
				for h := 0; h < heads; h++ {
					kc, vc := kv.TokenCodes(tok, h)
					wk := kv.kq.elementwiseCodes(k[(tok*heads+h)*dim:][:dim], h)
					wv := kv.vq.elementwiseCodes(v[(tok*heads+h)*dim:][:dim], h)
					for d := range dim {
						if kc[d] != wk[d] || vc[d] != wv[d] {
							t.Fatalf("%s: token %d head %d dim %d: codes %#x %#x, element-wise %#x %#x", spec, tok, h, d, kc[d], vc[d], wk[d], wv[d])
						}
					}
				}
			}
		}
	}
	if checked < 80 {
		t.Fatalf("only %d specs checked", checked)
	}
	for _, f := range []KVFormat{KVMXFP8, KVNVFP4, KVMXFP4} {
		for _, tensor := range []float32{1, 0.37} {
			q := newBlockQuant(f)
			q.tensor = tensor
			b := f.Block()
			out := make([]uint8, b)
			for lo := 0; lo+b <= len(k); lo += b {
				blk := k[lo : lo+b]
				code := q.quantBlock(blk, out, 1)
				var a float32
				for _, y := range blk {
					a = max(a, abs32(y))
				}
				if a != a || math.IsInf(float64(a), 0) {
					continue // zero elements and the NaN scale: TestBlockScaledNaN
				}
				s, wantCode := q.blockScale(a)
				if code != wantCode {
					t.Fatalf("%v: block at %d: scale code %#x, want %#x", f, lo, code, wantCode)
				}
				for j, y := range blk {
					if want := uint8(q.elemCode(y, s*q.tensor)); out[j] != want {
						t.Fatalf("%v tensor %g: block at %d element %d (%g): code %#x, elemCode %#x", f, tensor, lo, j, y, out[j], want)
					}
				}
			}
		}
	}
}

// TestAmax32 checks amax32 against the float loop it replaces: the same
// bits, or NaN both, on slices with zeros of both signs, subnormals, infs
// and NaNs; and the static scales newTokenQuant computes with it against
// the float loop's, for every granularity.
func TestAmax32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 55))
	specials := []float32{0, float32(math.Copysign(0, -1)), math.Float32frombits(1), math.Float32frombits(0x807fffff),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), math.Float32frombits(0xffc00001), math.MaxFloat32, -math.MaxFloat32}
	for n := 0; n < 300; n++ {
		x := make([]float32, n%40)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(60)-30))
			if r.IntN(6) == 0 {
				x[i] = specials[r.IntN(len(specials))]
			}
		}
		var want float32
		for _, y := range x {
			want = max(want, abs32(y))
		}
		got := amax32(x)
		if !(got == want && math.Float32bits(got) == math.Float32bits(want) || got != got && want != want) {
			t.Fatalf("%v: amax32 %g, the float loop %g", x, got, want)
		}
	}
	const tokens, heads, dim = 9, 3, 16
	for _, withNaN := range []bool{false, true} {
		x := make([]float32, tokens*heads*dim)
		for i := range x {
			x[i] = float32(r.NormFloat64() * math.Ldexp(1, r.IntN(20)-10))
		}
		if withNaN {
			x[dim+3] = float32(math.NaN())
		}
		for _, g := range []Granularity{PerTensor, PerHead, PerChannel} {
			for _, f := range []KVFormat{KVE4M3, KVE5M2} {
				spec := KVSpec{Format: f, KScales: g, Scale: ScaleAmax}
				q := newTokenQuant(x, tokens, heads, dim, spec, g)
				amax := make([]float32, len(q.static))
				for tok := 0; tok < tokens; tok++ {
					for h := 0; h < heads; h++ {
						for d := 0; d < dim; d++ {
							i := q.group(h, d)
							amax[i] = max(amax[i], abs32(x[(tok*heads+h)*dim+d]))
						}
					}
				}
				for i, a := range amax {
					if want := fp8.AmaxScale(a, f.Elem()); q.static[i] != want {
						t.Fatalf("%s %s NaN %v: scale %d is %g, want %g", f, g, withNaN, i, q.static[i], want)
					}
				}
			}
		}
		q := newTokenQuant(x, tokens, heads, dim, KVSpec{Format: KVNVFP4, Scale: ScaleAmax}, PerTensor)
		var a float32
		for _, y := range x {
			a = max(a, abs32(y))
		}
		want := float32(1)
		if a > 0 && !math.IsInf(float64(a), 0) {
			want = a / (448 * 6)
		}
		if q.tensor != want {
			t.Fatalf("nvfp4 NaN %v: tensor scale %g, want %g", withNaN, q.tensor, want)
		}
	}
}

// TestMXScaleBits checks mxScale, mxScaleExp and blockScale's ue8m0 code,
// read from the bits, against the float64 Frexp/Ldexp rule they replace,
// on every binade's edges (subnormals included), random bit patterns and
// the specials, for e4m3 and e2m1 elements.
func TestMXScaleBits(t *testing.T) {
	ref := func(a float32, elem fp8.Format) float32 {
		if !(a > 0) || math.IsInf(float64(a), 0) {
			return 1
		}
		_, e := math.Frexp(float64(a))
		x := max(-127, min(127, (e-1)-elem.Emax()))
		return float32(math.Ldexp(1, x))
	}
	var as []float32
	for b := uint32(0); b < 1<<9; b++ { // every exponent, both signs: 0 and the all-ones fraction
		as = append(as, math.Float32frombits(b<<23), math.Float32frombits(b<<23|0x7fffff))
	}
	for s := uint32(0); s < 23; s++ {
		as = append(as, math.Float32frombits(1<<s), math.Float32frombits(1<<s|1<<s-1))
	}
	r := rand.New(rand.NewPCG(3, 33))
	for range 1 << 14 {
		as = append(as, math.Float32frombits(r.Uint32()))
	}
	as = append(as, float32(math.NaN()), float32(math.Inf(1)))
	for _, f := range []KVFormat{KVMXFP8, KVMXFP4} {
		q := newBlockQuant(f)
		for _, a := range as {
			want := ref(a, f.Elem())
			if got := mxScale(a, f.Elem()); got != want {
				t.Fatalf("%v: mxScale(%g) = %g, want %g", f, a, got, want)
			}
			if a >= 0 && a == a {
				s, code := q.blockScale(a)
				_, e := math.Frexp(float64(want))
				if s != want || code != uint8(e-1+127) {
					t.Fatalf("%v: blockScale(%g) = %g %#x, want %g %#x", f, a, s, code, want, uint8(e-1+127))
				}
			}
		}
	}
}

// TestEncodeUE4M3Nearest checks encodeUE4M3 (fp8's conversion) against
// the table search encodeNearest it replaces in blockScale: on a sweep of
// the float32 from 2^−12 to 1024, within two ulps of every code's value
// and of every midpoint, both signs, and on the specials.
func TestEncodeUE4M3Nearest(t *testing.T) {
	tab := nearestTable(fp8.FormatUE4M3)
	check := func(x float32) {
		if a, b := encodeUE4M3(x), tab.encode(fp8.FormatUE4M3, x); a != b {
			t.Fatalf("ue4m3 %g (%#x): fp8's conversion %#x, search %#x", x, math.Float32bits(x), a, b)
		}
	}
	lo, hi := math.Float32bits(1.0/4096), math.Float32bits(1024)
	for b := lo; b < hi; b += 97 {
		check(math.Float32frombits(b))
		check(-math.Float32frombits(b))
	}
	var pts []float64
	for k, m := range tab.mag {
		pts = append(pts, m)
		if k+1 < len(tab.mag) {
			pts = append(pts, (m+tab.mag[k+1])/2)
		}
	}
	for _, v := range pts {
		b := math.Float32bits(float32(v))
		for d := -2; d <= 2; d++ {
			x := math.Float32frombits(uint32(int64(b) + int64(d)))
			check(x)
			check(-x)
		}
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 1e30, -1e30, 1e-40, 464, 465} {
		check(x)
	}
}
