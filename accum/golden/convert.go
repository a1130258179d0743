package golden

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ConvertFile is the parsed conversion file.
type ConvertFile struct {
	Path        string       // the name given to the reader
	Conversions []Conversion // the conversion sections, in file order
	Decodes     []DecodeTable
	Notes       []string // the '#' lines after the first, without the '#' and surrounding space, in order
}

// Conversion is one float32 → FP8 conversion: Ranges[i] says that every
// non-negative float32 bit pattern x with Ranges[i].Start ≤ x <
// Ranges[i+1].Start converts to Ranges[i].Code; the last range runs to
// 0x7fffffff. A parsed Conversion has at least one range, the first starting
// at 0, with strictly increasing starts.
type Conversion struct {
	Name   string // e.g. "torch float32 -> float8_e4m3fn (Tensor.to)"
	Ranges []Range
}

// Range is one line of a conversion section: the code of every float32 bit
// pattern from Start up to the next range's Start.
type Range struct {
	Start uint32 // float32 bits, at most 0x7fffffff
	Code  uint8
}

// CodeFor returns the code that the float32 bit pattern bits converts to,
// by binary search. For a negative pattern (sign bit set) it returns the code
// of the magnitude with bit 7 set, which the capture checked for the torch
// casts only. It returns 0 if c has no ranges.
func (c *Conversion) CodeFor(bits uint32) uint8 {
	mag := bits &^ (1 << 31)
	i := sort.Search(len(c.Ranges), func(i int) bool { return c.Ranges[i].Start > mag }) - 1
	if i < 0 {
		return 0
	}
	return c.Ranges[i].Code | uint8(bits>>31)<<7
}

// DecodeTable is an FP8 → float32 decode table: Bits[code] is the float32
// bits of code.
type DecodeTable struct {
	Name string // e.g. "e4m3fn"
	Bits [256]uint32
}

// Conversion returns the conversion section named name, or nil.
func (f *ConvertFile) Conversion(name string) *Conversion {
	for i := range f.Conversions {
		if f.Conversions[i].Name == name {
			return &f.Conversions[i]
		}
	}
	return nil
}

// Decode returns the decode section named name, or nil.
func (f *ConvertFile) Decode(name string) *DecodeTable {
	for i := range f.Decodes {
		if f.Decodes[i].Name == name {
			return &f.Decodes[i]
		}
	}
	return nil
}

// ParseConvert reads the conversion file from r; name is used in error
// messages and as the Path of the result. Each "conversion NAME" section
// must have at least one "START CODE" line, starts strictly increasing from
// 00000000 and at most 7fffffff; each "decode NAME" section exactly 256
// "CODE F32BITS" lines, codes 00..ff in order. Section names must be unique
// within their kind, and the file must have at least one section.
func ParseConvert(r io.Reader, name string) (*ConvertFile, error) {
	l := newLines(r, name)
	if err := l.magic(ConvertMagic); err != nil {
		return nil, err
	}
	f := &ConvertFile{Path: name}
	const (
		none = iota
		inConv
		inDecode
	)
	state := none
	sectionLine := 0 // line of the current section's header
	decN := 0        // entries of the current decode section
	convSeen := map[string]int{}
	decSeen := map[string]int{}
	// endSection checks that the current section is complete.
	endSection := func() error {
		switch state {
		case inConv:
			c := &f.Conversions[len(f.Conversions)-1]
			if len(c.Ranges) == 0 {
				return l.errAt(sectionLine, "conversion section %q has no ranges", c.Name)
			}
		case inDecode:
			if decN != 256 {
				return l.errAt(sectionLine, "decode section %q has %d entries, want 256", f.Decodes[len(f.Decodes)-1].Name, decN)
			}
		}
		return nil
	}
	for l.next() {
		line := l.text
		if len(line) > 0 && line[0] == '#' {
			f.Notes = append(f.Notes, noteText(line))
			continue
		}
		if len(line) == 0 {
			return nil, l.errf("empty line")
		}
		kw, rest, _ := bytes.Cut(line, []byte{' '})
		if k := string(kw); k == "conversion" || k == "decode" {
			if err := endSection(); err != nil {
				return nil, err
			}
			sec := strings.TrimSpace(string(rest))
			if sec == "" {
				return nil, l.errf("%s section without a name", k)
			}
			seen := convSeen
			if k == "decode" {
				seen = decSeen
			}
			if first, dup := seen[sec]; dup {
				return nil, l.errf("duplicate %s section %q (first on line %d)", k, sec, first)
			}
			seen[sec] = l.line
			sectionLine = l.line
			if k == "conversion" {
				state = inConv
				f.Conversions = append(f.Conversions, Conversion{Name: sec})
			} else {
				state, decN = inDecode, 0
				f.Decodes = append(f.Decodes, DecodeTable{Name: sec})
			}
			continue
		}
		if bytes.Count(line, []byte{' '}) != 1 {
			return nil, l.errf("unknown kind of line %q (want #, conversion NAME, decode NAME or two hex fields)", shorten(line))
		}
		switch state {
		case none:
			return nil, l.errf("data line before the first conversion or decode section")
		case inConv:
			start, ok := hex32(kw)
			if !ok {
				return nil, l.errf("range start %q is not 8 hex digits", shorten(kw))
			}
			code, ok := hexCode(rest)
			if !ok {
				return nil, l.errf("range code %q is not 2 hex digits", shorten(rest))
			}
			c := &f.Conversions[len(f.Conversions)-1]
			if start > 0x7fffffff {
				return nil, l.errf("range start %08x is not a non-negative float32 bit pattern", start)
			}
			if n := len(c.Ranges); n == 0 && start != 0 {
				return nil, l.errf("first range starts at %08x, want 00000000", start)
			} else if n > 0 && start <= c.Ranges[n-1].Start {
				return nil, l.errf("range start %08x not above the previous start %08x", start, c.Ranges[n-1].Start)
			}
			c.Ranges = append(c.Ranges, Range{Start: start, Code: code})
		case inDecode:
			code, ok := hexCode(kw)
			if !ok {
				return nil, l.errf("decode code %q is not 2 hex digits", shorten(kw))
			}
			bits, ok := hex32(rest)
			if !ok {
				return nil, l.errf("decode bits %q are not 8 hex digits", shorten(rest))
			}
			d := &f.Decodes[len(f.Decodes)-1]
			if decN >= 256 {
				return nil, l.errf("decode section %q already has 256 entries", d.Name)
			}
			if int(code) != decN {
				return nil, l.errf("decode code %02x, want %02x (codes 00..ff in order)", code, decN)
			}
			d.Bits[code] = bits
			decN++
		}
	}
	if err := l.finish(); err != nil {
		return nil, err
	}
	if err := endSection(); err != nil {
		return nil, err
	}
	if state == none {
		return nil, l.errAt(l.lastLine(), "no conversion or decode section")
	}
	return f, nil
}

