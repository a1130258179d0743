package tensorfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/fp8lab/fp8lab/fp8"
	"github.com/x448/float16"
)

// DType is the element type of a tensor in a file.
type DType uint8

// The element types.
const (
	Invalid DType = iota
	F32           // IEEE binary32
	F16           // IEEE binary16
	BF16          // bfloat16
	F8E4M3        // float8_e4m3fn (OCP e4m3: no infinities, NaN S.1111.111)
	F64           // IEEE binary64, rounded to float32 when read
	I64           // int64 (positions); values beyond ±2^24 are refused
	I32           // int32 (positions); values beyond ±2^24 are refused
	U8            // uint8 (masks)
	Bool          // bool (masks): 0 or 1
)

var dtypeNames = [...]string{"invalid", "float32", "float16", "bfloat16", "float8_e4m3fn", "float64", "int64", "int32", "uint8", "bool"}

// String returns the PyTorch name of the type: float32, float16, bfloat16,
// float8_e4m3fn, float64.
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("DType(%d)", d)
}

// ParseDType reads a type name: the PyTorch/NumPy names above, or the
// safetensors names F32, F16, BF16, F8_E4M3, F64.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(s) {
	case "float32", "f32", "fp32":
		return F32, nil
	case "float16", "f16", "fp16", "half":
		return F16, nil
	case "bfloat16", "bf16":
		return BF16, nil
	case "float8_e4m3fn", "f8_e4m3", "e4m3", "e4m3fn":
		return F8E4M3, nil
	case "float64", "f64", "fp64", "double":
		return F64, nil
	}
	return Invalid, fmt.Errorf("unknown tensor type %q (want float32, float16, bfloat16, float8_e4m3fn or float64)", s)
}

// Size is the width of one element in bytes.
func (d DType) Size() int {
	switch d {
	case F32, I32:
		return 4
	case F16, BF16:
		return 2
	case F8E4M3, U8, Bool:
		return 1
	case F64, I64:
		return 8
	}
	return 0
}

// Limits.
const (
	// MaxHeader bounds the header a file may claim (the .npy dict or the
	// safetensors JSON), in bytes. The safetensors library allows 100 MB;
	// no file of Q/K/V needs more than a few kilobytes.
	MaxHeader = 1 << 20
	// DefaultMaxElements is the default bound on the elements of one
	// tensor: 2^28 values (1 GiB as float32).
	DefaultMaxElements = 1 << 28
	// MaxDims bounds the number of dimensions.
	MaxDims = 8
)

// Options tune a read. The zero value reads every self-describing type
// with DefaultMaxElements.
type Options struct {
	// MaxElements bounds the elements of the tensor read (0 means
	// DefaultMaxElements); a file claiming more is refused before any
	// allocation.
	MaxElements int64
	// Void2 and Void1 name the types of the .npy opaque element types
	// '<V2' and '|V1' that ml_dtypes writes for bfloat16 (or float16) and
	// float8_e4m3fn arrays; Invalid refuses such files.
	Void2, Void1 DType
	// Accept, when not empty, lists the element types the caller takes:
	// a tensor stored in another type is refused before its data is read,
	// the error naming the types accepted (attention inputs take
	// FloatTypes: an int32 K is an error, not a tensor of small integers).
	Accept []DType
}

// FloatTypes are the floating-point element types, the ones Q, K and V
// may be stored in.
var FloatTypes = []DType{F32, F16, BF16, F8E4M3, F64}

// CheckType returns an error naming what (the file, or the file and the
// tensor), dt and the accepted types when o.Accept is set and does not
// hold dt; the readers call it before reading any data, and a caller that
// has only an Index checks its types with it.
func (o Options) CheckType(what string, dt DType) error {
	if len(o.Accept) == 0 || slices.Contains(o.Accept, dt) {
		return nil
	}
	names := make([]string, len(o.Accept))
	for i, a := range o.Accept {
		names[i] = a.String()
	}
	return fmt.Errorf("%s: element type %s is not accepted here (want %s)", what, dt, strings.Join(names, ", "))
}

