package golden

import (
	"bytes"
	"fmt"
	"io"
	"strings"
)

// PeerMagic is the first line of a peer-record file: outputs of a peer
// model (MMA-Sim, ../shared/golden/mmasim/README.md), not of hardware.
const PeerMagic = "# fp8lab peer records v1"

// Limits of the peer reader: a file asking for more is an error naming the
// limit, so that reading one costs bounded memory.
const (
	// MaxPeerK bounds the "# k:" header (elements per record).
	MaxPeerK = 256
	// MaxPeerCodes bounds the operand codes of a whole file (a and b of
	// every record together): 8 Mi codes, 64 MiB.
	MaxPeerCodes = 8 << 20
)

// Header keys of a peer-record file ("# key: value", each at most once).
const (
	peerSource      = "source"
	peerInstruction = "instruction"
	peerArch        = "arch"
	peerAFormat     = "a-format"
	peerBFormat     = "b-format"
	peerCFormat     = "c-format"
	peerDFormat     = "d-format"
	peerK           = "k"
	peerScaleFormat = "scale-format"
	peerScaleBlock  = "scale-block"
	peerNonfinite   = "nonfinite"
	peerEminSens    = "e2m1-emin-sensitive"
)

var peerRequired = []string{peerSource, peerInstruction, peerArch, peerAFormat, peerBFormat, peerCFormat, peerDFormat, peerK, peerNonfinite}

// PeerFile is a parsed peer-record file.
type PeerFile struct {
	Path        string
	Source      string // "# source:", the peer and the class that produced d
	Instruction string // "# instruction:", the PTX or AMD ISA instruction
	Arch        string // "# arch:": sm_100a, sm_120a, sm_90, sm_80, CDNA1, CDNA2, CDNA3
	AFormat     string // "# a-format:" (format names: PeerCodeDigits)
	BFormat     string
	CFormat     string // f16, f32 or f64
	DFormat     string
	K           int    // "# k:": elements per record
	ScaleFormat string // "# scale-format:": ue8m0 or ue4m3; "" for unscaled instructions
	ScaleBlock  int    // "# scale-block:": elements per scale factor; 0 when unscaled
	// Nonfinite holds the 1-based numbers of the records whose c or d is
	// not finite ("# nonfinite:").
	Nonfinite []int
	// EminSensitive holds the 1-based numbers listed by
	// "# e2m1-emin-sensitive:" (records whose d depends on the exponent
	// MMA-Sim's shim reads for the e2m1 subnormal 0.5); HasEminSensitive
	// says whether the header was present.
	EminSensitive    []int
	HasEminSensitive bool
	Notes            []string // the other '#' lines, without '#' and surrounding space
	Records          []PeerRecord
}

// PeerRecord is one data line: d = D[i][j] of one instruction.
type PeerRecord struct {
	Line   int      // line number in the file
	A, B   []uint64 // K codes each (element 0 first)
	SA, SB []uint8  // K/ScaleBlock scale codes each (nil when unscaled)
	C, D   uint64   // bits of c (CFormat) and d (DFormat)
}

// Scaled reports whether the records carry block scales.
func (f *PeerFile) Scaled() bool { return f.ScaleFormat != "" }

// PeerCodeDigits returns the hex digits of one code of a peer-file format,
// or 0 for an unknown format: 2 for e4m3, e5m2, e2m1 (one 4-bit code per
// two digits), e4m3fnuz, e5m2fnuz, ue8m0 and ue4m3; 4 for f16 and bf16; 8
// for tf32 and f32; 16 for f64.
func PeerCodeDigits(format string) int {
	switch format {
	case "e4m3", "e5m2", "e2m1", "e4m3fnuz", "e5m2fnuz", "ue8m0", "ue4m3":
		return 2
	case "f16", "bf16":
		return 4
	case "tf32", "f32":
		return 8
	case "f64":
		return 16
	}
	return 0
}

// peerCodeMax is the largest code of a format (e2m1 codes use the low 4 bits
// of their two digits, ue4m3 codes the low 7).
func peerCodeMax(format string) uint64 {
	switch format {
	case "e2m1":
		return 0x0f
	case "ue4m3":
		return 0x7f
	}
	d := PeerCodeDigits(format)
	if d >= 16 {
		return ^uint64(0)
	}
	return 1<<(4*uint(d)) - 1
}

