package accum

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// BenchmarkStepForms times the pure-Go forms of one sm90 e4m3 T-FDPA step
// (L = 32) that exist in this package, natively and as WebAssembly
// (GOOS=js GOARCH=wasm go test -exec="$(go env GOROOT)/lib/wasm/go_js_wasm_exec"),
// for the wasm/native table of BENCHMARKS.md: which form loses least in the
// browser. step and stepPrepared are the build's forms (the *Trunc forms in
// WebAssembly, truncForms); all forms give the same bits (TestStepFormsAgree,
// TestStepFormsEqual, FuzzStepForms).
func BenchmarkStepForms(b *testing.B) {
	s, expA, valA, a, bs := stepFormsInputs()
	var p [64]float64
	forms := []struct {
		name string
		step func(i int, c float32) float32
	}{
		{"step", func(i int, c float32) float32 { d, _ := s.step(a, bs[i], c); return d }},
		{"stepTrunc", func(i int, c float32) float32 { d, _ := s.stepTrunc(a, bs[i], c); return d }},
		{"stepPrepared", func(i int, c float32) float32 { d, _ := s.stepPrepared(expA, valA, bs[i], c); return d }},
		{"stepPreparedInt", func(i int, c float32) float32 { d, _ := s.stepPreparedInt(expA, valA, bs[i], c); return d }},
		{"stepPreparedTrunc", func(i int, c float32) float32 { d, _ := s.stepPreparedTrunc(expA, valA, bs[i], c); return d }},
		{"productsFinish", func(i int, c float32) float32 {
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

// pureSteppers returns every model with a table step, as a copy that runs
// the pure-Go code (no assembly entries), its step length, its input
// format and its reference step (nil where the model has none here).
func pureSteppers(t testing.TB) (names []string, steps []*tableStep, ls []int, ins []fp8.Format, refs []func(a, b []uint16, c float32) float32) {
	t.Helper()
	for _, m := range Models() {
		var s *tableStep
		var ref func(a, b []uint16, c float32) float32
		in := m.Info().In
		switch m := m.(type) {
		case *tfdpa:
			s, ref = m.fast, m.refStep
		case *mmaSyncEmu:
			s, in = m.fast, m.in
		}
		if s == nil {
			continue
		}
		p := *s
		p.ent = nil
		names, steps, ls, ins, refs = append(names, m.Name()), append(steps, &p), append(ls, m.Info().Step.L), append(ins, in), append(refs, ref)
	}
	if len(names) < 12 {
		t.Fatalf("only %d models have a table step", len(names))
	}
	return
}

// stepFormsAll runs every pure-Go form of one step (len(a) <= 64) and
// reports the first that differs from stepPreparedInt, the native form.
func stepFormsAll(s *tableStep, a, b []uint16, c float32) (name string, d, want float32, ok, wantOK bool) {
	n := len(a)
	var expA [64]int32
	var valA [64]float64
	var p [64]float64
	for i, x := range a {
		expA[i], valA[i] = s.exp[x], s.val[x]
	}
	want, wantOK = s.stepPreparedInt(expA[:n], valA[:n], b, c)
	eP := s.products(expA[:n], valA[:n], b, p[:n])
	forms := []struct {
		name string
		f    func() (float32, bool)
	}{
		{"step", func() (float32, bool) { return s.step(a, b, c) }},
		{"stepTrunc", func() (float32, bool) { return s.stepTrunc(a, b, c) }},
		{"stepPrepared", func() (float32, bool) { return s.stepPrepared(expA[:n], valA[:n], b, c) }},
		{"stepPreparedTrunc", func() (float32, bool) { return s.stepPreparedTrunc(expA[:n], valA[:n], b, c) }},
		{"productsFinish", func() (float32, bool) {
			if eP > 1000 {
				return 0, false
			}
			return s.finish(eP, p[:n], c)
		}},
	}
	for _, f := range forms {
		if d, ok := f.f(); !sameStep(d, ok, want, wantOK) {
			return f.name, d, want, ok, wantOK
		}
	}
	return "", want, want, wantOK, wantOK
}

// TestStepFormsEqual checks every pure-Go form of the table step (the
// native int64 forms, the WebAssembly build's Trunc forms, products +
// finish) against each other, bit for bit, and against the model's
// reference step where it has one, on every model with a table step: every
// step length 0..L (every tail of a chunk of eight), random codes with NaN,
// inf, zero and subnormal codes, extreme exponents, exact cancellation,
// and accumulators of every kind.
func TestStepFormsEqual(t *testing.T) {
	names, steps, ls, ins, refs := pureSteppers(t)
	r := rand.New(rand.NewPCG(23, 9))
	checked := 0
	for k, name := range names {
		s, L := steps[k], ls[k]
		for n := 0; n <= L; n++ {
			for trial := 0; trial < 40; trial++ {
				a, b := stepCodes(r, ins[k], trial%5, n)
				c := randC(r, trial%3 == 0)
				if trial%11 == 0 {
					c = math.Float32frombits(r.Uint32())
				}
				form, d, want, ok, wantOK := stepFormsAll(s, a, b, c)
				if form != "" {
					t.Fatalf("%s n=%d: a=%x b=%x c=%08x: %s %08x %v, stepPreparedInt %08x %v", name, n, a, b, math.Float32bits(c), form, math.Float32bits(d), ok, math.Float32bits(want), wantOK)
				}
				if wantOK && refs[k] != nil {
					if ref := refs[k](a, b, c); math.Float32bits(ref) != math.Float32bits(want) {
						t.Fatalf("%s n=%d: a=%x b=%x c=%08x: table step %08x, reference %08x", name, n, a, b, math.Float32bits(c), math.Float32bits(want), math.Float32bits(ref))
					}
					checked++
				}
			}
		}
	}
	if checked < 5000 {
		t.Fatalf("only %d steps checked against a reference", checked)
	}
}

// FuzzStepForms compares the pure-Go forms of the table step on arbitrary
// codes and accumulators, for every model with a table step.
func FuzzStepForms(f *testing.F) {
	f.Add(uint8(0), []byte{0x38, 0x38, 0x7f, 0x01, 0x80, 0x00}, uint32(0x3f800000))
	f.Add(uint8(3), []byte{0xff, 0xff, 0x00, 0x7c, 0x01, 0x80, 0x34, 0x12}, uint32(0x80000000))
	f.Add(uint8(7), make([]byte, 130), uint32(0x7f800000))
	f.Add(uint8(1), []byte{0x7e, 0x00, 0x7e, 0x00, 0xfe, 0x00, 0x7e, 0x00, 0x01, 0x00, 0x01, 0x00}, uint32(0x00000001))
	f.Fuzz(func(t *testing.T, model uint8, data []byte, cb uint32) {
		names, steps, ls, _, refs := pureSteppers(t)
		k := int(model) % len(names)
		n := min(len(data)/4, ls[k])
		a, b := make([]uint16, n), make([]uint16, n)
		for i := range a {
			a[i] = uint16(data[4*i]) | uint16(data[4*i+1])<<8
			b[i] = uint16(data[4*i+2]) | uint16(data[4*i+3])<<8
		}
		c := math.Float32frombits(cb)
		form, d, want, ok, wantOK := stepFormsAll(steps[k], a, b, c)
		if form != "" {
			t.Fatalf("%s: a=%x b=%x c=%08x: %s %08x %v, stepPreparedInt %08x %v", names[k], a, b, cb, form, math.Float32bits(d), ok, math.Float32bits(want), wantOK)
		}
		if wantOK && refs[k] != nil {
			if ref := refs[k](a, b, c); math.Float32bits(ref) != math.Float32bits(want) {
				t.Fatalf("%s: a=%x b=%x c=%08x: table step %08x, reference %08x", names[k], a, b, cb, math.Float32bits(want), math.Float32bits(ref))
			}
		}
	})
}
