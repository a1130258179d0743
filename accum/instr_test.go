package accum

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

var codeBits = map[string]int{"e4m3": 8, "e5m2": 8, "e2m1": 4, "e2m3": 6, "e3m2": 6, "e4m3fnuz": 8, "e5m2fnuz": 8,
	"f16": 16, "bf16": 16, "tf32": 32, "f32": 32, "f64": 64, "ue8m0": 8, "ue4m3": 7}

var testFormats = func() map[string]fp8.Format {
	m := map[string]fp8.Format{}
	for k := range codeBits {
		if k != "f64" {
			m[k] = mustFormat(k)
		}
	}
	return m
}()

// randCode draws a code of format f biased toward the cases that matter:
// zeros of both signs, subnormals, the extremes and (with specials) NaN/inf.
func randCode(r *rand.Rand, f string, specials bool) uint64 {
	bitsOf := codeBits[f]
	ff := testFormats[f]
	for {
		var c uint64
		switch r.IntN(6) {
		case 0:
			c = 0
			if r.IntN(2) == 0 && bitsOf < 32 && f[0] != 'u' {
				c = 1 << uint(bitsOf-1)
			} else if r.IntN(2) == 0 && bitsOf == 32 {
				c = 1 << 31
			}
		case 1:
			c = uint64(r.IntN(4)) // tiny / subnormal
		default:
			c = r.Uint64() & (1<<uint(bitsOf) - 1)
			if bitsOf == 64 {
				c = r.Uint64()
			}
		}
		if bitsOf == 32 && r.IntN(3) > 0 { // keep most 32-bit values in a sane range
			c = c&0x807fffff | uint64(100+r.IntN(56))<<23
		}
		if specials {
			return c
		}
		if bitsOf == 64 {
			if !math.IsNaN(math.Float64frombits(c)) && !math.IsInf(math.Float64frombits(c), 0) {
				return c
			}
			continue
		}
		if cl := ff.Decompose(uint32(c)).Class; cl != fp8.NaN && cl != fp8.Inf {
			return c
		}
	}
}

// TestChainCodesFastEqualsReference: the fast paths of the block-scaled and
// TF32 instructions give the bits of the reference step, specials included.
func TestChainCodesFastEqualsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 0
	for _, m := range Instructions() {
		nv, ok := m.(*nvInstr)
		if !ok || nv.fast == nil {
			continue
		}
		n++
		in := m.Info()
		for trial := 0; trial < 300; trial++ {
			K := in.K * (1 + r.IntN(3))
			a, b := make([]uint64, K), make([]uint64, K)
			spec := trial%10 == 9
			for i := range a {
				a[i], b[i] = randCode(r, in.A, spec), randCode(r, in.B, spec)
			}
			var sa, sb []uint8
			if in.Scale != "" {
				sa, sb = make([]uint8, K/in.Block), make([]uint8, K/in.Block)
				for i := range sa {
					sa[i], sb[i] = uint8(randCode(r, in.Scale, spec)), uint8(randCode(r, in.Scale, spec))
					if in.Scale == "ue8m0" && r.IntN(2) == 0 {
						sa[i], sb[i] = uint8(120+r.IntN(15)), uint8(120+r.IntN(15))
					}
				}
			}
			c := randCode(r, "f32", spec)
			promote := []int{0, in.K}[trial%2]
			want, err := InstrChain(m, a, b, sa, sb, c, promote)
			if err != nil {
				t.Fatal(err)
			}
			var got uint64
			if in.A == "tf32" {
				a32, b32 := make([]uint32, K), make([]uint32, K)
				for i := range a {
					a32[i], b32[i] = uint32(a[i]), uint32(b[i])
				}
				got, err = ChainCodes(m, a32, b32, sa, sb, c, promote)
			} else {
				a8, b8 := make([]uint8, K), make([]uint8, K)
				for i := range a {
					a8[i], b8[i] = uint8(a[i]), uint8(b[i])
				}
				got, err = ChainCodes(m, a8, b8, sa, sb, c, promote)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != want && !(isNaN32(got) && isNaN32(want)) {
				t.Fatalf("%s: fast %08x, reference %08x\na=%x\nb=%x\nsa=%x sb=%x c=%08x promote=%d", in.Name, got, want, a, b, sa, sb, c, promote)
			}
		}
	}
	if n < 60 {
		t.Fatalf("only %d instructions have a fast path", n)
	}
}

