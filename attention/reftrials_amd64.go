//go:build amd64 && !purego

package attention

// Two trials' vector kernels (reftrials_amd64.s), run where the
// reference's other kernels run (haveRefAsm).

//go:noescape
func refDots2F64(out0, out1, q0, q1 *float64, d int, vals *float64)

//go:noescape
func refSums2F64(acc0, acc1 *[refLanes]float64, w0, w1 *float64, n int, vals *float64)

// refDots2 is refDotsDecoded for two queries (of one length) over one
// decoded block of sixteen keys: the same bits as two calls.
func refDots2(out0, out1, q0, q1, vals []float64) {
	if len(q0) == 0 || len(q0) != len(q1) {
		refDotsDecoded(out0, q0, vals)
		refDotsDecoded(out1, q1, vals)
		return
	}
	_, _ = out0[refLanes-1], out1[refLanes-1]
	_ = vals[len(q0)*refLanes-1]
	refDots2F64(&out0[0], &out1[0], &q0[0], &q1[0], len(q0), &vals[0])
}

// refSums2 is refSumsDecoded for two trials' weights over the same keys
// (len(w0) = len(w1)), none of them −∞: the same bits as two calls.
func refSums2(acc0, acc1 *[refLanes]float64, w0, w1, vals []float64) {
	if len(w0) == 0 || len(w0) != len(w1) {
		refSumsDecoded(acc0, w0, vals)
		refSumsDecoded(acc1, w1, vals)
		return
	}
	_ = vals[len(w0)*refLanes-1]
	refSums2F64(acc0, acc1, &w0[0], &w1[0], len(w0), &vals[0])
}
