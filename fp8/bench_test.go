package fp8

import (
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
