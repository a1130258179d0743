package tensorfile

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// npyBytes is a .npy file of descr holding the raw data of n elements.
func npyBytes(descr string, n int, data []byte) []byte {
	hdr := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }", descr, n)
	for (10+len(hdr)+1)%64 != 0 {
		hdr += " "
	}
	hdr += "\n"
	var b bytes.Buffer
	b.WriteString(npyMagic)
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(len(hdr)))
	b.WriteString(hdr)
	b.Write(data)
	return b.Bytes()
}

// onlyReader hides every method of r but Read: readData's sequential path.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestReadParallel: a tensor read in chunks on several goroutines (a
// reader that can read at an offset and seek, parallelReadBytes lowered
// to a few kilobytes) gives every element's bits and every error (the
// first bad element's, a truncation's) as the sequential read does, for
// every element type and both byte orders, and leaves the reader after
// the data.
func TestReadParallel(t *testing.T) {
	defer func(b int64) { parallelReadBytes = b }(parallelReadBytes)
	parallelReadBytes = 4096
	r := rand.New(rand.NewPCG(1, 2))
	const n = 10007 // several chunks of every size, the last one short
	raw := func(size int) []byte {
		b := make([]byte, n*size)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	ints := func(size int, bad ...int) []byte { // small integers, some out of range
		b := make([]byte, n*size)
		for i := 0; i < n; i++ {
			x := int64(r.IntN(1<<20)) - 1<<19
			if size == 4 {
				binary.LittleEndian.PutUint32(b[4*i:], uint32(int32(x)))
			} else {
				binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
			}
		}
		for _, i := range bad {
			if size == 4 {
				binary.LittleEndian.PutUint32(b[4*i:], uint32(1<<30))
			} else {
				binary.LittleEndian.PutUint64(b[8*i:], uint64(1)<<40)
			}
		}
		return b
	}
	bools := func(bad ...int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.IntN(2))
		}
		for _, i := range bad {
			b[i] = 7
		}
		return b
	}
	opt := Options{Void1: F8E4M3, Void2: BF16, MaxElements: 1 << 30}
	for _, tc := range []struct {
		descr string
		data  []byte
		cut   int // bytes the stream lacks at its end (a file that shrank)
	}{
		{"<f4", raw(4), 0},
		{">f4", raw(4), 0},
		{"<f2", raw(2), 0},
		{"<f8", raw(8), 0},
		{"<V2", raw(2), 0},
		{"|V1", raw(1), 0},
		{"|u1", raw(1), 0},
		{"<i4", ints(4), 0},
		{"<i8", ints(8), 0},
		{"|b1", bools(), 0},
		{"<i4", ints(4, 9000, 3000, 5000), 0}, // the first in the file's order is named
		{"|b1", bools(8000, 2500), 0},
		{"<f4", raw(4), 4 * 6000},
		{"<i8", ints(8), 8*5000 + 3},
	} {
		t.Run(fmt.Sprintf("%s cut %d", tc.descr, tc.cut), func(t *testing.T) {
			file := npyBytes(tc.descr, n, tc.data)
			size := int64(len(file))
			stream := file[:len(file)-tc.cut]
			seq, serr := ReadNPY("x.npy", onlyReader{bytes.NewReader(stream)}, size, opt)
			br := bytes.NewReader(stream)
			par, perr := ReadNPY("x.npy", br, size, opt)
			if fmt.Sprint(serr) != fmt.Sprint(perr) {
				t.Fatalf("errors: parallel %v, sequential %v", perr, serr)
			}
			if tc.cut > 0 && (perr == nil || !strings.Contains(perr.Error(), "truncated data after")) {
				t.Fatalf("a cut stream gave %v", perr)
			}
			if serr != nil {
				return
			}
			for i := range seq.Data {
				if math.Float32bits(par.Data[i]) != math.Float32bits(seq.Data[i]) {
					t.Fatalf("element %d: %#x, sequential %#x", i, math.Float32bits(par.Data[i]), math.Float32bits(seq.Data[i]))
				}
			}
			if rest, _ := io.ReadAll(br); len(rest) != 0 {
				t.Fatalf("%d bytes left after the data", len(rest))
			}
		})
	}
}
