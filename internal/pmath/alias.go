package pmath

import "math/rand/v2"

// AliasTable is a sampler of the 256 outcomes 0 … 255 by Walker's alias
// method on one 64-bit draw u: its top 8 bits pick a column i, and the
// outcome is i when the low 56 bits are below Thr[i], else Alias[i].
// Thr[i] = 2^56 makes column i always i.
type AliasTable struct {
	Thr   [256]uint64
	Alias [256]uint8
}

// Draw returns the outcome of the draw u. It has no branch: x − Thr[i]
// (x the low 56 bits, both at most 2^56) wraps to 2^63 or above exactly
// when x < Thr[i], and its top bit selects i over Alias[i]. The comparison
// as a branch mispredicts on random draws (9.1 against 3.3 ns a draw in
// BenchmarkAliasPCG here).
func (s *AliasTable) Draw(u uint64) uint8 {
	i := u >> 56
	below := (u&(1<<56-1) - s.Thr[i]) >> 63 // 1 when the low bits are below the threshold
	a := uint64(s.Alias[i])
	return uint8(a ^ (a^i)&-below)
}

// AliasPCG fills dst with outcomes of s, one a draw: dst[j] is
// s.Draw of the j-th of len(dst) successive rand.New(p).Uint64 calls, and
// p is left where those calls leave it. It steps p's state in registers
// (the js/wasm build: a WebAssembly kernel, the same outcomes) instead of
// calling p.Uint64 through an interface, so that a column of a contraction
// costs a few nanoseconds a code.
func AliasPCG(dst []uint16, p *rand.PCG, s *AliasTable) {
	if len(dst) == 0 {
		return
	}
	if aliasWasm(dst, p, s) {
		return // the WebAssembly kernel (js/wasm only): the same outcomes
	}
	cur := pcgOf(p)
	for j := range dst {
		dst[j] = uint16(s.Draw(cur.Uint64()))
	}
	p.Seed(cur.hi, cur.lo)
}
