package fp8

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// encRowsInputs are float32s over every upper half with low halves 0
// (ties), 1, 0x8000, 0xffff and a random one: NaN, inf, zeros and
// subnormals among them.
func encRowsInputs() []float32 {
	rng := rand.New(rand.NewPCG(9, 10))
	src := make([]float32, 0, (1<<16)*5)
	for hi := range uint32(1 << 16) {
		for _, lo := range []uint32{0, 1, 0x8000, 0xffff, rng.Uint32() & 0xffff} {
			src = append(src, math.Float32frombits(hi<<16|lo))
		}
	}
	return src
}

// TestEncodeScaledRows: EncodeScaledRows stores what EncodeScaled row by
// row stores, code for code, for every format, saturation and scale, in
// the two layouts a KV cache writes (rows of K: rows apart, columns next
// to each other; transposed V: columns a block apart, rows next to each
// other), with a source row stride wider than a row; and it refuses bad
// strides and short slices. In the js/wasm build (TestWasmKernels runs it
// under node) this compares encode.wat's kernels with the Go loops.
func TestEncodeScaledRows(t *testing.T) {
	src := encRowsInputs()
	const cols, srcRow = 128, 131
	rows := (len(src) - cols) / srcRow
	for f := Format(0); f < numFormats; f++ {
		if f == FormatUE8M0 || f == FormatTF32 {
			continue
		}
		for _, sat := range []Saturation{SatFinite, NoSat} {
			for _, scale := range []float32{1, 0.37, 3e-5} {
				for _, l := range []struct{ dstRow, dstCol int }{{cols, 1}, {1, rows}} {
					n := (rows-1)*l.dstRow + (cols-1)*l.dstCol + 1
					got, want := make([]uint16, n), make([]uint16, n)
					f.EncodeScaledRows(got, l.dstRow, l.dstCol, src, srcRow, rows, cols, scale, sat)
					for r := range rows {
						f.EncodeScaled(want[r*l.dstRow:], l.dstCol, src[r*srcRow:][:cols], scale, sat)
					}
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%v sat %d scale %g layout %dx%d: code %d is %#x, EncodeScaled's %#x", f, sat, scale, l.dstRow, l.dstCol, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
	for _, c := range []struct {
		name                        string
		dst, dstRow, dstCol, srcRow int
		src                         int
		want                        string
	}{
		{"dstCol 0", 100, 10, 0, 10, 100, "dstCol must be at least 1"},
		{"negative row", 100, -1, 1, 10, 100, "dstCol must be at least 1, the row strides not negative"},
		{"short dst", 99, 10, 1, 10, 100, "writes dst[99] of 99"},
		{"short src", 100, 10, 1, 11, 100, "reads src[:109] of 100"},
	} {
		func() {
			defer func() {
				p := recover()
				if p == nil || !strings.Contains(p.(string), c.want) {
					t.Errorf("%s: panic %v, want %q", c.name, p, c.want)
				}
			}()
			FormatE4M3.EncodeScaledRows(make([]uint16, c.dst), c.dstRow, c.dstCol, make([]float32, c.src), c.srcRow, 10, 10, 1, SatFinite)
		}()
	}
}
