package accum

import "math"

// Code is the element type of the operand slices ChainCodes takes: one code
// per element, right-aligned (FP4 one code per byte; tf32/f32 float32 bits;
// f64 float64 bits).
type Code interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// ChainCodes is InstrChain for operands held in their natural width: 8-bit
// codes (FP8, FP6, FP4), 16-bit (f16, bf16), 32-bit (tf32, f32) or 64-bit
// (f64). The block-scaled and TF32 NVIDIA instructions with FP32 output take
// a fast path (bit-exact with Step; see scaledFast) on 8-bit and 32-bit
// codes respectively; the others convert the codes and run Step. It returns
// the same bits as InstrChain.
func ChainCodes[T Code](m Instruction, a, b []T, sa, sb []uint8, c uint64, promote int) (uint64, error) {
	if nv, ok := m.(*nvInstr); ok && nv.fast != nil && len(a) == len(b) {
		switch x := any(a).(type) {
		case []uint8:
			if nv.fast.kind == fastST || nv.fast.kind == fastGST {
				return nv.chainFast8(x, any(b).([]uint8), sa, sb, c, promote)
			}
		case []uint32:
			if nv.fast.kind == fastTF32 {
				return nv.chainFast32(x, any(b).([]uint32), c, promote)
			}
		}
	}
	if am, ok := m.(*amdInstr); ok && len(a) == len(b) {
		if promote < 0 || promote > 0 && promote%am.info.K != 0 {
			return 0, errorf("promotion interval %d is not 0 or a positive multiple of %s's K = %d", promote, am.info.Name, am.info.K)
		}
		run := func(a, b []T, c uint64) (uint64, bool) { return chainAMD(am, a, b, c) }
		if promote == 0 {
			if d, ok := run(a, b, c); ok {
				return d, nil
			}
		} else {
			acc, ok := c, true
			for i := 0; i < len(a) && ok; i += promote {
				j := min(i+promote, len(a))
				var d uint64
				d, ok = run(a[i:j], b[i:j], 0)
				acc = addRNE(am.info.C, acc, d)
			}
			if ok {
				return acc, nil
			}
		}
	}
	wa, wb := make([]uint64, len(a)), make([]uint64, len(b))
	for i := range a {
		wa[i] = uint64(a[i])
	}
	for i := range b {
		wb[i] = uint64(b[i])
	}
	return InstrChain(m, wa, wb, sa, sb, c, promote)
}

func (m *nvInstr) checkChain(n int, sa, sb []uint8, promote int) error {
	in := m.info
	if promote < 0 || promote > 0 && promote%in.K != 0 {
		return errorf("promotion interval %d is not 0 or a positive multiple of %s's K = %d", promote, in.Name, in.K)
	}
	if in.Scale != "" {
		k := (n + in.Block - 1) / in.Block
		if len(sa) < k || len(sb) < k {
			return errorf("chain: %d elements need %d scales each, have %d and %d", n, k, len(sa), len(sb))
		}
	}
	return nil
}

// chainFast8 runs the K loop on 8-bit codes through scaledFast, falling
// back to the reference step for a step with NaN or inf.
func (m *nvInstr) chainFast8(a, b []uint8, sa, sb []uint8, c uint64, promote int) (uint64, error) {
	if err := m.checkChain(len(a), sa, sb, promote); err != nil {
		return 0, err
	}
	K, blk := m.info.K, m.info.Block
	f := m.fast
	run := func(a, b, sa, sb []uint8, c float32) float32 {
		for i := 0; i < len(a); i += K {
			j := min(i+K, len(a))
			var d float32
			ok := false
			switch {
			case f.kind == fastGST:
				d, ok = f.stGST(a[i:j], b[i:j], sa[i/blk:], sb[i/blk:], c)
			case f.scaled:
				d, ok = f.stST(a[i:j], b[i:j], sa[i/blk], sb[i/blk], c)
			default:
				d, ok = f.stST(a[i:j], b[i:j], 0, 0, c)
			}
			if !ok {
				d = m.refChunk8(a[i:j], b[i:j], sa, sb, i, c)
			}
			c = d
		}
		return c
	}
	c32 := math.Float32frombits(uint32(c))
	if promote == 0 {
		return uint64(math.Float32bits(run(a, b, sa, sb, c32))), nil
	}
	acc := c32
	for i := 0; i < len(a); i += promote {
		j := min(i+promote, len(a))
		var xa, xb []uint8
		if f.scaled {
			xa, xb = sa[i/blk:], sb[i/blk:]
		}
		acc += run(a[i:j], b[i:j], xa, xb, 0)
	}
	return uint64(math.Float32bits(acc)), nil
}

func (m *nvInstr) refChunk8(a, b []uint8, sa, sb []uint8, at int, c float32) float32 {
	wa, wb := make([]uint64, len(a)), make([]uint64, len(b))
	for i := range a {
		wa[i], wb[i] = uint64(a[i]), uint64(b[i])
	}
	var xa, xb []uint8
	if m.fast.scaled {
		blk := m.info.Block
		n := (len(a) + blk - 1) / blk
		xa, xb = sa[at/blk:at/blk+n], sb[at/blk:at/blk+n]
	}
	return math.Float32frombits(uint32(m.Step(wa, wb, xa, xb, uint64(math.Float32bits(c)))))
}

// chainFast32 runs a TF32 K loop (steps of L elements) through scaledFast.
func (m *nvInstr) chainFast32(a, b []uint32, c uint64, promote int) (uint64, error) {
	if err := m.checkChain(len(a), nil, nil, promote); err != nil {
		return 0, err
	}
	L := m.info.L
	f := m.fast
	run := func(a, b []uint32, c float32) float32 {
		for i := 0; i < len(a); i += L {
			j := min(i+L, len(a))
			d, ok := f.stTF32(a[i:j], b[i:j], c)
			if !ok {
				wa, wb := make([]uint64, j-i), make([]uint64, j-i)
				for k := i; k < j; k++ {
					wa[k-i], wb[k-i] = uint64(a[k]), uint64(b[k])
				}
				d = math.Float32frombits(uint32(m.Step(wa, wb, nil, nil, uint64(math.Float32bits(c)))))
			}
			c = d
		}
		return c
	}
	c32 := math.Float32frombits(uint32(c))
	if promote == 0 {
		return uint64(math.Float32bits(run(a, b, c32))), nil
	}
	acc := c32
	for i := 0; i < len(a); i += promote {
		j := min(i+promote, len(a))
		acc += run(a[i:j], b[i:j], 0)
	}
	return uint64(math.Float32bits(acc)), nil
}