// ParsePeer reads a peer-record file from r (already decompressed); name is
// used in error messages and as the Path of the result. Every malformed line
// is a [*ParseError] "name:LINE: what is wrong". The file may not hold more
// than [MaxPeerCodes] operand codes nor declare k > [MaxPeerK].
func ParsePeer(r io.Reader, name string) (*PeerFile, error) {
	l := newLines(r, name)
	if err := l.magic(PeerMagic); err != nil {
		return nil, err
	}
	f := &PeerFile{Path: name}
	seen := map[string]int{}
	var ad, bd, cd, dd, sd int
	nonfiniteCount, eminCount := -1, -1
	var slab []uint64
	codes := 0
	for l.next() {
		line := l.text
		if len(line) > 0 && line[0] == '#' {
			n := noteText(line)
			key, val, ok := strings.Cut(n, ":")
			if !ok || !isPeerHeader(key) {
				f.Notes = append(f.Notes, n)
				continue
			}
			if first := seen[key]; first != 0 {
				return nil, l.errf("duplicate # %s: header (first on line %d)", key, first)
			}
			if len(f.Records) > 0 {
				return nil, l.errf("# %s: header after the first record", key)
			}
			seen[key] = l.line
			val = strings.TrimSpace(val)
			if val == "" {
				return nil, l.errf("empty # %s: header", key)
			}
			switch key {
			case peerSource:
				f.Source = val
			case peerInstruction:
				f.Instruction = val
			case peerArch:
				f.Arch = val
			case peerAFormat, peerBFormat, peerCFormat, peerDFormat, peerScaleFormat:
				d := PeerCodeDigits(val)
				if d == 0 {
					return nil, l.errf("unknown # %s: %q", key, val)
				}
				switch key {
				case peerAFormat:
					f.AFormat, ad = val, d
				case peerBFormat:
					f.BFormat, bd = val, d
				case peerCFormat:
					f.CFormat, cd = val, d
				case peerDFormat:
					f.DFormat, dd = val, d
				case peerScaleFormat:
					if val != "ue8m0" && val != "ue4m3" {
						return nil, l.errf("# scale-format: %q, want ue8m0 or ue4m3", val)
					}
					f.ScaleFormat, sd = val, d
				}
				if (key == peerCFormat || key == peerDFormat) && val != "f16" && val != "f32" && val != "f64" {
					return nil, l.errf("# %s: %q, want f16, f32 or f64", key, val)
				}
			case peerK, peerScaleBlock:
				n, ok := decimal([]byte(val))
				if !ok || n < 1 || n > MaxPeerK {
					return nil, l.errf("bad # %s: %q, want an integer in 1..%d", key, val, MaxPeerK)
				}
				if key == peerK {
					f.K = n
				} else {
					f.ScaleBlock = n
				}
			case peerNonfinite, peerEminSens:
				list, count, err := parseRecordList(val)
				if err != nil {
					return nil, l.errf("# %s: %v", key, err)
				}
				if key == peerNonfinite {
					f.Nonfinite, nonfiniteCount = list, count
				} else {
					f.EminSensitive, eminCount, f.HasEminSensitive = list, count, true
				}
			}
			continue
		}
		if len(f.Records) == 0 {
			if len(line) == 0 {
				return nil, l.errf("empty line")
			}
			if err := f.checkHeaders(l, seen); err != nil {
				return nil, err
			}
		}
		codes += 2 * f.K
		if codes > MaxPeerCodes {
			return nil, l.errf("more than %d operand codes in one file (the reader's limit, MaxPeerCodes)", MaxPeerCodes)
		}
		rec, err := f.parseLine(l, line, ad, bd, cd, dd, sd, &slab)
		if err != nil {
			return nil, err
		}
		f.Records = append(f.Records, rec)
	}
	if err := l.finish(); err != nil {
		return nil, err
	}
	if len(f.Records) == 0 {
		if err := f.checkHeaders(l, seen); err != nil {
			return nil, err
		}
		return nil, l.errAt(l.lastLine(), "no records")
	}
	n := len(f.Records)
	for _, c := range []struct {
		key   string
		list  []int
		count int
	}{{peerNonfinite, f.Nonfinite, nonfiniteCount}, {peerEminSens, f.EminSensitive, eminCount}} {
		if c.count < 0 {
			continue
		}
		if len(c.list) > 0 && c.list[len(c.list)-1] > n {
			return nil, l.errAt(seen[c.key], "# %s: record %d, but the file has %d records", c.key, c.list[len(c.list)-1], n)
		}
	}
	return f, nil
}

func isPeerHeader(key string) bool {
	switch key {
	case peerSource, peerInstruction, peerArch, peerAFormat, peerBFormat, peerCFormat, peerDFormat,
		peerK, peerScaleFormat, peerScaleBlock, peerNonfinite, peerEminSens:
		return true
	}
	return false
}

// checkHeaders checks, at the first record, that the required headers are
// there and agree with each other.
func (f *PeerFile) checkHeaders(l *lines, seen map[string]int) error {
	var missing []string
	for _, k := range peerRequired {
		if seen[k] == 0 {
			missing = append(missing, "# "+k+":")
		}
	}
	if len(missing) > 0 {
		return l.errf("data line before the required headers (missing %s)", strings.Join(missing, ", "))
	}
	if f.CFormat != f.DFormat {
		return l.errAt(seen[peerDFormat], "# d-format: %s differs from # c-format: %s", f.DFormat, f.CFormat)
	}
	if (seen[peerScaleFormat] == 0) != (seen[peerScaleBlock] == 0) {
		return l.errf("# scale-format: and # scale-block: must come together")
	}
	if f.ScaleBlock > 0 && f.K%f.ScaleBlock != 0 {
		return l.errAt(seen[peerScaleBlock], "# scale-block: %d does not divide # k: %d", f.ScaleBlock, f.K)
	}
	return nil
}

