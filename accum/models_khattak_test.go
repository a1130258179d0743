package accum

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

var khattakModels = []string{
	"sm89.mma.sync.e5m2.f32", "sm89.mma.sync.e4m3.f16", "sm89.mma.sync.e5m2.f16",
	"sm100.mma.sync.f16.f32", "sm100.mma.sync.bf16.f32",
	"sm80.mma.sync.tf32.f32", "sm90.mma.sync.tf32.f32", "sm100.mma.sync.tf32.f32",
	"sm70.mma.f16.f16", "sm80.mma.sync.f16.f16", "sm90.mma.sync.f16.f16", "sm100.mma.sync.f16.f16",
	"sm90.mma.sync.e5m2.f32", "sm90.mma.sync.e4m3.f16", "sm90.mma.sync.e5m2.f16",
	"sm100.mma.sync.e4m3.f32", "sm100.mma.sync.e5m2.f32", "sm100.mma.sync.e4m3.f16", "sm100.mma.sync.e5m2.f16",
}

// TestKhattakModelTable checks that every model added for Khattak &
// Mikaitis' outputs is in the table with a doc and a source naming its
// evidence.
func TestKhattakModelTable(t *testing.T) {
	for _, n := range khattakModels {
		m, err := Lookup(n)
		if err != nil {
			t.Error(err)
			continue
		}
		i := m.Info()
		if i.Name != n || i.Doc == "" || i.K == 0 || !(strings.HasPrefix(i.Source, "Khattak & Mikaitis ") || strings.Contains(i.Source, "H200")) {
			t.Errorf("%s: incomplete info %+v", n, i)
		}
		if _, ok := m.(Stepper); !ok {
			t.Errorf("%s is not a Stepper", n)
		}
	}
}

// randTF32 draws a float32 pattern for a tf32 input: normal values over a
// wide range, subnormals, zeros, values near the bottom of the range, and
// (with specials) inf and NaN; the 13 low bits are random (ignored).
func randTF32(r *rand.Rand, specials bool) uint32 {
	low := r.Uint32() & 0x1fff
	sign := r.Uint32() & 0x80000000
	switch r.IntN(12) {
	case 0:
		return sign | low // a zero whose low bits are set
	case 1:
		return sign | r.Uint32()&0x7fffff // subnormal
	case 2:
		return math.Float32bits(float32(math.Ldexp(r.NormFloat64(), -60-r.IntN(60))))
	case 3:
		if specials {
			return sign | 0x7f800000 | r.Uint32()&0x7fffff // inf, or NaN (or inf once truncated)
		}
	case 4:
		return math.Float32bits(float32(math.Ldexp(r.NormFloat64(), 60+r.IntN(60))))
	}
	return math.Float32bits(float32(r.NormFloat64() * math.Ldexp(1, r.IntN(40)-20)))
}

// TestWideStepMatchesReference checks the TF32 fast path against the
// reference Params.Step on many kinds of inputs, exact cancellations and
// every kind of accumulator, for each TF32 model's parameters and a few more.
func TestWideStepMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	var params []Params
	for _, n := range []string{"sm80.mma.sync.tf32.f32", "sm90.mma.sync.tf32.f32", "sm100.mma.sync.tf32.f32"} {
		m := MustLookup(n).(*tfdpa)
		if m.wide == nil {
			t.Fatalf("%s has no fast path", n)
		}
		params = append(params, m.info.Step)
	}
	params = append(params, Params{L: 16, F: 13, Rho: RZE8M13, EZero: -133, In: fp8.FormatTF32},
		Params{L: 64, F: 30, Rho: RZFP32, EZero: -300, In: fp8.FormatTF32})
	for _, p := range params {
		m := mustTFDPA(t, fp8.FormatTF32, p.L, p)
		for trial := 0; trial < 40000; trial++ {
			n := 1 + r.IntN(p.L)
			a, b := make([]uint32, n), make([]uint32, n)
			for i := range a {
				a[i], b[i] = randTF32(r, trial%10 == 0), randTF32(r, trial%10 == 0)
			}
			if trial%7 == 0 { // exact cancellation
				copy(b[n/2:], b[:n/2])
				for i := 0; i < n/2; i++ {
					a[n/2+i] = a[i] ^ 0x80000000
				}
			}
			c := randC(r, trial%10 == 0)
			if trial%3 == 0 {
				c = math.Float32frombits(randTF32(r, false) &^ 0x1fff)
			}
			want := p.Step(a, b, math.Float32bits(c))
			got := math.Float32bits(m.Step32(a, b, c))
			if got != want && !(want == NaN32 && math.IsNaN(float64(math.Float32frombits(got)))) {
				t.Fatalf("L=%d F=%d: a=%08x b=%08x c=%08x: fast %08x, reference %08x", p.L, p.F, a, b, math.Float32bits(c), got, want)
			}
		}
	}
}

