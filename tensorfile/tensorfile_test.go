package tensorfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// want is the content of every test file (testdata/gen.py): (i − 11)/8.
func want(scale float32) []float32 {
	w := make([]float32, 24)
	for i := range w {
		w[i] = float32(i-11) / 8 * scale
	}
	return w
}

func TestReadNumPyFiles(t *testing.T) {
	for _, tc := range []struct {
		file, name string
		opt        Options
		dt         DType
		scale      float32
	}{
		{"f32.npy", "", Options{}, F32, 1},
		{"f16.npy", "", Options{}, F16, 1},
		{"f64.npy", "", Options{}, F64, 1},
		{"f32be.npy", "", Options{}, F32, 1},
		{"bf16_v2.npy", "", Options{Void2: BF16}, BF16, 1},
		{"e4m3_v1.npy", "", Options{Void1: F8E4M3}, F8E4M3, 0.5},
		{"qkv.safetensors", "f32", Options{}, F32, 1},
		{"qkv.safetensors", "f16", Options{}, F16, 1},
		{"qkv.safetensors", "bf16", Options{}, BF16, 1},
		{"qkv.safetensors", "e4m3", Options{}, F8E4M3, 0.5},
	} {
		t.Run(tc.file+"/"+tc.name, func(t *testing.T) {
			x, err := ReadFile(filepath.Join("testdata", tc.file), tc.name, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			if x.DType != tc.dt || len(x.Shape) != 3 || x.Shape[0] != 2 || x.Shape[1] != 3 || x.Shape[2] != 4 {
				t.Fatalf("got %s %v, want %s [2 3 4]", x.DType, x.Shape, tc.dt)
			}
			w := want(tc.scale)
			for i := range w {
				if x.Data[i] != w[i] || math.Signbit(float64(x.Data[i])) != math.Signbit(float64(w[i])) {
					t.Fatalf("element %d = %g, want %g", i, x.Data[i], w[i])
				}
			}
			if err := x.CheckFinite(); err != nil {
				t.Fatal(err)
			}
		})
	}
	x, err := ReadFile("testdata/int32.npy", "", Options{})
	if err != nil || x.DType != I32 || len(x.Data) != 4 || x.Data[3] != 3 {
		t.Fatalf("int32: %v %+v", err, x)
	}
	x, err = ReadFile("testdata/scalar.npy", "", Options{})
	if err != nil || len(x.Shape) != 0 || len(x.Data) != 1 || x.Data[0] != 1.5 {
		t.Fatalf("scalar: %v %+v", err, x)
	}
	x, err = ReadFile("testdata/empty.npy", "", Options{})
	if err != nil || len(x.Data) != 0 || len(x.Shape) != 2 {
		t.Fatalf("empty: %v %+v", err, x)
	}
	f, _ := os.Open("testdata/qkv.safetensors")
	defer f.Close()
	st, _ := f.Stat()
	names, err := SafetensorsNames("qkv.safetensors", f, st.Size())
	if err != nil || strings.Join(names, ",") != "bf16,e4m3,f16,f32" {
		t.Fatalf("names %v, %v", names, err)
	}
}

// TestBadFiles: every fault gives an error naming the file and the fault.
func TestBadFiles(t *testing.T) {
	good, err := os.ReadFile("testdata/f32.npy")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile("testdata/qkv.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	hdr := func(s string) []byte { // a .npy 1.0 file with header s and no data
		b := []byte(npyMagic + "\x01\x00")
		b = binary.LittleEndian.AppendUint16(b, uint16(len(s)))
		return append(b, s...)
	}
	stHdr := func(n uint64, s string) []byte {
		b := binary.LittleEndian.AppendUint64(nil, n)
		return append(b, s...)
	}
	stJSON := func(s string) []byte { return stHdr(uint64(len(s)), s) }
	huge := []byte(npyMagic + "\x02\x00")
	huge = binary.LittleEndian.AppendUint32(huge, 4000000000) // the most 4 bytes can claim
	for _, tc := range []struct {
		name, file string
		data       []byte
		opt        Options
		msg        string
	}{
		{"truncated data", "t.npy", good[:len(good)-3], Options{}, "truncated"},
		{"truncated header", "t.npy", good[:40], Options{}, "truncated"},
		{"trailing bytes", "t.npy", append(bytes.Clone(good), 0), Options{}, "after the data"},
		{"no magic", "t.npy", []byte("PK\x03\x04 not numpy at all"), Options{}, "magic"},
		{"empty", "t.npy", nil, Options{}, "truncated"},
		{"4 GB header", "t.npy", huge, Options{}, "more than 1048576"},
		{"version 9", "t.npy", []byte(npyMagic + "\x09\x00\x00\x00"), Options{}, "version 9.0"},
		{"int16 dtype", "t.npy", hdr("{'descr': '<i2', 'fortran_order': False, 'shape': (0,), }"), Options{}, `unsupported element type "<i2"`},
		{"fortran", "fortran.npy", mustRead(t, "testdata/fortran.npy"), Options{}, "Fortran"},
		{"V2 unnamed", "bf16_v2.npy", mustRead(t, "testdata/bf16_v2.npy"), Options{}, "name its type"},
		{"huge shape", "t.npy", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000, 1000000), }"), Options{}, "the limit"},
		{"overflowing shape", "t.npy", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"), Options{}, "dimension"},
		{"shape over MaxElements", "t.npy", hdr("{'descr': '<f4', 'fortran_order': False, 'shape': (5, 5), }"), Options{MaxElements: 24}, "more than 24"},
		{"missing key", "t.npy", hdr("{'descr': '<f4', 'shape': (2,), }"), Options{}, `no "fortran_order"`},
		{"garbage header", "t.npy", hdr("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,), }"), Options{}, "True or False"},
		{"st empty", "t.safetensors", nil, Options{}, "truncated"},
		{"st 10 GB header", "t.safetensors", stHdr(10<<30, "{}"), Options{}, "more than 1048576"},
		{"st header past end", "t.safetensors", stHdr(100, "{}"), Options{}, "truncated"},
		{"st bad json", "t.safetensors", stHdr(5, "{\"a\":"), Options{}, "bad header JSON"},
		{"st bad dtype", "t.safetensors", stJSON(`{"a":{"dtype":"I16","shape":[1],"data_offsets":[0,4]}}`), Options{}, `unsupported dtype "I16"`},
		{"st offsets past end", "t.safetensors", stJSON(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`), Options{}, "beyond"},
		{"st size mismatch", "t.safetensors", append(stJSON(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`), 0, 0, 0, 0), Options{}, "needs 8"},
		{"st truncated data", "t.safetensors", st[:len(st)-1], Options{}, "beyond"},
		{"st unnamed", "qkv.safetensors", st, Options{}, "holds 4 tensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, tc.file)
			if err := os.WriteFile(p, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(p, "", tc.opt)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tc.file+":") || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("error %q: want it to start with %q and say %q", err, tc.file+":", tc.msg)
			}
			if tc.msg == "truncated" && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%v does not wrap io.ErrUnexpectedEOF", err)
			}
		})
	}
}

