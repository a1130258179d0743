package pmath

import (
	"math"
	"math/rand/v2"
	"sync"
)

// NormalsPCG hands out the first n of the normals that successive
// NormFloat64(rand.New(p)) calls would return, bit for bit, computed on up
// to workers goroutines, and leaves p where those n calls leave it.
// fn(j0, z) receives normals j0 … j0+len(z)−1; the calls cover [0, n)
// once each, in no particular order and several at a time (fn must be
// safe for concurrent calls on disjoint ranges; z is valid during the
// call only). workers ≤ 1, or an n too small to share, draws in turn on
// the caller's goroutine.
//
// How: a normal takes one Uint64 in 97 % of the draws and more in the
// others, so where the j-th normal starts in p's stream is only known
// after the ones before it. The stream is cut into stretches of
// normalStretch positions; each worker jumps p's state to the start of
// its stretch (an affine step of the 128-bit LCG, pcgAdvance) and draws
// as if a normal started there, until a normal would start past the
// stretch, noting where its first normals started. Going through the
// stretches in order, the normal that truly crosses into a stretch ends
// at a position E: when E is where the worker's own draw had a normal
// start, the two draws agree from there on (they read the same stream
// from the same position) and the normals before E are dropped; if E is
// not among the starts it noted, the stretch is drawn again from E.
func NormalsPCG(n int, p *rand.PCG, workers int, fn func(j0 int, z []float64)) {
	normalsPCG(n, p, workers, normalStretch, normalMarks, fn)
}

// normalStretch is the positions of a worker's stretch (its normals are
// buffered: 8 bytes each), normalMarks the starts a worker notes.
const (
	normalStretch = 1 << 16
	normalMarks   = 64
)

// normalPart is one worker's stretch [start, stop) drawn from start: its
// normals, the offsets from start at which the first of them started, and
// the state and position after its last normal.
type normalPart struct {
	start, stop int
	z           []float64
	marks       []int32
	end         pcgState
	endPos      int
	skip        int // leading normals that are not the true draw's
}

func normalsPCG(n int, p *rand.PCG, workers, stretch, marks int, fn func(j0 int, z []float64)) {
	if n <= 0 {
		return
	}
	if workers <= 1 || n < 2*stretch {
		const chunk = 4096
		z := make([]float64, min(n, chunk))
		for j0 := 0; j0 < n; j0 += chunk {
			zc := z[:min(chunk, n-j0)]
			FillNormalPCG(zc, p)
			fn(j0, zc)
		}
		return
	}
	s0 := pcgOf(p)
	base := s0 // state at position pos
	pos, done := 0, 0
	parts := make([]normalPart, workers)
	for w := range parts {
		parts[w].z = make([]float64, 0, stretch)
		parts[w].marks = make([]int32, 0, marks)
	}
	var wg sync.WaitGroup
	for done < n {
		// Draw: stretch w from pos + w·stretch, as if a normal started there.
		for w := range parts {
			pt := &parts[w]
			pt.start, pt.stop = pos+w*stretch, pos+(w+1)*stretch
			wg.Go(func() {
				st := base
				if w > 0 {
					st.hi, st.lo = pcgAdvance(base.hi, base.lo, uint64(w*stretch))
				}
				pt.z, pt.marks, pt.end, pt.endPos = drawStretch(st, pt.start, pt.stop, -1, pt.z[:0], pt.marks[:0], cap(pt.marks))
				pt.skip = 0
			})
		}
		wg.Wait()
		// Join: the true draw enters stretch w at its predecessor's end.
		for w := 1; w < len(parts); w++ {
			pt, e := &parts[w], parts[w-1].endPos
			if e == pt.start {
				continue
			}
			i := -1
			for k, m := range pt.marks {
				if pt.start+int(m) == e {
					i = k
					break
				}
			}
			if i >= 0 && i < len(pt.z) {
				pt.skip = i
				continue
			}
			// Not met among the noted starts (or the predecessor ran past
			// the stretch): draw it again from e.
			st := parts[w-1].end
			pt.z, pt.marks, pt.end, pt.endPos = drawStretch(st, e, max(e, pt.stop), -1, pt.z[:0], pt.marks[:0], 0)
		}
		// Hand out, the last round cut at n normals.
		at := done
		last := -1
		for w := range parts {
			pt := &parts[w]
			k := len(pt.z) - pt.skip
			if at+k >= n {
				last, k = w, n-at
				pt.z = pt.z[:pt.skip+k]
			}
			if k > 0 {
				j0, z := at, pt.z[pt.skip:pt.skip+k]
				wg.Go(func() { fn(j0, z) })
			}
			at += k
			if last >= 0 {
				break
			}
		}
		wg.Wait()
		if last >= 0 {
			// p ends after the n-th normal: the last part drawn again up
			// to it (where its true draw starts: its predecessor's end).
			pt := &parts[last]
			st, from := base, pos
			if last > 0 {
				st, from = parts[last-1].end, parts[last-1].endPos
			}
			_, _, end, _ := drawStretch(st, from, 1<<62, len(pt.z)-pt.skip, make([]float64, 0, len(pt.z)), nil, 0)
			p.Seed(end.hi, end.lo)
			return
		}
		done = at
		lp := &parts[len(parts)-1]
		base, pos = lp.end, lp.endPos
	}
}