func (o Options) maxElements() int64 {
	if o.MaxElements > 0 {
		return o.MaxElements
	}
	return DefaultMaxElements
}

// Tensor is one tensor read from a file: its values as float32 (exact for
// every type but float64), row major.
type Tensor struct {
	File  string // the name of the file it was read from
	Name  string // its name inside a safetensors file ("" for .npy)
	DType DType  // the type it was stored in
	Shape []int
	Data  []float32
}

// Len is the number of elements, the product of Shape.
func (t *Tensor) Len() int { return len(t.Data) }

// what names the tensor in messages: "q.npy" or "qkv.safetensors: q".
func (t *Tensor) what() string {
	if t.Name != "" {
		return t.File + ": tensor " + t.Name
	}
	return t.File
}

// CheckFinite returns an error naming the file and the index of the first
// NaN or infinite element, or nil. A large tensor is scanned in chunks on
// GOMAXPROCS goroutines (the first bad element is still the one named).
func (t *Tensor) CheckFinite() error {
	const chunk = 1 << 20
	n := len(t.Data)
	chunks := (n + chunk - 1) / chunk
	bad := int64(n) // the first non-finite element found so far
	var mu sync.Mutex
	inChunks(chunks, func(c int) bool {
		mu.Lock()
		stop := int64(c*chunk) >= bad // a chunk after a bad element: nothing to find
		mu.Unlock()
		if stop {
			return false
		}
		lo := c * chunk
		for i, x := range t.Data[lo:min(lo+chunk, n)] {
			// x − x is 0 for a finite x, NaN for ±∞ and NaN.
			if x-x != 0 {
				mu.Lock()
				bad = min(bad, int64(lo+i))
				mu.Unlock()
				break
			}
		}
		return true
	})
	if bad == int64(n) {
		return nil
	}
	x := t.Data[bad]
	what := "NaN"
	if x == x {
		what = fmt.Sprint(x)
	}
	return fmt.Errorf("%s: element %v is %s (inputs must be finite)", t.what(), t.index(int(bad)), what)
}

// index returns the multi-index of flat element i.
func (t *Tensor) index(i int) []int {
	idx := make([]int, len(t.Shape))
	for d := len(t.Shape) - 1; d >= 0; d-- {
		if t.Shape[d] > 0 {
			idx[d] = i % t.Shape[d]
			i /= t.Shape[d]
		}
	}
	return idx
}

// ReadFile reads a tensor from the file at path: a .npy file (name must be
// empty) or a .safetensors file (name picks the tensor; empty means its
// only tensor). Messages name the file by its base name.
func ReadFile(path, name string, opt Options) (*Tensor, error) {
	f, size, base, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		if name != "" {
			return nil, fmt.Errorf("%s: a .npy file holds one tensor; no tensor name (got %q)", base, name)
		}
		return ReadNPY(base, f, size, opt)
	case ".safetensors":
		return ReadSafetensors(base, f, size, name, opt)
	}
	return nil, fmt.Errorf("%s: unknown file type (want .npy or .safetensors)", base)
}

// Info is what a file says of one tensor it holds, read from its header
// alone: no data is read.
type Info struct {
	File  string // the file's base name, as in messages
	Name  string // the tensor's name in a safetensors file ("" for .npy)
	DType DType
	Shape []int
}

// Elements is the product of Shape.
func (i Info) Elements() int64 {
	n := int64(1)
	for _, d := range i.Shape {
		n *= int64(d)
	}
	return n
}