// parseRecordList reads "N records a,b-c,..." or "0" into sorted record
// numbers; count is N.
func parseRecordList(val string) ([]int, int, error) {
	if val == "0" {
		return nil, 0, nil
	}
	num, rest, ok := strings.Cut(val, " records ")
	if !ok {
		num, rest, ok = strings.Cut(val, " record ")
	}
	count, okN := decimal([]byte(num))
	if !ok || !okN {
		return nil, 0, fmt.Errorf("%q: want \"0\" or \"N records a,b-c,...\"", shorten([]byte(val)))
	}
	var list []int
	for _, part := range strings.Split(rest, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, okA := decimal([]byte(lo))
		b := a
		okB := true
		if isRange {
			b, okB = decimal([]byte(hi))
		}
		if !okA || !okB || a < 1 || b < a {
			return nil, 0, fmt.Errorf("bad record number or range %q", shorten([]byte(part)))
		}
		if len(list) > 0 && a <= list[len(list)-1] {
			return nil, 0, fmt.Errorf("record numbers not increasing at %q", shorten([]byte(part)))
		}
		if len(list)+(b-a+1) > count {
			return nil, 0, fmt.Errorf("more record numbers than the count %d", count)
		}
		for x := a; x <= b; x++ {
			list = append(list, x)
		}
	}
	if len(list) != count {
		return nil, 0, fmt.Errorf("%d record numbers listed, the count says %d", len(list), count)
	}
	return list, count, nil
}

func (f *PeerFile) parseLine(l *lines, line []byte, ad, bd, cd, dd, sd int, slab *[]uint64) (PeerRecord, error) {
	if len(line) == 0 {
		return PeerRecord{}, l.errf("empty line")
	}
	want := 4
	if f.Scaled() {
		want = 6
	}
	fields := bytes.Split(line, tab)
	if len(fields) != want {
		names := "a, b, c, d"
		if f.Scaled() {
			names = "a, b, scale_a, scale_b, c, d"
		}
		return PeerRecord{}, l.errf("%d tab-separated fields, want %d (%s)", len(fields), want, names)
	}
	K := f.K
	if len(*slab) < 2*K {
		*slab = make([]uint64, 2*K*max(1, 8192/(2*K)))
	}
	s := *slab
	rec := PeerRecord{Line: l.line, A: s[0:K:K], B: s[K : 2*K : 2*K]}
	*slab = s[2*K:]
	parse := func(name string, field []byte, out []uint64, digits int, format string) error {
		if len(field) != len(out)*digits {
			return l.errf("field %s has %d hex digits, want %d (%d %s codes of %d digits)", name, len(field), len(out)*digits, len(out), format, digits)
		}
		top := peerCodeMax(format)
		for k := range out {
			v, ok := hex64(field[k*digits : (k+1)*digits])
			if !ok {
				return l.errf("field %s: bad hex at code %d: %q", name, k, field[k*digits:(k+1)*digits])
			}
			if v > top {
				return l.errf("field %s: code %d = %x is not a %s code (largest %x)", name, k, v, format, top)
			}
			out[k] = v
		}
		return nil
	}
	if err := parse("a", fields[0], rec.A, ad, f.AFormat); err != nil {
		return rec, err
	}
	if err := parse("b", fields[1], rec.B, bd, f.BFormat); err != nil {
		return rec, err
	}
	rest := fields[2:]
	if f.Scaled() {
		n := K / f.ScaleBlock
		var sa, sb [MaxPeerK]uint64
		if err := parse("scale_a", rest[0], sa[:n], sd, f.ScaleFormat); err != nil {
			return rec, err
		}
		if err := parse("scale_b", rest[1], sb[:n], sd, f.ScaleFormat); err != nil {
			return rec, err
		}
		rec.SA, rec.SB = make([]uint8, n), make([]uint8, n)
		for i := 0; i < n; i++ {
			rec.SA[i], rec.SB[i] = uint8(sa[i]), uint8(sb[i])
		}
		rest = rest[2:]
	}
	var c, d [1]uint64
	if err := parse("c", rest[0], c[:], cd, f.CFormat); err != nil {
		return rec, err
	}
	if err := parse("d", rest[1], d[:], dd, f.DFormat); err != nil {
		return rec, err
	}
	rec.C, rec.D = c[0], d[0]
	return rec, nil
}

// hex64 parses b as exactly len(b) ≤ 16 hex digits.
func hex64(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := hexVal[c]
		if d == 0xff {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}
