package accum

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkStepForms times the pure-Go forms of one sm90 e4m3 T-FDPA step
// (L = 32) that exist in this package, natively and as WebAssembly
// (GOOS=js GOARCH=wasm go test -exec="$(go env GOROOT)/lib/wasm/go_js_wasm_exec"),
// for the wasm/native table of BENCHMARKS.md: which form loses least in the
// browser. All forms give the same bits (TestStepFormsAgree).
func BenchmarkStepForms(b *testing.B) {
	s, expA, valA, a, bs := stepFormsInputs()
	var p [64]float64
	forms := []struct {
		name string
		step func(i int, c float32) float32
	}{
		{"step", func(i int, c float32) float32 { d, _ := s.step(a, bs[i], c); return d }},
		{"stepPrepared", func(i int, c float32) float32 { d, _ := s.stepPrepared(expA, valA, bs[i], c); return d }},
		{"products+finish", func(i int, c float32) float32 {
			e := s.products(expA, valA, bs[i], p[:32])
			d, _ := s.finish(e, p[:32], c)
			return d
		}},
	}
	for _, f := range forms {
		b.Run(f.name, func(b *testing.B) {
			var c float32
			i := 0
			for b.Loop() {
				c = f.step(i&255, c*0.5)
				i++
			}
			benchSink = c
		})
	}
}

var benchSink float32

func stepFormsInputs() (*tableStep, []int32, []float64, []uint16, [][]uint16) {
	m := MustLookup("sm90.wgmma.e4m3.f32").(*tfdpa)
	s := m.fast
	r := rand.New(rand.NewPCG(5, 6))
	a := make([]uint16, 32)
	for i := range a {
		a[i] = uint16(r.IntN(0x7f) | r.IntN(2)<<7)
	}
	bs := make([][]uint16, 256)
	for j := range bs {
		bs[j] = make([]uint16, 32)
		for i := range bs[j] {
			bs[j][i] = uint16(r.IntN(0x7f) | r.IntN(2)<<7)
		}
	}
	expA, valA := make([]int32, 32), make([]float64, 32)
	for i, x := range a {
		expA[i], valA[i] = s.exp[x], s.val[x]
	}
	return s, expA, valA, a, bs
}

// TestStepFormsAgree: the forms BenchmarkStepForms times give one result.
func TestStepFormsAgree(t *testing.T) {
	s, expA, valA, a, bs := stepFormsInputs()
	var p [32]float64
	for i, b := range bs {
		c := float32(i) * 0.37
		d0, ok0 := s.step(a, b, c)
		d1, ok1 := s.stepPrepared(expA, valA, b, c)
		e := s.products(expA, valA, b, p[:])
		d2, ok2 := s.finish(e, p[:], c)
		if d0 != d1 || d0 != d2 || !ok0 || !ok1 || !ok2 {
			t.Fatalf("column %d: %v %v %v (%v %v %v)", i, d0, d1, d2, ok0, ok1, ok2)
		}
	}
}
