package wgsl

import (
	"context"
	"math"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// The narrow encoders refuse what they do not convert, and mean what they
// say on a few values (wgslcheck's TestNarrowConversions compares every
// format with package fp8).
func TestNarrowSpotChecks(t *testing.T) {
	r := testGPU(t)
	ctx := context.Background()
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
