package accum

import (
	"encoding/binary"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// fmaChainRef is the f32 FMA chain through FMA32, the reference.
func fmaChainRef(a, b []uint32, c float32) float32 {
	for i := range a {
		c = FMA32(math.Float32frombits(a[i]), math.Float32frombits(b[i]), c)
	}
	return c
}

// checkFMAChain compares the hardware chain (when it does not end in NaN)
// and chainFMA32 with the reference, bit for bit; a hardware chain that
// ends in NaN must have a NaN reference too.
func checkFMAChain(t *testing.T, a, b []uint32, c float32) {
	t.Helper()
	want := math.Float32bits(fmaChainRef(a, b, c))
	if got := math.Float32bits(chainFMA32(a, b, c)); got != want {
		t.Fatalf("chainFMA32 %08x, FMA32 chain %08x\na=%08x\nb=%08x\nc=%08x", got, want, a, b, math.Float32bits(c))
	}
	if !haveFMAAsm || len(a) == 0 {
		return
	}
	hw := fmaChain32(&a[0], &b[0], len(a), c)
	if hw != hw {
		if w := math.Float32frombits(want); w == w {
			t.Fatalf("hardware chain NaN, FMA32 chain %08x\na=%08x\nb=%08x\nc=%08x", want, a, b, math.Float32bits(c))
		}
		return
	}
	if got := math.Float32bits(hw); got != want {
		t.Fatalf("hardware chain %08x, FMA32 chain %08x\na=%08x\nb=%08x\nc=%08x", got, want, a, b, math.Float32bits(c))
	}
}

// TestFMAChainAsm: the hardware f32 FMA chain equals the FMA32 chain on
// chains of every length 0..40 (every tail of the unrolled loop): random
// values, signed zeros, subnormal operands and results, ties and
// near-cancellation, overflow, NaN and inf.
func TestFMAChainAsm(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	edge := []uint32{0, 0x80000000, 1, 0x80000001, 0x00800000, 0x807fffff, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000, 0x7fc00000, 0x7f800001, 0x3f800000, 0x33800000, 0x3f800001}
	pick := func(kind int) uint32 {
		switch {
		case kind == 0 && r.IntN(8) == 0:
			return edge[r.IntN(len(edge))]
		case kind == 1: // the subnormal range
			return r.Uint32()&0x807fffff | uint32(r.IntN(30))<<23
		case kind == 2 && r.IntN(3) == 0:
			return r.Uint32()
		}
		return r.Uint32()&0x807fffff | uint32(110+r.IntN(30))<<23
	}
	for n := 0; n <= 40; n++ {
		for trial := 0; trial < 400; trial++ {
			kind := trial % 3
			a, b := make([]uint32, n), make([]uint32, n)
			for i := range a {
				a[i], b[i] = pick(kind), pick(kind)
			}
			c := math.Float32frombits(pick(kind))
			if trial%5 == 4 && n > 0 {
				// cancel the chain so far at the last step (ties and
				// exact zeros of either sign)
				s := fmaChainRef(a[:n-1], b[:n-1], c)
				a[n-1], b[n-1] = math.Float32bits(-s), 0x3f800000
				if r.IntN(2) == 0 {
					a[n-1] ^= uint32(r.IntN(3))
				}
			}
			checkFMAChain(t, a, b, c)
		}
	}
}

// FuzzFMAChainAsm: the hardware f32 FMA chain equals the FMA32 chain on
// any operands (eight bytes a pair) and accumulator.
func FuzzFMAChainAsm(f *testing.F) {
	f.Add(uint32(0x3f800000), []byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0xbf})
	f.Add(uint32(0x80000000), []byte{1, 0, 0, 0, 1, 0, 0, 0x80, 0xff, 0xff, 0x7f, 0x7f, 0, 0, 0, 0x40})
	f.Fuzz(func(t *testing.T, c uint32, data []byte) {
		n := len(data) / 8
		a, b := make([]uint32, n), make([]uint32, n)
		for i := range a {
			a[i] = binary.LittleEndian.Uint32(data[8*i:])
			b[i] = binary.LittleEndian.Uint32(data[8*i+4:])
		}
		checkFMAChain(t, a, b, math.Float32frombits(c))
	})
}

