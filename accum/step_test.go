package accum

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// asmSteppers returns every model whose table step takes the assembly
// kernels, with a copy of its table step that runs the pure-Go code.
func asmSteppers(t testing.TB) (names []string, asm, pure []*tableStep, ls []int, refs []func(a, b []uint16, c float32) float32) {
	t.Helper()
	for _, m := range Models() {
		var s *tableStep
		var L int
		var ref func(a, b []uint16, c float32) float32
		switch m := m.(type) {
		case *tfdpa:
			s, L, ref = m.fast, m.info.Step.L, m.refStep
		case *mmaSyncEmu:
			s, L = m.fast, m.info.Step.L
		}
		if s == nil {
			continue
		}
		if s.ent == nil {
			if haveStepAsm {
				t.Fatalf("%s: the assembly step is available but the model does not use it", m.Name())
			}
			continue
		}
		p := *s
		p.ent = nil
		names, asm, pure, ls, refs = append(names, m.Name()), append(asm, s), append(pure, &p), append(ls, L), append(refs, ref)
	}
	if !haveStepAsm {
		t.Skip("no assembly step on this build (purego tag, or not amd64 with AVX2): the pure-Go step is the only one")
	}
	if len(names) < 12 {
		t.Fatalf("only %d models take the assembly step", len(names))
	}
	return
}

// stepCodes draws n codes of format f of one kind: any code (NaN, inf,
// zero and subnormal codes included), finite codes over the whole
// exponent range, tiny codes (zeros and subnormals), or codes that
// cancel exactly.
func stepCodes(r *rand.Rand, f fp8.Format, kind, n int) (a, b []uint16) {
	a, b = make([]uint16, n), make([]uint16, n)
	mask := uint32(1)<<f.CodeBits() - 1
	sign := uint16(1) << (f.CodeBits() - 1)
	finite := func() uint16 {
		for {
			x := uint16(r.Uint32() & mask)
			if c := f.Decompose(uint32(x)).Class; c != fp8.NaN && c != fp8.Inf {
				return x
			}
		}
	}
	for i := range a {
		switch kind {
		case 0:
			a[i], b[i] = uint16(r.Uint32()&mask), uint16(r.Uint32()&mask)
		case 1, 4:
			a[i], b[i] = finite(), finite()
		case 2:
			a[i], b[i] = uint16(r.IntN(8))|uint16(r.IntN(2))*sign, finite()
		case 3:
			a[i], b[i] = uint16(f.Encode(float32(r.NormFloat64()), fp8.SatFinite)), uint16(f.Encode(float32(r.NormFloat64()), fp8.SatFinite))
		}
	}
	if kind == 4 { // exact cancellation
		copy(b[n/2:], b[:n/2])
		for i := 0; i < n/2; i++ {
			a[n/2+i] = a[i] ^ sign
		}
	}
	return
}

func sameStep(d1 float32, ok1 bool, d2 float32, ok2 bool) bool {
	return ok1 == ok2 && (!ok1 || math.Float32bits(d1) == math.Float32bits(d2))
}

// TestStepAsmEqualsPureGo checks the assembly step and chain kernels
// against the pure-Go table step, bit for bit, on every model that uses
// them: every step length 0..L (every tail of a multiple of 4), random
// codes with NaN, inf, zero and subnormal codes, extreme exponents, exact
// cancellation and accumulators of every kind (NaN, inf, zeros,
// subnormals, huge).
func TestStepAsmEqualsPureGo(t *testing.T) {
	names, asm, pure, ls, _ := asmSteppers(t)
	r := rand.New(rand.NewPCG(17, 3))
	for k, name := range names {
		s, p, L := asm[k], pure[k], ls[k]
		f := fp8.FormatE4M3
		for _, m := range Models() {
			if m.Name() == name {
				f = m.Info().In
				if _, emu := m.(*mmaSyncEmu); emu {
					f = m.(*mmaSyncEmu).in
				}
			}
		}
		for n := 0; n <= L; n++ {
			for trial := 0; trial < 60; trial++ {
				a, b := stepCodes(r, f, trial%5, n)
				c := randC(r, trial%3 == 0)
				if trial%11 == 0 {
					c = math.Float32frombits(r.Uint32())
				}
				d1, ok1 := s.step(a, b, c)
				d2, ok2 := p.step(a, b, c)
				if !sameStep(d1, ok1, d2, ok2) {
					t.Fatalf("%s n=%d: a=%x b=%x c=%08x: asm %08x %v, pure Go %08x %v", name, n, a, b, math.Float32bits(c), math.Float32bits(d1), ok1, math.Float32bits(d2), ok2)
				}
			}
		}
		// Chains of 1..8 whole steps, some with a special somewhere.
		for trial := 0; trial < 400; trial++ {
			steps := 1 + r.IntN(8)
			kind := 1 + trial%4
			if trial%10 == 0 {
				kind = 0
			}
			a, b := stepCodes(r, f, kind, steps*L)
			c := randC(r, trial%20 == 0)
			d1, done1 := s.chain(a, b, c, L)
			if L&3 != 0 {
				if done1 != 0 || d1 != c {
					t.Fatalf("%s: chain ran with L = %d", name, L)
				}
				continue
			}
			d2, done2 := c, 0
			for ; done2 < len(a); done2 += L {
				d, ok := p.step(a[done2:done2+L], b[done2:done2+L], d2)
				if !ok {
					break
				}
				d2 = d
			}
			if done1 != done2 || math.Float32bits(d1) != math.Float32bits(d2) {
				t.Fatalf("%s: chain of %d steps a=%x b=%x c=%08x: asm %08x after %d, pure Go %08x after %d", name, steps, a, b, math.Float32bits(c), math.Float32bits(d1), done1, math.Float32bits(d2), done2)
			}
		}
	}
}

