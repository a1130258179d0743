package golden

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/fp8"
)

// khattakDir is Khattak & Mikaitis' published outputs beside the clone.
const khattakDir = "../../../shared/golden/khattak"

var (
	khattakOnce sync.Once
	khattakSets []*KhattakSet
	khattakErr  error
)

// readKhattakSets reads every published set once per test binary, and skips
// when the folder is missing (outside CI).
func readKhattakSets(t *testing.T) []*KhattakSet {
	t.Helper()
	if _, err := os.Stat(khattakDir); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s: %v: CI must have ../shared beside the clone", khattakDir, err)
		}
		t.Skipf("%s not found (%v)", khattakDir, err)
	}
	khattakOnce.Do(func() { khattakSets, khattakErr = ReadKhattak(khattakDir) })
	if khattakErr != nil {
		t.Fatal(khattakErr)
	}
	return khattakSets
}

func khattakSet(t *testing.T, gpu, format, out string) *KhattakSet {
	t.Helper()
	for _, s := range readKhattakSets(t) {
		if s.GPU == gpu && s.Format == format && s.Out == out {
			return s
		}
	}
	t.Fatalf("no set %s %s -> %s", gpu, format, out)
	return nil
}

// TestKhattakSets verifies every published set bit for bit with the model of
// its run, through VerifyKhattak (the code path of `lab verify`), and checks
// that every run of the mapping is used and the zero results are +0.
func TestKhattakSets(t *testing.T) {
	sets := readKhattakSets(t)
	if len(sets) != 48 {
		t.Errorf("%d sets, want 48 (the d files of shared/golden/khattak)", len(sets))
	}
	used := map[string]bool{}
	var counts []string
	for _, s := range sets {
		if len(s.A) != 5000 {
			t.Errorf("%s: %d dot products, want 5000", s.Name(), len(s.A))
		}
		rep, err := VerifyKhattak(context.Background(), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		run, _ := LookupKhattakRun(s.GPU, s.Format, s.Out)
		used[fmt.Sprint(run.GPUs, run.Format, run.Out)+s.GPU] = true
		c := rep.Checks[0]
		if c.Total != 5000 || !c.OK() {
			t.Errorf("%s: %d/%d bit-exact; first: %+v", c.Name, c.Equal, c.Total, c.Mismatches)
		}
		counts = append(counts, fmt.Sprintf("%s: %d/%d", c.Name, c.Equal, c.Total))
		var zeros, neg int
		for _, d := range s.D {
			if d&0x7fffffff == 0 {
				zeros++
				if d != 0 {
					neg++
				}
			}
		}
		// The only zero results: one +0 in the Ada/L40S E5M2 sets (the
		// same bytes); the models give +0 for every zero sum.
		wantZeros := 0
		if s.Format == "E5M2" && (s.GPU == "Ada" || s.GPU == "L40S") {
			wantZeros = 1
		}
		if zeros != wantZeros || neg != 0 {
			t.Errorf("%s: %d zero results (%d of them -0), want %d, all +0", s.Name(), zeros, neg, wantZeros)
		}
		if zeros > 0 && !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, "zero results:") }) {
			t.Errorf("%s: the report does not count the zero results: %q", s.Name(), rep.Notes)
		}
	}
	for _, r := range KhattakRuns {
		for _, g := range r.GPUs {
			if !used[fmt.Sprint(r.GPUs, r.Format, r.Out)+g] {
				t.Errorf("run %s %s -> %s on %s has no set", r.Model, r.Format, r.Out, g)
			}
		}
	}
	t.Logf("%d sets:\n%s", len(counts), strings.Join(counts, "\n"))
}

// TestKhattakInputsExact checks that every published input is exact in its
// format, so the harness's conversions (__float2half, __float2bfloat16,
// __nv_cvt_float_to_fp8 SATFINITE, tf32 truncation) change nothing, and
// that every c is finite (the harness reads each c line: all are 32 digits).
func TestKhattakInputsExact(t *testing.T) {
	for _, s := range readKhattakSets(t) {
		if s.Out != "fp32" && s.GPU != "V100" {
			continue // the fp16 sets share A, B, C with the fp32 ones
		}
		f, err := khattakFormat(s.Format)
		if err != nil {
			t.Fatal(err)
		}
		for r := range s.A {
			for _, x := range append(slices.Clone(s.A[r]), s.B[r]...) {
				v := float64(math.Float32frombits(x))
				if got := f.Value(khattakCode(f, x)); got != v || (f == fp8.FormatTF32 && x&0x1fff != 0) {
					t.Fatalf("%s line %d: input %08x (%g) is not exact in %v (reads %g)", s.Name(), r+1, x, v, f, got)
				}
			}
			if c := math.Float32frombits(s.C[r]); math.IsNaN(float64(c)) || math.IsInf(float64(c), 0) {
				t.Fatalf("%s line %d: c %08x is not finite", s.Name(), r+1, s.C[r])
			}
		}
	}
}

