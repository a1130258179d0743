//go:build js && wasm && !purego

package attention

import (
	"context"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// needRefKernels fails t unless ref.wat's kernels loaded.
func needRefKernels(t *testing.T) {
	t.Helper()
	if !refKernelsReady() {
		_, err := refKernels()
		t.Fatalf("the WebAssembly kernels did not load: %v", err)
	}
}

// TestRefKernelsLoad: ref.wat's kernels load under node, and the
// reference read from the codes gives the same bits with them as with the
// Go loops (decode with one query head, the kernels' case; a masked
// prefill, whose masked keys' weights are −∞; a 16-bit cache).
func TestRefKernelsLoad(t *testing.T) {
	needRefKernels(t)
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

// TestRefKernelF32: ref.wat's dotsf32 gives ReferenceF32 the Go loops'
// bits: decode with one and with several query heads per KV head, a
// length that leaves keys past the last four, head dims 64 and 128, a
// causal prefill (each row's keys a different run), and keys far from 1
// in magnitude. Reference on float64 keys, which the kernel does not
// take, is compared with it too.
func TestRefKernelF32(t *testing.T) {
	needRefKernels(t)
	ctx := context.Background()
	for i, tc := range []struct {
		name              string
		mq, n, qh, kvh, d int
		cfg               Config
		kScale            float32
	}{
		{"decode", 1, 1003, 1, 1, 128, Config{}, 1},
		{"decode gqa", 1, 517, 8, 2, 64, Config{}, 1},
		{"prefill causal", 9, 101, 2, 1, 64, Config{Causal: true}, 1},
		{"decode large keys", 1, 64, 4, 4, 128, Config{}, 3e4},
		{"short", 1, 3, 1, 1, 64, Config{}, 1},
	} {
		p := newProblem(uint64(120+i), tc.mq, tc.n, tc.qh, tc.kvh, tc.d, 0.5)
		for j := range p.k {
			p.k[j] *= tc.kScale
		}
		cfg := tc.cfg
		cfg.HeadDim, cfg.KVHeads, cfg.QHeads = tc.d, tc.kvh, tc.qh
		got, err := ReferenceF32(ctx, cfg, p.q, p.k, p.v, tc.mq, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		refKernelsOff = true
		want, err := ReferenceF32(ctx, cfg, p.q, p.k, p.v, tc.mq, tc.n)
		refKernelsOff = false
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, tc.name, got, want)
		q64, k64, v64 := make([]float64, len(p.q)), make([]float64, len(p.k)), make([]float64, len(p.v))
		for j := range p.q {
			q64[j] = float64(p.q[j])
		}
		for j := range p.k {
			k64[j], v64[j] = float64(p.k[j]), float64(p.v[j])
		}
		ref64, err := Reference(ctx, cfg, q64, k64, v64, tc.mq, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, tc.name+" (float64 keys)", got, ref64)
	}
}
