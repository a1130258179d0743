package fp8

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refMX quantizes one block with the reference conversion: X from
// floor(log2 amax) by comparison with powers of two, elements by
// nearest-by-search of x/X.
func refMX(elem Format, r *refFormat, xs []float32) (codes []uint32, scale uint8) {
	amax := 0.0
	special := false
	for _, v := range xs {
		a := math.Abs(float64(v))
		if a != a || math.IsInf(a, 0) {
			special = true
		}
		amax = math.Max(amax, a)
	}
	codes = make([]uint32, len(xs))
	if special {
		for i := range codes {
			codes[i] = r.encode(float32(math.NaN()), 0, SatFinite)
		}
		return codes, 0xff
	}
	s := -127
	if amax > 0 {
		fl, _ := refLog2(amax)
		s = max(fl-elem.Emax(), -127)
	}
	for i, v := range xs {
		codes[i] = r.encode(v, s, SatFinite)
	}
	return codes, uint8(s + 127)
}

// randomBlock draws a block with a random magnitude range, zeros, subnormal
// float32 and exact ties at the element format's rounding points.
func randomBlock(rng *rand.Rand, n int) []float32 {
	xs := make([]float32, n)
	e := rng.IntN(300) - 170
	for i := range xs {
		switch rng.IntN(10) {
		case 0:
			xs[i] = 0
		case 1:
			xs[i] = float32(math.Copysign(0, -1))
		case 2: // a short significand: lands on ties and exact values
			xs[i] = float32(math.Ldexp(float64(rng.IntN(64)-32), e+rng.IntN(8)))
		default:
			xs[i] = float32(math.Ldexp(rng.NormFloat64(), e+rng.IntN(12)))
		}
	}
	return xs
}

func TestQuantizeMXAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, elem := range []Format{FormatE4M3, FormatE5M2, FormatE2M3, FormatE3M2, FormatE2M1} {
		r := newRef(elem)
		var x []float32
		for b := 0; b < 2000; b++ {
			x = append(x, randomBlock(rng, MXBlockSize)...)
		}
		// Specials: a NaN block, an inf block, an all-zero block, a block
		// at the top of float32 and one of float32 subnormals.
		blk := func(f func(i int) float32) {
			for i := 0; i < MXBlockSize; i++ {
				x = append(x, f(i))
			}
		}
		blk(func(i int) float32 { return []float32{1, float32(math.NaN())}[i%2] })
		blk(func(i int) float32 { return []float32{-2, float32(math.Inf(-1))}[i%2] })
		blk(func(int) float32 { return 0 })
		blk(func(i int) float32 { return math.MaxFloat32 / float32(i+1) })
		blk(func(i int) float32 { return math.Float32frombits(uint32(i * 12345)) })
		codes, scales, err := QuantizeMX(elem, x)
		if err != nil {
			t.Fatal(err)
		}
		for b := range scales {
			xs := x[b*MXBlockSize : (b+1)*MXBlockSize]
			want, ws := refMX(elem, r, xs)
			if scales[b] != ws {
				t.Fatalf("%v block %d: scale %d, want %d (%v)", elem, b, scales[b], ws, xs)
			}
			for i, w := range want {
				if uint32(codes[b*MXBlockSize+i]) != w {
					t.Fatalf("%v block %d element %d (%g, scale 2^%d): %#x, want %#x", elem, b, i, xs[i], int(ws)-127, codes[b*MXBlockSize+i], w)
				}
			}
		}
		// Dequantization: every finite block is within half a quantum of
		// the input or saturated at max·X.
		y, err := DequantizeMX(elem, codes, scales)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range y {
			sc := scales[i/MXBlockSize]
			if sc == 0xff {
				if v == v {
					t.Fatalf("%v: element %d of a NaN-scaled block is %g", elem, i, v)
				}
				continue
			}
			X := math.Ldexp(1, int(sc)-127)
			xv := float64(x[i])
			want := elem.Value(uint32(codes[i])) * X
			if float64(v) != float64(float32(want)) {
				t.Fatalf("%v: dequantized %g, want %g", elem, v, want)
			}
			q := math.Ldexp(1, max(math.Ilogb(math.Abs(xv)), elem.Emin()+int(sc)-127)-elem.FracBits())
			if xv != 0 && math.Abs(xv) <= elem.MaxValue()*X && math.Abs(want-xv) > q/2 {
				t.Fatalf("%v: %g -> %g, error beyond half a quantum %g", elem, xv, want, q)
			}
		}
	}
}

