package tensorfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
)

// npyMagic starts every .npy file.
const npyMagic = "\x93NUMPY"

// ReadNPY reads the .npy file r of size bytes; file names it in messages.
func ReadNPY(file string, r io.Reader, size int64, opt Options) (*Tensor, error) {
	h, err := readNPYHeader(file, r, size, opt)
	if err != nil {
		return nil, err
	}
	if err := opt.CheckType(file, h.dt); err != nil {
		return nil, err
	}
	data, err := readData(file, r, h.n, h.dt, h.bo)
	if err != nil {
		return nil, err
	}
	return &Tensor{File: file, DType: h.dt, Shape: toInts(h.shape), Data: data}, nil
}

// npyInfo is what a .npy header says, checked against the file's size:
// the element type, its byte order, the shape and the element count.
type npyInfo struct {
	dt    DType
	bo    binary.ByteOrder
	shape []int64
	n     int64
}

// readNPYHeader reads the preamble and header of the .npy file r of size
// bytes, leaving r at the data, and checks that the data the header
// claims is exactly what the file holds.
func readNPYHeader(file string, r io.Reader, size int64, opt Options) (npyInfo, error) {
	var pre [12]byte
	var info npyInfo
	if size < 10 {
		return info, truncated(file, "NumPy preamble", 10, size)
	}
	if _, err := io.ReadFull(r, pre[:10]); err != nil {
		return info, fmt.Errorf("%s: reading the NumPy preamble: %w", file, err)
	}
	if string(pre[:6]) != npyMagic {
		return info, fmt.Errorf("%s: not a NumPy .npy file (no \\x93NUMPY magic)", file)
	}
	major, minor := pre[6], pre[7]
	var hlen, off int64
	switch major {
	case 1:
		hlen, off = int64(binary.LittleEndian.Uint16(pre[8:])), 10
	case 2, 3:
		if size < 12 {
			return info, truncated(file, "NumPy 2.0 preamble", 12, size)
		}
		if _, err := io.ReadFull(r, pre[10:12]); err != nil {
			return info, fmt.Errorf("%s: reading the NumPy preamble: %w", file, err)
		}
		hlen, off = int64(binary.LittleEndian.Uint32(pre[8:])), 12
	default:
		return info, fmt.Errorf("%s: NumPy format version %d.%d is not supported (1.0, 2.0, 3.0)", file, major, minor)
	}
	if hlen > MaxHeader {
		return info, fmt.Errorf("%s: the header claims %d bytes, more than %d (the limit)", file, hlen, MaxHeader)
	}
	if off+hlen > size {
		return info, truncated(file, "header", off+hlen, size)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return info, fmt.Errorf("%s: reading the header: %w", file, err)
	}
	h, err := parseNPYHeader(hdr)
	if err != nil {
		return info, fmt.Errorf("%s: bad header: %w", file, err)
	}
	if h.fortran {
		return info, fmt.Errorf("%s: Fortran-ordered array (save it with np.ascontiguousarray first)", file)
	}
	dt, bo, err := npyDType(h.descr, opt)
	if err != nil {
		return info, fmt.Errorf("%s: %w", file, err)
	}
	n, err := elements(file, h.shape, opt.maxElements())
	if err != nil {
		return info, err
	}
	need := n * int64(dt.Size())
	switch have := size - off - hlen; {
	case have < need:
		return info, truncated(file, fmt.Sprintf("data of shape %v %s", h.shape, dt), off+hlen+need, size)
	case have > need:
		return info, fmt.Errorf("%s: %d bytes after the data of shape %v %s (not a .npy file as NumPy writes it)", file, have-need, h.shape, dt)
	}
	return npyInfo{dt: dt, bo: bo, shape: h.shape, n: n}, nil
}

// npyDType maps a NumPy type string to a DType and byte order.
func npyDType(descr string, opt Options) (DType, binary.ByteOrder, error) {
	if len(descr) < 2 {
		return Invalid, nil, fmt.Errorf("unsupported element type %q", descr)
	}
	var bo binary.ByteOrder = binary.LittleEndian
	switch descr[0] {
	case '<', '|', '=':
	case '>':
		bo = binary.BigEndian
	default:
		return Invalid, nil, fmt.Errorf("unsupported element type %q (no byte-order mark)", descr)
	}
	var dt DType
	switch descr[1:] {
	case "f4":
		dt = F32
	case "f2":
		dt = F16
	case "f8":
		dt = F64
	case "i8":
		dt = I64
	case "i4":
		dt = I32
	case "u1":
		dt = U8
	case "b1":
		dt = Bool
	case "V2":
		if dt = opt.Void2; dt != BF16 && dt != F16 {
			return Invalid, nil, fmt.Errorf("element type %q is opaque 2-byte data (ml_dtypes' bfloat16): name its type (bfloat16 or float16)", descr)
		}
	case "V1":
		if dt = opt.Void1; dt != F8E4M3 {
			return Invalid, nil, fmt.Errorf("element type %q is opaque 1-byte data (ml_dtypes' float8_e4m3fn): name its type (float8_e4m3fn)", descr)
		}
	default:
		return Invalid, nil, fmt.Errorf("unsupported element type %q (want float32 '<f4', float16 '<f2', float64 '<f8', int64 '<i8', int32 '<i4', uint8 '|u1', bool '|b1', or '<V2'/'|V1' with a named type)", descr)
	}
	return dt, bo, nil
}