func TestCheckFinite(t *testing.T) {
	x := &Tensor{File: "k.npy", Shape: []int{2, 3}, Data: []float32{0, 1, 2, 3, float32(math.NaN()), 5}}
	if err := x.CheckFinite(); err == nil || err.Error() != "k.npy: element [1 1] is NaN (inputs must be finite)" {
		t.Fatalf("got %v", err)
	}
	x.Data[4] = float32(math.Inf(-1))
	if err := x.CheckFinite(); err == nil || !strings.Contains(err.Error(), "is -Inf") {
		t.Fatalf("got %v", err)
	}
	// Several chunks: the first bad element is named, whichever goroutine
	// finds which.
	big := &Tensor{File: "v.npy", Shape: []int{5 << 20}, Data: make([]float32, 5<<20)}
	if err := big.CheckFinite(); err != nil {
		t.Fatalf("finite: %v", err)
	}
	big.Data[4<<20+3], big.Data[3<<20+5], big.Data[3<<20+9] = float32(math.NaN()), float32(math.Inf(1)), float32(math.NaN())
	for range 20 {
		if err := big.CheckFinite(); err == nil || err.Error() != fmt.Sprintf("v.npy: element [%d] is +Inf (inputs must be finite)", 3<<20+5) {
			t.Fatalf("got %v", err)
		}
	}
	big.Data[5<<20-1] = math.MaxFloat32
	big.Data[3<<20+5], big.Data[3<<20+9], big.Data[4<<20+3] = 0, 0, 0
	if err := big.CheckFinite(); err != nil {
		t.Fatalf("MaxFloat32 is finite: %v", err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzNPY: no input panics, and whatever is accepted holds as many
// elements as its shape says, from a file no larger than the data.
func FuzzNPY(f *testing.F) {
	for _, n := range []string{"f32.npy", "f16.npy", "f64.npy", "bf16_v2.npy", "scalar.npy", "empty.npy"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ReadNPY("fuzz.npy", bytes.NewReader(b), int64(len(b)), Options{Void2: BF16, Void1: F8E4M3, MaxElements: 1 << 16})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.npy: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		n := 1
		for _, d := range x.Shape {
			n *= d
		}
		if n != len(x.Data) || len(x.Data)*x.DType.Size() > len(b) {
			t.Fatalf("shape %v, %d elements from %d bytes", x.Shape, len(x.Data), len(b))
		}
	})
}

// FuzzSafetensors: as FuzzNPY for safetensors files.
func FuzzSafetensors(f *testing.F) {
	b, err := os.ReadFile("testdata/qkv.safetensors")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b, "f32")
	f.Add(b, "e4m3")
	f.Add(b, "")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		x, err := ReadSafetensors("fuzz.safetensors", bytes.NewReader(b), int64(len(b)), name, Options{MaxElements: 1 << 16})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.safetensors: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		n := 1
		for _, d := range x.Shape {
			n *= d
		}
		if n != len(x.Data) || len(x.Data)*x.DType.Size() > len(b) {
			t.Fatalf("shape %v, %d elements from %d bytes", x.Shape, len(x.Data), len(b))
		}
	})
}