func isNaN32(x uint64) bool { return math.IsNaN(float64(math.Float32frombits(uint32(x)))) }

// chainCodesOfWidth is ChainCodes on a and b narrowed to the code type of
// bits-wide codes (8, 16 or 32; uint64 otherwise).
func chainCodesOfWidth(m Instruction, bits int, a, b []uint64, c uint64, promote int) (uint64, error) {
	switch bits {
	case 8:
		return ChainCodes(m, narrow[uint8](a), narrow[uint8](b), nil, nil, c, promote)
	case 16:
		return ChainCodes(m, narrow[uint16](a), narrow[uint16](b), nil, nil, c, promote)
	case 32:
		return ChainCodes(m, narrow[uint32](a), narrow[uint32](b), nil, nil, c, promote)
	}
	return ChainCodes(m, a, b, nil, nil, c, promote)
}

// sameResult reports whether two results in the accumulator format cf
// (f64, else a 32-bit format) are equal bits or both NaN.
func sameResult(cf string, got, want uint64) bool {
	if cf == "f64" {
		return got == want || math.IsNaN(math.Float64frombits(got)) && math.IsNaN(math.Float64frombits(want))
	}
	return got == want || isNaN32(got) && isNaN32(want)
}

// TestF8F6F4AgreesWithTFDPA: kind::f8f6f4 with e4m3 operands is the
// existing T-FDPA model sm100.tcgen05.f8f6f4.f32, and kind::mxf8f6f4 with
// unit scales (ue8m0 127) is kind::f8f6f4.
func TestF8F6F4AgreesWithTFDPA(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	old := MustLookup("sm100.tcgen05.f8f6f4.f32").(Stepper)
	for _, ab := range []string{"e4m3.e4m3", "e5m2.e2m1", "e2m1.e2m1", "e3m2.e2m3"} {
		plain, _ := LookupInstruction("sm100.tcgen05.f8f6f4." + ab + ".f32")
		mx, _ := LookupInstruction("sm100.tcgen05.mxf8f6f4." + ab + ".f32")
		in := plain.Info()
		for trial := 0; trial < 2000; trial++ {
			a, b := make([]uint64, 32), make([]uint64, 32)
			for i := range a {
				a[i], b[i] = randCode(r, in.A, false), randCode(r, in.B, false)
			}
			c := randCode(r, "f32", false)
			d := plain.Step(a, b, nil, nil, c)
			if e := mx.Step(a, b, []uint8{127}, []uint8{127}, c); e != d {
				t.Fatalf("%s: mxf8f6f4 with unit scales %08x, f8f6f4 %08x", ab, e, d)
			}
			if ab == "e4m3.e4m3" {
				a16, b16 := make([]uint16, 32), make([]uint16, 32)
				for i := range a {
					a16[i], b16[i] = uint16(a[i]), uint16(b[i])
				}
				if e := math.Float32bits(old.Step(a16, b16, math.Float32frombits(uint32(c)))); uint64(e) != d {
					t.Fatalf("e4m3: %08x, sm100.tcgen05.f8f6f4.f32 %08x", d, e)
				}
			}
		}
	}
}

// TestScaleIsExponent: a ue8m0 scale pair (s, t) multiplies every product by
// 2^(s+t-254) exactly when nothing else changes alignment: d(a, b, s, t, 0)
// = d(a, b, 127, 127, 0) × 2^(s+t-254) for results far from the FP32 range
// limits.
func TestScaleIsExponent(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m, _ := LookupInstruction("sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32")
	for trial := 0; trial < 2000; trial++ {
		a, b := make([]uint64, 32), make([]uint64, 32)
		for i := range a {
			a[i], b[i] = uint64(0x08+r.IntN(0x76)), uint64(0x08+r.IntN(0x76)) // nonzero normals, no NaN
		}
		s, u := uint8(100+r.IntN(50)), uint8(100+r.IntN(50))
		d1 := math.Float32frombits(uint32(m.Step(a, b, []uint8{127}, []uint8{127}, 0)))
		d2 := math.Float32frombits(uint32(m.Step(a, b, []uint8{s}, []uint8{u}, 0)))
		if want := float32(math.Ldexp(float64(d1), int(s)+int(u)-254)); d2 != want {
			t.Fatalf("scales %d, %d: %g, want %g", s, u, d2, want)
		}
	}
}

