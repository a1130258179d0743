package accum

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// sums16Go is the Go half of a CDNA3 f16/bf16 group (fdpaSum from the
// tables), the reference of fdpaSums16: ok is false when the group has a
// NaN or inf operand or an exponent sum of 126 or more.
func sums16Go(ta, tb *amdTable, a, b []uint16) (s int64, e int32, ok bool) {
	var pe [8]int32
	var pv [8]float64
	for k := range a {
		u, v := a[k], b[k]
		if ta.special[u] || tb.special[v] {
			return 0, 0, false
		}
		pe[k], pv[k] = ta.exp[u]+tb.exp[v], ta.val[u]*tb.val[v]
	}
	return fdpaSum(pe[:len(a)], pv[:len(a)], false)
}

// checkSums16 compares fdpaSums16 with sums16Go group by group: the same
// exponent and sum where the Go half is ok, an exponent of 126 or more
// where it is not.
func checkSums16(t *testing.T, name string, ta, tb *amdTable, a, b []uint16) {
	t.Helper()
	groups := len(a) / 8
	if groups == 0 {
		return
	}
	sums, exps := make([]float64, groups), make([]int32, groups)
	fdpaSums16(ta.ent, tb.ent, &a[0], &b[0], groups, &sums[0], &exps[0])
	for g := range groups {
		x, y := a[8*g:8*g+8], b[8*g:8*g+8]
		s, e, ok := sums16Go(ta, tb, x, y)
		if !ok {
			if exps[g] < 126 {
				t.Fatalf("%s group %d: kernel exponent %d for a group the reference decides\na=%04x\nb=%04x", name, g, exps[g], x, y)
			}
			continue
		}
		if exps[g] != e || int64(sums[g]) != s || float64(s) != sums[g] {
			t.Fatalf("%s group %d: kernel e %d sum %v, Go e %d sum %d\na=%04x\nb=%04x", name, g, exps[g], sums[g], e, s, x, y)
		}
	}
}

// TestFDPASums16: the assembly half of the CDNA3 f16 and bf16 groups of 8
// equals the Go half (fdpaSum) on codes of every kind amdEdgeCode draws:
// NaN, inf, zeros and subnormals of both signs, the largest magnitudes,
// small integers; 1..70 groups (across combineRun's chunks of 64).
func TestFDPASums16(t *testing.T) {
	if !haveStepAsm {
		t.Skip("no assembly kernel on this build or CPU")
	}
	r := rand.New(rand.NewPCG(61, 62))
	for _, name := range []string{"cdna3.mfma.f16.f32", "cdna3.mfma.bf16.f32"} {
		m, err := LookupInstruction(name)
		if err != nil {
			t.Fatal(err)
		}
		am := m.(*amdInstr)
		tab := am.tables()
		if tab[0].ent == nil || tab[1].ent == nil {
			t.Fatalf("%s: no packed tables", name)
		}
		for trial := range 600 {
			n := 8 * (1 + r.IntN(70))
			a, b := make([]uint16, n), make([]uint16, n)
			for i := range a {
				kind := trial % 6
				if trial%7 == 6 {
					kind = r.IntN(6) // kinds mixed within a group
				}
				a[i], b[i] = uint16(amdEdgeCode(r, am.info.A, kind)), uint16(amdEdgeCode(r, am.info.B, kind))
			}
			checkSums16(t, name, tab[0], tab[1], a, b)
		}
	}
}

// FuzzFDPASums16: fdpaSums16 equals the Go half on any f16 and bf16 codes
// (two bytes a code, a and b interleaved, whole groups of 8).
func FuzzFDPASums16(f *testing.F) {
	f.Add([]byte{0, 0x3c, 0, 0x3c, 0, 0x7c, 0, 0xbc, 1, 0, 1, 0x80, 0, 0x80, 0xff, 0x7b})
	f.Add(make([]byte, 32))
	f.Fuzz(func(t *testing.T, data []byte) {
		if !haveStepAsm {
			t.Skip("no assembly kernel on this build or CPU")
		}
		n := len(data) / 4 &^ 7
		a, b := make([]uint16, n), make([]uint16, n)
		for i := range a {
			a[i] = binary.LittleEndian.Uint16(data[4*i:])
			b[i] = binary.LittleEndian.Uint16(data[4*i+2:])
		}
		for _, name := range []string{"cdna3.mfma.f16.f32", "cdna3.mfma.bf16.f32"} {
			m, err := LookupInstruction(name)
			if err != nil {
				t.Fatal(err)
			}
			tab := m.(*amdInstr).tables()
			checkSums16(t, name, tab[0], tab[1], a, b)
		}
	})
}

