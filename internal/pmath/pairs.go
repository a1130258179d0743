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
