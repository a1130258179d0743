package main

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/experiments"
	"github.com/fp8lab/fp8lab/fp8"
	"github.com/fp8lab/fp8lab/sim"
	"github.com/fp8lab/fp8lab/tensorfile"
)

func randCodes(r *rand.Rand, n int, bits uint) []uint8 {
	x := make([]uint8, n)
	for i := range x {
		x[i] = uint8(r.UintN(1 << bits))
	}
	return x
}

// chainModel gives accum.Chain's (or the Stepper's) bits for every row,
// whatever the thread count, from 8-bit and 16-bit code arrays.
func TestChainModelEqualsAccum(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		model          string
		k, promote     int
		step           bool
		threads, width int
	}{
		{"sm90.wgmma.e4m3.f32", 4096, 0, false, 1, 1},
		{"sm90.wgmma.e4m3.f32", 4096, 128, false, 2, 2},
		{"sm90.wgmma.e4m3.f32", 32, 0, true, 3, 1},
		{"sm90.mma.sync.e4m3.f32", 1000, 32, false, 0, 1},
		{"sm100.tcgen05.f8f6f4.f32", 777, 0, false, 2, 1},
		{"sm90.wgmma.bf16.f32", 16, 0, true, 1, 2},
		{"fp32", 300, 0, false, 1, 1},
	} {
		m := accum.MustLookup(tc.model)
		rows := 37
		bits := uint(8)
		if m.Info().In.CodeBits() == 16 {
			bits = 16
		}
		a16, b16 := make([]uint16, rows*tc.k), make([]uint16, rows*tc.k)
		for i := range a16 {
			a16[i], b16[i] = uint16(r.UintN(1<<bits)), uint16(r.UintN(1<<bits))
			if m.Info().In.CodeBits() == 8 && a16[i]&0x7f == 0x7f {
				a16[i] = 0x38 // keep most rows finite, some NaN below
			}
		}
		a16[5] = 0x7f
		c := make([]float32, rows)
		for i := range c {
			c[i] = float32(r.NormFloat64())
		}
		out := make([]float32, rows)
		var err error
		if tc.width == 1 && bits == 8 {
			a8, b8 := make([]uint8, len(a16)), make([]uint8, len(b16))
			for i := range a16 {
				a8[i], b8[i] = uint8(a16[i]), uint8(b16[i])
			}
			err = chainModel(context.Background(), tc.model, a8, b8, rows, 0, tc.k, false, c, out, tc.promote, tc.step, tc.threads)
		} else {
			err = chainModel(context.Background(), tc.model, a16, b16, rows, 0, tc.k, false, c, out, tc.promote, tc.step, tc.threads)
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		for i := 0; i < rows; i++ {
			x, y := a16[i*tc.k:][:tc.k], b16[i*tc.k:][:tc.k]
			var want float32
			if tc.step {
				want = m.(accum.Stepper).Step(x, y, c[i])
			} else {
				want = accum.Chain(m, x, y, c[i], tc.promote)
			}
			if math.Float32bits(want) != math.Float32bits(out[i]) {
				t.Fatalf("%s K=%d promote %d row %d: %08x, accum gives %08x", tc.model, tc.k, tc.promote, i, math.Float32bits(out[i]), math.Float32bits(want))
			}
		}
	}
}

// gemm mode pairs every row of a with every row of b.
func TestChainModelGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	m, n, k := 5, 7, 64
	a, b := randCodes(r, m*k, 6), randCodes(r, n*k, 6) // small finite e4m3 codes
	out := make([]float32, m*n)
	if err := chainModel(context.Background(), "sm90.wgmma.e4m3.f32", a, b, m, n, k, true, nil, out, 32, false, 2); err != nil {
		t.Fatal(err)
	}
	mod := accum.MustLookup("sm90.wgmma.e4m3.f32")
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			want := accum.Chain(mod, widen(a[i*k:][:k]), widen(b[j*k:][:k]), 0, 32)
			if want != out[i*n+j] {
				t.Fatalf("D[%d,%d] = %g, want %g", i, j, out[i*n+j], want)
			}
		}
	}
}

func widen(x []uint8) []uint16 {
	y := make([]uint16, len(x))
	for i, v := range x {
		y[i] = uint16(v)
	}
	return y
}

