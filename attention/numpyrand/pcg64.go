package numpyrand

import "math/bits"

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}
}

func (a u128) mul(b u128) u128 {
	hi, lo := bits.Mul64(a.lo, b.lo)
	hi += a.hi*b.lo + a.lo*b.hi
	return u128{hi, lo}
}

// pcgMult is PCG_DEFAULT_MULTIPLIER_128 (pcg64.h).
var pcgMult = u128{2549297995355413924, 4865540595714422341}

// PCG64 is NumPy's PCG64 bit generator: a 128-bit LCG
// state = state·mult + inc (mod 2^128) with the XSL-RR output
// rotr64(hi ^ lo, hi >> 58), advancing before each output.
type PCG64 struct {
	state, inc u128
}

// NewPCG64 returns np.random.PCG64(seed): the state and increment come from
// SeedSequence(seed).generate_state(4, np.uint64) as (state_hi, state_lo,
// inc_hi, inc_lo), then pcg64_set_seed (pcg_setseq_128_srandom_r).
func NewPCG64(seed uint64) *PCG64 {
	return NewPCG64FromSeedSequence(SeedSequenceFromUint64(seed))
}

// NewPCG64FromSeedSequence returns PCG64(seq).
func NewPCG64FromSeedSequence(seq *SeedSequence) *PCG64 {
	v := seq.GenerateState64(4)
	return NewPCG64Raw(v[0], v[1], v[2], v[3])
}

// NewPCG64Raw seeds as the PCG reference's pcg_setseq_128_srandom_r(initstate,
// initseq) does, with the 128-bit values given as high and low halves:
// inc = initseq<<1 | 1; state = 0; step; state += initstate; step.
func NewPCG64Raw(stateHi, stateLo, seqHi, seqLo uint64) *PCG64 {
	initstate, initseq := u128{stateHi, stateLo}, u128{seqHi, seqLo}
	g := &PCG64{}
	g.inc = u128{initseq.hi<<1 | initseq.lo>>63, initseq.lo<<1 | 1}
	g.step()
	g.state = g.state.add(initstate)
	g.step()
	return g
}

func (g *PCG64) step() { g.state = g.state.mul(pcgMult).add(g.inc) }

// Uint64 returns the next raw 64-bit output (random_raw).
func (g *PCG64) Uint64() uint64 {
	g.step()
	return bits.RotateLeft64(g.state.hi^g.state.lo, -int(g.state.hi>>58))
}

// Advance jumps the generator ahead by delta outputs in O(log delta) steps
// (pcg_advance_lcg_128, Brown's algorithm), as PCG64.advance does.
func (g *PCG64) Advance(delta uint64) {
	accMult, accPlus := u128{0, 1}, u128{}
	curMult, curPlus := pcgMult, g.inc
	for delta > 0 {
		if delta&1 == 1 {
			accMult = accMult.mul(curMult)
			accPlus = accPlus.mul(curMult).add(curPlus)
		}
		curPlus = curMult.add(u128{0, 1}).mul(curPlus)
		curMult = curMult.mul(curMult)
		delta >>= 1
	}
	g.state = accMult.mul(g.state).add(accPlus)
}

// Clone returns an independent copy of g in the same state.
func (g *PCG64) Clone() *PCG64 { c := *g; return &c }

// Float64 returns the next uniform in [0, 1) as attn_inputs.py computes it:
// (random_raw() >> 11) · 2^-53.
func (g *PCG64) Float64() float64 { return float64(g.Uint64()>>11) * 0x1p-53 }