// WriteNPY writes what np.save writes (byte for byte for the test file)
// and what ReadNPY reads back.
func TestWriteNPY(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f32.npy")
	if err := WriteNPY(p, []int{2, 3, 4}, want(1)); err != nil {
		t.Fatal(err)
	}
	got, want := mustRead(t, p), mustRead(t, "testdata/f32.npy")
	if !bytes.Equal(got, want) {
		t.Fatalf("WriteNPY wrote\n%q\nnp.save\n%q", got[:128], want[:128])
	}
	if err := WriteNPY(p, []int{5}, want32(5)); err != nil {
		t.Fatal(err)
	}
	x, err := ReadFile(p, "", Options{})
	if err != nil || len(x.Shape) != 1 || x.Shape[0] != 5 || x.Data[4] != 4 {
		t.Fatalf("%v %+v", err, x)
	}
}

func want32(n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i)
	}
	return x
}

// Options.Accept refuses a tensor stored in another type before reading
// its data, naming the file, the type and the types accepted: an int32
// .npy (or an I32 safetensors tensor) given as K is an error.
func TestAcceptTypes(t *testing.T) {
	dir := t.TempDir()
	ints := filepath.Join(dir, "ints.safetensors")
	h := `{"k":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}`
	if err := os.WriteFile(ints, append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))),
		h+"\x01\x00\x00\x00\x02\x00\x00\x00"...), 0o644); err != nil {
		t.Fatal(err)
	}
	floats := Options{Accept: FloatTypes}
	for _, tc := range []struct {
		path, name string
		opt        Options
		msg        string // "" when the read succeeds
	}{
		{"testdata/int32.npy", "", floats, "int32.npy: element type int32 is not accepted here (want float32, float16, bfloat16, float8_e4m3fn, float64)"},
		{ints, "k", floats, `ints.safetensors: tensor "k": element type int32 is not accepted here (want float32`},
		{"testdata/int32.npy", "", Options{}, ""},
		{ints, "k", Options{Accept: []DType{I32, I64}}, ""},
		{"testdata/f16.npy", "", floats, ""},
		{"testdata/qkv.safetensors", "e4m3", floats, ""},
		{"testdata/f16.npy", "", Options{Accept: []DType{F32}}, "f16.npy: element type float16 is not accepted here (want float32)"},
	} {
		_, err := ReadFile(tc.path, tc.name, tc.opt)
		switch {
		case tc.msg == "" && err != nil:
			t.Errorf("%s %s: %v", tc.path, tc.name, err)
		case tc.msg != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.msg)):
			t.Errorf("%s %s: error %v, want %q", tc.path, tc.name, err, tc.msg)
		}
	}
}