// TestDot32MatchesReference checks the TF32 chain fast path (Dot32) against
// a chain of reference steps, with NaN and inf inputs in some chains (the
// fast path hands their steps to the reference and goes on).
func TestDot32MatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	for _, n := range []string{"sm80.mma.sync.tf32.f32", "sm90.mma.sync.tf32.f32"} {
		m := MustLookup(n).(*tfdpa)
		p := m.info.Step
		for trial := 0; trial < 3000; trial++ {
			k := 1 + r.IntN(100)
			a, b := make([]uint32, k), make([]uint32, k)
			for i := range a {
				a[i], b[i] = randTF32(r, trial%20 == 0), randTF32(r, trial%20 == 0)
			}
			c := randC(r, trial%20 == 1)
			want := c
			for i := 0; i < k; i += p.L {
				j := min(i+p.L, k)
				want = math.Float32frombits(p.Step(a[i:j], b[i:j], math.Float32bits(want)))
			}
			got := m.Dot32(a, b, c)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("%s K=%d: Dot32 %08x, reference chain %08x", n, k, math.Float32bits(got), math.Float32bits(want))
			}
		}
	}
}

// TestTF32EZero checks that a zero term (here c = 0) puts e_zero into the
// alignment of a TF32 step: tf32 products reach far below e_zero, so unlike
// FP8/FP16 inputs it can decide the result. 2^-148 - (2^-149 + 2^-159) is
// below the smallest subnormal, 0 under RZ; aligned at e_zero = -132 with F
// = 24 the negative term is truncated toward zero to 2^-149 first, and the
// sum is exactly 2^-149.
func TestTF32EZero(t *testing.T) {
	a := []uint32{math.Float32bits(0x1p-74), math.Float32bits(-0x1.004p-74)}
	b := []uint32{math.Float32bits(0x1p-74), math.Float32bits(0x1p-75)}
	m := MustLookup("sm80.mma.sync.tf32.f32").(Wide)
	if got := m.Step32(a, b, 0); got != 0x1p-149 {
		t.Errorf("e_zero -132: %g, want 2^-149", got)
	}
	p := m.Info().Step
	p.EZero = -200
	low := mustTFDPA(t, fp8.FormatTF32, 8, p)
	if got := low.Step32(a, b, 0); got != 0 {
		t.Errorf("e_zero -200: %g, want 0", got)
	}
	if want := math.Float32frombits(p.Step(a, b, 0)); low.Step32(a, b, 0) != want {
		t.Errorf("fast path and reference disagree: %g, %g", low.Step32(a, b, 0), want)
	}
}

