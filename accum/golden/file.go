package golden

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The first line of each kind of file.
const (
	// RecordsMagic is the first line of a record file.
	RecordsMagic = "# fp8lab golden records v1"
	// LongMagic is the first line of a long-contraction file.
	LongMagic = "# fp8lab golden long contraction v1"
	// ConvertMagic is the first line of the conversion file.
	ConvertMagic = "# fp8lab golden fp8 conversions v1"
)

// MaxLineBytes is the longest line the readers accept (4 MiB: a long
// contraction row of up to about two million e4m3 codes).
const MaxLineBytes = 4 << 20

// ParseError is the error of every reader for malformed input. Its message is
// "Name:Line: Msg".
type ParseError struct {
	Name string // the file name given to the reader (or the path)
	Line int    // 1-based line number
	Msg  string // what is wrong
	Err  error  // the underlying error, if any (a read error)
}

// Error returns "Name:Line: Msg".
func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.Name, e.Line, e.Msg)
}

// Unwrap returns the underlying error, if any.
func (e *ParseError) Unwrap() error { return e.Err }

// FileKind says which of the three kinds of file a [File] holds.
type FileKind int

// The kinds of file.
const (
	KindRecords FileKind = iota + 1 // a record file: [File.Records] is set
	KindLong                        // a long-contraction file: [File.Long] is set
	KindConvert                     // the conversion file: [File.Convert] is set
	KindPeer                        // a peer-record file: [File.Peer] is set
)

// String returns "records", "long" or "convert".
func (k FileKind) String() string {
	switch k {
	case KindRecords:
		return "records"
	case KindLong:
		return "long"
	case KindConvert:
		return "convert"
	case KindPeer:
		return "peer"
	}
	return fmt.Sprintf("FileKind(%d)", int(k))
}

// File is one capture file of any kind: exactly one of Records, Long, Convert and Peer
// is non-nil, as Kind says.
type File struct {
	Path    string
	Kind    FileKind
	Records *RecordFile
	Long    *LongFile
	Convert *ConvertFile
	Peer    *PeerFile
}

