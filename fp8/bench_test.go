package fp8

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// benchInput is N(0,1) data with a per-block magnitude spread, 64 Ki
// elements (a multiple of both block sizes).
func benchInput() []float32 {
	rng := rand.New(rand.NewPCG(11, 12))
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * float64(int(1)<<(i/512%8)))
	}
	return x
}

func benchElems(b *testing.B, n int) {
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "elems/s")
}

func BenchmarkQuantizeMX(b *testing.B) {
	x := benchInput()
	for _, f := range []Format{FormatE4M3, FormatE2M1} {
		b.Run(f.String(), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := QuantizeMX(f, x); err != nil {
					b.Fatal(err)
				}
			}
			benchElems(b, len(x))
		})
	}
}

func BenchmarkDequantizeMX(b *testing.B) {
	x := benchInput()
	codes, scales, _ := QuantizeMX(FormatE4M3, x)
	for b.Loop() {
		if _, err := DequantizeMX(FormatE4M3, codes, scales); err != nil {
			b.Fatal(err)
		}
	}
	benchElems(b, len(x))
}

func BenchmarkQuantizeNVFP4(b *testing.B) {
	x := benchInput()
	for b.Loop() {
		if _, _, err := QuantizeNVFP4(x, NVFP4TensorScale(300)); err != nil {
			b.Fatal(err)
		}
	}
	benchElems(b, len(x))
}

func BenchmarkDequantizeNVFP4(b *testing.B) {
	x := benchInput()
	ts := NVFP4TensorScale(300)
	codes, scales, _ := QuantizeNVFP4(x, ts)
	for b.Loop() {
		if _, err := DequantizeNVFP4(codes, scales, ts); err != nil {
			b.Fatal(err)
		}
	}
	benchElems(b, len(x))
}

func BenchmarkEncodeE4M3(b *testing.B) {
	x := benchInput()
	var s uint8
	for b.Loop() {
		for _, v := range x {
			s += uint8(EncodeE4M3(v, SatFinite))
		}
	}
	benchElems(b, len(x))
	_ = s
}

func BenchmarkEncodeE4M3Legacy(b *testing.B) {
	x := benchInput()
	var s uint32
	for b.Loop() {
		for _, v := range x {
			s += legacyEncode(math.Float32bits(v), 3, -6, 0x7e, 0x7f, 0x7f, SatFinite)
		}
	}
	benchElems(b, len(x))
	_ = s
}

// BenchmarkEncodeScaled is EncodeScaled of 64 Ki N(0,1)-ish elements (the
// vector kernel where the build has one, the Go loops otherwise: run with
// -tags purego for those), for a scale of 1 (no division) and 0.37, into
// contiguous codes and at stride 32 (the V block buffer of attention's
// cache write).
func BenchmarkEncodeScaled(b *testing.B) {
	x := benchInput()
	for _, f := range []Format{FormatE4M3, FormatE5M2, FormatE2M1, FormatBF16, FormatFP16} {
		for _, scale := range []float32{1, 0.37} {
			for _, stride := range []int{1, 32} {
				b.Run(fmt.Sprintf("%v/scale=%g/stride=%d", f, scale, stride), func(b *testing.B) {
					dst := make([]uint16, (len(x)-1)*stride+1)
					for b.Loop() {
						f.EncodeScaled(dst, stride, x, scale, SatFinite)
					}
					benchElems(b, len(x))
				})
			}
		}
	}
}

// BenchmarkEncodeScaledRows is a KV cache's block store: 512 tokens of 128
// elements in one call, K's layout (rows of a token) and V's (transposed,
// columns a block apart), for the formats the browser's needle and scales
// write; in the js/wasm build one kernel call (wasmk/encode.wat).
func BenchmarkEncodeScaledRows(b *testing.B) {
	const rows, cols = 512, 128
	x := benchInput()[:rows*cols]
	for _, f := range []Format{FormatE4M3, FormatBF16} {
		for _, scale := range []float32{1, 0.37} {
			for _, l := range []struct {
				name           string
				dstRow, dstCol int
			}{{"K", cols, 1}, {"V", 1, rows}} {
				b.Run(fmt.Sprintf("%v/scale=%g/%s", f, scale, l.name), func(b *testing.B) {
					dst := make([]uint16, rows*cols)
					for b.Loop() {
						f.EncodeScaledRows(dst, l.dstRow, l.dstCol, x, cols, rows, cols, scale, SatFinite)
					}
					benchElems(b, rows*cols)
				})
			}
		}
	}
}
