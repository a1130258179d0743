package golden

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

func gz(t testing.TB, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func bits32(x float32) string { return fmt.Sprintf("%032b", math.Float32bits(x)) }

// smallSet writes a hand-made set folder <root>/B200/fp16 in the published
// layout: two dot products of K = 2, c, and fp32 results the model
// sm100.mma.sync.f16.f32 gives, plus files overriding any of them.
func smallSet(t *testing.T, override map[string]string) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "B200", "fp16")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// 1.5*2 + 0.25*(-4) + 1 = 3, and 1*1 + 0*0 + 0.5 = 1.5.
	files := map[string]string{
		"a_B200_fp16.txt": "3fc00000 3e800000 \n3f800000 00000000 \n",
		"b_B200_fp16.txt": "40000000 c0800000 \n3f800000 00000000 \n",
		"c_B200_fp32.txt": bits32(1) + "\n" + bits32(0.5) + "\n",
		"d_B200_fp32.txt": bits32(3) + "\n" + bits32(1.5) + "\n",
	}
	for k, v := range override {
		files[k] = v
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name+".gz"), gz(t, text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestKhattakSmallFolder(t *testing.T) {
	root := smallSet(t, nil)
	sets, err := ReadKhattak(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 1 {
		t.Fatalf("%d sets, want 1", len(sets))
	}
	s := sets[0]
	want := &KhattakSet{Dir: filepath.Join(root, "B200", "fp16"), GPU: "B200", Format: "fp16", Out: "fp32",
		A: [][]uint32{{0x3fc00000, 0x3e800000}, {0x3f800000, 0}}, B: [][]uint32{{0x40000000, 0xc0800000}, {0x3f800000, 0}},
		C: []uint32{math.Float32bits(1), math.Float32bits(0.5)}, D: []uint32{math.Float32bits(3), math.Float32bits(1.5)},
		DPath: filepath.Join(root, "B200", "fp16", "d_B200_fp32.txt.gz")}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	for _, dir := range []string{root, filepath.Join(root, "B200"), filepath.Join(root, "B200", "fp16")} {
		if d, err := KhattakFolders(dir); err != nil || len(d) != 1 {
			t.Errorf("KhattakFolders(%s) = %v, %v", dir, d, err)
		}
	}
	rep, err := VerifyKhattak(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; !rep.OK() || c.Total != 2 || c.Name != "B200 fp16 → sm100.mma.sync.f16.f32 (fp32 out)" {
		t.Errorf("check %+v", c)
	}
	// A wrong result is a mismatch naming its line.
	bad := smallSet(t, map[string]string{"d_B200_fp32.txt": bits32(3) + "\n" + bits32(1.25) + "\n"})
	sets, err = ReadKhattak(bad)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = VerifyKhattak(context.Background(), sets[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Checks[0]; rep.OK() || c.Equal != 1 || len(c.Mismatches) != 1 || c.Mismatches[0].Line != 2 {
		t.Errorf("a wrong d: check %+v", c)
	}
}

// TestKhattakBadFiles checks that every malformed file gives an error naming
// the file and the line.
func TestKhattakBadFiles(t *testing.T) {
	for _, tc := range []struct {
		file, text string
		line       int
		msg        string
	}{
		{"a_B200_fp16.txt", "3fc00000 3e80000g \n3f800000 00000000 \n", 1, "not 8 hex digits"},
		{"a_B200_fp16.txt", "3fc00000 3e800000 \n3f800000 \n", 2, "1 values, line 1 has 2"},
		{"a_B200_fp16.txt", "3fc00000 3e800000 \n\n", 2, "empty line"},
		{"a_B200_fp16.txt", "3fc00000  3e800000\n3f800000 00000000 \n", 1, "not 8 hex digits"},
		{"a_B200_fp16.txt", "3fc00000,3e800000\n3f800000 00000000 \n", 1, "followed by one space"},
		{"a_B200_fp16.txt", "3fc00000 3e800000 \r\n3f800000 00000000 \r\n", 1, "not 8 hex digits"},
		{"a_B200_fp16.txt", strings.Repeat("3f800000 ", 65) + "\n", 1, "more than 64 values"},
		{"a_B200_fp16.txt", "", 1, "no data lines"},
		{"c_B200_fp32.txt", bits32(1) + "\n" + bits32(0.5)[1:] + "\n", 2, "not 32 binary digits"},
		{"c_B200_fp32.txt", bits32(1) + "\r\n" + bits32(0.5) + "\n", 1, "not 32 binary digits"},
		{"d_B200_fp32.txt", bits32(3) + "\n" + strings.Replace(bits32(1.5), "1", "2", 1) + "\n", 2, "not 32 binary digits"},
	} {
		root := smallSet(t, map[string]string{tc.file: tc.text})
		_, err := ReadKhattak(root)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s %q: error %v (%T), want a ParseError", tc.file, tc.text, err, err)
			continue
		}
		if !strings.HasSuffix(pe.Name, tc.file+".gz") || pe.Line != tc.line || !strings.Contains(pe.Msg, tc.msg) ||
			!strings.HasPrefix(err.Error(), fmt.Sprintf("%s:%d: ", pe.Name, tc.line)) {
			t.Errorf("%s %q: error %q, want %s:%d: ...%s", tc.file, tc.text, err, tc.file, tc.line, tc.msg)
		}
	}
	// Line counts that disagree, a missing file, a folder without sets.
	for _, tc := range []struct {
		override map[string]string
		msg      string
	}{
		{map[string]string{"d_B200_fp32.txt": bits32(3) + "\n"}, "d_B200_fp32.txt.gz: 1 lines"},
		{map[string]string{"b_B200_fp16.txt": "40000000 c0800000 \n"}, "b_B200_fp16.txt.gz: 1 lines of 2 values"},
	} {
		if _, err := ReadKhattak(smallSet(t, tc.override)); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("error %v, want one containing %q", err, tc.msg)
		}
	}
	root := smallSet(t, nil)
	os.Remove(filepath.Join(root, "B200", "fp16", "c_B200_fp32.txt.gz"))
	if _, err := ReadKhattak(root); err == nil || !strings.Contains(err.Error(), "no c_B200_fp32.txt.gz") {
		t.Errorf("missing c: %v", err)
	}
	if _, err := ReadKhattak(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no Khattak & Mikaitis set folders") {
		t.Errorf("empty folder: %v", err)
	}
	// A set no run produced.
	odd := smallSet(t, nil)
	if err := os.Rename(filepath.Join(odd, "B200"), filepath.Join(odd, "X9")); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		os.Rename(filepath.Join(odd, "X9", "fp16", n+"_B200_fp16.txt.gz"), filepath.Join(odd, "X9", "fp16", n+"_X9_fp16.txt.gz"))
	}
	for _, n := range []string{"c", "d"} {
		os.Rename(filepath.Join(odd, "X9", "fp16", n+"_B200_fp32.txt.gz"), filepath.Join(odd, "X9", "fp16", n+"_X9_fp32.txt.gz"))
	}
	sets, err := ReadKhattak(odd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyKhattak(context.Background(), sets[0], Options{}); err == nil || !strings.Contains(err.Error(), "no known Khattak & Mikaitis run for X9 fp16 -> fp32") {
		t.Errorf("unknown GPU: %v", err)
	}
}

// TestKhattakSizeLimit checks that a file decompressing past
// MaxKhattakBytes is refused without reading it all, naming the file and
// the limit, and that a damaged gzip stream is an error too.
func TestKhattakSizeLimit(t *testing.T) {
	big := strings.Repeat(bits32(1)+"\n", MaxKhattakBytes/33+10)
	root := smallSet(t, map[string]string{"c_B200_fp32.txt": big})
	_, err := ReadKhattak(root)
	var pe *ParseError
	if !errors.As(err, &pe) || !strings.HasSuffix(pe.Name, "c_B200_fp32.txt.gz") || !strings.Contains(pe.Msg, fmt.Sprint(MaxKhattakBytes)) {
		t.Errorf("oversized file: %v", err)
	}
	if _, err := khattakText([]byte("not gzip"), "x.txt.gz"); err == nil || !strings.HasPrefix(err.Error(), "x.txt.gz:1: not a gzip file") {
		t.Errorf("not gzip: %v", err)
	}
	z := gz(t, "3f800000 \n")
	if _, err := khattakText(z[:len(z)-6], "cut.txt.gz"); err == nil || !strings.HasPrefix(err.Error(), "cut.txt.gz:") {
		t.Errorf("truncated gzip: %v", err)
	}
	if _, err := khattakText(make([]byte, MaxKhattakBytes+1), "plain.txt"); err == nil {
		t.Error("oversized plain file accepted")
	}
}

// writeKhattakVectors and writeKhattakScalars write the published layouts.
func writeKhattakVectors(rows [][]uint32) []byte {
	var b bytes.Buffer
	for _, r := range rows {
		for _, v := range r {
			fmt.Fprintf(&b, "%08x ", v)
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func writeKhattakScalars(vals []uint32) []byte {
	var b bytes.Buffer
	for _, v := range vals {
		fmt.Fprintf(&b, "%032b\n", v)
	}
	return b.Bytes()
}

func FuzzParseKhattak(f *testing.F) {
	f.Add([]byte("3fc00000 3e800000 \n3f800000 00000000 \n"))
	f.Add([]byte("3F800000 BF800000\n"))
	f.Add([]byte(bits32(1) + "\n" + bits32(-0.5)))
	f.Add([]byte(bits32(1) + "\r\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ParseKhattakVectors(data, "fuzz")
		if err != nil {
			checkParseError(t, err)
		} else {
			w := len(rows[0])
			for _, r := range rows {
				if len(r) != w || w < 1 || w > MaxKhattakK {
					t.Fatalf("rows of %d and %d values", w, len(r))
				}
			}
			again, err := ParseKhattakVectors(writeKhattakVectors(rows), "fuzz")
			if err != nil || !reflect.DeepEqual(again, rows) {
				t.Fatalf("round trip: %v, %v != %v", err, again, rows)
			}
		}
		vals, err := ParseKhattakScalars(data, "fuzz")
		if err != nil {
			checkParseError(t, err)
			return
		}
		again, err := ParseKhattakScalars(writeKhattakScalars(vals), "fuzz")
		if err != nil || !reflect.DeepEqual(again, vals) {
			t.Fatalf("round trip: %v, %v != %v", err, again, vals)
		}
	})
}

// TestKhattakCodeConversions checks the harness conversions of a value
// that is not exact (the published inputs all are): __float2half rounds to
// nearest even, __nv_cvt_float_to_fp8 saturates, tf32 keeps the pattern
// (the tensor core drops its 13 low bits).
func TestKhattakCodeConversions(t *testing.T) {
	x := math.Float32bits(1 + 1.0/2048 + 1.0/8192) // between two f16 values, nearer the upper
	if got := khattakCode(fp8.FormatFP16, x); got != uint32(fp8.FP16FromFloat32(math.Float32frombits(x))) || got != 0x3c01 {
		t.Errorf("fp16: %04x", got)
	}
	if got := khattakCode(fp8.FormatE4M3, math.Float32bits(1000)); got != 0x7e {
		t.Errorf("e4m3 1000: %02x, want 7e (448, saturated)", got)
	}
	if got := khattakCode(fp8.FormatTF32, x); got != x {
		t.Errorf("tf32: %08x", got)
	}
}
