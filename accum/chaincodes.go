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
		if err := checkChain(am.info, len(a), nil, nil, promote); err != nil {
			return 0, err
		}
		if d, ok := kLoop(len(a), promote, c, func(i, j int, c uint64) (uint64, bool) {
			return chainAMD(am, a[i:j], b[i:j], c)
		}, addFor(am.info.C)); ok {
			return d, nil
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

// chainFast8 runs the K loop on 8-bit codes through scaledFast, falling
// back to the reference step for a step with NaN or inf.
func (m *nvInstr) chainFast8(a, b []uint8, sa, sb []uint8, c uint64, promote int) (uint64, error) {
	if err := checkChain(m.info, len(a), sa, sb, promote); err != nil {
		return 0, err
	}
	K, blk := m.info.K, m.info.Block
	f := m.fast
	d, _ := kLoop(len(a), promote, c, func(lo, hi int, c64 uint64) (uint64, bool) {
		c := math.Float32frombits(uint32(c64))
		for i := lo; i < hi; {
			if f.entA != nil {
				// whole steps through the assembly chain, up to a step
				// with a special or the partial step at the end
				var done int
				c, done = f.chainAsm8(a[i:hi], b[i:hi], sa, sb, i, c)
				if i += done; i >= hi {
					break
				}
			}
			j := min(i+K, hi)
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
			i = j
		}
		return uint64(math.Float32bits(c)), true
	}, addFor("f32"))
	return d, nil
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
	if err := checkChain(m.info, len(a), nil, nil, promote); err != nil {
		return 0, err
	}
	L := m.info.L
	f := m.fast
	d, _ := kLoop(len(a), promote, c, func(lo, hi int, c64 uint64) (uint64, bool) {
		c := math.Float32frombits(uint32(c64))
		for i := lo; i < hi; {
			if f.asmTF32 {
				var done int
				c, done = f.chainAsm32(a[i:hi], b[i:hi], c)
				if i += done; i >= hi {
					break
				}
			}
			j := min(i+L, hi)
			d, ok := f.stTF32(a[i:j], b[i:j], c)
			if !ok {
				wa, wb := make([]uint64, j-i), make([]uint64, j-i)
				for k := i; k < j; k++ {
					wa[k-i], wb[k-i] = uint64(a[k]), uint64(b[k])
				}
				d = math.Float32frombits(uint32(m.Step(wa, wb, nil, nil, uint64(math.Float32bits(c)))))
			}
			c = d
			i = j
		}
		return uint64(math.Float32bits(c)), true
	}, addFor("f32"))
	return d, nil
}