// TestAMDFastTails: the AMD fast paths (ChainCodes on natural-width
// codes) against the reference InstrChain for chains of every length
// 0..2K+G (partial groups and instructions), with codes drawn toward the
// cases the fast FDPA path leaves or must get right: exponent sums of 126
// or more (bf16, xf32: the reference decides), products of 2^128 (inf),
// NaN and inf operands and c, zeros against huge partners (a zero reads
// −126 and does count in e_max), subnormals and cancellation.
func TestAMDFastTails(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	c := cat()
	for _, name := range slices.Sorted(maps.Keys(c.instrs)) {
		am, ok := c.instrs[name].(*amdInstr)
		if !ok {
			continue
		}
		in := am.info
		G := max(in.Group, 1)
		for n := 0; n <= 2*in.K+G; n++ {
			for trial := 0; trial < 6; trial++ {
				kind := trial % 6
				a, b := make([]uint64, n), make([]uint64, n)
				for i := range a {
					a[i], b[i] = amdEdgeCode(r, in.A, kind), amdEdgeCode(r, in.B, kind)
				}
				cc := amdEdgeCode(r, in.C, kind)
				if trial == 5 && n > 0 {
					// one NaN or inf among finite small codes, finite c:
					// the special alone must send its group to the
					// reference (kind 1 mostly has several, or a special c)
					for i := range a { // small and subnormal: exponent sums far below 126
						a[i], b[i] = amdEdgeCode(r, in.A, 3+2*r.IntN(2)), amdEdgeCode(r, in.B, 3)
					}
					x := a
					if r.IntN(2) == 0 {
						x = b
					}
					x[r.IntN(n)] = amdEdgeCode(r, in.A, 1)
					for testFormatFinite(in.A, x) {
						x[r.IntN(n)] = amdEdgeCode(r, in.A, 1)
					}
					cc = amdEdgeCode(r, in.C, 3+2*r.IntN(2))
				}
				promote := 0
				if r.IntN(2) == 1 { // not by trial: every kind with and without
					promote = in.K
				}
				want, err := InstrChain(am, a, b, nil, nil, cc, promote)
				if err != nil {
					t.Fatal(err)
				}
				got, err := chainCodesOfWidth(am, codeBits[in.A], a, b, cc, promote)
				if err != nil {
					t.Fatal(err)
				}
				if !sameResult(in.C, got, want) {
					t.Fatalf("%s n=%d kind=%d: fast %x, reference %x\na=%x\nb=%x\nc=%x promote=%d", name, n, kind, got, want, a, b, cc, promote)
				}
			}
		}
	}
}

// amdEdgeCode draws a code of f: kind 0 random finite, 1 with NaN/inf, 2
// the largest magnitudes (exponent sums past 126, products past 2^128),
// 3 zeros and subnormals, 4 a zero or a huge value, 5 small integers
// (exact cancellation).
func amdEdgeCode(r *rand.Rand, f string, kind int) uint64 {
	bits := codeBits[f]
	sign := uint64(r.IntN(2)) << uint(bits-1)
	if bits == 64 {
		sign = uint64(r.IntN(2)) << 63
	}
	switch kind {
	case 1:
		if bits == 32 && r.IntN(4) == 0 {
			// inf, NaN, and a NaN whose fraction is in the 13 bits xf32
			// ignores (read as inf)
			return sign | 0x7f800000 | uint64([]uint32{0, 0x400000, 1, 0x1fff}[r.IntN(4)])
		}
		if bits == 64 && r.IntN(4) == 0 {
			return sign | 0x7ff0000000000000 | uint64(r.IntN(2))<<51
		}
		return randCode(r, f, r.IntN(3) == 0)
	case 2, 4:
		if kind == 4 && r.IntN(2) == 0 {
			return sign
		}
		switch bits {
		case 32:
			return sign | uint64(240+r.IntN(15))<<23 | uint64(r.Uint32()&0x7fffff)
		case 64:
			return sign | uint64(2000+r.IntN(46))<<52 | r.Uint64()&(1<<52-1)
		}
		x := sign | (1<<uint(bits-1) - 1 - uint64(r.IntN(8)))
		if v := testFormats[f].Value(uint32(x)); math.IsNaN(v) || math.IsInf(v, 0) {
			return randCode(r, f, false)
		}
		return x
	case 3:
		if bits == 64 {
			return sign | r.Uint64()&(1<<52-1)
		}
		if bits == 32 {
			return sign | uint64(r.Uint32()&0x7fffff)
		}
		return sign | uint64(r.IntN(4))
	case 5:
		if bits == 64 {
			return math.Float64bits(float64(r.IntN(9) - 4))
		}
		x := float32(r.IntN(9) - 4)
		if bits == 32 {
			return uint64(math.Float32bits(x))
		}
		return uint64(testFormats[f].Encode(x, 0))
	}
	return randCode(r, f, false)
}

