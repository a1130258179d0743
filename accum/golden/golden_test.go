package golden

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// h200Dir is the capture folder, found relative to this package: the repo is
// cloned with shared/ beside it (/work/main/accum/golden → /work/shared).
const h200Dir = "../../../shared/golden/h200"

func needH200(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(h200Dir); err != nil {
		t.Skipf("capture folder %s not found (%v): the repository is not checked out beside shared/", h200Dir, err)
	}
}

func TestH200Files(t *testing.T) {
	needH200(t)
	start := time.Now()
	files, err := ReadDir(h200Dir)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	t.Logf("parsed %d files in %v", len(files), elapsed)
	var nRec, nLong, nConv int
	for _, f := range files {
		base := filepath.Base(f.Path)
		switch f.Kind {
		case KindRecords:
			nRec++
			rf := f.Records
			if f.Long != nil || f.Convert != nil || rf == nil {
				t.Errorf("%s: more or less than one kind set", base)
				continue
			}
			// The data lines of wgmma_bf16_inside_allcodes.tsv: the README's
			// table says 1996, which is the file's line count with its
			// 9 header lines; 1987 records remain after non-finite c or d
			// were left out.
			want := 4096
			switch {
			case base == "wgmma_bf16_inside_allcodes.tsv":
				want = 1987
			case strings.HasSuffix(base, "_signed_zero.tsv"):
				// The seven signed-zero probes of capture/zero_probe.py
				// and capture/mma_zero.cu.
				want = 7
			}
			if len(rf.Records) != want {
				t.Errorf("%s: %d records, want %d", base, len(rf.Records), want)
			}
			wantL, wantFmt := 32, ""
			for _, ft := range []string{"e4m3", "e5m2", "f16", "bf16"} {
				if strings.Contains(base, "_"+ft+"_") {
					wantFmt = ft
				}
			}
			if wantFmt == "f16" || wantFmt == "bf16" {
				wantL = 16
			}
			if rf.AFormat != wantFmt || rf.L != wantL {
				t.Errorf("%s: a-format %q L %d, want %q %d", base, rf.AFormat, rf.L, wantFmt, wantL)
			}
			wantKind := StepWithC
			if strings.Contains(base, "_promote_") {
				wantKind = FaddAfterStep
			}
			if rf.Kind != wantKind {
				t.Errorf("%s: kind %v, want %v", base, rf.Kind, wantKind)
			}
			if !strings.HasPrefix(rf.Model, "sm90.") || len(rf.Notes) == 0 {
				t.Errorf("%s: model %q, %d notes", base, rf.Model, len(rf.Notes))
			}
			if r := rf.Records[0]; r.Line != 10 || len(r.A) != wantL || len(r.B) != wantL {
				t.Errorf("%s: first record %+v", base, r)
			}
		case KindLong:
			nLong++
			lf := f.Long
			if len(lf.Outputs) != 64 {
				t.Errorf("%s: %d outputs, want 64", base, len(lf.Outputs))
			}
			if want := fmt.Sprintf("long_e4m3_K%d.txt", lf.K); base != want {
				t.Errorf("%s: K = %d", base, lf.K)
			}
			if lf.Model != "sm90.wgmma.e4m3.f32" || !(lf.PScale > 1) {
				t.Errorf("%s: model %q pscale %v", base, lf.Model, lf.PScale)
			}
			for i := range LongRows {
				if len(lf.A[i]) != lf.K || len(lf.B[i]) != lf.K {
					t.Errorf("%s: row %d lengths %d %d", base, i, len(lf.A[i]), len(lf.B[i]))
				}
			}
			// The exact dot product of the codes matches ref (a check of the
			// row/column indexing; e4m3fn decoded by hand here).
			o := lf.Outputs[len(lf.Outputs)-1]
			sum := 0.0
			for k := 0; k < lf.K; k++ {
				sum += e4m3Value(lf.A[o.I][k]) * e4m3Value(lf.B[o.J][k])
			}
			if d := math.Abs(sum - o.Ref); d > 1e-12*math.Max(1, math.Abs(o.Ref)) {
				t.Errorf("%s: d %d %d: sum = %v, ref = %v", base, o.I, o.J, sum, o.Ref)
			}
		case KindConvert:
			nConv++
			cf := f.Convert
			if len(cf.Conversions) != 6 || len(cf.Decodes) != 2 {
				t.Errorf("%s: %d conversions and %d decode tables, want 6 and 2", base, len(cf.Conversions), len(cf.Decodes))
			}
		default:
			t.Errorf("%s: kind %v", base, f.Kind)
		}
	}
	if nRec != 27 || nLong != 4 || nConv != 1 {
		t.Errorf("%d record files, %d long files, %d conversion files; want 27, 4, 1", nRec, nLong, nConv)
	}
	if elapsed > time.Second && !testing.Short() {
		t.Errorf("parsing the folder took %v, want well under a second", elapsed)
	}
}

