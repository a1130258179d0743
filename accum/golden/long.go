package golden

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// LongRows is the number of rows of A and of columns of B in a
// long-contraction file (indices 0..7).
const LongRows = 8

// maxK bounds the K line of a long-contraction file (a row must fit in a
// line of at most MaxLineBytes).
const maxK = MaxLineBytes/2 - 16

// The keys of a d line, in order.
var longKeys = [5]string{"every32=", "every128=", "cublas_fast=", "cublas=", "ref="}

// LongFile is a parsed long-contraction file.
type LongFile struct {
	Path   string  // the name given to the reader
	Model  string  // "# model:", e.g. "sm90.wgmma.e4m3.f32"
	K      int     // the contraction length
	PScale float64 // the scale P was multiplied by before the e4m3 cast
	// A holds the LongRows rows of A and B the LongRows columns of B, each
	// K e4m3 codes, indexed by I and J of the d lines.
	A, B    [][]uint8
	Outputs []LongOutput // the d lines, in file order
	Notes   []string     // the other '#' lines, without the '#' and surrounding space, in order
}

// LongOutput is one d line of a long-contraction file: the outputs of the
// kernels for row I of A times column J of B.
type LongOutput struct {
	Line, I, J int
	// Every32 (wgmma k32 steps promoted to FP32 every 32 elements), Every128
	// (promoted every 128), CublasFast and Cublas (torch._scaled_mm with
	// use_fast_accum true / false) are float32 bits.
	Every32, Every128, CublasFast, Cublas uint32
	Ref                                   float64 // the exact dot product
}

// ParseLong reads a long-contraction file from r; name is used in error
// messages and as the Path of the result. The file must give "# model:", K
// and pscale before any a, b or d line, each of the LongRows rows of A and
// columns of B exactly once, and at least one d line, each (I, J) at most once
// and after its row and column.
func ParseLong(r io.Reader, name string) (*LongFile, error) {
	p := &longParser{l: newLines(r, name)}
	if err := p.l.magic(LongMagic); err != nil {
		return nil, err
	}
	p.f = &LongFile{Path: name, A: make([][]uint8, LongRows), B: make([][]uint8, LongRows)}
	for p.l.next() {
		if err := p.line(p.l.text); err != nil {
			return nil, err
		}
	}
	if err := p.l.finish(); err != nil {
		return nil, err
	}
	return p.end()
}

// longParser is the state of ParseLong: the file so far and the line on
// which each header, row and output was given (0: not yet).
type longParser struct {
	l                       *lines
	f                       *LongFile
	modelLine, kLine, pLine int
	rowLine                 [2][LongRows]int
	outLine                 [LongRows][LongRows]int
}

// line parses one line of the file.
func (p *longParser) line(line []byte) error {
	l := p.l
	if len(line) > 0 && line[0] == '#' {
		return p.header(noteText(line))
	}
	if len(line) == 0 {
		return l.errf("empty line")
	}
	fields := bytes.Split(line, []byte{' '})
	kw := string(fields[0])
	switch kw {
	case "K", "pscale":
		return p.scalar(kw, fields)
	case "a", "b", "d":
	default:
		return l.errf("unknown kind of line %q (want #, K, pscale, a, b or d)", shorten(fields[0]))
	}
	if p.modelLine == 0 || p.kLine == 0 || p.pLine == 0 {
		var m []string
		if p.modelLine == 0 {
			m = append(m, "# model:")
		}
		if p.kLine == 0 {
			m = append(m, "K")
		}
		if p.pLine == 0 {
			m = append(m, "pscale")
		}
		return l.errf("%s line before the required headers (missing %s)", kw, strings.Join(m, ", "))
	}
	if kw == "a" || kw == "b" {
		return p.row(kw, fields)
	}
	return p.output(fields)
}

// header reads a # line: the model header, or a note.
func (p *longParser) header(n string) error {
	key, val, ok := strings.Cut(n, ":")
	if !ok || key != hdrModel {
		p.f.Notes = append(p.f.Notes, n)
		return nil
	}
	if p.modelLine != 0 {
		return p.l.errf("duplicate # model: header (first on line %d)", p.modelLine)
	}
	p.modelLine = p.l.line
	if p.f.Model = strings.TrimSpace(val); p.f.Model == "" {
		return p.l.errf("empty # model: header")
	}
	return nil
}

