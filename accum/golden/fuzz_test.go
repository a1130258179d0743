package golden

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// checkParseError checks that a reader's error names the file and a line.
func checkParseError(t *testing.T, err error) {
	t.Helper()
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Name != "fuzz" || pe.Line < 1 || !strings.HasPrefix(err.Error(), "fuzz:") {
		t.Fatalf("error %q (%T) does not name the file and a line", err, err)
	}
}

// roundTrip writes v with write, parses the output with parse and checks that
// the result equals v after clear (which zeroes the line numbers), and that
// writing it again gives the same bytes.
func roundTrip[T any](t *testing.T, v *T, write func(*bytes.Buffer, *T) error, parse func([]byte) (*T, error), clear func(*T)) {
	t.Helper()
	var out1 bytes.Buffer
	if err := write(&out1, v); err != nil {
		t.Fatalf("parsed file does not write: %v", err)
	}
	v2, err := parse(out1.Bytes())
	if err != nil {
		t.Fatalf("written file does not parse: %v\n%.2000s", err, out1.String())
	}
	clear(v)
	clear(v2)
	if !reflect.DeepEqual(v, v2) {
		t.Fatalf("round trip changed the contents:\n got %+v\nwant %+v", v2, v)
	}
	var out2 bytes.Buffer
	if err := write(&out2, v2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out1.Bytes(), out2.Bytes()) {
		t.Fatalf("writing twice differs:\n%q\n%q", out1.String(), out2.String())
	}
}

func FuzzParseRecords(f *testing.F) {
	f.Add([]byte(validRecords))
	f.Add([]byte(validRecordsF16))
	f.Add([]byte(strings.ReplaceAll(validRecords, "\n", "\r\n")))
	f.Add([]byte(RecordsMagic + "\n# L: 1\n#a-format:e5m2\n# record: d = step(a, b, c)\n#\n# model: m\n00\tFF\t00000000\t7f800000"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rf, err := ParseRecords(bytes.NewReader(data), "fuzz")
		if err != nil {
			checkParseError(t, err)
			return
		}
		roundTrip(t, rf,
			func(w *bytes.Buffer, v *RecordFile) error { return WriteRecords(w, v) },
			func(b []byte) (*RecordFile, error) { return ParseRecords(bytes.NewReader(b), "fuzz") },
			func(v *RecordFile) {
				for i := range v.Records {
					v.Records[i].Line = 0
				}
			})
	})
}

func FuzzParseLong(f *testing.F) {
	f.Add([]byte(validLong()))
	f.Add([]byte(strings.Replace(validLong(), "K 2\npscale 2.5\n", "pscale 0x1p-3\nK 2\n", 1)))
	f.Add([]byte(strings.Replace(validLong(), "ref=1\n", "ref=-0\n", 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		lf, err := ParseLong(bytes.NewReader(data), "fuzz")
		if err != nil {
			checkParseError(t, err)
			return
		}
		roundTrip(t, lf,
			func(w *bytes.Buffer, v *LongFile) error { return WriteLong(w, v) },
			func(b []byte) (*LongFile, error) { return ParseLong(bytes.NewReader(b), "fuzz") },
			func(v *LongFile) {
				for i := range v.Outputs {
					v.Outputs[i].Line = 0
				}
			})
	})
}

func FuzzParseConvert(f *testing.F) {
	f.Add([]byte(validConvert(256)))
	f.Add([]byte(ConvertMagic + "\nconversion a\n00000000 00\n7fffffff ff\n# n\nconversion b\n00000000 7F\n"))
	f.Add([]byte(ConvertMagic + "\nconversion c\n00000000 01\n00000001 02\n#\nconversion d\r\n00000000 00\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := ParseConvert(bytes.NewReader(data), "fuzz")
		if err != nil {
			checkParseError(t, err)
			return
		}
		for i := range cf.Conversions {
			c := &cf.Conversions[i]
			for j, r := range c.Ranges {
				if got := c.CodeFor(r.Start); got != r.Code {
					t.Fatalf("CodeFor(%08x) = %02x, want %02x", r.Start, got, r.Code)
				}
				if j > 0 {
					if got := c.CodeFor(r.Start - 1); got != c.Ranges[j-1].Code {
						t.Fatalf("CodeFor(%08x) = %02x, want %02x", r.Start-1, got, c.Ranges[j-1].Code)
					}
				}
			}
		}
		roundTrip(t, cf,
			func(w *bytes.Buffer, v *ConvertFile) error { return WriteConvert(w, v) },
			func(b []byte) (*ConvertFile, error) { return ParseConvert(bytes.NewReader(b), "fuzz") },
			func(*ConvertFile) {})
	})
}