// TestMXExamples: hand-computed blocks (OCP MX v1.0 §6.3 rule).
func TestMXExamples(t *testing.T) {
	block := func(vs ...float32) []float32 {
		x := make([]float32, MXBlockSize)
		copy(x, vs)
		return x
	}
	tests := []struct {
		name   string
		elem   Format
		x      []float32
		scale  uint8
		codes  []uint8 // first elements
		values []float32
	}{
		// amax 6: floor(log2 6) = 2 = emax(e2m1): X = 1, elements exact.
		{"e2m1 exact", FormatE2M1, block(6, -0.5, 3, 1.5), 127, []uint8{0x7, 0x9, 0x5, 0x3}, []float32{6, -0.5, 3, 1.5}},
		// amax 7: X = 1 still; 7 saturates to 6 (OCP clamps to max normal).
		{"e2m1 clamp", FormatE2M1, block(7, 0.25, 0.26), 127, []uint8{0x7, 0x0, 0x1}, []float32{6, 0, 0.5}},
		// amax 1000: floor(log2) = 9, e4m3 emax 8: X = 2; 1000/2 = 500 -> 448,
		// 1/2 = 0.5 (0x30), -3/2 = -1.5 (0xbc).
		{"e4m3 saturating edge", FormatE4M3, block(1000, 1, -3), 128, []uint8{0x7e, 0x30, 0xbc}, []float32{896, 1, -3}},
		// amax 0: scale 2^-127 (code 0), elements ±0.
		{"all zero", FormatE5M2, block(0, float32(math.Copysign(0, -1))), 0, []uint8{0x00, 0x80}, []float32{0, 0}},
		// e3m2: amax 100: floor(log2) = 6, emax 4: X = 4; 100/4 = 25 -> 24
		// (step 4 in [16, 28]: 0x1e); 0.5/4 = 0.125 = 2 subnormal quanta of
		// 1/16 (0x02).
		{"e3m2", FormatE3M2, block(100, 0.5), 129, []uint8{0x1e, 0x02}, []float32{96, 0.5}},
		// e2m3: amax 0.1: floor(log2) = -4, emax 2: X = 2^-6; 0.1·64 = 6.4 ->
		// 6.5 (step 0.5 in [4, 8): 1.625·4 = 0x1d).
		{"e2m3", FormatE2M3, block(0.1), 121, []uint8{0x1d}, []float32{6.5 / 64}},
	}
	for _, tt := range tests {
		codes, scales, err := QuantizeMX(tt.elem, tt.x)
		if err != nil {
			t.Fatal(err)
		}
		if scales[0] != tt.scale {
			t.Errorf("%s: scale %d, want %d", tt.name, scales[0], tt.scale)
		}
		y, _ := DequantizeMX(tt.elem, codes, scales)
		for i, c := range tt.codes {
			if codes[i] != c {
				t.Errorf("%s: code %d = %#x, want %#x", tt.name, i, codes[i], c)
			}
			if y[i] != tt.values[i] {
				t.Errorf("%s: value %d = %g, want %g", tt.name, i, y[i], tt.values[i])
			}
		}
	}
}

func TestMXErrors(t *testing.T) {
	if _, _, err := QuantizeMX(FormatE4M3, make([]float32, 31)); err == nil {
		t.Error("length 31 accepted")
	}
	for _, f := range []Format{FormatBF16, FormatUE8M0, FormatE4M3FNUZ, FormatInvalid, Format(200)} {
		if _, _, err := QuantizeMX(f, make([]float32, 32)); err == nil {
			t.Errorf("element format %v accepted", f)
		}
		if _, err := DequantizeMX(f, make([]uint8, 32), []uint8{127}); err == nil {
			t.Errorf("dequantize: element format %v accepted", f)
		}
	}
	if _, err := DequantizeMX(FormatE2M1, make([]uint8, 33), []uint8{127}); err == nil {
		t.Error("33 codes for one scale accepted")
	}
	if c, s, err := QuantizeMX(FormatE2M1, nil); err != nil || len(c) != 0 || len(s) != 0 {
		t.Errorf("empty input: %v %v %v", c, s, err)
	}
	// NaN scale: the whole block is NaN after dequantization.
	y, _ := DequantizeMX(FormatE4M3, make([]uint8, 32), []uint8{0xff})
	if y[0] == y[0] {
		t.Error("NaN scale did not give NaN")
	}
	// Dequantization beyond float32: e5m2 max × 2^127 is inf.
	y, _ = DequantizeMX(FormatE5M2, append([]uint8{0x7b}, make([]uint8, 31)...), []uint8{254})
	if !math.IsInf(float64(y[0]), 1) {
		t.Errorf("57344·2^127 = %g, want +inf", y[0])
	}
}

