package golden

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
)

// RecordKind says what the d of a record is, as the "# record:" header of a
// record file states it.
type RecordKind int

// The kinds of record.
const (
	// StepWithC is "d = step(a, b, c)": c enters the tensor-core step as the
	// accumulator.
	StepWithC RecordKind = iota + 1
	// FaddAfterStep is "d = fadd(step(a, b, 0), c)": a step from zero, then
	// one FP32 round-to-nearest-even add of c.
	FaddAfterStep
)

// String returns the header text of the kind: "d = step(a, b, c)" or
// "d = fadd(step(a, b, 0), c)".
func (k RecordKind) String() string {
	switch k {
	case StepWithC:
		return "d = step(a, b, c)"
	case FaddAfterStep:
		return "d = fadd(step(a, b, 0), c)"
	}
	return fmt.Sprintf("RecordKind(%d)", int(k))
}

// Header keys of a record file ("# key: value").
const (
	hdrModel   = "model"
	hdrRecord  = "record"
	hdrAFormat = "a-format"
	hdrL       = "L"
)

// maxL bounds the "# L:" header.
const maxL = 1 << 16

// CodeDigits returns the number of hex digits of one code of an a-format
// ("e4m3", "e5m2": 2; "f16", "bf16": 4), or 0 for an unknown format.
func CodeDigits(format string) int {
	switch format {
	case "e4m3", "e5m2":
		return 2
	case "f16", "bf16":
		return 4
	}
	return 0
}

// RecordFile is a parsed record file.
type RecordFile struct {
	Path    string     // the name given to the reader
	Model   string     // "# model:", e.g. "sm90.wgmma.e4m3.f32"
	Kind    RecordKind // "# record:"
	AFormat string     // "# a-format:": "e4m3", "e5m2", "f16" or "bf16" (also the format of b)
	L       int        // "# L:": elements per record
	Notes   []string   // the other '#' lines, without the '#' and surrounding space, in order
	Records []Record
}

// Record is one data line of a record file.
type Record struct {
	Line int      // line number in the file
	A, B []uint16 // L codes each; element k of A multiplies element k of B
	C, D uint32   // float32 bits
}

// ParseRecords reads a record file from r; name is used in error messages and
// as the Path of the result.
func ParseRecords(r io.Reader, name string) (*RecordFile, error) {
	l := newLines(r, name)
	if err := l.magic(RecordsMagic); err != nil {
		return nil, err
	}
	f := &RecordFile{Path: name}
	var modelLine, kindLine, formatLine, lLine int
	digits := 0
	var slab []uint16
	for l.next() {
		line := l.text
		if len(line) > 0 && line[0] == '#' {
			n := noteText(line)
			key, val, ok := strings.Cut(n, ":")
			if !ok {
				f.Notes = append(f.Notes, n)
				continue
			}
			val = strings.TrimSpace(val)
			var first *int
			switch key {
			case hdrModel:
				first = &modelLine
			case hdrRecord:
				first = &kindLine
			case hdrAFormat:
				first = &formatLine
			case hdrL:
				first = &lLine
			default:
				f.Notes = append(f.Notes, n)
				continue
			}
			if *first != 0 {
				return nil, l.errf("duplicate # %s: header (first on line %d)", key, *first)
			}
			*first = l.line
			switch key {
			case hdrModel:
				if val == "" {
					return nil, l.errf("empty # model: header")
				}
				f.Model = val
			case hdrRecord:
				switch val {
				case StepWithC.String():
					f.Kind = StepWithC
				case FaddAfterStep.String():
					f.Kind = FaddAfterStep
				default:
					return nil, l.errf("unknown # record: %q, want %q or %q", val, StepWithC.String(), FaddAfterStep.String())
				}
			case hdrAFormat:
				digits = CodeDigits(val)
				if digits == 0 {
					return nil, l.errf("unknown # a-format: %q, want e4m3, e5m2, f16 or bf16", val)
				}
				f.AFormat = val
			case hdrL:
				n, ok := decimal([]byte(val))
				if !ok || n < 1 || n > maxL {
					return nil, l.errf("bad # L: %q, want an integer in 1..%d", val, maxL)
				}
				f.L = n
			}
			continue
		}
		if modelLine == 0 || kindLine == 0 || formatLine == 0 || lLine == 0 {
			if len(line) == 0 {
				return nil, l.errf("empty line")
			}
			return nil, l.errf("data line before the required headers (missing %s)",
				missingHeaders(modelLine, kindLine, formatLine, lLine))
		}
		rec, err := parseRecordLine(l, line, f.L, digits, f.AFormat, &slab)
		if err != nil {
			return nil, err
		}
		f.Records = append(f.Records, rec)
	}
	if err := l.finish(); err != nil {
		return nil, err
	}
	if modelLine == 0 || kindLine == 0 || formatLine == 0 || lLine == 0 {
		return nil, l.errAt(l.lastLine(), "missing required header %s", missingHeaders(modelLine, kindLine, formatLine, lLine))
	}
	if len(f.Records) == 0 {
		return nil, l.errAt(l.lastLine(), "no records")
	}
	return f, nil
}

