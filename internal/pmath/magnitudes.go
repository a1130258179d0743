package pmath

import (
	"fmt"
	"math"
)

// The magnitudes of float32 values as their bits: x's bits without the
// sign bit order as |x| does, from +0 (0) through the subnormals and the
// normals to +Inf (0x7f800000), with every NaN above +Inf. Counting them
// above thresholds is an integer comparison per element, which the AVX2
// kernel does eight elements at a time (fp8.MaxAbs takes their largest).

// absInf is the bits of +Inf; a magnitude's bits above it are a NaN's.
const absInf = 0x7f800000

// CountAbsAbove returns, for each threshold t[k], how many elements of x
// have magnitude bits (math.Float32bits(x) without the sign bit) above
// t[k]: for a t[k] at most +Inf's bits, the elements with |x| above
// math.Float32frombits(t[k]), and every NaN. Each t[k] must be below 2^31:
// it panics otherwise (a programming error). Eight elements a step (AVX2
// on amd64 where the CPU has it), else a loop in Go: the same counts
// (TestCountAbsAbove, FuzzMagnitudes).
func CountAbsAbove(x []float32, t [4]uint32) [4]int {
	for _, v := range t {
		if v >= 1<<31 {
			panic("pmath: CountAbsAbove with a threshold of 2^31 or more")
		}
	}
	var c [4]int
	for len(x) > 0 {
		// A chunk whose lane counts cannot overflow 32 bits.
		n := min(len(x), 1<<30)
		chunk := x[:n]
		x = x[n:]
		if countRowsWasm(chunk, n, 1, n, &t, &c) { // the js/wasm kernel: the same counts
			continue
		}
		i := 0
		if haveExpAsm && n >= 8 {
			i = n &^ 7
			var v [4]int
			countAbsAbove(&chunk[0], i, &t, &v)
			for k := range c {
				c[k] += v[k]
			}
		}
		// Without a branch: for a and v below 2^31, (v−a)>>31 is 1 when
		// a > v, else 0 (uint32 arithmetic).
		var c0, c1, c2, c3 uint32
		for _, y := range chunk[i:] {
			a := math.Float32bits(y) &^ (1 << 31)
			c0 += (t[0] - a) >> 31
			c1 += (t[1] - a) >> 31
			c2 += (t[2] - a) >> 31
			c3 += (t[3] - a) >> 31
		}
		c[0], c[1], c[2], c[3] = c[0]+int(c0), c[1]+int(c1), c[2]+int(c2), c[3]+int(c3)
	}
	return c
}

// CountAbsAboveRows is CountAbsAbove over the rows of a matrix: the counts
// of rows rows of cols elements whose starts are rowStride apart in x
// (row r is x[r·rowStride : r·rowStride+cols]), added together: what
// CountAbsAbove of each row, summed, gives. In the js/wasm build it is one
// kernel call for all the rows (a head's rows of a [tokens][heads][dim]
// tensor, 128 elements each, are too short for a call each). It panics if
// a threshold is 2^31 or more, rows, cols or rowStride is negative, or x is
// too short for the rows (programming errors).
func CountAbsAboveRows(x []float32, rowStride, rows, cols int, t [4]uint32) [4]int {
	for _, v := range t {
		if v >= 1<<31 {
			panic("pmath: CountAbsAboveRows with a threshold of 2^31 or more")
		}
	}
	if rows < 0 || cols < 0 || rowStride < 0 {
		panic("pmath: CountAbsAboveRows with a negative size or stride")
	}
	var c [4]int
	if rows == 0 || cols == 0 {
		return c
	}
	if end := (rows-1)*rowStride + cols; end > len(x) {
		panic(fmt.Sprintf("pmath: CountAbsAboveRows reads x[:%d] of %d", end, len(x)))
	}
	// Calls of at most 2^30 elements, as CountAbsAbove's chunks (the
	// kernel's counts are 32-bit).
	per := max(1, (1<<30)/cols)
	for r0 := 0; r0 < rows; r0 += per {
		n := min(per, rows-r0)
		if countRowsWasm(x[r0*rowStride:], rowStride, n, cols, &t, &c) {
			continue
		}
		for r := r0; r < r0+n; r++ {
			d := CountAbsAbove(x[r*rowStride:][:cols], t)
			for k := range c {
				c[k] += d[k]
			}
		}
	}
	return c
}
