package wgsl

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// codeSource draws FP8 codes of one kind of distribution.
type codeSource func(rng *rand.Rand) uint8

var codeSources = map[string]codeSource{
	// every code, NaN included (a few per row)
	"allcodes": func(rng *rand.Rand) uint8 { return uint8(rng.UintN(256)) },
	// finite codes, 20% zeros of either sign
	"finite": func(rng *rand.Rand) uint8 {
		if rng.IntN(5) == 0 {
			return uint8(rng.IntN(2)) << 7
		}
		for {
			c := uint8(rng.UintN(256))
			if c&0x7f != 0x7f {
				return c
			}
		}
	},
	// a few binades: alignment and truncation matter most
	"narrow": func(rng *rand.Rand) uint8 {
		return uint8(rng.IntN(2))<<7 | uint8(0x30+rng.IntN(24))
	},
	// normal(0,1) quantized
	"normal": func(rng *rand.Rand) uint8 {
		return uint8(fp8.EncodeE4M3(float32(rng.NormFloat64()), fp8.SatFinite))
	},
	// zeros only, both signs: the sign of an exact zero
	"zeros": func(rng *rand.Rand) uint8 { return uint8(rng.IntN(2)) << 7 },
}

// randomC draws an accumulator: 20% ±0, else ±2^U(-20,20) with random
// fraction bits, sometimes subnormal or huge.
func randomC(rng *rand.Rand) float32 {
	switch rng.IntN(10) {
	case 0, 1:
		return float32(math.Copysign(0, float64(rng.IntN(2)*2-1)))
	case 2:
		return math.Float32frombits(rng.Uint32() & 0x807fffff) // subnormal
	case 3:
		return math.Float32frombits(rng.Uint32()&0x80ffffff | 0x7e000000) // huge
	}
	return float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(40)-20))
}

func randomChainInput(rng *rand.Rand, n, K int, src codeSource, e5m2 bool) ChainInput {
	in := ChainInput{K: K, A: make([]uint8, n*K), B: make([]uint8, n*K), C: make([]float32, n)}
	for i := range in.A {
		in.A[i], in.B[i] = src(rng), src(rng)
		if e5m2 && rng.IntN(64) != 0 {
			// e5m2 specials (inf, NaN) are rarer than a uniform draw makes them
			for in.A[i]&0x7c == 0x7c {
				in.A[i] = src(rng)
			}
		}
	}
	for i := range in.C {
		in.C[i] = randomC(rng)
	}
	return in
}

// compareChain checks got against accum and returns the number of equal
// results.
func compareChain(t *testing.T, label string, m accum.Model, in ChainInput, promote int, got []float32) int {
	t.Helper()
	want := modelChain(m, in, promote)
	eq, bad := 0, 0
	for i := range want {
		if sameF32(got[i], want[i]) {
			eq++
			continue
		}
		if bad++; bad <= 3 {
			t.Errorf("%s row %d: got %#08x, want %#08x (c %#08x)", label, i, math.Float32bits(got[i]), math.Float32bits(want[i]), math.Float32bits(in.C[i]))
		}
	}
	if eq != len(want) {
		t.Errorf("%s: %d/%d equal to accum", label, eq, len(want))
	}
	return eq
}

// emulated returns the models of Emulations whose codes are bits wide.
func emulated(t testing.TB, bits int) []string {
	t.Helper()
	var names []string
	for _, n := range Emulations() {
		e, err := LookupEmulation(n)
		if err != nil {
			t.Fatalf("Emulations lists %s, LookupEmulation says %v", n, err)
		}
		if e.Bits == bits {
			names = append(names, n)
		}
	}
	return names
}