// variant is a way of computing one dot product of a set (a, b codes of the
// set's format; c and the result float32 bits), for the claims of
// TestKhattakAmbiguities. It uses the reference Params.Step only.
type variant func(a, b []uint32, c uint32) uint32

// chainVariant runs K/L chained steps of p from c (zero-padded to K); for
// an FP16 accumulator c is first rounded to FP16 and the result widened.
func chainVariant(p accum.Params, K int, cZero bool) variant {
	return func(a, b []uint32, c uint32) uint32 {
		if cZero {
			c = 0
		}
		aa, bb := make([]uint32, K), make([]uint32, K)
		copy(aa, a)
		copy(bb, b)
		if p.Rho == accum.RNEFP16 {
			c = uint32(fp8.FP16FromFloat32(math.Float32frombits(c)))
		}
		for i := 0; i < K; i += p.L {
			c = p.Step(aa[i:i+p.L], bb[i:i+p.L], c)
		}
		if p.Rho == accum.RNEFP16 {
			return math.Float32bits(fp8.FP16(c).Float32())
		}
		return c
	}
}

// emuVariant is the FP16 emulation of FP8 mma.sync with the K elements of
// the first step chosen by first, F and e_zero of the HMMA step and its
// accumulator (FP32: FADD of C; FP16: HADD of C), or C inside the first step.
func emuVariant(in fp8.Format, p accum.Params, first func(k int) bool, cInside bool) variant {
	p.In = fp8.FormatFP16
	return func(a, b []uint32, c uint32) uint32 {
		var lo, hi [2][]uint32
		for k := 0; k < 32; k++ {
			var x, y uint32
			if k < len(a) {
				x = uint32(fp8.FP16FromFloat32(float32(in.Value(a[k]))))
				y = uint32(fp8.FP16FromFloat32(float32(in.Value(b[k]))))
			}
			if first(k) {
				lo[0], lo[1] = append(lo[0], x), append(lo[1], y)
			} else {
				hi[0], hi[1] = append(hi[0], x), append(hi[1], y)
			}
		}
		half := p.Rho == accum.RNEFP16
		cc := c
		if half {
			cc = uint32(fp8.FP16FromFloat32(math.Float32frombits(c)))
		}
		var t uint32
		if cInside {
			t = cc
		}
		t = p.Step(lo[0], lo[1], t)
		t = p.Step(hi[0], hi[1], t)
		switch {
		case cInside && half:
			return math.Float32bits(fp8.FP16(t).Float32())
		case cInside:
			return t
		case half:
			s := float64(fp8.FP16(cc).Float32()) + float64(fp8.FP16(t).Float32()) // exact
			return math.Float32bits(fp8.FP16(fp8.FP16FromFloat32(float32(s))).Float32())
		}
		return math.Float32bits(math.Float32frombits(c) + math.Float32frombits(t))
	}
}

func countVariant(s *KhattakSet, v variant) int {
	f, _ := khattakFormat(s.Format)
	n := 0
	for r := range s.A {
		a, b := make([]uint32, len(s.A[r])), make([]uint32, len(s.A[r]))
		for i := range a {
			a[i], b[i] = khattakCode(f, s.A[r][i]), khattakCode(f, s.B[r][i])
		}
		if v(a, b, s.C[r]) == s.D[r] {
			n++
		}
	}
	return n
}

