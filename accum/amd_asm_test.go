package accum

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
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