// Index reads headers only: the types and shapes of a .npy file and of
// every tensor of a safetensors file, and the faults ReadFile finds
// without the data (a truncated file, a shape over the limit).
func TestIndex(t *testing.T) {
	for _, tc := range []struct {
		path string
		opt  Options
		want string // names:types:shapes, or the error's start
	}{
		{"testdata/f32.npy", Options{}, ":float32:[2 3 4]"},
		{"testdata/int32.npy", Options{Accept: FloatTypes}, ":int32:[4]"}, // Accept is not Index's
		{"testdata/qkv.safetensors", Options{}, "bf16:bfloat16:[2 3 4] e4m3:float8_e4m3fn:[2 3 4] f16:float16:[2 3 4] f32:float32:[2 3 4]"},
		{"testdata/bf16_v2.npy", Options{}, "bf16_v2.npy: element type"},
		{"testdata/f32.npy", Options{MaxElements: 23}, "f32.npy: shape [2 3 4] has more than 23 elements (the limit)"},
		{"testdata/qkv.safetensors", Options{MaxElements: 23}, `qkv.safetensors: tensor "`},
		{"testdata/gen.py", Options{}, "gen.py: unknown file type"},
	} {
		infos, err := Index(tc.path, tc.opt)
		var got []string
		for _, i := range infos {
			got = append(got, fmt.Sprintf("%s:%s:%v", i.Name, i.DType, i.Shape))
		}
		if err != nil {
			got = []string{err.Error()}
		}
		if s := strings.Join(got, " "); !strings.HasPrefix(s, tc.want) {
			t.Errorf("Index(%s) = %q, want %q", tc.path, s, tc.want)
		}
	}
	good := mustRead(t, "testdata/f32.npy")
	p := filepath.Join(t.TempDir(), "cut.npy")
	os.WriteFile(p, good[:len(good)-4], 0o644)
	if _, err := Index(p, Options{}); err == nil || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.HasPrefix(err.Error(), "cut.npy: truncated") {
		t.Errorf("truncated: %v", err)
	}
	if n := (Info{Shape: []int{2, 3, 4}}).Elements(); n != 24 {
		t.Errorf("Elements = %d", n)
	}
}

// WriteSafetensors writes what ReadFile and Index read back, with the
// header padded to 8 bytes as the safetensors library pads it, and
// refuses a shape that does not hold its data.
func TestWriteSafetensors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "w.safetensors")
	ts := map[string]*Tensor{"layer0.q": {Shape: []int{1, 2, 3}, Data: want32(6)}, "a": {Shape: []int{5}, Data: want32(5)}, "s": {Data: []float32{7}}}
	if err := WriteSafetensors(p, ts); err != nil {
		t.Fatal(err)
	}
	b := mustRead(t, p)
	if n := binary.LittleEndian.Uint64(b); n%8 != 0 || int(8+n+4*12) != len(b) {
		t.Errorf("header of %d bytes in a file of %d", n, len(b))
	}
	for name, w := range ts {
		x, err := ReadFile(p, name, Options{})
		if err != nil || x.DType != F32 || fmt.Sprint(x.Shape) != fmt.Sprint(w.Shape) && len(w.Shape) > 0 || !slices.Equal(x.Data, w.Data) {
			t.Errorf("%s: %v %+v", name, err, x)
		}
	}
	if infos, err := Index(p, Options{}); err != nil || len(infos) != 3 || infos[1].Name != "layer0.q" {
		t.Errorf("Index: %v %+v", err, infos)
	}
	for _, bad := range []map[string]*Tensor{
		{"x": {Shape: []int{2}, Data: want32(3)}},
		{"__metadata__": {Data: []float32{1}}},
	} {
		if err := WriteSafetensors(p, bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

// A little-endian float32 file read in place gives every value's bits
// (NaN payloads, −0, subnormals) across the 16384-element chunks, and a
// file cut inside its data names the whole elements it held, as the
// converting path does.
func TestReadF32InPlace(t *testing.T) {
	const n = 40000
	x := make([]float32, n)
	for i := range x {
		x[i] = math.Float32frombits(uint32(i)*2654435761 ^ 0x5bd1e995)
	}
	x[7], x[16384], x[n-1] = float32(math.Copysign(0, -1)), math.Float32frombits(0x7fc00123), math.Float32frombits(1)
	path := filepath.Join(t.TempDir(), "big.npy")
	if err := WriteNPY(path, []int{n}, x); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(path, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if math.Float32bits(got.Data[i]) != math.Float32bits(x[i]) {
			t.Fatalf("element %d: %#x, want %#x", i, math.Float32bits(got.Data[i]), math.Float32bits(x[i]))
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A stream that ends early (the size checks cannot see it coming).
	cut := bytes.NewReader(raw[:len(raw)-4*(n-20000)])
	if _, err := ReadNPY("cut.npy", cut, int64(len(raw)), Options{}); err == nil || !strings.Contains(err.Error(), "truncated data after 20000 of 40000 elements") {
		t.Fatalf("cut file: %v, want truncated data after 20000 of 40000 elements", err)
	}
}
