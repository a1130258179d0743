package accum

import (
	"math"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// enc encodes float64 values exactly into codes of f (the test vectors are
// all representable).
func enc(t *testing.T, f fp8.Format, xs ...float64) []uint16 {
	t.Helper()
	out := make([]uint16, len(xs))
	for i, x := range xs {
		c := f.Encode(float32(x), fp8.NoSat)
		if f.Value(c) != x {
			t.Fatalf("%g is not exact in %v", x, f)
		}
		out[i] = uint16(c)
	}
	return out
}

// vec builds a length-n vector of f codes with the given (index, value) pairs.
func vec(t *testing.T, f fp8.Format, n int, kv ...float64) []uint16 {
	t.Helper()
	xs := make([]float64, n)
	for i := 0; i+1 < len(kv); i += 2 {
		xs[int(kv[i])] = kv[i+1]
	}
	return enc(t, f, xs...)
}

func p2(e int) float64 { return math.Ldexp(1, e) }

// TestDirectedH200 runs the directed vectors D1-D9 of tensorcore-numerics.md
// §5.1, each run on an H200.
func TestDirectedH200(t *testing.T) {
	e4m3, e5m2, f16 := fp8.FormatE4M3, fp8.FormatE5M2, fp8.FormatFP16
	tests := []struct {
		name  string
		model string
		a, b  []uint16
		c     float64
		want  float64
	}{
		{"D1 C truncated to 13 bits", "sm90.wgmma.e4m3.f32", vec(t, e4m3, 32), vec(t, e4m3, 32), 1 + p2(-20), 1},
		{"D2 2^-14 dropped", "sm90.wgmma.e4m3.f32", vec(t, e4m3, 32, 0, 1, 1, p2(-7)), vec(t, e4m3, 32, 0, 1, 1, p2(-7)), 0, 1},
		{"D3 trunc toward zero", "sm90.wgmma.e4m3.f32", vec(t, e4m3, 32, 0, 1, 1, p2(-7)), vec(t, e4m3, 32, 0, 1, 1, -1.75*p2(-7)), 0, 1},
		{"D4 one 32-wide step", "sm90.wgmma.e4m3.f32", d4(t, true), d4(t, true), -1, 0},
		{"D5 one 32-wide step", "sm90.wgmma.e4m3.f32", d4(t, false), d4(t, false), -1, 0},
		{"D6 f16 one 16-wide step", "sm90.wgmma.f16.f32", d6(t), d6(t), -1, 0},
		{"D7 f16", "sm90.wgmma.f16.f32", vec(t, f16, 16, 0, 4), vec(t, f16, 16, 0, 1), 1 + p2(-23), 5},
		{"D8 Table 8 Hopper f16", "sm90.wgmma.f16.f32", enc(t, f16, -p2(13), -0.5, -0.25, -0.125), enc(t, f16, p2(10), 1, 1, 1), p2(23), -0.75},
		{"D9 Table 8 Hopper e5m2", "sm90.wgmma.e5m2.f32", enc(t, e5m2, -p2(13), -0.5, -0.25, -0.125), enc(t, e5m2, p2(10), 1, 1, 1), p2(23), 0},
		// Table 8 rows of the other architectures (§5.2).
		{"Table 8 Blackwell f16", "sm100.tcgen05.f16.f32", enc(t, f16, -p2(13), -0.5, -0.25, -0.125), enc(t, f16, p2(10), 1, 1, 1), p2(23), -0.75},
		{"Table 8 Ampere f16", "sm80.mma.sync.f16.f32", enc(t, f16, -p2(13), -0.5, -0.25, -0.125), enc(t, f16, p2(10), 1, 1, 1), p2(23), -0.5},
		{"Table 8 Ampere bf16", "sm80.mma.sync.bf16.f32", enc(t, fp8.FormatBF16, -p2(13), -0.5, -0.25, -0.125), enc(t, fp8.FormatBF16, p2(10), 1, 1, 1), p2(23), -0.5},
		{"Table 8 Volta f16", "sm70.mma.f16.f32", enc(t, f16, -p2(13), -0.5, -0.25, -0.125), enc(t, f16, p2(10), 1, 1, 1), p2(23), 0},
		{"Table 8 exact", "exact", enc(t, e4m3, -p2(8), -0.5, -0.25, -0.125), enc(t, e4m3, p2(8), 1, 1, 1), p2(16), -0.875},
		// mma.sync on Hopper keeps C whole (predicted by the verified model, §5.1).
		{"mma.sync C kept", "sm90.mma.sync.e4m3.f32", vec(t, e4m3, 32), vec(t, e4m3, 32), 1 + p2(-20), 1 + p2(-20)},
		// SageAttention2 / DeepGEMM #37: C with <= 13 fraction bits passes.
		{"C with 13 bits kept", "sm90.wgmma.e4m3.f32", vec(t, e4m3, 32), vec(t, e4m3, 32), 1 + p2(-13), 1 + p2(-13)},
		// Blackwell keeps 23 bits of C.
		{"sm100 C kept", "sm100.tcgen05.f8f6f4.f32", vec(t, e4m3, 32), vec(t, e4m3, 32), 1 + p2(-20), 1 + p2(-20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := MustLookup(tt.model)
			var got float32
			if s, ok := m.(Stepper); ok {
				got = s.Step(tt.a, tt.b, float32(tt.c))
			} else {
				got = m.Dot(tt.a, tt.b, float32(tt.c))
			}
			if float64(got) != tt.want {
				t.Errorf("%s: got %v (%08x), want %v", tt.model, got, math.Float32bits(got), tt.want)
			}
		})
	}
}

func d4(t *testing.T, lowFirst bool) []uint16 {
	xs := make([]float64, 32)
	for k := range xs {
		small := k >= 16
		if !lowFirst {
			small = k < 16
		}
		if small {
			xs[k] = p2(-7)
		}
	}
	if lowFirst {
		xs[0] = 1
	} else {
		xs[16] = 1
	}
	return enc(t, fp8.FormatE4M3, xs...)
}

func d6(t *testing.T) []uint16 {
	xs := make([]float64, 16)
	xs[0] = 1
	for k := 8; k < 16; k++ {
		xs[k] = p2(-15)
	}
	return enc(t, fp8.FormatFP16, xs...)
}

// TestEZeroTie is FPy's directed e_zero case (§5.2): F = 24, RNE-FP16.
func TestEZeroTie(t *testing.T) {
	f16 := fp8.FormatFP16
	a := []uint32{uint32(fp8.FP16FromFloat32(float32(p2(-14)))), uint32(fp8.FP16FromFloat32(float32(p2(-24)))), 0}
	b := []uint32{uint32(fp8.FP16FromFloat32(float32(p2(-11)))), uint32(fp8.FP16FromFloat32(float32(p2(-24)))), uint32(fp8.FP16FromFloat32(1))}
	for _, tt := range []struct {
		ezero int
		want  float64
	}{{-21, 0}, {-29, p2(-24)}} {
		p := Params{L: 3, F: 24, Rho: RNEFP16, EZero: tt.ezero, In: f16}
		got := f16.Value(p.Step(a, b, 0))
		if got != tt.want {
			t.Errorf("e_zero %d: got %g, want %g", tt.ezero, got, tt.want)
		}
	}
}

// TestTable8Params runs the Table 8 vector (§5.2) through the step
// parameters of rows whose named model reads another format: e5m2 on Ada
// (L16 F13) and on Blackwell (L32 F25).
func TestTable8Params(t *testing.T) {
	e5m2 := fp8.FormatE5M2
	a := []uint32{e5m2.Encode(float32(-p2(13)), fp8.NoSat), e5m2.Encode(-0.5, fp8.NoSat), e5m2.Encode(-0.25, fp8.NoSat), e5m2.Encode(-0.125, fp8.NoSat)}
	b := []uint32{e5m2.Encode(float32(p2(10)), fp8.NoSat), e5m2.Encode(1, fp8.NoSat), e5m2.Encode(1, fp8.NoSat), e5m2.Encode(1, fp8.NoSat)}
	c := math.Float32bits(float32(p2(23)))
	tests := []struct {
		name string
		p    Params
		want float32
	}{
		{"Ada e5m2", Params{L: 16, F: 13, Rho: RZE8M13, EZero: -132, In: e5m2}, 0},
		{"Hopper e5m2", Params{L: 32, F: 13, Rho: RZE8M13, EZero: -133, In: e5m2}, 0},
		{"Blackwell e5m2", Params{L: 32, F: 25, Rho: RZFP32, EZero: -133, In: e5m2}, -0.75},
	}
	for _, tt := range tests {
		if got := math.Float32frombits(tt.p.Step(a, b, c)); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
	// Ampere tf32 (L4 F24): -0.5; inputs are float32 bits read as tf32.
	tf := func(x float64) uint32 { return fp8.TF32FromFloat32(float32(x)) }
	pt := Params{L: 4, F: 24, Rho: RZFP32, EZero: -132, In: fp8.FormatTF32}
	got := math.Float32frombits(pt.Step([]uint32{tf(-p2(13)), tf(-0.5), tf(-0.25), tf(-0.125)}, []uint32{tf(p2(10)), tf(1), tf(1), tf(1)}, c))
	if got != -0.5 {
		t.Errorf("Ampere tf32: got %v, want -0.5", got)
	}
}

// TestSpecials checks §2.3: NaN inputs, inf×0, +inf and -inf together, and
// signed zeros.
func TestSpecials(t *testing.T) {
	e5m2 := fp8.FormatE5M2
	inf, ninf, nan, one, zero, nzero := uint32(0x7c), uint32(0xfc), uint32(0x7f), uint32(0x3c), uint32(0), uint32(0x80)
	p := Params{L: 4, F: 13, Rho: RZE8M13, EZero: -133, In: e5m2}
	tests := []struct {
		name string
		a, b []uint32
		c    uint32
		want uint32
	}{
		{"NaN input", []uint32{nan, one}, []uint32{one, one}, 0, NaN32},
		{"inf*0", []uint32{inf}, []uint32{zero}, 0, NaN32},
		{"+inf and -inf", []uint32{inf, ninf}, []uint32{one, one}, 0, NaN32},
		{"+inf", []uint32{inf, one}, []uint32{one, one}, 0, 0x7f800000},
		{"-inf from c", []uint32{one}, []uint32{one}, 0xff800000, 0xff800000},
		{"all -0 gives +0 (H200)", []uint32{nzero, zero}, []uint32{one, nzero}, 0x80000000, 0},
		{"-0 products, c = +0", []uint32{nzero, nzero}, []uint32{one, one}, 0, 0},
		{"1 - 1 with c = -0", []uint32{one, one}, []uint32{one, 0xbc}, 0x80000000, 0},
		{"zero sum +0", []uint32{one, one}, []uint32{one, 0xbc}, 0, 0},
		{"mixed zeros +0", []uint32{nzero}, []uint32{one}, 0, 0},
	}
	for _, tt := range tests {
		if got := p.Step(tt.a, tt.b, tt.c); got != tt.want {
			t.Errorf("%s: got %08x, want %08x", tt.name, got, tt.want)
		}
	}
	// The fast path agrees on the signed-zero cases.
	m := MustLookup("sm90.wgmma.e5m2.f32")
	if got := math.Float32bits(m.Dot([]uint16{0x80, 0}, []uint16{0x3c, 0x80}, float32(math.Copysign(0, -1)))); got != 0 {
		t.Errorf("fast path all -0: got %08x, want +0", got)
	}
}

// TestOverflowToInf: RZ conversions overflow to inf, never to the largest
// finite value (§2, FPy fdpa_round).
func TestOverflowToInf(t *testing.T) {
	m := MustLookup("sm90.wgmma.bf16.f32")
	big := uint16(fp8.BF16FromFloat32(float32(p2(64))))
	if got := m.Dot([]uint16{big}, []uint16{big}, 0); !math.IsInf(float64(got), 1) {
		t.Errorf("2^64 * 2^64: got %v, want +inf", got)
	}
	if got := m.Dot([]uint16{big}, []uint16{big ^ 0x8000}, 0); !math.IsInf(float64(got), -1) {
		t.Errorf("2^64 * -2^64: got %v, want -inf", got)
	}
}

func TestModelTable(t *testing.T) {
	want := []string{"sm90.wgmma.e4m3.f32", "sm90.wgmma.e5m2.f32", "sm90.mma.sync.e4m3.f32", "sm90.wgmma.f16.f32",
		"sm90.wgmma.bf16.f32", "sm100.tcgen05.f8f6f4.f32", "sm100.tcgen05.f16.f32", "sm89.mma.sync.e4m3.f32",
		"sm80.mma.sync.f16.f32", "sm80.mma.sync.bf16.f32", "sm70.mma.f16.f32", "fp32", "fp32.fma", "fp64", "kahan", "pairwise", "exact"}
	for _, n := range want {
		m, err := Lookup(n)
		if err != nil {
			t.Error(err)
			continue
		}
		if i := m.Info(); i.Source == "" || i.Doc == "" || i.Name != n {
			t.Errorf("%s: incomplete info %+v", n, i)
		}
	}
	if _, err := Lookup("sm90.bogus"); err == nil || !strings.Contains(err.Error(), "sm90.wgmma.e4m3.f32") {
		t.Errorf("unknown model error should list the known ones: %v", err)
	}
}

// TestBaselines compares the IEEE baselines with the exact sum on a case
// that separates them.
func TestBaselines(t *testing.T) {
	e4m3 := fp8.FormatE4M3
	// 1 + 2^-9·2^-9 ... tiny terms lost by sequential fp32 but kept by
	// Kahan and by the exact sum.
	n := 4096
	a, b := make([]uint16, n+1), make([]uint16, n+1)
	a[0], b[0] = uint16(e4m3.Encode(256, fp8.NoSat)), uint16(e4m3.Encode(256, fp8.NoSat)) // 65536
	for i := 1; i <= n; i++ {
		a[i], b[i] = uint16(e4m3.Encode(0.001953125, fp8.NoSat)), uint16(e4m3.Encode(0.5, fp8.NoSat)) // 2^-10 each
	}
	exact := 65536 + float64(n)*p2(-10)
	got := map[string]float32{}
	for _, name := range []string{"fp32", "fp32.fma", "fp64", "kahan", "pairwise", "exact"} {
		got[name] = MustLookup(name).Dot(a, b, 0)
	}
	if got["fp32"] != 65536 || got["fp32.fma"] != 65536 {
		t.Errorf("sequential fp32 should lose every 2^-10 term next to 65536: %v", got)
	}
	if math.Abs(float64(got["pairwise"])-exact) >= math.Abs(float64(got["fp32"])-exact) {
		t.Errorf("pairwise %v should beat sequential fp32 %v", got["pairwise"], got["fp32"])
	}
	for _, name := range []string{"fp64", "kahan", "exact"} {
		if float64(got[name]) != exact {
			t.Errorf("%s = %v, want %v", name, got[name], exact)
		}
	}
}