func missingHeaders(model, kind, format, L int) string {
	var m []string
	for _, h := range []struct {
		line int
		key  string
	}{{model, hdrModel}, {kind, hdrRecord}, {format, hdrAFormat}, {L, hdrL}} {
		if h.line == 0 {
			m = append(m, "# "+h.key+":")
		}
	}
	return strings.Join(m, ", ")
}

var tab = []byte{'\t'}

func parseRecordLine(l *lines, line []byte, L, digits int, format string, slab *[]uint16) (Record, error) {
	if len(line) == 0 {
		return Record{}, l.errf("empty line")
	}
	if n := bytes.Count(line, tab) + 1; n != 4 {
		return Record{}, l.errf("%d tab-separated fields, want 4 (a, b, c, d)", n)
	}
	rec := Record{Line: l.line}
	if len(*slab) < 2*L {
		// Codes of several records share one allocation of about 32 KiB.
		*slab = make([]uint16, 2*L*max(1, 16384/(2*L)))
	}
	s := *slab
	rec.A = s[0:L:L]
	rec.B = s[L : 2*L : 2*L]
	*slab = s[2*L:]
	for fi, codes := range [2][]uint16{rec.A, rec.B} {
		i := bytes.IndexByte(line, '\t')
		field := line[:i]
		line = line[i+1:]
		fname := "ab"[fi : fi+1]
		if len(field) != L*digits {
			return Record{}, l.errf("field %s has %d hex digits, want %d (%d %s codes of %d digits)",
				fname, len(field), L*digits, L, format, digits)
		}
		for k := range codes {
			v, ok := hexN(field[k*digits : (k+1)*digits])
			if !ok {
				return Record{}, l.errf("field %s: bad hex at code %d: %q", fname, k, field[k*digits:(k+1)*digits])
			}
			codes[k] = uint16(v)
		}
	}
	i := bytes.IndexByte(line, '\t')
	var ok bool
	if rec.C, ok = hex32(line[:i]); !ok {
		return Record{}, l.errf("field c: %q is not 8 hex digits", shorten(line[:i]))
	}
	if rec.D, ok = hex32(line[i+1:]); !ok {
		return Record{}, l.errf("field d: %q is not 8 hex digits", shorten(line[i+1:]))
	}
	return rec, nil
}

// WriteRecords writes f in the record-file format. It fails, writing
// nothing, if f could not be read back as it is (a missing header, a record
// of the wrong length, a code too wide for the format, a note that would read
// back differently).
func WriteRecords(w io.Writer, f *RecordFile) error {
	if err := checkRecords(f); err != nil {
		return fmt.Errorf("golden: WriteRecords %s: %w", f.Path, err)
	}
	digits := CodeDigits(f.AFormat)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s\n# %s: %s\n# %s: %s\n# %s: %s\n# %s: %d\n", RecordsMagic,
		hdrModel, f.Model, hdrRecord, f.Kind, hdrAFormat, f.AFormat, hdrL, f.L)
	for _, n := range f.Notes {
		bw.WriteString("# ")
		bw.WriteString(n)
		bw.WriteByte('\n')
	}
	buf := make([]byte, 0, 2*f.L*digits+20)
	for i := range f.Records {
		r := &f.Records[i]
		buf = buf[:0]
		for _, c := range r.A {
			buf = appendHex(buf, uint32(c), digits)
		}
		buf = append(buf, '\t')
		for _, c := range r.B {
			buf = appendHex(buf, uint32(c), digits)
		}
		buf = append(buf, '\t')
		buf = appendHex(buf, r.C, 8)
		buf = append(buf, '\t')
		buf = appendHex(buf, r.D, 8)
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return bw.Flush()
}

func checkRecords(f *RecordFile) error {
	if f.Model == "" || strings.TrimSpace(f.Model) != f.Model || strings.Contains(f.Model, "\n") {
		return fmt.Errorf("bad model %q", f.Model)
	}
	if f.Kind != StepWithC && f.Kind != FaddAfterStep {
		return fmt.Errorf("bad kind %v", f.Kind)
	}
	digits := CodeDigits(f.AFormat)
	if digits == 0 {
		return fmt.Errorf("unknown a-format %q", f.AFormat)
	}
	if f.L < 1 || f.L > maxL {
		return fmt.Errorf("L = %d out of 1..%d", f.L, maxL)
	}
	for _, n := range f.Notes {
		if err := checkNote(n, hdrModel, hdrRecord, hdrAFormat, hdrL); err != nil {
			return err
		}
	}
	if len(f.Records) == 0 {
		return fmt.Errorf("no records")
	}
	limit := uint16(1<<(4*digits) - 1)
	for i := range f.Records {
		r := &f.Records[i]
		if len(r.A) != f.L || len(r.B) != f.L {
			return fmt.Errorf("record %d: %d and %d codes, want L = %d", i, len(r.A), len(r.B), f.L)
		}
		for k := 0; k < f.L; k++ {
			if r.A[k] > limit || r.B[k] > limit {
				return fmt.Errorf("record %d: code %d wider than %d hex digits", i, k, digits)
			}
		}
	}
	return nil
}