// checkXF32Sums compares xf32Sums4 with xf32Sums: the same exponents, and
// the same sums where the exponent is below 126.
func checkXF32Sums(t *testing.T, a, b []uint32) {
	t.Helper()
	groups := len(a) / 4
	if groups == 0 {
		return
	}
	sums, exps := make([]float64, groups), make([]int32, groups)
	want, wantE := make([]float64, groups), make([]int32, groups)
	xf32Sums4(&a[0], &b[0], groups, &sums[0], &exps[0])
	xf32Sums(a[:4*groups], b[:4*groups], want, wantE)
	for g := range groups {
		if exps[g] != wantE[g] || wantE[g] < 126 && math.Float64bits(sums[g]) != math.Float64bits(want[g]) {
			t.Fatalf("group %d: kernel e %d sum %v, Go e %d sum %v\na=%08x\nb=%08x", g, exps[g], sums[g], wantE[g], want[g], a[4*g:4*g+4], b[4*g:4*g+4])
		}
	}
}

// TestXF32Sums4: the assembly half of the xf32 groups of 4 equals
// xf32Sums on patterns of every kind amdEdgeCode draws (NaN, inf, a NaN
// whose fraction is all in the 13 bits TF32 drops, zeros, subnormals, both
// signs, exponent sums past 126, cancellation) and on random bits.
func TestXF32Sums4(t *testing.T) {
	if !haveStepAsm {
		t.Skip("no assembly kernel on this build or CPU")
	}
	r := rand.New(rand.NewPCG(63, 64))
	for trial := range 3000 {
		n := 4 * (1 + r.IntN(70))
		a, b := make([]uint32, n), make([]uint32, n)
		for i := range a {
			kind := trial % 7
			switch {
			case kind == 6:
				a[i], b[i] = r.Uint32(), r.Uint32()
				continue
			case trial%11 == 10:
				kind = r.IntN(6)
			}
			a[i], b[i] = uint32(amdEdgeCode(r, "f32", kind)), uint32(amdEdgeCode(r, "f32", kind))
		}
		checkXF32Sums(t, a, b)
	}
}

// FuzzXF32Sums4: xf32Sums4 equals xf32Sums on any patterns (eight bytes
// a pair, whole groups of 4).
func FuzzXF32Sums4(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0xbf, 0, 0, 0x80, 0x7f, 1, 0, 0, 0, 0xff, 0x1f, 0x80, 0x7f, 0, 0, 0, 0x80, 0, 0, 0x7f, 0x7f, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if !haveStepAsm {
			t.Skip("no assembly kernel on this build or CPU")
		}
		n := len(data) / 8 &^ 3
		a, b := make([]uint32, n), make([]uint32, n)
		for i := range a {
			a[i] = binary.LittleEndian.Uint32(data[8*i:])
			b[i] = binary.LittleEndian.Uint32(data[8*i+4:])
		}
		checkXF32Sums(t, a, b)
	})
}

// TestCombineRun: combineRun equals fdpaCombine group by group, with its
// guess of c's exponent right, wrong both ways, and c of every kind
// (zeros of both signs, subnormals, the largest finite values), group
// exponents above, at and below c's (and 126 or more, or a NaN or inf c,
// where it must stop).
func TestCombineRun(t *testing.T) {
	r := rand.New(rand.NewPCG(65, 66))
	pickC := func() float32 {
		switch r.IntN(6) {
		case 0:
			return math.Float32frombits(uint32(r.IntN(2)) << 31)
		case 1:
			return math.Float32frombits(r.Uint32() & 0x807fffff)
		case 2:
			return math.Float32frombits(r.Uint32()&0x807fffff | uint32(250+r.IntN(5))<<23)
		}
		return math.Float32frombits(r.Uint32()&0x807fffff | uint32(100+r.IntN(56))<<23)
	}
	for trial := range 20000 {
		n := 1 + r.IntN(20)
		c := pickC()
		ce := cExp(math.Float32bits(c))
		sums, exps := make([]float64, n), make([]int32, n)
		for i := range sums {
			exps[i] = ce + int32(r.IntN(21)) - 14
			if r.IntN(8) == 0 {
				exps[i] = int32(r.IntN(252)) - 252 + 125
			}
			exps[i] = min(exps[i], 125)
			sums[i] = float64(r.Int64N(1<<29) - 1<<28)
			if r.IntN(8) == 0 {
				sums[i] = float64(r.IntN(5) - 2)
			}
		}
		stop := n
		if trial%5 == 4 {
			stop = r.IntN(n)
			exps[stop] = 126 + int32(r.IntN(5000))
		}
		k := ce + int32(r.IntN(5)) - 2
		got, _, done := combineRun(sums, exps, c, k)
		want := c
		for i := range stop {
			cb := math.Float32bits(want)
			if cb&0x7f800000 == 0x7f800000 {
				stop = i
				break
			}
			want = fdpaCombine(int64(sums[i]), exps[i], cb, false)
		}
		if done != stop || math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("trial %d: combineRun %08x after %d groups, fdpaCombine %08x after %d\nc=%08x k=%d sums=%v exps=%v",
				trial, math.Float32bits(got), done, math.Float32bits(want), stop, math.Float32bits(c), k, sums, exps)
		}
	}
}