// Index reads the header of the file at path and returns every tensor it
// holds, with the checks of ReadFile that need no data (the header's
// bounds, the data's size against the file's, opt.MaxElements and the
// opaque .npy types): one for a .npy file, every tensor of a
// .safetensors file sorted by name. opt.Accept is not applied: a file may
// hold tensors of several types (positions next to Q); read each with
// the types its role takes.
func Index(path string, opt Options) ([]Info, error) {
	f, size, base, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".npy":
		h, err := readNPYHeader(base, f, size, opt)
		if err != nil {
			return nil, err
		}
		return []Info{{File: base, DType: h.dt, Shape: toInts(h.shape)}}, nil
	case ".safetensors":
		h, _, err := safetensorsHeader(base, f, size)
		if err != nil {
			return nil, err
		}
		out := make([]Info, 0, len(h))
		for name, e := range h {
			what := fmt.Sprintf("%s: tensor %q", base, name)
			if _, err := elements(what, e.Shape, opt.maxElements()); err != nil {
				return nil, err
			}
			out = append(out, Info{File: base, Name: name, DType: safetensorsDTypes[e.DType], Shape: toInts(e.Shape)})
		}
		slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Name, b.Name) })
		return out, nil
	}
	return nil, fmt.Errorf("%s: unknown file type (want .npy or .safetensors)", base)
}

// openRegular opens the regular file at path, returning it with its size
// and base name.
func openRegular(path string) (*os.File, int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, "", err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, "", err
	}
	base := filepath.Base(path)
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, "", fmt.Errorf("%s: not a regular file", base)
	}
	return f, st.Size(), base, nil
}

// errTruncated wraps io.ErrUnexpectedEOF with the file and what was being read.
func truncated(file, what string, want, have int64) error {
	return fmt.Errorf("%s: truncated: the %s needs %d bytes, the file has %d: %w", file, what, want, have, io.ErrUnexpectedEOF)
}

// elements multiplies the dimensions, refusing negative ones, more than
// MaxDims and products above max.
func elements(file string, shape []int64, max int64) (int64, error) {
	if len(shape) > MaxDims {
		return 0, fmt.Errorf("%s: %d dimensions (at most %d)", file, len(shape), MaxDims)
	}
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("%s: negative dimension %d in shape %v", file, d, shape)
		}
		if d != 0 && n > max/d {
			return 0, fmt.Errorf("%s: shape %v has more than %d elements (the limit)", file, shape, max)
		}
		n *= d
	}
	if n > max {
		return 0, fmt.Errorf("%s: shape %v has %d elements, more than %d (the limit)", file, shape, n, max)
	}
	return n, nil
}

// readData reads n elements of type dt from r (byte order bo) into float32.
// A large tensor (parallelReadBytes or more) in a reader that can also read
// at an offset and seek (a file, a section of one) is read in chunks on
// GOMAXPROCS goroutines, each reading and converting its own elements:
// the same values, and the same error as one reader (that of the first
// chunk that fails, in the file's order); r is then left after the data,
// as a sequential read leaves it.
func readData(file string, r io.Reader, n int64, dt DType, bo binary.ByteOrder) ([]float32, error) {
	size := int64(dt.Size())
	if ra, ok := r.(readSeekerAt); ok && size > 0 && n*size >= parallelReadBytes {
		return readDataAt(file, ra, n, dt, bo)
	}
	out := make([]float32, n)
	return out, readRange(file, r, out, 0, n, dt, bo)
}

// readSeekerAt is a reader whose data readData can read in parallel.
type readSeekerAt interface {
	io.Reader
	io.ReaderAt
	io.Seeker
}

// parallelReadBytes is the smallest tensor readData reads in parallel, and
// the bytes one of its goroutines reads at a time.
var parallelReadBytes int64 = 8 << 20 // a var: tests read small tensors in parallel

