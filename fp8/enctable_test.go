package fp8

import (
	"math"
	"math/rand/v2"
	"testing"
)

// encodeScalar, through its code table, gives encodeLoop's code for every
// upper half of a float32's bits with lower halves at and next to the
// ends, a tie's 0 and random ones, for every format with a table and both
// saturations, undivided and divided by a scale; and the table has ties
// marked where they are (a table without them fails on e4m3's 0x3f88 ×
// 0x0000, an exact tie).
func TestEncodeTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	lows := []uint32{0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff}
	src := make([]float32, 0, (1<<16)*(len(lows)+2))
	for hi := range uint32(1 << 16) {
		for _, lo := range lows {
			src = append(src, math.Float32frombits(hi<<16|lo))
		}
		src = append(src, math.Float32frombits(hi<<16|rng.Uint32()&0xffff), math.Float32frombits(hi<<16|rng.Uint32()&0xffff))
	}
	want, got := make([]uint16, len(src)), make([]uint16, len(src))
	tables := 0
	for f, p := range encTable {
		if p == nil {
			continue
		}
		for _, sat := range []Saturation{SatFinite, NoSat} {
			for _, c := range []struct {
				scale  float32
				divide bool
			}{{1, false}, {1, true}, {0.37, true}, {3e-5, true}} {
				p.encodeLoop(want, 1, src, c.scale, c.divide, sat)
				p.encodeScalar(got, 1, src, c.scale, c.divide, sat)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%v sat %d scale %g divide %v: %#08x gives %#x, encodeLoop %#x",
							Format(f), sat, c.scale, c.divide, math.Float32bits(src[i]), got[i], want[i])
					}
				}
			}
			tables++
		}
	}
	if tables == 0 {
		t.Fatal("no format has a code table")
	}
	// 1.0625 = 0x3f880000 lies halfway between e4m3's 1.0 and 1.125: a tie.
	if c := encTable[FormatE4M3].codes(SatFinite)[0x3f88]; c&encTableTie == 0 {
		t.Errorf("e4m3's entry of 0x3f88: %#x, want the tie mark", c)
	}
	// A stride, and a slice just under the table's minimum.
	p := encTable[FormatE4M3]
	for _, n := range []int{encTableMin - 1, encTableMin + 3} {
		d := make([]uint16, 3*n)
		w := make([]uint16, 3*n)
		p.encodeScalar(d, 3, src[:n], 0.5, true, SatFinite)
		p.encodeLoop(w, 3, src[:n], 0.5, true, SatFinite)
		for i := range d {
			if d[i] != w[i] {
				t.Fatalf("n %d stride 3: element %d %#x, encodeLoop %#x", n, i, d[i], w[i])
			}
		}
	}
}
