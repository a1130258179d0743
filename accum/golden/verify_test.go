package golden

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func captureFiles(t *testing.T) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(h200Dir, "*.t[sx][vt]"))
	if len(files) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatalf("no capture files in %s: CI must have ../shared beside the clone", h200Dir)
		}
		t.Skipf("no capture files in %s", h200Dir)
	}
	return files
}

// verifyFiles runs each file through Verify, the code path of `lab
// verify`, and requires at least one check per file, each checking
// something and every output bit-exact.
func verifyFiles(t *testing.T, files []string) {
	t.Helper()
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Verify(context.Background(), f, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Checks) == 0 {
				t.Fatal("no checks")
			}
			for _, c := range rep.Checks {
				if c.Total == 0 {
					t.Errorf("%s: nothing checked", c.Name)
				}
				if !c.OK() {
					t.Errorf("%s: %d/%d bit-exact; first: %+v", c.Name, c.Equal, c.Total, c.Mismatches)
				}
			}
		})
	}
}

// TestVerifySharedCaptures requires every shared capture file bit-exact.
func TestVerifySharedCaptures(t *testing.T) {
	verifyFiles(t, captureFiles(t))
}

// readCapture reads the capture file whose name ends in suffix, and skips
// the test when it is missing.
func readCapture(t *testing.T, suffix string) *File {
	t.Helper()
	for _, p := range captureFiles(t) {
		if strings.HasSuffix(p, suffix) {
			f, err := ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Skipf("%s missing", suffix)
	return nil
}

// TestVerifyDetectsMismatch flips one bit of a captured output and checks
// that Verify reports exactly that record.
func TestVerifyDetectsMismatch(t *testing.T) {
	f := readCapture(t, "wgmma_e4m3_inside_normal.tsv")
	f.Records.Records[7].D ^= 1 << 10
	rep, err := Verify(context.Background(), f, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Checks[0]
	if c.Equal != c.Total-1 || len(c.Mismatches) != 1 || c.Mismatches[0].Line != f.Records.Records[7].Line {
		t.Fatalf("want exactly record 7 reported, got %d/%d %+v", c.Equal, c.Total, c.Mismatches)
	}
}

// TestExhaustiveSatfiniteE4M3 converts all 2^32 float32 inputs with the CUDA
// satfinite e4m3 conversion and compares them with the H200 capture.
func TestExhaustiveSatfiniteE4M3(t *testing.T) {
	f := readCapture(t, "fp8_convert.txt")
	const name = "cuda __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)"
	cv := f.Convert.Conversion(name)
	if cv == nil {
		t.Fatalf("no section %q", name)
	}
	conv, err := Converter(name)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := ExhaustiveConversion(context.Background(), cv, conv, 5)
	if err != nil {
		t.Fatal(err)
	}
	if chk.Total != 1<<32 || !chk.OK() {
		t.Fatalf("%d/%d bit-exact; first: %+v", chk.Equal, chk.Total, chk.Mismatches)
	}
}

func TestConverterNames(t *testing.T) {
	tests := []struct {
		name string
		x    float32
		want uint8
	}{
		{"torch float32 -> float8_e4m3fn (Tensor.to)", 1000, 0x7f},
		{"cuda __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)", 1000, 0x7e},
		{"cuda __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)", float32(math.Inf(1)), 0x7c},
		{"cuda __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2)", float32(math.Inf(1)), 0x7b},
	}
	for _, tt := range tests {
		conv, err := Converter(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := conv(tt.x); got != tt.want {
			t.Errorf("%s(%g) = %#02x, want %#02x", tt.name, tt.x, got, tt.want)
		}
	}
	if _, err := Converter("cuda something else"); err == nil {
		t.Error("unknown conversion accepted")
	}
}

// TestVerifyFreshCaptures checks the captures fp8lab took itself on an H200
// with a new seed (testdata/h200-fresh): new inputs, same models.
func TestVerifyFreshCaptures(t *testing.T) {
	files, _ := filepath.Glob("../../testdata/h200-fresh/*.gz")
	if len(files) < 25 {
		t.Fatalf("want the 25 fresh capture files, found %d", len(files))
	}
	verifyFiles(t, files)
}