// TestTF32SixteenBitCodes checks that Dot and Step of a tf32 model read a
// 16-bit code as the float32 pattern code<<16 (a bf16 value), the same as
// Step32/Dot32 on the widened codes.
func TestTF32SixteenBitCodes(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	m := MustLookup("sm90.mma.sync.tf32.f32").(Wide)
	for trial := 0; trial < 2000; trial++ {
		n := 1 + r.IntN(40)
		a, b := make([]uint16, n), make([]uint16, n)
		a32, b32 := make([]uint32, n), make([]uint32, n)
		for i := range a {
			a[i], b[i] = uint16(fp8.BF16FromFloat32(float32(r.NormFloat64()))), uint16(r.Uint32())
			a32[i], b32[i] = uint32(a[i])<<16, uint32(b[i])<<16
		}
		c := randC(r, false)
		if got, want := m.Dot(a, b, c), m.Dot32(a32, b32, c); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("Dot %g, Dot32 %g", got, want)
		}
		if n <= 8 {
			if got, want := m.Step(a, b, c), m.Step32(a32, b32, c); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("Step %g, Step32 %g", got, want)
			}
		}
	}
}

// TestMMASyncEmuFastMatchesReference checks the fast path of the FP32
// emulations (e4m3 and e5m2, subnormals and specials included) against
// the reference HMMA step on the FP16 codes of the inputs.
func TestMMASyncEmuFastMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, name := range []string{"sm100.mma.sync.e4m3.f32", "sm100.mma.sync.e5m2.f32", "sm90.mma.sync.e5m2.f32"} {
		m := MustLookup(name).(*mmaSyncEmu)
		for trial := 0; trial < 20000; trial++ {
			n := 1 + r.IntN(16)
			a, b := make([]uint16, n), make([]uint16, n)
			for i := range a {
				a[i], b[i] = uint16(r.IntN(256)), uint16(r.IntN(256))
				if trial%3 == 0 { // subnormals and zeros
					a[i] &= 0x83
				}
			}
			c := randC(r, trial%10 == 0)
			ab, bb := m.f16(a, b)
			want := m.ref.Step(ab[:n], bb[:n], math.Float32bits(c))
			got, ok := m.fast.step(a, b, c)
			if !ok {
				got = math.Float32frombits(want) // refused: NaN/inf, checked below
				if want != NaN32 && want&0x7f800000 != 0x7f800000 {
					t.Fatalf("%s: fast path refused finite inputs a=%02x b=%02x c=%g", name, a, b, c)
				}
			}
			if math.Float32bits(got) != want {
				t.Fatalf("%s: a=%02x b=%02x c=%08x: fast %08x, reference %08x", name, a, b, math.Float32bits(c), math.Float32bits(got), want)
			}
		}
	}
}

// TestMMASyncEmuFP16 checks the FP16-accumulator emulation against the
// definition written out: two HMMA.F16 steps over k mod 4 in {0,1}, then
// {2,3}, from +0, and an FP16 add of C rounded to nearest even.
func TestMMASyncEmuFP16(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, name := range []string{"sm90.mma.sync.e4m3.f16", "sm100.mma.sync.e5m2.f16"} {
		m := MustLookup(name).(*mmaSyncEmu)
		in := m.info.In
		step := Params{L: 16, F: 25, Rho: RNEFP16, EZero: -22, In: fp8.FormatFP16}
		for trial := 0; trial < 5000; trial++ {
			a, b := make([]uint16, 32), make([]uint16, 32)
			var lo, hi [2][]uint32
			for k := range a {
				a[k] = uint16(in.Encode(float32(r.NormFloat64()*4), fp8.SatFinite))
				b[k] = uint16(in.Encode(float32(r.NormFloat64()*4), fp8.SatFinite))
				x := uint32(fp8.FP16FromFloat32(float32(in.Value(uint32(a[k])))))
				y := uint32(fp8.FP16FromFloat32(float32(in.Value(uint32(b[k])))))
				if k%4 < 2 {
					lo[0], lo[1] = append(lo[0], x), append(lo[1], y)
				} else {
					hi[0], hi[1] = append(hi[0], x), append(hi[1], y)
				}
			}
			c := fp8.FP16(fp8.FP16FromFloat32(float32(r.NormFloat64() * 30))).Float32()
			tt := step.Step(hi[0], hi[1], step.Step(lo[0], lo[1], 0))
			want := fp8.FP16FromFloat32(float32(float64(c) + float64(fp8.FP16(tt).Float32()))) // both fp16: exact sum, one rounding
			if got := m.Step(a, b, c); fp8.FP16FromFloat32(got) != want || fp8.FP16(want).Float32() != got {
				t.Fatalf("%s: got %g want %g", name, got, fp8.FP16(want).Float32())
			}
		}
	}
}