func hexCode(b []byte) (uint8, bool) {
	if len(b) != 2 {
		return 0, false
	}
	v, ok := hexN(b)
	return uint8(v), ok
}

// WriteConvert writes f in the conversion-file format: the notes, the
// conversion sections, then the decode sections. It fails, writing nothing,
// if f could not be read back as it is.
func WriteConvert(w io.Writer, f *ConvertFile) error {
	if err := checkConvert(f); err != nil {
		return fmt.Errorf("golden: WriteConvert %s: %w", f.Path, err)
	}
	bw := bufio.NewWriter(w)
	bw.WriteString(ConvertMagic + "\n")
	for _, n := range f.Notes {
		bw.WriteString("# ")
		bw.WriteString(n)
		bw.WriteByte('\n')
	}
	var buf []byte
	for _, c := range f.Conversions {
		bw.WriteString("conversion " + c.Name + "\n")
		for _, r := range c.Ranges {
			buf = appendHex(buf[:0], r.Start, 8)
			buf = append(buf, ' ')
			buf = appendHex(buf, uint32(r.Code), 2)
			buf = append(buf, '\n')
			bw.Write(buf)
		}
	}
	for _, d := range f.Decodes {
		bw.WriteString("decode " + d.Name + "\n")
		for code, bits := range d.Bits {
			buf = appendHex(buf[:0], uint32(code), 2)
			buf = append(buf, ' ')
			buf = appendHex(buf, bits, 8)
			buf = append(buf, '\n')
			bw.Write(buf)
		}
	}
	return bw.Flush()
}

func checkConvert(f *ConvertFile) error {
	for _, n := range f.Notes {
		if err := checkNote(n); err != nil {
			return err
		}
	}
	if len(f.Conversions)+len(f.Decodes) == 0 {
		return fmt.Errorf("no sections")
	}
	checkName := func(kind, name string, seen map[string]bool) error {
		if name == "" || strings.TrimSpace(name) != name || strings.Contains(name, "\n") || seen[name] {
			return fmt.Errorf("bad or duplicate %s name %q", kind, name)
		}
		seen[name] = true
		return nil
	}
	seen := map[string]bool{}
	for _, c := range f.Conversions {
		if err := checkName("conversion", c.Name, seen); err != nil {
			return err
		}
		if len(c.Ranges) == 0 || c.Ranges[0].Start != 0 {
			return fmt.Errorf("conversion %q: no range starting at 0", c.Name)
		}
		for i, r := range c.Ranges {
			if r.Start > 0x7fffffff || (i > 0 && r.Start <= c.Ranges[i-1].Start) {
				return fmt.Errorf("conversion %q: range %d start %08x out of order or negative", c.Name, i, r.Start)
			}
		}
	}
	seen = map[string]bool{}
	for _, d := range f.Decodes {
		if err := checkName("decode", d.Name, seen); err != nil {
			return err
		}
	}
	return nil
}
