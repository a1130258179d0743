package tensorfile

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// safetensorsEntry is one tensor of a safetensors header.
type safetensorsEntry struct {
	DType       string   `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// SafetensorsNames lists the tensors of the safetensors file r of size
// bytes, sorted.
func SafetensorsNames(file string, r io.ReaderAt, size int64) ([]string, error) {
	h, _, err := safetensorsHeader(file, r, size)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names, nil
}

// safetensorsHeader reads and checks the header: every entry's type,
// shape and offsets (within the data buffer, the size its shape needs).
// It returns the entries and the offset of the data buffer.
func safetensorsHeader(file string, r io.ReaderAt, size int64) (map[string]safetensorsEntry, int64, error) {
	var pre [8]byte
	if size < 8 {
		return nil, 0, truncated(file, "safetensors header length", 8, size)
	}
	if _, err := r.ReadAt(pre[:], 0); err != nil {
		return nil, 0, fmt.Errorf("%s: reading the header length: %w", file, err)
	}
	n := binary.LittleEndian.Uint64(pre[:])
	if n > MaxHeader {
		return nil, 0, fmt.Errorf("%s: the header claims %d bytes, more than %d (the limit)", file, n, MaxHeader)
	}
	if int64(n) > size-8 {
		return nil, 0, truncated(file, "header", 8+int64(n), size)
	}
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, 8); err != nil {
		return nil, 0, fmt.Errorf("%s: reading the header: %w", file, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(buf, &raw); err != nil {
		return nil, 0, fmt.Errorf("%s: bad header JSON: %w", file, err)
	}
	start := 8 + int64(n)
	dataLen := size - start
	out := map[string]safetensorsEntry{}
	for name, msg := range raw {
		if name == "__metadata__" {
			var meta map[string]string
			if err := json.Unmarshal(msg, &meta); err != nil {
				return nil, 0, fmt.Errorf("%s: __metadata__ is not an object of strings: %w", file, err)
			}
			continue
		}
		var e safetensorsEntry
		dec := json.NewDecoder(strings.NewReader(string(msg)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, 0, fmt.Errorf("%s: tensor %q: bad entry: %w", file, name, err)
		}
		out[name] = e
	}
	for name, e := range out {
		what := fmt.Sprintf("%s: tensor %q", file, name)
		dt, ok := safetensorsDTypes[e.DType]
		if !ok {
			return nil, 0, fmt.Errorf("%s: unsupported dtype %q (want F32, F16, BF16, F8_E4M3, F64, I64, I32, U8 or BOOL)", what, e.DType)
		}
		cnt, err := elements(what, e.Shape, 1<<62/8)
		if err != nil {
			return nil, 0, err
		}
		b, end := e.DataOffsets[0], e.DataOffsets[1]
		if b < 0 || end < b {
			return nil, 0, fmt.Errorf("%s: bad data_offsets [%d, %d]", what, b, end)
		}
		if end > dataLen {
			return nil, 0, fmt.Errorf("%s: data_offsets end %d beyond the %d bytes of data: %w", what, end, dataLen, io.ErrUnexpectedEOF)
		}
		if end-b != cnt*int64(dt.Size()) {
			return nil, 0, fmt.Errorf("%s: data_offsets [%d, %d] hold %d bytes, shape %v of %s needs %d", what, b, end, end-b, e.Shape, dt, cnt*int64(dt.Size()))
		}
	}
	return out, start, nil
}

var safetensorsDTypes = map[string]DType{"F32": F32, "F16": F16, "BF16": BF16, "F8_E4M3": F8E4M3, "F64": F64,
	"I64": I64, "I32": I32, "U8": U8, "BOOL": Bool}

// ReadSafetensors reads tensor name (empty: the file's only tensor) of the
// safetensors file r of size bytes; file names it in messages.
func ReadSafetensors(file string, r io.ReaderAt, size int64, name string, opt Options) (*Tensor, error) {
	h, start, err := safetensorsHeader(file, r, size)
	if err != nil {
		return nil, err
	}
	if name == "" {
		if len(h) != 1 {
			names := make([]string, 0, len(h))
			for k := range h {
				names = append(names, k)
			}
			slices.Sort(names)
			return nil, fmt.Errorf("%s: holds %d tensors %v: name one", file, len(h), names)
		}
		for k := range h {
			name = k
		}
	}
	e, ok := h[name]
	if !ok {
		return nil, fmt.Errorf("%s: no tensor %q", file, name)
	}
	dt := safetensorsDTypes[e.DType]
	what := fmt.Sprintf("%s: tensor %q", file, name)
	if err := opt.CheckType(what, dt); err != nil {
		return nil, err
	}
	n, err := elements(what, e.Shape, opt.maxElements())
	if err != nil {
		return nil, err
	}
	sr := io.NewSectionReader(r, start+e.DataOffsets[0], e.DataOffsets[1]-e.DataOffsets[0])
	data, err := readData(what, sr, n, dt, binary.LittleEndian)
	if err != nil {
		return nil, err
	}
	return &Tensor{File: file, Name: name, DType: dt, Shape: toInts(e.Shape), Data: data}, nil
}