func TestMXScale(t *testing.T) {
	tests := []struct {
		elem Format
		amax float32
		want uint8
	}{
		{FormatE4M3, 448, 127}, {FormatE4M3, 511.9, 127}, {FormatE4M3, 512, 128}, {FormatE5M2, 1, 112},
		{FormatE2M1, 0, 0}, {FormatE2M1, 0x1p-126, 0}, {FormatE2M1, 0x1p-124, 1}, {FormatE2M1, math.MaxFloat32, 252},
		{FormatE2M1, float32(math.Inf(1)), 0xff}, {FormatE2M1, float32(math.NaN()), 0xff}, {FormatE3M2, -16, 127},
		{FormatE4M3, math.Float32frombits(1), 0},
	}
	for _, tt := range tests {
		if got := MXScale(tt.elem, tt.amax); got != tt.want {
			t.Errorf("MXScale(%v, %g) = %d, want %d", tt.elem, tt.amax, got, tt.want)
		}
	}
}

// refNVFP4 is the NVFP4 recipe written out in float64 where float32 is not
// needed for bit-exactness, with elements by nearest-by-search.
func refNVFP4(r *refFormat, xs []float32, ts float32) (codes []uint32, scale uint8) {
	vecMax := float32(0)
	for _, v := range xs {
		if a := float32(math.Abs(float64(v))); a > vecMax {
			vecMax = a
		}
	}
	sf := (float32(1) / ts) * (vecMax * float32(1.0/6.0))
	scale = uint8(newRefCached(FormatE4M3).encode(sf, 0, SatFinite))
	q := float32(FormatE4M3.Value(uint32(scale)))
	var out float32
	if q != 0 {
		out = 1 / (q * ts)
	}
	for _, v := range xs {
		codes = append(codes, r.encode(v*out, 0, SatFinite))
	}
	return codes, scale
}

var refCache = map[Format]*refFormat{}

func newRefCached(f Format) *refFormat {
	if r, ok := refCache[f]; ok {
		return r
	}
	refCache[f] = newRef(f)
	return refCache[f]
}

func TestQuantizeNVFP4(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	r := newRef(FormatE2M1)
	var x []float32
	for b := 0; b < 4000; b++ {
		x = append(x, randomBlock(rng, NVFP4BlockSize)...)
	}
	for _, ts := range []float32{1, NVFP4TensorScale(1000), 0x1p-100, 3.7e20} {
		codes, scales, err := QuantizeNVFP4(x, ts)
		if err != nil {
			t.Fatal(err)
		}
		y, err := DequantizeNVFP4(codes, scales, ts)
		if err != nil {
			t.Fatal(err)
		}
		for b := range scales {
			xs := x[b*NVFP4BlockSize : (b+1)*NVFP4BlockSize]
			want, ws := refNVFP4(r, xs, ts)
			if scales[b] != ws {
				t.Fatalf("ts %g block %d: scale %#x, want %#x", ts, b, scales[b], ws)
			}
			for i, w := range want {
				c := codes[b*NVFP4BlockSize+i]
				if uint32(c) != w {
					t.Fatalf("ts %g block %d element %d (%g): %#x, want %#x", ts, b, i, xs[i], c, w)
				}
				v := y[b*NVFP4BlockSize+i]
				wv := float32(FormatE2M1.Value(uint32(c))) * float32(FormatUE4M3.Value(uint32(scales[b]))) * ts
				if v != wv {
					t.Fatalf("dequantized %g, want %g", v, wv)
				}
			}
		}
	}
}