// TestInstructionsListed: every instruction has a doc, a source, and the
// FP6 ones say they are unverified.
func TestInstructionsListed(t *testing.T) {
	if len(Instructions()) < 100 {
		t.Fatalf("%d instructions", len(Instructions()))
	}
	for _, m := range Instructions() {
		in := m.Info()
		if in.Doc == "" || in.Source == "" || in.Name != m.Name() {
			t.Errorf("%s: empty doc or source", m.Name())
		}
		fp6 := strings.Contains(in.A, "e2m3") || strings.Contains(in.A, "e3m2") || strings.Contains(in.B, "e2m3") || strings.Contains(in.B, "e3m2")
		if fp6 != strings.Contains(in.Source, "UNVERIFIED") {
			t.Errorf("%s: FP6 %v but source %q", m.Name(), fp6, in.Source)
		}
	}
	if _, err := LookupInstruction("nope"); err == nil {
		t.Fatal("unknown name accepted")
	}
}

// TestAMDFastEqualsReference: the AMD fast paths (natural-width codes)
// give the bits of Step, chained over several instructions, with and
// without promotion, specials included.
func TestAMDFastEqualsReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, m := range Instructions() {
		am, ok := m.(*amdInstr)
		if !ok {
			continue
		}
		in := m.Info()
		for trial := 0; trial < 400; trial++ {
			K := in.K * (1 + r.IntN(3))
			a, b := make([]uint64, K), make([]uint64, K)
			spec := trial%10 == 9
			for i := range a {
				a[i], b[i] = randCode(r, in.A, spec), randCode(r, in.B, spec)
			}
			c := randCode(r, in.C, spec)
			promote := []int{0, in.K}[trial%2]
			want, err := InstrChain(m, a, b, nil, nil, c, promote)
			if err != nil {
				t.Fatal(err)
			}
			got, err := chainCodesOfWidth(m, codeBits[in.A], a, b, c, promote)
			if err != nil {
				t.Fatal(err)
			}
			if !sameResult(in.C, got, want) {
				t.Fatalf("%s (%v): fast %x, reference %x\na=%x\nb=%x\nc=%x promote=%d", in.Name, am.op, got, want, a, b, c, promote)
			}
		}
	}
}

// TestFMA32Fast: fma32 gives FMA32's bits on random and edge triples
// (signed zeros, subnormals, ties, overflow, NaN, inf).
func TestFMA32Fast(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	edge := []uint32{0, 0x80000000, 1, 0x80000001, 0x00800000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x3f800000, 0x33800000, 0x3f800001}
	pick := func() float32 {
		switch r.IntN(4) {
		case 0:
			return math.Float32frombits(edge[r.IntN(len(edge))])
		case 1:
			return math.Float32frombits(r.Uint32())
		default:
			return math.Float32frombits(r.Uint32()&0x807fffff | uint32(110+r.IntN(30))<<23)
		}
	}
	for i := 0; i < 2000000; i++ {
		a, b, c := pick(), pick(), pick()
		if i%3 == 0 { // near-cancellation and ties
			c = -float32(float64(a) * float64(b))
			if r.IntN(2) == 0 {
				c = math.Float32frombits(math.Float32bits(c) + uint32(r.IntN(5)) - 2)
			}
		}
		want, got := math.Float32bits(FMA32(a, b, c)), math.Float32bits(fma32(a, b, c))
		if want != got && !(math.IsNaN(float64(FMA32(a, b, c))) && math.IsNaN(float64(fma32(a, b, c)))) {
			t.Fatalf("fma32(%08x, %08x, %08x) = %08x, FMA32 %08x", math.Float32bits(a), math.Float32bits(b), math.Float32bits(c), got, want)
		}
	}
}

