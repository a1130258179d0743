package pmath

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
)

// checkNormalsPCG compares normalsPCG with FillNormalPCG: the same
// variates at the same indices, each index handed out once, and the
// generator left in the same state.
func checkNormalsPCG(t *testing.T, s1, s2 uint64, n, workers, stretch, marks int) {
	t.Helper()
	ref := make([]float64, n)
	rp := rand.NewPCG(s1, s2)
	FillNormalPCG(ref, rp)
	got := make([]float64, n)
	seen := make([]uint8, n)
	var mu sync.Mutex
	p := rand.NewPCG(s1, s2)
	normalsPCG(n, p, workers, stretch, marks, func(j0 int, z []float64) {
		mu.Lock()
		defer mu.Unlock()
		for i, x := range z {
			if j0+i >= n || j0 < 0 {
				t.Fatalf("normal %d handed out of %d", j0+i, n)
			}
			got[j0+i] = x
			seen[j0+i]++
		}
	})
	for j := range got {
		if seen[j] != 1 || math.Float64bits(got[j]) != math.Float64bits(ref[j]) {
			t.Fatalf("PCG(%d, %d), n %d, %d workers, stretch %d, %d marks: normal %d handed out %d times, %v, FillNormalPCG %v",
				s1, s2, n, workers, stretch, marks, j, seen[j], got[j], ref[j])
		}
	}
	if a, b := p.Uint64(), rp.Uint64(); a != b {
		t.Fatalf("PCG(%d, %d), n %d, %d workers, stretch %d, %d marks: the generator then gives %#x, FillNormalPCG's %#x", s1, s2, n, workers, stretch, marks, a, b)
	}
}

// TestNormalsPCG: stretches as short as a few positions (a normal of the
// wedge or the tail crosses their ends often), no marks (every crossing
// drawn again), the default sizes, and the sequential path.
func TestNormalsPCG(t *testing.T) {
	for _, c := range []struct {
		s1, s2                    uint64
		n, workers, stretch, mark int
	}{
		{1, 2, 0, 4, 8, 4},
		{1, 2, 1, 4, 8, 4},
		{3, 4, 1000, 3, 2, 4},
		{3, 4, 1000, 3, 2, 0},
		{5, 6, 5000, 7, 5, 1},
		{5, 6, 5000, 2, 3, 64},
		{7, 8, 100000, 5, 16, 4},
		{7, 8, 100000, 8, 100, 0},
		{9, 10, 1 << 20, 16, normalStretch, normalMarks},
		{11, 12, 3*normalStretch + 17, 4, normalStretch, normalMarks},
		{13, 14, 1 << 16, 1, normalStretch, normalMarks},
	} {
		checkNormalsPCG(t, c.s1, c.s2, c.n, c.workers, c.stretch, c.mark)
	}
	// The exported form with the defaults.
	p, q := rand.NewPCG(21, 22), rand.NewPCG(21, 22)
	const n = 5 * normalStretch
	ref := make([]float64, n)
	FillNormalPCG(ref, q)
	got := make([]float64, n)
	NormalsPCG(n, p, 6, func(j0 int, z []float64) { copy(got[j0:], z) })
	for j := range got {
		if math.Float64bits(got[j]) != math.Float64bits(ref[j]) {
			t.Fatalf("NormalsPCG: normal %d is %v, FillNormalPCG %v", j, got[j], ref[j])
		}
	}
	if p.Uint64() != q.Uint64() {
		t.Fatal("NormalsPCG leaves the generator elsewhere")
	}
}

// TestPCGAdvance: n steps at once are n single steps.
func TestPCGAdvance(t *testing.T) {
	hi, lo := uint64(0x0123456789abcdef), uint64(0xfedcba9876543210)
	h, l := hi, lo
	for n := 0; n < 3000; n++ {
		if ah, al := pcgAdvance(hi, lo, uint64(n)); ah != h || al != l {
			t.Fatalf("pcgAdvance by %d: %#x %#x, stepped %#x %#x", n, ah, al, h, l)
		}
		h, l = pcgNext(h, l)
	}
	// Composition: 2^40 + 12345 steps as two jumps.
	a, b := pcgAdvance(hi, lo, 1<<40)
	a, b = pcgAdvance(a, b, 12345)
	if c, d := pcgAdvance(hi, lo, 1<<40+12345); a != c || b != d {
		t.Fatal("pcgAdvance does not compose")
	}
}

func FuzzNormalsPCG(f *testing.F) {
	f.Add(uint64(1), uint64(2), uint16(1000), uint8(3), uint8(5), uint8(2))
	f.Fuzz(func(t *testing.T, s1, s2 uint64, n uint16, workers, stretch, marks uint8) {
		checkNormalsPCG(t, s1, s2, int(n)*8, int(workers%9), int(stretch)+1, int(marks%70))
	})
}

// BenchmarkNormalsPCG: a 128k-token haystack's K and V normals (2^25),
// FillNormalPCG against NormalsPCG on every core; ns/op per haystack.
func BenchmarkNormalsPCG(b *testing.B) {
	const n = 1 << 25
	b.Run("FillNormalPCG", func(b *testing.B) {
		p := rand.NewPCG(1, 2)
		z := make([]float64, 4096)
		for b.Loop() {
			for j := 0; j < n; j += len(z) {
				FillNormalPCG(z, p)
			}
		}
	})
	b.Run("NormalsPCG", func(b *testing.B) {
		p := rand.NewPCG(1, 2)
		for b.Loop() {
			NormalsPCG(n, p, runtime.GOMAXPROCS(0), func(int, []float64) {})
		}
	})
}