func TestNVFP4Edges(t *testing.T) {
	inf := float32(math.Inf(1))
	x := make([]float32, 4*NVFP4BlockSize)
	// Block 0: all zero. Block 1: a NaN and 3. Block 2: +inf and 1.
	// Block 3: at the saturating edge for tensor scale 1: amax 2688 =
	// 448·6 gives scale 448 (0x7e) and element 6; 3000 still gives 0x7e
	// (satfinite) and its element saturates to 6.
	x[16], x[17] = float32(math.NaN()), 3
	x[32], x[33] = inf, 1
	x[48], x[49], x[50] = 2688, 3000, -0.5
	codes, scales, err := QuantizeNVFP4(x, 1)
	if err != nil {
		t.Fatal(err)
	}
	if scales[0] != 0 || codes[0] != 0 {
		t.Errorf("zero block: scale %#x code %#x", scales[0], codes[0])
	}
	// 3/6 = 0.5 = e4m3 0x30; element 3/0.5 = 6 -> 0x7; NaN -> +6 (0x7).
	if scales[1] != 0x30 || codes[16] != 0x7 || codes[17] != 0x7 {
		t.Errorf("NaN block: scale %#x codes %#x %#x", scales[1], codes[16], codes[17])
	}
	// inf: scale saturates to 448, inf -> 6, 1/448 -> 0.
	if scales[2] != 0x7e || codes[32] != 0x7 || codes[33] != 0 {
		t.Errorf("inf block: scale %#x codes %#x %#x", scales[2], codes[32], codes[33])
	}
	if scales[3] != 0x7e || codes[48] != 0x7 || codes[49] != 0x7 || codes[50] != 0x8 {
		t.Errorf("edge block: scale %#x codes %#x %#x %#x", scales[3], codes[48], codes[49], codes[50])
	}
	// The order of the float32 operations matters: for this block max and
	// tensor scale, (1/ts)·(vecMax·float32(1/6)) is exactly 184, a tie that
	// rounds to 192 (0x74), while vecMax/6/ts would be 183.99998 -> 176.
	ts := math.Float32frombits(0x3e59a7d9)
	xo := make([]float32, NVFP4BlockSize)
	xo[3] = math.Float32frombits(0x436aa8f5)
	if _, sc, _ := QuantizeNVFP4(xo, ts); sc[0] != 0x74 {
		t.Errorf("recipe order: scale %#x, want 0x74", sc[0])
	}
	for _, ts := range []float32{0, -1, inf, float32(math.NaN()), 0x1p-140} {
		if _, _, err := QuantizeNVFP4(x, ts); err == nil {
			t.Errorf("tensor scale %g accepted", ts)
		}
	}
	if _, _, err := QuantizeNVFP4(x[:15], 1); err == nil {
		t.Error("length 15 accepted")
	}
	if _, err := DequantizeNVFP4(codes[:15], scales[:1], 1); err == nil {
		t.Error("15 codes for one scale accepted")
	}
	y, _ := DequantizeNVFP4([]uint8{7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []uint8{0x7f}, 1)
	if y[0] == y[0] {
		t.Error("NaN scale 0x7f did not give NaN")
	}
	if NVFP4TensorScale(2688) != 1 || NVFP4TensorScale(0) != 1 || NVFP4TensorScale(inf) != 1 {
		t.Error("NVFP4TensorScale")
	}
}

func TestPackE2M1(t *testing.T) {
	codes := []uint8{0x1, 0xf, 0x7, 0x8}
	p, err := PackE2M1(codes)
	if err != nil || len(p) != 2 || p[0] != 0xf1 || p[1] != 0x87 {
		t.Fatalf("PackE2M1 = %x, %v", p, err)
	}
	u := UnpackE2M1(p)
	for i := range codes {
		if u[i] != codes[i] {
			t.Fatalf("unpack %x, want %x", u, codes)
		}
	}
	if _, err := PackE2M1(codes[:3]); err == nil {
		t.Error("odd length accepted")
	}
}

// refMXRoundUp is the TransformerEngine rule written out: amax over
// non-NaN elements, scale = ceil(log2(float32(amax·float32(1/max)))) by
// comparison with powers of two, clamped to [0, 254]; elements by
// nearest-by-search, scaled by 1 when the scale code is 0.
func refMXRoundUp(elem Format, r *refFormat, xs []float32) (codes []uint32, scale uint8) {
	var amax float32
	for _, v := range xs {
		if a := float32(math.Abs(float64(v))); a > amax {
			amax = a
		}
	}
	v := float64(amax * float32(1/elem.MaxValue()))
	code := 0
	switch {
	case math.IsInf(v, 0):
		code = 254
	case v > 0:
		_, ce := refLog2(v)
		code = min(max(ce+127, 0), 254)
	}
	shift := 0
	if code != 0 {
		shift = code - 127
	}
	for _, x := range xs {
		codes = append(codes, r.encode(x, shift, SatFinite))
	}
	return codes, uint8(code)
}

func TestQuantizeMXRoundUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, elem := range []Format{FormatE4M3, FormatE5M2, FormatE2M3, FormatE3M2, FormatE2M1} {
		r := newRef(elem)
		var x []float32
		for b := 0; b < 1500; b++ {
			x = append(x, randomBlock(rng, MXBlockSize)...)
		}
		blk := make([]float32, MXBlockSize)
		blk[0], blk[1], blk[2] = float32(math.NaN()), 3, -0.25 // NaN ignored by amax
		x = append(x, blk...)
		blk = make([]float32, MXBlockSize)
		blk[0], blk[1] = float32(math.Inf(1)), 1 // amax inf: scale 0xfe
		x = append(x, blk...)
		blk = make([]float32, MXBlockSize)
		blk[0] = 0x1p-140 // tiny block: scale code 0, scaled by 1
		x = append(x, blk...)
		codes, scales, err := QuantizeMXRule(elem, x, MXScaleRoundUp)
		if err != nil {
			t.Fatal(err)
		}
		for b := range scales {
			xs := x[b*MXBlockSize : (b+1)*MXBlockSize]
			want, ws := refMXRoundUp(elem, r, xs)
			if scales[b] != ws {
				t.Fatalf("%v block %d: scale %d, want %d", elem, b, scales[b], ws)
			}
			for i, w := range want {
				if uint32(codes[b*MXBlockSize+i]) != w {
					t.Fatalf("%v block %d element %d (%g): %#x, want %#x", elem, b, i, xs[i], codes[b*MXBlockSize+i], w)
				}
			}
		}
		n := len(scales)
		if scales[n-2] != 0xfe || scales[n-1] != 0 {
			t.Errorf("%v: inf block scale %#x, tiny block scale %#x", elem, scales[n-2], scales[n-1])
		}
	}
	// e4m3 example: amax 1000: 1000/448 = 2.23 -> 2^2 (code 129); 1000/4 =
	// 250 (no saturation, unlike the OCP rule's 448 at X = 2).
	x := make([]float32, MXBlockSize)
	x[0] = 1000
	c, s, _ := QuantizeMXRule(FormatE4M3, x, MXScaleRoundUp)
	if s[0] != 129 || FormatE4M3.Value(uint32(c[0])) != 256 {
		t.Errorf("roundup e4m3 1000: scale %d element %g, want 129 and 256 (250 rounded)", s[0], FormatE4M3.Value(uint32(c[0])))
	}
	if _, _, err := QuantizeMXRule(FormatE4M3, x, MXScaleRule(9)); err == nil {
		t.Error("unknown rule accepted")
	}
}