// Bad input is an error naming the fault, never a panic.
func TestChainErrors(t *testing.T) {
	ctx := context.Background()
	ok8 := make([]uint8, 64)
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"unknown model", func() error {
			return chainModel(ctx, "sm91.nope", ok8, ok8, 2, 0, 32, false, nil, make([]float32, 2), 0, false, 1)
		}, "unknown accumulation model"},
		{"short b", func() error {
			return chainModel(ctx, "sm90.wgmma.e4m3.f32", ok8, ok8[:40], 2, 0, 32, false, nil, make([]float32, 2), 0, false, 1)
		}, "b holds 40 codes"},
		{"wrong out", func() error {
			return chainModel(ctx, "sm90.wgmma.e4m3.f32", ok8, ok8, 2, 0, 32, false, nil, make([]float32, 3), 0, false, 1)
		}, "out holds 3"},
		{"code too wide", func() error {
			a := make([]uint16, 64)
			a[33] = 0x1ff
			return chainModel(ctx, "sm90.wgmma.e4m3.f32", a, a, 2, 0, 32, false, nil, make([]float32, 2), 0, false, 1)
		}, "a[1, 1] = 0x1ff is not a e4m3 code"},
		{"promotion", func() error {
			return chainModel(ctx, "sm90.wgmma.e4m3.f32", ok8, ok8, 2, 0, 32, false, nil, make([]float32, 2), 48, false, 1)
		}, "not a multiple"},
		{"step too long", func() error {
			return chainModel(ctx, "sm90.wgmma.e4m3.f32", ok8, ok8, 1, 0, 64, false, nil, make([]float32, 1), 0, true, 1)
		}, "at most K = 32"},
		{"baseline step", func() error {
			return chainModel(ctx, "fp32", ok8, ok8, 2, 0, 32, false, nil, make([]float32, 2), 0, true, 1)
		}, "no single-instruction step"},
		{"instr scales missing", func() error {
			return chainInstr(ctx, "sm100.tcgen05.mxf8f6f4.e4m3.e4m3.f32", ok8, ok8, 2, 32, nil, nil, nil, make([]uint64, 2), 0, true, 0, 1)
		}, "scale arrays of 2"},
		{"instr variant", func() error {
			return chainInstr(ctx, "cdna3.mfma.f64.f64", make([]uint64, 4), make([]uint64, 4), 1, 4, nil, nil, nil, make([]uint64, 1), 0, true, 3, 1)
		}, "no peer variant 3"},
		{"instr fp4 code", func() error {
			a := make([]uint8, 32)
			a[3] = 0x10
			return chainInstr(ctx, "sm100.tcgen05.f8f6f4.e2m1.e2m1.f32", a, a, 1, 32, nil, nil, nil, make([]uint64, 1), 0, false, 0, 1)
		}, "not a e2m1 code"},
		{"encode format", func() error { return encode("e9m9", []float32{1}, make([]uint32, 1), 0, -1) }, "unknown format"},
		{"encode rounding", func() error { return encode("e4m3", []float32{1}, make([]uint32, 1), 0, 2) }, "only tf32 and ue8m0"},
		{"decode wide code", func() error { return decode("e2m1", []uint32{0x1f}, make([]float32, 1)) }, "not a e2m1 code"},
		{"mx length", func() error { return quantizeMX("e4m3", 0, make([]float32, 33), make([]uint8, 33), make([]uint8, 1)) }, "multiple of the block size 32"},
		{"nvfp4 scale", func() error {
			_, err := quantizeNVFP4(make([]float32, 16), -1, make([]uint8, 16), make([]uint8, 1))
			return err
		}, "positive and finite"},
		{"panic recovered", func() error {
			return guard("test", func() error { var s []int; _ = s[3]; return nil })
		}, "internal error in test"},
	} {
		err := tc.run()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if status(err) != statusError {
			t.Errorf("%s: status %d", tc.name, status(err))
		}
	}
}

// A cancelled token ends a long chain within a second, and its status is
// "cancelled".
func TestCancelToken(t *testing.T) {
	id := newToken()
	defer freeToken(id)
	ctx, err := tokenContext(id)
	if err != nil {
		t.Fatal(err)
	}
	rows, k := 1<<10, 1<<16 // about 7e7 products: a tenth of a second on one core, seconds under -race
	a := make([]uint8, rows*k)
	for i := range a {
		a[i] = 0x38
	}
	out := make([]float32, rows)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- chainModel(ctx, "sm90.wgmma.e4m3.f32", a, a, rows, 0, k, false, nil, out, 0, false, 1) }()
	time.Sleep(20 * time.Millisecond)
	cancelToken(id)
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || status(err) != statusCancelled {
			t.Fatalf("error %v (status %d), want cancelled", err, status(err))
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("cancelled after %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not cancelled after 5 s")
	}
	if _, err := tokenContext(987654); err == nil {
		t.Error("an unknown token is accepted")
	}
}