// The emulated models are decided by their parameters: every accum model
// is emulated exactly when the rule below (StepShapes' doc, restated
// here) holds of its Info; two models with the same parameters under
// different names get the same kernel; a refused model's error names the
// parameter. The chain tests below then run every emulated model against
// accum bit for bit.
func TestEmulationsByParameters(t *testing.T) {
	in := func(f fp8.Format, fs ...fp8.Format) bool { return slices.Contains(fs, f) }
	rz := func(r accum.Rounding) bool { return r == accum.RZFP32 || r == accum.RZE8M13 }
	want := func(i accum.Info) bool {
		p := i.Step
		switch {
		case i.Kind == accum.KindTFDPA && in(i.In, fp8.FormatE4M3, fp8.FormatE5M2):
			return p.In == i.In && i.K == 32 && (p.L == 16 || p.L == 32) && rz(p.Rho) && p.F <= 25
		case i.Kind == accum.KindEmulation:
			return in(i.In, fp8.FormatE4M3, fp8.FormatE5M2) && p.In == fp8.FormatFP16 && i.K == 32 && p.L == 16 && p.Rho == accum.RZFP32 && p.F <= 25
		case i.Kind == accum.KindTFDPA && in(i.In, fp8.FormatBF16, fp8.FormatFP16):
			return p.In == i.In && (i.K == 16 || i.K == 32) && (p.L == 8 || p.L == 16) && i.K%p.L == 0 && rz(p.Rho) &&
				p.F <= 25 && p.F >= 2*i.In.FracBits()
		}
		return false
	}
	listed := map[string]bool{}
	for _, n := range Emulations() {
		listed[n] = true
	}
	n8, n16 := 0, 0
	for _, m := range accum.Models() {
		info := m.Info()
		e, err := LookupEmulation(m.Name())
		if got := err == nil; got != want(info) || listed[m.Name()] != got {
			t.Errorf("%s (%v): emulated %v (listed %v, %v), the parameters say %v", m.Name(), info, got, listed[m.Name()], err, want(info))
			continue
		}
		if err != nil {
			continue
		}
		if e.Model != m.Name() || e.In != info.In || e.L != info.Step.L || e.F != info.Step.F || e.ezero != info.Step.EZero ||
			e.MMASync != (info.Kind == accum.KindEmulation) {
			t.Errorf("%s: emulation %+v does not carry the model's parameters %v", m.Name(), *e, info)
		}
		if e.Bits == 8 {
			n8++
		} else {
			n16++
		}
	}
	t.Logf("%d models with 8-bit codes and %d with 16-bit codes emulated: %v", n8, n16, Emulations())
	for _, name := range append([]string{"sm90.wgmma.e4m3.f32", "sm90.mma.sync.e4m3.f32", "sm100.mma.sync.e4m3.f32", "sm100.tcgen05.f8f6f4.f32",
		"sm90.wgmma.e5m2.f32", "sm89.mma.sync.e4m3.f32"}, sim16Models...) {
		if !listed[name] {
			t.Errorf("Emulations() = %v lacks %s", Emulations(), name)
		}
	}
	// The same parameters under two names: one kernel (constants and
	// table), whatever the name.
	a, errA := LookupEmulation("sm90.mma.sync.e4m3.f32")
	b, errB := LookupEmulation("sm100.mma.sync.e4m3.f32")
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	if (&kernelSpec{file: "tfdpa", consts: a.consts()}).key() != (&kernelSpec{file: "tfdpa", consts: b.consts()}).key() || a.table != b.table {
		t.Error("sm90 and sm100 mma.sync e4m3 (equal parameters) get different kernels")
	}
	for _, c := range []struct{ model, why string }{
		{"fp32", "IEEE baseline"},
		{"sm90.wgmma.e4m3.f16", "rounds RNE-FP16"},
		{"sm90.mma.sync.e4m3.f16", "rounds RNE-FP16"},
		{"sm80.mma.sync.tf32.f32", "reads tf32"},
		{"sm70.mma.f16.f32", "K = 4"},
		{"sm80.mma.sync.f16.f16", "rounds RNE-FP16"},
		{"no.such.model", "unknown accumulation model"},
	} {
		_, err := LookupEmulation(c.model)
		if err == nil || !strings.Contains(err.Error(), c.why) {
			t.Errorf("LookupEmulation(%q) = %v, want an error saying %q", c.model, err, c.why)
		}
	}
}