// TestHadd16 checks the FP16 add: exact ties to even, overflow to inf,
// specials, and +0 for an exact zero.
func TestHadd16(t *testing.T) {
	h := func(x float32) uint32 { return uint32(fp8.FP16FromFloat32(x)) }
	for _, tc := range []struct {
		x, y uint32
		want float32
	}{
		{h(1), h(0x1p-11), 1},                    // tie: to even (1.0)
		{h(1 + 0x1p-10), h(0x1p-11), 1 + 0x1p-9}, // tie: to even (up)
		{h(1), h(0x1.8p-11), 1 + 0x1p-10},        // above the tie
		{h(2048), h(0x1p-24), 2048},              // far apart: exact sum rounds back
		{h(65504), h(8), 65504},                  // below the overflow threshold 65520
		{h(65504), h(16), float32(math.Inf(1))},  // at it: the tie goes to inf
		{h(1.5), h(-1.5), 0},
		{0x8000, 0x8000, 0}, // -0 + -0 is +0 here (an integer sum)
		{0x7c00, h(-3), float32(math.Inf(1))},
	} {
		if got := hadd16(tc.x, tc.y); math.Float32bits(got) != math.Float32bits(tc.want) {
			t.Errorf("hadd16(%04x, %04x) = %g, want %g", tc.x, tc.y, got, tc.want)
		}
	}
	if got := hadd16(0x7c00, 0xfc00); !math.IsNaN(float64(got)) {
		t.Errorf("inf - inf = %g, want NaN", got)
	}
	if got := hadd16(0x7e00, h(1)); !math.IsNaN(float64(got)) {
		t.Errorf("NaN + 1 = %g, want NaN", got)
	}
}

