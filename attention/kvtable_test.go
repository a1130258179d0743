package attention

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// addKVFormatRow appends row to KVFormatTable for the test and removes it
// when the test ends (the test must not run in parallel with others).
func addKVFormatRow(t *testing.T, row KVFormatRow) KVFormat {
	t.Helper()
	n := len(KVFormatTable)
	KVFormatTable = append(KVFormatTable[:n:n], row)
	t.Cleanup(func() { KVFormatTable = KVFormatTable[:n] })
	return KVFormat(n)
}

// mxfp6Row is a format the project does not ship: OCP MXFP6 (E3M2
// elements, one ue8m0 scale per 32 channels).
var mxfp6Row = KVFormatRow{Name: "mxfp6-e3m2", Elem: fp8.FormatE3M2, Block: 32, BlockScale: fp8.FormatUE8M0,
	Doc: "e3m2 elements, one ue8m0 scale per 32 channels", Source: "OCP Microscaling Formats (MX) v1.0 §5"}

// The shipped rows are the formats' constants, and the methods read them.
func TestKVFormatTableRows(t *testing.T) {
	for _, tc := range []struct {
		f            KVFormat
		name         string
		elem, scale  fp8.Format
		block, bytes int
		scaled, ts   bool
	}{
		{KVBF16, "bf16", fp8.FormatBF16, fp8.FormatInvalid, 0, 2, false, false},
		{KVFP16, "f16", fp8.FormatFP16, fp8.FormatInvalid, 0, 2, false, false},
		{KVE4M3, "e4m3", fp8.FormatE4M3, fp8.FormatInvalid, 0, 1, true, false},
		{KVE5M2, "e5m2", fp8.FormatE5M2, fp8.FormatInvalid, 0, 1, true, false},
		{KVMXFP8, "mxfp8", fp8.FormatE4M3, fp8.FormatUE8M0, 32, 1, false, false},
		{KVNVFP4, "nvfp4", fp8.FormatE2M1, fp8.FormatUE4M3, 16, 1, false, true},
		{KVMXFP4, "mxfp4", fp8.FormatE2M1, fp8.FormatUE8M0, 32, 1, false, false},
	} {
		f := tc.f
		if f.String() != tc.name || f.Elem() != tc.elem || f.BlockScale() != tc.scale || f.Block() != tc.block ||
			f.CodeBytes() != tc.bytes || f.Scaled() != tc.scaled || f.TensorScale() != tc.ts {
			t.Errorf("%s: row %+v", tc.name, f.Row())
		}
		if g, err := ParseKVFormat(tc.name); err != nil || g != f {
			t.Errorf("ParseKVFormat(%q) = %v, %v", tc.name, g, err)
		}
		if r := f.Row(); r.Doc == "" || r.Source == "" {
			t.Errorf("%s: no doc or source", tc.name)
		}
	}
	for _, f := range KVFormats() {
		if err := f.Row().Check(); err != nil {
			t.Error(err)
		}
	}
	for _, bad := range []KVFormatRow{
		{Name: "none"},
		{Name: "scaled-blocks", Elem: fp8.FormatE4M3, Scaled: true, Block: 32, BlockScale: fp8.FormatUE8M0},
		{Name: "e4m3-scales", Elem: fp8.FormatE2M1, Block: 16, BlockScale: fp8.FormatE4M3},
		{Name: "wide", Elem: fp8.FormatBF16, Block: 32, BlockScale: fp8.FormatUE8M0},
		{Name: "tensor-mx", Elem: fp8.FormatE2M1, Block: 32, BlockScale: fp8.FormatUE8M0, TensorScale: true},
	} {
		if bad.Check() == nil {
			t.Errorf("row %+v: no error", bad)
		}
	}
	if len(KVFormats()) != 7 || KVFormat(200).String() != "KVFormat(200)" || KVFormat(200).Elem() != fp8.FormatInvalid {
		t.Errorf("formats %v", KVFormats())
	}
	if f, err := ParseKVFormat("FP16"); err != nil || f != KVFP16 {
		t.Errorf("alias fp16: %v, %v", f, err)
	}
}

// A new KV format is a row: appended to the table, it parses, is listed,
// is refused where no path reads it (direct, and block-scaled MMA, which
// no architecture has an instruction for), and QuantizeKV stores it by the
// MX rule with no code of its own. The stored value of every element is
// checked against a brute-force search over the 64 e3m2 codes.
func TestKVFormatNewRow(t *testing.T) {
	f := addKVFormatRow(t, mxfp6Row)
	if g, err := ParseKVFormat("mxfp6-e3m2"); err != nil || g != f || !slices.Contains(KVFormatNames(), "mxfp6-e3m2") {
		t.Fatalf("ParseKVFormat: %v, %v; names %v", g, err, KVFormatNames())
	}
	const tokens, heads, dim = 5, 2, 64
	shape := KVShape{Tokens: tokens, Heads: heads, KDim: dim}
	if err := (KVSpec{Format: f, Path: PathDirect}).Check(shape); err == nil {
		t.Errorf("direct path: no error")
	}
	if _, err := BlockScaledModel(f); err == nil {
		t.Errorf("BlockScaledModel: no error for a format no architecture reads natively")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	k, v := make([]float32, tokens*heads*dim), make([]float32, tokens*heads*dim)
	for i := range k {
		k[i], v[i] = float32(rng.NormFloat64()*3), float32(rng.NormFloat64())
	}
	kv, err := QuantizeKV(k, v, shape, KVSpec{Format: f, Path: PathDequantBF16})
	if err != nil {
		t.Fatal(err)
	}
	e := fp8.FormatE3M2
	for tok := 0; tok < tokens; tok++ {
		for h := 0; h < heads; h++ {
			x := k[(tok*heads+h)*dim:][:dim]
			for lo := 0; lo < dim; lo += 32 {
				var amax float64
				for _, y := range x[lo : lo+32] {
					amax = max(amax, math.Abs(float64(y)))
				}
				_, ex := math.Frexp(amax)
				s := math.Ldexp(1, ex-1-e.Emax()) // the MX rule, by hand
				for j := lo; j < lo+32; j++ {
					best, bestErr := 0.0, math.Inf(1)
					for c := uint32(0); c < 64; c++ {
						val := e.Value(c)
						d := math.Abs(val - float64(x[j])/s)
						if d < bestErr || (d == bestErr && c&1 == 0) { // nearest, ties to the even code
							best, bestErr = val, d
						}
					}
					want := fp8.FormatBF16.Value(fp8.FormatBF16.Encode(float32(best*s), fp8.SatFinite))
					if got := fp8.FormatBF16.Value(uint32(kv.KCode(tok, h, j))); got != want {
						t.Fatalf("token %d head %d channel %d: x %g stored %g, want %g", tok, h, j, x[j], got, want)
					}
				}
			}
		}
	}
}

// A row QuantizeKV cannot store is refused with an error, not a panic.
func TestKVFormatBadRowRefused(t *testing.T) {
	f := addKVFormatRow(t, KVFormatRow{Name: "wide-blocks", Elem: fp8.FormatBF16, Block: 32, BlockScale: fp8.FormatUE8M0})
	k := make([]float32, 64)
	if _, err := QuantizeKV(k, k, KVShape{Tokens: 1, Heads: 1, KDim: 64}, KVSpec{Format: f, Path: PathDequantBF16}); err == nil {
		t.Fatal("no error")
	}
}
