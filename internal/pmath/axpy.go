package pmath

// AxpyF32x4 adds four scaled float32 rows to o, element by element and
// in order: o[i] = (((o[i] + w[0]·v0[i]) + w[1]·v1[i]) + w[2]·v2[i]) +
// w[3]·v3[i], each v converted to float64 exactly and each product and sum
// rounded to nearest even on its own (no fused multiply-add): the bits of
// four `o[i] += w[k] * float64(vk[i])` passes, k = 0 … 3, on every platform.
// The elements go side by side (AVX2 on amd64 where the CPU has it). It
// panics if a row is shorter than o (a programming error).
func AxpyF32x4(o []float64, w *[4]float64, v0, v1, v2, v3 []float32) {
	v0, v1, v2, v3 = v0[:len(o)], v1[:len(o)], v2[:len(o)], v3[:len(o)]
	i := 0
	if haveExpAsm && len(o) >= 4 {
		i = len(o) &^ 3
		axpyF32x4(&o[0], w, &v0[0], &v1[0], &v2[0], &v3[0], i)
	}
	w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
	for ; i < len(o); i++ {
		o[i] = float64(float64(float64(float64(o[i]+float64(w0*float64(v0[i])))+float64(w1*float64(v1[i])))+float64(w2*float64(v2[i]))) + float64(w3*float64(v3[i])))
	}
}

// AxpyF64x4 is [AxpyF32x4] on float64 rows.
func AxpyF64x4(o []float64, w *[4]float64, v0, v1, v2, v3 []float64) {
	v0, v1, v2, v3 = v0[:len(o)], v1[:len(o)], v2[:len(o)], v3[:len(o)]
	i := 0
	if haveExpAsm && len(o) >= 4 {
		i = len(o) &^ 3
		axpyF64x4(&o[0], w, &v0[0], &v1[0], &v2[0], &v3[0], i)
	}
	w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
	for ; i < len(o); i++ {
		o[i] = float64(float64(float64(float64(o[i]+float64(w0*v0[i]))+float64(w1*v1[i]))+float64(w2*v2[i])) + float64(w3*v3[i]))
	}
}
