package fp8

import (
	"math"
	"sync"
)

// The code tables of the scalar path: where no vector kernel runs
// (WebAssembly, the purego build, other architectures) a long slice is
// converted through a table of the codes of every upper half of a
// float32's bits, one load an element instead of encodeLoop's rounding.
//
// Why a table by the upper 16 bits is exact: for the formats of at most 8
// bits with at most 3 fraction bits (every one this package has) the
// rounding bit of a normal float32 quotient is bit 19 or above, so the
// lower 16 bits are only part of the sticky bits. Rounding is monotonic in
// the magnitude, so if the quotients with lower halves 0x0000 and 0xffff
// get the same code, every one between does; where they differ (a tie when
// the lower half is 0) the entry is marked and an element whose lower half
// is 0 takes encodeLoop. A table is built from encodeLoop itself (those
// two quotients of each upper half), so its codes are encodeLoop's;
// quotients that are not normal floats (zero, subnormal, inf, NaN,
// negative for an unsigned format: the upper half decides) are marked and
// take encodeLoop. TestEncodeTable checks every upper half against
// encodeLoop, FuzzEncodeScaledSlice the whole path.

// encTableMin is the shortest slice encodeScalar converts through the
// table. A table costs about a millisecond to build, once per format and
// saturation in a process; the caches' writes convert a token's row (a
// head_dim of elements) at a time.
const encTableMin = 32

const (
	encTableSlow = 0x8000 // not a normal quotient: encodeLoop
	encTableTie  = 0x4000 // a lower half of 0 takes encodeLoop
	encTableCode = 0x3fff
)

// codeTable is one format's and saturation's table, built on first use.
type codeTable struct {
	once sync.Once
	t    []uint16
}

// codes returns p's table for sat (SatFinite or NoSat).
func (p *encParams) codes(sat Saturation) []uint16 {
	ct := &p.tab[sat&1]
	ct.once.Do(func() { ct.t = p.buildCodes(sat) })
	return ct.t
}

func (p *encParams) buildCodes(sat Saturation) []uint16 {
	t := make([]uint16, 1<<16)
	var in [2]float32
	var out [2]uint16
	for hi := range 1 << 16 {
		b := uint32(hi) << 16
		abs := b & 0x7fffffff
		if abs-0x800000 >= 0x7f800000-0x800000 || (p.unsigned && b>>31 != 0) {
			t[hi] = encTableSlow
			continue
		}
		in[0], in[1] = math.Float32frombits(b), math.Float32frombits(b|0xffff)
		p.encodeLoop(out[:], 1, in[:], 1, false, sat)
		t[hi] = out[1]
		if out[0] != out[1] {
			t[hi] |= encTableTie
		}
	}
	return t
}

// tabled reports whether p's format converts through a code table with
// saturation sat: a saturation with a table (SatFinite, NoSat) and at most
// 3 fraction bits (with more, the lower half of a float32 rounds too).
func (p *encParams) tabled(sat Saturation) bool { return sat <= NoSat && p.mbits <= 3 }

// encodeScalar is encodeLoop, through the code table for a slice of at
// least encTableMin elements.
func (p *encParams) encodeScalar(dst []uint16, stride int, src []float32, scale float32, divide bool, sat Saturation) {
	if len(src) < encTableMin || !p.tabled(sat) {
		p.encodeLoop(dst, stride, src, scale, divide, sat)
		return
	}
	t := p.codes(sat)
	skip := !divide || scale == 1
	k := 0
	for i, x := range src {
		q := x
		if !skip {
			q = x / scale
		}
		b := math.Float32bits(q)
		c := t[b>>16]
		if c&(encTableSlow|encTableTie) != 0 && (c&encTableSlow != 0 || b&0xffff == 0) {
			p.encodeLoop(dst[k:k+1], 1, src[i:i+1], scale, divide, sat)
		} else {
			dst[k] = c & encTableCode
		}
		k += stride
	}
}
