package wgsl

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// TestOpenAsync: a runner OpenAsync returns works as Open's once its
// device is open (the same bits); one whose open fails returns the open's
// error (wrapping ErrNoAdapter) from its methods, a zero Info, and closes
// without error.
func TestOpenAsync(t *testing.T) {
	testGPU(t) // skips where there is no adapter
	ctx := context.Background()
	r := OpenAsync(ctx, Options{})
	codes := []uint8{0, 1, 0x38, 0x7e, 0x80, 0xff}
	got, err := r.DecodeFP8(ctx, fp8.FormatE4M3, codes)
	if err != nil {
		t.Fatal(err)
	}
	want, err := testGPU(t).DecodeFP8(ctx, fp8.FormatE4M3, codes)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("code %#x: %#x, Open's runner %#x", codes[i], got[i], want[i])
		}
	}
	// The open's phases are timed, and add up to no more than the whole.
	ot := r.Info().Open
	if ot.Instance <= 0 || ot.Device <= 0 || ot.Adapters < 0 || ot.Instance+ot.Adapters+ot.Device > ot.Total {
		t.Errorf("open times %+v: want positive phases within the total", ot)
	}
	if b := r.Info().Backends; b != BackendsPrimary && b != BackendsAll {
		t.Errorf("Backends %q", b)
	}
	if r.Err() != nil || r.Info().Name != testGPU(t).Info().Name {
		t.Errorf("Err %v, Info %q; want nil, %q", r.Err(), r.Info().Name, testGPU(t).Info().Name)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	bad := OpenAsync(ctx, Options{Adapter: "no adapter is called this"})
	if _, err := bad.DecodeFP8(ctx, fp8.FormatE4M3, codes); !errors.Is(err, ErrNoAdapter) {
		t.Errorf("DecodeFP8 on a failed open: %v, want ErrNoAdapter", err)
	}
	if _, err := bad.SimDecodeBatch(ctx, nil); !errors.Is(err, ErrNoAdapter) {
		t.Errorf("SimDecodeBatch on a failed open: %v, want ErrNoAdapter", err)
	}
	if !errors.Is(bad.Err(), ErrNoAdapter) || bad.Info().Name != "" {
		t.Errorf("Err %v, Info %+v; want ErrNoAdapter, zero", bad.Err(), bad.Info())
	}
	if err := bad.Close(); err != nil {
		t.Errorf("Close after a failed open: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := OpenAsync(cctx, Options{}).Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("OpenAsync with a cancelled context: %v", err)
	}
}

// TestBackendsWanted: FP8LAB_WGPU_BACKENDS reads "primary" by default,
// either value whatever its case and spaces, and anything else as an
// error naming the variable.
func TestBackendsWanted(t *testing.T) {
	for _, c := range []struct{ env, want string }{
		{"", BackendsPrimary}, {"primary", BackendsPrimary}, {" ALL ", BackendsAll}, {"all", BackendsAll}, {"vulkan", ""},
	} {
		t.Setenv(EnvBackends, c.env)
		got, err := backendsWanted()
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("%s=%q: %q, %v; want %q", EnvBackends, c.env, got, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), EnvBackends) {
			t.Errorf("error %q does not name %s", err, EnvBackends)
		}
	}
}