// ReadFile reads the capture file at path, choosing the parser from its first
// line ([RecordsMagic], [LongMagic] or [ConvertMagic]). Errors of malformed
// content are [*ParseError]s naming path and the line.
//
// A path ending in ".gz" is decompressed first (gzip), so that large
// captures can be kept compressed.
//
// A peer-record file ([PeerMagic]) is parsed as it streams in, never held
// whole in memory (see [ParsePeer] for its limits). Any other file (after
// decompression) larger than MaxFileBytes is refused with an error saying
// so, whatever it is (a regular file, /dev/zero, a pipe), and so is one
// whose first line is no capture kind: that is seen from its first bytes,
// before the rest is read.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		r = zr
	}
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(len(PeerMagic) + 1); bytes.HasPrefix(head, []byte(PeerMagic)) {
		p, err := ParsePeer(br, path)
		if err != nil {
			return nil, err
		}
		return &File{Path: path, Kind: KindPeer, Peer: p}, nil
	}
	head, err := br.Peek(len(RecordsMagic) + len(LongMagic) + len(ConvertMagic))
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !knownMagic(head) {
		first := head
		if i := bytes.IndexByte(first, '\n'); i >= 0 {
			first = first[:i]
		}
		return nil, &ParseError{Name: path, Line: 1, Msg: fmt.Sprintf("unknown kind of file: first line %q…, want %q, %q, %q or %q",
			shorten(first), RecordsMagic, LongMagic, ConvertMagic, PeerMagic)}
	}
	data, err := io.ReadAll(io.LimitReader(br, int64(MaxFileBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB (after decompression); a capture file is at most that", path, MaxFileBytes>>20)
	}
	return parseBytes(data, path)
}

// MaxFileBytes is the largest capture file [ReadFile] reads, after
// decompression: 256 MiB, a hundred times the largest capture (a variable
// for the tests).
var MaxFileBytes = 256 << 20

// knownMagic reports whether head starts with a capture kind's first line
// (or with a prefix of one, when the file is that short).
func knownMagic(head []byte) bool {
	for _, m := range []string{RecordsMagic, LongMagic, ConvertMagic} {
		n := min(len(head), len(m))
		if n > 0 && string(head[:n]) == m[:n] {
			return true
		}
	}
	return false
}

func parseBytes(data []byte, name string) (*File, error) {
	first := data
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	first = bytes.TrimSuffix(first, []byte("\r"))
	f := &File{Path: name}
	var err error
	switch string(first) {
	case RecordsMagic:
		f.Kind = KindRecords
		f.Records, err = ParseRecords(bytes.NewReader(data), name)
	case LongMagic:
		f.Kind = KindLong
		f.Long, err = ParseLong(bytes.NewReader(data), name)
	case ConvertMagic:
		f.Kind = KindConvert
		f.Convert, err = ParseConvert(bytes.NewReader(data), name)
	case PeerMagic:
		f.Kind = KindPeer
		f.Peer, err = ParsePeer(bytes.NewReader(data), name)
	default:
		return nil, &ParseError{Name: name, Line: 1, Msg: fmt.Sprintf("unknown kind of file: first line %q, want %q, %q or %q",
			shorten(first), RecordsMagic, LongMagic, ConvertMagic)}
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

// DirFiles returns the paths of the files [ReadDir] reads, in its order,
// without reading them: a caller that verifies one file at a time holds
// one file in memory, not the folder.
func DirFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		base := strings.TrimSuffix(n, ".gz")
		if !e.Type().IsRegular() || !(strings.HasSuffix(base, ".tsv") || strings.HasSuffix(base, ".txt")) {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = filepath.Join(dir, n)
	}
	return names, nil
}

// ReadDir reads every regular file of dir whose name ends in ".tsv" or
// ".txt", gzipped or not (".tsv.gz"), not descending into subfolders, in
// name order, with [ReadFile].
// It stops at the first error.
func ReadDir(dir string) ([]*File, error) {
	names, err := DirFiles(dir)
	if err != nil {
		return nil, err
	}
	files := make([]*File, 0, len(names))
	for _, n := range names {
		f, err := ReadFile(n)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// lines is a line scanner that counts lines and builds ParseErrors.
type lines struct {
	sc   *bufio.Scanner
	name string
	line int // number of the current line (1-based); after EOF, the last line
	text []byte
}

func newLines(r io.Reader, name string) *lines {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLineBytes)
	return &lines{sc: sc, name: name}
}

func (l *lines) next() bool {
	if !l.sc.Scan() {
		return false
	}
	l.line++
	l.text = l.sc.Bytes()
	return true
}

// errAt returns a ParseError at line n.
func (l *lines) errAt(n int, format string, args ...any) *ParseError {
	return &ParseError{Name: l.name, Line: n, Msg: fmt.Sprintf(format, args...)}
}

// errf returns a ParseError at the current line.
func (l *lines) errf(format string, args ...any) *ParseError {
	return l.errAt(l.line, format, args...)
}

// lastLine is the line number to blame for problems found at the end of the
// input: the last line, or 1 for empty input.
func (l *lines) lastLine() int {
	if l.line == 0 {
		return 1
	}
	return l.line
}

// finish reports a read error of the scanner, if any.
func (l *lines) finish() error {
	err := l.sc.Err()
	if err == nil {
		return nil
	}
	if errors.Is(err, bufio.ErrTooLong) {
		return &ParseError{Name: l.name, Line: l.line + 1, Msg: fmt.Sprintf("line longer than %d bytes", MaxLineBytes), Err: err}
	}
	return &ParseError{Name: l.name, Line: l.line + 1, Msg: "read error: " + err.Error(), Err: err}
}

// magic reads the first line and checks that it is want.
func (l *lines) magic(want string) error {
	if !l.next() {
		if err := l.finish(); err != nil {
			return err
		}
		return l.errAt(1, "empty input, want first line %q", want)
	}
	if string(l.text) != want {
		return l.errf("first line %q, want %q", shorten(l.text), want)
	}
	return nil
}

// note returns the text of a '#' line: without the '#' and surrounding space.
func noteText(line []byte) string {
	return strings.TrimSpace(string(line[1:]))
}

// checkNote checks that a note written as "# "+n reads back as the note n of
// a file whose machine-readable header keys are keys.
func checkNote(n string, keys ...string) error {
	if strings.ContainsAny(n, "\n") || strings.TrimSpace(n) != n {
		return fmt.Errorf("note %q has a line break or surrounding space", n)
	}
	if k, _, ok := strings.Cut(n, ":"); ok {
		for _, key := range keys {
			if k == key {
				return fmt.Errorf("note %q would read back as a %q header", n, key)
			}
		}
	}
	return nil
}

func shorten(b []byte) string {
	const max = 60
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

var hexVal = func() (t [256]uint8) {
	for i := range t {
		t[i] = 0xff
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = uint8(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = uint8(c-'a') + 10
		t[c-'a'+'A'] = uint8(c-'a') + 10
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// hexN parses b as exactly len(b) ≤ 8 hex digits.
func hexN(b []byte) (uint32, bool) {
	var v uint32
	for _, c := range b {
		d := hexVal[c]
		if d == 0xff {
			return 0, false
		}
		v = v<<4 | uint32(d)
	}
	return v, true
}

// hex32 parses b as exactly 8 hex digits.
func hex32(b []byte) (uint32, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return hexN(b)
}

// firstBadHex returns the index of the first byte of b that is not a hex
// digit, or -1.
func firstBadHex(b []byte) int {
	for i, c := range b {
		if hexVal[c] == 0xff {
			return i
		}
	}
	return -1
}

// decimal parses b as a non-negative decimal integer of at most 9 digits.
func decimal(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	v := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func appendHex(dst []byte, v uint32, digits int) []byte {
	for s := 4 * (digits - 1); s >= 0; s -= 4 {
		dst = append(dst, hexDigits[v>>uint(s)&0xf])
	}
	return dst
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
