package accum

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/fp8lab/fp8lab/fp8"
)

// pairwiseHalving is the pairwise baseline's definition: the halving
// recursion down to single products, every sum rounded to float32.
func pairwiseHalving(val *[1 << 16]float32, a, b []uint16) float32 {
	switch len(a) {
	case 0:
		return 0
	case 1:
		return float32(val[a[0]] * val[b[0]])
	}
	h := len(a) / 2
	return float32(pairwiseHalving(val, a[:h], b[:h]) + pairwiseHalving(val, a[h:], b[h:]))
}

// TestPairwiseTree: the pairwise baseline, whose small subtrees are written
// out, gives the halving recursion's bits for every length up to 300 and a
// few long ones, on inputs whose sums round at every level (wide
// magnitudes, both signs).
func TestPairwiseTree(t *testing.T) {
	m := newBaseline(basePairwise, fp8.FormatE4M3).(*baseline)
	r := rand.New(rand.NewPCG(11, 17))
	lengths := []int{1000, 4097, 65536}
	for n := range 301 {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		a, b := make([]uint16, n), make([]uint16, n)
		for i := range a {
			a[i], b[i] = uint16(r.IntN(0x7f)|r.IntN(2)<<7), uint16(r.IntN(0x7f))
		}
		got, want := m.Dot(a, b, 0), float32(0+pairwiseHalving(m.val, a, b))
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("n = %d: %v, the halving recursion %v", n, got, want)
		}
	}
}