// The conversions are fp8's, and the quantizers round-trip through their
// dequantizers.
func TestFormats(t *testing.T) {
	x := []float32{0, -0.0, 1, 448, 449, 1e9, float32(math.Inf(-1)), float32(math.NaN()), 3.14159, 1e-9}
	for _, f := range []string{"e4m3", "e5m2", "e2m1", "ue8m0", "bf16", "f16", "tf32", "e4m3fnuz"} {
		ff, _ := fp8.ParseFormat(f)
		for _, sat := range []int{0, 1} {
			out := make([]uint32, len(x))
			if err := encode(f, x, out, sat, -1); err != nil {
				t.Fatal(err)
			}
			for i, v := range x {
				if want := fp8.EncodeFloat32(ff, v, fp8.Saturation(sat)); out[i] != want {
					t.Errorf("%s sat %d: %g -> %#x, want %#x", f, sat, v, out[i], want)
				}
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	v := make([]float32, 64)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	codes, scales := make([]uint8, 64), make([]uint8, 2)
	if err := quantizeMX("e4m3", 0, v, codes, scales); err != nil {
		t.Fatal(err)
	}
	back := make([]float32, 64)
	if err := dequantizeMX("e4m3", codes, scales, back); err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if d := math.Abs(float64(back[i] - v[i])); d > 0.13*math.Abs(float64(v[i]))+1e-6 {
			t.Errorf("MX round trip of %g gives %g", v[i], back[i])
		}
	}
	ncodes, nscales := make([]uint8, 64), make([]uint8, 4)
	ts, err := quantizeNVFP4(v, float32(math.NaN()), ncodes, nscales)
	if err != nil || !(ts > 0) {
		t.Fatal(ts, err)
	}
	c2, s2, ts2, _ := fp8.QuantizeNVFP4Tensor(v)
	if !reflect.DeepEqual(ncodes, c2) || !reflect.DeepEqual(nscales, s2) || ts != ts2 {
		t.Error("NVFP4 differs from fp8.QuantizeNVFP4Tensor")
	}
}

// fp8lab_attention's parameters are attention-file's (same names, kinds,
// defaults, choices and limits), sms aside.
func TestAttentionParamsMatch(t *testing.T) {
	exp := map[string]sim.Param{}
	for _, p := range (experiments.AttentionFile{}).Params() {
		exp[p.Name] = p
	}
	for _, p := range attentionParams() {
		if p.Name == "sms" {
			continue
		}
		e, ok := exp[p.Name]
		if !ok {
			t.Errorf("%s: not a parameter of attention-file", p.Name)
			continue
		}
		if e.Kind != p.Kind || !reflect.DeepEqual(e.Default, p.Default) || !reflect.DeepEqual(e.Choices, p.Choices) || e.Min != p.Min || e.Max != p.Max {
			t.Errorf("%s: %+v, attention-file has %+v", p.Name, p, e)
		}
		delete(exp, p.Name)
	}
	for name := range exp {
		if name != "layout" && name != "void2" && name != "device" && name != "threshold" {
			t.Errorf("attention-file's parameter %s is missing", name)
		}
	}
}

// runAttention gives attention-file's O bit for bit (the same tensors
// written as .npy and read by the experiment), for a decode and a small
// prefill with GQA, a window and the block-scaled path.
func TestAttentionEqualsAttentionFile(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct {
		mq, qh, n, kvh, d int
		args              map[string]string
	}{
		{1, 4, 700, 2, 128, map[string]string{"promotions": "0,1"}},
		{3, 2, 300, 1, 64, map[string]string{"format": "e5m2", "scale": "amax", "causal": "true", "window": "100", "promotions": "0,1,4"}},
		{1, 2, 256, 1, 128, map[string]string{"format": "nvfp4", "path": "block-scaled", "arch": "blackwell", "promotions": "1"}},
	} {
		q := gauss(r, tc.mq*tc.qh*tc.d)
		k := gauss(r, tc.n*tc.kvh*tc.d)
		v := gauss(r, tc.n*tc.kvh*tc.d)
		dir := t.TempDir()
		for name, x := range map[string][]float32{"q": q, "k": k, "v": v} {
			sh := []int{tc.mq, tc.qh, tc.d}
			if name != "q" {
				sh = []int{tc.n, tc.kvh, tc.d}
			}
			if err := tensorfile.WriteNPY(filepath.Join(dir, name+".npy"), sh, x); err != nil {
				t.Fatal(err)
			}
		}
		proms := strings.Split(tc.args["promotions"], ",")
		o := make([]float32, len(proms)*tc.mq*tc.qh*tc.d)
		res, err := runAttention(context.Background(), tc.args, &attnInputs{q: q, k: k, v: v, mq: tc.mq, n: tc.n, qh: tc.qh, kvh: tc.kvh, d: tc.d, dv: tc.d},
			o, nil, nil, 2)
		if err != nil {
			t.Fatal(err)
		}
		out := t.TempDir()
		e, err := experiments.AttentionFile{OutDir: out}.WithFiles(map[string]string{
			"q": filepath.Join(dir, "q.npy"), "k": filepath.Join(dir, "k.npy"), "v": filepath.Join(dir, "v.npy")})
		if err != nil {
			t.Fatal(err)
		}
		vals, err := sim.ParseValues(e.Params(), tc.args)
		if err != nil {
			t.Fatal(err)
		}
		rec := &sim.Recorder{}
		if _, err := sim.Execute(context.Background(), e, vals, 1, rec); err != nil {
			t.Fatal(err)
		}
		per := tc.mq * tc.qh * tc.d
		for a, p := range proms {
			want, err := tensorfile.ReadFile(filepath.Join(out, "o_promotion"+p+".npy"), "", tensorfile.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range want.Data {
				if math.Float32bits(w) != math.Float32bits(o[a*per+i]) {
					t.Fatalf("%v promotion %s: O[%d] = %g, attention-file gives %g", tc.args, p, i, o[a*per+i], w)
				}
			}
			s := rec.SummaryValues()
			// attention-file's summary is in %, its sums over the heads in
			// another order: equal to 1e-12 relative.
			if got := 100 * *res.Promotions[a].VsExact.RelL2; math.Abs(got-s["relerr_p"+p]) > 1e-12*math.Abs(got) {
				t.Errorf("%v promotion %s: rel L2 %g %%, attention-file %g %%", tc.args, p, got, s["relerr_p"+p])
			}
			e := res.Promotions[a].VsExact
			if d := math.Abs(*e.RelL2**e.RelL2 - ((1-*e.Alpha)*(1-*e.Alpha) + *e.Residual**e.Residual)); d > 1e-9 {
				t.Errorf("rel L2² ≠ (1−α)² + residual² by %g", d)
			}
		}
		if len(res.Promotions[0].PerHead) != tc.qh {
			t.Errorf("%d per-head errors for %d heads", len(res.Promotions[0].PerHead), tc.qh)
		}
	}
}

// splits=auto runs FA3's heuristic; split-KV changes the bits but not the
// accuracy much; bad parameters are refused with the parameter named.
func TestAttentionSplitsAndErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	in := &attnInputs{q: gauss(r, 4*128), k: gauss(r, 8192*128), v: gauss(r, 8192*128), mq: 1, n: 8192, qh: 4, kvh: 1, d: 128, dv: 128}
	res, err := runAttention(context.Background(), map[string]string{"splits": "auto", "promotions": "1"}, in, nil, nil, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Splits < 2 {
		t.Errorf("auto splits %d for one decode over 8192 tokens on 132 SMs", res.Splits)
	}
	one, err := runAttention(context.Background(), map[string]string{"promotions": "1"}, in, nil, nil, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := *res.Promotions[0].VsExact.RelL2, *one.Promotions[0].VsExact.RelL2; !(a < 2*b+1e-4) {
		t.Errorf("split-KV error %g, unsplit %g", a, b)
	}
	for _, tc := range []struct {
		args map[string]string
		want string
	}{
		{map[string]string{"format": "e9m9"}, `parameter "format"`},
		{map[string]string{"window": "-1"}, `parameter "window"`},
		{map[string]string{"splits": "129"}, `parameter "splits"`},
		{map[string]string{"k-block-n": "48"}, "multiple"},
	} {
		if _, err := runAttention(context.Background(), tc.args, in, nil, nil, nil, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
	bad := *in
	bad.q = append([]float32(nil), in.q...)
	bad.q[7] = float32(math.Inf(1))
	if _, err := runAttention(context.Background(), nil, &bad, nil, nil, nil, 1); err == nil || !strings.Contains(err.Error(), "element 7") {
		t.Errorf("inf in q: %v", err)
	}
}

func gauss(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	return x
}
