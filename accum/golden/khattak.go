package golden

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The published GPU outputs of Khattak & Mikaitis ("Accurate Models of
// NVIDIA Tensor Cores", arXiv 2512.07004; repository
// north-numerical-computing/MATLAB-tensor-core, folder model_validation/,
// BSD 2-Clause) are kept as published under shared/golden/khattak:
//
//	<GPU>/<format>/a_<GPU>_<format>.txt.gz   K inputs per line, hex float32 bits
//	<GPU>/<format>/b_<GPU>_<format>.txt.gz   likewise
//	<GPU>/<format>/c_<GPU>_fp32.txt.gz       one addend per line, 32 binary digits
//	<GPU>/<format>/d_<GPU>_<out>.txt.gz      one GPU result per line, 32 binary digits
//
// Line r of every file belongs to dot product r. The a/b lines are written
// by MATLAB as 8-digit hex words each followed by one space; the c/d lines
// by the CUDA harnesses as std::bitset<32> (the harness only reads a c line
// of exactly 32 characters: any other line leaves c = 0, so the reader
// accepts nothing else). Every value, also an FP8, fp16, bf16 or tf32
// input or an FP16 result, is the float32 of a value exact in that format.

// Limits of the Khattak readers. A published file is at most 1.5 MB of
// text; the limits only keep a damaged or hostile file from costing more.
const (
	// MaxKhattakBytes caps the decompressed size of one file (16 MiB).
	MaxKhattakBytes = 16 << 20
	// MaxKhattakK caps the number of values on one a/b line (64, twice
	// the widest instruction of the harnesses).
	MaxKhattakK = 64
)

// KhattakSet is one published set: the dot products of one GPU and input
// format, with the GPU's results for one output format. The A, B and C of
// the fp16 and fp32 outputs of one folder are the same slices.
type KhattakSet struct {
	Dir    string     // the folder holding the files
	GPU    string     // "V100", "A100", "A2", "Ada", "L40S", "H100", "H200" or "B200"
	Format string     // the input format as the folder names it: fp16, bf16, tf32, E4M3 or E5M2
	Out    string     // the output format of D: "fp32" or "fp16"
	A, B   [][]uint32 // per dot product, the float32 bits of its K inputs
	C, D   []uint32   // per dot product, the float32 bits of the addend and of the GPU's result
	DPath  string     // the file D was read from
}

// Name is "GPU format -> out", e.g. "B200 E4M3 -> fp32".
func (s *KhattakSet) Name() string { return s.GPU + " " + s.Format + " -> " + s.Out }

// openKhattak returns the decompressed text of a Khattak file (gzip when the
// name ends in ".gz"), refusing more than MaxKhattakBytes.
func openKhattak(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return khattakText(raw, path)
}

func khattakText(raw []byte, name string) ([]byte, error) {
	if !strings.HasSuffix(name, ".gz") {
		if len(raw) > MaxKhattakBytes {
			return nil, &ParseError{Name: name, Line: 1, Msg: fmt.Sprintf("file larger than %d bytes", MaxKhattakBytes)}
		}
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, &ParseError{Name: name, Line: 1, Msg: "not a gzip file: " + err.Error(), Err: err}
	}
	data, err := io.ReadAll(io.LimitReader(zr, MaxKhattakBytes+1))
	if err != nil {
		return nil, &ParseError{Name: name, Line: 1 + bytes.Count(data, []byte{'\n'}), Msg: "gzip: " + err.Error(), Err: err}
	}
	if len(data) > MaxKhattakBytes {
		return nil, &ParseError{Name: name, Line: 1 + bytes.Count(data[:MaxKhattakBytes], []byte{'\n'}),
			Msg: fmt.Sprintf("decompresses to more than %d bytes", MaxKhattakBytes)}
	}
	return data, nil
}

// khattakLines calls fn for every line of data (without its '\n'), with its
// 1-based number; a final line without '\n' counts, an empty input has no
// lines.
func khattakLines(data []byte, fn func(n int, line []byte) error) error {
	n := 0
	for len(data) > 0 {
		n++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	return nil
}

// ParseKhattakVectors reads an a or b file's text: every line holds the same
// number (1 to MaxKhattakK) of 8-digit hex words, each followed by one space
// (the last one's space may be missing). name is used in errors, which are
// [*ParseError]s naming the line.
func ParseKhattakVectors(data []byte, name string) ([][]uint32, error) {
	var rows [][]uint32
	width := 0
	// Every value takes 8 digits and a separator: one slab holds them all.
	slab := make([]uint32, 0, len(data)/9+1)
	err := khattakLines(data, func(n int, line []byte) error {
		bad := func(format string, args ...any) error {
			return &ParseError{Name: name, Line: n, Msg: fmt.Sprintf(format, args...)}
		}
		row := slab[len(slab):len(slab):cap(slab)]
		for len(line) > 0 {
			if len(line) < 8 {
				return bad("value %q is not 8 hex digits", shorten(line))
			}
			v, ok := hex32(line[:8])
			if !ok {
				return bad("value %q is not 8 hex digits", shorten(line[:8]))
			}
			if len(row) == MaxKhattakK {
				return bad("more than %d values on a line", MaxKhattakK)
			}
			row = append(row, v)
			line = line[8:]
			if len(line) > 0 {
				if line[0] != ' ' {
					return bad("value %q is not 8 hex digits followed by one space", shorten(line))
				}
				line = line[1:]
			}
		}
		switch {
		case len(row) == 0:
			return bad("empty line")
		case width == 0:
			width = len(row)
		case len(row) != width:
			return bad("%d values, line 1 has %d", len(row), width)
		}
		rows = append(rows, row[:len(row):len(row)])
		if cap(row) == cap(slab)-len(slab) {
			slab = slab[:len(slab)+len(row)]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &ParseError{Name: name, Line: 1, Msg: "no data lines"}
	}
	return rows, nil
}

// ParseKhattakScalars reads a c or d file's text: one float32 per line as
// exactly 32 binary digits, most significant first (C++ std::bitset<32>).
func ParseKhattakScalars(data []byte, name string) ([]uint32, error) {
	var vals []uint32
	err := khattakLines(data, func(n int, line []byte) error {
		if len(line) != 32 {
			return &ParseError{Name: name, Line: n, Msg: fmt.Sprintf("%q is not 32 binary digits", shorten(line))}
		}
		var v uint32
		for _, c := range line {
			if c != '0' && c != '1' {
				return &ParseError{Name: name, Line: n, Msg: fmt.Sprintf("%q is not 32 binary digits", shorten(line))}
			}
			v = v<<1 | uint32(c-'0')
		}
		vals = append(vals, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(vals) == 0 {
		return nil, &ParseError{Name: name, Line: 1, Msg: "no data lines"}
	}
	return vals, nil
}

// IsKhattakFolder reports whether dir holds one Khattak set folder: a file
// named a_<GPU>_<format>.txt.gz (or .txt) whose GPU and format are the
// folder's parent and own names.
func IsKhattakFolder(dir string) bool {
	_, _, ok := khattakFolderNames(dir)
	return ok
}

func khattakFolderNames(dir string) (gpu, format string, ok bool) {
	dir = filepath.Clean(dir)
	format = filepath.Base(dir)
	gpu = filepath.Base(filepath.Dir(dir))
	for _, ext := range []string{".txt.gz", ".txt"} {
		if st, err := os.Stat(filepath.Join(dir, "a_"+gpu+"_"+format+ext)); err == nil && st.Mode().IsRegular() {
			return gpu, format, true
		}
	}
	return "", "", false
}

// findKhattak returns the file name+ext in dir, preferring the gzipped one.
func findKhattak(dir, name string) (string, error) {
	for _, ext := range []string{".txt.gz", ".txt"} {
		p := filepath.Join(dir, name+ext)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: no %s.txt.gz", dir, name)
}

// ReadKhattakFolder reads one set folder <GPU>/<format>: its a, b and c
// files and every d_<GPU>_<out> file (fp32, fp16) present, one
// [KhattakSet] per d file, fp32 first. Every file must have as many lines
// as the a file.
func ReadKhattakFolder(dir string) ([]*KhattakSet, error) {
	gpu, format, ok := khattakFolderNames(dir)
	if !ok {
		return nil, fmt.Errorf("%s: not a Khattak & Mikaitis set folder (no a_<GPU>_<format>.txt.gz with GPU and format the folder names)", dir)
	}
	readVec := func(name string) ([][]uint32, string, error) {
		p, err := findKhattak(dir, name)
		if err != nil {
			return nil, "", err
		}
		text, err := openKhattak(p)
		if err != nil {
			return nil, "", err
		}
		v, err := ParseKhattakVectors(text, p)
		return v, p, err
	}
	readScalars := func(p string) ([]uint32, error) {
		text, err := openKhattak(p)
		if err != nil {
			return nil, err
		}
		return ParseKhattakScalars(text, p)
	}
	a, pa, err := readVec("a_" + gpu + "_" + format)
	if err != nil {
		return nil, err
	}
	b, pb, err := readVec("b_" + gpu + "_" + format)
	if err != nil {
		return nil, err
	}
	if len(b) != len(a) || len(b[0]) != len(a[0]) {
		return nil, fmt.Errorf("%s: %d lines of %d values, %s has %d of %d", pb, len(b), len(b[0]), pa, len(a), len(a[0]))
	}
	pc, err := findKhattak(dir, "c_"+gpu+"_fp32")
	if err != nil {
		return nil, err
	}
	c, err := readScalars(pc)
	if err != nil {
		return nil, err
	}
	if len(c) != len(a) {
		return nil, fmt.Errorf("%s: %d lines, %s has %d", pc, len(c), pa, len(a))
	}
	var sets []*KhattakSet
	for _, out := range []string{"fp32", "fp16"} {
		pd, err := findKhattak(dir, "d_"+gpu+"_"+out)
		if err != nil {
			continue
		}
		d, err := readScalars(pd)
		if err != nil {
			return nil, err
		}
		if len(d) != len(a) {
			return nil, fmt.Errorf("%s: %d lines, %s has %d", pd, len(d), pa, len(a))
		}
		sets = append(sets, &KhattakSet{Dir: dir, GPU: gpu, Format: format, Out: out, A: a, B: b, C: c, D: d, DPath: pd})
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("%s: no d_%s_fp32 or d_%s_fp16 file", dir, gpu, gpu)
	}
	return sets, nil
}

// KhattakFolders returns the set folders at or below root (root itself, its
// <format> subfolders, or its <GPU>/<format> subfolders), sorted; none is an
// error.
func KhattakFolders(root string) ([]string, error) {
	if IsKhattakFolder(root) {
		return []string{filepath.Clean(root)}, nil
	}
	var dirs []string
	for _, pat := range []string{"*", filepath.Join("*", "*")} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			return nil, err
		}
		for _, d := range m {
			if st, err := os.Stat(d); err == nil && st.IsDir() && IsKhattakFolder(d) {
				dirs = append(dirs, d)
			}
		}
	}
	if len(dirs) == 0 {
		return nil, errors.New(root + ": no Khattak & Mikaitis set folders (<GPU>/<format>/a_<GPU>_<format>.txt.gz)")
	}
	sort.Strings(dirs)
	return dirs, nil
}

// ReadKhattak reads every set at or below root (see [KhattakFolders]).
func ReadKhattak(root string) ([]*KhattakSet, error) {
	dirs, err := KhattakFolders(root)
	if err != nil {
		return nil, err
	}
	var sets []*KhattakSet
	for _, d := range dirs {
		s, err := ReadKhattakFolder(d)
		if err != nil {
			return nil, err
		}
		sets = append(sets, s...)
	}
	return sets, nil
}
