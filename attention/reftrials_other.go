//go:build !amd64 || purego

package attention

// refDots2 is refDotsF64Go for two queries over one decoded block: two
// calls here.
func refDots2(out0, out1, q0, q1, vals []float64) {
	refDotsF64Go(out0, q0, vals)
	refDotsF64Go(out1, q1, vals)
}

// refSums2 is refSumsF64Go for two trials' weights over the same keys:
// two calls here.
func refSums2(acc0, acc1 *[refLanes]float64, w0, w1, vals []float64) {
	refSumsF64Go(acc0, w0, vals)
	refSumsF64Go(acc1, w1, vals)
}