// readDataAt is readData's parallel path: r's data starts at its current
// offset.
func readDataAt(file string, r readSeekerAt, n int64, dt DType, bo binary.ByteOrder) ([]float32, error) {
	off, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	size := int64(dt.Size())
	out := make([]float32, n)
	per := parallelReadBytes / size // elements a chunk
	chunks := int((n + per - 1) / per)
	errs := make([]error, chunks)
	inChunks(chunks, func(c int) bool {
		i0 := int64(c) * per
		m := min(per, n-i0)
		sr := io.NewSectionReader(r, off+i0*size, m*size)
		errs[c] = readRange(file, sr, out[i0:i0+m], i0, n, dt, bo)
		// A file that ended early fails every chunk after this one too:
		// this goroutine stops (the first failing chunk is the one named).
		return !errors.Is(errs[c], io.ErrUnexpectedEOF)
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if _, err := r.Seek(off+n*size, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return out, nil
}

// inChunks calls fn(c) for the chunks c = 0 … chunks−1, each once, on up
// to GOMAXPROCS goroutines that claim them in order; a goroutine whose fn
// returns false claims no more. It returns when every goroutine has.
func inChunks(chunks int, fn func(c int) bool) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), chunks) {
		wg.Go(func() {
			for {
				c := int(next.Add(1) - 1)
				if c >= chunks || !fn(c) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// readRange reads len(out) elements of type dt from r (byte order bo) into
// out: the elements first … first+len(out)−1 of a tensor of total (for
// messages).
func readRange(file string, r io.Reader, out []float32, first, total int64, dt DType, bo binary.ByteOrder) error {
	n := int64(len(out))
	size := dt.Size()
	buf := make([]byte, 64<<10)
	// Little-endian float32 on a little-endian host: the file's bytes are
	// the values' own, read into out in place (a 512 MB K or V of a
	// 131k-token layer was a conversion loop on one core).
	direct := dt == F32 && bo == binary.ByteOrder(binary.LittleEndian) && hostLittleEndian
	per := len(buf) / size
	for i := int64(0); i < n; {
		m := min(int64(per), n-i)
		b := buf[:m*int64(size)]
		o := out[i : i+m]
		if direct {
			b = unsafe.Slice((*byte)(unsafe.Pointer(&o[0])), 4*len(o))
		}
		if got, err := io.ReadFull(r, b); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				// The whole elements the file held: the same count
				// whichever pieces or chunks it was read in.
				return fmt.Errorf("%s: truncated data after %d of %d elements: %w", file, first+i+int64(got/size), total, io.ErrUnexpectedEOF)
			}
			return fmt.Errorf("%s: %w", file, err)
		}
		switch dt {
		case F32:
			if direct {
				break // read in place
			}
			for j := range o {
				o[j] = math.Float32frombits(bo.Uint32(b[4*j:]))
			}
		case F64:
			for j := range o {
				o[j] = float32(math.Float64frombits(bo.Uint64(b[8*j:])))
			}
		case F16:
			for j := range o {
				o[j] = float16.Frombits(bo.Uint16(b[2*j:])).Float32()
			}
		case BF16:
			for j := range o {
				o[j] = math.Float32frombits(uint32(bo.Uint16(b[2*j:])) << 16)
			}
		case F8E4M3:
			for j := range o {
				o[j] = fp8.E4M3(b[j]).Float32()
			}
		case U8:
			for j := range o {
				o[j] = float32(b[j])
			}
		case Bool:
			for j := range o {
				if b[j] > 1 {
					return fmt.Errorf("%s: element %d is the byte %d, not a bool", file, first+i+int64(j), b[j])
				}
				o[j] = float32(b[j])
			}
		case I32, I64:
			for j := range o {
				var x int64
				if dt == I32 {
					x = int64(int32(bo.Uint32(b[4*j:])))
				} else {
					x = int64(bo.Uint64(b[8*j:]))
				}
				if x > 1<<24 || x < -1<<24 {
					return fmt.Errorf("%s: element %d is %d, beyond ±2^24 (the integers read exactly)", file, first+i+int64(j), x)
				}
				o[j] = float32(x)
			}
		default:
			return fmt.Errorf("%s: cannot read type %s", file, dt)
		}
		i += m
	}
	return nil
}

func toInts(s []int64) []int {
	out := make([]int, len(s))
	for i, x := range s {
		out[i] = int(x)
	}
	return out
}

// hostLittleEndian is true on a little-endian host (amd64, arm64, wasm).
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1
