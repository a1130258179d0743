package wgslcheck

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/accum/golden"
	"github.com/fp8lab/fp8lab/wgsl"
)

// TestGoldenRecords runs every record of every capture file whose model the
// WGSL kernel emulates through the GPU and compares with the H200's d and
// with accum; it also runs sm100.tcgen05.f8f6f4.f32 (no hardware here) on
// the e4m3 inputs against accum.
func TestGoldenRecords(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	var total, hw, model, sm100 int
	for _, f := range readCaptures(t) {
		if f.Kind != golden.KindRecords {
			continue
		}
		rf := f.Records
		name := filepath.Base(rf.Path)
		if e, err := wgsl.LookupEmulation(rf.Model); err != nil || e.Bits != 8 {
			t.Logf("%s: model %s not emulated in WGSL (%v)", name, rf.Model, err)
			continue
		}
		in, promote := recordsInput(rf)
		got, err := r.Chain(ctx, rf.Model, in, promote)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m := accum.MustLookup(rf.Model)
		want := modelChain(m, in, promote)
		eqHW, eqModel := 0, 0
		for i, rec := range rf.Records {
			if math.Float32bits(got[i]) == rec.D {
				eqHW++
			} else if len(rf.Records)-eqHW < 4 {
				t.Errorf("%s line %d: GPU %#08x, H200 %#08x", name, rec.Line, math.Float32bits(got[i]), rec.D)
			}
			if sameF32(got[i], want[i]) {
				eqModel++
			}
		}
		if eqHW != len(rf.Records) || eqModel != len(rf.Records) {
			t.Errorf("%s (%s, %v): %d/%d equal to the H200, %d/%d to accum", name, rf.Model, rf.Kind, eqHW, len(rf.Records), eqModel, len(rf.Records))
		}
		total += len(rf.Records)
		hw += eqHW
		model += eqModel
		if rf.AFormat == "e4m3" && rf.Kind == golden.StepWithC {
			const m100 = "sm100.tcgen05.f8f6f4.f32"
			got, err := r.Chain(ctx, m100, in, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := modelChain(accum.MustLookup(m100), in, 0)
			eq := 0
			for i := range want {
				if sameF32(got[i], want[i]) {
					eq++
				}
			}
			if eq != len(want) {
				t.Errorf("%s through %s: %d/%d equal to accum", name, m100, eq, len(want))
			}
			sm100 += eq
		}
	}
	if total == 0 {
		t.Fatal("no record file with an emulated model")
	}
	t.Logf("H200 records: %d/%d equal to the H200 and %d/%d to accum; sm100 on the e4m3 inputs: %d equal to accum", hw, total, model, total, sm100)
}

// TestGoldenLong runs the long-contraction captures (every32: promotion
// every 32 elements; every128: 4 chained wgmma then an FP32 add) through the
// GPU and compares with the H200's outputs.
func TestGoldenLong(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	var total, eq int
	for _, f := range readCaptures(t) {
		if f.Kind != golden.KindLong {
			continue
		}
		lf := f.Long
		in := longInput(lf)
		for _, v := range []struct {
			promote int
			want    func(golden.LongOutput) uint32
		}{{32, func(o golden.LongOutput) uint32 { return o.Every32 }}, {128, func(o golden.LongOutput) uint32 { return o.Every128 }}} {
			got, err := r.Chain(ctx, lf.Model, in, v.promote)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for i, o := range lf.Outputs {
				if math.Float32bits(got[i]) == v.want(o) {
					n++
				} else if n < 3 {
					t.Errorf("%s every%d (%d,%d): GPU %#08x, H200 %#08x", filepath.Base(lf.Path), v.promote, o.I, o.J, math.Float32bits(got[i]), v.want(o))
				}
			}
			total += len(lf.Outputs)
			eq += n
			t.Logf("%s K=%d every%d: %d/%d equal to the H200", filepath.Base(lf.Path), lf.K, v.promote, n, len(lf.Outputs))
		}
	}
	if total == 0 {
		t.Skip("no long-contraction capture file")
	}
	if eq != total {
		t.Errorf("long contractions: %d/%d equal to the H200", eq, total)
	}
}

// TestGoldenConversions checks the GPU's encoder at every range boundary of
// the H200's float32 → FP8 conversion tables (±2 ulps, both signs where
// captured) and its decoder against the H200's decode tables, through the
// check gpucheck runs.
func TestGoldenConversions(t *testing.T) {
	r := testGPU(t)
	n := 0
	for _, f := range readCaptures(t) {
		if f.Kind != golden.KindConvert {
			continue
		}
		checks, err := checkConversions(context.Background(), r, f.Convert)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range checks {
			if c.Total == 0 || c.EqualHW != c.Total || c.EqualModel != c.Total {
				t.Errorf("%s: %d/%d equal to the H200, %d/%d to the Go model", c.Name, c.EqualHW, c.Total, c.EqualModel, c.Total)
			}
			t.Logf("%s: %d/%d equal to the H200", c.Name, c.EqualHW, c.Total)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no conversion capture file")
	}
}

// The 16-bit step against the hardware: every H200 capture file of a
// 16-bit model that SimDecode runs (sm90.wgmma.bf16.f32: all codes, narrow
// and normal inputs, signed zeros) through tfdpa_step16, compared with the
// H200's d and with accum.
func TestGoldenRecords16(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	total := 0
	for _, f := range readCaptures(t) {
		if f.Kind != golden.KindRecords {
			continue
		}
		rf := f.Records
		e, err := wgsl.LookupEmulation(rf.Model)
		if err != nil || e.Bits != 16 {
			continue
		}
		name := filepath.Base(rf.Path)
		n := len(rf.Records)
		got, err := records16(ctx, r, rf)
		if err != nil {
			t.Fatal(err)
		}
		m := accum.MustLookup(rf.Model)
		eqHW, eqModel := 0, 0
		for i, rec := range rf.Records {
			if math.Float32bits(got[i]) == rec.D {
				eqHW++
			} else if n-eqHW < 4 {
				t.Errorf("%s line %d: GPU %#08x, H200 %#08x", name, rec.Line, math.Float32bits(got[i]), rec.D)
			}
			if sameF32(got[i], m.Dot(rec.A, rec.B, math.Float32frombits(rec.C))) {
				eqModel++
			}
		}
		if eqHW != n || eqModel != n {
			t.Errorf("%s: %d/%d equal to the H200, %d/%d to accum", name, eqHW, n, eqModel, n)
		}
		t.Logf("%s (%s): %d/%d equal to the H200, %d/%d to accum", name, rf.Model, eqHW, n, eqModel, n)
		total += n
	}
	if total == 0 {
		t.Fatal("no capture file of a 16-bit model SimDecode runs")
	}
}

// The block-scaled and narrow-format steps in WGSL equal accum's
// instructions on random inputs (specials, zero and NaN scales included),
// every format pair of kind::f8f6f4 / mxf8f6f4 and every FP4 kind.
func TestScaledSteps(t *testing.T) {
	r := testGPU(t)
	names := wgsl.ScaledInstructions()
	if len(names) < 60 {
		t.Fatalf("%d scaled instructions, want the 25 f8f6f4 pairs x (tcgen05, tcgen05 mx, sm120 mx) and the FP4 kinds", len(names))
	}
	checks, err := CheckScaled(context.Background(), r, 1, 2048)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		if !c.OK() {
			t.Errorf("%s: %d/%d equal to accum", c.Name, c.EqualModel, c.Total)
		}
	}
	t.Logf("%d instructions x 2048 random steps, all equal to accum", len(checks))
	// Instructions the kernel does not run are refused.
	for _, name := range []string{"sm100.tcgen05.f8f6f4.e4m3.e4m3.f16", "sm80.mma.sync.tf32.f32"} {
		if _, err := r.ScaledStep(context.Background(), name, wgsl.ScaledInput{K: 32}); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// The MMA-Sim peer records of the block-scaled instructions through the
// GPU: every record the named model reproduces, the GPU reproduces too.
func TestScaledPeerRecords(t *testing.T) {
	r := testGPU(t)
	dir := filepath.Join("..", "..", "..", "shared", "golden", "mmasim")
	files, err := filepath.Glob(filepath.Join(dir, "*.tsv.gz"))
	if err != nil || len(files) == 0 {
		t.Skipf("no peer records in %s (%v)", dir, err)
	}
	supported := map[string]bool{}
	for _, n := range wgsl.ScaledInstructions() {
		supported[n] = true
	}
	total := 0
	for _, path := range files {
		base := filepath.Base(path)
		if !strings.HasPrefix(base, "tcgen05_") && !strings.HasPrefix(base, "mma_sync_sm120_") {
			continue
		}
		f, err := golden.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pf := f.Peer
		name, err := golden.PeerModel(pf)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		if !supported[name] {
			continue // f16 accumulators
		}
		m, _ := accum.LookupInstruction(name)
		K := m.Info().K
		in := wgsl.ScaledInput{K: K}
		var want []uint32
		for _, rec := range pf.Records {
			if len(rec.A) != K {
				continue
			}
			d := uint32(m.Step(rec.A, rec.B, rec.SA, rec.SB, rec.C))
			if d != uint32(rec.D) && !(math.IsNaN(float64(math.Float32frombits(d))) && math.IsNaN(float64(math.Float32frombits(uint32(rec.D))))) {
				continue // a documented peer deviation: the model, not the record, is the reference here
			}
			for k := 0; k < K; k++ {
				in.A = append(in.A, uint8(rec.A[k]))
				in.B = append(in.B, uint8(rec.B[k]))
			}
			in.SA = append(in.SA, rec.SA...)
			in.SB = append(in.SB, rec.SB...)
			in.C = append(in.C, uint32(rec.C))
			want = append(want, uint32(rec.D))
		}
		if len(want) == 0 {
			t.Errorf("%s: no record to check", base)
			continue
		}
		got, err := r.ScaledStep(context.Background(), name, in)
		if err != nil {
			t.Fatalf("%s: %v", base, err)
		}
		bad := 0
		for i := range got {
			if !sameF32(math.Float32frombits(got[i]), math.Float32frombits(want[i])) {
				if bad++; bad <= 3 {
					t.Errorf("%s record %d: GPU %#08x, MMA-Sim %#08x", base, i, got[i], want[i])
				}
			}
		}
		total += len(want)
		t.Logf("%s (%s): %d/%d records equal on the GPU", base, name, len(want)-bad, len(want))
	}
	if total == 0 {
		t.Fatal("no block-scaled peer record checked")
	}
}

// Every narrow conversion in WGSL equals package fp8's (CheckNarrow: every
// ≤8-bit format, both saturation modes, every code's boundaries, random
// inputs; every code decoded; ue8m0 in every rounding mode).
func TestNarrowConversions(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	checks, err := CheckNarrow(ctx, r, 8, 20000)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 8*2+9+8 {
		t.Fatalf("%d checks, want 33", len(checks))
	}
	for _, c := range checks {
		if !c.OK() || c.Total == 0 {
			t.Errorf("%s: %d/%d equal to package fp8", c.Name, c.EqualModel, c.Total)
		} else {
			t.Logf("%s: %d/%d equal to package fp8", c.Name, c.EqualModel, c.Total)
		}
	}
}