// TestChainRandom runs random batches through every emulated model at
// several K and promotion intervals and compares with accum bit for bit.
func TestChainRandom(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	total, equal := 0, 0
	for _, model := range emulated(t, 8) {
		m := accum.MustLookup(model)
		e5m2 := m.Info().In == fp8.FormatE5M2
		for _, srcName := range []string{"allcodes", "finite", "narrow", "normal", "zeros"} {
			src := codeSources[srcName]
			if e5m2 && srcName == "normal" {
				src = func(rng *rand.Rand) uint8 { return uint8(fp8.EncodeE5M2(float32(rng.NormFloat64()), fp8.SatFinite)) }
			}
			for _, K := range []int{1, 3, 16, 31, 32, 33, 64, 130, 1000} {
				for _, promote := range []int{0, 32, 128} {
					rng := rand.New(rand.NewPCG(uint64(K), uint64(promote)+uint64(len(model))<<20+uint64(len(srcName))<<32))
					n := 96
					if K >= 1000 {
						n = 24
					}
					in := randomChainInput(rng, n, K, src, e5m2)
					got, err := r.Chain(ctx, model, in, promote)
					if err != nil {
						t.Fatal(err)
					}
					label := fmt.Sprintf("%s %s K=%d promote=%d", model, srcName, K, promote)
					equal += compareChain(t, label, m, in, promote, got)
					total += n
				}
			}
		}
	}
	t.Logf("%d/%d random dot products equal to accum bit for bit", equal, total)
}

func TestStepOneInstruction(t *testing.T) {
	r := testGPU(t)
	rng := rand.New(rand.NewPCG(7, 7))
	for _, model := range emulated(t, 8) {
		m := accum.MustLookup(model).(accum.Stepper)
		in := randomChainInput(rng, 512, 32, codeSources["finite"], m.Info().In == fp8.FormatE5M2)
		got, err := r.Step(context.Background(), model, in)
		if err != nil {
			t.Fatal(err)
		}
		a16, b16 := make([]uint16, 32), make([]uint16, 32)
		bad := 0
		for i := range in.C {
			for k := range 32 {
				a16[k], b16[k] = uint16(in.A[32*i+k]), uint16(in.B[32*i+k])
			}
			if w := m.Step(a16, b16, in.C[i]); !sameF32(got[i], w) {
				bad++
				if bad < 4 {
					t.Errorf("%s row %d: got %#08x want %#08x", model, i, math.Float32bits(got[i]), math.Float32bits(w))
				}
			}
		}
		t.Logf("%s: %d/%d instructions equal to accum's Step", model, len(in.C)-bad, len(in.C))
	}
	if _, err := r.Step(context.Background(), "sm90.wgmma.e4m3.f32", ChainInput{K: 16, A: make([]uint8, 16), B: make([]uint8, 16), C: []float32{0}}); err == nil {
		t.Error("Step with K = 16 gave no error")
	}
}

