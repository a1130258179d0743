//go:build js && wasm && !purego

package attention

import (
	"context"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// TestRefKernelsLoad: ref.wat's kernels load under node, and the
// reference read from the codes gives the same bits with them as with the
// Go loops (decode with one query head, the kernels' case; a masked
// prefill, whose masked keys' weights are −∞; a 16-bit cache).
func TestRefKernelsLoad(t *testing.T) {
	if !refKernelsReady() {
		_, err := refKernels()
		t.Fatalf("the WebAssembly kernels did not load: %v", err)
	}
	ctx := context.Background()
	for i, tc := range []struct {
		name              string
		mq, n, qh, kvh, d int
		cfg               Config
		f                 fp8.Format
		mask              bool
	}{
		{"decode", 1, 1003, 1, 1, 128, Config{}, fp8.FormatE4M3, false},
		{"decode e5m2 hd 64", 1, 517, 2, 2, 64, Config{}, fp8.FormatE5M2, false},
		{"prefill mask", 9, 101, 2, 1, 64, Config{}, fp8.FormatE4M3, true},
		{"bf16", 1, 203, 1, 1, 128, Config{}, fp8.FormatBF16, false},
	} {
		p := newProblem(uint64(90+i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
		cfg, kv := refTestSetup(t, p, tc.cfg, tc.f, tc.mask, false, false)
		got, err := ReferenceQuantized(ctx, cfg, p.q, nil, kv)
		if err != nil {
			t.Fatal(err)
		}
		refKernelsOff = true
		want, err := ReferenceQuantized(ctx, cfg, p.q, nil, kv)
		refKernelsOff = false
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, tc.name, got, want)
	}
}
