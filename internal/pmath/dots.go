package pmath

// DotsF32x8 sets out[i] = Σ_x q[x]·k[i][x] for eight keys k[i] (float32
// rows, each converted to float64 exactly), each sum in order over x from
// +0 with every product and sum rounded to nearest even on its own (no
// fused multiply-add): the bits of eight `for x := range q { d += q[x] *
// float64(k[i][x]) }` loops, on every platform. The keys go side by side
// (AVX2 on amd64 where the CPU has it, for len(q) a multiple of 4). It
// panics if a key is shorter than q (a programming error).
func DotsF32x8(out *[8]float64, q []float64, k *[8][]float32) {
	kk := *k // the rows cut to len(q): k's own are left as they are
	var p [8]*float32
	for i := range kk {
		kk[i] = kk[i][:len(q)]
		if len(q) > 0 {
			p[i] = &kk[i][0]
		}
	}
	if haveExpAsm && len(q) > 0 && len(q)%4 == 0 {
		dotsF32x8(out, &q[0], len(q), &p)
		return
	}
	for i, r := range kk {
		var d float64
		for x, qx := range q {
			d = float64(d + float64(qx*float64(r[x])))
		}
		out[i] = d
	}
}

// DotsF64x8 is [DotsF32x8] on float64 rows.
func DotsF64x8(out *[8]float64, q []float64, k *[8][]float64) {
	kk := *k // the rows cut to len(q): k's own are left as they are
	var p [8]*float64
	for i := range kk {
		kk[i] = kk[i][:len(q)]
		if len(q) > 0 {
			p[i] = &kk[i][0]
		}
	}
	if haveExpAsm && len(q) > 0 && len(q)%4 == 0 {
		dotsF64x8(out, &q[0], len(q), &p)
		return
	}
	for i, r := range kk {
		var d float64
		for x, qx := range q {
			d = float64(d + float64(qx*r[x]))
		}
		out[i] = d
	}
}