// scalar reads a K or pscale line.
func (p *longParser) scalar(kw string, fields [][]byte) error {
	l := p.l
	if len(fields) != 2 {
		return l.errf("%s line has %d fields, want 2", kw, len(fields))
	}
	first := &p.kLine
	if kw == "pscale" {
		first = &p.pLine
	}
	if *first != 0 {
		return l.errf("duplicate %s line (first on line %d)", kw, *first)
	}
	*first = l.line
	if kw == "K" {
		k, ok := decimal(fields[1])
		if !ok || k < 1 || k > maxK {
			return l.errf("bad K %q, want an integer in 1..%d", shorten(fields[1]), maxK)
		}
		p.f.K = k
		return nil
	}
	v, err := strconv.ParseFloat(string(fields[1]), 64)
	if err != nil || !finite(v) || v <= 0 {
		return l.errf("bad pscale %q, want a finite positive number", shorten(fields[1]))
	}
	p.f.PScale = v
	return nil
}

// row reads an a or b line: INDEX and K e4m3 codes in hex.
func (p *longParser) row(kw string, fields [][]byte) error {
	l, f := p.l, p.f
	if len(fields) != 3 {
		return l.errf("%s line has %d fields, want 3 (%s INDEX CODES)", kw, len(fields), kw)
	}
	ab := 0
	rows := f.A
	if kw == "b" {
		ab, rows = 1, f.B
	}
	i, err := longIndex(l, kw, fields[1])
	if err != nil {
		return err
	}
	if p.rowLine[ab][i] != 0 {
		return l.errf("duplicate %s %d (first on line %d)", kw, i, p.rowLine[ab][i])
	}
	p.rowLine[ab][i] = l.line
	hex := fields[2]
	if len(hex) != 2*f.K {
		return l.errf("%s %d has %d hex digits, want %d (K = %d e4m3 codes)", kw, i, len(hex), 2*f.K, f.K)
	}
	row := make([]uint8, f.K)
	for k := range row {
		hi, lo := hexVal[hex[2*k]], hexVal[hex[2*k+1]]
		if hi == 0xff || lo == 0xff {
			return l.errf("%s %d: bad hex at code %d: %q", kw, i, k, hex[2*k:2*k+2])
		}
		row[k] = hi<<4 | lo
	}
	rows[i] = row
	return nil
}

// output reads a d line: d I J every32=X every128=X cublas_fast=X cublas=X ref=F.
func (p *longParser) output(fields [][]byte) error {
	l := p.l
	if len(fields) != 8 {
		return l.errf("d line has %d fields, want 8 (d I J every32= every128= cublas_fast= cublas= ref=)", len(fields))
	}
	o := LongOutput{Line: l.line}
	var err error
	if o.I, err = longIndex(l, "d row", fields[1]); err != nil {
		return err
	}
	if o.J, err = longIndex(l, "d column", fields[2]); err != nil {
		return err
	}
	if p.rowLine[0][o.I] == 0 {
		return l.errf("d %d %d: row a %d not given before", o.I, o.J, o.I)
	}
	if p.rowLine[1][o.J] == 0 {
		return l.errf("d %d %d: column b %d not given before", o.I, o.J, o.J)
	}
	if p.outLine[o.I][o.J] != 0 {
		return l.errf("duplicate d %d %d (first on line %d)", o.I, o.J, p.outLine[o.I][o.J])
	}
	p.outLine[o.I][o.J] = l.line
	var vals [4]uint32
	for x, key := range longKeys {
		fld := fields[3+x]
		if !bytes.HasPrefix(fld, []byte(key)) {
			return l.errf("d field %d is %q, want %s...", 4+x, shorten(fld), key)
		}
		v := fld[len(key):]
		if x == 4 {
			ref, err := strconv.ParseFloat(string(v), 64)
			if err != nil || !finite(ref) {
				return l.errf("bad ref %q, want a finite number", shorten(v))
			}
			o.Ref = ref
			break
		}
		var ok bool
		if vals[x], ok = hex32(v); !ok {
			return l.errf("%s%q is not 8 hex digits", key, shorten(v))
		}
	}
	o.Every32, o.Every128, o.CublasFast, o.Cublas = vals[0], vals[1], vals[2], vals[3]
	p.f.Outputs = append(p.f.Outputs, o)
	return nil
}