// npyHeader is the dict of a .npy header.
type npyHeader struct {
	descr   string
	fortran bool
	shape   []int64
}

// parseNPYHeader parses the Python dict literal NumPy writes:
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } followed by
// spaces and a newline. The three keys are required, others refused.
func parseNPYHeader(b []byte) (npyHeader, error) {
	var h npyHeader
	p := &pyParser{b: bytes.TrimRight(b, " \n\x00")}
	if !p.eat('{') {
		return h, fmt.Errorf("want '{' at offset %d", p.i)
	}
	seen := map[string]bool{}
	for {
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return h, err
		}
		if seen[key] {
			return h, fmt.Errorf("key %q twice", key)
		}
		seen[key] = true
		if !p.eat(':') {
			return h, fmt.Errorf("want ':' after %q at offset %d", key, p.i)
		}
		switch key {
		case "descr":
			if h.descr, err = p.str(); err != nil {
				return h, err
			}
		case "fortran_order":
			if h.fortran, err = p.boolean(); err != nil {
				return h, err
			}
		case "shape":
			if h.shape, err = p.tuple(); err != nil {
				return h, err
			}
		default:
			return h, fmt.Errorf("unknown key %q", key)
		}
		if !p.eat(',') {
			if !p.eat('}') {
				return h, fmt.Errorf("want ',' or '}' at offset %d", p.i)
			}
			break
		}
	}
	p.space()
	if p.i != len(p.b) {
		return h, fmt.Errorf("unexpected text after the dict at offset %d", p.i)
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("no %q", k)
		}
	}
	return h, nil
}

// pyParser reads the small part of Python's literal syntax a .npy header
// uses.
type pyParser struct {
	b []byte
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\n') {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// str reads a quoted string without escapes.
func (p *pyParser) str() (string, error) {
	p.space()
	if p.i >= len(p.b) || (p.b[p.i] != '\'' && p.b[p.i] != '"') {
		return "", fmt.Errorf("want a quoted string at offset %d", p.i)
	}
	q := p.b[p.i]
	end := bytes.IndexByte(p.b[p.i+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string at offset %d", p.i)
	}
	s := string(p.b[p.i+1 : p.i+1+end])
	if bytes.IndexByte([]byte(s), '\\') >= 0 {
		return "", fmt.Errorf("escaped string at offset %d", p.i)
	}
	p.i += end + 2
	return s, nil
}

func (p *pyParser) boolean() (bool, error) {
	p.space()
	for _, w := range []struct {
		s string
		v bool
	}{{"True", true}, {"False", false}} {
		if bytes.HasPrefix(p.b[p.i:], []byte(w.s)) {
			p.i += len(w.s)
			return w.v, nil
		}
	}
	return false, fmt.Errorf("want True or False at offset %d", p.i)
}

// tuple reads (), (n,) or (n, m, …) of non-negative integers (a Python 2
// 'L' suffix is accepted).
func (p *pyParser) tuple() ([]int64, error) {
	if !p.eat('(') {
		return nil, fmt.Errorf("want a tuple at offset %d", p.i)
	}
	out := []int64{}
	for {
		if p.eat(')') {
			return out, nil
		}
		if len(out) > MaxDims {
			return nil, fmt.Errorf("more than %d dimensions", MaxDims)
		}
		p.space()
		start := p.i
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
		}
		if start == p.i {
			return nil, fmt.Errorf("want a dimension at offset %d", p.i)
		}
		n, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("dimension %q: %w", p.b[start:p.i], err)
		}
		if p.i < len(p.b) && p.b[p.i] == 'L' {
			p.i++
		}
		out = append(out, n)
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, fmt.Errorf("want ',' or ')' at offset %d", p.i)
			}
			return out, nil
		}
	}
}