// TestShadowedInstruction: a row that is both a Model and an Instruction
// of the same name is found by LookupInstruction but listed once (by
// Names, not InstructionNames).
func TestShadowedInstruction(t *testing.T) {
	const name = "test.shadowed.tf32.f32"
	row := Row{Name: name, Arch: "test", Kind: KindTFDPA, A: "tf32", B: "tf32", C: "f32", K: 8, L: 8, F: 25, EZero: -133, Rho: RZFP32,
		Doc: "t", Source: "t", Lists: AsModel | AsInstruction}
	if err := TestRows(t, row); err != nil {
		t.Fatal(err)
	}
	if got, err := LookupInstruction(name); err != nil || got.Name() != name {
		t.Fatalf("lookup: %v %v", got, err)
	}
	if _, err := Lookup(name); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(InstructionNames(), name) {
		t.Fatal("shadowed instruction listed")
	}
	if !slices.Contains(Names(), name) {
		t.Fatal("the Model is not listed")
	}
}

// TestInstrChainPromotion: with promotion every N elements, each block's
// chain starts from +0 and is added to the FP32 register with one RNE add;
// an interval that is not a multiple of K, or promotion of an f16
// accumulator, is an error.
func TestInstrChainPromotion(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	m, _ := LookupInstruction("sm100.tcgen05.mxf4nvf4.ue4m3.f32")
	const K = 64 * 8
	a, b := make([]uint64, K), make([]uint64, K)
	for i := range a {
		a[i], b[i] = randCode(r, "e2m1", false), randCode(r, "e2m1", false)
	}
	sa, sb := make([]uint8, K/16), make([]uint8, K/16)
	for i := range sa {
		sa[i], sb[i] = uint8(0x30+r.IntN(16)), uint8(0x30+r.IntN(16))
	}
	c := uint64(math.Float32bits(1.5))
	got, err := InstrChain(m, a, b, sa, sb, c, 128)
	if err != nil {
		t.Fatal(err)
	}
	acc := float32(1.5)
	for i := 0; i < K; i += 128 {
		d := uint64(0)
		for j := i; j < i+128; j += 64 {
			d = m.Step(a[j:j+64], b[j:j+64], sa[j/16:j/16+4], sb[j/16:j/16+4], d)
		}
		acc += math.Float32frombits(uint32(d))
	}
	if uint64(math.Float32bits(acc)) != got {
		t.Fatalf("promoted chain %08x, by hand %08x", got, math.Float32bits(acc))
	}
	if _, err := InstrChain(m, a, b, sa, sb, c, 100); err == nil {
		t.Error("promotion every 100 elements of a K = 64 instruction accepted")
	}
	f16, _ := LookupInstruction("sm100.tcgen05.f8f6f4.e2m1.e2m1.f16")
	if _, err := InstrChain(f16, a[:64], b[:64], nil, nil, 0, 32); err == nil {
		t.Error("promotion of an f16 accumulator accepted")
	}
}

// TestScaledFinish: the float64 RZ conversion of the fast paths equals
// roundRZ (the reference) for sums up to 2^52 at every exponent, across the
// subnormal range and the overflow to inf.
func TestScaledFinish(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	s := &scaledFast{F: 35}
	for i := 0; i < 1000000; i++ {
		sum := int64(r.Uint64() >> uint(11+r.IntN(52)))
		if sum == 0 {
			continue
		}
		if r.IntN(2) == 0 {
			sum = -sum
		}
		E := int32(r.IntN(420) - 200)
		mag := uint64(sum)
		if sum < 0 {
			mag = uint64(-sum)
		}
		want := roundRZ(mag, int(E-s.F), 23)
		if sum < 0 {
			want |= 0x80000000
		}
		if got := math.Float32bits(s.finish(sum, E)); got != want {
			t.Fatalf("finish(%d, %d) = %08x, roundRZ %08x", sum, E, got, want)
		}
	}
}
