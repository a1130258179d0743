package tensorfile

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"os"
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