// e4m3Value decodes an e4m3fn code (no infinities; 0x7f/0xff are NaN).
func e4m3Value(c uint8) float64 {
	s := 1.0
	if c&0x80 != 0 {
		s = -1
	}
	e, m := int(c>>3&0xf), float64(c&7)
	if e == 0 {
		return s * m / 8 * math.Ldexp(1, -6)
	}
	return s * (1 + m/8) * math.Ldexp(1, e-7)
}

// TestH200RoundTrip: every capture file written back is byte-for-byte the
// original.
func TestH200RoundTrip(t *testing.T) {
	needH200(t)
	entries, err := os.ReadDir(h200Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".tsv") && !strings.HasSuffix(n, ".txt") {
			continue
		}
		path := filepath.Join(h200Dir, n)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		switch f.Kind {
		case KindRecords:
			err = WriteRecords(&buf, f.Records)
		case KindLong:
			err = WriteLong(&buf, f.Long)
		case KindConvert:
			err = WriteConvert(&buf, f.Convert)
		}
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if !bytes.Equal(buf.Bytes(), orig) {
			a, b := strings.Split(string(orig), "\n"), strings.Split(buf.String(), "\n")
			for i := 0; i < len(a) && i < len(b); i++ {
				if a[i] != b[i] {
					t.Errorf("%s: written file differs at line %d:\n got %.200q\nwant %.200q", n, i+1, b[i], a[i])
					break
				}
			}
			if len(a) != len(b) {
				t.Errorf("%s: written file has %d lines, want %d", n, len(b), len(a))
			}
		}
	}
}