// TestDotAsmEqualsPureGo checks Dot (whole chains through the assembly
// chain kernel, special steps and the tail through the step) against the
// same chain through the pure-Go step, for every K tail length.
func TestDotAsmEqualsPureGo(t *testing.T) {
	names, _, pure, ls, refs := asmSteppers(t)
	r := rand.New(rand.NewPCG(5, 8))
	for k, name := range names {
		if refs[k] == nil {
			continue // mma.sync emulation: its Dot is not a chain of table steps
		}
		m := MustLookup(name)
		p, L := pure[k], ls[k]
		for K := 1; K <= 4*L+3; K++ {
			for trial := 0; trial < 8; trial++ {
				kind := 1 + trial%4
				if trial == 7 {
					kind = 0
				}
				a, b := stepCodes(r, m.Info().In, kind, K)
				c := randC(r, trial == 6)
				want := c
				for i := 0; i < K; i += L {
					j := min(i+L, K)
					d, ok := p.step(a[i:j], b[i:j], want)
					if !ok {
						d = refs[k](a[i:j], b[i:j], want)
					}
					want = d
				}
				got := m.Dot(a, b, c)
				if math.Float32bits(got) != math.Float32bits(want) && !(math.IsNaN(float64(got)) && math.IsNaN(float64(want))) {
					t.Fatalf("%s K=%d: a=%x b=%x c=%08x: Dot %08x, pure-Go chain %08x", name, K, a, b, math.Float32bits(c), math.Float32bits(got), math.Float32bits(want))
				}
			}
		}
	}
}

// FuzzStepAsm compares the assembly step and chain with the pure-Go step
// on arbitrary codes and accumulators, for every model that uses them.
func FuzzStepAsm(f *testing.F) {
	f.Add(uint8(0), []byte{0x38, 0x38, 0x7f, 0x01, 0x80, 0x00}, uint32(0x3f800000))
	f.Add(uint8(3), []byte{0xff, 0xff, 0x00, 0x7c, 0x01, 0x80, 0x34, 0x12}, uint32(0x80000000))
	f.Add(uint8(7), make([]byte, 130), uint32(0x7f800000))
	f.Fuzz(func(t *testing.T, model uint8, data []byte, cb uint32) {
		names, asm, pure, ls, _ := asmSteppers(t)
		k := int(model) % len(names)
		s, p, L := asm[k], pure[k], ls[k]
		n := len(data) / 4
		a, b := make([]uint16, n), make([]uint16, n)
		for i := range a {
			a[i] = uint16(data[4*i]) | uint16(data[4*i+1])<<8
			b[i] = uint16(data[4*i+2]) | uint16(data[4*i+3])<<8
		}
		c := math.Float32frombits(cb)
		if n <= L {
			d1, ok1 := s.step(a, b, c)
			d2, ok2 := p.step(a, b, c)
			if !sameStep(d1, ok1, d2, ok2) {
				t.Fatalf("%s: a=%x b=%x c=%08x: asm %08x %v, pure Go %08x %v", names[k], a, b, cb, math.Float32bits(d1), ok1, math.Float32bits(d2), ok2)
			}
		}
		d1, done1 := s.chain(a, b, c, L)
		d2, done2 := c, 0
		if L&3 == 0 {
			for ; done2+L <= n; done2 += L {
				d, ok := p.step(a[done2:done2+L], b[done2:done2+L], d2)
				if !ok {
					break
				}
				d2 = d
			}
		}
		if done1 != done2 || math.Float32bits(d1) != math.Float32bits(d2) {
			t.Fatalf("%s: chain a=%x b=%x c=%08x: asm %08x after %d, pure Go %08x after %d", names[k], a, b, cb, math.Float32bits(d1), done1, math.Float32bits(d2), done2)
		}
	})
}

// TestScalarLoadsEqualGathers runs the assembly kernels' tests against the
// pure-Go steps once more with the other way of fetching table entries
// (scalar loads where this CPU gathers, gathers where it loads: see
// scalarLoads), so that both ways are checked bit for bit on every CPU
// that has them.
func TestScalarLoadsEqualGathers(t *testing.T) {
	if !haveStepAsm {
		t.Skip("no assembly kernels on this build or CPU")
	}
	def := scalarLoads
	defer func() { scalarLoads = def }()
	scalarLoads = !def
	t.Logf("scalar loads %v (this CPU's default %v)", scalarLoads, def)
	for _, c := range []struct {
		name string
		f    func(*testing.T)
	}{
		{"step", TestStepAsmEqualsPureGo},
		{"dot", TestDotAsmEqualsPureGo},
		{"rows", TestDotRowsEqualsDot},
		{"scaled", TestScaledAsmEqualsGo},
		{"fdpa-pairs", TestFDPAPairs8},
		{"amd-tails", TestAMDFastTails},
	} {
		t.Run(c.name, c.f)
	}
}