// TestFDPAPairs8: the assembly half of the CDNA3 fp8 groups gives, group
// by group, the exponents and even/odd sums of the Go products (fdpaSum's
// inputs), on every fp8/bf8 operand pair, finite codes of every kind.
func TestFDPAPairs8(t *testing.T) {
	if !haveStepAsm {
		t.Skip("no assembly kernel on this build or CPU")
	}
	r := rand.New(rand.NewPCG(51, 52))
	for _, name := range []string{"cdna3.mfma.fp8.fp8.f32", "cdna3.mfma.fp8.bf8.f32", "cdna3.mfma.bf8.fp8.f32", "cdna3.mfma.bf8.bf8.f32"} {
		m, err := LookupInstruction(name)
		if err != nil {
			t.Fatal(err)
		}
		am := m.(*amdInstr)
		tab := am.tables()
		ta, tb := tab[0], tab[1]
		if ta.ent == nil || tb.ent == nil {
			t.Fatalf("%s: no packed tables", name)
		}
		for trial := 0; trial < 300; trial++ {
			groups := 1 + r.IntN(70) // across the 64-group chunks
			a, b := make([]uint8, 16*groups), make([]uint8, 16*groups)
			for i := range a {
				a[i], b[i] = uint8(amdEdgeCode(r, am.info.A, trial%6)), uint8(amdEdgeCode(r, am.info.B, trial%6))
			}
			sums, exps := make([]float64, 2*groups), make([]int32, 2*groups)
			fdpaPairs8(ta.ent, tb.ent, &a[0], &b[0], groups, &sums[0], &exps[0])
			for g := range groups {
				var e [2]int32
				var s [2]int64
				e[0], e[1] = -1<<20, -1<<20
				for k := range 16 {
					u, v := a[16*g+k], b[16*g+k]
					e[k&1] = max(e[k&1], ta.exp[u]+tb.exp[v])
					if ta.special[u] || tb.special[v] {
						e[k&1] = max(e[k&1], 1000)
					}
				}
				if max(e[0], e[1]) >= 126 {
					if max(exps[2*g], exps[2*g+1]) < 126 {
						t.Fatalf("%s group %d: kernel exponents %d %d for a group with a NaN or inf", name, g, exps[2*g], exps[2*g+1])
					}
					continue
				}
				for k := range 16 {
					u, v := a[16*g+k], b[16*g+k]
					s[k&1] += int64(ta.val[u] * tb.val[v] * pow2(24-e[k&1]))
				}
				if exps[2*g] != e[0] || exps[2*g+1] != e[1] || int64(sums[2*g]) != s[0] || int64(sums[2*g+1]) != s[1] {
					t.Fatalf("%s group %d: kernel e %d %d, sums %v %v; Go e %d %d, sums %d %d\na=%x\nb=%x", name, g,
						exps[2*g], exps[2*g+1], sums[2*g], sums[2*g+1], e[0], e[1], s[0], s[1], a[16*g:16*g+16], b[16*g:16*g+16])
				}
			}
		}
	}
}

// testFormatFinite reports whether every code of x is finite in f (for
// f32, NaN/inf is an exponent field of 0xff, whatever the fraction).
func testFormatFinite(f string, x []uint64) bool {
	for _, c := range x {
		switch f {
		case "f64":
			if v := math.Float64frombits(c); math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		case "f32":
			if uint32(c)>>23&0xff == 0xff {
				return false
			}
		default:
			if v := testFormats[f].Value(uint32(c)); math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
	}
	return true
}

// TestCDNA2FlushSignedZero: the CDNA2 pairwise fast path flushes each
// instruction's c to +0 (a −0 left by a flushed negative subnormal becomes
// +0 at the next instruction), as the reference does: an accumulator of −0
// meets group sums of −0 (cancellations flushed with their sign) in the
// second instruction, where only that flush makes the result +0.
func TestCDNA2FlushSignedZero(t *testing.T) {
	bf := func(x float64) uint64 { return uint64(math.Float32bits(float32(x)) >> 16) }
	u := math.Ldexp(1, -63)
	// per group of 2: {a0, b0, a1, b1}
	pos := [4]float64{1.25 * u, u, 0, u}           // gs = 1.25·2^-126
	neg := [4]float64{-1.5 * u, u, 0, u}           // gs = −1.5·2^-126
	cancel := [4]float64{1.25 * u, u, -1.5 * u, u} // gs = −0.25·2^-126, flushed to −0
	groups := [][4]float64{pos, neg, cancel, cancel, cancel, cancel, cancel, cancel}
	var a, b []uint64
	for _, g := range groups {
		a = append(a, bf(g[0]), bf(g[2]))
		b = append(b, bf(g[1]), bf(g[3]))
	}
	m, err := LookupInstruction("cdna2.mfma.bf16.f32")
	if err != nil {
		t.Fatal(err)
	}
	want, err := InstrChain(m, a, b, nil, nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ChainCodes(m, narrow[uint16](a), narrow[uint16](b), nil, nil, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want != 0 || got != want {
		t.Fatalf("fast %08x, reference %08x; want +0 from both", got, want)
	}
}
