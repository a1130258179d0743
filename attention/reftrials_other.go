//go:build !amd64 || purego

package attention

// Without the vector kernels ReferenceQuantizedTrials runs each trial alone
// (sharedTrials is false) and never calls these.

func refDots2(out0, out1, q0, q1, vals []float64) {
	panic("attention: refDots2 without the vector kernels")
}

func refSums2(acc0, acc1 *[refLanes]float64, w0, w1, vals []float64) {
	panic("attention: refSums2 without the vector kernels")
}