// end checks that nothing required is missing and returns the file.
func (p *longParser) end() (*LongFile, error) {
	l := p.l
	end := l.lastLine()
	switch {
	case p.modelLine == 0:
		return nil, l.errAt(end, "missing required header # model:")
	case p.kLine == 0:
		return nil, l.errAt(end, "missing K line")
	case p.pLine == 0:
		return nil, l.errAt(end, "missing pscale line")
	}
	for ab, kw := range []string{"a", "b"} {
		for i := range LongRows {
			if p.rowLine[ab][i] == 0 {
				return nil, l.errAt(end, "missing %s %d line", kw, i)
			}
		}
	}
	if len(p.f.Outputs) == 0 {
		return nil, l.errAt(end, "no d lines")
	}
	return p.f, nil
}

func longIndex(l *lines, what string, b []byte) (int, error) {
	i, ok := decimal(b)
	if !ok || i >= LongRows {
		return 0, l.errf("%s index %q out of 0..%d", what, shorten(b), LongRows-1)
	}
	return i, nil
}

// WriteLong writes f in the long-contraction format: the headers and notes,
// K, pscale, the rows of A, the columns of B and the d lines in order. It
// fails, writing nothing, if f could not be read back as it is.
func WriteLong(w io.Writer, f *LongFile) error {
	if err := checkLong(f); err != nil {
		return fmt.Errorf("golden: WriteLong %s: %w", f.Path, err)
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s\n# %s: %s\n", LongMagic, hdrModel, f.Model)
	for _, n := range f.Notes {
		bw.WriteString("# ")
		bw.WriteString(n)
		bw.WriteByte('\n')
	}
	fmt.Fprintf(bw, "K %d\npscale %s\n", f.K, strconv.FormatFloat(f.PScale, 'g', -1, 64))
	buf := make([]byte, 0, 2*f.K+16)
	for ab, rows := range [2][][]uint8{f.A, f.B} {
		for i, row := range rows {
			buf = append(buf[:0], "ab"[ab], ' ', byte('0'+i), ' ')
			for _, c := range row {
				buf = append(buf, hexDigits[c>>4], hexDigits[c&0xf])
			}
			buf = append(buf, '\n')
			bw.Write(buf)
		}
	}
	for _, o := range f.Outputs {
		buf = fmt.Appendf(buf[:0], "d %d %d ", o.I, o.J)
		for x, v := range [4]uint32{o.Every32, o.Every128, o.CublasFast, o.Cublas} {
			buf = append(buf, longKeys[x]...)
			buf = appendHex(buf, v, 8)
			buf = append(buf, ' ')
		}
		buf = append(buf, longKeys[4]...)
		buf = strconv.AppendFloat(buf, o.Ref, 'g', 17, 64)
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	return bw.Flush()
}

func checkLong(f *LongFile) error {
	if f.Model == "" || strings.TrimSpace(f.Model) != f.Model || strings.Contains(f.Model, "\n") {
		return fmt.Errorf("bad model %q", f.Model)
	}
	if f.K < 1 || f.K > maxK {
		return fmt.Errorf("K = %d out of 1..%d", f.K, maxK)
	}
	if !finite(f.PScale) || f.PScale <= 0 {
		return fmt.Errorf("pscale %v not finite and positive", f.PScale)
	}
	for _, n := range f.Notes {
		if err := checkNote(n, hdrModel); err != nil {
			return err
		}
	}
	if len(f.A) != LongRows || len(f.B) != LongRows {
		return fmt.Errorf("%d rows and %d columns, want %d", len(f.A), len(f.B), LongRows)
	}
	for i := range LongRows {
		if len(f.A[i]) != f.K || len(f.B[i]) != f.K {
			return fmt.Errorf("row or column %d: %d and %d codes, want K = %d", i, len(f.A[i]), len(f.B[i]), f.K)
		}
	}
	if len(f.Outputs) == 0 {
		return fmt.Errorf("no outputs")
	}
	var seen [LongRows][LongRows]bool
	for x, o := range f.Outputs {
		if o.I < 0 || o.I >= LongRows || o.J < 0 || o.J >= LongRows || seen[o.I][o.J] {
			return fmt.Errorf("output %d: bad or duplicate index (%d, %d)", x, o.I, o.J)
		}
		seen[o.I][o.J] = true
		if !finite(o.Ref) {
			return fmt.Errorf("output %d: ref %v not finite", x, o.Ref)
		}
	}
	return nil
}