// drawStretch draws normals from state st at stream position pos, as if
// one started there, while the next one would start before stop and, with
// limit ≥ 0, until limit normals: it appends them to z and the offsets
// from pos at which the first cap-many started to marks, and returns the
// state and position after the last.
func drawStretch(st pcgState, pos, stop, limit int, z []float64, marks []int32, capMarks int) ([]float64, []int32, pcgState, int) {
	from := pos
	if limit < 0 {
		limit = math.MaxInt
	}
	limit = min(limit, cap(z)) // a normal takes at least one position: at most stop−pos of them
	k := len(z)
	z = z[:cap(z)]
	var cs countingPCG // one, outside the loop: zigSlow's interface makes it escape
	for pos < stop && k < limit {
		if len(marks) >= capMarks {
			// Two normals at a time while both are in their rectangles (one
			// Uint64 each), the next two states advanced two steps each: two
			// independent chains of multiplications, as FillNormalPCG.
			ahi, alo := pcgNext(st.hi, st.lo)
			bhi, blo := pcgNext(ahi, alo)
			for pos+2 <= stop && k+2 <= limit {
				xa, oka := zigRect(pcgOut(ahi, alo))
				xb, okb := zigRect(pcgOut(bhi, blo))
				if !oka || !okb {
					break
				}
				z[k], z[k+1] = xa, xb
				k, pos = k+2, pos+2
				st = pcgState{bhi, blo}
				ahi, alo = pcgJump2(ahi, alo)
				bhi, blo = pcgJump2(bhi, blo)
			}
			if pos >= stop || k >= limit {
				break
			}
		}
		if len(marks) < capMarks {
			marks = append(marks, int32(pos-from))
		}
		cs.s, cs.n = st, 0
		u := cs.Uint64()
		x, ok := zigRect(u)
		if !ok {
			x = zigSlow(u, &cs)
		}
		z[k] = x
		k++
		st, pos = cs.s, pos+cs.n
	}
	return z[:k], marks, st, pos
}

// countingPCG is a PCG state that counts the Uint64s drawn from it.
type countingPCG struct {
	s pcgState
	n int
}

func (c *countingPCG) Uint64() uint64 {
	c.n++
	return c.s.Uint64()
}

// pcgAdvance returns the state n steps after (hi, lo): the step's affine
// map state·mul + inc raised to the n-th power by squaring, mod 2^128.
func pcgAdvance(hi, lo, n uint64) (uint64, uint64) {
	amh, aml, ach, acl := uint64(0), uint64(1), uint64(0), uint64(0) // the identity
	mh, ml, ch, cl := uint64(pcgMulHi), uint64(pcgMulLo), uint64(pcgIncHi), uint64(pcgIncLo)
	for ; n > 0; n >>= 1 {
		if n&1 == 1 { // acc := step ∘ acc
			amh, aml = pcgAffine(amh, aml, mh, ml, 0, 0)
			ach, acl = pcgAffine(ach, acl, mh, ml, ch, cl)
		}
		ch, cl = pcgAffine(ch, cl, mh, ml, ch, cl) // step := step ∘ step
		mh, ml = pcgAffine(mh, ml, mh, ml, 0, 0)
	}
	return pcgAffine(hi, lo, amh, aml, ach, acl)
}