// BenchmarkChainTF32 runs one long TF32 chain (K = 65536, Dot32) per
// iteration on one core and reports products per second.
func BenchmarkChainTF32(b *testing.B) {
	const K = 1 << 16
	r := rand.New(rand.NewPCG(51, 52))
	x, y := make([]uint32, K), make([]uint32, K)
	for i := range x {
		x[i] = fp8.TF32FromFloat32(float32(r.ExpFloat64() / 8))
		y[i] = fp8.TF32FromFloat32(float32(r.NormFloat64()))
	}
	for _, name := range []string{"sm80.mma.sync.tf32.f32", "sm90.mma.sync.tf32.f32", "sm100.mma.sync.tf32.f32"} {
		m := MustLookup(name).(Wide)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = m.Dot32(x, y, 0)
			}
			b.ReportMetric(float64(K)*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}

// TestWideChainAsmEqualsGo: wideStep.chain through the TF32 kernel gives
// the bits of its Go loop, for every TF32 model and RZ-E8M13 and F = 30
// steps, on chains with specials (the kernel stops before their steps),
// tails of every length and accumulators of every kind.
func TestWideChainAsmEqualsGo(t *testing.T) {
	if !haveStepAsm {
		t.Skip("no AVX2 kernel on this build or CPU")
	}
	r := rand.New(rand.NewPCG(25, 26))
	ps := []Params{
		{L: 16, F: 13, Rho: RZE8M13, EZero: -133, In: fp8.FormatTF32},
		{L: 64, F: 30, Rho: RZFP32, EZero: -300, In: fp8.FormatTF32},
		{L: 4, F: 24, Rho: RZE8M13, EZero: -132, In: fp8.FormatTF32},
	}
	for _, n := range []string{"sm80.mma.sync.tf32.f32", "sm90.mma.sync.tf32.f32", "sm100.mma.sync.tf32.f32"} {
		ps = append(ps, MustLookup(n).(*tfdpa).info.Step)
	}
	for _, p := range ps {
		m := mustTFDPA(t, fp8.FormatTF32, p.L, p)
		// both runs the chain through the kernel and through the Go loop.
		both := func(a, b []uint32, c float32) (got float32, gi int, want float32, wi int) {
			got, gi = m.wide.chain(a, b, c, p.L)
			wideGoOnly = true
			want, wi = m.wide.chain(a, b, c, p.L)
			wideGoOnly = false
			return got, gi, want, wi
		}
		for trial := 0; trial < 2000; trial++ {
			k := 1 + r.IntN(6*p.L)
			a, b := make([]uint32, k), make([]uint32, k)
			for i := range a {
				a[i], b[i] = randTF32(r, trial%10 == 0), randTF32(r, trial%10 == 0)
			}
			c := randC(r, trial%10 == 1)
			got, gi, want, wi := both(a, b, c)
			if gi != wi || math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("L=%d F=%d fb=%d K=%d: kernel %08x after %d, Go %08x after %d\na=%08x\nb=%08x\nc=%08x",
					p.L, p.F, m.wide.fb, k, math.Float32bits(got), gi, math.Float32bits(want), wi, a, b, math.Float32bits(c))
			}
		}
		// One step from a c of 24 significant bits that sets E, its
		// products of the other sign pulling the sum below c's binade:
		// where F < 23, trunc_E(c) is not c (the kernel must truncate it).
		for trial := 0; trial < 500; trial++ {
			e := r.IntN(40) - 20
			c := float32(math.Ldexp(1+float64(r.Uint32()&0x7fffff)/(1<<23), e))
			if r.IntN(2) == 0 {
				c = -c
			}
			a, b := make([]uint32, p.L), make([]uint32, p.L)
			for i := range a {
				x := float32(math.Ldexp(0.5+r.Float64()/2, e-2-r.IntN(3)))
				if c > 0 {
					x = -x
				}
				a[i], b[i] = fp8.TF32FromFloat32(x), fp8.TF32FromFloat32(1)
			}
			got, gi, want, wi := both(a, b, c)
			if gi != wi || math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("L=%d F=%d fb=%d, one step from c=%08x: kernel %08x after %d, Go %08x after %d\na=%08x",
					p.L, p.F, m.wide.fb, math.Float32bits(c), math.Float32bits(got), gi, math.Float32bits(want), wi, a)
			}
		}
	}
}

// BenchmarkChainTF32Short is BenchmarkChainTF32 on short chains, the
// regime where the TF32 kernel's exponent guess is least right: 8192
// independent dot products of K = 8 from c = 0 (two sm80 steps, one step of
// the others), as one m16n8k8 instruction's outputs are.
func BenchmarkChainTF32Short(b *testing.B) {
	const K, chains = 8, 8192
	r := rand.New(rand.NewPCG(53, 54))
	x, y := make([]uint32, K*chains), make([]uint32, K*chains)
	for i := range x {
		x[i] = fp8.TF32FromFloat32(float32(r.NormFloat64()))
		y[i] = fp8.TF32FromFloat32(float32(r.NormFloat64()))
	}
	for _, name := range []string{"sm80.mma.sync.tf32.f32", "sm90.mma.sync.tf32.f32"} {
		m := MustLookup(name).(Wide)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				for i := 0; i < len(x); i += K {
					sink = m.Dot32(x[i:i+K], y[i:i+K], 0)
				}
			}
			b.ReportMetric(float64(len(x))*float64(b.N)/b.Elapsed().Seconds(), "products/s")
		})
	}
}