// TestH200Convert checks CodeFor against the decode tables: every finite
// non-negative e4m3fn / e5m2 value converts to its own code, and negative
// inputs get bit 7.
func TestH200Convert(t *testing.T) {
	needH200(t)
	f, err := ReadFile(filepath.Join(h200Dir, "fp8_convert.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cf := f.Convert
	for _, tc := range []struct{ conv, dec string }{
		{"torch float32 -> float8_e4m3fn (Tensor.to)", "e4m3fn"},
		{"torch float32 -> float8_e5m2 (Tensor.to)", "e5m2"},
		{"cuda __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3)", "e4m3fn"},
		{"cuda __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2)", "e5m2"},
	} {
		c, d := cf.Conversion(tc.conv), cf.Decode(tc.dec)
		if c == nil || d == nil {
			t.Fatalf("missing section %q or %q", tc.conv, tc.dec)
		}
		for code := range 128 {
			bits := d.Bits[code]
			if bits&0x7fffffff >= 0x7f800000 { // NaN or Inf
				continue
			}
			if got := c.CodeFor(bits); got != uint8(code) {
				t.Errorf("%s: CodeFor(%08x) = %02x, want %02x", tc.conv, bits, got, code)
			}
			if got := c.CodeFor(bits | 1<<31); got != uint8(code)|0x80 {
				t.Errorf("%s: CodeFor(-%08x) = %02x, want %02x", tc.conv, bits, got, code|0x80)
			}
		}
		if got := c.CodeFor(0); got != 0 {
			t.Errorf("%s: CodeFor(0) = %02x", tc.conv, got)
		}
	}
	if cf.Conversion("nope") != nil || cf.Decode("nope") != nil {
		t.Error("lookup of a missing name succeeded")
	}
}

func TestCodeFor(t *testing.T) {
	c := Conversion{Name: "x", Ranges: []Range{{0, 0}, {0x10, 1}, {0x20, 2}, {0x7fffffff, 3}}}
	for _, tc := range []struct {
		bits uint32
		want uint8
	}{{0, 0}, {0xf, 0}, {0x10, 1}, {0x1f, 1}, {0x20, 2}, {0x7ffffffe, 2}, {0x7fffffff, 3}, {0x80000010, 0x81}, {0xffffffff, 0x83}} {
		if got := c.CodeFor(tc.bits); got != tc.want {
			t.Errorf("CodeFor(%08x) = %02x, want %02x", tc.bits, got, tc.want)
		}
	}
	if got := (&Conversion{}).CodeFor(5); got != 0 {
		t.Errorf("empty CodeFor = %02x", got)
	}
}

// Small valid files for the malformed-input tables and the fuzz seeds.
const validRecords = RecordsMagic + `
# model: test.model
# record: d = step(a, b, c)
# a-format: e4m3
# L: 2
# a note
0102	0304	3f800000	40000000
ff00	00ff	00000000	80000000
`

const validRecordsF16 = RecordsMagic + `
# model: test.f16
# record: d = fadd(step(a, b, 0), c)
# a-format: f16
# L: 1
3c00	BC00	3f800000	00000000
`

func validLong() string {
	var b strings.Builder
	b.WriteString(LongMagic + "\n# model: test.long\n# note: free text\nK 2\npscale 2.5\n")
	for i := range LongRows {
		fmt.Fprintf(&b, "a %d 38%02x\n", i, i)
	}
	for i := range LongRows {
		fmt.Fprintf(&b, "b %d %02x40\n", i, i)
	}
	b.WriteString("d 0 0 every32=3f800000 every128=3f800000 cublas_fast=3f800000 cublas=3f800000 ref=1\n")
	b.WriteString("d 7 3 every32=00000000 every128=80000000 cublas_fast=00000001 cublas=ffffffff ref=-1.2345678901234567e-05\n")
	return b.String()
}

func validConvert(decodeEntries int) string {
	var b strings.Builder
	b.WriteString(ConvertMagic + "\n# a note\nconversion test one\n00000000 00\n3a800001 01\n7f800001 7f\ndecode d1\n")
	for i := range decodeEntries {
		fmt.Fprintf(&b, "%02x %08x\n", i, uint32(i)<<20)
	}
	return b.String()
}

// replaceLine returns s with line n (1-based) replaced by repl (which may be
// several lines, or "" to delete the line).
func replaceLine(s string, n int, repl string) string {
	lines := strings.Split(s, "\n")
	if repl == "" {
		lines = append(lines[:n-1], lines[n:]...)
	} else {
		lines[n-1] = repl
	}
	return strings.Join(lines, "\n")
}

func TestValidSmall(t *testing.T) {
	rf, err := ParseRecords(strings.NewReader(validRecords), "v.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if rf.Model != "test.model" || rf.Kind != StepWithC || rf.AFormat != "e4m3" || rf.L != 2 ||
		len(rf.Notes) != 1 || rf.Notes[0] != "a note" || len(rf.Records) != 2 {
		t.Fatalf("%+v", rf)
	}
	if r := rf.Records[1]; r.Line != 8 || r.A[0] != 0xff || r.A[1] != 0 || r.B[1] != 0xff || r.C != 0 || r.D != 0x80000000 {
		t.Errorf("record %+v", r)
	}
	rf, err = ParseRecords(strings.NewReader(validRecordsF16), "v.tsv")
	if err != nil {
		t.Fatal(err)
	}
	if rf.Kind != FaddAfterStep || rf.Records[0].A[0] != 0x3c00 || rf.Records[0].B[0] != 0xbc00 {
		t.Errorf("%+v", rf)
	}
	lf, err := ParseLong(strings.NewReader(validLong()), "v.txt")
	if err != nil {
		t.Fatal(err)
	}
	if lf.K != 2 || lf.PScale != 2.5 || lf.A[5][1] != 5 || lf.B[6][0] != 6 || len(lf.Outputs) != 2 ||
		lf.Outputs[1] != (LongOutput{Line: 23, I: 7, J: 3, Every32: 0, Every128: 0x80000000, CublasFast: 1, Cublas: 0xffffffff, Ref: -1.2345678901234567e-05}) ||
		len(lf.Notes) != 1 || lf.Notes[0] != "note: free text" {
		t.Errorf("%+v", lf)
	}
	cf, err := ParseConvert(strings.NewReader(validConvert(256)), "v.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(cf.Conversions) != 1 || len(cf.Conversions[0].Ranges) != 3 || cf.Decodes[0].Bits[255] != 255<<20 || cf.Conversions[0].Name != "test one" {
		t.Errorf("%+v", cf)
	}
}

type badCase struct {
	name  string
	input string
	want  string // the error must contain "NAME:LINE: " and this
}

func runBad(t *testing.T, file string, parse func(string) error, cases []badCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := parse(tc.input)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is a %T, want *ParseError", err, err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), file+":") {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestBadRecords(t *testing.T) {
	v := validRecords
	runBad(t, "r.tsv", func(s string) error {
		_, err := ParseRecords(strings.NewReader(s), "r.tsv")
		return err
	}, []badCase{
		{"empty", "", "r.tsv:1: empty input"},
		{"wrong magic", LongMagic + "\n", "r.tsv:1: first line"},
		{"magic with space", RecordsMagic + " \n", "r.tsv:1: first line"},
		{"data before headers", replaceLine(v, 3, "0102\t0304\t3f800000\t40000000"), "r.tsv:3: data line before the required headers (missing # record:, # a-format:, # L:)"},
		{"data before all headers", RecordsMagic + "\n0102\t0304\t3f800000\t40000000\n", "r.tsv:2: data line before the required headers (missing # model:, # record:, # a-format:, # L:)"},
		{"duplicate model", replaceLine(v, 6, "# model: other"), "r.tsv:6: duplicate # model: header (first on line 2)"},
		{"duplicate L after data", v + "# L: 2\n", "r.tsv:9: duplicate # L: header (first on line 5)"},
		{"empty model", replaceLine(v, 2, "# model:  "), "r.tsv:2: empty # model:"},
		{"unknown record", replaceLine(v, 3, "# record: d = step(a, b)"), "r.tsv:3: unknown # record:"},
		{"unknown format", replaceLine(v, 4, "# a-format: e3m4"), "r.tsv:4: unknown # a-format:"},
		{"L zero", replaceLine(v, 5, "# L: 0"), "r.tsv:5: bad # L:"},
		{"L word", replaceLine(v, 5, "# L: two"), "r.tsv:5: bad # L:"},
		{"L negative", replaceLine(v, 5, "# L: -2"), "r.tsv:5: bad # L:"},
		{"3 fields", replaceLine(v, 8, "ff00\t00ff\t00000000"), "r.tsv:8: 3 tab-separated fields, want 4"},
		{"5 fields", replaceLine(v, 7, "0102\t0304\t3f800000\t40000000\t00"), "r.tsv:7: 5 tab-separated fields, want 4"},
		{"spaces not tabs", replaceLine(v, 7, "0102 0304 3f800000 40000000"), "r.tsv:7: 1 tab-separated fields"},
		{"a too short", replaceLine(v, 7, "01\t0304\t3f800000\t40000000"), "r.tsv:7: field a has 2 hex digits, want 4"},
		{"b too long", replaceLine(v, 8, "ff00\t00ff00\t00000000\t80000000"), "r.tsv:8: field b has 6 hex digits, want 4"},
		{"bad hex in b", replaceLine(v, 8, "ff00\t00fg\t00000000\t80000000"), "r.tsv:8: field b: bad hex at code 1"},
		{"c short", replaceLine(v, 7, "0102\t0304\t3f80000\t40000000"), "r.tsv:7: field c"},
		{"d bad", replaceLine(v, 7, "0102\t0304\t3f800000\t4000000x"), "r.tsv:7: field d"},
		{"d with space", replaceLine(v, 7, "0102\t0304\t3f800000\t40000000 "), "r.tsv:7: field d"},
		{"empty line", replaceLine(v, 8, ""+"\n"+"ff00\t00ff\t00000000\t80000000"), "r.tsv:8: empty line"},
		{"trailing blank line", v + "\n", "r.tsv:9: empty line"},
		{"no records", replaceLine(replaceLine(v, 8, ""), 7, ""), "r.tsv:6: no records"},
		{"missing header at end", replaceLine(replaceLine(replaceLine(v, 8, ""), 7, ""), 5, ""), "r.tsv:5: missing required header # L:"},
		{"f16 with fp8 codes", replaceLine(validRecordsF16, 6, "3c\tbc\t3f800000\t00000000"), "r.tsv:6: field a has 2 hex digits, want 4 (1 f16 codes of 4 digits)"},
		{"long line", v + strings.Repeat("0", MaxLineBytes+1) + "\n", "r.tsv:9: line longer than"},
	})
}

func TestBadLong(t *testing.T) {
	v := validLong()
	// Lines: 1 magic, 2 model, 3 note, 4 K, 5 pscale, 6..13 a 0..7,
	// 14..21 b 0..7, 22..23 d.
	runBad(t, "l.txt", func(s string) error {
		_, err := ParseLong(strings.NewReader(s), "l.txt")
		return err
	}, []badCase{
		{"empty", "", "l.txt:1: empty input"},
		{"wrong magic", RecordsMagic + "\n", "l.txt:1: first line"},
		{"a before K", replaceLine(v, 4, "a 0 3800\nK 2"), "l.txt:4: a line before the required headers (missing K, pscale)"},
		{"d before model", replaceLine(v, 2, "d 0 0 every32=3f800000 every128=3f800000 cublas_fast=3f800000 cublas=3f800000 ref=1"), "l.txt:2: d line before the required headers (missing # model:, K, pscale)"},
		{"duplicate model", replaceLine(v, 3, "# model: again"), "l.txt:3: duplicate # model: header (first on line 2)"},
		{"duplicate K", replaceLine(v, 5, "K 2\npscale 2.5"), "l.txt:5: duplicate K line (first on line 4)"},
		{"K zero", replaceLine(v, 4, "K 0"), "l.txt:4: bad K"},
		{"K hex", replaceLine(v, 4, "K 0x2"), "l.txt:4: bad K"},
		{"K fields", replaceLine(v, 4, "K 2 3"), "l.txt:4: K line has 3 fields, want 2"},
		{"pscale nan", replaceLine(v, 5, "pscale NaN"), "l.txt:5: bad pscale"},
		{"pscale inf", replaceLine(v, 5, "pscale 1e999"), "l.txt:5: bad pscale"},
		{"pscale zero", replaceLine(v, 5, "pscale 0"), "l.txt:5: bad pscale"},
		{"a index 8", replaceLine(v, 9, "a 8 3803"), "l.txt:9: a index \"8\" out of 0..7"},
		{"a index -1", replaceLine(v, 9, "a -1 3803"), "l.txt:9: a index"},
		{"duplicate a", replaceLine(v, 9, "a 2 3803"), "l.txt:9: duplicate a 2 (first on line 8)"},
		{"duplicate b", replaceLine(v, 21, "b 0 0740"), "l.txt:21: duplicate b 0 (first on line 14)"},
		{"a short row", replaceLine(v, 7, "a 1 38"), "l.txt:7: a 1 has 2 hex digits, want 4 (K = 2 e4m3 codes)"},
		{"b long row", replaceLine(v, 15, "b 1 014000"), "l.txt:15: b 1 has 6 hex digits, want 4"},
		{"bad hex row", replaceLine(v, 15, "b 1 01x0"), "l.txt:15: b 1: bad hex at code 1"},
		{"a missing field", replaceLine(v, 6, "a 0"), "l.txt:6: a line has 2 fields, want 3"},
		{"d names missing row", replaceLine(v, 13, "d 7 0 every32=3f800000 every128=3f800000 cublas_fast=3f800000 cublas=3f800000 ref=1\na 7 3807"), "l.txt:13: d 7 0: row a 7 not given before"},
		{"d names missing column", replaceLine(v, 21, "d 0 7 every32=3f800000 every128=3f800000 cublas_fast=3f800000 cublas=3f800000 ref=1\nb 7 0740"), "l.txt:21: d 0 7: column b 7 not given before"},
		{"d index 8", replaceLine(v, 23, "d 7 8 every32=00000000 every128=80000000 cublas_fast=00000001 cublas=ffffffff ref=1"), "l.txt:23: d column index \"8\" out of 0..7"},
		{"duplicate d", replaceLine(v, 23, "d 0 0 every32=00000000 every128=80000000 cublas_fast=00000001 cublas=ffffffff ref=1"), "l.txt:23: duplicate d 0 0 (first on line 22)"},
		{"d fields", replaceLine(v, 23, "d 7 3 every32=00000000 every128=80000000 cublas_fast=00000001 cublas=ffffffff"), "l.txt:23: d line has 7 fields, want 8"},
		{"d key order", replaceLine(v, 23, "d 7 3 every128=00000000 every32=80000000 cublas_fast=00000001 cublas=ffffffff ref=1"), "l.txt:23: d field 4 is \"every128=00000000\", want every32=..."},
		{"d bad hex", replaceLine(v, 23, "d 7 3 every32=00000000 every128=8000000 cublas_fast=00000001 cublas=ffffffff ref=1"), "l.txt:23: every128=\"8000000\" is not 8 hex digits"},
		{"d bad ref", replaceLine(v, 23, "d 7 3 every32=00000000 every128=80000000 cublas_fast=00000001 cublas=ffffffff ref=inf"), "l.txt:23: bad ref"},
		{"double space", replaceLine(v, 23, "d 7 3  every32=00000000 every128=80000000 cublas_fast=00000001 cublas=ffffffff ref=1"), "l.txt:23: d line has 9 fields"},
		{"unknown line", replaceLine(v, 23, "e 7 3"), "l.txt:23: unknown kind of line \"e\""},
		{"empty line", replaceLine(v, 23, ""+"\n"), "l.txt:23: empty line"},
		{"missing b 7", replaceLine(replaceLine(v, 23, ""), 21, ""), "l.txt:21: missing b 7 line"},
		{"no d lines", replaceLine(replaceLine(v, 23, ""), 22, ""), "l.txt:21: no d lines"},
		{"missing model", replaceLine(v, 2, ""), "l.txt:5: a line before the required headers (missing # model:)"},
	})
}

func TestBadConvert(t *testing.T) {
	v := validConvert(256)
	// Lines: 1 magic, 2 note, 3 conversion, 4..6 ranges, 7 decode, 8..263 entries.
	runBad(t, "c.txt", func(s string) error {
		_, err := ParseConvert(strings.NewReader(s), "c.txt")
		return err
	}, []badCase{
		{"empty", "", "c.txt:1: empty input"},
		{"wrong magic", LongMagic + "\n", "c.txt:1: first line"},
		{"only magic", ConvertMagic + "\n# note\n", "c.txt:2: no conversion or decode section"},
		{"data before section", replaceLine(v, 3, "00000000 00\nconversion test one"), "c.txt:3: data line before the first conversion or decode section"},
		{"first start not zero", replaceLine(v, 4, "00000001 00"), "c.txt:4: first range starts at 00000001, want 00000000"},
		{"equal starts", replaceLine(v, 5, "00000000 01"), "c.txt:5: range start 00000000 not above the previous start 00000000"},
		{"decreasing starts", replaceLine(v, 6, "3a800000 7f"), "c.txt:6: range start 3a800000 not above the previous start 3a800001"},
		{"negative start", replaceLine(v, 6, "ff800001 7f"), "c.txt:6: range start ff800001 is not a non-negative float32 bit pattern"},
		{"bad start", replaceLine(v, 5, "3a80001 01"), "c.txt:5: range start \"3a80001\" is not 8 hex digits"},
		{"bad code", replaceLine(v, 5, "3a800001 1"), "c.txt:5: range code \"1\" is not 2 hex digits"},
		{"three fields", replaceLine(v, 5, "3a800001 01 02"), "c.txt:5: unknown kind of line"},
		{"one field", replaceLine(v, 5, "3a800001"), "c.txt:5: unknown kind of line"},
		{"tab separated", replaceLine(v, 5, "3a800001\t01"), "c.txt:5: unknown kind of line"},
		{"empty conversion", replaceLine(v, 3, "conversion empty\nconversion test one"), "c.txt:3: conversion section \"empty\" has no ranges"},
		{"no name", replaceLine(v, 3, "conversion "), "c.txt:3: conversion section without a name"},
		{"no name 2", replaceLine(v, 7, "decode"), "c.txt:7: decode section without a name"},
		{"duplicate conversion", replaceLine(v, 7, "conversion test one"), "c.txt:7: duplicate conversion section \"test one\" (first on line 3)"},
		{"duplicate decode", v + "decode d1\n", "c.txt:264: duplicate decode section \"d1\" (first on line 7)"},
		{"decode 255 entries", validConvert(255), "c.txt:7: decode section \"d1\" has 255 entries, want 256"},
		{"decode 255 entries then section", validConvert(255) + "conversion two\n00000000 00\n", "c.txt:7: decode section \"d1\" has 255 entries, want 256"},
		{"decode 257 entries", v + "00 00000000\n", "c.txt:264: decode section \"d1\" already has 256 entries"},
		{"decode out of order", replaceLine(v, 10, "03 00300000"), "c.txt:10: decode code 03, want 02"},
		{"decode bad bits", replaceLine(v, 10, "02 0020000"), "c.txt:10: decode bits \"0020000\" are not 8 hex digits"},
		{"decode bad code", replaceLine(v, 10, "2 00200000"), "c.txt:10: decode code \"2\" is not 2 hex digits"},
		{"empty line", replaceLine(v, 7, "\ndecode d1"), "c.txt:7: empty line"},
	})
}

func TestReadFileKinds(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		kind    FileKind
		errWant string
	}{
		{validRecords, KindRecords, ""},
		{validLong(), KindLong, ""},
		{validConvert(256), KindConvert, ""},
		{strings.ReplaceAll(validRecords, "\n", "\r\n"), KindRecords, ""},
		{"# something else\n", 0, "x.txt:1: unknown kind of file"},
		{"", 0, "x.txt:1: unknown kind of file"},
		{validRecords + "zz\n", 0, "x.txt:9: 1 tab-separated fields"},
	} {
		path := filepath.Join(dir, "x.txt")
		if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := ReadFile(path)
		if tc.errWant != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errWant) || !strings.HasPrefix(err.Error(), path+":") {
				t.Errorf("ReadFile(%.40q): error %v, want %q", tc.content, err, tc.errWant)
			}
			continue
		}
		if err != nil {
			t.Errorf("ReadFile(%.40q): %v", tc.content, err)
			continue
		}
		set := 0
		for _, p := range []bool{f.Records != nil, f.Long != nil, f.Convert != nil} {
			if p {
				set++
			}
		}
		if f.Kind != tc.kind || set != 1 || f.Path != path {
			t.Errorf("ReadFile(%.40q): kind %v, %d set, path %q", tc.content, f.Kind, set, f.Path)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestWritersReject(t *testing.T) {
	rf, err := ParseRecords(strings.NewReader(validRecords), "v")
	if err != nil {
		t.Fatal(err)
	}
	bad := *rf
	bad.Notes = []string{"L: 3"}
	var buf bytes.Buffer
	if err := WriteRecords(&buf, &bad); err == nil || buf.Len() != 0 {
		t.Errorf("note that reads back as a header: err %v, wrote %d bytes", err, buf.Len())
	}
	bad = *rf
	bad.Records = []Record{{A: []uint16{0x100, 0}, B: []uint16{0, 0}}}
	if err := WriteRecords(&buf, &bad); err == nil {
		t.Error("e4m3 code 0x100 accepted")
	}
	lf, err := ParseLong(strings.NewReader(validLong()), "v")
	if err != nil {
		t.Fatal(err)
	}
	badL := *lf
	badL.Outputs = append([]LongOutput{}, lf.Outputs...)
	badL.Outputs[1].Ref = math.NaN()
	if err := WriteLong(&buf, &badL); err == nil {
		t.Error("NaN ref accepted")
	}
	cf, err := ParseConvert(strings.NewReader(validConvert(256)), "v")
	if err != nil {
		t.Fatal(err)
	}
	badC := *cf
	badC.Conversions = []Conversion{{Name: "x", Ranges: []Range{{1, 0}}}}
	if err := WriteConvert(&buf, &badC); err == nil {
		t.Error("range not starting at 0 accepted")
	}
}

func BenchmarkReadDir(b *testing.B) {
	needH200(b)
	for b.Loop() {
		if _, err := ReadDir(h200Dir); err != nil {
			b.Fatal(err)
		}
	}
}
