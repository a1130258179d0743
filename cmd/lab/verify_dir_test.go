package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// khattakFolder writes a hand-made B200 fp16 set (two dot products) in the
// published layout; d gives the two results.
func khattakFolder(t *testing.T, d1, d2 float32) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "B200", "fp16")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b32 := func(x float32) string { return fmt.Sprintf("%032b\n", math.Float32bits(x)) }
	for name, text := range map[string]string{
		"a_B200_fp16.txt": "3fc00000 3e800000 \n3f800000 00000000 \n", // [1.5 0.25], [1 0]
		"b_B200_fp16.txt": "40000000 c0800000 \n3f800000 00000000 \n", // [2 -4], [1 0]
		"c_B200_fp32.txt": b32(1) + b32(0.5),
		"d_B200_fp32.txt": b32(d1) + b32(d2),
	} {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write([]byte(text))
		zw.Close()
		if err := os.WriteFile(filepath.Join(dir, name+".gz"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestVerifyKhattakFolder(t *testing.T) {
	root := khattakFolder(t, 3, 1.5)
	for _, arg := range []string{root, filepath.Join(root, "B200"), filepath.Join(root, "B200", "fp16", "d_B200_fp32.txt.gz"),
		filepath.Join(root, "B200", "fp16", "a_B200_fp16.txt.gz")} {
		out, _, err := lab(t, context.Background(), "verify", arg)
		if err != nil {
			t.Fatalf("%s: %v\n%s", arg, err, out)
		}
		if !strings.Contains(out, "  B200 fp16 → sm100.mma.sync.f16.f32 (fp32 out): 2/2 bit-exact\n") || !strings.Contains(out, "ok: all 1 files bit-exact") {
			t.Errorf("%s: output:\n%s", arg, out)
		}
	}
	bad := khattakFolder(t, 3, 1.25)
	out, _, err := lab(t, context.Background(), "verify", bad)
	if !errors.Is(err, errVerify) || !strings.Contains(out, "1/2 bit-exact — MISMATCH") || !strings.Contains(out, "line 2: a=3f800000 00000000") ||
		!strings.Contains(out, "FAIL: 1 of 1 files") {
		t.Errorf("a wrong result: err %v, output:\n%s", err, out)
	}
	if _, _, err := lab(t, context.Background(), "verify", t.TempDir()); err == nil || !strings.Contains(err.Error(), "no capture files") {
		t.Errorf("an empty folder: %v", err)
	}
	os.WriteFile(filepath.Join(bad, "B200", "fp16", "c_B200_fp32.txt.gz"), []byte("not gzip"), 0o644)
	if _, _, err := lab(t, context.Background(), "verify", bad); err == nil || !strings.Contains(err.Error(), "c_B200_fp32.txt.gz:1: not a gzip file") {
		t.Errorf("a damaged file: %v", err)
	}
}

// TestVerifyKhattakShared runs `lab verify` on the published sets: every
// one bit-exact (skipped when ../shared is not beside the clone).
func TestVerifyKhattakShared(t *testing.T) {
	dir := "../../../shared/golden/khattak"
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("%s: %v", dir, err)
	}
	out, _, err := lab(t, context.Background(), "verify", dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := strings.Count(out, "5000/5000 bit-exact\n"); n != 48 || !strings.Contains(out, "ok: all 48 files bit-exact") {
		t.Errorf("%d sets 5000/5000:\n%s", n, out)
	}
	for _, want := range []string{"B200 E4M3 → sm100.mma.sync.e4m3.f32 (fp32 out): 5000/5000", "H200 E5M2 → sm90.wgmma.e5m2.f32 (fp32 out): 5000/5000",
		"not determined by these outputs: which K elements each FP16 step takes", "zero results: 1 (+0: 1, -0: 0)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestListModelsKhattak(t *testing.T) {
	out, _, err := lab(t, context.Background(), "list", "models")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sm100.mma.sync.e4m3.f32\n", "sm80.mma.sync.tf32.f32\n", "sm90.mma.sync.f16.f16\n",
		"source: Khattak & Mikaitis B200 E4M3 -> fp32 outputs (5000 records each), hardware"} {
		if !strings.Contains(out, want) {
			t.Errorf("lab list models lacks %q", want)
		}
	}
}
