package numpyrand

import (
	"errors"
	"math/big"
)

// Constants of NumPy's SeedSequence (bit_generator.pyx), after Melissa
// O'Neill's seed_seq alternative.
const (
	poolSize = 4
	initA    = 0x43b0d7e5
	multA    = 0x931e8875
	initB    = 0x8b51f9dd
	multB    = 0x58f38ded
	mixMultL = 0xca01f9dd
	mixMultR = 0x4973f715
	xshift   = 16
)

// SeedSequence is NumPy's SeedSequence with the default pool size (4
// words) and no spawn key: the pool mixed from the entropy words.
type SeedSequence struct {
	pool [poolSize]uint32
}

// NewSeedSequence returns SeedSequence(entropy) for a non-negative integer,
// which NumPy splits into 32-bit words, lowest first (0 gives one zero
// word), exactly as _coerce_to_uint32_array does for a Python int.
func NewSeedSequence(entropy *big.Int) (*SeedSequence, error) {
	if entropy.Sign() < 0 {
		return nil, errors.New("numpyrand: SeedSequence entropy must be non-negative")
	}
	var words []uint32
	n := new(big.Int).Set(entropy)
	mask := big.NewInt(0xffffffff)
	if n.Sign() == 0 {
		words = []uint32{0}
	}
	for n.Sign() > 0 {
		words = append(words, uint32(new(big.Int).And(n, mask).Uint64()))
		n.Rsh(n, 32)
	}
	return SeedSequenceFromWords(words), nil
}

// SeedSequenceFromUint64 is NewSeedSequence for a uint64 seed.
func SeedSequenceFromUint64(seed uint64) *SeedSequence {
	s, _ := NewSeedSequence(new(big.Int).SetUint64(seed))
	return s
}

// SeedSequenceFromWords returns SeedSequence(words) for entropy given as
// uint32 words (NumPy's uint32 array input).
func SeedSequenceFromWords(words []uint32) *SeedSequence {
	s := &SeedSequence{}
	s.mixEntropy(words)
	return s
}

func hashmix(value uint32, hashConst *uint32) uint32 {
	value ^= *hashConst
	*hashConst *= multA
	value *= *hashConst
	value ^= value >> xshift
	return value
}

func mix(x, y uint32) uint32 {
	r := mixMultL*x - mixMultR*y
	r ^= r >> xshift
	return r
}

// mixEntropy is SeedSequence.mix_entropy.
func (s *SeedSequence) mixEntropy(entropy []uint32) {
	hc := uint32(initA)
	for i := range s.pool {
		var e uint32
		if i < len(entropy) {
			e = entropy[i]
		}
		s.pool[i] = hashmix(e, &hc)
	}
	for src := range s.pool {
		for dst := range s.pool {
			if src != dst {
				s.pool[dst] = mix(s.pool[dst], hashmix(s.pool[src], &hc))
			}
		}
	}
	for src := len(s.pool); src < len(entropy); src++ {
		for dst := range s.pool {
			s.pool[dst] = mix(s.pool[dst], hashmix(entropy[src], &hc))
		}
	}
}

// GenerateState32 is generate_state(n, np.uint32).
func (s *SeedSequence) GenerateState32(n int) []uint32 {
	out := make([]uint32, n)
	hc := uint32(initB)
	for i := range out {
		v := s.pool[i%poolSize]
		v ^= hc
		hc *= multB
		v *= hc
		v ^= v >> xshift
		out[i] = v
	}
	return out
}

// GenerateState64 is generate_state(n, np.uint64): 2n words of uint32
// viewed as little-endian uint64 (the first word is the low half).
func (s *SeedSequence) GenerateState64(n int) []uint64 {
	w := s.GenerateState32(2 * n)
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(w[2*i]) | uint64(w[2*i+1])<<32
	}
	return out
}
