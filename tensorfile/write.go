package tensorfile

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
)

// WriteNPY writes x (float32, row major, of the given shape) to path as a
// NumPy 1.0 .npy file ('<f4', C order), as np.save writes it: the header
// padded with spaces and ended by a newline so that the data starts at a
// multiple of 64 bytes.
func WriteNPY(path string, shape []int, x []float32) error {
	n := 1
	for _, d := range shape {
		n *= d
	}
	if n != len(x) {
		return fmt.Errorf("tensorfile: shape %v holds %d elements, got %d", shape, n, len(x))
	}
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	tuple := "(" + strings.Join(dims, ", ")
	if len(shape) == 1 {
		tuple += ","
	}
	tuple += ")"
	h := fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", tuple)
	pad := 64 - (10+len(h)+1)%64
	if pad == 64 {
		pad = 0
	}
	h += strings.Repeat(" ", pad) + "\n"
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	w.WriteString(npyMagic + "\x01\x00")
	binary.Write(w, binary.LittleEndian, uint16(len(h)))
	w.WriteString(h)
	var b [4]byte
	for _, v := range x {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		w.Write(b[:])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteSafetensors writes tensors (name → shape and float32 data; DType
// and File are ignored) to path as a .safetensors file as the safetensors
// library writes it: the 8-byte header length, the JSON header padded
// with spaces to a multiple of 8 bytes, then every tensor's data as F32,
// little-endian, in name order. A name may not be empty or
// "__metadata__"; each shape must hold its data.
func WriteSafetensors(path string, tensors map[string]*Tensor) error {
	type entry struct {
		DType       string   `json:"dtype"`
		Shape       []int    `json:"shape"`
		DataOffsets [2]int64 `json:"data_offsets"`
	}
	names := slices.Sorted(maps.Keys(tensors))
	header := map[string]entry{}
	var off int64
	for _, name := range names {
		t := tensors[name]
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		switch {
		case name == "" || name == "__metadata__":
			return fmt.Errorf("tensorfile: tensor name %q is reserved", name)
		case n != len(t.Data):
			return fmt.Errorf("tensorfile: tensor %q: shape %v holds %d elements, got %d", name, t.Shape, n, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[name] = entry{"F32", shape, [2]int64{off, off + 4*int64(n)}}
		off += 4 * int64(n)
	}
	h, err := json.Marshal(header)
	if err != nil {
		return err
	}
	h = append(h, strings.Repeat(" ", (8-len(h)%8)%8)...)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	binary.Write(w, binary.LittleEndian, uint64(len(h)))
	w.Write(h)
	var b [4]byte
	for _, name := range names {
		for _, v := range tensors[name].Data {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
			w.Write(b[:])
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
