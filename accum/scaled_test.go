package accum

import (
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// asmScaled returns the NVIDIA instructions whose fast path has an
// assembly chain on this build and CPU, each with a copy whose fast path
// runs the Go steps only.
func asmScaled(t testing.TB) (asm, goOnly []*nvInstr) {
	c := cat()
	names := slices.Sorted(maps.Keys(c.instrs)) // Instructions() less the Models (sm80.mma.sync.tf32.f32)
	for _, name := range names {
		nv, ok := c.instrs[name].(*nvInstr)
		if !ok || nv.fast == nil || nv.fast.entA == nil && !nv.fast.asmTF32 {
			continue
		}
		cp, f := *nv, *nv.fast
		f.entA, f.entB, f.asmTF32 = nil, nil, false
		cp.fast = &f
		asm, goOnly = append(asm, nv), append(goOnly, &cp)
	}
	if haveStepAsm && len(asm) != 78 {
		t.Fatalf("only %d instructions have an assembly chain, want 75 ST and 3 TF32", len(asm))
	}
	return asm, goOnly
}

// scaledCodes draws n operand codes of format f of one kind: 0 finite
// (randCode), 1 with NaN/inf, 2 extreme magnitudes (the largest and
// smallest codes, toward overflow and the subnormal range), 3 exact
// cancellation (pairs x·y, x·(−y)), 4 all zero.
func scaledCodes(r *rand.Rand, f string, kind, n int) []uint64 {
	x := make([]uint64, n)
	bits := codeBits[f]
	sign := uint64(1) << uint(bits-1)
	for i := range x {
		switch kind {
		case 1:
			x[i] = randCode(r, f, r.IntN(4) == 0)
			if bits == 32 && r.IntN(8) == 0 {
				// inf, NaN, and a NaN whose fraction is in the 13 bits
				// TF32 ignores (read as inf)
				x[i] = 0x7f800000 | uint64([]uint32{0, 0x400000, 1, 0x1fff}[r.IntN(4)]) | uint64(r.IntN(2))<<31
			}
		case 2:
			if bits == 32 {
				e := []uint64{0, 1, 2, 127, 253, 254}[r.IntN(6)]
				x[i] = e<<23 | uint64(r.Uint32())&0x7fffff | uint64(r.IntN(2))<<31
			} else {
				// the top finite codes and the subnormals
				x[i] = uint64(r.IntN(4))
				if r.IntN(2) == 0 {
					x[i] = sign - 1 - uint64(r.IntN(3))
					if ff := testFormats[f]; ff.Decompose(uint32(x[i])).Class != 0 && ff.Value(uint32(x[i])) != ff.Value(uint32(x[i])) {
						x[i] = sign - 2
					}
				}
				x[i] |= sign * uint64(r.IntN(2))
			}
			x[i] = randFinite(r, f, x[i])
		case 3:
			x[i] = randCode(r, f, false)
			if i&1 == 1 {
				x[i] = x[i-1]
			}
		case 4:
			x[i] = 0
			if r.IntN(2) == 0 {
				x[i] = sign
			}
		default:
			x[i] = randCode(r, f, false)
		}
	}
	return x
}

// randFinite returns x if it is finite in f, else a random finite code.
func randFinite(r *rand.Rand, f string, x uint64) uint64 {
	if codeBits[f] == 32 {
		if x>>23&0xff == 0xff {
			return randCode(r, f, false)
		}
		return x
	}
	if v := testFormats[f].Value(uint32(x)); math.IsNaN(v) || math.IsInf(v, 0) {
		return randCode(r, f, false)
	}
	return x
}

// scaledC draws an accumulator: random, NaN, ±inf, ±0, subnormal or huge.
func scaledC(r *rand.Rand) uint64 {
	switch r.IntN(8) {
	case 0:
		return []uint64{0x7fc00000, 0x7f800000, 0xff800000, 0, 0x80000000, 0x7f7fffff, 0xff7fffff}[r.IntN(7)]
	case 1:
		return uint64(r.Uint32()&0x807fffff) | 0 // subnormal or zero
	case 2:
		return uint64(r.Uint32())
	}
	return randCode(r, "f32", false)
}

// scaledScales draws n scale codes, the extremes (ue8m0 0, 1, 254, 255 =
// NaN; ue4m3 zero) among them when extreme.
func scaledScales(r *rand.Rand, f string, n int, extreme bool) []uint8 {
	s := make([]uint8, n)
	for i := range s {
		switch {
		case extreme && r.IntN(3) == 0:
			s[i] = []uint8{0, 1, 2, 253, 254, 255}[r.IntN(6)]
		case f == "ue8m0":
			s[i] = uint8(100 + r.IntN(55))
		default:
			s[i] = uint8(randCode(r, f, extreme))
		}
	}
	return s
}

// checkScaledAsm runs one chain through the assembly path, the Go path
// and the reference (InstrChain) and reports a difference.
func checkScaledAsm(t *testing.T, asm, pure *nvInstr, a, b []uint64, sa, sb []uint8, c uint64, promote int) {
	t.Helper()
	in := asm.info
	want, err := InstrChain(asm, a, b, sa, sb, c, promote)
	if err != nil {
		t.Fatal(err)
	}
	run := func(m *nvInstr) uint64 {
		var got uint64
		var err error
		if in.A == "tf32" {
			got, err = ChainCodes(m, narrow[uint32](a), narrow[uint32](b), sa, sb, c, promote)
		} else {
			got, err = ChainCodes(m, narrow[uint8](a), narrow[uint8](b), sa, sb, c, promote)
		}
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got, gogot := run(asm), run(pure)
	same := func(x, y uint64) bool { return x == y || isNaN32(x) && isNaN32(y) }
	if !same(got, want) || !same(gogot, want) {
		t.Fatalf("%s: asm %08x, Go %08x, reference %08x\na=%x\nb=%x\nsa=%x sb=%x c=%08x promote=%d",
			in.Name, got, gogot, want, a, b, sa, sb, c, promote)
	}
}

// TestScaledAsmEqualsGo: on every instruction the assembly chains serve
// (kind::f8f6f4 and mxf8f6f4 with f32 output on 8-bit codes, the TF32
// instructions), ChainCodes through the assembly gives the bits of
// ChainCodes through the Go steps and of the reference InstrChain: random
// codes, NaN and inf, zeros, subnormals, extreme magnitudes and scales
// (overflow to inf, results in the FP32 subnormal range), exact
// cancellation, accumulators of every kind, every tail length after 0..3
// whole steps, with and without promotion.
func TestScaledAsmEqualsGo(t *testing.T) {
	if !haveStepAsm {
		t.Skip("no assembly chain on this build or CPU")
	}
	asm, pure := asmScaled(t)
	r := rand.New(rand.NewPCG(21, 22))
	for k, m := range asm {
		in := m.info
		trials := 1
		if k%8 == 0 || in.A == "tf32" {
			trials = 4 // every operand pair once, some more often
		}
		for tail := 0; tail < in.K; tail++ {
			for trial := 0; trial < trials; trial++ {
				n := in.K*r.IntN(4) + tail
				kind := r.IntN(6)
				a, b := scaledCodes(r, in.A, kind, n), scaledCodes(r, in.B, kind, n)
				if kind == 5 {
					zerosMeetHuge(r, in.A, in.B, a, b)
				}
				if kind == 3 {
					for i := 1; i < n; i += 2 {
						b[i] ^= 1 << uint(codeBits[in.B]-1)
					}
				}
				var sa, sb []uint8
				if in.Scale != "" {
					ns := (n + in.Block - 1) / in.Block
					sa, sb = scaledScales(r, in.Scale, ns, kind != 0), scaledScales(r, in.Scale, ns, kind != 0)
				}
				promote := 0
				if trial%2 == 1 {
					promote = in.K * (1 + r.IntN(2))
				}
				c := scaledC(r)
				if kind == 5 && r.IntN(2) == 0 {
					c = 0 // no c to hide e_max
				}
				checkScaledAsm(t, m, pure[k], a, b, sa, sb, c, promote)
				checkScaledKernel(t, m, a, b, sa, sb, c)
			}
		}
	}
}

// FuzzScaledAsm: the assembly chains agree with the Go steps and the
// reference on arbitrary codes, scales and accumulators. The input picks
// the instruction and gives operand bytes pairwise (four bytes each for
// TF32), then the scales.
func FuzzScaledAsm(f *testing.F) {
	f.Add(uint8(0), uint32(0x3f800000), []byte{0x38, 0x38, 0x40, 0xc0, 0x7f, 0x7f, 0, 0x80})
	f.Add(uint8(75), uint32(0), []byte("0123456789abcdef0123456789abcdef"))
	f.Add(uint8(3), uint32(0x00000001), []byte{0x7e, 0x7e, 0xfe, 0x7e, 1, 2, 255, 0})
	f.Fuzz(func(t *testing.T, pick uint8, c uint32, data []byte) {
		if !haveStepAsm {
			t.Skip("no assembly chain on this build or CPU")
		}
		asm, pure := asmScaled(t)
		k := int(pick) % len(asm)
		m := asm[k]
		in := m.info
		w := 1
		if in.A == "tf32" {
			w = 4
		}
		n := min(len(data)/(2*w), 4*in.K)
		a, b := make([]uint64, n), make([]uint64, n)
		for i := range a {
			if w == 4 {
				a[i] = uint64(binary.LittleEndian.Uint32(data[8*i:]))
				b[i] = uint64(binary.LittleEndian.Uint32(data[8*i+4:]))
			} else {
				a[i], b[i] = uint64(data[2*i]), uint64(data[2*i+1])
			}
		}
		var sa, sb []uint8
		if in.Scale != "" {
			ns := (n + in.Block - 1) / in.Block
			sa, sb = make([]uint8, ns), make([]uint8, ns)
			rest := data[2*w*n:]
			for i := range sa {
				sa[i], sb[i] = 127, 127
				if 2*i+1 < len(rest) {
					sa[i], sb[i] = rest[2*i], rest[2*i+1]
				}
			}
		}
		checkScaledAsm(t, m, pure[k], a, b, sa, sb, uint64(c), 0)
		checkScaledKernel(t, m, a, b, sa, sb, uint64(c))
	})
}

// zerosMeetHuge fills a and b with tiny products and, at the odd
// elements, a zero of a against one of b's largest codes: a zero product
// reads e_zero and must not lift e_max to its partner's exponent.
func zerosMeetHuge(r *rand.Rand, fa, fb string, a, b []uint64) {
	pick := func(f string, huge bool) uint64 {
		bits := codeBits[f]
		sign := uint64(r.IntN(2)) << uint(bits-1)
		if bits == 32 {
			e := uint64(70 + r.IntN(20)) // products of 2^-114 to 2^-74
			if huge {
				e = uint64(240 + r.IntN(15))
			}
			return sign | e<<23 | uint64(r.Uint32())&0x7fffff
		}
		if huge {
			return randFinite(r, f, sign|(1<<uint(bits-1)-1-uint64(r.IntN(3))))
		}
		return sign | uint64(1+r.IntN(3))
	}
	for i := range a {
		if i&1 == 1 {
			a[i], b[i] = uint64(r.IntN(2))<<uint(codeBits[fa]-1), pick(fb, true)
		} else {
			a[i], b[i] = pick(fa, false), pick(fb, false)
		}
	}
}

// checkScaledKernel runs the whole steps of a chain through the kernel
// (chainAsm8 or chainAsm32) and through the Go steps, which must agree on
// the result and on where the chain stops (the first step the Go step
// cannot take: a NaN or inf operand, scale or c), so that a kernel which
// gives up on steps it should compute fails too.
func checkScaledKernel(t *testing.T, m *nvInstr, a, b []uint64, sa, sb []uint8, c64 uint64) {
	t.Helper()
	f, L := m.fast, m.info.L
	n := len(a) / L * L
	c := math.Float32frombits(uint32(c64))
	var got float32
	var done int
	if f.asmTF32 {
		got, done = f.chainAsm32(narrow[uint32](a[:n]), narrow[uint32](b[:n]), c)
	} else {
		got, done = f.chainAsm8(narrow[uint8](a[:n]), narrow[uint8](b[:n]), sa, sb, 0, c)
	}
	want, wdone := c, 0
	for ; wdone < n; wdone += L {
		var d float32
		var ok bool
		switch {
		case f.asmTF32:
			d, ok = f.stTF32(narrow[uint32](a[wdone:wdone+L]), narrow[uint32](b[wdone:wdone+L]), want)
		case f.scaled:
			d, ok = f.stST(narrow[uint8](a[wdone:wdone+L]), narrow[uint8](b[wdone:wdone+L]), sa[wdone/L], sb[wdone/L], want)
		default:
			d, ok = f.stST(narrow[uint8](a[wdone:wdone+L]), narrow[uint8](b[wdone:wdone+L]), 0, 0, want)
		}
		if !ok {
			break
		}
		want = d
	}
	if done != wdone || math.Float32bits(got) != math.Float32bits(want) {
		t.Fatalf("%s: kernel %08x after %d elements, Go steps %08x after %d\na=%x\nb=%x\nsa=%x sb=%x c=%08x",
			m.info.Name, math.Float32bits(got), done, math.Float32bits(want), wdone, a, b, sa, sb, c64)
	}
}

// TestGSTProductTable: in the GST table of every FP4 instruction a product
// is nonzero exactly when both e2m1 codes are (groupSum16 ORs the products
// in place of the nz table).
func TestGSTProductTable(t *testing.T) {
	n := 0
	for _, m := range Instructions() {
		nv, ok := m.(*nvInstr)
		if !ok || nv.fast == nil || nv.fast.kind != fastGST {
			continue
		}
		n++
		for c := range 256 {
			if got, want := nv.fast.prod4[c] != 0, nv.fast.nz[c] == 1; got != want {
				t.Fatalf("%s: code pair %#02x: product %d, nz %d", m.Name(), c, nv.fast.prod4[c], nv.fast.nz[c])
			}
		}
	}
	if n == 0 {
		t.Fatal("no FP4 instruction has a GST fast path")
	}
}
