package pmath

import (
	"math/rand/v2"
	"testing"
)

// TestAliasPCG: AliasPCG gives, draw for draw, the outcomes of Draw on
// rand.New(p).Uint64 and leaves p where those draws leave it (in the
// js/wasm build through normal.wat's alias: TestWasmKernels runs it
// there). The tables put thresholds at 0, 2^56, and next to the low 56
// bits of the draws, and aliases everywhere, so that both outcomes of the
// comparison, its boundary, and every column occur.
func TestAliasPCG(t *testing.T) {
	tables := map[string]*AliasTable{}
	var half, edges AliasTable
	for i := range 256 {
		half.Thr[i] = uint64(i) << 48 // column i: i with probability i/256
		half.Alias[i] = uint8(255 - i)
		edges.Thr[i] = []uint64{0, 1 << 56, 1<<56 - 1, 1}[i%4]
		edges.Alias[i] = uint8(i*37 + 11)
	}
	tables["half"], tables["edges"] = &half, &edges
	// exact: thresholds equal to the low bits of draws this test makes, so
	// that u&(2^56-1) == thr (the outcome is the alias) occurs.
	var exact AliasTable
	probe := rand.New(rand.NewPCG(7, 99))
	for i := range 256 {
		exact.Thr[i], exact.Alias[i] = uint64(i)<<48, uint8(i^0x5a)
	}
	for range 4096 {
		u := probe.Uint64()
		exact.Thr[u>>56] = u & (1<<56 - 1)
	}
	tables["exact"] = &exact
	for name, s := range tables {
		for seed, n := range []int{0, 1, 2, 37, 4096, 1 << 16} {
			p, q := rand.NewPCG(uint64(seed)+6, 99), rand.NewPCG(uint64(seed)+6, 99)
			if name == "exact" {
				p, q = rand.NewPCG(7, 99), rand.NewPCG(7, 99)
			}
			got := make([]uint16, n)
			AliasPCG(got, p, s)
			r := rand.New(q)
			counts := [2]int{}
			for j := range got {
				u := r.Uint64()
				i := u >> 56
				want := uint16(s.Alias[i])
				if u&(1<<56-1) < s.Thr[i] {
					want = uint16(i)
				}
				if want == uint16(i) {
					counts[0]++
				} else {
					counts[1]++
				}
				if got[j] != want {
					t.Fatalf("%s, n %d: draw %d is %d, want %d (u %#x)", name, n, j, got[j], want, u)
				}
			}
			if a, b := p.Uint64(), q.Uint64(); a != b {
				t.Fatalf("%s, n %d: the PCG is left elsewhere (next Uint64 %#x, want %#x)", name, n, a, b)
			}
			if n >= 4096 && name != "edges" && (counts[0] == 0 || counts[1] == 0) {
				t.Fatalf("%s, n %d: outcomes %v: the test misses a branch", name, n, counts)
			}
		}
	}
}

// BenchmarkAliasPCG: a column of 65536 codes, as the contraction draws
// them (ns/op per column; the per-code cost is ns/op / 65536).
func BenchmarkAliasPCG(b *testing.B) {
	var s AliasTable
	for i := range 256 {
		s.Thr[i], s.Alias[i] = uint64(i)<<48, uint8(255-i)
	}
	dst := make([]uint16, 1<<16)
	p := rand.NewPCG(1, 2)
	for b.Loop() {
		AliasPCG(dst, p, &s)
	}
}
