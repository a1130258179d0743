package pmath

// PairsToF32 splits the pairs of z into two float32 rows, each element
// scaled and offset in float64 and then rounded to float32:
//
//	a[i] = float32(as·z[2i])
//	b[i] = float32(bm + bs·z[2i+1])
//
// each product, sum and conversion rounded to nearest even on its own (no
// fused multiply-add): the bits of that loop in Go on every platform. The
// pairs go four at a time (AVX2 on amd64 where the CPU has it). It is how a
// haystack's keys and values are made from its interleaved normals. It
// panics if a or b is shorter than len(z)/2 or len(z) is odd (a
// programming error).
func PairsToF32(a, b []float32, z []float64, as, bs, bm float64) {
	if len(z)%2 != 0 {
		panic("pmath: PairsToF32 of an odd number of values")
	}
	n := len(z) / 2
	a, b = a[:n], b[:n]
	if pairsWasm(a, b, z, as, bs, bm) {
		return // the js/wasm kernel: the same bits
	}
	i := 0
	if haveExpAsm && n >= 4 {
		i = n &^ 3
		pairsToF32(&a[0], &b[0], &z[0], i, as, bs, bm)
	}
	for ; i < n; i++ {
		a[i] = float32(as * z[2*i])
		b[i] = float32(bm + float64(bs*z[2*i+1]))
	}
}

// PairsToF32Heads splits the pairs of z into two float32 rows, each pair
// scaled by the magnitude of its head: pair i (i < len(z)/2) belongs to
// head h = (i/d) mod len(mags), and
//
//	a[i] = float32(mags[h]·z[2i])
//	b[i] = float32(mags[h]·(bm + z[2i+1]))
//
// each sum, product and conversion rounded to nearest even on its own: the
// bits of that loop in Go on every platform (a WebAssembly kernel in the
// js/wasm build, the same bits). It is how a cache of several heads, a
// token's heads of d elements after another's, is made from interleaved
// normals. It panics if a or b is shorter than len(z)/2, len(z) is odd, d
// < 1 or mags is empty (a programming error).
func PairsToF32Heads(a, b []float32, z []float64, mags []float64, d int, bm float64) {
	if len(z)%2 != 0 || d < 1 || len(mags) == 0 {
		panic("pmath: PairsToF32Heads of an odd number of values, d < 1 or no magnitudes")
	}
	n := len(z) / 2
	a, b = a[:n], b[:n]
	if pairsHeadsWasm(a, b, z, mags, d, bm) {
		return // the js/wasm kernel: the same bits
	}
	h, x := 0, 0
	for i := range n {
		m := mags[h]
		a[i] = float32(m * z[2*i])
		b[i] = float32(m * (bm + z[2*i+1]))
		if x++; x == d {
			x = 0
			if h++; h == len(mags) {
				h = 0
			}
		}
	}
}