// TestLongChainNotTruncated runs K = 2^20 chains (32768 instructions per
// output: far beyond lavapipe's loop limit in one dispatch) and checks them
// against accum. All-ones through sm100 (F = 25, exact up to 2^24) must give
// exactly 2^20: a loop ended early gives less. Then it shows that the check
// has teeth: on a device that ends long loops (lavapipe), the same chain
// forced into one dispatch comes out short.
func TestLongChainNotTruncated(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	const K = 1 << 20
	const one = 0x38 // e4m3 1.0
	ones := ChainInput{K: K, A: make([]uint8, K), B: make([]uint8, K), C: []float32{0}}
	for i := range ones.A {
		ones.A[i], ones.B[i] = one, one
	}
	got, err := r.Chain(ctx, "sm100.tcgen05.f8f6f4.f32", ones, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != K {
		t.Errorf("sm100 all-ones K=2^20: got %g, want %d (a loop was cut short)", got[0], K)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct {
		model   string
		promote int
	}{{"sm90.wgmma.e4m3.f32", 0}, {"sm90.wgmma.e4m3.f32", 128}, {"sm90.mma.sync.e4m3.f32", 0}, {"sm100.tcgen05.f8f6f4.f32", 0}} {
		in := randomChainInput(rng, 2, K, codeSources["normal"], false)
		in.C[0], in.C[1] = 0, 1.5
		got, err := r.Chain(ctx, tc.model, in, tc.promote)
		if err != nil {
			t.Fatal(err)
		}
		compareChain(t, fmt.Sprintf("%s K=2^20 promote=%d", tc.model, tc.promote), accum.MustLookup(tc.model), in, tc.promote, got)
	}

	ran, err := r.LoopIterations(ctx, 200000)
	if err != nil {
		t.Fatal(err)
	}
	// One dispatch for the whole K = 2^20 chain: 32768 instructions in one
	// invocation's loop. (K = 2^17 was enough before the exact-zero path of
	// tfdpa_step lost its loop: lavapipe's limit counts loop iterations in
	// ways that depend on the shader's loop structure.)
	const short = K
	r.maxInstr = short / 32
	got, err = r.Chain(ctx, "sm100.tcgen05.f8f6f4.f32", ones, 0)
	r.maxInstr = 0
	if err != nil {
		t.Fatal(err)
	}
	if ran < 200000 {
		t.Logf("this device ends loops early (a loop of 200000 ran %d iterations); one unsplit dispatch of K=%d gave %g", ran, short, got[0])
		if got[0] == short {
			t.Errorf("an unsplit K=2^20 chain came out right on a device that cuts loops: the long-chain check would not see truncation")
		}
	} else {
		t.Logf("this device runs long loops in full (200000 of 200000); unsplit K=%d: %g", short, got[0])
		if got[0] != short {
			t.Errorf("unsplit K=%d all-ones chain: got %g, want %d", short, got[0], short)
		}
	}
}

// TestChainThroughput checks issue 4's speed target for the emulated sm90
// wgmma e4m3 chain (>= 3e11 FP8 products per second on an H200). It is
// skipped, not passed, without a hardware GPU; on a GPU other than an H200
// it only reports the rate.
func TestChainThroughput(t *testing.T) {
	r := testGPU(t)
	needHardware(t, r)
	b, err := r.BenchChain(context.Background(), "sm90.wgmma.e4m3.f32", 1024, 1024, 8192, 5, 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %.3g FP8 products/s (%v, %s), %d/%d sampled outputs equal to accum", r.Info().Name, b.Rate, b.Time, b.Source, b.Equal, b.Checked)
	if b.Equal != b.Checked {
		t.Errorf("%d/%d sampled outputs equal to accum", b.Equal, b.Checked)
	}
	if strings.Contains(r.Info().Name, "H200") && b.Rate < 3e11 {
		t.Errorf("%.3g products/s on an H200, want >= 3e11", b.Rate)
	}
}

// TestChainLargestSums runs every 8-bit model on the steps whose sums are
// largest: every product the largest finite one, of one sign or of mixed
// signs, with c zero, the largest finite c and a c that cancels. With F =
// 25 such a step's sum is above 2^31 (tcgen05: 32 terms below 2^27, which
// the kernel sums each sign apart in u32), and with F = 13 every term and
// the count of negative terms of the one's-complement sum are exercised.
func TestChainLargestSums(t *testing.T) {
	r := testGPU(t)
	for _, model := range emulated(t, 8) {
		m := accum.MustLookup(model)
		maxCode := uint8(0x7e) // e4m3: 448
		if m.Info().In == fp8.FormatE5M2 {
			maxCode = 0x7b // e5m2: 57344
		}
		const K = 64
		var in ChainInput
		in.K = K
		add := func(sign func(k int) uint8, c float32) {
			for k := range K {
				in.A = append(in.A, maxCode|sign(k))
				in.B = append(in.B, maxCode)
			}
			in.C = append(in.C, c)
		}
		signs := []func(k int) uint8{
			func(int) uint8 { return 0 },
			func(int) uint8 { return 0x80 },
			func(k int) uint8 { return uint8(k%2) << 7 },
			func(k int) uint8 { return uint8(k/31%2) << 7 },
		}
		for _, sign := range signs {
			for _, c := range []float32{0, math.MaxFloat32, -math.MaxFloat32, -32 * 448 * 448, 1} {
				add(sign, c)
			}
		}
		for _, promote := range []int{0, 32} {
			got, err := r.Chain(context.Background(), model, in, promote)
			if err != nil {
				t.Fatal(err)
			}
			compareChain(t, fmt.Sprintf("%s promote=%d", model, promote), m, in, promote, got)
		}
	}
}
