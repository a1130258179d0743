package wgsl

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/fp8lab/fp8lab/accum"
	"github.com/fp8lab/fp8lab/accum/golden"
)

// capturesDir is the folder of the H200 capture files: $FP8LAB_CAPTURES, or
// ../shared/golden/h200 beside the repository.
func capturesDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("FP8LAB_CAPTURES")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "golden", "h200")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("H200 capture folder %s not found (%v): set FP8LAB_CAPTURES; golden checks not run", dir, err)
	}
	return dir
}

func readCaptures(t *testing.T) []*golden.File {
	t.Helper()
	files, err := golden.ReadDir(capturesDir(t))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

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
		if _, err := LookupEmulation(rf.Model); err != nil {
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
		checks, err := r.checkConversions(context.Background(), f.Convert)
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
