package wgsl

import (
	"context"
	"math"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// Every narrow conversion in WGSL equals package fp8's (CheckNarrow: every
// ≤8-bit format, both saturation modes, every code's boundaries, random
// inputs; every code decoded; ue8m0 in every rounding mode).
func TestNarrowConversions(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
	checks, err := r.CheckNarrow(ctx, 8, 20000)
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
	if _, err := r.EncodeNarrow(ctx, fp8.FormatFP16, fp8.SatFinite, []float32{1}); err == nil {
		t.Error("EncodeNarrow f16: no error")
	}
	if _, err := r.EncodeNarrow(ctx, fp8.FormatUE8M0, fp8.SatFinite, []float32{1}); err == nil {
		t.Error("EncodeNarrow ue8m0 (needs a rounding mode): no error")
	}
	// A spot check of the meaning, not only the agreement: NVFP4's e2m1
	// saturates at 6 and sends NaN to +6; fnuz sends -0 to +0.
	got, err := r.EncodeNarrow(ctx, fp8.FormatE2M1, fp8.NoSat, []float32{7, float32(math.NaN()), -0.2})
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != 0x7 || got[1] != 0x7 || got[2] != 0x8 {
		t.Errorf("e2m1 of 7, NaN, -0.2: %#x, want 0x7 0x7 0x8", got)
	}
	z, err := r.EncodeNarrow(ctx, fp8.FormatE4M3FNUZ, fp8.SatFinite, []float32{float32(math.Copysign(0, -1))})
	if err != nil {
		t.Fatal(err)
	}
	if z[0] != 0 {
		t.Errorf("e4m3fnuz of -0: %#x, want 0", z[0])
	}
}