// TestUE8M0TransformerEngine: EncodeUE8M0 rounding up with satfinite equals
// TransformerEngine's portable float_to_e8m0 (utils.cuh), written out here,
// on random float32 and the edge cases.
func TestUE8M0TransformerEngine(t *testing.T) {
	te := func(v float32) uint8 {
		switch {
		case v != v:
			return 0xff
		case math.IsInf(float64(v), 0):
			return 0xfe
		case v == 0:
			return 0
		}
		u := math.Float32bits(v)
		e, m := uint8(u>>23), u&0x7fffff
		if m > 0 && e != 0xfe && !(e == 0 && m <= 0x400000) {
			e++
		}
		return e
	}
	rng := rand.New(rand.NewPCG(17, 18))
	xs := []float32{0x1p-127, 0x1.000002p-127, 0x1p-149, math.MaxFloat32, 0x1p127, 1, 1.5}
	for i := 0; i < 1<<18; i++ {
		xs = append(xs, math.Float32frombits(rng.Uint32()&^0x80000000))
	}
	for _, x := range xs {
		if got, want := EncodeUE8M0(x, RoundUp, SatFinite), te(x); got != want {
			t.Fatalf("ue8m0 rp satfinite(%g = %#08x) = %d, TransformerEngine %d", x, math.Float32bits(x), got, want)
		}
	}
}

func TestQuantizeNVFP4Tensor(t *testing.T) {
	x := make([]float32, 2*NVFP4BlockSize)
	x[0], x[1], x[20] = 2688*4, float32(math.NaN()), -3
	codes, scales, ts, err := QuantizeNVFP4Tensor(x)
	if err != nil || ts != 4 {
		t.Fatalf("tensor scale %g, %v; want 4", ts, err)
	}
	// Block 0: amax 10752 / 6 / 4 = 448 -> 0x7e; element 6 (0x7).
	if scales[0] != 0x7e || codes[0] != 0x7 {
		t.Errorf("block 0: scale %#x code %#x", scales[0], codes[0])
	}
	y, _ := DequantizeNVFP4(codes, scales, ts)
	if y[0] != 10752 || y[20] != -3 {
		t.Errorf("dequantized %g %g, want 10752 -3", y[0], y[20])
	}
	if _, _, _, err := QuantizeNVFP4Tensor(x[:3]); err == nil {
		t.Error("length 3 accepted")
	}
}