// TestKhattakAmbiguities backs each "not determined" of KhattakRuns, and
// each rejected reading of a harness, with counts: the alternatives named
// there give 5000/5000 too, the rejected ones do not.
func TestKhattakAmbiguities(t *testing.T) {
	mod4 := func(k int) bool { return k&2 == 0 }
	halves := func(k int) bool { return k < 16 }
	even := func(k int) bool { return k&1 == 0 }
	p := func(L, F int, rho accum.Rounding, ez int, in fp8.Format) accum.Params {
		return accum.Params{L: L, F: F, Rho: rho, EZero: ez, In: in}
	}
	f16, bf16, tf32, e4m3, e5m2 := fp8.FormatFP16, fp8.FormatBF16, fp8.FormatTF32, fp8.FormatE4M3, fp8.FormatE5M2
	rz, e8, h := accum.RZFP32, accum.RZE8M13, accum.RNEFP16
	type claim struct {
		gpu, format, out, what string
		v                      variant
		all                    bool // true: 5000/5000 (undetermined); false: fewer (rejected)
	}
	claims := []claim{
		// Zero-padded K: the later steps add +0.
		{"A100", "tf32", "fp32", "sm80 tf32 with L = 8", chainVariant(p(8, 24, rz, -132, tf32), 8, false), true},
		{"H100", "tf32", "fp32", "sm90 tf32 with L = 4", chainVariant(p(4, 25, rz, -133, tf32), 8, false), true},
		{"B200", "tf32", "fp32", "sm100 tf32 with L = 4", chainVariant(p(4, 25, rz, -133, tf32), 8, false), true},
		{"H100", "tf32", "fp32", "sm90 tf32 with F = 24", chainVariant(p(8, 24, rz, -133, tf32), 8, false), false},
		{"A100", "tf32", "fp32", "sm80 tf32 with F = 25", chainVariant(p(4, 25, rz, -132, tf32), 8, false), false},
		{"A100", "tf32", "fp32", "sm80 tf32 with F = 23", chainVariant(p(4, 23, rz, -132, tf32), 8, false), false},
		{"Ada", "tf32", "fp32", "sm80 tf32 with F = 25 on Ada", chainVariant(p(4, 25, rz, -132, tf32), 8, false), false},
		{"B200", "tf32", "fp32", "sm100 tf32 with F = 24", chainVariant(p(8, 24, rz, -133, tf32), 8, false), false},
		{"A100", "fp16", "fp32", "sm80 f16 with F = 25", chainVariant(p(8, 25, rz, -132, f16), 16, false), false},
		{"H100", "bf16", "fp32", "sm90 bf16 with F = 24", chainVariant(p(16, 24, rz, -133, bf16), 16, false), false},
		{"B200", "fp16", "fp32", "sm100 f16 with L = 8", chainVariant(p(8, 25, rz, -133, f16), 16, false), false},
		{"A100", "fp16", "fp32", "sm80 f16 with L = 16", chainVariant(p(16, 24, rz, -132, f16), 16, false), true},
		{"Ada", "bf16", "fp32", "sm80 bf16 with L = 16", chainVariant(p(16, 24, rz, -132, bf16), 16, false), true},
		{"V100", "fp16", "fp32", "sm70 with L = 16", chainVariant(p(16, 23, rz, -131, f16), 16, false), true},
		// FP16 accumulators: F and e_zero.
		{"V100", "fp16", "fp16", "sm70 f16 acc F = 25, e_zero -133", chainVariant(p(4, 25, h, -133, f16), 16, false), true},
		{"V100", "fp16", "fp16", "sm70 f16 acc e_zero -22", chainVariant(p(4, 23, h, -22, f16), 16, false), true},
		{"A2", "fp16", "fp16", "sm80 f16 acc F = 23", chainVariant(p(8, 23, h, -21, f16), 16, false), true},
		{"A100", "fp16", "fp16", "sm80 f16 acc F = 23", chainVariant(p(8, 23, h, -21, f16), 16, false), false},
		{"A100", "fp16", "fp16", "sm80 f16 acc e_zero -20", chainVariant(p(8, 24, h, -20, f16), 16, false), true},
		{"A100", "fp16", "fp16", "sm80 f16 acc e_zero -133", chainVariant(p(8, 24, h, -133, f16), 16, false), true},
		{"H100", "fp16", "fp16", "sm90 f16 acc F = 23", chainVariant(p(16, 23, h, -22, f16), 16, false), true},
		{"H200", "fp16", "fp16", "sm90 f16 acc F = 23", chainVariant(p(16, 23, h, -22, f16), 16, false), false},
		{"H200", "fp16", "fp16", "sm90 f16 acc F = 24, e_zero -20", chainVariant(p(16, 24, h, -20, f16), 16, false), true},
		{"B200", "fp16", "fp16", "sm100 f16 acc F = 24", chainVariant(p(16, 24, h, -22, f16), 16, false), false},
		{"B200", "fp16", "fp16", "sm100 f16 acc e_zero -21", chainVariant(p(16, 25, h, -21, f16), 16, false), true},
		{"B200", "fp16", "fp16", "sm100 f16 acc e_zero -133", chainVariant(p(16, 25, h, -133, f16), 16, false), true},
		// Ada FP8.
		{"Ada", "E5M2", "fp32", "sm89 e5m2 e_zero -133", chainVariant(p(16, 13, e8, -133, e5m2), 32, false), true},
		{"Ada", "E4M3", "fp32", "sm89 e4m3 as one 32-wide step", chainVariant(p(32, 13, e8, -132, e4m3), 32, false), false},
		{"Ada", "E4M3", "fp16", "sm89 e4m3 f16 acc e_zero -20", chainVariant(p(16, 13, h, -20, e4m3), 32, false), true},
		{"Ada", "E5M2", "fp16", "sm89 e5m2 f16 acc e_zero -133", chainVariant(p(16, 13, h, -133, e5m2), 32, false), true},
		// Hopper FP8 -> fp32: wgmma with C = 0, not the harness's mma.sync.
		{"H100", "E4M3", "fp32", "wgmma with c loaded", chainVariant(p(32, 13, e8, -133, e4m3), 32, false), false},
		{"H200", "E5M2", "fp32", "wgmma with c loaded", chainVariant(p(32, 13, e8, -133, e5m2), 32, false), false},
		{"H100", "E5M2", "fp32", "mma.sync emulation with C = 0", func(a, b []uint32, c uint32) uint32 {
			return emuVariant(e5m2, p(16, 25, rz, -133, f16), mod4, true)(a, b, 0)
		}, false},
		// Hopper/Blackwell FP8 -> fp16: split, F, e_zero, where C enters.
		{"H100", "E4M3", "fp16", "HMMA F = 23, e_zero -21", emuVariant(e4m3, p(16, 23, h, -21, f16), mod4, false), true},
		{"H200", "E5M2", "fp16", "HMMA F = 26, e_zero -133", emuVariant(e5m2, p(16, 26, h, -133, f16), mod4, false), true},
		{"H200", "E4M3", "fp16", "K 0-15 then 16-31", emuVariant(e4m3, p(16, 25, h, -22, f16), halves, false), false},
		{"H200", "E4M3", "fp16", "C inside the first step", emuVariant(e4m3, p(16, 25, h, -22, f16), mod4, true), false},
		{"H100", "E4M3", "fp16", "FP32 steps, FP32 add of C, one conversion to FP16", func(a, b []uint32, c uint32) uint32 {
			c16 := math.Float32bits(fp8.FP16(fp8.FP16FromFloat32(math.Float32frombits(c))).Float32())
			d := emuVariant(e4m3, p(16, 25, rz, -133, f16), mod4, false)(a, b, c16)
			return math.Float32bits(fp8.FP16(fp8.FP16FromFloat32(math.Float32frombits(d))).Float32())
		}, false},
		{"B200", "E4M3", "fp16", "HMMA F = 23", emuVariant(e4m3, p(16, 23, h, -22, f16), mod4, false), true},
		{"B200", "E5M2", "fp16", "K 0-15 then 16-31", emuVariant(e5m2, p(16, 25, h, -22, f16), halves, false), false},
		// Blackwell FP8 -> fp32: the split and F are open; C is added after.
		{"B200", "E4M3", "fp32", "K 0-15 then 16-31", emuVariant(e4m3, p(16, 25, rz, -133, f16), halves, false), true},
		{"B200", "E4M3", "fp32", "even k then odd k", emuVariant(e4m3, p(16, 25, rz, -133, f16), even, false), true},
		{"B200", "E5M2", "fp32", "K 0-15 then 16-31, F = 23", emuVariant(e5m2, p(16, 23, rz, -133, f16), halves, false), true},
		{"B200", "E5M2", "fp32", "HMMA F = 26", emuVariant(e5m2, p(16, 26, rz, -133, f16), mod4, false), true},
		{"B200", "E4M3", "fp32", "C inside the first step", emuVariant(e4m3, p(16, 25, rz, -133, f16), mod4, true), false},
		{"B200", "E4M3", "fp32", "tcgen05 (L = 32, F = 25) with c", chainVariant(p(32, 25, rz, -133, e4m3), 32, false), false},
		{"B200", "E4M3", "fp32", "tcgen05 (L = 32, F = 25) with C = 0", chainVariant(p(32, 25, rz, -133, e4m3), 32, true), false},
	}
	for _, c := range claims {
		s := khattakSet(t, c.gpu, c.format, c.out)
		n := countVariant(s, c.v)
		t.Logf("%s %s -> %s, %s: %d/%d", c.gpu, c.format, c.out, c.what, n, len(s.A))
		if (n == len(s.A)) != c.all {
			t.Errorf("%s %s -> %s, %s: %d/%d, want %s", c.gpu, c.format, c.out, c.what, n, len(s.A),
				map[bool]string{true: "all (undetermined)", false: "fewer (rejected)"}[c.all])
		}
	}
}

// TestKhattakCompareNotes checks the comparison counts lab verify prints
// for the instruction a harness names where another ran.
func TestKhattakCompareNotes(t *testing.T) {
	for _, tc := range []struct {
		gpu, format string
		want        string
	}{
		{"B200", "E4M3", "sm100.tcgen05.f8f6f4.f32, c loaded (FP32): 3207/5000"},
		{"H100", "E4M3", "sm90.mma.sync.e4m3.f32, c loaded (FP32): 0/5000"},
	} {
		rep, err := VerifyKhattak(context.Background(), khattakSet(t, tc.gpu, tc.format, "fp32"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, tc.want) }) {
			t.Errorf("%s %s: notes %q lack %q", tc.gpu, tc.format, rep.Notes, tc.want)
		}
	}
}
